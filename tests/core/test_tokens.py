"""Token rows from the public schema: the grid, the digits, missing values, the round trip and the
prefix automaton that keeps every number within its public bounds."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from synthzoo.core.errors import ConfigError
from synthzoo.core.schema import Schema
from synthzoo.core.tokens import CategoryTokens, NumberTokens, TokenTable, grid_step
from synthzoo.datasets import make_demo
from synthzoo.preprocess.tokens import Tokens

SCHEMA = Schema.from_dict({"columns": {
    "age": {"type": "numerical", "lower": 17, "upper": 90, "integer": True},
    "lon": {"type": "numerical", "lower": -124.35, "upper": -114.31},
    "x": {"type": "numerical", "lower": 0.5, "upper": 203.3, "missing": True},
    "k": {"type": "numerical", "lower": 3, "upper": 3, "integer": True},
    "c": {"type": "categorical", "categories": ["a", "b", "c"], "missing": True}}})


def table(base=10, digits=4):
    return TokenTable(SCHEMA, Tokens(digits=digits, base=base).fit(
        pd.DataFrame({c: [] for c in SCHEMA.names}), list(SCHEMA.columns), None, np.random.default_rng(0)))


def test_grid_is_public_and_digits_are_the_values_own():
    assert grid_step(SCHEMA["age"], 4) == 1.0
    assert grid_step(SCHEMA["lon"], 4) == pytest.approx(0.01)      # range 10.04: 4 significant digits
    assert grid_step(SCHEMA["x"], 4) == pytest.approx(0.1)         # range 202.8
    t = table()
    age = t.encoders["age"]
    assert (age.n_digits, list(age.lo_digits), list(age.hi_digits)) == (2, [1, 7], [9, 0])
    assert age.transform(pd.Series([39, 17, 90])).tolist() == [[3, 9], [1, 7], [9, 0]]   # the value's digits
    lon = t.encoders["lon"]
    assert lon.offset == -12435 and (lon.k_lo, lon.k_hi) == (0, 1004)                     # negative: offset


def test_round_trip_quantises_to_the_grid_and_keeps_missing():
    t = table()
    df = pd.DataFrame({"age": [17, 90, 44], "lon": [-124.35, -114.31, -120.123], "x": [0.5, np.nan, 100.04],
                       "k": [3, 3, 3], "c": ["a", None, "c"]})
    back = t.inverse(t.transform(df))
    assert back["age"].tolist() == [17, 90, 44]
    assert back["lon"].tolist() == [-124.35, -114.31, -120.12]
    assert back["x"].iloc[0] == 0.5 and np.isnan(back["x"].iloc[1]) and back["x"].iloc[2] == 100.0
    assert back["k"].tolist() == [3, 3, 3]
    assert back["c"].iloc[0] == "a" and pd.isna(back["c"].iloc[1])
    assert t.check(t.transform(df)).all()


@pytest.mark.parametrize("base", [10, 7, 100])
def test_the_automaton_allows_exactly_the_values_within_the_bounds(base):
    """Enumerating every digit string the automaton allows gives exactly the grid values in the bounds."""
    col = Schema.from_dict({"columns": {"v": {"type": "numerical", "lower": 37, "upper": 1234, "integer": True,
                                              "missing": True}}})
    t = TokenTable(col, {"v": NumberTokens(col["v"], 1.0, base)})
    enc = t.encoders["v"]
    rows = np.array(list(itertools.product(range(base + 1), repeat=enc.n_digits))) + t.starts[None, :]
    v = t.inverse(rows[t.check(rows)])["v"].to_numpy()
    assert np.isnan(v).sum() == 1
    assert sorted(v[~np.isnan(v)].astype(int)) == list(range(37, 1235))   # each value once, nothing else


def test_random_tokens_drawn_through_the_automaton_are_always_valid():
    t = table()
    rng = np.random.default_rng(0)
    n = 5000
    state, out = t.start_state(n), np.zeros((n, t.n_positions), dtype=np.int64)
    for p in range(t.n_positions):
        allowed = t.allowed(p, state)
        choice = np.array([rng.choice(np.flatnonzero(a)) for a in allowed])
        state = t.advance(p, state, choice)
        out[:, p] = choice + t.starts[p]
    assert t.check(out).all()
    SCHEMA.validate(t.inverse(out))


def test_positions_have_their_own_vocabulary_and_bad_input_names_the_column():
    t = table()
    spans = [(p.start, p.start + p.width) for p in t.positions]
    assert spans[0][0] == 1 and all(a[1] == b[0] for a, b in zip(spans, spans[1:])) and t.vocab_size == spans[-1][1]
    with pytest.raises(ConfigError, match="'c'"):
        CategoryTokens(SCHEMA["c"]).transform(pd.Series(["zz"]))
    with pytest.raises(ConfigError, match="'age'"):
        NumberTokens(SCHEMA["age"], 1.0).transform(pd.Series([np.nan]))
    with pytest.raises(ConfigError):
        t.local(np.zeros((2, t.n_positions), dtype=np.int64))   # BOS is no position's token


def test_state_round_trip_and_demo_table():
    df, schema = make_demo(n=300, seed=0)
    t = TokenTable(schema, Tokens().fit(df, list(schema.columns), None, np.random.default_rng(0)))
    again = TokenTable.from_state(schema, json.loads(json.dumps(t.to_state())))
    assert again == t
    tok = t.transform(df)
    np.testing.assert_array_equal(again.transform(df), tok)
    assert t.check(tok).all()
    raw = t.inverse(tok)
    schema.validate(pd.DataFrame({c: schema[c].typed(raw[c].to_numpy()) for c in schema.names}))
    with pytest.raises(ConfigError):
        TokenTable.from_state(schema, {**t.to_state(), "age": {"type": "category"}})
