"""Column dtypes through fit -> sample -> save -> load -> sample and the command line's CSV files, under
pandas 3 (datetimes in units s/ms/us/ns, microseconds by default; dates beyond datetime64[ns]'s
1677-2262). Issue 15 item 1: the output keeps the input's dtype, as the schema records it."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import synthzoo as sz
from synthzoo.cli import main as cli
from synthzoo.core.errors import SchemaError
from synthzoo.core.schema import Column, Schema
from helpers import cli_fit_and_sample

N = 300


def _fit(schema, df, epsilon=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {"delta": 1e-5} if epsilon is not None else {}
        return sz.Synthesizer(select="mst", model="pgm", epsilon=epsilon, schema=schema, seed=0, **kw).fit(df)


def _days(start, n=N, days=20_000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.Series(pd.Timestamp(start) + pd.to_timedelta(rng.integers(0, days, n), unit="D"))


def _inferred_round_trip(df, tmp_path):
    """The schema Schema.infer records for ``df``, and a sample after fit, save and load on it (as JSON)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    return schema, _save_load_same(_fit(Schema.from_dict(schema.to_dict()), df), tmp_path)


def _save_load_same(synth, tmp_path):
    synth.save(tmp_path / "m.szm")
    again = sz.Synthesizer.load(tmp_path / "m.szm")
    a, b = synth.sample(200, seed=3), again.sample(200, seed=3)
    pd.testing.assert_frame_equal(a, b)
    return b


def test_datetime_units_s_ms_us_ns_come_back_in_their_unit(tmp_path):
    t = _days("1990-01-01") + pd.to_timedelta(np.random.default_rng(1).integers(0, 86_400, N), unit="s")
    df = pd.DataFrame({f"t_{u}": t.dt.as_unit(u) for u in ("s", "ms", "us", "ns")})
    df["berlin"] = t.dt.as_unit("us").dt.tz_localize("Europe/Berlin", ambiguous="NaT", nonexistent="NaT")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["t_us"].to_dict()["dtype"] == "datetime64[us]" and "dtype" not in schema["t_ns"].to_dict()
    fake = _fit(schema, df).sample(200, seed=1)
    assert dict(fake.dtypes) == dict(df.dtypes)  # pandas 3 makes microseconds: they came back as nanoseconds
    back = _save_load_same(_fit(Schema.from_dict(schema.to_dict()), df), tmp_path)
    assert dict(back.dtypes) == dict(df.dtypes)


@pytest.mark.parametrize("start", ["1500-01-01", "2400-01-01"])
def test_dates_beyond_datetime64_ns_fit_privately_with_a_microsecond_dtype(start, tmp_path):
    df = pd.DataFrame({"d": _days(start)})  # pandas 3 holds them as datetime64[us]
    upper = f"{int(start[:4]) + 60}-01-01"
    schema = Schema.from_dict({"columns": {"d": {"type": "datetime", "lower": start, "upper": upper,
                                                 "dtype": "datetime64[us]"}}})
    synth = _fit(schema, df, epsilon=1.0)
    fake = _save_load_same(synth, tmp_path)
    assert fake["d"].dtype == np.dtype("datetime64[us]") and (fake["d"] == fake["d"].dt.normalize()).all()
    assert pd.Timestamp(start) <= fake["d"].min() and fake["d"].max() <= pd.Timestamp(upper)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert Schema.infer(df)["d"].dtype == "datetime64[us]"  # inferred: no epoch seconds in an error


def test_a_bound_beyond_datetime64_ns_names_the_dtype_to_declare_in_iso_dates():
    with pytest.raises(SchemaError, match=r"column 'd': 'lower' bound 1500-01-01 lies outside what dtype 'datetime' "
                                          r"\(datetime64\[ns\]\) holds, 1677-09-22 to 2262-04-10; declare \"dtype\": "
                                          r"\"datetime64\[us\]\""):
        Column("d", "datetime", lower="1500-01-01", upper="1600-01-01")
    with pytest.raises(SchemaError, match=r"column 'd': 'lower' bound -631805-03-25 12:26:40 lies outside the years "
                                          r"1 to 9999$"):
        Column("d", "datetime", lower=-2e13, upper=0)  # epoch seconds shown as a date, not as -2e+13
    col = Column("d", "datetime", lower="1500-01-01", upper="1600-01-01", dtype="string")
    assert col.to_dict()["lower"] == "1500-01-01" and col.output_dtype == Column("e", "categorical", categories=[
        "a"]).output_dtype


def test_a_resolution_finer_than_the_declared_unit_is_refused_before_the_fit():
    with pytest.raises(SchemaError, match=r"column 't': the resolution 'millisecond' is finer than dtype "
                                          r"'datetime64\[s\]' holds \(whole seconds\)"):
        Column("t", "datetime", lower="2000-01-01 00:00:00.000", upper="2001-01-01", dtype="datetime64[s]")


@pytest.mark.parametrize("fmt, shape", [("%Y%m%d", r"\d{8}"), ("%Y", r"\d{4}")])
def test_cli_reads_dates_written_as_digits_in_their_format_as_dates(fmt, shape, tmp_path):
    # read_csv types 20200131 (or 2020) as a number; the fit refused the file: "holds numbers, not dates"
    df = pd.DataFrame({"d": _days("2000-01-01", days=7000).dt.strftime(fmt),
                       "x": np.random.default_rng(2).choice(["a", "b"], N)})
    lo, hi = pd.Timestamp("2000-01-01").strftime(fmt), pd.Timestamp("2020-01-01").strftime(fmt)
    schema = Schema.from_dict({"columns": {"d": {"type": "datetime", "lower": lo, "upper": hi, "format": fmt,
                                                 "dtype": "string"},
                                           "x": {"type": "categorical", "categories": ["a", "b"]}}})
    text = cli_fit_and_sample(df, schema, tmp_path, 50)
    assert text["d"].str.fullmatch(shape).all()


def test_days_in_a_zone_whose_dst_change_skips_midnight_validate_and_infer_as_days():
    # Sao Paulo's clocks went from 2018-11-04 00:00 to 01:00: that day starts at 01:00, in the release too;
    # the fit refused such a table (and the release) as finer than a day
    days = pd.Series(pd.date_range("2018-10-01", "2018-12-31", freq="D")).dt.tz_localize(
        "America/Sao_Paulo", nonexistent="shift_forward")
    df = pd.DataFrame({"t": pd.concat([days] * 4, ignore_index=True)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert Schema.infer(df)["t"].resolution == "day"  # was "hour", from the one day starting at 01:00
    schema = Schema.from_dict({"columns": {"t": {"type": "datetime", "lower": "2018-10-01", "upper": "2018-12-31",
                                                 "tz": "America/Sao_Paulo"}}})
    fake = _fit(schema, df).sample(1000, seed=1)
    assert (fake["t"] == pd.Timestamp("2018-11-04 01:00", tz="America/Sao_Paulo")).any()
    schema.validate(fake)  # the release refused its own day: "finer than the resolution"
    with pytest.raises(SchemaError, match=r"resolution is 'day' but 1 value\(s\) are finer \(e.g. 2018-11-05 "
                                          r"01:00:00 \(America/Sao_Paulo\)\)"):
        schema.validate(pd.DataFrame({"t": pd.to_datetime(["2018-11-05 01:00"]).tz_localize("America/Sao_Paulo")}))


@pytest.mark.parametrize("resolution, fmt", [("month", "%Y-%m"), ("year", "%Y")])
def test_a_month_or_year_resolution_is_refused_with_the_format_that_does_it(resolution, fmt):
    with pytest.raises(SchemaError, match=rf"column 'm': unknown resolution '{resolution}'.*the coarsest resolution "
                                          rf"is a day: declare the column's \"format\" '{fmt}' with \"dtype\": "
                                          r"\"string\""):
        Column("m", "datetime", lower="1980-01-01", upper="2000-12-31", resolution=resolution)
    col = Column("m", "datetime", lower=pd.Timestamp("1980-01-01").strftime(fmt),
                 upper=pd.Timestamp("2000-12-31").strftime(fmt), format=fmt, dtype="string")
    values = pd.Series(pd.date_range("1980-01-01", "2000-12-31", freq="MS")).dt.strftime(fmt)
    fake = _fit(Schema([col]), pd.DataFrame({"m": values}), epsilon=1.0).sample(100, seed=1)
    assert fake["m"].str.fullmatch(r"\d{4}-\d{2}" if fmt == "%Y-%m" else r"\d{4}").all()


@pytest.mark.parametrize("zone, lmt", [("Europe/Amsterdam", "+00:19:32"), ("Asia/Kolkata", "+05:21:10")])
def test_offsets_with_seconds_that_to_csv_writes_read_back(zone, lmt, tmp_path):
    # a zone's local mean time before ~1900 is an offset with seconds, which to_csv writes ("+00:19:32") and
    # pandas' ISO parser refuses: such a column did not read back ("values that are not datetimes")
    from synthzoo.core import datetimes as dtm

    t = (_days("1890-01-01", days=25_000) + pd.to_timedelta(np.arange(N) % 1440, unit="min")).dt.as_unit("us")
    aware = t.dt.tz_localize(zone, ambiguous="NaT", nonexistent="NaT").dropna().reset_index(drop=True)
    df = pd.DataFrame({"t": aware})
    df.to_csv(tmp_path / "t.csv", index=False)
    text = pd.read_csv(tmp_path / "t.csv")["t"]
    assert text.str.endswith(lmt).any() and not text.str.endswith(lmt).all()
    for tz in (zone, "UTC"):
        np.testing.assert_array_equal(dtm.to_seconds(text, "t", tz=tz), dtm.to_seconds(aware, "t", tz=tz))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inferred = Schema.infer(pd.DataFrame({"t": text}))["t"]  # several offsets: UTC, so the output keeps one
    assert inferred.tz == "UTC" and inferred.lower == dtm.to_seconds(aware, "t", tz="UTC").min()
    written = dtm.to_text(aware, "minute")  # synthzoo's own text: the offset with seconds (was "+00:1932")
    assert written.str.endswith(lmt).any() and (dtm.to_seconds(written, "t", tz=zone) == dtm.to_seconds(aware, "t",
                                                                                                        tz=zone)).all()
    # through the command line, as text in the zone
    schema = Schema.from_dict({"columns": {"t": {"type": "datetime", "lower": "1890-01-01", "upper": "1960-01-01",
                                                 "resolution": "minute", "tz": zone, "dtype": "string"}}})
    fake = cli_fit_and_sample(df, schema, tmp_path, 300)["t"]
    assert fake.str.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:00)?[+-]\d{2}:\d{2}(:\d{2})?").all()
    assert (fake.str.endswith(lmt) == (pd.to_datetime(fake.str[:10]) < pd.Timestamp("1900-01-01"))).mean() > 0
    back = dtm.to_seconds(fake, "t", tz=zone)
    schema.validate(pd.DataFrame({"t": dtm.from_seconds(back, "minute", zone, -1e12, 1e12, unit="us")}))


def test_offsets_with_seconds_are_looked_for_only_in_text_that_did_not_parse(monkeypatch):
    # the rewrite's regular expression ran over every value of every ISO column: 10^6 dates parsed in 2.7 CPU s
    # instead of 0.2, for a layout only a zone's local mean time has
    from synthzoo.core import datetimes as dtm

    seen = []
    real = dtm.utc_for_second_offsets
    monkeypatch.setattr(dtm, "utc_for_second_offsets", lambda s: seen.append(len(s)) or real(s))
    dates = pd.Series(["2020-01-31", "1999-12-01", None, "2001-02-03"])
    assert np.isfinite(dtm.to_seconds(dates, "d")).sum() == 3 and seen == []
    mixed = pd.Series(["1900-01-01 10:00:00+00:19:32", "1950-06-01 10:00:00+01:00", "1950-01-01 10:00:00+00:00"])
    assert np.isfinite(dtm.to_seconds(mixed, "t", warn=False)).all() and seen == [1]


def test_a_tz_given_as_an_offset_with_seconds_is_refused_with_the_zone_to_declare():
    with pytest.raises(SchemaError, match=r"column 't': \"tz\" '\+00:19:32' is an offset with seconds, which pandas "
                                          r"cuts to whole minutes; declare the zone's IANA name"):
        Column("t", "datetime", lower="1900-01-01", upper="1901-01-01", tz="+00:19:32")


@pytest.mark.parametrize("zone, recorded", [
    (lambda: __import__("dateutil.tz").tz.gettz("Europe/Paris"), "dateutil/Europe/Paris"),
    (lambda: __import__("dateutil.tz").tz.tzutc(), "UTC"),
    (lambda: __import__("dateutil.tz").tz.tzoffset(None, 5_400), "UTC+01:30"),
    (lambda: __import__("zoneinfo").ZoneInfo("America/Sao_Paulo"), "America/Sao_Paulo"),
])
def test_a_zone_object_of_dateutil_or_zoneinfo_is_recorded_by_a_name_that_reads_back(zone, recorded, tmp_path):
    # pandas takes "dateutil/Europe/Paris"; str() of dateutil's zone, "tzfile('/usr/share/zoneinfo/...')",
    # was recorded instead and the fit failed with zoneinfo's ZoneInfoNotFoundError
    t = _days("1990-01-01").dt.as_unit("us") + pd.Timedelta(hours=12)
    df = pd.DataFrame({"t": t.dt.tz_localize(zone())})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["t"].to_dict()["tz"] == recorded
    assert sz.kinds_from_dtypes(df)["t"]["tz"] == recorded
    back = _save_load_same(_fit(Schema.from_dict(schema.to_dict()), df), tmp_path)
    # a zone file comes back as the frame's dtype; dateutil's tzutc() and tzoffset as pandas' equal ones
    assert str(back["t"].dtype.tz) == (recorded if "/" not in recorded else str(df["t"].dtype.tz))
    lo, hi = df["t"].min(), df["t"].max()
    assert back["t"].between(lo, hi).all()


def test_the_machines_local_zone_is_refused_naming_the_column():
    from dateutil.tz import tzlocal
    df = pd.DataFrame({"seen": _days("2000-01-01").dt.tz_localize(tzlocal())})
    with pytest.raises(SchemaError, match=r"column 'seen': its time zone tzlocal\(\) has no name that reads back as "
                                          r"the same zone; convert the column to an IANA zone first, e.g. "
                                          r"df\['seen'\].dt.tz_convert"):
        sz.kinds_from_dtypes(df)


@pytest.mark.parametrize("freq", ["M", "Q", "W", "D"])
def test_period_columns_come_back_as_periods(freq, tmp_path):
    # a period column was taken as text categories and came back as str ('2020-01')
    rng = np.random.default_rng(0)
    periods = pd.period_range("2019-11-01", periods=12, freq=freq)
    df = pd.DataFrame({"p": pd.Series(periods[rng.integers(0, 12, N)]), "x": rng.normal(size=N)})
    df.loc[::9, "p"] = pd.NaT
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["p"].categories == [str(q) for q in periods] and schema["p"].dtype == str(df["p"].dtype)
    back = _save_load_same(_fit(Schema.from_dict(schema.to_dict()), df), tmp_path)
    assert back["p"].dtype == df["p"].dtype and back["p"].isna().any() and back["p"].dropna().isin(periods).all()
    # the CSV of a period column is its text; a schema declaring the dtype reads it and returns periods
    again = _fit(schema, pd.read_csv(pd.io.common.StringIO(df.to_csv(index=False)))).sample(50, seed=1)
    assert again["p"].dtype == df["p"].dtype


def test_period_categories_are_refused_unless_written_as_periods_of_the_dtype():
    # pandas reads "2020-01-15" as the month 2020-01: a category it would silently rename
    with pytest.raises(SchemaError, match=r"column 'c': dtype 'period\[M\]' needs categories written as periods of "
                                          r"that frequency .*got '2020-01-15'"):
        Schema.from_dict({"columns": {"c": {"type": "categorical", "categories": ["2020-01", "2020-01-15"],
                                            "dtype": "period[M]"}}})
    with pytest.raises(SchemaError, match=r"or a pandas period dtype \('period\[M\]'\); got 'period\[xyz\]'"):
        Schema.from_dict({"columns": {"c": {"type": "categorical", "categories": ["a"], "dtype": "period[xyz]"}}})


def test_convert_dtypes_text_comes_back_as_pandas_string_dtype_with_na(tmp_path):
    # df.convert_dtypes() makes text StringDtype with pd.NA; it came back as pandas 3's default str (NaN)
    df = pd.DataFrame({"x": pd.array(np.random.default_rng(0).choice(["a", "b", "c"], N), dtype="string")})
    df.loc[::6, "x"] = pd.NA
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = Schema.infer(df)
    assert schema["x"].to_dict()["dtype"] == "string"
    back = _save_load_same(_fit(Schema.from_dict(schema.to_dict()), df), tmp_path)
    assert back["x"].dtype == df["x"].dtype and back["x"].isna().any() and back["x"].dropna().isin(["a", "b", "c"]).all()


@pytest.mark.parametrize("bins", ["ints", "left-closed floats", "equal widths", "timestamps"])
def test_pd_cut_intervals_come_back_as_the_same_interval_categories(bins, tmp_path):
    # a pd.cut column came back as text ('(0, 10]'), and with a missing value its intervals, factorized as
    # floats, no longer matched their own categories ("value(s) ['(0.0, 10.0]', ...] not among the schema's")
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 30, N)
    cut = {"ints": lambda: pd.cut(x, [0, 10, 20, 30]),
           "left-closed floats": lambda: pd.cut(x, [0, 10.5, 20, 30.5], right=False),
           "equal widths": lambda: pd.cut(x, 3),
           "timestamps": lambda: pd.cut(pd.Timestamp("2020-01-01") + pd.to_timedelta(x, "D"), 3)}[bins]()
    df = pd.DataFrame({"c": cut, "x": rng.normal(size=N)})
    df.loc[::11, "c"] = np.nan
    schema, back = _inferred_round_trip(df, tmp_path)
    assert schema["c"].dtype == "category[interval]" and schema["c"].ordered
    assert back["c"].dtype == df["c"].dtype and back["c"].isna().any()
    assert back["c"].dropna().isin(df["c"].cat.categories).all()


def test_interval_categories_must_print_as_intervals_of_one_kind():
    for cats, said in ((["(0, 10]", "ten"], r"; 'ten' is not one"),
                       (["(0, 10]", "[10, 20)"], r"closed on different sides \(\['left', 'right'\]\)"),
                       (["(0, 10.50]"], r"category '\(0, 10\.50\]' reads back as '\(0\.0, 10\.5\]'")):
        with pytest.raises(SchemaError, match=r"column 'c': .*" + said):
            Schema.from_dict({"columns": {"c": {"type": "categorical", "categories": cats,
                                                "dtype": "category[interval]"}}})


def test_float16_columns_come_back_as_float16(tmp_path):
    # float16 was no declarable dtype: its column came back as float64 (float32 was kept)
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"h": rng.normal(size=N).astype("float16"), "f": rng.normal(size=N).astype("float32")})
    df.loc[::13, "h"] = np.nan
    schema, back = _inferred_round_trip(df, tmp_path)
    assert schema["h"].dtype == "float16" and schema["h"].missing
    assert back.dtypes.to_dict() == df.dtypes.to_dict() and back["h"].isna().any()
    with pytest.raises(SchemaError, match=r"column 'h': bounds \[-1000000, 1\] exceed what dtype 'float16' holds "
                                          r"\(\[-65504\.0, 65504\.0\]\)"):
        Schema.from_dict({"columns": {"h": {"type": "numerical", "lower": -1e6, "upper": 1, "dtype": "float16"}}})
