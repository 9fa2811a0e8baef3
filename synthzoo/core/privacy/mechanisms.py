"""Calibrated mechanisms. Each one charges a :class:`Budget` *before* it draws its noise, and
draws it from that budget's ledger (``budget.noise``, OS entropy unless a test opted into a
replayable ``noise_seed``): no mechanism takes a user's generator, so no seed can decide noise.

Costs are in zCDP rho, and the events handed to the ledger are ``dp_accounting`` events:

* Discrete Gaussian mechanism on integer counts (Canonne, Kamath & Steinke, NeurIPS 2020,
  Thm. 14: an integer query of L2 sensitivity Delta plus independent discrete Gaussians of
  parameter sigma is exactly Delta^2/(2 sigma^2)-zCDP): ``ZCDpEvent(rho)``.  Every count
  (marginals, histograms, record counts) goes through it.
* Gaussian mechanism on real values (scores, embeddings): ``GaussianDpEvent(sigma / sensitivity)``,
  rho = sensitivity^2 / (2 sigma^2).
* Exponential mechanism and one-shot Gumbel top-k: epsilon-DP with bounded range, charged
  through the single conversion in :func:`zcdp_of_pure_dp` as ``ZCDpEvent(k * epsilon^2 / 8)``
  (Cesar & Rogers 2021; top-k with Gumbel noise equals k peeling exponential mechanisms,
  Durfee & Rogers 2019).
* Any other pure epsilon-DP mechanism (PrivTree): ``ZCDpEvent(epsilon^2 / 2)`` (Bun & Steinke 2016).

In a non-private run (``budget.private`` is False) every mechanism returns the exact answer and
the ledger records a ``NonPrivateDpEvent``.
"""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np

from .ledger import Budget, gaussian_sigma  # noqa: F401  (selectors read the calibration from here too)


def zcdp_of_pure_dp(epsilon: float, bounded_range: bool = False) -> float:
    """The one conversion not covered by dp-accounting: rho of an epsilon-DP mechanism.

    An epsilon-DP mechanism is (epsilon^2/2)-zCDP; one with epsilon-bounded range (the
    exponential mechanism) is (epsilon^2/8)-zCDP.
    """
    if not epsilon > 0:
        raise ValueError("epsilon must be positive")
    return epsilon ** 2 / (8.0 if bounded_range else 2.0)


def epsilon_for_rho(rho: float, bounded_range: bool = True) -> float:
    """Inverse of :func:`zcdp_of_pure_dp`."""
    return math.sqrt((8.0 if bounded_range else 2.0) * rho)


def gaussian(budget: Budget, values, l2_sensitivity: float, rho: float, mechanism: str = "gaussian",
             note: str = ""):
    """Release real ``values + N(0, sigma^2)`` with sigma calibrated to ``rho``; returns (noisy, sigma).

    For values that are not integer counts (InDif scores, L1 criteria, random-feature sums).
    The sampler is continuous because there is no integer lattice to put the values on; the
    values released this way are either used only to rank candidates (scores) or averaged into a
    model's training target, never published as they are.  Counts use :func:`discrete_gaussian`.
    """
    values = np.asarray(values, dtype=float)
    if not budget.private:
        budget.charge(mechanism, None, math.inf, note)
        return values.copy(), 0.0
    sigma = gaussian_sigma(rho, l2_sensitivity)
    budget.charge(mechanism, dpa.GaussianDpEvent(sigma / l2_sensitivity), rho, note)
    return values + budget.noise.normal(sigma, values.shape if values.ndim else None), sigma


def discrete_gaussian(budget: Budget, counts, l2_sensitivity: float, rho: float,
                      mechanism: str = "discrete_gaussian", note: str = ""):
    """Release integer ``counts`` plus discrete Gaussian noise calibrated to ``rho``; returns
    ``(noisy, sigma)`` with ``noisy`` integral (as floats) and ``sigma`` the noise parameter
    (the noise's standard deviation is at most sigma).

    Canonne, Kamath & Steinke (NeurIPS 2020): exactly ``l2_sensitivity^2 / (2 sigma^2)``-zCDP,
    charged as ``ZCDpEvent(rho)``; integer noise leaves no floating-point trace of the count.
    """
    counts = np.asarray(counts, dtype=float)
    if counts.size and not np.all(np.mod(counts, 1.0) == 0.0):
        raise ValueError(f"{mechanism}: discrete_gaussian is for integer counts")  # a caller's bug, not data
    if not budget.private:
        budget.charge(mechanism, None, math.inf, note)
        return counts.copy(), 0.0
    sigma = gaussian_sigma(rho, l2_sensitivity)
    budget.charge(mechanism, dpa.ZCDpEvent(rho), rho, note)
    noise = budget.noise.discrete_gaussian(sigma, counts.shape if counts.ndim else None)
    return counts + noise, sigma


def exponential(budget: Budget, scores, sensitivity: float, epsilon: float, mechanism: str = "exponential",
                note: str = "") -> int:
    """Exponential mechanism (McSherry & Talwar 2007): P(i) ~ exp(epsilon * score_i / (2 * sensitivity))."""
    return int(gumbel_top_k(budget, scores, 1, sensitivity, epsilon, mechanism, note)[0])


def gumbel_top_k(budget: Budget, scores, k: int, sensitivity: float, epsilon: float,
                 mechanism: str = "gumbel_top_k", note: str = "") -> np.ndarray:
    """One-shot top-k with Gumbel noise of scale 2*sensitivity/epsilon (Durfee & Rogers 2019).

    Equivalent to k rounds of the exponential mechanism, each epsilon-DP, without replacement;
    charged k * epsilon^2 / 8 rho.  Returns the k chosen indices, best first.  The Gumbel noise
    is continuous: only the indices leave the mechanism, never the noisy scores.
    """
    scores = np.asarray(scores, dtype=float)
    k = int(k)
    if not 1 <= k <= scores.size:
        raise ValueError(f"k={k} must lie in [1, {scores.size}]")
    if not budget.private:
        budget.charge(mechanism, None, math.inf, note)
        noisy = scores
    else:
        rho = k * zcdp_of_pure_dp(epsilon, bounded_range=True)
        budget.charge(mechanism, dpa.ZCDpEvent(rho), rho, note)
        noisy = scores + budget.noise.gumbel(2.0 * sensitivity / epsilon, scores.shape)
    return np.argsort(-noisy, kind="stable")[:k]


def charge_pure_dp(budget: Budget, epsilon: float, mechanism: str, note: str = "") -> None:
    """Charge an epsilon-DP mechanism that draws its noise from ``budget.noise`` itself (PrivTree)."""
    if not budget.private:
        budget.charge(mechanism, None, math.inf, note)
        return
    rho = zcdp_of_pure_dp(epsilon)
    budget.charge(mechanism, dpa.ZCDpEvent(rho), rho, note)


def noisy_count(budget: Budget, n: int, rho: float, note: str = "record count", with_sigma: bool = False):
    """A record count by the discrete Gaussian mechanism (sensitivity 1), clipped at 0; with
    ``with_sigma`` the pair ``(count, sigma)``, the noise's standard deviation for what reads the count."""
    noisy, sigma = discrete_gaussian(budget, float(n), 1.0, rho, mechanism="discrete_gaussian", note=note)
    return (max(0.0, float(noisy)), float(sigma)) if with_sigma else max(0.0, float(noisy))


def measure_marginal(data, clique, budget: Budget, rho: float):
    """The discrete Gaussian mechanism on one marginal of ``data`` (an EncodedData; L2 sensitivity 1)."""
    from ..domain import Measurement

    clique = tuple(clique)
    noisy, sigma = discrete_gaussian(budget, data.project(clique), 1.0, rho, note=f"marginal {'x'.join(clique)}")
    return Measurement(clique, noisy, float(sigma))
