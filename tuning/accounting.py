"""Privacy cost of DP hyperparameter tuning by random stopping.

Papernot & Steinke, "Hyperparameter Tuning with Renyi Differential Privacy" (ICLR 2022):
run a DP mechanism a *random* number K of times (K drawn independently of the data from a
truncated negative binomial or Poisson law with mean ``mean``) and release only the best run.
If one run is rho-zCDP (RDP epsilon(lambda) = rho * lambda), the whole selection is RDP with the
bound of their Theorem 2 (negative binomial, shape eta) or Theorem 6 (Poisson), which
``dp_accounting``'s ``RepeatAndSelectDpEvent`` implements.  This module finds the per-trial
rho for which the *total* (epsilon, delta) meets the user's request, by bisection through that
accountant.

K is never drawn as a number.  Before each run the tuner flips a secret coin that stops with the
law's hazard ``P(K = k) / P(K >= k)``, ``k`` the runs started so far (:func:`stop_hazard`):
geometric (K >= 1): no coin before the first run, then ``1 / mean`` before every further one
(memoryless); Poisson: ``exp(-mean)`` before the first run (K = 0 is possible), then the Poisson
hazard.  The product of the coins' continue-probabilities is exactly the law of K, so the
stopping time has the law the theorem needs, while nothing stores K: a study holds only a
"stopped" flag, set by the coin that says stop.  The coins come from a
:class:`~synthzoo.core.privacy.noise.NoiseSource` (OS entropy).
"""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
from scipy import stats

from synthzoo.core.errors import ConfigError
from synthzoo.core.privacy.ledger import epsilon_of
from synthzoo.core.privacy.noise import NoiseSource

SHAPES = {"geometric": 1.0, "poisson": math.inf}


def stopping_event(rho_trial: float, mean: float, shape: float):
    """The DP event of releasing the best of K ~ law(mean, shape) runs of a rho_trial-zCDP mechanism."""
    return dpa.dp_event.RepeatAndSelectDpEvent(dpa.ZCDpEvent(rho_trial), float(mean), float(shape))


def tuning_epsilon(rho_trial: float, mean: float, shape: float, delta: float, prior: tuple = (),
                   prior_delta: float = 0.0) -> float:
    """Total epsilon at ``delta`` of random-stopping tuning with per-trial cost ``rho_trial``, composed
    with the ``prior`` events released once before it on the same rows (a schema :func:`synthzoo.dp_schema`
    measured, which every run then reads as public) and their additive ``prior_delta``."""
    return epsilon_of([*prior, stopping_event(rho_trial, mean, shape)], delta - prior_delta)


def per_trial_rho(epsilon: float, delta: float, mean: float, shape: float = 1.0, prior: tuple = (),
                  prior_delta: float = 0.0) -> float:
    """Largest per-trial zCDP rho whose random-stopping total, composed with the ``prior`` events (see
    :func:`tuning_epsilon`), stays within (epsilon, delta)."""
    if not (mean >= 1):
        raise ConfigError(f"n_trials (the mean number of runs) must be >= 1 for accounted tuning, got {mean}")
    if prior and epsilon_of(list(prior), delta - prior_delta) >= epsilon:
        raise ConfigError(f"epsilon={epsilon:g}: the schema's own measurement already costs "
                          f"{epsilon_of(list(prior), delta - prior_delta):.4g} of it, nothing is left for tuning")
    lo, hi = 0.0, 1.0
    while tuning_epsilon(hi, mean, shape, delta, prior, prior_delta) <= epsilon:
        hi *= 2
        if hi > 1e6:
            break
    for _ in range(60):
        mid = (lo + hi) / 2
        if tuning_epsilon(mid, mean, shape, delta, prior, prior_delta) <= epsilon:
            lo = mid
        else:
            hi = mid
    if lo <= 0:
        raise ConfigError(f"epsilon={epsilon:g} is too small for random-stopping tuning with {mean:g} trials "
                          "on average: the selection overhead alone exceeds it; use fewer trials or 'public' mode")
    return lo


def stop_hazard(started: int, mean: float, shape: float) -> float:
    """Probability that the coin flipped after ``started`` runs stops the study:
    ``P(K = started) / P(K >= started)`` for K geometric (shape 1, K >= 1) or Poisson (shape inf)."""
    started = int(started)
    if started < 0:
        raise ValueError(f"started must be >= 0, got {started}")
    if shape == 1.0:
        return 0.0 if started == 0 else 1.0 / float(mean)
    if math.isinf(shape):
        if started == 0:
            return math.exp(-float(mean))
        # log P(K = k) - log P(K >= k), stable far in the tail
        return float(min(1.0, math.exp(stats.poisson.logpmf(started, mean) - stats.poisson.logsf(started - 1, mean))))
    raise ConfigError(f"stopping shape must be 1 (geometric) or inf (Poisson), got {shape}")


def stop_coin(noise: NoiseSource, started: int, mean: float, shape: float) -> bool:
    """One secret stopping coin (True: stop before run number ``started + 1``)."""
    h = stop_hazard(started, mean, shape)
    return bool(h > 0 and noise.uniform() < h)


def derived_seed(noise_seed: int, *labels: int) -> int:
    """A test-only replayable seed for one use (``labels``) of the tuner's ``noise_seed``."""
    state = np.random.SeedSequence([int(noise_seed), *map(int, labels)]).generate_state(2, np.uint64)
    return int(state[0]) << 64 | int(state[1])


COINS, TUNER, TRIAL = 1, 2, 3  # labels of derived_seed's uses


def coin_source(noise_seed: int | None = None) -> NoiseSource:
    """The stopping coins' source: OS entropy, or (test only) replayable from ``noise_seed``."""
    return NoiseSource() if noise_seed is None else NoiseSource(derived_seed(noise_seed, COINS))
