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


@pytest.mark.parametrize("meta, match", [
    ({"target": "agee"},
     r"\"target\" \(top level\) must name one of the schema's columns, got 'agee'; columns are \['age', 'sex'\]"),
    ({"target": ["age"]}, r"\"target\" .* got a list"),
    ({"task": {"kind": "regression"}}, r"\"task\" \(top level\) must be a text"),
    ({"task": "regresion"}, r"\"task\" \(top level\): unknown task 'regresion'; choose from \['binary classification'"),
    ({"task": ""}, r"\"task\" \(top level\): unknown task ''"),
    ({"other_category": 5}, r"\"other_category\" \(top level\) must map categorical columns"),
    ({"other_category": {"age": "__other__"}}, r"\"other_category\" entry 'age': must name a categorical column"),
    ({"other_category": {"sex": 0}}, r"\"other_category\" entry 'sex'"),
])
def test_top_level_keys_the_library_reads_are_checked_naming_the_key(meta, match):
    # a typo in the target must not surface later as a KeyError in an evaluation; other top-level keys
    # are free-form notes
    cols = {"age": {"type": "numerical", "lower": 0, "upper": 99},
            "sex": {"type": "categorical", "categories": ["F", "M"]}}
    with pytest.raises(SchemaError, match=match):
        Schema.from_dict({"columns": cols, **meta})
    ok = Schema.from_dict({"columns": cols, "target": "sex", "task": "binary classification",
                           "other_category": {"sex": "__other__"}, "notes": ["anything", 1]})
    assert ok.meta["notes"] == ["anything", 1]


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


def _long_text(n, shared=True):
    """A text column of n values over alpha, beta, gamma with missing values, as pandas' CSV reader
    gives it (one object per distinct text) or with one object per row (equal texts, distinct objects)."""
    pick = np.random.default_rng(0).integers(0, 5, n)
    if shared:
        values = np.array(["alpha", "beta", "gamma", None, np.nan], dtype=object)[pick]
    else:  # built at run time, so no two are the same object
        parts = [("al", "pha"), ("be", "ta"), ("gam", "ma")]
        values = np.array(["".join(parts[k]) if k < 3 else (None if k == 3 else np.nan) for k in pick], dtype=object)
        assert len({id(v) for v in values}) > n // 2
    return pd.Series(values, dtype=object)


@pytest.mark.parametrize("shared", [True, False])
def test_long_text_columns_are_matched_as_pandas_factorizes_them(shared):
    """Above IDENTITY_ROWS text is matched by object identity first; the codes must equal matching by
    value, for shared objects and for equal texts held in distinct objects, missing values included."""
    from synthzoo.core import schema as S

    col = Column(name="city", kind="categorical", categories=["alpha", "beta", "gamma"], missing=True)
    s = _long_text(S.IDENTITY_ROWS * 2, shared=shared)
    expect = pd.Categorical(s.where(s.notna(), None), categories=col.categories)
    got = col.as_categorical(s)
    np.testing.assert_array_equal(np.asarray(got.codes), np.asarray(expect.codes))
    assert (np.asarray(got.codes) == -1).sum() == s.isna().sum() > 0
    assert sorted(map(str, S._distinct(s))) == sorted(map(str, pd.unique(s)))


def test_long_text_with_an_unknown_value_names_it():
    from synthzoo.core import schema as S

    schema = Schema.from_dict({"columns": {"city": {"type": "categorical", "categories": ["alpha", "beta", "gamma"],
                                                    "missing": True}}})
    s = _long_text(S.IDENTITY_ROWS * 2)
    s.iloc[S.IDENTITY_ROWS + 7] = "zz"
    with pytest.raises(SchemaError, match=r"'city'.*'zz'"):
        schema["city"].as_categorical(s)
    for categories in (False, True):
        with pytest.raises(SchemaError, match=r"'city'.*'zz'"):
            schema.validate(pd.DataFrame({"city": s}), categories=categories)


def test_categories_with_leading_zeros_come_back_as_text():
    # ZIP codes and codes like "007": the default dtype was int (every category an integer spelling), so a
    # release wrote 2139 for "02139" and 7 for "007" -- values the schema lists, silently changed
    col = Column("zip", "categorical", categories=["02139", "10001", "00501"])
    assert col.output_dtype != np.dtype("int64")
    assert col.typed(["02139", "00501"]).tolist() == ["02139", "00501"]
    assert Column("code", "categorical", categories=["-0", "1"]).typed(["-0"]).tolist() == ["-0"]
    assert Column("n", "categorical", categories=["0", "10", "-3"]).output_dtype == np.dtype("int64")  # plain ints
    df = pd.DataFrame({"zip": ["02139", "00501", "10001"] * 5})
    with pytest.warns(UserWarning):
        inferred = Schema.infer(df)
    assert inferred["zip"].typed(["00501"]).tolist() == ["00501"]


def test_schema_file_saved_with_a_utf8_bom_is_read(tmp_path):
    # Windows editors (Notepad before 2019, Excel's "UTF-8" export) start the file with a byte-order mark:
    # the schema was refused ("is not valid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig)") while a CSV
    # with one was read
    text = '{"columns": {"ville": {"type": "categorical", "categories": ["Zürich", "Genève"]}}}'
    (tmp_path / "s.json").write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert Schema.from_json(tmp_path / "s.json")["ville"].categories == ["Zürich", "Genève"]


def test_a_category_but_for_spaces_or_letter_case_is_pointed_out():
    # " Adelie" (a hand-made CSV's space) was listed among the unseen values with nothing to say why
    schema = Schema([Column("species", "categorical", categories=["Adelie", "Gentoo"])])
    with pytest.raises(SchemaError) as e:
        schema.validate(pd.DataFrame({"species": [" Adelie", "gentoo", "Chinstrap", "Adelie"]}))
    msg = str(e.value)
    assert "column 'species'" in msg and "'Chinstrap'" in msg
    assert "' Adelie' is 'Adelie' but for spaces around it" in msg
    assert "'gentoo' is 'Gentoo' but for letter case" in msg
    assert "Chinstrap' is" not in msg  # a value that is no category gets no hint


def test_parsing_dates_leaves_the_process_wide_warning_filters_alone(monkeypatch):
    """Dates are parsed with pandas' parsing advice filtered by message and module, not inside
    ``warnings.catch_warnings`` + ``simplefilter("ignore")``: that swapped the process-wide filter list,
    so while one of evaluate's threads parsed a date column every other thread's warnings were dropped."""
    import warnings

    from synthzoo.core import datetimes as dtm

    seen = []
    real = pd.to_datetime

    def spy(*a, **k):
        seen.append(list(warnings.filters))  # the filters another thread sees while this one parses
        return real(*a, **k)

    monkeypatch.setattr(pd, "to_datetime", spy)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        dtm.to_seconds(pd.Series(["2020-01-31", "2021-02-01 10:00:00"]), "d")
        Schema.from_dict({"columns": {"d": {"type": "datetime", "lower": "2000-01-01", "upper": "2030-01-01"}}}) \
            .validate(pd.DataFrame({"d": ["2020-01-31"]}))
        assert seen and not any(f[:4] == ("ignore", None, Warning, None) for s in seen for f in s)
        # pandas' advice, attributed to the parsing code, stays quiet; the same text from elsewhere shows
        for module in ("synthzoo.core.datetimes", "someone_else"):
            warnings.warn_explicit("Parsing dates in %d/%m/%Y format when dayfirst=False (the default) was "
                                   "specified.", UserWarning, "f.py", 1, module=module)
    assert [g.filename for g in got if "Parsing dates" in str(g.message)] == ["f.py"]
