"""Progress bars for long fits (tqdm), in one place: shown when asked, or by default on a terminal."""

from __future__ import annotations

import sys
from typing import Iterable


def progress_bar(iterable: Iterable, total: int | None = None, desc: str = "", enabled: bool | None = None):
    """``iterable`` wrapped in a tqdm bar when ``enabled`` (None: when stderr is a terminal)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, leave=False, mininterval=0.5)


class stage_progress:
    """A live line on stderr while one stage of a long call runs: its name, the time since it began
    and, when ``fraction`` is given (a callable returning a number in [0, 1] or None), a bar --
    e.g. the share of a stage's privacy budget spent so far, which adaptive selectors spend round by
    round.  A background thread refreshes it twice a second; nothing is shown unless ``enabled``
    (None: when stderr is a terminal).

    >>> with stage_progress("select (aim)", fraction=lambda: budget.spent / budget.rho):  # doctest: +SKIP
    ...     selector.run(...)
    """

    def __init__(self, desc: str, enabled: bool | None = None, fraction=None, interval: float = 0.5):
        self.desc, self.fraction, self.interval = desc, fraction, interval
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)
        self._bar = self._thread = self._stop = None

    def __enter__(self):
        if not self.enabled:
            return self
        import threading

        from tqdm.auto import tqdm

        fmt = ("{desc}: {percentage:3.0f}% of its budget spent |{bar}| {elapsed}" if self.fraction is not None
               else "{desc}: {elapsed}")
        self._bar = tqdm(total=100, desc=self.desc, bar_format=fmt, leave=False, file=sys.stderr)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self._update()

    def _update(self) -> None:
        if self.fraction is not None:
            try:
                f = self.fraction()
            except Exception:  # a progress display must never break the work it reports on
                f = None
            if f is not None and f == f:
                self._bar.n = int(round(100 * min(max(float(f), 0.0), 1.0)))
        self._bar.refresh()

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._stop.set()
            self._thread.join()
            self._update()
            self._bar.close()
