"""Column encoders: categorical groups and numeric bins, raw values to codes and back."""

import numpy as np
import pandas as pd
import pytest

from synthzoo.core.domain import Domain, EncodedData, Measurement, count
from synthzoo.core.encoding import BinEncoder, CategoricalEncoder, TableEncoder, encoder_from_state
from synthzoo.core.schema import Column, Schema


def test_count_matches_crosstab():
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, 3, 1000), rng.integers(0, 4, 1000), rng.integers(0, 2, 1000)], 1)
    data = EncodedData(codes, Domain(["a", "b", "c"], [3, 4, 2]))
    m = data.project(("a", "c"))
    ref = pd.crosstab(codes[:, 0], codes[:, 2]).to_numpy()
    assert m.shape == (3, 2) and np.array_equal(m, ref)
    assert data.project(("a", "c")) is m  # cached
    assert data.project(()) == 1000
    assert count(codes[:, [1]], (4,)).sum() == 1000


def test_domain_rejects_bad_codes():
    with pytest.raises(ValueError, match="outside the domain"):
        EncodedData(np.array([[0, 5]]), Domain(["a", "b"], [2, 3]))


def test_integer_bins_decode_inside_bin_and_bounds():
    col = Column("x", "numerical", lower=0, upper=10, integer=True)
    enc = BinEncoder(col, [0, 2.5, 7.2, 10])
    s = pd.Series(np.arange(0, 11))
    codes = enc.transform(s)
    rng = np.random.default_rng(0)
    back = enc.inverse(np.repeat(np.arange(enc.n_bins), 200), rng)
    assert np.all(back == np.round(back)) and back.min() >= 0 and back.max() <= 10
    # every decoded value falls back into its own bin
    assert np.array_equal(enc.transform(pd.Series(back)), np.repeat(np.arange(enc.n_bins), 200))
    assert codes[-1] == enc.n_bins - 1  # the upper bound belongs to the last bin


def test_continuous_bins_and_missing_code():
    col = Column("x", "numerical", lower=-1.0, upper=1.0, missing=True)
    enc = BinEncoder(col, np.linspace(-1, 1, 5))
    s = pd.Series([-1.0, 0.1, np.nan, 1.0])
    codes = enc.transform(s)
    assert codes[2] == enc.missing_code == 4 and enc.size == 5
    back = enc.inverse(codes, np.random.default_rng(0))
    assert np.isnan(back[2]) and np.all((back[[0, 1, 3]] >= -1) & (back[[0, 1, 3]] <= 1))


def test_constant_numeric_column_has_one_bin():
    enc = BinEncoder(Column("c", "numerical", lower=3, upper=3), [3])
    assert enc.n_bins == 1 and enc.inverse(np.zeros(4, int), np.random.default_rng(0)).tolist() == [3.0] * 4


def test_merged_group_decodes_to_a_member():
    col = Column("c", "categorical", categories=["a", "b", "c", "d"], missing=True)
    enc = CategoricalEncoder(col, groups=[[0], [1, 3], [2]])
    codes = enc.transform(pd.Series(["a", "b", "d", None, "c"]))
    assert codes.tolist() == [0, 1, 1, 3, 2]
    back = enc.inverse(np.array([1] * 500 + [3]), np.random.default_rng(0))
    assert set(back[:500]) == {"b", "d"} and pd.isna(back[500])


def test_table_encoder_state_round_trip():
    schema = Schema([Column("x", "numerical", lower=0, upper=5, integer=True), Column("c", "categorical",
                                                                                     categories=["u", "v"])])
    te = TableEncoder(schema, {"x": BinEncoder(schema["x"], [0, 2, 5]), "c": CategoricalEncoder(schema["c"])})
    te2 = TableEncoder.from_state(schema, te.to_state())
    df = pd.DataFrame({"x": [0, 3, 5], "c": ["u", "v", "v"]})
    assert np.array_equal(te.transform(df), te2.transform(df)) and te.domain == te2.domain
    assert isinstance(encoder_from_state(schema["c"], {"type": "categorical", "groups": [[0, 1]]}), CategoricalEncoder)


def test_measurement_state_round_trip():
    m = Measurement(("a", "b"), np.arange(6.0).reshape(2, 3), 1.5)
    m2 = Measurement.from_state(m.to_state())
    assert m2.clique == ("a", "b") and np.array_equal(m2.noisy, m.noisy) and m2.sigma == 1.5


def test_constant_integer_column_has_one_bin():
    enc = BinEncoder(Column("k", "numerical", lower=3, upper=3, integer=True), [3, 4])
    assert enc.n_bins == 1
    assert enc.transform(pd.Series([3, 3])).tolist() == [0, 0]
    assert enc.inverse(np.zeros(3, int), np.random.default_rng(0)).tolist() == [3.0] * 3
