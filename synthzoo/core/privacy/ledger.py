"""One privacy ledger per synthesizer, composed by Google's ``dp-accounting`` (RDP accountant).

Every mechanism that touches private data charges the ledger with a ``dp_accounting.DpEvent``.
The reported (epsilon, delta) is the RDP accountant's conversion of *all* charged events, so it
covers everything the release depended on.  A charge that would push epsilon past the request
is refused with :class:`BudgetExceededError` before any noise is drawn.

A few mechanisms are (rho-zCDP) *plus* an additive failure probability: DP partition
selection (Desfontaines et al., PoPETs 2022) releases a value held by one record with
probability at most ``delta_sel``.  Such a charge passes ``extra_delta=delta_sel``; the extra
deltas add up (approximate zCDP composes additively in both parameters, Bun & Steinke 2016,
Sec. 8) and the RDP composition is converted at ``delta - sum(extra_delta)``, so the total
stays (epsilon, delta).  A ledger built with ``reserved_delta`` plans its ``total_rho`` at
``delta - reserved_delta`` so that extra deltas up to the reserve never eat into it.

The ledger also owns the release's noise: ``ledger.noise`` is the :class:`NoiseSource` every
mechanism charged to it draws from (OS entropy, never stored; or, with the test-only
``noise_seed`` opt-in, a replayable stream that every report flags).

Budgets are split between pipeline stages in zCDP "rho" units (the currency of AIM, PrivSyn
and Chen et al.'s framework): a stage gets a share of ``total_rho``, the largest rho whose
zCDP guarantee converts (through the same accountant) to the requested (epsilon, delta).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import math
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import dp_accounting as dpa
import numpy as np
from dp_accounting import rdp

from ..errors import BudgetExceededError, ConfigError, PrivacySettingsWarning
from ..statecheck import check_text, printable
from .noise import NoiseSource

_ORDERS = tuple([1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)) + [80, 128, 256, 512, 1024])
_TOL = 1e-9
REPLAYABLE_WARNING = ("REPLAYABLE NOISE: this release was made with noise_seed set (a test-only opt-in); it is "
                      "differentially private only while that noise seed stays secret")


class PrivacySpent(NamedTuple):
    """(epsilon, delta) spent. A non-private run reports ``(inf, 0.0)`` and ``private=False``.

    Examples
    --------
    >>> str(PrivacySpent(0.99, 1e-5))
    '(epsilon=0.99, delta=1e-05)'
    """

    epsilon: float
    delta: float

    @property
    def private(self) -> bool:
        return math.isfinite(self.epsilon)

    def __str__(self) -> str:
        if not self.private:
            return "non-private run: NO differential privacy guarantee"
        return f"(epsilon={self.epsilon:.4g}, delta={self.delta:.3g})"


def _accountant() -> rdp.RdpAccountant:
    return rdp.RdpAccountant(orders=list(_ORDERS))


@contextlib.contextmanager
def quiet_accountant():
    """dp_accounting logs a warning for each fractional RDP order whose series does not converge for a
    subsampled event (the order is then excluded from the bound: safe); a DP-SGD calibration or the
    replay of its event would fill the log with them."""
    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.ERROR)
    try:
        yield
    finally:
        absl.setLevel(level)


def epsilon_of(events: list, delta: float) -> float:
    """Epsilon at ``delta`` of the composition of ``events`` (RDP accountant)."""
    if not events:
        return 0.0
    acc = _accountant()
    with quiet_accountant():
        for e in events:
            acc.compose(e)
        return float(acc.get_epsilon(delta))


@functools.lru_cache(maxsize=256)
def rho_for(epsilon: float, delta: float) -> float:
    """Largest zCDP rho whose (epsilon, delta) conversion, by the same accountant, is <= epsilon."""
    lo, hi = 0.0, max(1.0, epsilon)
    while epsilon_of([dpa.ZCDpEvent(hi)], delta) < epsilon:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        if epsilon_of([dpa.ZCDpEvent(mid)], delta) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass
class Charge:
    module: str
    mechanism: str
    event: object
    rho: float  # zCDP cost (inf for a non-private access); what the stage budgets count
    note: str = ""
    extra_delta: float = 0.0  # additive delta outside the RDP event (e.g. partition selection)


#: Most characters a charge's note holds (printed in reports; a model file holding a longer one is refused).
NOTE_CHARS = 4096

#: delta at or above this is refused: a mechanism could publish one record in ten outright.
DELTA_MEANINGLESS = 0.1
#: delta above this is warned about: not small against a table of a thousand rows or more.
DELTA_DUBIOUS = 1e-3
#: epsilon above this is warned about: e^30 bounds nothing a person would call protection (the US 2020
#: census release, among the largest deployed, spent about 20 in all).
EPSILON_DUBIOUS = 30.0
#: epsilon above this is refused: its zCDP rho (under epsilon) is past what a model file may state (1e6, the
#: check of untrusted files), so such a fit could be saved but never loaded; and the noise is nil long before.
EPSILON_MAX = 1e6


def _number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def check_privacy_params(epsilon, delta) -> tuple[float | None, float]:
    """Validate (epsilon, delta); epsilon None or inf means a non-private run.

    Errors (:class:`ConfigError`) where the request is meaningless: epsilon or delta not a number
    (``True`` is not an epsilon), epsilon <= 0 or NaN or above :data:`EPSILON_MAX`, delta outside (0, 1), and delta >=
    :data:`DELTA_MEANINGLESS` (a mechanism that publishes each record outright with probability delta
    would satisfy it).  Dubious requests are left to :func:`privacy_warnings`.
    """
    if epsilon is not None:
        if not _number(epsilon):
            raise ConfigError(f"epsilon must be a positive number or None (non-private), got {epsilon!r}")
        epsilon = float(epsilon)
        if math.isnan(epsilon) or epsilon <= 0:
            raise ConfigError(f"epsilon must be > 0 (or None for a non-private run), got {epsilon}")
        if math.isinf(epsilon):
            epsilon = None
        elif epsilon > EPSILON_MAX:
            raise ConfigError(f"epsilon={epsilon:g} is past {EPSILON_MAX:g}, the largest epsilon synthzoo accounts "
                              f"for (a model file may state at most that cost), and the noise is nil long before it "
                              f"(epsilon above {EPSILON_DUBIOUS:g} is warned about). For a run without privacy say so: "
                              "epsilon=None")
    if not _number(delta):
        raise ConfigError(f"delta must be a number in (0, {DELTA_MEANINGLESS:g}), got {delta!r}")
    delta = float(delta)
    if delta == 0.0:
        raise ConfigError(f"delta must be > 0 (and below {DELTA_MEANINGLESS:g}), got 0: synthzoo's mechanisms are "
                          "Gaussian (zCDP accounting), so pure DP (delta=0) is not offered; use e.g. 1e-5 or 1e-6")
    if not (0.0 < delta < 1.0):
        raise ConfigError(f"delta must be a number in (0, {DELTA_MEANINGLESS:g}), got {delta}")
    if delta >= DELTA_MEANINGLESS:
        raise ConfigError(f"delta={delta:g} gives no meaningful guarantee: a mechanism that publishes each record "
                          f"outright with probability {delta:g} satisfies it. Use a delta well below 1/(number of "
                          "rows), e.g. 1e-5 or 1e-6")
    if epsilon is not None and epsilon <= epsilon_floor(delta):
        raise ConfigError(f"epsilon={epsilon:g} is below the smallest epsilon the RDP accountant can certify at "
                          f"delta={delta:g} (about {epsilon_floor(delta):.2g}, whatever the noise): no mechanism "
                          "run here could be reported at it. Ask for a larger epsilon (or delta)")
    return epsilon, delta


@functools.lru_cache(maxsize=64)
def epsilon_floor(delta: float) -> float:
    """The epsilon the accountant reports at ``delta`` for a vanishing zCDP cost: its conversion's floor
    over the finite set of RDP orders (about 0.0035 at delta 1e-5).  A request at or below it cannot be met."""
    return epsilon_of([dpa.ZCDpEvent(1e-9)], delta)


def privacy_warnings(epsilon: float | None, delta: float, stacklevel: int = 3) -> None:
    """Warn (:class:`PrivacySettingsWarning`) about a request that is allowed but dubious, from the
    request alone (nothing about the table is read): delta above :data:`DELTA_DUBIOUS`, epsilon above
    :data:`EPSILON_DUBIOUS`.  The checks
    that need the table's size run after the fit on the DP estimate of the row count
    (:func:`release_warnings`)."""
    if epsilon is not None and epsilon > EPSILON_DUBIOUS:
        warnings.warn(f"epsilon={epsilon:g} is very large: it bounds how much one person's record can change the "
                      f"odds of any outcome by a factor of e^{epsilon:g}, which protects no one, and the noise is "
                      "close to none. Deployed releases use epsilon of at most about 10-20; for no privacy say so "
                      "(epsilon=None)", PrivacySettingsWarning, stacklevel=stacklevel)
    if epsilon is not None and delta > DELTA_DUBIOUS:
        warnings.warn(f"delta={delta:g} is not small: with it a mechanism may publish any one person's record "
                      f"with probability {delta:g}, i.e. whole records of any table of more than {1 / delta:,.0f} "
                      "rows. Choose delta well below 1/(number of rows), e.g. 1e-5 for tables of up to ~100,000 "
                      "rows", PrivacySettingsWarning, stacklevel=stacklevel)


def release_warnings(epsilon: float | None, delta: float, n_hat: float, noise_mass: float | None = None,
                     what: str = "the DP estimate", stacklevel: int = 3, n_sigma: float | None = None) -> list[str]:
    """After a fit: warn where the request does not suit the table, judged from the DP estimate of the
    row count ``n_hat`` (post-processing of the release; the exact count is never read), its noise's
    standard deviation ``n_sigma`` when known, and, when given, ``noise_mass``, the expected total
    absolute noise of a typical released marginal (sigma * sqrt(2/pi) * cells, public once sigma is).
    Returns the messages (also warned)."""
    msgs = []
    if not (isinstance(n_hat, float) and math.isfinite(n_hat)):
        return msgs
    about = f"about {n_hat:,.0f} rows ({what})"
    if n_hat < 50:
        msgs.append(f"{about}: far too few rows for a synthesizer to learn anything; the synthetic data reflects "
                    "the noise and the schema, not the table")
    elif n_sigma and n_hat < min(50 + 2 * n_sigma, 200):
        # a noisy count can land well above a tiny table's rows (a record model's count takes a small share:
        # sigma about 40 at epsilon 1); capped so that a very noisy count does not flag ordinary tables
        msgs.append(f"{about}, give or take {n_sigma:,.0f}: the table may have fewer than 50 rows, far too few for a "
                    "synthesizer to learn anything; if so, the synthetic data reflects the noise and the schema")
    elif epsilon is not None and noise_mass is not None and noise_mass > n_hat:
        msgs.append(f"epsilon={epsilon:g} is below what this table carries: the noise in a typical measured marginal "
                    f"(about {noise_mass:,.0f} counts in all) exceeds the table's {about}, so the synthetic data "
                    "mostly reflects noise. Use a larger epsilon, fewer or coarser columns, or more rows")
    if epsilon is not None and delta * n_hat >= 1:
        msgs.append(f"delta={delta:g} is not small against this table's {about}: delta should lie well below "
                    f"1/rows ({1 / max(n_hat, 1):.2g})")
    for m in msgs:
        warnings.warn(m, PrivacySettingsWarning, stacklevel=stacklevel)
    return msgs


class PrivacyLedger:
    """Records every access to private data, refuses charges past the request, and owns the noise.

    Parameters
    ----------
    epsilon : float or None
        The request; ``None`` (or ``inf``) is a non-private run.
    delta : float, default 1e-5
    reserved_delta : float, default 0
        Part of ``delta`` set aside for charges with an additive delta (partition selection).
    noise_seed : int or None, default None
        Test-only opt-in for replayable noise (see :class:`NoiseSource`); the default draws all
        noise from OS entropy.  Never stored.

    Examples
    --------
    >>> ledger = PrivacyLedger(1.0, 1e-5)
    >>> budget = ledger.stage("select", 0.9)     # 90 % of the total zCDP rho
    """

    def __init__(self, epsilon: float | None, delta: float = 1e-5, reserved_delta: float = 0.0,
                 noise_seed: int | None = None):
        self.epsilon, self.delta = check_privacy_params(epsilon, delta)
        try:
            self.noise = NoiseSource(noise_seed)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        try:
            reserved_delta = float(reserved_delta)
        except (TypeError, ValueError):
            raise ConfigError(f"reserved_delta must be a number in [0, delta), got {reserved_delta!r}") from None
        if not (0.0 <= reserved_delta < self.delta):
            raise ConfigError(f"reserved_delta must lie in [0, delta={self.delta:g}), got {reserved_delta}")
        # Part of delta set aside for charges with an additive delta (partition selection);
        # total_rho is planned at the delta left over, so spending all of it stays within the request.
        self.reserved_delta = reserved_delta
        self.charges: list[Charge] = []
        self._acc = _accountant()  # running composition of the charged events
        self.total_rho = (math.inf if self.epsilon is None
                          else rho_for(self.epsilon, self.delta - self.reserved_delta))

    @property
    def private(self) -> bool:
        return self.epsilon is not None

    @property
    def replayable(self) -> bool:
        """True when any noise charged here came from a ``noise_seed`` (the report says so)."""
        return self.noise.replayable or getattr(self, "_replayed_charges", False)

    @property
    def rho_spent(self) -> float:
        return sum(c.rho for c in self.charges)

    @property
    def rho_remaining(self) -> float:
        return max(0.0, self.total_rho - self.rho_spent)

    @property
    def extra_delta(self) -> float:
        """Sum of the additive deltas charged so far (0 without such charges, and when non-private)."""
        return sum(c.extra_delta for c in self.charges) if self.private else 0.0

    @property
    def reserved_delta_remaining(self) -> float:
        """What is left of ``reserved_delta`` for further charges with an ``extra_delta``."""
        return max(0.0, self.reserved_delta - self.extra_delta)

    def charge(self, module: str, mechanism: str, event, rho: float, note: str = "",
               extra_delta: float = 0.0) -> None:
        """Record one mechanism run. Raises BudgetExceededError (and records nothing) on overspend.

        ``extra_delta`` is the mechanism's additive failure probability beyond its RDP event
        (e.g. partition selection).  It is subtracted from the delta at which the composition
        is converted; the charge is refused if the additive deltas would use up ``delta`` or the
        conversion at what is left exceeds ``epsilon``.
        """
        try:
            extra_delta = float(extra_delta)
        except (TypeError, ValueError):
            raise BudgetExceededError(f"{module}: {mechanism}: extra_delta must be a number, "
                                      f"got {extra_delta!r}") from None
        if not (extra_delta >= 0.0) or math.isinf(extra_delta):
            raise BudgetExceededError(f"{module}: {mechanism}: extra_delta must be finite and >= 0, got {extra_delta}")
        # a column name in a note may hold a line break (an Excel header): saved as it was, the file did not load
        note = printable(note, NOTE_CHARS)
        if not self.private:
            self.charges.append(Charge(module, mechanism, dpa.NonPrivateDpEvent(), math.inf, note))
            return
        if not (rho > 0) or math.isinf(rho):
            raise BudgetExceededError(f"{module}: {mechanism} would charge rho={rho}; a private run needs a finite, "
                                      "positive cost per mechanism")
        extra = self.extra_delta + extra_delta
        if extra >= self.delta:
            raise BudgetExceededError(
                f"{module}: {mechanism} would bring the additive delta to {extra:.6g}, which uses up the "
                f"requested delta={self.delta:g}; charge refused")
        trial = copy.deepcopy(self._acc)
        with quiet_accountant():
            trial.compose(event)
            eps = float(trial.get_epsilon(self.delta - extra))
        if eps > self.epsilon * (1 + _TOL) + _TOL:
            raise BudgetExceededError(
                f"{module}: {mechanism} would bring the total to epsilon={eps:.6g} at delta={self.delta:g} "
                f"(RDP converted at {self.delta - extra:.6g}, additive {extra:.3g}), "
                f"past the requested epsilon={self.epsilon:g}; charge refused")
        self.charges.append(Charge(module, mechanism, event, rho, note, extra_delta))
        self._acc = trial

    def epsilon_if(self, events: list, extra_delta: float = 0.0) -> float:
        """The total epsilon (at the requested delta) if ``events`` were charged too -- nothing is
        charged.  What calibrations such as DP-SGD's noise search ask."""
        if not self.private:
            return math.inf
        trial = copy.deepcopy(self._acc)
        with quiet_accountant():
            for e in events:
                trial.compose(e)
            return float(trial.get_epsilon(self.delta - self.extra_delta - extra_delta))

    def absorb(self, other: "PrivacyLedger", prefix: str = "") -> None:
        """Charge ``other``'s charges here (e.g. a DP schema's), keeping its replayable-noise flag."""
        for c in other.charges:
            self.charge(f"{prefix}{c.module}", c.mechanism, c.event, c.rho, c.note, extra_delta=c.extra_delta)
        if other.replayable:
            self._replayed_charges = True

    def spent(self) -> PrivacySpent:
        if not self.private:
            return PrivacySpent(math.inf, 0.0) if self.charges else PrivacySpent(0.0, 0.0)
        if not self.charges:
            return PrivacySpent(0.0, 0.0)
        with quiet_accountant():
            return PrivacySpent(float(self._acc.get_epsilon(self.delta - self.extra_delta)), self.delta)

    def breakdown(self) -> list[dict]:
        """Per-module totals: rho, share of the budget, mechanisms used, and epsilon alone."""
        rows: dict[str, dict] = {}
        for c in self.charges:
            r = rows.setdefault(c.module, {"module": c.module, "rho": 0.0, "charges": 0, "mechanisms": set(),
                                           "events": []})
            r["rho"] += c.rho
            r["charges"] += 1
            r["mechanisms"].add(c.mechanism)
            r["events"].append(c.event)
        out = []
        for r in rows.values():
            events = r.pop("events")  # popped in non-private runs too: events are not JSON (a model file)
            eps_alone = epsilon_of(events, self.delta - self.extra_delta) if self.private else math.inf
            out.append({**r, "mechanisms": ", ".join(sorted(r["mechanisms"])),
                        "share": (r["rho"] / self.total_rho) if self.private else float("nan"),
                        "epsilon_alone": eps_alone})
        return out

    def report(self) -> str:
        spent = self.spent()
        head = (f"privacy spent: {spent}" if spent.private else str(spent))
        if self.private:
            head += f" of requested (epsilon={self.epsilon:g}, delta={self.delta:g}); rho {self.rho_spent:.5g} " \
                    f"of {self.total_rho:.5g}"
            if self.extra_delta > 0:
                head += f"; includes additive delta {self.extra_delta:.3g} (partition selection)"
        lines = [head]
        if self.private and self.replayable:
            lines.append(REPLAYABLE_WARNING)
        for r in self.breakdown():
            share = "" if not self.private else f" rho={r['rho']:.5g} ({100 * r['share']:.1f}%)"
            noun = "charge " if r["charges"] == 1 else "charges"  # padded: the columns stay aligned
            lines.append(f"  {r['module']:<14} {r['charges']:>4} {noun}{share}  [{r['mechanisms']}]")
        return "\n".join(lines)

    def account(self) -> dict:
        """The account a model file carries (see :class:`SavedAccount`): the request, every charge with
        its ``dp_accounting`` event (what a reader recomputes the claim from), the claim itself, and the
        report and breakdown for people reading the file."""
        return {"requested": [self.epsilon, self.delta], "reserved_delta": self.reserved_delta,
                "charges": [{"module": c.module, "mechanism": c.mechanism, "event": event_to_json(c.event),
                             "rho": c.rho, "note": c.note, "extra_delta": c.extra_delta} for c in self.charges],
                "spent": list(self.spent()), "report": self.report(), "breakdown": self.breakdown(),
                "replayable_noise": self.replayable}

    def stage(self, name: str, share: float) -> "Budget":
        """A budget for one pipeline stage: ``share`` of the total rho."""
        return Budget(self, name, share * self.total_rho if self.private else math.inf)


class Budget:
    """A stage's allowance (in zCDP rho) drawn from one :class:`PrivacyLedger`.

    Modules receive a Budget and pass it to the mechanisms in
    :mod:`synthzoo.core.privacy.mechanisms`; they never see the ledger's other stages, and they
    draw noise only through it (``budget.noise``).

    Examples
    --------
    >>> budget = PrivacyLedger(1.0, 1e-5).stage("select", 0.9)
    >>> part = budget.sub("select/scores", 0.1 * budget.rho)
    """

    def __init__(self, ledger: PrivacyLedger, name: str, rho: float):
        self.ledger, self.name, self.rho = ledger, name, rho
        self.spent = 0.0

    @property
    def private(self) -> bool:
        return self.ledger.private

    @property
    def noise(self) -> NoiseSource:
        """The ledger's noise source: mechanisms draw their noise here, after charging."""
        return self.ledger.noise

    @property
    def remaining(self) -> float:
        return math.inf if not self.private else max(0.0, self.rho - self.spent)

    def sub(self, name: str, rho: float) -> "Budget":
        """A child allowance of ``rho`` out of this one (e.g. a selector's selection part)."""
        if self.private and rho > self.remaining * (1 + 1e-9):
            raise BudgetExceededError(f"{name}: asks for rho={rho:.6g} but {self.name} has {self.remaining:.6g} left")
        child = _ChildBudget(self, name, rho)
        return child

    def charge(self, mechanism: str, event, rho: float, note: str = "", module: str | None = None,
               extra_delta: float = 0.0) -> None:
        """Charge one mechanism run; ``module`` names the ledger row (default: this budget's name).

        ``extra_delta``: the mechanism's additive delta, passed on to :meth:`PrivacyLedger.charge`.
        """
        if self.private and self.spent + rho > self.rho * (1 + 1e-9) + 1e-15:
            raise BudgetExceededError(f"{self.name}: {mechanism} costs rho={rho:.6g} but only {self.remaining:.6g} "
                                      f"of this stage's {self.rho:.6g} is left; charge refused")
        parent = getattr(self, "parent", None)
        if parent is not None:
            parent.charge(mechanism, event, rho, note, module or self.name, extra_delta=extra_delta)
        else:
            self.ledger.charge(module or self.name, mechanism, event, rho, note, extra_delta=extra_delta)
        self.spent += rho if self.private else 0.0


class _ChildBudget(Budget):
    def __init__(self, parent: Budget, name: str, rho: float):
        super().__init__(parent.ledger, name, rho)
        self.parent = parent


# ------------------------------------------------------------------------------------------------
# events as JSON, and the account a model file carries
# ------------------------------------------------------------------------------------------------
_EVENT_DEPTH = 6
_MAX_COUNT = 10 ** 12


def event_to_json(event) -> dict:
    """A ``dp_accounting`` event as plain JSON (the kinds synthzoo's mechanisms charge)."""
    e = event
    if e is None or isinstance(e, dpa.NonPrivateDpEvent):
        return {"type": "non_private"}
    if isinstance(e, dpa.ZCDpEvent):
        return {"type": "zcdp", "rho": float(e.rho), "xi": float(e.xi)}
    if isinstance(e, dpa.GaussianDpEvent):
        return {"type": "gaussian", "noise_multiplier": float(e.noise_multiplier)}
    if isinstance(e, dpa.LaplaceDpEvent):
        return {"type": "laplace", "noise_multiplier": float(e.noise_multiplier)}
    if isinstance(e, dpa.PoissonSampledDpEvent):
        return {"type": "poisson_sampled", "sampling_probability": float(e.sampling_probability),
                "event": event_to_json(e.event)}
    if isinstance(e, dpa.SelfComposedDpEvent):
        return {"type": "self_composed", "count": int(e.count), "event": event_to_json(e.event)}
    if isinstance(e, dpa.ComposedDpEvent):
        return {"type": "composed", "events": [event_to_json(x) for x in e.events]}
    if isinstance(e, dpa.dp_event.RepeatAndSelectDpEvent):
        return {"type": "repeat_and_select", "mean": float(e.mean), "shape": float(e.shape),
                "event": event_to_json(e.event)}
    raise TypeError(f"cannot save a privacy event of type {type(e).__name__}")


#: Smallest noise multiplier a saved Gaussian or Laplace event may state: a zCDP event's rho is at most 1e6 (a
#: Gaussian's multiplier at least 7e-4), and DP-SGD's calibration looks no lower than 5e-4.
MIN_NOISE_MULTIPLIER = 1e-4


def event_from_json(d, where: str = "event", depth: int = 0):
    """The inverse of :func:`event_to_json` for untrusted input: every field type- and range-checked;
    raises :class:`ConfigError` naming the field."""
    def num(key, lo=0.0, hi=math.inf, lo_open=False):
        x = d.get(key)
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) \
                or x < lo or x > hi or (lo_open and x == lo):
            raise ConfigError(f"{where}.{key}: must be a finite number in {'(' if lo_open else '['}{lo:g}, {hi:g}], "
                              f"got {x!r}")
        return float(x)

    if depth > _EVENT_DEPTH:
        raise ConfigError(f"{where}: events nested too deeply")
    if not isinstance(d, dict) or not isinstance(d.get("type"), str):
        raise ConfigError(f"{where}: must be an object with a 'type'")
    kind = d["type"]
    keys = {"non_private": {"type"}, "zcdp": {"type", "rho", "xi"}, "gaussian": {"type", "noise_multiplier"},
            "laplace": {"type", "noise_multiplier"}, "poisson_sampled": {"type", "sampling_probability", "event"},
            "self_composed": {"type", "count", "event"}, "composed": {"type", "events"},
            "repeat_and_select": {"type", "mean", "shape", "event"}}
    if kind not in keys:
        raise ConfigError(f"{where}.type: unknown privacy event {kind!r}; expected one of {sorted(keys)}")
    if set(d) != keys[kind]:
        raise ConfigError(f"{where}: a {kind!r} event has exactly the keys {sorted(keys[kind])}, got {sorted(d)}")
    if kind == "non_private":
        return dpa.NonPrivateDpEvent()
    if kind == "zcdp":
        return dpa.ZCDpEvent(num("rho", 0, 1e6, lo_open=True), num("xi", 0, 1e6))
    # a noise multiplier is at least MIN_NOISE_MULTIPLIER: one near 0 (1e-300) made the accountant divide by its
    # square, 0.0, a ZeroDivisionError, not an error naming the field
    if kind == "gaussian":
        return dpa.GaussianDpEvent(num("noise_multiplier", MIN_NOISE_MULTIPLIER, 1e12))
    if kind == "laplace":
        return dpa.LaplaceDpEvent(num("noise_multiplier", MIN_NOISE_MULTIPLIER, 1e12))
    if kind == "poisson_sampled":
        return dpa.PoissonSampledDpEvent(num("sampling_probability", 0, 1),
                                         event_from_json(d["event"], f"{where}.event", depth + 1))
    if kind == "self_composed":
        c = d["count"]
        if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= _MAX_COUNT:
            raise ConfigError(f"{where}.count: must be an integer in [1, {_MAX_COUNT:g}], got {c!r}")
        return dpa.SelfComposedDpEvent(event_from_json(d["event"], f"{where}.event", depth + 1), c)
    if kind == "composed":
        evs = d["events"]
        if not isinstance(evs, list) or not 1 <= len(evs) <= 10_000:
            raise ConfigError(f"{where}.events: must be a list of 1 to 10,000 events")
        return dpa.ComposedDpEvent([event_from_json(x, f"{where}.events[{i}]", depth + 1) for i, x in enumerate(evs)])
    return dpa.dp_event.RepeatAndSelectDpEvent(event_from_json(d["event"], f"{where}.event", depth + 1),
                                               num("mean", 1, 1e6), num("shape", 0, 1e3, lo_open=True))


def gaussian_sigma(rho: float, l2_sensitivity: float) -> float:
    """Noise standard deviation of a rho-zCDP Gaussian mechanism (0 when rho is infinite)."""
    if math.isinf(rho):
        return 0.0
    if not rho > 0:
        raise ValueError(f"rho must be positive, got {rho}")
    return l2_sensitivity / math.sqrt(2.0 * rho)


def rho_of_event(event) -> float | None:
    """The zCDP cost a simple event states (None for composite events, which charge a calibrated rho)."""
    if isinstance(event, dpa.NonPrivateDpEvent):
        return math.inf
    if isinstance(event, dpa.ZCDpEvent):
        return float(event.rho)
    if isinstance(event, dpa.GaussianDpEvent):
        return 1.0 / (2.0 * float(event.noise_multiplier) ** 2)
    return None


def charge_owner(module: str) -> str:
    """The module a charge belongs to: its stages charge as ``name/stage`` (``mst/tree``, ``tldm/vae``)."""
    return module.split("/", 1)[0]


def _matches(ledger: "PrivacyLedger", event, rho: float) -> bool:
    """Whether charging ``event`` onto ``ledger`` costs the epsilon that charging ``rho`` zCDP would (to
    1e-6): a composite event's rho is what its noise was calibrated to, so neither may be understated."""
    if not (rho > 0 and math.isfinite(rho)):
        return False
    a, b = ledger.epsilon_if([event]), ledger.epsilon_if([dpa.ZCDpEvent(rho)])
    return abs(a - b) <= 1e-6 * max(a, b) + 1e-9


def matched_rho(ledger: "PrivacyLedger", event, rho: float) -> float:
    """The rho to charge for a composite ``event`` calibrated to ``rho``: ``rho`` itself when composing the
    event onto ``ledger`` costs what ``rho`` zCDP would, else (noise at a calibration search's floor, so
    the event costs less) the smallest rho that covers the event -- what a saved account's check wants."""
    if _matches(ledger, event, rho):
        return rho
    target = ledger.epsilon_if([event])
    lo, hi = 0.0, float(rho)
    for _ in range(64):
        mid = (lo + hi) / 2
        if ledger.epsilon_if([dpa.ZCDpEvent(mid)]) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def _close(a: float, b: float, rel: float = 1e-6) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


#: Most events a saved account may hold (each replayed through the RDP accountant: about 2.5 ms apiece
#: here, so 10,000 take ~25 s; a fit records hundreds, GEM on 100 columns ~1,000), and most of them that
#: the accountant replays numerically (up to half a second apiece, three times in a load and its report:
#: the charge's cost check, the charge, the breakdown; a fit records at most two, a tuned release one).
MAX_CHARGES = 10_000
MAX_COSTLY_EVENTS = 16


def _event_counts(d, depth: int = 0) -> tuple[int, int]:
    """(events, poisson_sampled / repeat_and_select events) a JSON event holds, nested ones included
    (bounded depth and breadth; the structure itself is checked later)."""
    if not isinstance(d, dict) or depth > _EVENT_DEPTH:
        return 1, 0
    own = int(d.get("type") in ("poisson_sampled", "repeat_and_select"))
    inner = d.get("events") if d.get("type") == "composed" else [d.get("event")] if "event" in d else []
    n, c = 1, own
    for x in (inner if isinstance(inner, list) else [])[:MAX_CHARGES + 1]:
        a, b = _event_counts(x, depth + 1)
        n, c = n + a, c + b
    return n, c


class SavedAccount:
    """The privacy account a saved model carries: a claim, checked when the file is read.

    A model file is untrusted input, and so is its privacy claim.  Reading it rebuilds a
    :class:`PrivacyLedger` from the file's request and replays every recorded charge (each
    ``dp_accounting`` event type- and range-checked, each charge's rho checked against what its
    event states), so the ledger refuses charges past the request as it did at fit time; the
    (epsilon, delta) is then *recomputed* from the events with the RDP accountant and must match
    the claim.  The saved report and breakdown are not trusted: they are recomputed.
    :meth:`check_measurements` binds the noisy measurements a model file holds to the charges
    (each one's noise scale must be the one its charge calibrated).  What no reader can check: a
    forger who rewrites the events, the measurements and the model consistently; the report says so.

    It answers the same questions as a :class:`PrivacyLedger` (``spent``, ``breakdown``,
    ``report``, ``private``, ``replayable``), so a loaded synthesizer has one state for them.
    """

    FROM_FILE = ("(read from the model file and verified as far as a file allows: the (epsilon, delta) above was "
                 "recomputed from the file's {n} recorded mechanism events with the RDP accountant and matches the "
                 "claim; each charge's cost matches its event and all stay within the requested budget{meas}. "
                 "A file rewritten consistently -- events, measurements and model together -- cannot be told "
                 "apart, nor can a file show that its noise was secret or its schema public: the guarantee "
                 "holds for a file from a source you trust)")

    def __init__(self, doc: dict):
        where = "model file: privacy"
        if not isinstance(doc, dict):
            raise ConfigError(f"{where}: must be an object")
        need = {"requested", "reserved_delta", "charges", "spent"}
        missing = sorted(need - set(doc))
        if missing:
            raise ConfigError(f"{where}: missing {missing} (a file without its recorded charges cannot be verified; "
                              "files saved before synthzoo recorded them must be refitted)")
        unknown = sorted(set(doc) - need - {"report", "breakdown", "replayable_noise"})
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown}")
        req = doc["requested"]
        if not (isinstance(req, list) and len(req) == 2):
            raise ConfigError(f"{where}.requested: must be [epsilon or null, delta]")
        try:
            eps, delta = check_privacy_params(req[0], req[1])
        except ConfigError as e:
            raise ConfigError(f"{where}.requested: {e}") from None
        rd = doc["reserved_delta"]
        if isinstance(rd, bool) or not isinstance(rd, (int, float)):
            raise ConfigError(f"{where}.reserved_delta: must be a number, got {rd!r}")
        # shown to people only and recomputed here, never read; typed all the same, as every field of the file
        if not isinstance(doc.get("report", ""), str):
            raise ConfigError(f"{where}.report: must be text, got {type(doc['report']).__name__}")
        bd = doc.get("breakdown", [])
        if not (isinstance(bd, list) and len(bd) <= MAX_CHARGES and all(isinstance(r, dict) for r in bd)):
            raise ConfigError(f"{where}.breakdown: must be a list of at most {MAX_CHARGES:,} objects")
        rep = doc.get("replayable_noise", False)
        if not isinstance(rep, bool):
            raise ConfigError(f"{where}.replayable_noise: must be true or false, got {rep!r}")
        charges = doc["charges"]
        if not isinstance(charges, list) or len(charges) > MAX_CHARGES:
            raise ConfigError(f"{where}.charges: must be a list of at most {MAX_CHARGES:,} charges")
        # the RDP accountant replays a subsampled or repeated event numerically (a fraction of a second each):
        # bounded, so a file cannot make loading run for hours; real runs record a handful
        counts = [_event_counts(c.get("event")) for c in charges if isinstance(c, dict)]
        events, costly = sum(n for n, _ in counts), sum(k for _, k in counts)
        if events > MAX_CHARGES:
            raise ConfigError(f"{where}.charges: {events:,} privacy events, more than a model file may hold "
                              f"({MAX_CHARGES:,})")
        if costly > MAX_COSTLY_EVENTS:
            raise ConfigError(f"{where}.charges: {costly} subsampled or repeat-and-select events, more than a model "
                              f"file may hold ({MAX_COSTLY_EVENTS}); a fit records a few")
        try:
            ledger = PrivacyLedger(eps, delta, reserved_delta=rd if eps is not None else 0.0)
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
        for i, c in enumerate(charges):
            w = f"{where}.charges[{i}]"
            if not isinstance(c, dict) or set(c) != {"module", "mechanism", "event", "rho", "note", "extra_delta"}:
                raise ConfigError(f"{w}: must be an object with module, mechanism, event, rho, note, extra_delta")
            if not all(isinstance(c[k], str) for k in ("module", "mechanism", "note")):
                raise ConfigError(f"{w}: module, mechanism and note must be strings")
            for k in ("module", "mechanism", "note"):  # printed in the report
                check_text(c[k], f"{w}.{k}", NOTE_CHARS)
            event = event_from_json(c["event"], f"{w}.event")
            rho, extra = c["rho"], c["extra_delta"]
            if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not rho > 0:
                raise ConfigError(f"{w}.rho: must be a positive number (Infinity for a non-private access), got {rho!r}")
            if isinstance(extra, bool) or not isinstance(extra, (int, float)) or not 0 <= extra < 1:
                raise ConfigError(f"{w}.extra_delta: must be a number in [0, 1), got {extra!r}")
            stated = rho_of_event(event)
            if (stated is not None and not _close(float(rho), stated)) or (stated is None and math.isinf(rho)):
                raise ConfigError(f"{w}: the charge's rho={rho!r} does not match its {c['event']['type']} event "
                                  "(the account was edited)")
            try:
                matches = stated is not None or eps is None or _matches(ledger, event, float(rho))
            except dpa.UnsupportedEventError:  # e.g. Poisson sampling around a zCDP event: nothing synthzoo records
                raise ConfigError(f"{w}.event: a {c['event']['type']} event the RDP accountant cannot replay "
                                  "(the account was edited)") from None
            if not matches:
                # a composite event's rho is the zCDP budget its noise was calibrated to: composed onto the
                # charges before it, the event costs what that rho would (DP-SGD's bisection), no more, no less
                raise ConfigError(f"{w}: the charge's rho={rho!r} is not what its {c['event']['type']} event "
                                  "costs (the account was edited)")
            if eps is None and not isinstance(event, dpa.NonPrivateDpEvent):
                raise ConfigError(f"{w}: a non-private account holds a private event (the account was edited)")
            try:
                ledger.charge(c["module"], c["mechanism"], event, float(rho), c["note"], extra_delta=float(extra))
            except BudgetExceededError as e:
                raise ConfigError(f"{w}: replaying the recorded charges fails: {e} (the account was edited)") from None
        claim = doc["spent"]
        if not (isinstance(claim, list) and len(claim) == 2
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in claim)):
            raise ConfigError(f"{where}.spent: must be [epsilon, delta]")
        got = ledger.spent()
        if not (_close(float(claim[0]), got.epsilon) and _close(float(claim[1]), got.delta)):
            raise ConfigError(f"{where}.spent: the file claims (epsilon={claim[0]!r}, delta={claim[1]!r}) but its "
                              f"recorded events give {got} -- the privacy claim was edited, or the events were")
        self.ledger = ledger
        self.requested = (eps, delta)
        self.replayable = bool(rep)
        self.checked_measurements: int | None = None

    def modules(self) -> set:
        return {c.module for c in self.ledger.charges}

    def check_measurements(self, measurements) -> int:
        """Bind noisy measurements a model file holds to this account: each one needs a charge of its
        own (a ``marginal ...`` note over its clique) whose calibrated noise is the measurement's
        ``sigma`` (0 in a non-private run).  Returns how many were checked; ConfigError otherwise."""
        pool: dict[str, list[float]] = {}
        for c in self.ledger.charges:
            stated = rho_of_event(c.event)  # the event's own cost: a composite event calibrates no marginal's noise
            if c.note.startswith("marginal ") and stated is not None:
                pool.setdefault(c.note, []).append(0.0 if math.isinf(stated) else gaussian_sigma(stated, 1.0))
        for m in measurements:
            note = printable(f"marginal {'x'.join(m.clique)}", NOTE_CHARS)  # as the charge wrote it
            have = pool.get(note, [])
            hit = next((i for i, s in enumerate(have) if _close(s, float(m.sigma), 1e-6) or s == float(m.sigma)), None)
            if hit is None:
                raise ConfigError(f"model file: the measurement over {list(m.clique)} (noise sigma={m.sigma:g}) has no "
                                  "matching charge in the privacy account (the model or the account was edited)")
            have.pop(hit)
        self.checked_measurements = len(measurements)
        return len(measurements)

    def account(self) -> dict:
        """The account to save again (recomputed from the verified charges)."""
        out = self.ledger.account()
        out["replayable_noise"] = self.replayable
        return out

    @property
    def private(self) -> bool:
        return self.ledger.private

    def spent(self) -> PrivacySpent:
        return self.ledger.spent()

    def breakdown(self) -> list[dict]:
        return self.ledger.breakdown()

    def report(self) -> str:
        text = self.ledger.report()
        if self.replayable and REPLAYABLE_WARNING not in text:
            text += "\n" + REPLAYABLE_WARNING
        meas = ""
        if self.checked_measurements:
            meas = f"; the model's {self.checked_measurements} noisy measurements carry the noise their charges calibrated"
        if not self.private:
            return text + f"\n(read from the model file: a non-private run, as its {len(self.ledger.charges)} recorded " \
                          "events say)"
        return text + "\n" + self.FROM_FILE.format(n=len(self.ledger.charges), meas=meas)
