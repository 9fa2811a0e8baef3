"""What every preprocessor shares: registration and parameters, refused kinds and budgets, uniform
binning, decoded values inside their bins, missing values with their own code."""

import numpy as np
import pandas as pd
import pytest

from helpers import categorical_frame, numeric_frame, preprocess_budget
from synthzoo.core.base import create
from synthzoo.core.encoding import BinEncoder
from synthzoo.core.errors import BudgetExceededError, ConfigError, SchemaError
from synthzoo.core.schema import Column
from synthzoo.preprocess import PrivTree, RareMerge, Uniform


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
        PrivTree().fit(cdf, ccols, preprocess_budget(), np.random.default_rng(0))
    with pytest.raises(ConfigError, match="'age'"):
        RareMerge().fit(df, cols[:1], preprocess_budget(), np.random.default_rng(0))
    with pytest.raises(SchemaError, match="'age'"):
        Uniform().fit(df.drop(columns="age"), cols, preprocess_budget(None), np.random.default_rng(0))


def test_an_empty_private_budget_is_refused_with_a_clear_error():
    df, cols = numeric_frame()
    cdf, ccols = categorical_frame()
    with pytest.raises(BudgetExceededError, match="privtree"):
        PrivTree().fit(df, cols, preprocess_budget(1.0, share=0.0), np.random.default_rng(0))
    with pytest.raises(BudgetExceededError, match="rare_merge"):
        RareMerge().fit(cdf, ccols, preprocess_budget(1.0, share=0.0), np.random.default_rng(0))


# -- uniform ----------------------------------------------------------------------------------
def test_uniform_bins_are_equal_width_on_public_bounds_and_spend_nothing():
    df, cols = numeric_frame()
    budget = preprocess_budget(None)
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
    encs = module.fit(df, cols, preprocess_budget(epsilon), rng)
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
    encs = module.fit(df, cols, preprocess_budget(1.0), rng)
    for name in ("age", "when"):
        enc = encs[name]
        codes = enc.transform(df[name])
        na = df[name].isna().to_numpy()
        assert np.all(codes[na] == enc.missing_code) and np.all(codes[~na] < enc.n_bins)
        back = enc.inverse(codes, rng)
        assert np.array_equal(np.isnan(back), na)  # missing comes back exactly where (and as often as) coded
        assert 0.17 < na.mean() < 0.23
