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


def test_compiled_count_matches_numpy_and_checks_the_grid():
    """Tables of many rows are counted by the compiled loop (one, two, three and more columns, either
    memory order); it agrees with the numpy count and refuses codes outside the grid."""
    from synthzoo.core import domain as D

    rng = np.random.default_rng(1)
    n = D.COMPILED_ROWS + 17
    codes = np.asfortranarray(np.stack([rng.integers(0, s, n) for s in (3, 4, 2, 5)], 1).astype(np.uint8))
    for cols in ([2], [0, 3], [3, 1, 0], [0, 1, 2, 3]):
        shape = tuple((3, 4, 2, 5)[c] for c in cols)
        want = D.count(codes[:1000], shape, cols=cols)  # numpy path (few rows) ...
        want = sum(D.count(codes[lo:lo + 1000], shape, cols=cols) for lo in range(0, n, 1000))  # ... in pieces
        for c in (codes, np.ascontiguousarray(codes)):
            np.testing.assert_array_equal(D.count(c, shape, cols=cols), want)
    bad = codes.copy()
    bad[5, 1] = 4  # outside column 1's four codes
    with pytest.raises(ValueError, match="outside the grid"):
        D.count(bad, (3, 4), cols=[0, 1])


def test_schema_categoricals_encode_as_the_raw_values():
    """``Schema.validate(categories=True)`` matches each categorical column to the schema once (a pandas
    Categorical over its categories); the encoders read the same codes from it as from the raw values,
    and it refuses the same inputs with the same messages."""
    from synthzoo.core.errors import SchemaError

    schema = Schema([Column("c", "categorical", categories=["x", "y", "z"], missing=True),
                     Column("d", "categorical", categories=["1", "2"]),
                     Column("v", "numerical", lower=0, upper=9, integer=True)])
    df = pd.DataFrame({"c": ["y", None, "z", "x", "y"], "d": [1, 2, 2, 1, 1], "v": [0, 9, 3, 3, 4]})
    cat = schema.validate(df, categories=True)
    assert isinstance(cat["c"].dtype, pd.CategoricalDtype) and list(cat["c"].cat.categories) == ["x", "y", "z"]
    assert cat["d"].tolist() == ["1", "2", "2", "1", "1"] and cat["v"].equals(df["v"])
    enc = TableEncoder(schema, {"c": CategoricalEncoder(schema["c"], [[0, 2], [1]]),
                                "d": CategoricalEncoder(schema["d"]), "v": BinEncoder(schema["v"], [0, 3, 6])})
    np.testing.assert_array_equal(enc.transform(cat), enc.transform(df))
    assert enc.transform(cat)[:, 0].tolist() == [1, 2, 0, 0, 1]  # y -> group 1, missing -> 2, z and x -> group 0
    for frame, msg in ((df.assign(c=["y", "w", "z", "x", "y"]), "not among the schema's categories"),
                       (df.assign(d=[1, None, 2, 1, 1]), "missing value")):
        for categories in (False, True):
            with pytest.raises(SchemaError, match=msg):
                schema.validate(frame, categories=categories)


def test_integer_bins_from_a_table_match_the_binary_search():
    """An integer column's codes come from a table of its integers once there are enough values; the
    bins are those of the binary search, values beyond the bounds clipped as before."""
    col = Column("x", "numerical", lower=-5, upper=20, integer=True)
    enc = BinEncoder(col, [-5, 0, 3, 11])
    v = pd.Series(np.arange(-8, 24).repeat(2))
    got = enc.transform(v)
    assert getattr(enc, "_table_key", None) is not None  # the table was built
    want = np.clip(np.searchsorted(enc.edges, v.to_numpy(float), side="right") - 1, 0, enc.n_bins - 1)
    np.testing.assert_array_equal(got, want)
