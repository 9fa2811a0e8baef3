"""The public schema: JSON format, validation errors naming the column, output dtypes."""

import warnings

import numpy as np
import pandas as pd
import pytest

from synthzoo.core.schema import Column, PrivateSchemaWarning, Schema, SchemaError


def small_schema(missing=False):
    return Schema.from_dict({"columns": {
        "age": {"type": "numerical", "lower": 18, "upper": 90, "integer": True, "missing": missing},
        "income": {"type": "numerical", "lower": 0, "upper": 1e6},
        "city": {"type": "categorical", "categories": ["a", "b", "c"], "missing": missing},
        "flag": {"type": "categorical", "categories": [0, 1]},
        "when": {"type": "datetime", "lower": "2020-01-01", "upper": "2021-01-01"},
    }})


def small_frame():
    return pd.DataFrame({"age": [20, 30, 40], "income": [1.5, 20.0, 3e5], "city": ["a", "b", "c"],
                         "flag": [0, 1, 1], "when": pd.to_datetime(["2020-02-01", "2020-06-01", "2020-12-31"])})


def test_valid_frame_passes():
    df = small_frame()
    assert small_schema().validate(df) is df


def test_json_round_trip(tmp_path):
    s = small_schema(missing=True)
    s.to_json(tmp_path / "s.json")
    t = Schema.from_json(tmp_path / "s.json")
    assert t.to_dict() == s.to_dict()
    assert t["when"].lower == s["when"].lower


def test_reads_shared_schema_format(adult):
    df, schema = adult
    assert schema["age"].integer and schema["age"].lower == 17
    assert schema["workclass"].missing and "Private" in schema["workclass"].categories
    schema.validate(df)


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d.assign(age=[20, np.nan, 40]), r"'age'.*missing value"),
    (lambda d: d.assign(city=["a", "z", "c"]), r"'city'.*not among the schema's categories"),
    (lambda d: d.assign(income=["1", "x", "3"]), r"'income'.*non-numeric"),
    (lambda d: d.assign(age=[20, 300, 40]), r"'age'.*outside the public bounds"),
    (lambda d: d.assign(age=[20.5, 30, 40]), r"'age'.*non-integer"),
    (lambda d: d.assign(income=[1.0, np.inf, 2.0]), r"'income'.*infinite"),
    (lambda d: d.iloc[:0], r"empty"),
    (lambda d: d.drop(columns="city"), r"lacks schema column"),
    (lambda d: d.assign(extra=1), r"does not describe"),
    (lambda d: d.assign(when=["2020-01-05", "not a date", "2020-03-01"]), r"'when'.*not datetimes"),
])
def test_bad_input_names_column_and_problem(mutate, match):
    with pytest.raises(SchemaError, match=match):
        small_schema().validate(mutate(small_frame()))


def test_clip_out_of_bounds_warns_and_clips():
    df = small_frame().assign(age=[20, 300, 40])
    with pytest.warns(UserWarning, match=r"1 value\(s\) outside"):
        out = small_schema().validate(df, out_of_bounds="clip")
    assert out["age"].tolist() == [20, 90, 40]
    assert df["age"].tolist() == [20, 300, 40]  # the caller's frame is untouched


def test_integer_categories_match_numeric_values():
    schema = small_schema()
    df = small_frame().assign(flag=[0.0, 1.0, 1.0])
    schema.validate(df)


@pytest.mark.parametrize("spec, match", [
    ({"type": "numerical", "lower": 5, "upper": 1}, "exceeds"),
    ({"type": "numerical"}, "needs public 'lower' and 'upper'"),
    ({"type": "categorical", "categories": []}, "non-empty"),
    ({"type": "categorical", "categories": ["a", "a"]}, "duplicate"),
    ({"type": "text"}, "unknown type"),
])
def test_malformed_schema(spec, match):
    with pytest.raises(SchemaError, match=match):
        Schema.from_dict({"columns": {"x": spec}})


def test_constant_column_is_allowed_by_public_schema():
    s = Schema([Column("c", "numerical", lower=3, upper=3), Column("k", "categorical", categories=["only"])])
    s.validate(pd.DataFrame({"c": [3, 3], "k": ["only", "only"]}))


def test_infer_warns_that_it_is_not_private():
    df = small_frame()
    with pytest.warns(PrivateSchemaWarning, match="NOT covered by differential privacy"):
        s = Schema.infer(df)
    assert s["city"].kind == "categorical" and s["income"].kind == "numerical" and s["when"].kind == "datetime"
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivateSchemaWarning)
        s.validate(df)
