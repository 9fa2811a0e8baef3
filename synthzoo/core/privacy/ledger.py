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

import copy
import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import dp_accounting as dpa
from dp_accounting import rdp

from ..errors import BudgetExceededError, ConfigError
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


def epsilon_of(events: list, delta: float) -> float:
    """Epsilon at ``delta`` of the composition of ``events`` (RDP accountant)."""
    if not events:
        return 0.0
    acc = _accountant()
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


def check_privacy_params(epsilon, delta) -> tuple[float | None, float]:
    """Validate (epsilon, delta); epsilon None or inf means a non-private run."""
    if epsilon is not None:
        try:
            epsilon = float(epsilon)
        except (TypeError, ValueError):
            raise ConfigError(f"epsilon must be a positive number or None, got {epsilon!r}") from None
        if math.isnan(epsilon) or epsilon <= 0:
            raise ConfigError(f"epsilon must be > 0 (or None for a non-private run), got {epsilon}")
        if math.isinf(epsilon):
            epsilon = None
    try:
        delta = float(delta)
    except (TypeError, ValueError):
        raise ConfigError(f"delta must be a number in (0, 1), got {delta!r}") from None
    if not (0.0 < delta < 1.0):
        raise ConfigError(f"delta must lie strictly between 0 and 1, got {delta}")
    return epsilon, delta


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
            lines.append(f"  {r['module']:<14} {r['charges']:>4} charge(s){share}  [{r['mechanisms']}]")
        return "\n".join(lines)

    def account(self) -> dict:
        """The account a model file carries (see :class:`SavedAccount`)."""
        return {"spent": list(self.spent()), "report": self.report(), "breakdown": self.breakdown(),
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


class SavedAccount:
    """The privacy account a saved model carries: what its ledger said when it was saved.

    It answers the same questions as a :class:`PrivacyLedger` (``spent``, ``breakdown``,
    ``report``, ``private``, ``replayable``), so a loaded synthesizer has one state for them;
    the report says it was read from the file, not recomputed.
    """

    FROM_FILE = "(as saved in the model file; read from it, not recomputed)"

    def __init__(self, doc: dict):
        try:
            eps, delta = doc["spent"]
            self._spent = PrivacySpent(float(eps), float(delta))
            self._report = str(doc["report"])
            self._breakdown = [dict(r) for r in doc["breakdown"]]
            self.replayable = bool(doc.get("replayable_noise", False))
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"model file: malformed privacy account ({e!r})") from None

    def account(self) -> dict:
        """The account as saved (see :meth:`PrivacyLedger.account`)."""
        return {"spent": list(self._spent), "report": self._report, "breakdown": self.breakdown(),
                "replayable_noise": self.replayable}

    @property
    def private(self) -> bool:
        return self._spent.private

    def spent(self) -> PrivacySpent:
        return self._spent

    def breakdown(self) -> list[dict]:
        return [dict(r) for r in self._breakdown]

    def report(self) -> str:
        text = self._report
        if self.replayable and REPLAYABLE_WARNING not in text:
            text += "\n" + REPLAYABLE_WARNING
        return text + "\n" + self.FROM_FILE
