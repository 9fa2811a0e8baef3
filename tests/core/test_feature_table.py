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


def test_malformed_state_is_a_config_error():
    schema = Schema([Column("x", "numerical", lower=0, upper=1)])
    with pytest.raises(ConfigError, match="x"):
        FeatureTable.from_state(schema, {"x": {"type": "onehot"}})
    with pytest.raises(ConfigError, match="modes"):
        FeatureTable.from_state(schema, {"x": {"type": "modes", "means": [], "stds": [], "weights": []}})
