"""Continuous feature encodings (synthzoo.core.features): layout, round trips on public bounds,
CTGAN's modes fitted from a histogram, saved state."""

import numpy as np
import pandas as pd
import pytest

from synthzoo.core.errors import ConfigError
from synthzoo.core.features import FeatureTable, ModeNormalised, OneHot, ScaledNumber
from synthzoo.core.schema import Column, Schema
from synthzoo.datasets import make_demo


def test_layout_and_round_trip_on_the_demo_table():
    df, schema = make_demo(n=2000, seed=0)
    table = FeatureTable(schema, {c.name: OneHot(c) if c.kind == "categorical" else ScaledNumber(c)
                                  for c in schema})
    x = table.transform(df, np.random.default_rng(0))
    assert x.shape == (2000, table.dim) and x.dtype == np.float32
    assert x.min() >= -1.0 and x.max() <= 1.0
    assert table.layout[-1].stop == table.dim
    back = table.inverse(x, np.random.default_rng(0))
    for c in schema:
        a, b = df[c.name], back[c.name]
        assert (a.isna().to_numpy() == pd.isna(b).to_numpy()).all(), c.name
        if c.kind == "categorical":
            assert (a.dropna().astype(str).to_numpy() == b[~pd.isna(b)].astype(str)).all()
        elif c.kind == "numerical":
            tol = 1e-3 * (c.upper - c.lower) + (0.5 if c.integer else 0)
            assert np.nanmax(np.abs(a.to_numpy(dtype=float) - b.astype(float))) <= tol, c.name
    again = FeatureTable.from_state(schema, table.to_state())
    assert again == table and again.to_dict()["dim"] == table.dim


def test_scaled_number_uses_public_bounds_only():
    col = Column("x", "numerical", lower=0, upper=100, missing=True)
    enc = ScaledNumber(col)
    x = enc.transform(pd.Series([0.0, 50.0, 100.0, np.nan]), None)
    assert x[:, 0].tolist() == [-1.0, 0.0, 1.0, 0.0] and x[:, 1].tolist() == [0, 0, 0, 1]
    v = enc.inverse(np.array([[2.0, 0.0], [-0.5, 0.9]]), None)
    assert v[0] == 100.0 and np.isnan(v[1])  # clipped to the bounds; the flag decides missing


def test_modes_from_a_histogram_recover_a_two_mode_column():
    col = Column("x", "numerical", lower=0, upper=100)
    edges = np.linspace(0, 100, 101)
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.normal(20, 2, 5000), rng.normal(70, 5, 5000)]).clip(0, 100)
    counts = np.histogram(values, edges)[0]
    enc = ModeNormalised.from_histogram(col, edges, counts, 10, np.random.default_rng(1))
    big = enc.means[enc.weights > 0.1]
    assert any(abs(m - 20) < 3 for m in big) and any(abs(m - 70) < 5 for m in big)
    x = enc.transform(pd.Series(values), np.random.default_rng(2))
    back = enc.inverse(x, None)
    assert np.abs(back - values).max() < 1e-3 * 100 + 1e-6


def test_an_integer_columns_modes_from_privtree_bins_sit_on_its_integers():
    """PrivTree halves an integer range at non-integer points; the bin [0.5625, 1.125) holds the integer 1
    (the histogram counts ``ceil(a) .. ceil(b) - 1``).  The modes were fitted to points drawn from
    ``a + [0, b - a)``: a mode of no spread at 0.5625, and the column's 1s encoded in a wide mode far away."""
    col = Column("k", "numerical", lower=0, upper=4, integer=True)
    edges = np.array([0.0, 0.5625, 1.125, 2.25, 3.125, 5.0])   # holding {0}, {1}, {2}, {3}, {4}
    values = np.repeat([0.0, 1.0, 2.0, 3.0, 4.0], [500, 250, 150, 70, 30])
    counts = np.array([500, 250, 150, 70, 30])
    enc = ModeNormalised.from_histogram(col, edges, counts, 10, np.random.default_rng(1))
    assert np.allclose(enc.means[enc.stds < 1e-3], np.round(enc.means[enc.stds < 1e-3]))
    x = enc.transform(pd.Series(values), np.random.default_rng(2))
    modes = x[:, 1:1 + enc.n_modes].argmax(axis=1)
    for v in (0.0, 1.0, 2.0):   # each frequent value its own mode of no spread, at alpha 0
        own = modes[values == v]
        assert np.unique(own).size == 1 and enc.stds[own[0]] < 1e-3 and abs(enc.means[own[0]] - v) < 1e-6
    assert np.array_equal(enc.inverse(x, None), values)


def test_a_value_holding_a_tenth_of_the_points_is_a_mode_of_no_spread():
    """adult's capital-gain is 0 in 92 % of the rows.  Fitted with the few points just above it, the zeros' mode
    took their spread (scale 12 at epsilon 1), and a generator's small within-mode noise decoded a third of the
    zeros as 1s and 2s.  The zeros are now a mode of their own that decodes to 0 whatever alpha is."""
    col = Column("g", "numerical", lower=0, upper=99999, integer=True)
    rng = np.random.default_rng(0)
    x = np.r_[np.zeros(9200), rng.integers(1, 60, 150), rng.normal(15000, 4000, 650).round().clip(0, 99999)]
    enc = ModeNormalised.from_values(col, x, 10, np.random.default_rng(1))
    zero = int(np.argmin(np.abs(enc.means)))
    assert enc.means[zero] == 0.0 and enc.stds[zero] <= 0.1 and abs(enc.weights[zero] - 0.92) < 1e-3
    assert enc.n_modes <= 10
    codes = enc.transform(pd.Series(x), np.random.default_rng(2))
    assert (codes[x == 0, 1 + zero] == 1).all() and np.all(codes[x == 0, 0] == 0)
    spread = np.zeros((3, 1 + enc.n_modes))
    spread[:, 0], spread[:, 1 + zero] = [-1.0, 0.3, 1.0], 1.0   # any alpha of the zeros' mode
    assert np.array_equal(enc.inverse(spread, None), [0.0, 0.0, 0.0])
    assert np.array_equal(enc.inverse(codes, None), x)
    # a column without such a value keeps the plain mixture
    y = rng.normal(50, 10, 3000).clip(0, 100)
    plain = ModeNormalised.from_values(Column("y", "numerical", lower=0, upper=100), y, 5, np.random.default_rng(1))
    assert plain.stds.min() > 0.5


def test_malformed_state_is_a_config_error():
    schema = Schema([Column("x", "numerical", lower=0, upper=1)])
    with pytest.raises(ConfigError, match="x"):
        FeatureTable.from_state(schema, {"x": {"type": "onehot"}})
    with pytest.raises(ConfigError, match="modes"):
        FeatureTable.from_state(schema, {"x": {"type": "modes", "means": [], "stds": [], "weights": []}})


@pytest.mark.parametrize("b", [8e307, 8.9e307])
def test_modes_of_a_column_near_the_largest_float_do_not_overflow(b):
    # tvae and ctgan on bounds of +-8e307 summed the points to inf and failed with "malformed modes" -- after the
    # histogram's charge; the modes are now fitted on shares of the range, computed in exact halves
    import warnings

    import synthzoo as sz

    col = Column("x", "numerical", lower=-b, upper=b)
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(-0.5, 0.05, 500), rng.normal(0.6, 0.05, 500)].clip(-1, 1) * b
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way
        m = ModeNormalised.from_values(col, x, 5, np.random.default_rng(1))
        assert np.isfinite(m.means).all() and np.isfinite(m.stds).all() and m.n_modes >= 2
        assert np.allclose(np.sort(m.means[m.weights > 0.2]) / b, [-0.5, 0.6], atol=0.02)
        enc = m.transform(pd.Series(x), np.random.default_rng(2))
        back = m.inverse(enc, np.random.default_rng(3))
    assert np.isfinite(enc).all() and np.all(np.abs(back / b - x / b) < 0.05)
    df = pd.DataFrame({"x": x[:300], "c": rng.choice(["a", "b"], 300)})
    schema = Schema.from_dict({"columns": {"x": {"type": "numerical", "lower": -b, "upper": b},
                                           "c": {"type": "categorical", "categories": ["a", "b"]}}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = sz.make("ctgan", epsilon=1.0, delta=1e-5, schema=schema, seed=0, model={"epochs": 1}).fit(df).sample(200)
    assert np.isfinite(out["x"]).all() and out["x"].between(-b, b).all()


def test_modes_of_an_ordinary_column_are_those_of_the_plain_formula():
    # the halves are exact: the same modes as (x - lo) / (hi - lo), and the means and scales from the points
    col = Column("x", "numerical", lower=-3.0, upper=7.0)
    x = np.random.default_rng(0).normal(2, 1.5, 3000).clip(-3, 7)
    m = ModeNormalised.from_values(col, x, 4, np.random.default_rng(1))
    share = (x - col.lower) / (col.upper - col.lower)
    assert np.array_equal((x / 2 - col.lower / 2) / (col.upper / 2 - col.lower / 2), share)
    enc = m.transform(pd.Series(x), np.random.default_rng(2))
    assert np.abs(m.inverse(enc, np.random.default_rng(3)) - x).max() < 1e-5 * 10


def test_quantile_knots_near_the_largest_float_interpolate_without_overflow():
    # np.interp's slope between knots of +-8.9e307 overflowed: tabddpm's samples piled at the upper bound
    # (median 1.0 of the range where the data's is 0); the knots are interpolated over a power of two
    from synthzoo.core.features import QuantileNumber

    for b in (3.7, 8.9e307):
        col = Column("x", "numerical", lower=-b, upper=b)
        x = np.random.default_rng(0).uniform(-1, 1, 3000) * b
        edges = np.linspace(-1, 1, 33) * b
        q = QuantileNumber.from_histogram(col, edges, np.histogram(x / b, edges / b)[0])
        enc = q.transform(pd.Series(x), np.random.default_rng(1))
        back = q.inverse(enc, np.random.default_rng(2))
        assert np.abs(np.quantile(back / b, [0.1, 0.5, 0.9]) - np.quantile(x / b, [0.1, 0.5, 0.9])).max() < 0.03
        if b < 1e300:  # the power of two is exact: what the plain interpolation gave, to the bit
            plain = np.clip(np.interp((enc[:, 0].astype(float) + 1) / 2, q.levels, q.values), -b, b)
            assert np.array_equal(back, plain)
