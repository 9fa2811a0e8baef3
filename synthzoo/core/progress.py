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
