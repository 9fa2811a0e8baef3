"""The bad-input table of issue 15 (items 1-3), one test per row: dates as users have them and privacy
settings that make no sense.  (Hostile model files, item 4: tests/test_model_files.py.)

Every test name says the input; its body checks the behaviour."""

import datetime
import io
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import synthzoo as sz
from synthzoo.core.errors import ConfigError, PrivacySettingsWarning, SchemaError
from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.core.schema import Column, PrivateSchemaWarning, Schema, numeric_values
from synthzoo.datasets import make_demo


def _one(col: Column, values) -> pd.DataFrame:
    return pd.DataFrame({col.name: values})


def _sample(schema: Schema, df: pd.DataFrame, n=300, **kw) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = sz.Synthesizer(select="mst", model="pgm", epsilon=None, schema=schema, seed=0, **kw).fit(df)
    return synth.sample(n, seed=1), synth


def _dates(n=400, seed=0, start="1950-01-01", days=20_000):
    rng = np.random.default_rng(seed)
    return pd.Timestamp(start) + pd.to_timedelta(rng.integers(0, days, n), unit="D")


# ------------------------------------------------------------------------------------------- dates
def test_date_only_bounds_mean_days_and_the_release_holds_dates():
    col = Column("dob", "datetime", lower="1930-01-01", upper="2010-12-31")
    assert col.resolution == "day"
    fake, _ = _sample(Schema([col]), _one(col, _dates()))
    assert fake["dob"].dtype == np.dtype("datetime64[ns]")
    assert (fake["dob"] == fake["dob"].dt.normalize()).all()  # no 20:29:43.926528


def test_declared_resolution_wins_over_the_form_of_the_bounds():
    col = Column("t", "datetime", lower="2020-01-01 00:00:00", upper="2021-01-01 00:00:00", resolution="hour")
    assert col.resolution == "hour"
    df = _one(col, pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(300) * 7, unit="h"))
    fake, _ = _sample(Schema([col]), df)
    assert (fake["t"] == fake["t"].dt.floor("h")).all() and (fake["t"] != fake["t"].dt.normalize()).any()


def test_iso_date_text_declared_as_string_comes_back_as_the_same_text():
    col = Column("d", "datetime", lower="2000-01-01", upper="2020-12-31", dtype="string")
    df = _one(col, _dates(start="2000-01-01", days=7000).strftime("%Y-%m-%d"))
    fake, _ = _sample(Schema([col]), df)
    assert fake["d"].dtype == col.output_dtype and fake["d"].str.fullmatch(r"\d{4}-\d{2}-\d{2}").all()


def test_text_in_a_declared_format_is_parsed_and_written_back_in_it():
    col = Column("d", "datetime", lower="01/01/2000", upper="31/12/2020", format="%d/%m/%Y", dtype="string")
    assert col.resolution == "day"
    df = _one(col, _dates(start="2000-01-01", days=7000).strftime("%d/%m/%Y"))
    fake, _ = _sample(Schema([col]), df)
    assert fake["d"].str.fullmatch(r"\d{2}/\d{2}/\d{4}").all()


def test_tz_aware_column_comes_back_in_its_zone():
    col = Column("t", "datetime", lower="2020-01-01", upper="2021-01-01", tz="Europe/Paris", resolution="minute")
    df = _one(col, pd.Series(pd.date_range("2020-01-01", periods=400, freq="13h", tz="Europe/Paris")))
    fake, synth = _sample(Schema([col]), df)
    assert str(fake["t"].dt.tz) == "Europe/Paris" and fake["t"].dtype == col.output_dtype
    again = sz.Synthesizer.from_json(synth.to_json())
    assert again.sample(50, seed=2).equals(synth.sample(50, seed=2))


def test_pandas_to_csv_of_a_tz_aware_column_reads_back():
    # to_csv writes one UTC offset per DST period (+01:00 in winter, +02:00 in summer)
    col = Column("t", "datetime", lower="2020-01-01", upper="2021-01-01", tz="Europe/Paris", resolution="hour")
    s = pd.Series(pd.date_range("2020-01-01", periods=300, freq="29h", tz="Europe/Paris"))
    buf = io.StringIO()
    s.to_frame("t").to_csv(buf, index=False)
    back = pd.read_csv(io.StringIO(buf.getvalue()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the zone is declared: no mixed-zone warning
        Schema([col]).validate(back)
    assert np.array_equal(numeric_values(back["t"], col), numeric_values(s, col))


def test_mixed_time_zones_are_converted_to_utc_with_a_warning():
    col = Column("t", "datetime", lower="2019-01-01", upper="2021-01-01", resolution="second")
    df = _one(col, ["2020-01-01 10:00:00+01:00", "2020-07-01 10:00:00+02:00", "2020-03-01 10:00:00-05:00"])
    with pytest.warns(UserWarning, match=r"'t'.*different UTC offsets.*converted to UTC"):
        Schema([col]).validate(df)
    with pytest.warns(UserWarning, match="converted to UTC"):
        v = numeric_values(df["t"], col)
    assert v[0] == pd.Timestamp("2020-01-01 09:00").timestamp()


@pytest.mark.parametrize("values", [
    ["2020-01-01 10:00", "2020-01-01 10:00+02:00"],
    ["2020-01-01", "2020-01-01T10:00Z"],
    [datetime.datetime(2020, 1, 1, 10), datetime.datetime(2020, 1, 1, 10, tzinfo=datetime.timezone.utc)],
    [pd.Timestamp("2020-01-01 10:00"), pd.Timestamp("2020-01-01 10:00", tz="Europe/Paris")]])
def test_naive_and_zoned_datetimes_in_one_column_are_refused_before_any_charge(values):
    # the naive values were read as UTC, a guess that moved them by hours, under a warning about different
    # offsets only; now an error naming both kinds, before dp_schema's charges of the other columns
    df = pd.DataFrame({"a": np.arange(100.0), "t": pd.Series(values * 50, dtype=object)})
    said = (r"column 't': mixes values with a time zone \(e\.g\. '2020-01-01[ T]10:00.*'\) and values without one "
            r"\(e\.g\. '2020-01-01.*', 50 such\); .* give every value its UTC offset \(or none\)")
    with pytest.raises(SchemaError, match=said), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Schema.infer(df)
    col = Column("t", "datetime", lower="2019-01-01", upper="2021-01-01", resolution="second", tz="Europe/Paris")
    with pytest.raises(SchemaError, match=said):  # a declared zone does not say where the naive ones are either
        Schema([Column("a", "numerical", lower=0, upper=100), col]).validate(df)
    led = PrivacyLedger(1.0, 1e-6, reserved_delta=1e-7)
    with pytest.raises(SchemaError, match=said), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sz.dp_schema(df, {"a": "numerical", "t": {"type": "datetime", "resolution": "second"}}, ledger=led, share=1.0)
    assert led.spent().epsilon == 0


def test_text_that_is_no_date_in_a_measured_datetime_column_is_refused_before_any_charge():
    # dp_schema parsed a datetime column when it came to measure it: the columns before it were charged first
    df = pd.DataFrame({"a": np.arange(100.0), "t": ["2020-01-01", "hello"] * 50})
    led = PrivacyLedger(1.0, 1e-6, reserved_delta=1e-7)
    for t in ({"type": "datetime", "resolution": "day"},
              {"type": "datetime", "resolution": "day", "lower": "2019-01-01", "upper": "2021-01-01"}):
        with pytest.raises(SchemaError, match=r"column 't': 50 value\(s\) that are not datetimes, e\.g\. \['hello'\]"):
            sz.dp_schema(df, {"a": "numerical", "t": t}, ledger=led, share=1.0)
        assert led.spent().epsilon == 0


def test_text_that_is_not_iso_names_the_value_and_the_schemas_format_key_not_pandas_arguments():
    col = Column("dob", "datetime", lower="1930-01-01", upper="2010-12-31")
    with pytest.raises(SchemaError) as e:
        Schema([col]).validate(_one(col, ["1980-01-01", "31/12/1999"]))
    msg = str(e.value)
    assert "'dob'" in msg and "31/12/1999" in msg and '"format"' in msg
    assert "passing `format`" not in msg and "dayfirst" not in msg and "ISO8601'" not in msg


def test_numbers_in_a_datetime_column_are_refused_by_name():
    col = Column("dob", "datetime", lower="1930-01-01", upper="2010-12-31")
    with pytest.raises(SchemaError, match=r"'dob': holds numbers"):
        Schema([col]).validate(_one(col, [1.0e9, 1.1e9]))


def test_values_finer_than_the_resolution_are_refused_with_the_resolution_named():
    col = Column("dob", "datetime", lower="1930-01-01", upper="2010-12-31")
    with pytest.raises(SchemaError, match=r"'dob'.*resolution is 'day'.*1983-09-25 20:29:43"):
        Schema([col]).validate(_one(col, pd.to_datetime(["1983-09-25 20:29:43", "1990-01-01"], format="ISO8601")))


def test_out_of_bounds_datetimes_are_shown_as_iso_dates_never_epoch_seconds():
    col = Column("dob", "datetime", lower="1930-01-01", upper="2010-12-31")
    with pytest.raises(SchemaError) as e:
        Schema([col]).validate(_one(col, pd.to_datetime(["1920-05-01", "1990-01-01"])))
    msg = str(e.value)
    assert "[1930-01-01, 2010-12-31]" in msg and "1920-05-01" in msg
    assert "e+" not in msg and "-1262304000" not in msg


def test_clipping_datetimes_keeps_them_datetimes():
    col = Column("dob", "datetime", lower="1930-01-01", upper="2010-12-31")
    with pytest.warns(UserWarning, match=r"clipped"):
        out = Schema([col]).validate(_one(col, pd.to_datetime(["1920-05-01", "1990-01-01"])), out_of_bounds="clip")
    assert out["dob"].iloc[0] == pd.Timestamp("1930-01-01")


def test_iso_date_text_from_a_csv_without_a_schema_is_inferred_as_dates_written_back_as_text():
    df = pd.read_csv(io.StringIO(_one(Column("d", "categorical", categories=["x"]),
                                      _dates().strftime("%Y-%m-%d")).to_csv(index=False)))
    with pytest.warns(UserWarning, match="NOT covered by differential privacy"):
        schema = Schema.infer(df)
    col = schema["d"]
    assert (col.kind, col.resolution, col.dtype) == ("datetime", "day", "string")
    fake, _ = _sample(schema, df)
    assert fake["d"].str.fullmatch(r"\d{4}-\d{2}-\d{2}").all() and fake["d"].nunique() > 50


@pytest.mark.parametrize("spec, match", [
    ({"type": "datetime", "lower": "2000-01-01", "upper": "2001-01-01", "tz": "Mars/Olympus"}, "unknown time zone"),
    ({"type": "datetime", "lower": "2000-01-01", "upper": "2001-01-01", "resolution": "fortnight"},
     "unknown resolution"),
    ({"type": "datetime", "lower": "2000-01-01", "upper": "2001-01-01", "dtype": "int"}, "'dtype'"),
    ({"type": "numerical", "lower": 0, "upper": 1, "resolution": "day"}, "datetime columns only"),
    ({"type": "datetime", "lowr": "2000-01-01", "upper": "2001-01-01"}, r"unknown key\(s\) \['lowr'\]"),
    ({"type": "datetime", "lower": "2000-01-01 12:00", "upper": "2000-01-01 18:00", "resolution": "day"},
     "no whole day"),
])
def test_malformed_datetime_descriptions_name_the_column_and_key(spec, match):
    with pytest.raises(SchemaError, match=match):
        Schema.from_dict({"columns": {"x": spec}})


def test_an_integer_column_whose_bounds_hold_no_whole_number_is_refused():
    """No value could ever pass: refused when the schema is read, not at every fit."""
    with pytest.raises(SchemaError, match=r"'x': an integer column, but no whole number lies between the bounds "
                                          r"0.5 and 0.7"):
        Schema.from_dict({"columns": {"x": {"type": "numerical", "lower": 0.5, "upper": 0.7, "integer": True}}})
    assert Schema.from_dict({"columns": {"x": {"type": "numerical", "lower": 0.5, "upper": 1, "integer": True}}})


# ------------------------------------------------------------------------------------------- privacy settings
def test_epsilon_true_is_refused():
    with pytest.raises(ConfigError, match="epsilon must be a positive number"):
        sz.make("mst", epsilon=True)


def test_epsilon_as_text_is_refused():
    with pytest.raises(ConfigError, match="epsilon"):
        sz.make("mst", epsilon="1")


def test_delta_that_gives_no_guarantee_is_refused_before_any_budget_is_spent():
    with pytest.raises(ConfigError, match="delta=0.5 gives no meaningful guarantee"):
        sz.make("mst", delta=0.5)
    with pytest.raises(ConfigError, match="delta"):
        sz.dp_schema(pd.DataFrame({"a": [1.0, 2.0]}), epsilon=1.0, delta=0.2)


def test_delta_not_small_warns_before_the_fit():
    with pytest.warns(PrivacySettingsWarning, match=r"delta=0.01 is not small"):
        sz.make("mst", delta=0.01)


def test_the_readmes_delta_passes_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacySettingsWarning)
        sz.make("mst", epsilon=1.0, delta=1e-5)


def test_one_row_table_fits_and_warns_from_the_dp_row_estimate():
    df, schema = make_demo(n=1, seed=0)
    with pytest.warns(PrivacySettingsWarning, match=r"rows \(DP estimate\): far too few rows"):
        sz.make("mst", epsilon=1.0, schema=schema).fit(df)


@pytest.mark.parametrize("preset", ["dp-tvae", "dp-ctgan"])
def test_a_tiny_table_warns_through_a_record_models_noisy_count(preset):
    # a record model's count takes 2 % of the budget (sigma about 40 at epsilon 1), so a 30-row table's
    # estimate lands above 50 a third of the time and went unwarned; the warning now reads the count's noise.
    # Replayed noise seeds 4-7 give estimates on both sides of 50 (dp-tvae 42, 58, 21, 63; dp-ctgan 53, 85, 0, 96,
    # its count released with the marginal start's statistics)
    from synthzoo.models import CTGAN, TVAE

    df, schema = make_demo(n=30, seed=0)
    params = dict((TVAE if preset == "dp-tvae" else CTGAN)._test_params, epochs=1)
    for noise_seed in range(4, 8):
        with pytest.warns(PrivacySettingsWarning, match=r"far too few rows|may have fewer than 50 rows"):
            sz.make(preset, epsilon=1.0, schema=schema, model=params, noise_seed=noise_seed).fit(df)


def test_sample_without_n_refuses_a_dp_estimate_of_no_rows(monkeypatch):
    df, schema = make_demo(n=300, seed=0)
    s = sz.make("mst", epsilon=1.0, schema=schema).fit(df)
    s.n_estimate_ = 0.0  # what the noise makes of a 10-row table's count in about half the fits
    with pytest.raises(ConfigError, match="estimate of the number of records is 0 .*pass n"):
        s.sample()
    assert len(s.sample(5)) == 5


def test_two_row_non_private_table_warns_from_the_exact_count_and_says_so():
    df, schema = make_demo(n=2, seed=0)
    with pytest.warns(PrivacySettingsWarning, match=r"about 2 rows \(exact count, non-private run\)"):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="epsilon=None")
            sz.make("mst", epsilon=None, schema=schema).fit(df)


def test_epsilon_below_what_the_table_carries_warns():
    # the check reads the DP row count: with secret noise it warns here in about 19 fits of 20 (the
    # estimate can land above the noise mass), so the test replays its noise (test-only noise_seed)
    df, schema = make_demo(n=1500, seed=0)
    with pytest.warns(PrivacySettingsWarning, match=r"epsilon=0.01 is below what this table carries"):
        sz.make("mst", epsilon=0.01, schema=schema, noise_seed=0).fit(df)


def test_delta_large_against_the_dp_row_count_warns_after_the_fit():
    df, schema = make_demo(n=3000, seed=0)
    with pytest.warns(PrivacySettingsWarning, match=r"delta=0.001 is not small against this table's about"):
        sz.make("mst", epsilon=1.0, delta=1e-3, schema=schema).fit(df)


def test_dp_schema_refuses_epsilon_true():
    with pytest.raises(ConfigError, match="epsilon"):
        sz.dp_schema(pd.DataFrame({"a": [1.0, 2.0]}), epsilon=True)


# ------------------------------------------------------------------- rows added from a newcomer's pass
def test_iso_bounds_next_to_a_format_load_so_a_saved_model_with_a_format_loads(tmp_path):
    # a schema writes its bounds as ISO text; reading them back must not demand the data's format
    col = Column("d", "datetime", lower="01/01/1980", upper="31/12/2000", format="%d/%m/%Y", dtype="string")
    again = Schema.from_dict(Schema([col]).to_dict())["d"]
    assert (again.lower, again.upper, again.resolution) == (col.lower, col.upper, "day")
    df = _one(col, ["25/09/1983", "01/02/1990", "13/12/1999"] * 100)
    fake, synth = _sample(Schema([col]), df)
    synth.save(tmp_path / "m.szm")
    back = sz.Synthesizer.load(tmp_path / "m.szm").sample(50, seed=1)
    assert back["d"].str.fullmatch(r"\d{2}/\d{2}/\d{4}").all()


def test_a_date_beyond_pandas_range_is_a_clear_out_of_bounds_error_then_clips():
    col = Column("d", "datetime", lower="1980-01-01", upper="2000-12-31")
    df = _one(col, ["1990-01-01"] * 50 + ["9999-12-31"])
    with pytest.raises(SchemaError, match=r"column 'd': 1 value\(s\) outside the public bounds \[1980-01-01, "
                                          r"2000-12-31\] \(e.g. 9999-12-31\)"):
        _sample(Schema([col]), df)
    fake, _ = _sample(Schema([col]), df, out_of_bounds="clip")
    assert fake["d"].max() <= pd.Timestamp("2000-12-31")


def test_year_month_bounds_without_format_are_refused_with_the_format_to_declare():
    with pytest.raises(SchemaError, match=r"'lower' bound '1980-01' is a year or year-month.*\"%Y-%m\""):
        Column("m", "datetime", lower="1980-01", upper="2000-12")
    col = Column("m", "datetime", lower="1980-01", upper="2000-12", format="%Y-%m", dtype="string")
    fake, _ = _sample(Schema([col]), _one(col, ["1996-12", "1992-09", "1990-03"] * 100))
    assert fake["m"].str.fullmatch(r"\d{4}-\d{2}").all()


def test_zone_aware_values_under_a_schema_without_tz_warn_that_they_come_back_as_utc():
    col = Column("t", "datetime", lower="2020-01-01 00:00", upper="2021-01-01 00:00")
    t = (pd.Timestamp("2020-03-01 10:30") + pd.to_timedelta(np.arange(300), unit="h")).tz_localize("Europe/Berlin")
    synth = sz.Synthesizer(select="mst", model="pgm", epsilon=1.0, schema=Schema([col]), seed=0)
    with pytest.warns(UserWarning, match=r"time zone Europe/Berlin, but the schema gives the column no \"tz\""):
        synth.fit(_one(col, t))
    assert synth.sample(5)["t"].dt.tz is None


def test_undeclared_iso_date_text_is_refused_by_dp_schema_before_any_charge():
    df = pd.DataFrame({"dob": _dates().strftime("%Y-%m-%d"), "x": np.arange(400.0)})
    with pytest.raises(SchemaError, match=r"column 'dob': its text reads as ISO dates.*'resolution': 'day'"):
        sz.dp_schema(df, {"x": "numerical"}, epsilon=1.0, delta=1e-6)
    with pytest.warns(UserWarning, match=r"column 'dob': no \"resolution\" declared"):
        schema, _ = sz.dp_schema(df, {"x": "numerical", "dob": "datetime"}, epsilon=1.0, delta=1e-6)
    assert schema["dob"].resolution == "second"
    schema, _ = sz.dp_schema(df, {"x": "numerical", "dob": {"type": "datetime", "format": "%Y-%m-%d"}},
                             epsilon=1.0, delta=1e-6)
    assert schema["dob"].resolution == "day"  # the format's finest code, a public fact


@pytest.mark.parametrize("epsilon", [1e-4, 3e-3])
def test_epsilon_below_the_accountants_floor_is_refused(epsilon):
    # every rho under ~1e-9 converts to epsilon 0 or the RDP orders' floor (about 0.0035 at delta 1e-5)
    with pytest.raises(ConfigError, match=r"below the smallest epsilon the RDP accountant can certify at "
                                          r"delta=1e-05 \(about 0.0035"):
        sz.make("mst", epsilon=epsilon)


def test_delta_zero_says_pure_dp_is_not_offered():
    with pytest.raises(ConfigError, match=r"pure DP \(delta=0\) is not offered"):
        sz.make("mst", epsilon=1.0, delta=0)


def test_a_schema_file_that_is_not_json_names_the_file_and_line(tmp_path):
    p = tmp_path / "schema.json"
    p.write_text('{"columns": {"a": {"type": "numerical", "lower": 0, "upper": 1},}}')
    with pytest.raises(SchemaError, match=r"schema file '.*schema.json' is not valid JSON: .* line 1, column"):
        Schema.from_json(p)


def test_an_empty_or_truncated_schema_file_is_named_as_such(tmp_path):
    # both said "is not valid JSON: Expecting value at line 1, column 1" (or a column mid-document)
    p = tmp_path / "schema.json"
    p.write_text("")
    with pytest.raises(SchemaError, match=r"schema file '.*schema.json' is empty \(0 bytes\)"):
        Schema.from_json(p)
    p.write_text('{"columns": {"a": {"type": "numerical", "lower": 0, "up')
    with pytest.raises(SchemaError, match=r"schema file '.*schema.json' ends in the middle of its JSON document"):
        Schema.from_json(p)


@pytest.mark.parametrize("make, match", [
    (lambda d: d, "is a directory, not a JSON file"),
    (lambda d: (d / "deep.json").write_text("[" * 200_000 + "]" * 200_000) and d / "deep.json",
     "is nested too deeply"),
    (lambda d: (d / "big.json").write_text('{"columns": ' + "9" * 5000 + "}") and d / "big.json",
     r"holds an integer too long to read \(value has 5000 digits\)"),
    (lambda d: "/dev/zero", "holds more than max_bytes=67,108,864 bytes; not read"),
])
def test_a_schema_path_that_is_no_schema_file_is_named_not_a_traceback(tmp_path, make, match):
    with pytest.raises(SchemaError, match=match):
        Schema.from_json(make(tmp_path))


def test_a_model_file_with_an_integer_too_long_to_read_is_a_config_error(tmp_path):
    df, schema = make_demo(n=200, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = sz.make("mst", epsilon=None, schema=schema).fit(df)
    path = tmp_path / "m.json"
    s.save(path)
    path.write_text(path.read_text().replace('"seed": 0', '"seed": ' + "9" * 5000, 1))
    with pytest.raises(ConfigError, match=r"not a synthzoo model file \(it holds an integer too long to read"):
        sz.Synthesizer.load(path)


def test_out_of_bounds_warning_of_an_evaluation_shows_dates_not_epoch_seconds():
    schema = Schema([Column("d", "datetime", lower="1980-01-01", upper="2000-12-31")])
    real = pd.DataFrame({"d": pd.to_datetime(["1990-01-01", "1995-06-01"] * 50)})
    fake = real.copy()
    fake.loc[0, "d"] = pd.Timestamp("2010-01-01")
    with pytest.warns(UserWarning, match=r"bounds \[1980-01-01, 2000-12-31\] \(e.g. 2010-01-01\)"):
        sz.evaluate(real, fake, schema=schema, metrics="tvd_1way")


def test_python_date_objects_are_inferred_as_dates_and_come_back_as_dates():
    import datetime as dt

    df = pd.DataFrame({"d": [dt.date(1990, 1, 1) + dt.timedelta(days=37 * i) for i in range(200)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert (schema["d"].kind, schema["d"].resolution) == ("datetime", "day")
    fake, _ = _sample(schema, df)
    assert fake["d"].dtype == np.dtype("datetime64[ns]") and (fake["d"] == fake["d"].dt.normalize()).all()


def test_a_mixed_offset_warning_is_said_once_per_fit():
    t = pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(300) * 86400 + 3600, unit="s")
    text = t.tz_localize("Europe/Berlin").strftime("%Y-%m-%d %H:%M:%S%z").str.replace(r"(\d\d)(\d\d)$", r"\1:\2",
                                                                                       regex=True)
    col = Column("d", "datetime", lower="2019-12-31 00:00:00", upper="2021-01-02 00:00:00")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        sz.Synthesizer(select="mst", model="pgm", epsilon=1.0, schema=Schema([col]), seed=0).fit(_one(col, text))
    assert sum("different UTC offsets" in str(w.message) for w in seen) == 1


def test_iso_text_with_a_t_separator_comes_back_in_that_layout():
    # Schema.infer (not private; it reads the frame anyway) keeps the 'T' layout as the column's format;
    # output used to come back with a space: '2020-01-01 10:00:10'
    df = pd.DataFrame({"t": ["2020-01-01T10:00:00", "2021-05-03T11:30:15", None, "2022-07-09T00:00:01"] * 50,
                       "x": [1.0, 2.0, 3.0, 4.0] * 50})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = sz.Schema.infer(df)
        out = sz.make("mst", epsilon=None, schema=schema, seed=0).fit(df).sample(50, seed=1)["t"].dropna()
    assert schema["t"].format == "%Y-%m-%dT%H:%M:%S"
    assert out.str.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}").all() and len(out)
    assert sz.Schema.from_dict(schema.to_dict())["t"].to_dict() == schema["t"].to_dict()
    # a mix of layouts keeps the default (no format read from some of the values)
    mixed = pd.DataFrame({"t": ["2020-01-01 10:00:00", "2021-05-03T11:30:00"] * 5})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert sz.Schema.infer(mixed)["t"].format is None


def test_a_pandas_category_column_comes_back_as_a_category_column():
    # Schema.infer recorded only the categories: the release came back as text ('str'), not 'category'
    df = pd.DataFrame({"c": pd.Categorical(np.random.default_rng(0).choice(["a", "b", "c"], 300)),
                       "x": np.arange(300.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["c"].dtype == "category"
    fake, _ = _sample(schema, df)
    assert isinstance(fake["c"].dtype, pd.CategoricalDtype) and list(fake["c"].cat.categories) == ["a", "b", "c"]
    assert Schema.from_dict(schema.to_dict())["c"].dtype == "category"


def test_day_month_year_text_is_inferred_as_dates_and_comes_back_in_its_layout():
    # Schema.infer took '25/10/2018' text as a categorical column of 3,000 categories (one per date)
    df = pd.DataFrame({"joined": _dates().strftime("%d/%m/%Y"), "x": np.arange(400.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    col = schema["joined"]
    assert (col.kind, col.format, col.resolution) == ("datetime", "%d/%m/%Y", "day")
    fake, synth = _sample(schema, df)
    assert fake["joined"].str.fullmatch(r"\d{2}/\d{2}/\d{4}").all()
    assert pd.to_datetime(fake["joined"], format="%d/%m/%Y").between("1950-01-01", "2005-01-01").all()
    # month first is told by a second field above 12; every value fitting both reads day first, with a warning
    assert sz.core.schema.date_layout(pd.Series(["12/31/2020 14:05", "01/02/2021 09:00"])) == "%m/%d/%Y %H:%M"
    with pytest.warns(UserWarning, match=r"read day first \(%d\.%m\.%Y\); if the month comes first"):
        assert sz.core.schema.date_layout(pd.Series(["01.02.2020", "03.04.2021"], name="d")) == "%d.%m.%Y"
    assert sz.core.schema.date_layout(pd.Series(["12/31/2020", "31/12/2020"])) is None  # neither layout fits all


def test_undeclared_day_month_year_text_is_refused_by_dp_schema_with_the_format_to_declare():
    # pandas' text dtype, as read_csv gives it (pandas >= 3; 'string' on pandas 2)
    df = pd.DataFrame({"joined": pd.Series(_dates().strftime("%d/%m/%Y"), dtype="string"), "x": np.arange(400.0)})
    with pytest.raises(SchemaError, match=r"column 'joined': its text reads as dates.*'format': '%d/%m/%Y'"):
        sz.dp_schema(df, {"x": "numerical"}, epsilon=1.0, delta=1e-6)
    # declared with its layout, the column is measured as dates and comes back as text in that layout (from the
    # description: a private run reads no output type from the frame's dtype)
    schema, ledger = sz.dp_schema(df, {"x": "numerical", "joined": {"type": "datetime", "format": "%d/%m/%Y"}},
                                  epsilon=1.0, delta=1e-6)
    assert schema["joined"].dtype == "string"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = sz.Synthesizer(select="mst", model="pgm", epsilon=1.0, schema=schema, schema_ledger=ledger, seed=0)
        fake = synth.fit(sz.conform(df, schema)).sample(200, seed=1)
    assert fake["joined"].dropna().str.fullmatch(r"\d{2}/\d{2}/\d{4}").all()


def test_a_text_column_of_one_value_per_row_is_warned_about_when_inferred():
    # names were taken as 3,000 categories without a word, and a release printed real names
    df = pd.DataFrame({"name": [f"person{i}" for i in range(300)], "x": np.arange(300.0)})
    with pytest.warns(sz.core.PrivateSchemaWarning, match=r"column .name.: 300 distinct values taken as categories"):
        Schema.infer(df)


def test_a_pandas_category_column_over_integers_keeps_integer_categories():
    # it came back as a category column over the texts '1', '2', '3'
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"c": pd.Categorical(rng.choice([1, 2, 3, None], 300)), "x": np.arange(300.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["c"].dtype == "category[int]"
    schema = Schema.from_dict(schema.to_dict())
    fake, _ = _sample(schema, df)
    cats = fake["c"].cat.categories
    assert list(cats) == [1, 2, 3] and pd.api.types.is_integer_dtype(cats.dtype)
    assert fake["c"].isna().any() and set(fake["c"].dropna()) <= {1, 2, 3}
    with pytest.raises(SchemaError, match="'c'.*integer categories"):
        Schema.from_dict({"columns": {"c": {"type": "categorical", "categories": ["a"], "dtype": "category[int]"}}})


def test_an_ordered_category_column_keeps_its_order(tmp_path):
    # a pandas ordered categorical ('lo' < 'mid' < 'hi') came back unordered, its categories sorted ('hi', 'lo',
    # 'mid'): the schema had no word for order; "ordered": true keeps the listed order through fit, sample,
    # save and load
    rng = np.random.default_rng(0)
    level = pd.Categorical(rng.choice(["lo", "mid", "hi"], 300), categories=["lo", "mid", "hi"], ordered=True)
    size = pd.Categorical(rng.choice([3, 1, 2], 300), categories=[3, 1, 2], ordered=True)
    df = pd.DataFrame({"level": level, "size": size, "x": np.arange(300.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["level"].ordered and schema["level"].categories == ["lo", "mid", "hi"]
    assert schema["size"].ordered and schema["size"].dtype == "category[int]" and schema["size"].categories == [
        "3", "1", "2"]
    assert schema.to_dict()["columns"]["level"]["ordered"] is True
    schema = Schema.from_dict(schema.to_dict())
    fake, synth = _sample(schema, df)
    for col, order in (("level", ["lo", "mid", "hi"]), ("size", [3, 1, 2])):
        assert fake[col].cat.ordered and list(fake[col].cat.categories) == order, col
    assert (fake["level"] >= "mid").any()  # comparisons follow the order
    synth.save(tmp_path / "m.szm")
    again = sz.Synthesizer.load(tmp_path / "m.szm").sample(300, seed=1)
    pd.testing.assert_frame_equal(again, fake)
    # unordered text stays as it was
    assert not Schema.infer(df.assign(level=df["level"].astype(str)))["level"].ordered
    # only where a category column can carry it, and a boolean
    for spec, match in (({"type": "numerical", "lower": 0, "upper": 1, "ordered": True}, "'ordered' applies to"),
                        ({"type": "categorical", "categories": ["a", "b"], "dtype": "str", "ordered": True},
                         "of dtype 'str'"),
                        ({"type": "categorical", "categories": ["a", "b"], "ordered": "yes"}, "true or false")):
        with pytest.raises(SchemaError, match=match):
            Schema.from_dict({"columns": {"c": spec}})
    # dp_schema: an order needs the public list (measured categories have none)
    with pytest.raises(SchemaError, match="'level': 'ordered' needs the column's public 'categories'"):
        sz.dp_schema(df, {"level": {"type": "categorical", "ordered": True}, "size": "categorical",
                          "x": "numerical"}, epsilon=1.0, delta=1e-6)
    kinds = {"level": {"type": "categorical", "categories": ["lo", "mid", "hi"], "ordered": True},
             "size": {"type": "categorical", "categories": ["3", "1", "2"]}, "x": "numerical"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dp, _ = sz.dp_schema(df, kinds, epsilon=1.0, delta=1e-6)
    assert dp["level"].ordered and dp["level"].categories == ["lo", "mid", "hi"]


def test_a_column_named_twice_is_an_error_naming_it(tmp_path, capsys):
    # Python: Schema.infer raised AttributeError ('DataFrame' object has no attribute 'dtype'), validate said only
    # "duplicate column names"; the CLI read the header 'age,x,age' as 'age', 'x', 'age.1' and fitted silently
    from synthzoo.cli import main

    df = pd.DataFrame(np.arange(30.0).reshape(10, 3), columns=["age", "x", "age"])
    with pytest.raises(SchemaError, match="named 'age' more than once"):
        Schema.infer(df)
    schema = Schema([Column("age", "numerical", lower=0, upper=30), Column("x", "numerical", lower=0, upper=30)])
    with pytest.raises(SchemaError, match="named 'age' more than once"):
        schema.validate(df)
    with pytest.raises(SchemaError, match="named 'age' more than once"):
        sz.dp_schema(df, {"age": "numerical", "x": "numerical"}, epsilon=1.0, delta=1e-6)
    (tmp_path / "d.csv").write_text("age,x,age\n" + "".join(f"{i},{i},{i}\n" for i in range(20)))
    assert main(["fit", str(tmp_path / "d.csv"), "--epsilon", "none", "--out", str(tmp_path / "m.szm")]) == 2
    assert "names column(s) ['age'] more than once in its header" in capsys.readouterr().err


def test_iso_text_with_utc_offsets_keeps_an_offset_when_inferred():
    # to_csv of a tz-aware column, read back without a schema: the inferred schema had no "tz", every fit warned
    # (twice), and the release came back as naive UTC text, with no offset to say so
    paris = pd.DataFrame({"t": pd.date_range("2023-03-01", periods=60, freq="17h", tz="Europe/Paris"),
                          "x": np.arange(60.0)})
    buf = io.StringIO()
    paris.to_csv(buf, index=False)
    buf.seek(0)
    df = pd.read_csv(buf)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        schema = Schema.infer(df)
        fake = sz.make("mst", epsilon=None, schema=schema, seed=0).fit(df).sample(20, seed=1)
    assert schema["t"].tz == "UTC"  # summer and winter time: several offsets
    assert not [w for w in seen if issubclass(w.category, sz.core.errors.TimeZoneWarning)]
    assert fake["t"].str.endswith("+00:00").all()
    one = pd.DataFrame({"t": ["2023-01-01 00:00:00+01:00", "2023-01-02 10:00:00+01:00"] * 5})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert Schema.infer(one)["t"].tz == "+01:00"


def test_decimal_commas_read_as_text_are_named_when_inferred():
    # without a schema, a column of '1234,5' became hundreds of categories with only the max_categories warning
    df = pd.DataFrame({"income": [f"{1000 + 7 * i},{i % 10}" for i in range(80)], "n": np.arange(80.0)})
    with pytest.warns(UserWarning, match=r"column 'income': its text reads as numbers with a decimal comma.*"
                                         r"decimal=','.*--decimal ','"):
        Schema.infer(df)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", PrivateSchemaWarning)
        Schema.infer(pd.DataFrame({"c": ["a,b", "c", "1,5"] * 5}))  # mixed text: no such warning
    with pytest.raises(SchemaError, match="'e': every value is missing.*drop it"):
        Schema.infer(pd.DataFrame({"e": [np.nan, None] * 3, "x": np.arange(6.0)}).astype({"e": object}))


@pytest.mark.parametrize("epsilon", [100.0, 1e6])
def test_a_huge_epsilon_is_warned_about(epsilon):
    # epsilon=1e300 fitted without a word (rho 9e299 in the report); now past EPSILON_MAX, below
    shown = re.escape(f"{epsilon:g}")
    with pytest.warns(PrivacySettingsWarning, match=rf"epsilon={shown} is very large.*epsilon=None"):
        sz.make("mst", epsilon=epsilon)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacySettingsWarning)
        sz.make("mst", epsilon=20.0)  # large but deployed


def test_an_epsilon_past_what_a_model_file_can_state_is_refused_and_the_largest_allowed_loads(tmp_path):
    # epsilon=1e300 was warned about, fitted and saved, but the file's charge (rho 2.3e297) was past the
    # check of untrusted files (1e6), so load refused what save wrote
    with pytest.raises(ConfigError, match=r"epsilon=1e\+300 is past 1e\+06.*epsilon=None"):
        sz.make("mst", epsilon=1e300)
    df, schema = sz.datasets.make_demo(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = sz.make("mst", epsilon=1e6, schema=schema, seed=0).fit(df)
        synth.save(tmp_path / "m.szm")
        again = sz.Synthesizer.load(tmp_path / "m.szm")
    pd.testing.assert_frame_equal(again.sample(50, seed=1), synth.sample(50, seed=1))


def test_amounts_come_back_at_their_decimal_places():
    # a column of amounts with 2 decimals came back as floats of 15-17 digits (5.987654321098765)
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"amount": np.round(rng.lognormal(3, 1, 400), 2), "ratio": rng.normal(size=400)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["amount"].decimals == 2 and schema["ratio"].decimals is None
    schema = Schema.from_dict(schema.to_dict())
    fake, _ = _sample(schema, df)
    assert np.allclose(fake["amount"], fake["amount"].round(2), rtol=0, atol=1e-9)
    assert not np.allclose(fake["ratio"], fake["ratio"].round(2))
    # a declared precision travels through dp_schema; bounds with more decimals still hold the rounded values
    col = Column("x", "numerical", lower=0.005, upper=1.0049, decimals=2)
    assert col.typed([0.004, 1.0049, 0.5]).between(0.005, 1.0049).all()
    kinds = {"amount": {"type": "numerical", "decimals": 2}, "ratio": "numerical"}
    measured, _ = sz.dp_schema(df, kinds, epsilon=2.0, delta=1e-6)
    assert measured["amount"].decimals == 2
    with pytest.raises(SchemaError, match="'n': 'decimals' applies to numerical columns that are not integers"):
        Column("n", "numerical", lower=0, upper=9, integer=True, decimals=1)


def test_small_magnitude_values_are_not_read_as_one_decimal():
    # Schema.infer read "decimals": 1 for a column of values below 5e-5 (p-values, lengths in metres):
    # its float tolerance was absolute, so every value rounded to 0.0 and the release was the lower bound
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"pval": rng.random(500) * 4e-5, "wl_m": (400 + rng.random(500) * 300).round(1) * 1e-9,
                       "tiny2": np.round(rng.random(500), 2) * 1e-3, "f32": np.round(rng.random(500), 2).astype("float32"),
                       "noisy": np.round(rng.random(500), 1) * 3})  # 0.1 * 3 == 0.30000000000000004
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["pval"].decimals is None and schema["wl_m"].decimals is None
    assert schema["tiny2"].decimals == 5 and schema["f32"].decimals == 2 and schema["noisy"].decimals == 1
    fake, _ = _sample(schema, df)
    assert fake["pval"].nunique() > 50 and fake["wl_m"].nunique() > 50


@pytest.mark.parametrize("odd", ["1983-02-30", "unknown"])
def test_one_value_that_is_not_a_date_is_named_by_infer(odd):
    # a text column of ISO dates with one impossible date or placeholder was silently taken as hundreds of
    # categories (the release printing the rows' own dates as text); the only warning was about their number
    rng = np.random.default_rng(0)
    dob = (pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 20000, 300), unit="D")).strftime("%Y-%m-%d")
    df = pd.DataFrame({"dob": np.array(dob, dtype=object), "x": np.arange(300)})
    df.loc[5, "dob"] = odd
    with pytest.warns(UserWarning, match=rf"column 'dob': its text reads as ISO dates except 1 value\(s\), e\.g\. "
                                         rf"\['{odd}'\], so it was taken as \d+ categories, not dates"):
        Schema.infer(df)
    with warnings.catch_warnings():  # all dates, or plain text: no such warning
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", category=PrivateSchemaWarning)
        Schema.infer(df.assign(dob=np.array(dob, dtype=object)))
        Schema.infer(df.assign(dob=["a", "b", "c"] * 100))


def test_thousands_separators_are_not_called_a_decimal_comma():
    # a column of '4,324' (grams with a thousands separator) was warned about as "numbers with a decimal comma",
    # and the --decimal ',' it suggested read every value as 4.324, 1000 times too small, without a word
    df = pd.DataFrame({"mass": [f"{v:,}" for v in range(1936, 6806, 61)], "n": np.arange(80.0)})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        Schema.infer(df)
    said = " ".join(str(w.message) for w in seen)
    assert "column 'mass': its text reads as numbers with a comma every three digits (e.g. '1,936')" in said
    assert "if the commas separate thousands, read the file with thousands=','" in said
    assert "reads as numbers with a decimal comma" not in said


def test_numbers_with_commas_for_thousands_and_a_decimal_point_are_named_as_such():
    # '40,123.45' was taken as 400 text categories with only the warning about too many distinct values
    df = pd.DataFrame({"pay": [f"{v:,.2f}" for v in np.linspace(900, 90_000, 400)]})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        Schema.infer(df)
    said = " ".join(str(w.message) for w in seen)
    assert ("column 'pay': its text reads as numbers with commas separating thousands (e.g. '1,123.31'), taken as "
            "400 categories; read the file with thousands=','") in said


def test_a_misnamed_column_is_shown_beside_the_one_it_replaces():
    # a typo in the schema (or ' age' read from a header with spaces) said only "the table lacks schema
    # column(s) ['bill_lenght_mm']", not which of the table's columns the schema did not describe
    schema = Schema.from_dict({"columns": {"bill_lenght_mm": {"type": "numerical", "lower": 0, "upper": 9},
                                           "sex": {"type": "categorical", "categories": ["f", "m"]}}})
    df = pd.DataFrame({"bill_length_mm": [1.0, 2.0], " sex": ["f", "m"]})
    with pytest.raises(SchemaError, match=r"the table lacks schema column\(s\) \['bill_lenght_mm', 'sex'\] and has "
                                          r"column\(s\) \['bill_length_mm', ' sex'\] that the schema does not describe"
                                          r".*' sex' is 'sex' with spaces around it"):
        schema.validate(df)


def test_a_column_described_twice_in_a_schema_file_is_refused(tmp_path):
    # json.loads keeps the last of two equal keys: a column pasted twice with different descriptions was
    # silently read with the second one
    p = tmp_path / "s.json"
    p.write_text('{"columns": {"sex": {"type": "categorical", "categories": ["f", "m"]},\n'
                 ' "sex": {"type": "categorical", "categories": ["f", "m", "x"], "missing": true}}}')
    with pytest.raises(SchemaError, match=r"names 'sex' twice in one JSON object"):
        Schema.from_json(p)


def test_numeric_widths_and_nullable_flavours_come_back_as_they_went_in(tmp_path):
    # uint8, int32, float32 and pandas' nullable Int16 came back as int64 / Int64 / float64: the schema had no
    # width for a numerical column. "dtype" now declares it (Schema.infer records the frame's where the default
    # would change it), through fit, sample, save and load
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"u8": rng.integers(0, 256, n).astype("uint8"),
                       "i32": (rng.integers(-50_000, 50_000, n)).astype("int32"),
                       "f32": rng.normal(10, 3, n).round(2).astype("float32"),
                       "n16": pd.array(np.where(rng.random(n) < 0.1, None, rng.integers(-999, 999, n)), dtype="Int16"),
                       "nf": pd.array(np.where(rng.random(n) < 0.1, None, rng.normal(0, 1, n)), dtype="Float64"),
                       "small": rng.integers(0, 4, n).astype("int8"),  # few values: categorical, of width int8
                       "i64": rng.integers(0, 10 ** 6, n), "f64": rng.normal(0, 1, n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert {c.name: c.dtype for c in schema} == {"u8": "uint8", "i32": "int32", "f32": "float32", "n16": "Int16",
                                                 "nf": "Float64", "small": "int8", "i64": None, "f64": None}
    assert schema["small"].kind == "categorical" and schema["u8"].integer
    schema = Schema.from_dict(schema.to_dict())
    fake, synth = _sample(schema, df)
    assert fake.dtypes.to_dict() == df.dtypes.to_dict()
    synth.save(tmp_path / "m.szm")
    pd.testing.assert_frame_equal(sz.Synthesizer.load(tmp_path / "m.szm").sample(300, seed=1), fake)
    # declarations a width cannot hold are errors naming the column
    for spec, match in (({"type": "numerical", "lower": 0, "upper": 300, "dtype": "uint8"},
                         r"'c': bounds \[0, 300\] exceed what dtype 'uint8' holds \(\[0, 255\]\)"),
                        ({"type": "numerical", "lower": 0, "upper": 3, "dtype": "int8", "integer": False},
                         "dtype 'int8' holds whole numbers only"),
                        ({"type": "numerical", "lower": 0, "upper": 3, "dtype": "int8", "missing": True},
                         "cannot hold missing values.*declare 'Int8'"),
                        ({"type": "categorical", "categories": [-1, 2], "dtype": "uint16"},
                         "categories from -1 to 2 exceed what dtype 'uint16' holds"),
                        ({"type": "numerical", "lower": 0, "upper": 3, "dtype": "complex128"}, "must be one of")):
        with pytest.raises(SchemaError, match=match):
            Schema.from_dict({"columns": {"c": spec}})
    assert Column.from_spec("c", {"type": "numerical", "lower": 0, "upper": 3, "dtype": "int16"}).integer
    assert Column("c", "numerical", lower=0, upper=1, dtype="float32", missing=True).output_dtype == np.float32


def test_dp_schema_takes_a_declared_width_as_public_knowledge():
    # a declared integer width says integer (no dtype warning), numpy's says no missing values (nothing measured),
    # and its range bounds the measured one; a missing value in such a column is an error before any charge
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"u8": rng.integers(0, 256, 3000).astype("uint8"), "x": rng.normal(0, 1, 3000)})
    kinds = {"u8": {"type": "numerical", "dtype": "uint8"}, "x": "numerical"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "integer dtype, but ..." warning
        schema, _ = sz.dp_schema(df, kinds, epsilon=1.0, delta=1e-6)
    col = schema["u8"]
    assert col.integer and not col.missing and col.dtype == "uint8"
    assert 0 <= col.lower and col.upper <= 255  # the noisy range, within the width (it reaches 256 unclipped)
    assert schema.meta["dp_schema"]["columns"]["u8"]["missing_given"]
    fake = sz.make("mst", epsilon=1.0, schema=schema, seed=0).fit(sz.conform(df, schema)).sample(200, seed=0)
    assert fake["u8"].dtype == np.uint8
    holed = df.assign(u8=df["u8"].astype(float).where(df["u8"] > 3))
    with pytest.raises(SchemaError, match="'u8': declared dtype 'uint8' holds no missing values.*'UInt8'"):
        sz.dp_schema(holed, kinds, epsilon=1.0, delta=1e-6)


# ------------------------------------------------------------------ numbers pandas types but we do not
@pytest.mark.parametrize("values, what", [
    (np.arange(40) + 1j, "complex"),
    (pd.to_timedelta(np.arange(40), unit="h"), "durations"),
    (pd.period_range("2020-01", periods=40, freq="M"), "periods"),
])
def test_complex_durations_and_periods_are_refused_naming_the_column(values, what):
    # complex numbers lost their imaginary part (numpy's ComplexWarning, nothing else), durations were read as
    # nanoseconds (a bound error quoting 7200000000 for 2 hours) and periods as ordinals (600 for 2020-01)
    col = Column("x", "numerical", lower=-1e12, upper=1e13)
    df = pd.DataFrame({"x": values})
    with pytest.raises(SchemaError, match=rf"column 'x': {what}") as err:
        Schema([col]).validate(df)
    assert "{" not in str(err.value) and ("df['x'].dt." in str(err.value)) == (what != "complex")
    if what != "periods":  # Schema.infer took them as numbers, or durations as text categories
        with pytest.raises(SchemaError, match=rf"column 'x': {what}"):
            Schema.infer(df)
        with pytest.raises(SchemaError, match=rf"column 'x': {what}"):  # before the schema's charge
            sz.dp_schema(df, kinds={"x": "numerical"}, epsilon=1.0, delta=1e-6)


@pytest.mark.parametrize("cell", [{"x": 1}, [1, 2], {"a"}], ids=["dict", "list", "set"])
@pytest.mark.parametrize("kind", ["categorical", "numerical"])
def test_a_list_or_dict_in_a_cell_is_refused_naming_the_column_before_any_charge(cell, kind):
    # a JSON field read as is: pandas' "TypeError: unhashable type: 'dict'" from deep inside Schema.infer and fit,
    # and dp_schema took "{'x': 1}" as a category, charged, and the fit on its schema then failed
    values = ["x", "y"] * 100 if kind == "categorical" else list(range(200))
    df = pd.DataFrame({"c": [cell if i == 7 else v for i, v in enumerate(values)]})
    what = rf"column 'c': holds {type(cell).__name__} values \(e.g. {re.escape(repr(cell))}\); each cell must be one"
    with pytest.raises(SchemaError, match=what):
        Schema.infer(df)
    spec = ({"type": "categorical", "categories": ["x", "y"]} if kind == "categorical"
            else {"type": "numerical", "lower": 0, "upper": 200, "integer": True})
    with pytest.raises(SchemaError, match=what):
        Schema.from_dict({"columns": {"c": spec}}).validate(df)
    if kind == "categorical":  # a numerical description of an object column is refused for its dtype already
        ledger = sz.PrivacyLedger(1.0, 1e-6)
        with pytest.raises(SchemaError, match=what):
            sz.dp_schema(df, kinds={"c": "categorical"}, ledger=ledger, share=1.0)
        assert ledger.charges == []


def test_decimal_objects_from_a_database_are_inferred_as_numbers():
    # pd.read_sql gives NUMERIC columns as Decimal objects: Schema.infer took them as 200 text categories
    from decimal import Decimal
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"amount": [Decimal(f"{x:.2f}") for x in rng.normal(100, 10, 200)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        col = Schema.infer(df)["amount"]
    assert col.kind == "numerical" and col.decimals == 2
    assert col.lower == float(min(df["amount"])) and col.upper == float(max(df["amount"]))
    fake, _ = _sample(Schema([col]), df)
    assert fake["amount"].dtype == np.float64 and fake["amount"].between(col.lower, col.upper).all()


def test_infinite_and_huge_floats_are_named_as_such_by_infer_and_a_span_past_float64_is_refused():
    # Schema.infer (what fit does without a schema) said "bounds must be finite" of a column holding inf, bounds
    # the user never gave; every float64 beyond 2^53 is whole, so it took a float column of values near 1e300 as
    # integers and refused its own schema ("integer bounds beyond +-2^53"); bounds whose span overflows (-1e308
    # to 1e308) fit, charged, and sampling failed on "non-finite values ... a model file with edited weights?"
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"h": rng.normal(size=300) * 1e300})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        col = Schema.infer(df)["h"]
    assert col.kind == "numerical" and not col.integer
    with pytest.raises(SchemaError, match=r"column 'h': 2 infinite value\(s\) \(inf or -inf\)"):
        Schema.infer(df.assign(h=df["h"].where(df.index > 1, np.inf)))
    fake, _ = _sample(Schema([col]), df)
    assert fake["h"].dtype == np.float64 and fake["h"].between(col.lower, col.upper).all()
    with pytest.raises(SchemaError, match=r"column 'h': bounds \[-1\.5e\+308, 1\.5e\+308\] span more than a float64"):
        Column("h", "numerical", lower=-1.5e308, upper=1.5e308)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert Schema.infer(pd.DataFrame({"i": np.arange(300) * 10}))["i"].integer  # whole numbers stay integers


def test_integer_codes_past_int64_come_back_as_text_not_an_overflow_at_sample():
    # 20-digit codes (card or account numbers) were typed 'int' by default: the fit charged, and sample failed
    # inside pandas with "OverflowError: Python int too large to convert to C long"
    codes = [str(10 ** 19 + i) for i in range(5)]
    df = pd.DataFrame({"card": np.random.default_rng(0).choice(codes, 300)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["card"].output_dtype == sz.core.schema._STR
    fake, _ = _sample(schema, df)
    assert set(fake["card"]) <= set(codes)
    with pytest.raises(SchemaError, match=r"column 'card': categories from 1 to 10000000000000000004 exceed what "
                                          r"dtype 'int' \(int64\) holds; declare dtype 'str'"):
        Column("card", "categorical", categories=["1", codes[-1]], dtype="int")


def test_a_pandas_category_column_keeps_its_unused_categories():
    # Schema.infer kept only the categories the rows use: the release's dtype lost 'unused' (unordered) and the top
    # level 'hi' of an ordered scale, so it differed from the frame's (concat, comparisons, .cat.codes)
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"c": pd.Categorical(rng.choice(["x", "y"], 300), categories=["y", "x", "unused"]),
                       "o": pd.Categorical(rng.choice(["lo", "mid"], 300), categories=["lo", "mid", "hi"],
                                           ordered=True)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["c"].categories == ["y", "x", "unused"] and schema["o"].categories == ["lo", "mid", "hi"]
    fake, _ = _sample(Schema.from_dict(schema.to_dict()), df)
    for c in df.columns:
        assert fake[c].dtype == df[c].dtype, c


def test_column_names_that_are_not_text_are_named_with_the_rename_to_do():
    # read_csv(header=None) numbers the columns 0, 1: beside a schema's "0", "1" the fit said the table "lacks schema
    # column(s) ['0', '1'] and has column(s) [0, 1]"; dp_schema on kinds_from_dtypes(df) said kinds "names column
    # '0', which the frame lacks"; and kinds_from_dtypes of a twice-named column failed inside pandas
    df = pd.read_csv(io.StringIO("1,a\n2,b\n3,a\n" * 50), header=None)
    schema = Schema.from_dict({"columns": {"0": {"type": "numerical", "lower": 0, "upper": 5, "integer": True},
                                           "1": {"type": "categorical", "categories": ["a", "b"]}}})
    what = r"column name\(s\) that are not text: 0, 1; name every column with text, e.g. df.columns = df.columns"
    for call in (lambda: sz.make("mst", epsilon=1.0, schema=schema).fit(df), lambda: Schema.infer(df),
                 lambda: sz.dp_schema(df, sz.kinds_from_dtypes(df), epsilon=1.0, delta=1e-6),
                 lambda: sz.evaluate(df, df, schema=schema)):
        with pytest.raises(SchemaError, match=what):
            call()
    with pytest.raises(SchemaError, match="column named 'a' more than once"):
        sz.kinds_from_dtypes(pd.DataFrame([[1, 2]], columns=["a", "a"]))
    fake, _ = _sample(schema, df.rename(columns=str))
    assert list(fake.columns) == ["0", "1"]


def test_zone_aware_datetime_objects_are_inferred_with_their_zone():
    # an object column of zone-aware datetimes (several zones keep pandas' object dtype; a driver's Python
    # datetimes) was inferred without a "tz": Schema.infer warned that "the schema gives the column no tz" -- the
    # schema it was writing -- and the release came back as naive UTC times; as for ISO text with offsets, one
    # zone is kept and several make UTC
    paris = [pd.Timestamp("2020-01-01", tz="Europe/Paris") + pd.Timedelta(hours=i) for i in range(300)]
    utc = [pd.Timestamp("2020-06-01", tz="UTC") + pd.Timedelta(hours=i) for i in range(300)]
    for values, zone in ((paris, "Europe/Paris"), (paris[::2] + utc[::2], "UTC")):
        df = pd.DataFrame({"d": pd.Series(values, dtype=object)})
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            warnings.simplefilter("ignore", PrivateSchemaWarning)
            schema = Schema.infer(df)
        assert schema["d"].tz == zone
        fake, _ = _sample(schema, df)
        assert str(fake["d"].dt.tz) == zone
        assert fake["d"].between(min(values), max(values)).all()


@pytest.mark.parametrize("values, what", [
    (pd.period_range("2020-01-01", periods=40, freq="D"), r"periods \(dtype period\[D\]\) are not datetimes; "
                                                          r"convert them first, e.g. df\['t'\].dt.to_timestamp\(\)"),
    (pd.to_timedelta(np.arange(40), unit="D"), r"durations \(dtype timedelta64\[\w+\]\) are not datetimes; add them "
                                               r"to a start date first"),
])
def test_periods_or_durations_in_a_datetime_column_are_named_as_such(values, what):
    # a datetime column of periods was refused as "40 value(s) that are not datetimes, e.g. ['2020-01-01', ...];
    # expected ISO 8601 text" -- valid ISO dates; of durations as "e.g. ['86400000000 microseconds', ...]"
    df = pd.DataFrame({"t": values})
    col = Column("t", "datetime", lower="2019-01-01", upper="2021-12-31")
    with pytest.raises(SchemaError, match=rf"column 't': {what}"):
        Schema([col]).validate(df)
    ledger = sz.PrivacyLedger(1.0, 1e-6)
    with pytest.raises(SchemaError, match=rf"column 't': {what}"):
        sz.dp_schema(df, kinds={"t": {"type": "datetime", "resolution": "day"}}, ledger=ledger, share=1.0)
    assert ledger.charges == []


def test_infinite_values_are_refused_by_dp_schema_before_any_charge():
    # dp_bounds refused them, but only when their column's turn came: the columns before it had been charged
    df = pd.DataFrame({"a": np.arange(300.0), "h": np.r_[np.inf, np.arange(299.0)]})
    ledger = sz.PrivacyLedger(1.0, 1e-6)
    with pytest.raises(SchemaError, match=r"column 'h': infinite values \(inf or -inf\) cannot be bounded"):
        sz.dp_schema(df, kinds={"a": "numerical", "h": "numerical"}, ledger=ledger, share=1.0)
    assert ledger.charges == []


@pytest.mark.parametrize("spec, other, match", [
    ({"type": "categorical", "dtype": "int"}, "__other__", r"measured categories need the catch-all '__other__' for "
                                                           r"the values they do not release, which dtype 'int' cannot"),
    ({"type": "categorical", "dtype": "int"}, None, r"dtype 'int' needs integer categories"),
    ({"type": "categorical", "dtype": "category[interval]"}, "__other__",
     r"measured categories need the catch-all '__other__' .* dtype 'category\[interval\]' cannot hold; list the "
     r"column's public categories in kinds$"),
    ({"type": "numerical", "integer": True, "decimals": 2}, "__other__", r"'decimals' applies to numerical columns "
                                                                         r"that are not integers"),
])
def test_a_description_dp_schema_cannot_build_is_refused_before_any_charge(spec, other, match):
    # such descriptions failed when the column was built, after every charge: an integer dtype over measured
    # categories never worked, the catch-all '__other__' being no integer
    df = pd.DataFrame({"a": np.arange(300.0), "c": ["x", "y", "3"] * 100 if spec.get("dtype") else np.arange(300)})
    ledger = sz.PrivacyLedger(1.0, 1e-6, reserved_delta=1e-7)
    with pytest.raises(SchemaError, match=rf"column 'c': {match}"):
        sz.dp_schema(df, kinds={"a": "numerical", "c": spec}, ledger=ledger, share=1.0, other=other)
    assert ledger.charges == []


def test_a_nullable_boolean_column_without_missing_values_comes_back_as_one(tmp_path):
    # Schema.infer kept convert_dtypes' string, Int64 and Float64, but a 'boolean' column with no missing value
    # came back as numpy's bool (the 'bool' dtype is nullable only where missing values may occur)
    df = pd.DataFrame({"b": pd.array(np.arange(300) % 3 == 0, dtype="boolean"), "x": np.arange(300.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["b"].dtype == "boolean"
    fake, synth = _sample(Schema.from_dict(schema.to_dict()), df)
    assert fake["b"].dtype == pd.BooleanDtype() and fake["b"].notna().all()
    synth.save(tmp_path / "m.szm")
    pd.testing.assert_frame_equal(sz.Synthesizer.load(tmp_path / "m.szm").sample(300, seed=1), fake)
    with pytest.raises(SchemaError, match="column 'c': dtype 'boolean' needs the categories True/False"):
        Column("c", "categorical", categories=["a", "b"], dtype="boolean")


def test_float32_values_match_their_categories_as_written():
    # pandas hands out a float32 column's values widened to float64: 1.1 became '1.100000023841858', not among a
    # schema's '1.1' (a SchemaError for a value the user did write), and Schema.infer of a float32 category
    # column released '1.100000023841858'
    values = np.array([1.1, 2.2, 3.3], dtype="float32")[np.arange(300) % 3]
    schema = Schema([Column("c", "categorical", categories=["1.1", "2.2", "3.3"])])
    for col in (values, pd.array(values, dtype="Float32")):
        fake, _ = _sample(schema, pd.DataFrame({"c": col}))
        assert set(fake["c"]) == {"1.1", "2.2", "3.3"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert Schema.infer(pd.DataFrame({"c": pd.Categorical(values)}))["c"].categories == ["1.1", "2.2", "3.3"]
    assert sz.core.schema.category_key(0.1 + 0.2) == "0.30000000000000004"  # a float64 keeps its own spelling


def test_dp_schema_and_conform_name_arguments_of_the_wrong_type():
    # kinds given as a list of names failed inside Python ("dictionary update sequence element #0 has length 1");
    # conform with a schema's dict failed on "'dict' object has no attribute 'meta'", and with a twice-named
    # column inside pandas
    df = pd.DataFrame({"a": np.arange(300.0), "b": ["x", "y", "z"] * 100})
    with pytest.raises(ConfigError, match=r"kinds must map each column to its kind, e.g. .*; got a list"):
        sz.dp_schema(df, ["a", "b"], epsilon=1.0, delta=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    with pytest.raises(ConfigError, match=r"conform: schema must be a synthzoo.Schema .*, got dict"):
        sz.conform(df, schema.to_dict())
    with pytest.raises(SchemaError, match=r"conform: the table has a column named 'a' more than once"):
        sz.conform(df.set_axis(["a", "a"], axis=1), schema)


def test_bytes_in_a_cell_are_refused_with_how_to_decode_them():
    # read_sas' text (and numpy's 'S' arrays) are bytes: Schema.infer and dp_schema released the categories
    # "b'abc'", "b'de'", and a public schema's 'abc' refused b'abc' as "value(s) ["b'abc'"] not among the categories"
    what = r"column 'c': holds bytes \(e.g. b'abc'\), not text; decode them first, e.g. df\['c'\] = df\['c'\]\.str"
    for col in (np.array([b"abc", b"de"])[np.arange(300) % 2], [b"abc", "de", None] * 100):
        df = pd.DataFrame({"c": pd.Series(col, dtype=object)})
        with pytest.raises(SchemaError, match=what):
            Schema.infer(df)
        ledger = sz.PrivacyLedger(1.0, 1e-6, reserved_delta=1e-7)
        with pytest.raises(SchemaError, match=what):
            sz.dp_schema(df, kinds={"c": "categorical"}, ledger=ledger, share=1.0)
        assert ledger.charges == []
        with pytest.raises(SchemaError, match=what):
            Schema([Column("c", "categorical", categories=["abc", "de"], missing=True)]).validate(df)


@pytest.mark.parametrize("dtype", ["bool", "boolean"])
def test_booleans_in_a_numerical_column_are_named_as_booleans(dtype):
    # "declared numerical but holds non-numeric values (e.g. [np.False_, np.True_], dtype bool)": numpy's reprs
    # and no word of what to do
    df = pd.DataFrame({"x": pd.array(np.arange(40) % 2 == 0, dtype=dtype)})
    with pytest.raises(SchemaError, match=rf"column 'x': declared numerical but holds booleans \(dtype {dtype}\); "
                                          r"describe it as categorical .* df\['x'\]\.astype\(int\)"):
        Schema([Column("x", "numerical", lower=0, upper=1)]).validate(df)


@pytest.mark.parametrize("values, declare", [
    (["2020-01-01", "2020-02-03"], '"type": "datetime", "resolution": "day" in the schema'),
    (["2020-01-01 10:30", "2020-02-03 11:00"], '"type": "datetime", "resolution": "minute" in the schema'),
    (["31/12/2020", "01/02/2021"], '"type": "datetime", "resolution": "day", "format": "%d/%m/%Y" in the schema')])
def test_dates_declared_numerical_say_to_declare_a_datetime_before_any_charge(values, declare):
    # "declared numerical but holds non-numeric values" (fit) or "has dtype str; convert it to numbers first"
    # (dp_schema) for a date column: nothing said what to declare
    df = pd.DataFrame({"d": values * 50, "x": np.arange(100.0)})
    schema = Schema.from_dict({"columns": {"d": {"type": "numerical", "lower": 0, "upper": 1e10},
                                           "x": {"type": "numerical", "lower": 0, "upper": 100}}})
    said = r"column 'd': declared numerical but holds dates \(e\.g\. .*\); declare it " + re.escape(declare)
    with pytest.raises(SchemaError, match=said):
        schema.validate(df)
    led = PrivacyLedger(1.0, 1e-6, reserved_delta=1e-7)
    with pytest.raises(SchemaError, match=said):
        sz.dp_schema(df, {"d": "numerical", "x": "numerical"}, ledger=led, share=1.0)
    assert led.spent().epsilon == 0
    with pytest.raises(SchemaError, match=r"declared numerical but holds non-numeric values"):  # not all dates
        schema.validate(df.assign(d=["abc", values[0]] * 50))


def test_a_datetime_dtype_declared_numerical_is_refused_not_read_as_nanoseconds():
    # it was read as nanoseconds since 1970 and refused as "outside the public bounds (e.g. 1.57784e+15)"
    schema = Schema.from_dict({"columns": {"d": {"type": "numerical", "lower": 0, "upper": 1e10}}})
    with pytest.raises(SchemaError, match=r"column 'd': declared numerical but holds datetimes \(dtype "
                                          r"datetime64\[.*\]\); declare it \"type\": \"datetime\""):
        schema.validate(pd.DataFrame({"d": pd.to_datetime(["2020-01-01"] * 10)}))


def test_a_datetime_column_with_one_declared_bound_before_1970_is_measured():
    # parsing every datetime column before the charges built its probe with a lower bound of 1970 where only the
    # upper one was declared: an upper bound of 1900 was then no column at all
    df = pd.DataFrame({"d": ["1890-01-01", "1895-06-01"] * 200, "x": np.arange(400.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema, _ = sz.dp_schema(df, {"d": {"type": "datetime", "resolution": "day", "upper": "1900-01-01"},
                                      "x": {"type": "numerical", "lower": 0, "upper": 400}}, epsilon=1.0, delta=1e-6)
    assert schema["d"].show(schema["d"].upper) == "1900-01-01"
    assert schema["d"].lower <= pd.Timestamp("1890-01-01").timestamp()


@pytest.mark.parametrize("rows", [-5, 2.5, True, "32,561"])
def test_a_schema_row_count_that_is_no_count_is_refused_naming_the_key(rows):
    # "rows" describes the table (no module reads it; a private fit drops it with a warning), but -5 was accepted
    with pytest.raises(SchemaError, match=r"\"rows\" \(top level\) must be the table's row count, a whole number"):
        Schema.from_dict({"rows": rows, "columns": {"a": {"kind": "categorical", "categories": ["x"]}}})
    assert Schema.from_dict({"rows": 32561.0, "columns": {"a": {"kind": "categorical", "categories": ["x"]}}})
