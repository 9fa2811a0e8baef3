"""Empirical differential-privacy audits: lower bounds on epsilon that a mechanism must respect.

A mechanism ``M`` is (epsilon, delta)-DP when, for neighbouring inputs ``D`` and ``D'`` and every
event ``E``,

    P[M(D) in E] <= exp(epsilon) P[M(D') in E] + delta     (and with D, D' swapped).

Run ``M`` many times on ``D`` and on ``D'``, count how often the output falls in ``E``, and turn
the counts into confidence bounds on the two probabilities; then any epsilon below

    ln((p_lower(D) - delta) / p_upper(D'))

is refuted at that confidence.  This is the auditing method of Jagielski, Ullman & Oprea,
"Auditing Differentially Private Machine Learning: How Private is Private SGD?" (NeurIPS 2020)
and Nasr, Song, Thakurta, Papernot & Carlini, "Adversary Instantiation: Lower Bounds for
Differentially Private Machine Learning" (IEEE S&P 2021): the event is a threshold on a
distinguishing statistic, the bounds are exact binomial (Clopper-Pearson) bounds.  A correct
mechanism yields a lower bound above its claim with probability at most ``1 - confidence``; a
broken one (too little noise, noise an attacker can replay) yields one above the claim once the
runs are enough -- which is what shows that an audit can see anything.

Validity of the bound, as implemented here:

* **Simultaneous intervals.**  The two release probabilities get two-sided Clopper-Pearson
  intervals at level ``1 - alpha/2`` each (``alpha = 1 - confidence``), so both hold together
  with probability at least ``confidence`` (Bonferroni).  The bound is then the largest of the
  four DP inequalities (the event and its complement, in both directions) -- all four are
  covered by the same pair of intervals, so taking their maximum costs nothing more.
* **Threshold chosen on separate runs.**  When the threshold on a scalar statistic is not fixed
  in advance, :func:`audit_statistic` picks it on a *calibration* share of the runs (the one
  whose bound is largest there) and computes the reported bound on the other runs only, so the
  choice does not bias the bound (runs are independent).

The harness is small on purpose: :func:`run_pair` runs a callable mechanism on two inputs,
:func:`audit_statistic` / :func:`audit_events` turn samples into an :class:`AuditResult`,
:class:`ScaledNoiseSource` is the "noise scaled down" broken variant of the real noise source and
:func:`distinguishing_seed` builds the "noise replayed from a known seed" attack.  The audits of
synthzoo's own mechanisms, built on this harness, are :mod:`synthzoo.testing.mechanisms`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import beta as _beta

from ..core.privacy.noise import NoiseSource

__all__ = ["AuditResult", "ScaledNoiseSource", "audit_events", "audit_replayed", "audit_statistic",
           "clopper_pearson", "distinguishing_seed", "epsilon_lower_bound", "run_pair"]


# -------------------------------------------------------------------------------------------------
# binomial bounds and the epsilon bound
# -------------------------------------------------------------------------------------------------
def clopper_pearson(k, n, alpha: float):
    """One-sided Clopper-Pearson bounds ``(lower, upper)`` on a binomial probability.

    Parameters
    ----------
    k, n : int or array of int
        Successes and trials.
    alpha : float
        Error probability of *each* one-sided bound: ``P(p < lower) <= alpha`` and
        ``P(p > upper) <= alpha``.

    Returns
    -------
    lower, upper : float or ndarray
        ``lower = Beta(alpha; k, n - k + 1)`` (0 when ``k = 0``) and
        ``upper = Beta(1 - alpha; k + 1, n - k)`` (1 when ``k = n``).

    Examples
    --------
    >>> lo, hi = clopper_pearson(0, 100, 0.05)
    >>> float(lo), round(float(hi), 4)
    (0.0, 0.0295)
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, _beta.ppf(alpha, np.maximum(k, 1e-300), n - k + 1), 0.0)
        upper = np.where(k < n, _beta.ppf(1.0 - alpha, k + 1, np.maximum(n - k, 1e-300)), 1.0)
    if lower.ndim == 0:
        return float(lower), float(upper)
    return lower, upper


def _log_ratio(num, den):
    """``ln(num / den)`` with ``num <= 0`` giving -inf and ``den == 0 < num`` giving +inf."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(num > 0, np.log(np.maximum(num, 1e-300)) - np.log(np.maximum(den, 1e-300)), -np.inf)
        out = np.where((num > 0) & (den <= 0), np.inf, out)
    return out


_DIRECTIONS = ("P[E|D] vs P[E|D']", "P[E|D'] vs P[E|D]", "P[not E|D'] vs P[not E|D]", "P[not E|D] vs P[not E|D']")


def _bounds(k0, n0, k1, n1, delta: float, confidence: float):
    """The four epsilon lower bounds (arrays over events) from simultaneous CP intervals."""
    a = (1.0 - confidence) / 4.0  # two two-sided intervals: four one-sided tails share 1 - confidence
    lo0, hi0 = clopper_pearson(k0, n0, a)
    lo1, hi1 = clopper_pearson(k1, n1, a)
    lo0, hi0, lo1, hi1 = (np.asarray(x, dtype=float) for x in (lo0, hi0, lo1, hi1))
    return np.stack([
        _log_ratio(lo0 - delta, hi1),              # P[E|D]      <= e^eps P[E|D']      + delta
        _log_ratio(lo1 - delta, hi0),              # P[E|D']     <= e^eps P[E|D]       + delta
        _log_ratio((1.0 - hi1) - delta, 1.0 - lo0),  # P[not E|D'] <= e^eps P[not E|D] + delta
        _log_ratio((1.0 - hi0) - delta, 1.0 - lo1),  # P[not E|D]  <= e^eps P[not E|D'] + delta
    ])


def epsilon_lower_bound(k0: int, n0: int, k1: int, n1: int, delta: float = 0.0,
                        confidence: float = 0.95) -> tuple[float, str]:
    """Lower bound on epsilon from event counts on two neighbouring inputs, valid at ``confidence``.

    Parameters
    ----------
    k0, n0 : int
        Runs on ``D`` whose output fell in the event ``E``, and runs on ``D``.
    k1, n1 : int
        The same on ``D'``.
    delta : float, default 0
        The delta of the (epsilon, delta) claim being audited (0 for pure DP).
    confidence : float, default 0.95
        The probability, over the runs, that the bound is valid (``<=`` the true epsilon of any
        (epsilon, delta)-DP mechanism).  ``E`` must be fixed before these runs are seen.

    Returns
    -------
    epsilon_lb : float
        ``max(0, ...)`` of the four DP inequalities (``E`` and its complement, both directions),
        each evaluated at the simultaneous two-sided Clopper-Pearson intervals of the two
        probabilities (each at level ``1 - (1 - confidence) / 2``).
    direction : str
        Which inequality gave the bound.

    Examples
    --------
    >>> eps, how = epsilon_lower_bound(500, 1000, 50, 1000)
    >>> 1.8 < eps < 2.3, how
    (True, "P[E|D] vs P[E|D']")
    """
    _check_confidence(confidence)
    b = _bounds(int(k0), int(n0), int(k1), int(n1), float(delta), float(confidence))
    i = int(np.argmax(b))
    return max(0.0, float(b[i])), _DIRECTIONS[i]


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")


# -------------------------------------------------------------------------------------------------
# results
# -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditResult:
    """One audit's outcome.

    Attributes
    ----------
    epsilon_lb : float
        The audited lower bound on epsilon (at ``delta``), valid with probability ``confidence``.
    delta : float
        The delta at which it was computed.
    confidence : float
    runs : tuple of int
        Samples of ``M(D)`` and ``M(D')`` the bound was computed from.
    counts : tuple of int
        How many of them fell in the event.
    event : str
        The event, e.g. ``"statistic >= 3"`` or ``"output equals the replayed M(D)"``.
    threshold : float or None
        The threshold on the statistic (None for a boolean event).
    direction : str
        Which DP inequality gave the bound.
    calibration_runs : tuple of int
        Samples per side spent choosing the threshold (not used in the bound).
    """

    epsilon_lb: float
    delta: float
    confidence: float
    runs: tuple
    counts: tuple
    event: str
    threshold: float | None = None
    direction: str = ""
    calibration_runs: tuple = (0, 0)

    @property
    def rates(self) -> tuple[float, float]:
        """Observed event frequencies on ``D`` and ``D'``."""
        return (self.counts[0] / self.runs[0] if self.runs[0] else float("nan"),
                self.counts[1] / self.runs[1] if self.runs[1] else float("nan"))

    def exceeds(self, epsilon: float) -> bool:
        """True when the audit refutes an ``(epsilon, delta)`` claim (at this confidence)."""
        return self.epsilon_lb > epsilon

    def __str__(self) -> str:
        cal = (f", threshold chosen on {self.calibration_runs[0]}+{self.calibration_runs[1]} other runs"
               if any(self.calibration_runs) else "")
        return (f"epsilon >= {self.epsilon_lb:.3f} at delta={self.delta:.3g} ({100 * self.confidence:g}% "
                f"confidence; event {self.event}: {self.counts[0]}/{self.runs[0]} on D, "
                f"{self.counts[1]}/{self.runs[1]} on D'{cal})")


# -------------------------------------------------------------------------------------------------
# audits
# -------------------------------------------------------------------------------------------------
def audit_events(in_d, in_d_prime, delta: float = 0.0, confidence: float = 0.95,
                 event: str = "event") -> AuditResult:
    """Audit a fixed event from boolean samples: ``in_d[i]`` is True when run ``i`` of ``M(D)``
    fell in the event, ``in_d_prime`` likewise for ``M(D')``.

    The event must have been fixed before these runs (e.g. "the category is released", or
    "the output equals ``M(D)`` replayed from a known seed").

    Examples
    --------
    >>> r = audit_events(np.ones(200, bool), np.zeros(200, bool), confidence=0.95, event="E")
    >>> round(r.epsilon_lb, 2)
    3.81
    """
    e0 = np.asarray(in_d, dtype=bool).ravel()
    e1 = np.asarray(in_d_prime, dtype=bool).ravel()
    k0, k1 = int(e0.sum()), int(e1.sum())
    eps, how = epsilon_lower_bound(k0, e0.size, k1, e1.size, delta, confidence)
    return AuditResult(eps, float(delta), float(confidence), (e0.size, e1.size), (k0, k1), event, None, how)


def audit_statistic(stat_d, stat_d_prime, delta: float = 0.0, confidence: float = 0.95, *,
                    threshold: float | None = None, calibration: float = 0.5,
                    selection_confidence: float | None = None, max_candidates: int = 512,
                    name: str = "statistic") -> AuditResult:
    """Audit a scalar statistic by thresholding it: the event is ``statistic >= threshold``.

    Parameters
    ----------
    stat_d, stat_d_prime : array_like
        The statistic of independent runs of ``M(D)`` and ``M(D')``.
    delta, confidence : float
        As in :func:`epsilon_lower_bound`.
    threshold : float, optional
        A threshold fixed in advance: every run goes into the bound.  Without it, the first
        ``calibration`` share of each sample chooses the threshold (the candidate -- a value taken
        by the statistic there -- with the largest bound on those runs) and the bound is
        computed on the remaining runs alone, so that the choice does not bias it.
    calibration : float, default 0.5
        Share of the runs spent on the choice.
    selection_confidence : float, optional
        The confidence of the bound that ranks the candidates on the calibration runs (default
        ``1 - (1 - confidence) / 10``).  Ranking by a stricter bound than the reported one favours
        thresholds with more events and so guards against the winner's curse of small counts (a
        threshold that looks best on few calibration events and disappoints on the audit runs);
        it does not affect the validity of the bound, which the audit runs alone give.
    max_candidates : int, default 512
        Candidate thresholds: the values the statistic takes on the calibration runs or, when
        there are more, as many quantiles of them, log-spaced towards both tails.
    name : str
        The statistic's name, for the result's ``event``.

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> r = audit_statistic(rng.normal(0, 1, 4000), rng.normal(1, 1, 4000), confidence=0.95)
    >>> 0.5 < r.epsilon_lb < 3.0
    True
    """
    _check_confidence(confidence)
    s0 = np.asarray(stat_d, dtype=float).ravel()
    s1 = np.asarray(stat_d_prime, dtype=float).ravel()
    if np.isnan(s0).any() or np.isnan(s1).any():
        raise ValueError("the statistic has NaN values")
    cal = (0, 0)
    if threshold is None:
        if not 0.0 < calibration < 1.0:
            raise ValueError(f"calibration must lie in (0, 1), got {calibration}")
        c0, c1 = int(s0.size * calibration), int(s1.size * calibration)
        if min(c0, c1, s0.size - c0, s1.size - c1) < 1:
            raise ValueError("too few runs to split into calibration and audit")
        sel = 1.0 - (1.0 - confidence) / 10.0 if selection_confidence is None else float(selection_confidence)
        _check_confidence(sel)
        threshold = _best_threshold(s0[:c0], s1[:c1], float(delta), sel, int(max_candidates))
        s0, s1, cal = s0[c0:], s1[c1:], (c0, c1)
    k0, k1 = int((s0 >= threshold).sum()), int((s1 >= threshold).sum())
    eps, how = epsilon_lower_bound(k0, s0.size, k1, s1.size, delta, confidence)
    return AuditResult(eps, float(delta), float(confidence), (s0.size, s1.size), (k0, k1),
                       f"{name} >= {threshold:.6g}", float(threshold), how, cal)


def _best_threshold(s0: np.ndarray, s1: np.ndarray, delta: float, confidence: float, max_candidates: int) -> float:
    pooled = np.concatenate([s0, s1])
    cand = np.unique(pooled)
    if cand.size > max_candidates:  # quantiles, log-spaced towards both tails (where the best events lie)
        tail = np.geomspace(1.0 / pooled.size, 0.5, max_candidates // 2)
        cand = np.unique(np.quantile(pooled, np.concatenate([tail, 1.0 - tail])))
    a0, a1 = np.sort(s0), np.sort(s1)
    k0 = a0.size - np.searchsorted(a0, cand, side="left")  # runs with statistic >= t
    k1 = a1.size - np.searchsorted(a1, cand, side="left")
    b = _bounds(k0, a0.size, k1, a1.size, delta, confidence).max(axis=0)
    return float(cand[int(np.argmax(b))])


# -------------------------------------------------------------------------------------------------
# running mechanisms
# -------------------------------------------------------------------------------------------------
def run_pair(mechanism: Callable[[Any], Any], d: Any, d_prime: Any, runs: int,
             statistic: Callable[[Any], Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run ``mechanism`` ``runs`` times on ``d`` and on ``d_prime`` (alternately) and return the
    statistics of the outputs, one array per input.

    ``mechanism(x)`` must be a *fresh* run each call (fresh ledger, fresh noise).  ``statistic``
    (default: identity) maps an output to a number, a boolean or a 1-d array of them; arrays
    are concatenated (for mechanisms whose one run yields several independent draws of the
    audited coordinate -- see the tests' vectorised marginal audit).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a, b = run_pair(lambda x: x + rng.normal(), 0.0, 1.0, runs=5)
    >>> a.shape, b.shape
    ((5,), (5,))
    """
    stat = statistic if statistic is not None else (lambda out: out)
    out0, out1 = [], []
    for _ in range(int(runs)):
        out0.append(np.atleast_1d(np.asarray(stat(mechanism(d)))).ravel())
        out1.append(np.atleast_1d(np.asarray(stat(mechanism(d_prime)))).ravel())
    return np.concatenate(out0), np.concatenate(out1)


def distinguishing_seed(replayed: Callable[[Any, int], Any], d: Any, d_prime: Any,
                        seeds: Iterable[int] = range(200),
                        same: Callable[[Any, Any], bool] | None = None) -> tuple[int, Any]:
    """The "noise replayed from a known seed" attack: find a seed whose replayed outputs on ``d``
    and ``d_prime`` differ, and return ``(seed, reference)`` with ``reference = replayed(d, seed)``.

    ``replayed(x, seed)`` runs the mechanism with ``noise_seed=seed`` (the test-only opt-in of
    :class:`~synthzoo.core.privacy.noise.NoiseSource`).  An attacker who knows the seed (e.g. read
    from a released model file, the attack that removing seeds from releases fixed) and the
    candidate inputs computes both outputs; the event "the output equals ``reference``" then
    tells ``D`` from ``D'`` with certainty.  ``same(a, b)`` compares outputs (default: array
    equality).  Raises ValueError when no seed in ``seeds`` separates the inputs.
    """
    same = same if same is not None else _same_output
    for seed in seeds:
        ref = replayed(d, int(seed))
        if not same(ref, replayed(d_prime, int(seed))):
            return int(seed), ref
    raise ValueError("no seed tried makes the replayed outputs on the two inputs differ")


def _same_output(a, b) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except (TypeError, ValueError):
        return a == b


def audit_replayed(replayed: Callable[[Any, int], Any], d: Any, d_prime: Any, runs: int, delta: float = 0.0,
                   confidence: float = 0.95, seeds: Iterable[int] = range(200),
                   same: Callable[[Any, Any], bool] | None = None) -> AuditResult:
    """Audit the "noise replayed from a known seed" variant of a mechanism.

    The attacker knows the seed: :func:`distinguishing_seed` picks one whose replayed outputs on
    ``d`` and ``d_prime`` differ and computes the reference ``M_seed(d)`` (that run is the
    attacker's, not one of the audited runs).  Then ``runs`` fresh runs of ``M_seed`` on each
    input are checked against the fixed event "output equals the reference".
    """
    same = same if same is not None else _same_output
    seed, ref = distinguishing_seed(replayed, d, d_prime, seeds, same)
    e0, e1 = run_pair(lambda x: same(replayed(x, seed), ref), d, d_prime, runs)
    return audit_events(e0, e1, delta, confidence, event=f"output equals M(D) replayed from noise_seed={seed}")


# -------------------------------------------------------------------------------------------------
# the "noise scaled down" broken variant
# -------------------------------------------------------------------------------------------------
class ScaledNoiseSource(NoiseSource):
    """A deliberately broken noise source for audits: every noise scale multiplied by ``factor``.

    Wraps a real :class:`~synthzoo.core.privacy.noise.NoiseSource` (OS entropy, or replayable
    with ``noise_seed``) and forwards its words; the samplers a mechanism calls for noise --
    ``normal``, ``laplace``, ``gumbel``, ``exponential``, ``discrete_laplace``,
    ``discrete_gaussian`` -- draw with their scale times ``factor``.  Put it in a real ledger
    (``ledger.noise = ScaledNoiseSource(0.5)``) to get "the mechanism with its noise halved",
    charged and reported exactly as the real one: an audit must then refute the real claim.
    Test use only.
    """

    def __init__(self, factor: float = 0.5, noise_seed: int | None = None):
        if not (factor > 0 and math.isfinite(factor)):
            raise ValueError(f"factor must be positive and finite, got {factor}")
        super().__init__(None)
        self.factor = float(factor)
        self._inner = NoiseSource(noise_seed)

    @property
    def replayable(self) -> bool:
        return self._inner.replayable

    def __repr__(self) -> str:
        return f"ScaledNoiseSource(factor={self.factor:g}, {self._inner!r})"

    def words(self, n: int) -> np.ndarray:
        return self._inner.words(n)

    def normal(self, scale: float, size=None):
        return self._inner.normal(scale * self.factor, size)

    def laplace(self, scale: float, size=None):
        return self._inner.laplace(scale * self.factor, size)

    def gumbel(self, scale: float, size=None):
        return self._inner.gumbel(scale * self.factor, size)

    def exponential(self, scale: float, size=None):
        return self._inner.exponential(scale * self.factor, size)

    def discrete_laplace(self, scale: float, size=None):
        return self._inner.discrete_laplace(scale * self.factor, size)

    def discrete_gaussian(self, sigma: float, size=None):
        return self._inner.discrete_gaussian(sigma * self.factor, size)
