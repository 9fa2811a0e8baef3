"""An empirical audit of one DP-SGD step (Poisson-sampled Gaussian on clipped gradients), run
through the real mechanism: the lower bound on epsilon it finds stays below the claim, and a broken
variant that does not clip is caught far above it.

Setup (Jagielski et al. 2020; Nasr et al. 2021): n records whose gradient is zero, and the
neighbour with one more record, a canary whose gradient is 100 times the clipping norm along the
first coordinate.  The mechanism is calibrated and charged for ONE step at epsilon 1 (the claim);
the audit then replays that step many times -- every step draws a fresh Poisson batch and fresh
noise, so they are independent releases of the one-step mechanism.  The statistic is the noisy
update's first coordinate, thresholded; the counts become one-sided Clopper-Pearson bounds."""

import math

import dp_accounting as dpa
import numpy as np
import pytest
import torch
from scipy.stats import beta

from synthzoo.core.privacy.dpsgd import DPSGD
from synthzoo.core.privacy.ledger import PrivacyLedger, epsilon_of

N_ZERO, BATCH, DELTA = 40, 4, 1e-5


def _releases(steps: int, canary: bool, clip: bool, seed: int = 0) -> np.ndarray:
    """First coordinate of ``steps`` noisy clipped gradient sums (before the public normaliser)."""
    led = PrivacyLedger(1.0, DELTA)
    sgd = DPSGD(led.stage("audit", 1.0), n_hat=N_ZERO, batch_size=BATCH, steps=1, max_grad_norm=1.0)
    sgd.steps = steps  # the audit's replays of the one charged step
    x = torch.zeros(N_ZERO + 1, 3)
    x[-1, 0] = 100.0  # the canary: its gradient (x itself, for a linear loss) has norm 100 C
    n = N_ZERO + 1 if canary else N_ZERO
    net = torch.nn.Linear(3, 1, bias=False)
    wrapped, params = sgd.wrap(net), list(net.parameters())
    if not clip:  # the broken variant: every coefficient 1 -- no clipping at all
        wrapped.get_clipping_coef = _no_clip(wrapped)
    out = []
    for idx in sgd.batches(n, np.random.default_rng(seed)):
        loss = wrapped(x[torch.as_tensor(idx, dtype=torch.long)]).squeeze(1) if len(idx) else None
        sgd.backward(wrapped, params, loss)
        out.append(float(params[0].grad[0, 0]) * BATCH)
    return np.array(out), sgd


def _no_clip(wrapped):
    real = wrapped.get_clipping_coef

    def ones():
        return torch.ones_like(real())
    return ones


def _eps_lower_bound(hits_in: int, hits_out: int, runs: int, delta: float, conf: float = 0.95) -> float:
    """Clopper-Pearson: P(S | D') >= p_lo, P(S | D) <= p_hi, each one-sided at ``conf``."""
    p_lo = beta.ppf(1 - conf, hits_in, runs - hits_in + 1) if hits_in > 0 else 0.0
    p_hi = beta.ppf(conf, hits_out + 1, runs - hits_out) if hits_out < runs else 1.0
    return math.log(max(p_lo - delta, 1e-300) / p_hi) if p_lo > delta else 0.0


def _audit(runs: int, clip: bool) -> tuple[float, float]:
    with_canary, sgd = _releases(runs, canary=True, clip=clip, seed=1)
    without, _ = _releases(runs, canary=False, clip=clip, seed=2)
    claim = epsilon_of([dpa.PoissonSampledDpEvent(sgd.q, dpa.GaussianDpEvent(sgd.sigma))], DELTA)
    # the threshold is chosen on the clipped mechanism's scale (a public choice made before the runs)
    threshold = 2.5 * sgd.sigma
    lb = _eps_lower_bound(int((with_canary > threshold).sum()), int((without > threshold).sum()), runs, DELTA)
    return lb, claim


def test_one_dpsgd_step_audit_stays_below_its_claim_and_catches_missing_clipping():
    lb, claim = _audit(2000, clip=True)
    assert lb <= claim, (lb, claim)
    broken, claim_b = _audit(2000, clip=False)
    assert broken > claim_b, (broken, claim_b)


@pytest.mark.slow
def test_one_dpsgd_step_audit_thorough():
    lb, claim = _audit(40000, clip=True)
    assert lb <= claim, (lb, claim)
    broken, _ = _audit(40000, clip=False)
    assert broken > 2 * claim
