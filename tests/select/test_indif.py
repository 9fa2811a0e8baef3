"""PrivSyn's InDif selection and measurement (Zhang et al., USENIX Security 2021): noise scale,
budget split, the greedy choice, triangle combination."""

import math

import numpy as np
import pytest

from helpers import correlated_table
from synthzoo.core.domain import Domain, EncodedData
from synthzoo.core.errors import ConfigError
from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.select import InDif
from synthzoo.select.indif import greedy_select, indif_scores


def wide_table(d=30, n=1500, seed=1):
    rng = np.random.default_rng(seed)
    shape = rng.integers(2, 6, d)
    codes = np.stack([rng.integers(0, k, n) for k in shape], axis=1)
    return EncodedData(codes, Domain([f"x{i}" for i in range(d)], shape))


# ---------------------------------------------------------------------------- InDif
def test_indif_noise_scale_matches_privsyn():
    """Per-score noise must be 4 sqrt(m / (2 rho_sel)) on counts: the vector of m scores has L2 sensitivity
    4 sqrt(m). A variance-for-std or normalised-score slip changes the scale by orders of magnitude."""
    data = wide_table()
    _, exact = indif_scores(data)
    m = exact.size
    devs, sigmas = [], []
    for seed in range(16):
        stage = PrivacyLedger(1.0, 1e-5).stage("select", 0.9)
        sel = InDif(select_share=0.1, max_pairs=3)
        sel.run(data, stage, np.random.default_rng(seed))
        rho_sel = 0.1 * stage.rho
        expected = 4.0 * math.sqrt(m / (2.0 * rho_sel))
        assert sel.sigma_select_ == pytest.approx(expected, rel=1e-9)
        devs.append(sel.scores_noisy_ - exact)
        sigmas.append(expected)
    # 16 * 435 = 6960 draws of the secret noise: the std estimate's s.e. is 0.85 %, so 5 % is 5.9 s.e. and the
    # mean's bound 6 s.e. (at 4 s.e. and 3480 draws a correct sampler failed about 1 run in 10,000)
    devs = np.concatenate(devs)
    assert abs(devs.mean()) < 6 * sigmas[0] / math.sqrt(devs.size)
    assert np.std(devs) == pytest.approx(sigmas[0], rel=0.05)


def test_indif_scores_are_counts():
    data = correlated_table()
    pairs, scores = indif_scores(data)
    assert len(pairs) == 10
    by = dict(zip(pairs, scores))
    joint = data.project(("a", "b"))
    expected = np.abs(joint - np.outer(joint.sum(1), joint.sum(0)) / data.n).sum()
    assert by[("a", "b")] == pytest.approx(expected)
    # independent pair scores far below a dependent one
    assert by[("a", "d")] < 0.2 * by[("a", "b")]


def test_measurement_noise_and_budget_split():
    data = correlated_table(n=4000)
    ledger = PrivacyLedger(1.0, 1e-5)
    stage = ledger.stage("select", 0.9)
    devs = []
    meas = None
    for seed in range(24):  # 24 fits: about 4,400 standardised draws, so 0.08 below is 7 standard errors
        ledger = PrivacyLedger(1.0, 1e-5)
        stage = ledger.stage("select", 0.9)
        sel = InDif(select_share=0.1)
        meas = sel.run(data, stage, np.random.default_rng(seed))
        rho_meas = 0.9 * stage.rho
        cells = np.array([data.domain.size(m.clique) for m in meas], dtype=float)
        rhos = rho_meas * cells ** (2 / 3) / np.sum(cells ** (2 / 3))
        for m, rho in zip(meas, rhos):
            assert m.sigma == pytest.approx(1.0 / math.sqrt(2 * rho), rel=1e-6)
            devs.append(((m.noisy - data.project(m.clique)) / m.sigma).ravel())
        # every attribute's one-way marginal is measured
        assert {m.clique for m in meas if len(m.clique) == 1} == {(a,) for a in data.domain.attrs}
        # the whole stage is spent, never more
        assert stage.spent <= stage.rho * (1 + 1e-9)
        assert stage.spent == pytest.approx(stage.rho, rel=1e-6)
        assert ledger.rho_spent <= stage.rho * (1 + 1e-9)
        assert ledger.spent().epsilon <= 1.0 * (1 + 1e-9)
    z = np.concatenate(devs)
    assert z.size > 4000
    assert np.std(z) == pytest.approx(1.0, rel=0.08)


def test_indif_selects_dependent_pairs_first_and_is_reproducible():
    data = correlated_table(n=5000)
    runs = []
    for _ in range(2):
        stage = PrivacyLedger(2.0, 1e-5, noise_seed=7).stage("select", 1.0)
        sel = InDif()
        meas = sel.run(data, stage, np.random.default_rng(7))
        runs.append((sel.selected_, [m.noisy for m in meas]))
    assert runs[0][0] == runs[1][0]
    assert all(np.array_equal(x, y) for x, y in zip(runs[0][1], runs[1][1]))
    chosen = {frozenset(p) for p in runs[0][0]}
    # the strongly dependent pairs always; whether the weak ones (InDif 135-213, noise sd 86) make it
    # depends on the draw (over 30 fresh-noise runs: 'ad' in about half)
    assert {frozenset(p) for p in ("ab", "ae", "bc", "ac")} <= chosen


def test_indif_non_private_is_exact():
    data = correlated_table()
    stage = PrivacyLedger(None).stage("select", 0.9)
    sel = InDif()
    meas = sel.run(data, stage, np.random.default_rng(0))
    _, exact = indif_scores(data)
    assert sel.sigma_select_ == 0.0 and np.array_equal(sel.scores_noisy_, exact)
    assert len(sel.selected_) == int(np.sum(exact > 0))  # every pair with a positive gain
    for m in meas:
        assert m.sigma == 0.0
        assert np.array_equal(m.noisy, data.project(m.clique))


def test_greedy_select_trades_noise_against_dependency():
    scores = np.array([1000.0, 500.0, 1.0, 0.5])
    cells = np.full(4, 100.0)
    base = np.full(3, 10.0)
    assert greedy_select(scores, cells, base, math.inf) == [0, 1, 2, 3]
    picked = greedy_select(scores, cells, base, rho=0.05)
    assert picked[:1] == [0] and 3 not in picked
    assert greedy_select(scores, cells, base, rho=1e-9) == []


def test_indif_combine_triangles():
    data = correlated_table(n=5000)
    stage = PrivacyLedger(None).stage("select", 1.0)
    sel = InDif(combine=True)
    meas = sel.run(data, stage, np.random.default_rng(0))
    assert any(len(m.clique) == 3 for m in meas)
    assert all(data.domain.size(m.clique) <= 5000 for m in meas)


def test_indif_bad_params():
    data = correlated_table()
    stage = PrivacyLedger(1.0).stage("select", 0.9)
    with pytest.raises(ConfigError, match="select_share"):
        InDif(select_share=1.5).run(data, stage, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="max_pairs"):
        InDif(max_pairs=-1).run(data, stage, np.random.default_rng(0))
