"""The feature preprocessors: "features" reads nothing and spends nothing; "mode_features" fits
CTGAN's modes to DP releases only -- PrivTree bins and a histogram over them (the encoder never sees
a raw column in a private run)."""

import numpy as np
import pandas as pd
import pytest

from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.core.schema import Column
from synthzoo.preprocess import Features, ModeFeatures


def _frame(values):
    return pd.DataFrame({"x": values, "c": ["a"] * len(values)})


COLS = [Column("x", "numerical", lower=0, upper=100), Column("c", "categorical", categories=["a", "b"])]


def test_features_spend_nothing():
    led = PrivacyLedger(1.0, 1e-5)
    out = Features().fit(_frame(np.arange(50.0)), COLS, led.stage("p", 0.1), np.random.default_rng(0))
    assert set(out) == {"x", "c"} and not led.charges


def test_mode_features_charge_privtree_and_a_histogram_per_numeric_column():
    led = PrivacyLedger(1.0, 1e-5)
    budget = led.stage("p", 0.1)
    ModeFeatures().fit(_frame(np.random.default_rng(0).uniform(0, 100, 3000)), COLS, budget,
                       np.random.default_rng(0))
    assert [(c.mechanism, c.note) for c in led.charges] == [("privtree", "x"), ("mode_histogram", "x")]
    assert sum(c.rho for c in led.charges) == pytest.approx(budget.rho)


def test_mode_features_depend_on_the_data_through_dp_releases_only():
    """Two frames whose values differ inside every finest PrivTree cell (depth 20) but share each
    cell's count: with the same (test-only) noise seed the released modes are identical -- nothing
    but the noisy tree and the noisy histogram was read."""
    rng = np.random.default_rng(3)
    a = np.concatenate([rng.normal(30, 3, 2000), rng.normal(75, 4, 1000)]).clip(0, 99.9)
    cell = 100 / 2 ** 20
    b = np.floor(a / cell) * cell + rng.random(a.size) * cell * 0.999  # other values, same finest cells
    assert np.abs(a - b).max() > 0 and (np.floor(a / cell) == np.floor(b / cell)).all()
    fits = []
    for values in (a, b):
        led = PrivacyLedger(1.0, 1e-5, noise_seed=11)
        enc = ModeFeatures().fit(_frame(values), COLS, led.stage("p", 0.5), np.random.default_rng(5))["x"]
        fits.append((enc.means, enc.stds, enc.weights))
    for u, v in zip(*fits):
        np.testing.assert_array_equal(u, v)
