"""Regression tests for two defects found by running the references side by side:
DCR / NNDR blind to a copy when holdout rows duplicate training rows, and singling-out
predicates built as exact equalities where Anonymeter uses one-sided tail ranges."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthzoo.core import Schema
from synthzoo.metrics import dcr_risk, nndr_risk, privacy_scores, singling_out_risk
from synthzoo.metrics.baselines import independent_sample
from synthzoo.metrics.privacy import _BitIndex, _multivariate_queries, _Predicates, _univariate_queries


def coarse_table(n=6000, seed=0):
    """Four skewed categorical columns of 5 values: most holdout rows have an exact duplicate among
    the training rows (as adult cut to its categorical columns, 94.7 %)."""
    rng = np.random.default_rng(seed)
    p = [0.55, 0.25, 0.1, 0.06, 0.04]
    cols = {k: rng.choice(list(v), n, p=p) for k, v in (("a", "vwxyz"), ("b", "klmno"), ("c", "pqrst"))}
    cols["d"] = np.where(rng.random(n) < 0.7, cols["a"], rng.choice(list("vwxyz"), n, p=p))
    schema = Schema.from_dict({"columns": {k: {"type": "categorical", "categories": sorted(set(v))}
                                           for k, v in (("a", "vwxyz"), ("b", "klmno"), ("c", "pqrst"),
                                                        ("d", "vwxyz"))}})
    return pd.DataFrame(cols), schema


def test_dcr_and_nndr_reach_one_for_a_copy_when_holdout_rows_are_duplicates():
    df, schema = coarse_table()
    train, holdout, pool = df.iloc[:2000], df.iloc[2000:4000], df.iloc[4000:]
    assert dcr_risk(train, train, holdout, schema) == 1.0
    assert nndr_risk(train, train, holdout, schema) == 1.0
    fresh = privacy_scores(train, pool, holdout, schema, metrics=("dcr", "nndr")).set_index("metric")
    assert abs(fresh.loc["dcr_risk", "risk"]) < 0.15 and abs(fresh.loc["nndr_risk", "risk"]) < 0.15
    # the normaliser is the holdout's own share at the quantile: most holdout rows are duplicates
    assert fresh.loc["dcr_risk", "detail"]["share_holdout"] > 0.8


def test_dcr_on_adult_categorical_columns(adult):
    df, schema = adult
    cats = [c.name for c in schema.columns if c.kind == "categorical"][:6]
    sub = Schema([schema[c] for c in cats])
    d = df[cats]
    idx = np.random.default_rng(0).permutation(len(d))
    train, holdout = d.iloc[idx[:10000]], d.iloc[idx[10000:13000]]
    assert dcr_risk(train, train, holdout, sub) == 1.0  # 0.003 before the fix
    assert nndr_risk(train, train, holdout, sub) == 1.0


def _rows(p: _Predicates, x: np.ndarray) -> np.ndarray:
    return _BitIndex(x).counts(p)


def test_singling_out_numeric_predicates_are_one_sided_towards_the_tail():
    rng = np.random.default_rng(0)
    synth = np.stack([rng.normal(size=400), rng.integers(0, 3, 400).astype(float)], axis=1)
    is_cat = np.array([False, True])
    med = np.median(synth[:, 0])
    p = _multivariate_queries(synth, is_cat, 50, 2, 20_000, rng)
    assert len(p) > 0
    assert np.all(_rows(p, synth) == 1)  # every kept predicate isolates one synthetic record
    for cols, ops, vals in zip(p.cols, p.ops, p.vals):
        for c, o, v in zip(cols, ops, vals):
            if c == 0:  # the number: >= above the median, <= below it, never ==
                assert o == (2 if v > med else 3)
            else:
                assert o == 1
    u = _univariate_queries(synth, is_cat, 10, rng)
    assert np.all(_rows(u, synth) == 1) and len(u) >= 2  # at least the minimum and the maximum


def test_singling_out_reference_behaviour():
    """Equal train and control sizes (no size correction): a release resampled from unrelated rows
    scores ~0, a copy 1, half copied in between -- the scale Anonymeter's definition has."""
    rng = np.random.default_rng(3)
    n = 1500
    df = pd.DataFrame({"x": rng.normal(size=3 * n), "y": rng.gamma(2.0, size=3 * n),
                       "g": rng.choice(list("abcd"), 3 * n)})
    df["x"] = df["x"].clip(-5, 5)
    df["y"] = df["y"].clip(0, 30)
    schema = Schema.from_dict({"columns": {"x": {"type": "numerical", "lower": -5, "upper": 5},
                                           "y": {"type": "numerical", "lower": 0, "upper": 30},
                                           "g": {"type": "categorical", "categories": list("abcd")}}})
    train, control, other = df.iloc[:n], df.iloc[n:2 * n], df.iloc[2 * n:]
    unrelated = independent_sample(other, seed=1)
    half = pd.concat([train.iloc[: n // 2], unrelated.iloc[n // 2:]], ignore_index=True)
    r0 = np.mean([singling_out_risk(train, unrelated, control, schema, n_attacks=300, seed=s)["risk"]
                  for s in range(3)])
    r_half = singling_out_risk(train, half, control, schema, n_attacks=300, seed=0)
    r1 = singling_out_risk(train, train, control, schema, n_attacks=300, seed=0)
    assert abs(r0) < 0.1, r0  # one fixed draw of the tables: ~0.06 of sampling noise here
    assert r1["risk"] == 1.0
    assert 0.15 < r_half["risk"] < 0.85, r_half
    assert r1["control_correction"] == 1.0  # equal sizes: nothing to correct


def test_singling_out_size_corrections_and_errors():
    df, schema = coarse_table(2000)
    train, control = df.iloc[:1500], df.iloc[1500:]
    for sc in ("posterior", "fit", "none"):
        r = singling_out_risk(train, train, control, schema, n_attacks=20, size_correction=sc, mode="univariate")
        assert np.isfinite(r["risk"])
    from synthzoo.core import ConfigError
    with pytest.raises(ConfigError, match="size_correction"):
        singling_out_risk(train, train, control, schema, size_correction="nope")
    with pytest.raises(ConfigError, match="mode"):
        singling_out_risk(train, train, control, schema, mode="nope")


def test_compiled_predicate_counts_equal_the_bit_set_counts():
    """Singling out counts matches by scanning each predicate's narrowest rank slice (compiled, with
    a cap); the counts are the bit sets' exactly -- equalities, both tails, "is missing" and values
    the table does not hold included."""
    rng = np.random.default_rng(5)
    n = 700
    x = np.stack([np.round(rng.normal(size=n), 1), rng.integers(0, 4, n).astype(float),
                  np.where(rng.random(n) < 0.1, np.nan, rng.integers(0, 30, n).astype(float))], axis=1)
    x = np.concatenate([x, x[:40]])  # repeated rows
    q = 3000
    cols = np.argsort(rng.random((q, 3)), axis=1)[:, :rng.integers(1, 4)]
    rows = rng.integers(len(x), size=q)
    vals = x[rows[:, None], cols] + np.where(rng.random(cols.shape) < 0.1, 0.05, 0.0)  # some values no row has
    ops = np.where(np.isnan(vals), 0, rng.integers(1, 4, cols.shape))
    p = _Predicates(cols, ops, vals)
    index = _BitIndex(x)
    full = np.bitwise_count(index.bits(p)).sum(1)
    assert full.max() > 100 and (full == 0).any() and (full == 1).any()
    assert np.array_equal(index.counts(p), full)
    assert np.array_equal(index.counts(p, cap=2), np.minimum(full, 2))


def test_singling_out_is_unbiased_for_a_non_member_release_at_any_holdout_size():
    """A release independent of the training rows scores ~0 whatever the holdout's size: both
    sides are compared at the smaller size, exactly (hypergeometric thinning).  The previous
    default ("posterior") scored +0.15..+0.20 with a 1:4 holdout and about -0.1 with 3:1 on
    make_demo; so do other curve/prior-based corrections in some direction."""
    from synthzoo.datasets import make_demo
    from synthzoo.metrics.privacy import _isolation_at_size
    train, schema = make_demo(1000, seed=0)
    for n_control in (250, 500, 3000):
        # 12 non-member releases and holdouts: at 1:4 one R has a standard deviation of about .1
        rs = [singling_out_risk(train, make_demo(1000, seed=200 + s)[0], make_demo(n_control, seed=100 + s)[0],
                                schema, seed=s) for s in range(12)]
        assert abs(np.mean([r["risk"] for r in rs])) < 0.08, (n_control, [r["risk"] for r in rs])
        assert np.mean([r["ci_low"] <= 0 <= r["ci_high"] for r in rs]) >= 0.75
        assert all(r["compared_at"] == min(1000, n_control) for r in rs)
    # a copy of the training rows reads 1 at a 1:4 holdout too (R read against the copy's rate m / n_train,
    # 0.25; read against 1 it was 0.12), and at full power with an equal-size holdout
    r = singling_out_risk(train, train, make_demo(250, seed=1)[0], schema, seed=0)
    assert r["tau_copy"] == 0.25 and r["risk"] == pytest.approx(1.0) and r["ci_low"] > 0.5, r
    assert singling_out_risk(train, train, make_demo(1000, seed=1)[0], schema, seed=0)["risk"] > 0.6
    # the thinning probabilities: exact, and the indicator at full size
    assert _isolation_at_size(np.array([0, 1, 2, 5]), 10, 10).tolist() == [0, 1, 0, 0]
    p = _isolation_at_size(np.array([1, 2]), 10, 3)
    assert np.allclose(p, [3 / 10, 2 * 8 * 7 / 2 / 120])  # k C(n-k, m-1) / C(n, m)
