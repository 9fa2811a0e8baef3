"""Preprocessors: encode/decode round trips, ledger charges, reproducibility, and noise that
matches the charged budget (statistical checks that a mis-scaled mechanism would fail)."""

import math
import time

import numpy as np
import pandas as pd
import pytest

from synthzoo.core.base import create
from synthzoo.core.encoding import BinEncoder, CategoricalEncoder
from synthzoo.core.errors import BudgetExceededError, ConfigError, SchemaError
from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.core.schema import Column, numeric_values
from synthzoo.preprocess import PrivTree, RareMerge, Uniform
from synthzoo.preprocess.privtree import biased_noisy_counts, privtree_edges, privtree_params
from synthzoo.preprocess.rare_merge import rare_groups


def stage(epsilon=1.0, share=0.1, noise_seed=None):
    """The preprocessing Budget the brief prescribes (a non-private one for epsilon=None)."""
    return PrivacyLedger(epsilon, 1e-5, noise_seed=noise_seed).stage("preprocess", share)


def numeric_frame(n=3000, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, n).astype(float)
    income = np.concatenate([rng.exponential(2e4, n - n // 10), rng.uniform(0, 1e6, n // 10)])
    income = np.clip(income, 0, 1e6)
    dates = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.uniform(0, 700, n), unit="D")
    df = pd.DataFrame({"age": age, "income": income, "when": pd.Series(dates)})
    if missing:
        na = rng.random(n) < missing
        df.loc[na, "age"] = np.nan
        df.loc[rng.random(n) < missing, "when"] = pd.NaT
    cols = [Column("age", "numerical", lower=17, upper=90, integer=True, missing=missing > 0),
            Column("income", "numerical", lower=0, upper=1e6),
            Column("when", "datetime", lower="2020-01-01", upper="2021-12-31", missing=missing > 0)]
    return df, cols


def categorical_frame(n=5000, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    cats = ["A", "B", "C", "r1", "r2", "r3"]
    p = np.array([0.5, 0.3, 0.2 - 3e-4, 1e-4, 1e-4, 1e-4])
    s = pd.Series(rng.choice(cats, n, p=p / p.sum()), dtype=object)
    s.iloc[:3] = ["r1", "r2", "r3"]  # each rare category occurs at least once
    if missing:
        s[rng.random(n) < missing] = np.nan
    return pd.DataFrame({"x": s}), [Column("x", "categorical", categories=cats, missing=missing > 0)]


# -- registry and parameters ------------------------------------------------------------------
def test_registered_and_sklearn_style_params():
    for name, cls in [("uniform", Uniform), ("privtree", PrivTree), ("rare_merge", RareMerge)]:
        m = create("preprocess", name)
        assert isinstance(m, cls) and m.name == name
        assert m.get_params() == cls().get_params()
    assert PrivTree(theta=1.5, max_depth=7).get_params() == {"theta": 1.5, "max_depth": 7, "beta": 2,
                                                             "theta_share": 0.02, "count_share": 0.05}
    assert not Uniform.get_tags()["spends_budget"] and PrivTree.get_tags()["spends_budget"]
    assert RareMerge.get_tags()["spends_budget"]
    assert RareMerge.get_tags()["kinds"] == ("categorical",)
    assert set(PrivTree.get_tags()["kinds"]) == {"numerical", "datetime"}


@pytest.mark.parametrize("cls, kwargs, param", [
    (Uniform, {"bins": 0}, "bins"), (Uniform, {"bins": 2.5}, "bins"), (PrivTree, {"max_depth": -1}, "max_depth"),
    (PrivTree, {"beta": 1}, "beta"), (PrivTree, {"theta": float("nan")}, "theta"),
    (PrivTree, {"theta_share": 1.5}, "theta_share"), (RareMerge, {"theta": 1.5}, "theta"),
    (RareMerge, {"min_categories": 0}, "min_categories")])
def test_bad_parameters_fail_at_construction_naming_the_parameter(cls, kwargs, param):
    with pytest.raises(ConfigError, match=param):
        cls(**kwargs)


def test_wrong_kind_or_absent_column_is_refused():
    df, cols = numeric_frame()
    cdf, ccols = categorical_frame()
    with pytest.raises(ConfigError, match="'x'"):
        PrivTree().fit(cdf, ccols, stage(), np.random.default_rng(0))
    with pytest.raises(ConfigError, match="'age'"):
        RareMerge().fit(df, cols[:1], stage(), np.random.default_rng(0))
    with pytest.raises(SchemaError, match="'age'"):
        Uniform().fit(df.drop(columns="age"), cols, stage(None), np.random.default_rng(0))


def test_an_empty_private_budget_is_refused_with_a_clear_error():
    df, cols = numeric_frame()
    cdf, ccols = categorical_frame()
    with pytest.raises(BudgetExceededError, match="privtree"):
        PrivTree().fit(df, cols, stage(1.0, share=0.0), np.random.default_rng(0))
    with pytest.raises(BudgetExceededError, match="rare_merge"):
        RareMerge().fit(cdf, ccols, stage(1.0, share=0.0), np.random.default_rng(0))


# -- uniform ----------------------------------------------------------------------------------
def test_uniform_bins_are_equal_width_on_public_bounds_and_spend_nothing():
    df, cols = numeric_frame()
    budget = stage(None)
    enc = Uniform(bins=10).fit(df, cols, budget, np.random.default_rng(0))
    assert np.allclose(enc["income"].edges, np.linspace(0, 1e6, 11))
    assert enc["when"].n_bins == 10
    # integers 17..90 (74 of them) in 10 bins of 7 or 8 integers
    widths = np.diff(enc["age"].edges)
    assert enc["age"].edges[0] == 17 and enc["age"].edges[-1] == 91 and set(widths) <= {7.0, 8.0}
    assert budget.ledger.charges == []
    small = Column("k", "numerical", lower=0, upper=4, integer=True)
    e = Uniform(bins=20).fit(pd.DataFrame({"k": [0, 4]}), [small], budget, np.random.default_rng(0))["k"]
    assert e.n_bins == 5  # one bin per admissible integer, no empty bins


# -- round trips (all binning modules) --------------------------------------------------------
@pytest.mark.parametrize("module, epsilon", [(Uniform(), None), (PrivTree(), 1.0), (PrivTree(), None)])
def test_decoded_values_lie_in_their_bin_and_integers_stay_integers(module, epsilon):
    df, cols = numeric_frame()
    rng = np.random.default_rng(1)
    encs = module.fit(df, cols, stage(epsilon), rng)
    for col in cols:
        enc = encs[col.name]
        assert isinstance(enc, BinEncoder)
        e = enc.edges
        assert np.all(np.diff(e) > 0) and e[0] == col.lower
        codes = enc.transform(df[col.name])
        assert codes.min() >= 0 and codes.max() < enc.n_bins
        back = enc.inverse(codes, rng)
        again = enc.transform(pd.Series(back) if col.kind == "numerical"
                              else pd.Series(pd.to_datetime(back, unit="s")))
        assert np.array_equal(again, codes)  # a value decoded from a bin lies inside that bin
        assert np.all((back >= col.lower) & (back <= col.upper))
        if col.integer:
            assert np.all(e[:-1] == np.round(e[:-1]))
            assert np.all(back == np.round(back))


@pytest.mark.parametrize("module", [Uniform(), PrivTree()])
def test_missing_numeric_values_get_their_own_code_and_round_trip(module):
    df, cols = numeric_frame(n=4000, missing=0.2)
    rng = np.random.default_rng(2)
    encs = module.fit(df, cols, stage(1.0), rng)
    for name in ("age", "when"):
        enc = encs[name]
        codes = enc.transform(df[name])
        na = df[name].isna().to_numpy()
        assert np.all(codes[na] == enc.missing_code) and np.all(codes[~na] < enc.n_bins)
        back = enc.inverse(codes, rng)
        assert np.array_equal(np.isnan(back), na)  # missing comes back exactly where (and as often as) coded
        assert 0.17 < na.mean() < 0.23


# -- privtree ---------------------------------------------------------------------------------
def test_privtree_charges_one_pure_dp_event_per_column_within_the_stage():
    df, cols = numeric_frame()
    budget = stage(1.0)
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
    a = PrivTree().fit(df, cols, stage(1.0, noise_seed=5), np.random.default_rng(0))
    b = PrivTree().fit(df, cols, stage(1.0, noise_seed=5), np.random.default_rng(1))
    c = PrivTree().fit(df, cols, stage(1.0, noise_seed=6), np.random.default_rng(0))
    d = PrivTree().fit(df, cols, stage(1.0), np.random.default_rng(0))
    e = PrivTree().fit(df, cols, stage(1.0), np.random.default_rng(0))
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
    budget = stage(1.0)
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
    edges = privtree_edges(v, 0.0, 1024.0, False, 2.0, PrivacyLedger(1.0).noise, max_depth=14)
    assert edges[0] == 0 and edges[-1] == 1024 and np.all(np.diff(edges) > 0)
    assert np.sum(edges < 1) >= 8  # the dense unit interval (depth 10) is cut into many bins
    # the empty rest stays coarse: an empty node splits with probability 1/(2 beta) = 1/4, so each of
    # the 10 empty siblings on the path to [0, 1) ends as 2 leaves on average
    assert np.sum(edges[:-1] >= 1) <= 40
    assert np.diff(edges)[-1] >= 64
    # max_depth caps the number of bins
    assert len(privtree_edges(v, 0.0, 1024.0, False, None, None, max_depth=3)) - 1 <= 8


def test_privtree_does_not_split_below_one_integer():
    col = Column("k", "numerical", lower=0, upper=9, integer=True)
    df = pd.DataFrame({"k": np.repeat(np.arange(10), 1000)})
    enc = PrivTree(theta_share=0, max_depth=20).fit(df, [col], stage(None), np.random.default_rng(0))["k"]
    assert np.array_equal(enc.edges, np.arange(11))  # non-private: one bin per integer, no empty bins


def test_privtree_non_private_run_splits_on_exact_counts():
    df, cols = numeric_frame(missing=0.1)
    budget = stage(None)
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


# -- rare_merge -------------------------------------------------------------------------------
def test_rare_groups_rule():
    noisy = np.array([500.0, 300.0, 2.0, -1.0, 50.0])
    # n_hat = 851; theta * n_hat = 8.5 > 3 sigma = 3 -> indices 2, 3 rare
    assert rare_groups(noisy, noisy.sum(), 1.0, 0.01) == [[0], [1], [4], [2, 3]]
    # 3 sigma = 60 dominates -> index 4 rare as well
    assert rare_groups(noisy, noisy.sum(), 20.0, 0.01) == [[0], [1], [2, 3, 4]]
    # a single rare category is left alone
    assert rare_groups(np.array([500.0, 300.0, 2.0]), 802.0, 1.0, 0.01) == [[0], [1], [2]]


@pytest.mark.parametrize("epsilon", [1.0, None])
def test_rare_merge_merged_code_decodes_to_a_member(epsilon):
    df, cols = categorical_frame()
    rng = np.random.default_rng(0)
    rm = RareMerge(theta=0.01)
    enc = rm.fit(df, cols, stage(epsilon, share=0.5), rng)["x"]
    assert isinstance(enc, CategoricalEncoder)
    assert sorted(rm.merged_["x"]) == ["r1", "r2", "r3"]
    assert enc.size == 4  # A, B, C, merged group
    codes = enc.transform(df["x"])
    merged_code = enc.transform(pd.Series(["r1"]))[0]
    assert set(enc.transform(pd.Series(["r2", "r3"]))) == {merged_code}
    back = enc.inverse(np.full(3000, merged_code), rng)
    assert set(back) == {"r1", "r2", "r3"}  # uniform over the members
    frequent = codes != merged_code
    assert np.array_equal(enc.inverse(codes, rng)[frequent], df["x"].to_numpy()[frequent])


def test_rare_merge_single_rare_category_is_not_merged():
    df, _ = categorical_frame()
    df = df[df["x"].isin(["A", "B", "C", "r1"])]
    cols = [Column("x", "categorical", categories=["A", "B", "C", "r1"])]
    rm = RareMerge(theta=0.01)
    enc = rm.fit(df, cols, stage(None), np.random.default_rng(0))["x"]
    assert rm.n_hat_["x"] == len(df) and rm.noisy_counts_["x"][3] < 0.01 * len(df)  # r1 is rare ...
    assert rm.merged_["x"] == [] and enc.groups == [[0], [1], [2], [3]]  # ... but has nothing to merge with


def test_rare_merge_missing_values_keep_their_own_code_and_count_in_n():
    df, cols = categorical_frame(n=6000, missing=0.25)
    rng = np.random.default_rng(1)
    rm = RareMerge(theta=0.01)
    enc = rm.fit(df, cols, stage(None), rng)["x"]
    assert rm.n_hat_["x"] == len(df)  # non-private: n_hat is the number of rows, missing ones included
    codes = enc.transform(df["x"])
    na = df["x"].isna().to_numpy()
    assert np.all(codes[na] == enc.missing_code)
    back = enc.inverse(codes, rng)
    assert np.array_equal(pd.isna(back), na)
    assert 0.22 < pd.isna(back).mean() < 0.28


def test_rare_merge_charges_one_gaussian_per_column_with_sigma_from_rho():
    rng = np.random.default_rng(0)
    cats = [f"v{i}" for i in range(50)]
    cols = [Column(f"c{j}", "categorical", categories=cats) for j in range(3)]
    cols.append(Column("single", "categorical", categories=["only"]))  # nothing to merge: not measured
    df = pd.DataFrame({c.name: rng.choice(c.categories, 2000) for c in cols})
    budget = stage(1.0)
    rm = RareMerge()
    rm.fit(df, cols, budget, rng)
    ch = budget.ledger.charges
    assert [c.note for c in ch] == ["c0", "c1", "c2"]
    assert all(c.mechanism == "rare_merge" for c in ch)
    rho_col = budget.rho / 3
    assert sum(c.rho for c in ch) == pytest.approx(budget.rho) and budget.spent <= budget.rho * (1 + 1e-9)
    assert rm.sigma_ == pytest.approx(1 / math.sqrt(2 * rho_col))
    # discrete Gaussian: exactly rho-zCDP with rho = 1 / (2 sigma^2) at L2 sensitivity 1
    assert all(c.event.rho == pytest.approx(1 / (2 * rm.sigma_ ** 2)) for c in ch)


def test_rare_merge_noise_matches_sigma():
    """Empirical std of (noisy - true) over 3 x 1000 cells within 6% of 1 / sqrt(2 rho_col)."""
    rng = np.random.default_rng(4)
    cats = [f"v{i}" for i in range(1000)]
    cols = [Column(f"c{j}", "categorical", categories=cats) for j in range(3)]
    df = pd.DataFrame({c.name: rng.choice(cats, 20000) for c in cols})
    budget = stage(1.0)
    rm = RareMerge()
    rm.fit(df, cols, budget, rng)
    sigma = 1 / math.sqrt(2 * budget.rho / 3)
    resid = np.concatenate([rm.noisy_counts_[c.name] - df[c.name].value_counts().reindex(cats, fill_value=0)
                            .to_numpy() for c in cols])
    assert abs(resid.mean()) < 4 * sigma / math.sqrt(resid.size)
    assert resid.std() == pytest.approx(sigma, rel=0.06)


def test_rare_merge_same_seed_same_groups():
    df, cols = categorical_frame(n=3000)
    g = [RareMerge(theta=0.01).fit(df, cols, stage(1.0, 0.5, noise_seed=7), np.random.default_rng(s))["x"].groups
         for s in (7, 8)]
    assert g[0] == g[1]  # the noise seed replays the noise; the user's generator plays no part


def test_rare_merge_on_adult_merges_rare_countries(adult):
    df, schema = adult
    cols = [c for c in schema.columns if c.kind == "categorical"]
    budget = PrivacyLedger(1.0, 1e-5).stage("rare_merge", 0.1)
    rm = RareMerge()
    encs = rm.fit(schema.validate(df), cols, budget, np.random.default_rng(0))
    assert len(budget.ledger.charges) == len(cols)
    assert "United-States" not in rm.merged_["native-country"]
    assert len(rm.merged_["native-country"]) >= 10
    assert encs["sex"].size == 2


def test_privtree_theta_share_charges_a_row_count_and_coarsens_bins():
    df, cols = numeric_frame()
    budget = stage(1.0)
    fine = PrivTree(theta_share=0).fit(df, cols, stage(1.0), np.random.default_rng(0))
    pt = PrivTree(theta_share=0.05)
    coarse = pt.fit(df, cols, budget, np.random.default_rng(0))
    ch = budget.ledger.charges
    assert ch[0].note == "row count" and ch[0].mechanism == "discrete_gaussian"
    assert [c.note for c in ch[1:]] == [c.name for c in cols]
    assert budget.spent <= budget.rho * (1 + 1e-9)
    assert pt.theta_ > 0
    assert sum(e.n_bins for e in coarse.values()) <= sum(e.n_bins for e in fine.values())
