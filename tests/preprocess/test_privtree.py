"""PrivTree binning (Zhang, Xiao & Xie, SIGMOD 2016): one pure-DP charge per column, Laplace noise
of the scale the charge implies, dense regions split and empty ones left coarse."""

import math

import numpy as np
import pandas as pd
import pytest

from helpers import numeric_frame, preprocess_budget
from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.core.schema import Column, numeric_values
from synthzoo.preprocess import PrivTree
from synthzoo.core.privacy.privtree import biased_noisy_counts, privtree_edges, privtree_params


# -- privtree ---------------------------------------------------------------------------------
def test_privtree_charges_one_pure_dp_event_per_column_within_the_stage():
    df, cols = numeric_frame()
    budget = preprocess_budget(1.0)
    pt = PrivTree(theta_share=0)
    pt.fit(df, cols, budget, np.random.default_rng(0))
    ch = budget.ledger.charges
    assert [c.note for c in ch] == ["age", "income", "when"]
    assert all(c.mechanism == "privtree" and c.module == "preprocess" for c in ch)
    assert sum(c.rho for c in ch) <= budget.rho * (1 + 1e-9)
    assert all(c.rho == pytest.approx(budget.rho / 3) for c in ch)
    assert pt.epsilon_ == pytest.approx(math.sqrt(2 * budget.rho / 3))  # rho-zCDP of an eps-DP mechanism
    assert [c.event.rho for c in ch] == pytest.approx([budget.rho / 3] * 3)


def test_privtree_same_seed_same_edges():
    df, cols = numeric_frame()
    # the noise replays only through the test-only noise_seed; the user's generator does not decide it
    a = PrivTree().fit(df, cols, preprocess_budget(1.0, noise_seed=5), np.random.default_rng(0))
    b = PrivTree().fit(df, cols, preprocess_budget(1.0, noise_seed=5), np.random.default_rng(1))
    c = PrivTree().fit(df, cols, preprocess_budget(1.0, noise_seed=6), np.random.default_rng(0))
    d = PrivTree().fit(df, cols, preprocess_budget(1.0), np.random.default_rng(0))
    e = PrivTree().fit(df, cols, preprocess_budget(1.0), np.random.default_rng(0))
    assert all(np.array_equal(a[k].edges, b[k].edges) for k in a)
    assert any(not np.array_equal(a[k].edges, c[k].edges) for k in a)
    assert any(not np.array_equal(d[k].edges, e[k].edges) for k in d)  # OS entropy: fresh every fit


def test_privtree_constants_follow_the_paper():
    lam, delta = privtree_params(0.5, beta=2)
    assert lam == pytest.approx(3 / 0.5) and delta == pytest.approx(lam * math.log(2))
    lam4, _ = privtree_params(1.0, beta=4)
    assert lam4 == pytest.approx(7 / 3)


def test_biased_noisy_count_has_laplace_scale_lambda_and_the_depth_bias():
    rng = PrivacyLedger(1.0).noise
    lam, delta = privtree_params(0.2)
    m = 200_000
    big = biased_noisy_counts(np.full(m, 1000.0), 3, lam, delta, 0.0, rng)
    assert np.mean(big) == pytest.approx(1000 - 3 * delta, abs=0.05 * lam)  # c - depth * delta
    assert np.mean(np.abs(big - (1000 - 3 * delta))) == pytest.approx(lam, rel=0.02)  # E|Lap(l)| = l
    small = biased_noisy_counts(np.zeros(m), 3, lam, delta, 0.0, rng)
    assert np.median(small) == pytest.approx(-delta, abs=0.05 * lam)  # floored at theta - delta


def test_privtree_split_rate_matches_the_charged_epsilon():
    """Root of each column holds n records; it splits with P = P(n + Lap(lambda) > theta).

    With theta = n + lambda ln 2 that is 1/4 when lambda is the one the charged rho implies;
    noise twice too large gives 0.35, twice too small 0.06.
    """
    k, n = 400, 40
    cols = [Column(f"c{i}", "numerical", lower=0, upper=1) for i in range(k)]
    df = pd.DataFrame({c.name: np.full(n, 0.3) for c in cols})
    budget = preprocess_budget(1.0, noise_seed=0)  # replayed (same scale as the secret source): no flakes
    eps = math.sqrt(2 * budget.rho / k)  # eps of each column's rho share
    lam = 3.0 / eps
    pt = PrivTree(theta_share=0, theta=n + lam * math.log(2), max_depth=1)
    pt.fit(df, cols, budget, np.random.default_rng(3))
    assert [c.rho for c in budget.ledger.charges] == pytest.approx([budget.rho / k] * k)
    rate = np.mean([pt.n_bins_[c.name] == 2 for c in cols])
    assert abs(rate - 0.25) < 0.065


def test_privtree_finds_dense_regions_and_leaves_empty_ones_coarse():
    rng = np.random.default_rng(0)
    v = np.concatenate([rng.uniform(0, 1, 20000), [np.nan] * 50])
    noise = PrivacyLedger(1.0).noise
    trees = [privtree_edges(v, 0.0, 1024.0, False, 2.0, noise, max_depth=14) for _ in range(400)]
    for edges in trees:
        assert edges[0] == 0 and edges[-1] == 1024 and np.all(np.diff(edges) > 0)
        assert np.sum(edges < 1) >= 8  # the dense unit interval (depth 10) is cut into many bins
    # The empty rest stays coarse.  An empty node splits with probability 1/(2 beta) = 1/4 at any depth, so
    # one tree's empty leaves are a matter of chance (its last bin [512, 1024] is cut below 64 by four
    # splits in a row, 1 tree in 256): the law is checked over 400 trees.  Each of the 10 empty siblings on
    # the path to [0, 1) ends as (1 - 1/4) / (1 - 2/4) = 1.5 leaves on average (14.96 in all under the
    # depth cap; sd 3.9 a tree, 0.19 for the mean of 400: the bounds are 10 sd away; a split probability
    # of 1/3 would give 20); the last bin stays whole unless the first of those splits happens (0.75 of
    # the trees, sd 0.022: 0.6 is 6.9 sd below).
    empty = np.array([np.sum(edges[:-1] >= 1) for edges in trees])
    assert 13 < empty.mean() < 17, empty.mean()
    assert np.mean([np.diff(edges)[-1] == 512 for edges in trees]) > 0.6
    # max_depth caps the number of bins
    assert len(privtree_edges(v, 0.0, 1024.0, False, None, None, max_depth=3)) - 1 <= 8


def test_privtree_does_not_split_below_one_integer():
    col = Column("k", "numerical", lower=0, upper=9, integer=True)
    df = pd.DataFrame({"k": np.repeat(np.arange(10), 1000)})
    enc = PrivTree(theta_share=0, max_depth=20).fit(df, [col], preprocess_budget(None), np.random.default_rng(0))["k"]
    assert np.array_equal(enc.edges, np.arange(11))  # non-private: one bin per integer, no empty bins


def test_privtree_non_private_run_splits_on_exact_counts():
    df, cols = numeric_frame(missing=0.1)
    budget = preprocess_budget(None)
    pt = PrivTree(theta_share=0, max_depth=8)
    encs = pt.fit(df, cols, budget, np.random.default_rng(0))
    assert pt.epsilon_ is None and budget.private is False
    assert len(budget.ledger.charges) == 3 and all(math.isinf(c.rho) for c in budget.ledger.charges)
    ages = df["age"].dropna().to_numpy()
    assert encs["age"].n_bins == len(np.unique(ages))  # every occupied integer isolated
    # every bin of a non-private tree over a continuous column is occupied or a sibling of one
    assert encs["income"].n_bins <= 2 ** 8


def test_privtree_on_adult_round_trips(adult):
    df, schema = adult
    df = schema.validate(df)
    cols = [c for c in schema.columns if c.is_numeric]
    budget = PrivacyLedger(1.0, 1e-5).stage("privtree", 0.1)
    pt = PrivTree(theta_share=0)
    encs = pt.fit(df, cols, budget, np.random.default_rng(0))
    assert len(budget.ledger.charges) == len(cols)
    assert 20 <= pt.n_bins_["fnlwgt"] <= 300 and 20 <= pt.n_bins_["age"] <= 74
    for c in cols:
        codes = encs[c.name].transform(df[c.name])
        back = encs[c.name].inverse(codes, np.random.default_rng(0))
        assert np.array_equal(encs[c.name].transform(pd.Series(back)), codes)
        assert numeric_values(pd.Series(back), c).min() >= c.lower


def test_privtree_theta_share_charges_a_row_count_and_coarsens_bins():
    df, cols = numeric_frame()
    # Replayed noise (test-only opt-in): at a 5% share one draw in ~40 grows the coarse tree past the
    # fine one, so the share is 20% (no reversal in 40 draws) and the draws are fixed.
    budget = preprocess_budget(1.0, noise_seed=1)
    fine = PrivTree(theta_share=0).fit(df, cols, preprocess_budget(1.0, noise_seed=2), np.random.default_rng(0))
    pt = PrivTree(theta_share=0.2)
    coarse = pt.fit(df, cols, budget, np.random.default_rng(0))
    ch = budget.ledger.charges
    assert ch[0].note == "row count" and ch[0].mechanism == "discrete_gaussian"
    assert [c.note for c in ch[1:]] == [c.name for c in cols]
    assert budget.spent <= budget.rho * (1 + 1e-9)
    assert pt.theta_ > 0
    assert sum(e.n_bins for e in coarse.values()) <= sum(e.n_bins for e in fine.values())


def test_integer_counts_from_a_histogram_give_the_sorted_counts_tree():
    """An integer column with at least as many values as integers is counted from one cumulative
    histogram instead of a sort: the same tree, privately (the same replayed noise) and not."""
    from synthzoo.core.privacy import privtree as pt
    from synthzoo.core.privacy.noise import NoiseSource

    rng = np.random.default_rng(2)
    v = np.concatenate([rng.integers(0, 40, 3000), np.full(500, 7)]).astype(float)
    for eps in (None, 1.0):
        got = pt.privtree_edges(v, 0.0, 41.0, True, eps, NoiseSource(noise_seed=3), theta=20.0)
        old = pt._TABLE_CELLS
        try:
            pt._TABLE_CELLS = 0  # forces the sorted path
            want = pt.privtree_edges(v, 0.0, 41.0, True, eps, NoiseSource(noise_seed=3), theta=20.0)
        finally:
            pt._TABLE_CELLS = old
        np.testing.assert_array_equal(got, want)
        assert got.size > 3
