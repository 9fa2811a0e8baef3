"""The feature preprocessors: "features" reads nothing and spends nothing; "mode_features" fits
CTGAN's modes to DP histograms only (the encoder never sees a raw column in a private run)."""

import numpy as np
import pandas as pd

from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.core.schema import Column
from synthzoo.preprocess import Features, ModeFeatures
from synthzoo.preprocess.features import histogram_edges


def _frame(values):
    return pd.DataFrame({"x": values, "c": ["a"] * len(values)})


COLS = [Column("x", "numerical", lower=0, upper=100), Column("c", "categorical", categories=["a", "b"])]


def test_features_spend_nothing():
    led = PrivacyLedger(1.0, 1e-5)
    out = Features().fit(_frame(np.arange(50.0)), COLS, led.stage("p", 0.1), np.random.default_rng(0))
    assert set(out) == {"x", "c"} and not led.charges


def test_mode_features_charge_one_histogram_per_numeric_column():
    led = PrivacyLedger(1.0, 1e-5)
    budget = led.stage("p", 0.1)
    ModeFeatures().fit(_frame(np.random.default_rng(0).uniform(0, 100, 3000)), COLS, budget,
                       np.random.default_rng(0))
    assert [(c.mechanism, c.note) for c in led.charges] == [("mode_histogram", "x")]
    assert led.charges[0].rho == budget.rho


def test_mode_features_depend_on_the_data_through_the_noisy_histogram_only():
    """Two frames whose values differ inside every bin but share each bin's count: with the same
    (test-only) noise seed the released modes are identical -- nothing but the histogram was read."""
    edges = histogram_edges(COLS[0], 100)
    rng = np.random.default_rng(3)
    a = np.concatenate([rng.normal(30, 3, 2000), rng.normal(75, 4, 1000)]).clip(0, 99.9)
    bins = np.clip(np.searchsorted(edges, a, side="right") - 1, 0, 99)
    b = edges[bins] + rng.random(a.size) * (edges[bins + 1] - edges[bins])  # other values, same bins
    assert not np.allclose(a, b) and (np.histogram(a, edges)[0] == np.histogram(b, edges)[0]).all()
    fits = []
    for values in (a, b):
        led = PrivacyLedger(1.0, 1e-5, noise_seed=11)
        enc = ModeFeatures().fit(_frame(values), COLS, led.stage("p", 0.5), np.random.default_rng(5))["x"]
        fits.append((enc.means, enc.stds, enc.weights))
    for u, v in zip(*fits):
        np.testing.assert_array_equal(u, v)
