"""Empirical DP audits with power (synthzoo.testing.audit): every DP mechanism of the pipeline --
the discrete Gaussian marginal mechanism, the Gaussian mechanism on real values, the exponential
mechanism and Gumbel top-k, PrivTree, rare-category merge, partition selection, and a whole preset
end to end -- is run many times on neighbouring inputs through its real code path (real ledger,
real budget, noise from the real OS-entropy NoiseSource).  A distinguishing event's counts become
a Clopper-Pearson lower bound on epsilon (Jagielski et al. 2020; Nasr et al. 2021) that must stay
at or below the claim; the same audit on a deliberately broken variant (noise halved, or quartered
for PrivTree, whose bound has slack; noise replayed from a known seed; partition selection's
threshold without its "+1") must exceed the claim -- the proof that the audit can see anything.

Fast audits (a few seconds each, 95 % confidence) run by default; thorough ones (99 %, 10-30 times
the runs, and the ``mst`` preset end to end) are marked slow.  ``benchmarks/bench_audit.py``
prints the table.

The vectorised audits (marginal, Gaussian, rare merge, partition selection) take many independent
draws from one call: the mechanism noises every cell / value independently and the audited
decision for one cell depends on that cell's count alone, so a call with every cell at count c
gives one draw per cell of what the cell releases on D, and a call with every cell at c + 1 gives
one draw per cell of what it releases on D plus one record in that cell (see each audit's
docstring).  The replayed-seed audits use genuine neighbouring pairs.
"""

import math

import numpy as np
import pytest

from synthzoo.core.privacy.noise import NoiseSource
from synthzoo.testing.audit import (
    AuditResult,
    ScaledNoiseSource,
    audit_events,
    audit_statistic,
    clopper_pearson,
    distinguishing_seed,
    epsilon_lower_bound,
    run_pair,
)
from synthzoo.testing.mechanisms import AUDITS, NOT_DETECTABLE, REAL, SELECTION_DELTA, format_table, run_audit

FAST = [(name, v) for name, (_, sizes) in AUDITS.items() for v in sizes
        if name != "mst_e2e" and (name, v) not in NOT_DETECTABLE]
THOROUGH = [(name, v) for name, (_, sizes) in AUDITS.items() for v in sizes if (name, v) not in NOT_DETECTABLE]


def _check(row) -> None:
    """The real mechanism stays at or below its claim; a broken variant is caught above it."""
    msg = f"\n{format_table([row])}\n{row.result}"
    if row.variant == REAL:
        assert row.result.epsilon_lb <= row.claim_epsilon, "audit refutes the real mechanism's claim:" + msg
    else:
        assert row.result.epsilon_lb > row.claim_epsilon, "audit failed to catch a broken variant:" + msg
    if row.mechanism.startswith("partition selection (singletons)") and row.variant == REAL:
        # the singleton release rate must be provably at most delta_sel (CP upper bound, same confidence)
        _, upper = clopper_pearson(row.result.counts[1], row.result.runs[1], 1 - row.result.confidence)
        assert upper <= SELECTION_DELTA, f"singleton release rate not shown <= delta_sel: upper {upper:.3g}" + msg


# -- the audits -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,variant", FAST, ids=[f"{n}-{v.replace(' ', '_')}" for n, v in FAST])
def test_audit_fast(name, variant):
    _check(run_audit(name, variant, thorough=False, confidence=0.95))


@pytest.mark.slow
@pytest.mark.parametrize("name,variant", THOROUGH, ids=[f"{n}-{v.replace(' ', '_')}" for n, v in THOROUGH])
def test_audit_thorough(name, variant):
    _check(run_audit(name, variant, thorough=True, confidence=0.99))


# -- the harness itself -------------------------------------------------------------------------------
def test_clopper_pearson_matches_closed_forms():
    # k = 0: upper = 1 - alpha^(1/n); k = n: lower = alpha^(1/n)
    lo, hi = clopper_pearson(0, 100, 0.05)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.05 ** (1 / 100))
    lo, hi = clopper_pearson(100, 100, 0.05)
    assert hi == 1.0 and lo == pytest.approx(0.05 ** (1 / 100))
    lo, hi = clopper_pearson(np.array([10, 50]), 100, 0.025)
    assert np.all(lo < np.array([0.1, 0.5])) and np.all(hi > np.array([0.1, 0.5]))


def test_perfect_separation_gives_the_simultaneous_interval_bound():
    n, conf = 200, 0.95
    r = audit_events(np.ones(n, bool), np.zeros(n, bool), confidence=conf)
    a = (1 - conf) / 4  # two two-sided intervals
    assert r.epsilon_lb == pytest.approx(math.log(a ** (1 / n) / (1 - a ** (1 / n))))
    assert r.counts == (n, 0) and r.runs == (n, n)
    # with delta, the numerator loses delta
    eps, _ = epsilon_lower_bound(n, n, 0, n, delta=0.5, confidence=conf)
    assert eps == pytest.approx(math.log((a ** (1 / n) - 0.5) / (1 - a ** (1 / n))))


def test_bound_is_symmetric_in_the_event_and_its_complement():
    a = epsilon_lower_bound(300, 1000, 100, 1000)[0]
    assert a == pytest.approx(epsilon_lower_bound(700, 1000, 900, 1000)[0])  # complement
    assert a == pytest.approx(epsilon_lower_bound(100, 1000, 300, 1000)[0])  # D and D' swapped
    assert epsilon_lower_bound(500, 1000, 500, 1000)[0] == 0.0


def test_coverage_on_randomized_response():
    """The bound is valid: on randomized response with epsilon = 1 (exactly 1-DP, the event's loss is
    exactly 1) it exceeds 1 in at most 5 % of 95 %-confidence audits (Clopper-Pearson is conservative:
    in practice far fewer)."""
    rng = np.random.default_rng(0)
    p = math.e / (1 + math.e)
    over = sum(audit_events(rng.random(400) < p, rng.random(400) < 1 - p).epsilon_lb > 1.0 for _ in range(400))
    assert over <= 20


def test_threshold_chosen_on_calibration_runs_keeps_the_bound_valid():
    """Laplace mechanism with scale 1 on a shift of 1: exactly 1-DP.  Choosing the threshold on the
    same runs that give the bound would overfit; on a calibration half it stays valid."""
    rng = np.random.default_rng(1)
    over = 0
    for _ in range(200):
        r = audit_statistic(rng.laplace(0, 1, 2000), rng.laplace(1, 1, 2000), confidence=0.95)
        assert r.calibration_runs == (1000, 1000) and r.runs == (1000, 1000)
        over += r.epsilon_lb > 1.0
    assert over <= 10


def test_fixed_threshold_uses_every_run():
    rng = np.random.default_rng(2)
    r = audit_statistic(rng.normal(0, 1, 500), rng.normal(3, 1, 500), threshold=1.5, name="x")
    assert r.runs == (500, 500) and r.calibration_runs == (0, 0) and r.threshold == 1.5
    assert r.event == "x >= 1.5" and r.epsilon_lb > 2
    assert isinstance(r, AuditResult) and "epsilon >=" in str(r)


def test_run_pair_concatenates_vector_draws():
    calls = []

    def mech(x):
        calls.append(x)
        return np.full(3, x)

    a, b = run_pair(mech, 0, 1, runs=4)
    assert a.tolist() == [0] * 12 and b.tolist() == [1] * 12 and calls == [0, 1] * 4


def test_scaled_noise_source_scales_every_noise_sampler():
    src = ScaledNoiseSource(0.5)
    assert not src.replayable and isinstance(src, NoiseSource)
    assert np.std(src.normal(2.0, 200_000)) == pytest.approx(1.0, rel=0.02)
    assert np.std(src.laplace(2.0, 200_000)) == pytest.approx(math.sqrt(2), rel=0.02)
    assert np.std(src.gumbel(2.0, 200_000)) == pytest.approx(math.pi / math.sqrt(6), rel=0.02)
    assert np.std(src.discrete_gaussian(4.0, 200_000)) == pytest.approx(2.0, rel=0.02)
    # replayable when asked, and then the same stream as the real source scaled
    assert ScaledNoiseSource(0.5, noise_seed=3).replayable
    assert np.allclose(ScaledNoiseSource(0.5, 3).normal(2.0, 5), NoiseSource(3).normal(1.0, 5))


def test_distinguishing_seed_needs_outputs_that_differ():
    seed, ref = distinguishing_seed(lambda x, s: x + s, 1, 2, seeds=range(3))
    assert seed == 0 and ref == 1
    with pytest.raises(ValueError):
        distinguishing_seed(lambda x, s: s, 1, 2, seeds=range(3))  # the output ignores the input


def test_docstring_examples():
    import doctest

    from synthzoo.testing import audit, mechanisms
    for module in (audit, mechanisms):
        assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0
