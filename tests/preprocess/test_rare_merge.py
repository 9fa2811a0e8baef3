"""DP rare-category merge (Chen et al., Alg. 1): the merge rule, discrete Gaussian noise of the
charged scale, merged codes decoding to members."""

import math

import numpy as np
import pandas as pd
import pytest

from helpers import categorical_frame, preprocess_budget
from synthzoo.core.encoding import CategoricalEncoder
from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.core.schema import Column
from synthzoo.preprocess import RareMerge
from synthzoo.preprocess.rare_merge import rare_groups


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
    enc = rm.fit(df, cols, preprocess_budget(epsilon, share=0.5), rng)["x"]
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
    enc = rm.fit(df, cols, preprocess_budget(None), np.random.default_rng(0))["x"]
    assert rm.n_hat_["x"] == len(df) and rm.noisy_counts_["x"][3] < 0.01 * len(df)  # r1 is rare ...
    assert rm.merged_["x"] == [] and enc.groups == [[0], [1], [2], [3]]  # ... but has nothing to merge with


def test_rare_merge_missing_values_keep_their_own_code_and_count_in_n():
    df, cols = categorical_frame(n=6000, missing=0.25)
    rng = np.random.default_rng(1)
    rm = RareMerge(theta=0.01)
    enc = rm.fit(df, cols, preprocess_budget(None), rng)["x"]
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
    budget = preprocess_budget(1.0)
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
    budget = preprocess_budget(1.0)
    rm = RareMerge()
    rm.fit(df, cols, budget, rng)
    sigma = 1 / math.sqrt(2 * budget.rho / 3)
    resid = np.concatenate([rm.noisy_counts_[c.name] - df[c.name].value_counts().reindex(cats, fill_value=0)
                            .to_numpy() for c in cols])
    # the secret noise: the mean within 6 s.e. (4 failed a correct sampler 1 run in 16,000), the std 4.7 s.e.
    assert abs(resid.mean()) < 6 * sigma / math.sqrt(resid.size)
    assert resid.std() == pytest.approx(sigma, rel=0.06)


def test_rare_merge_same_seed_same_groups():
    df, cols = categorical_frame(n=3000)
    g = [RareMerge(theta=0.01).fit(df, cols, preprocess_budget(1.0, 0.5, noise_seed=7), np.random.default_rng(s))["x"].groups
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
