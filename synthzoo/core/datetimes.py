"""Datetime columns as users have them: parsing, resolution, time zones and output types.

Inside synthzoo a datetime value is a float: seconds since 1970-01-01 00:00 of the *wall clock* in
the column's zone (its ``"tz"``, else UTC), so that a day is a day on that wall clock and every
encoder treats datetimes as numbers.  Everything that decides how values are read and written back
is public schema knowledge, never read from the rows:

* ``resolution`` -- ``"day"``, ``"hour"``, ``"minute"``, ``"second"``, ``"millisecond"``,
  ``"microsecond"`` or ``"nanosecond"``; synthetic values are whole multiples of it.  Where the
  schema omits it, it follows the *form* of the bounds (``"1930-01-01"`` means days,
  ``"1930-01-01 08:00"`` minutes, ...), which is schema text too.
* ``format`` -- strftime codes for parsing text (``"%d/%m/%Y"``) and for writing it back;
  without it text must be ISO 8601.
* ``tz`` -- an IANA zone (``"Europe/Paris"``): values are read and returned in that zone.
  Values with different UTC offsets are converted (to the zone, else to UTC with a warning), so
  pandas' own ``to_csv`` output of a tz-aware column (one offset per DST period) reads back.
* ``dtype`` -- ``"datetime"`` (default; ``datetime64[ns]``, tz-aware in ``tz``), a unit of pandas'
  datetimes, ``"datetime64[s]"``, ``"[ms]"``, ``"[us]"`` (pandas 3's default) or ``"[ns]"`` (the units
  other than ns hold the years 1 to 9999, not only 1677 to 2262), or ``"string"`` (text at the
  resolution, or in ``format``).

Messages show datetimes as ISO text at the column's resolution, never as epoch seconds, and never
suggest pandas arguments a synthzoo user cannot pass.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import warnings

import numpy as np
import pandas as pd

from .errors import SchemaError, TimeZoneWarning, quiet_parsing_advice

#: Length of one step of each resolution, in nanoseconds.
RESOLUTIONS = {"day": 86_400 * 10 ** 9, "hour": 3_600 * 10 ** 9, "minute": 60 * 10 ** 9, "second": 10 ** 9,
               "millisecond": 10 ** 6, "microsecond": 10 ** 3, "nanosecond": 1}
#: Units of pandas' datetimes, as steps per second.
UNITS = {"s": 1, "ms": 10 ** 3, "us": 10 ** 6, "ns": 10 ** 9}
#: Output types a datetime column may declare with its ``"dtype"`` key.
DATETIME_DTYPES = ("datetime", "string") + tuple(f"datetime64[{u}]" for u in UNITS)
# datetime64[ns] spans 1677-09-21 .. 2262-04-11; bounds must lie inside (with a day to spare)
_NS_MIN, _NS_MAX = -9_223_285_636.854775, 9_223_285_636.854775
# the other units span far more; ISO text, strftime and Python's datetime hold the years 1 to 9999
_SPAN_MIN, _SPAN_MAX = -62_135_596_800.0, 253_402_300_799.0

_TEXT_FORMS = [  # (regex on ISO text, resolution it states)
    (re.compile(r"\d{4}-\d{2}-\d{2}"), "day"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}"), "hour"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}"), "minute"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}"), "second"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}[.,]\d{1,3}"), "millisecond"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}[.,]\d{4,6}"), "microsecond"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}[.,]\d{7,9}"), "nanosecond"),
]
_ZONE_SUFFIX = re.compile(r"(Z|[+-]\d{2}(:?\d{2})?)$")
_ORDER = ["day", "hour", "minute", "second", "millisecond", "microsecond", "nanosecond"]


def tz_name(tz, name: str) -> str | None:
    """The name a column description records for a pandas dtype's time-zone object, one that pandas reads
    back as the same zone: a ``zoneinfo`` zone's key (``"Europe/Paris"``), a dateutil zone file as pandas'
    ``"dateutil/Europe/Paris"`` (so the release keeps the frame's dtype), pytz's zone name, a fixed offset
    as ``"UTC+02:00"``.  A zone with no such name -- ``dateutil.tz.tzlocal()``, whatever the machine's clock
    says -- is a SchemaError naming the column: a release must not depend on where it is sampled."""
    if tz is None:
        return None
    key = getattr(tz, "key", None) or getattr(tz, "zone", None)  # zoneinfo, pytz
    if isinstance(key, str):
        return key
    path = getattr(tz, "_filename", None)  # dateutil's tzfile: the zone file it read
    if isinstance(path, str) and type(tz).__module__.startswith("dateutil"):
        key = path.split("zoneinfo/")[-1] if "zoneinfo/" in path else path
        if not key.startswith("/"):
            return f"dateutil/{key}"
    if type(tz).__name__ == "tzutc":
        return "UTC"
    if type(tz).__name__ != "tzlocal":
        off = tz.utcoffset(None) if hasattr(tz, "utcoffset") else None
        if isinstance(off, _dt.timedelta) and (type(tz).__name__ in ("tzoffset", "StaticTzInfo")
                                              or isinstance(tz, _dt.timezone)):
            return str(_dt.timezone(off))
        text = str(tz)
        try:
            pd.Timestamp("2000-01-01").tz_localize(text)
            return text
        except Exception:  # noqa: BLE001 - pandas raises several types for unknown zones
            pass
    raise SchemaError(f"column {name!r}: its time zone {tz!r} has no name that reads back as the same zone; "
                      f"convert the column to an IANA zone first, e.g. df[{name!r}].dt.tz_convert(\"Europe/Paris\")")


def check_tz(tz, name: str) -> str | None:
    """``tz`` if it names a time zone pandas knows (``"UTC"``, ``"Europe/Paris"``), else SchemaError."""
    if tz is None:
        return None
    if not isinstance(tz, str) or not tz:
        raise SchemaError(f"column {name!r}: \"tz\" must be a time zone name such as \"UTC\" or \"Europe/Paris\", "
                          f"got {tz!r}")
    if re.fullmatch(r"(UTC)?[+-]\d{2}:?\d{2}:?\d{2}(\.\d+)?", tz.strip()):
        # pandas keeps a fixed offset in whole minutes: "+00:19:32" would read and write every value 32 s off
        raise SchemaError(f"column {name!r}: \"tz\" {tz!r} is an offset with seconds, which pandas cuts to whole "
                          "minutes; declare the zone's IANA name (e.g. \"Europe/Amsterdam\" for +00:19:32 before "
                          "1937, \"Asia/Kolkata\" for +05:21:10 before 1906) or \"UTC\"")
    try:
        pd.Timestamp("2000-01-01").tz_localize(tz)
    except Exception:  # noqa: BLE001 - pandas raises several types for unknown zones
        raise SchemaError(f"column {name!r}: unknown time zone {tz!r} (use an IANA name such as \"Europe/Paris\" "
                          "or \"UTC\")") from None
    return tz


#: Longest "format" a column may declare (a real layout is a few dozen characters).
MAX_FORMAT_CHARS = 200


def check_format(fmt, name: str) -> str | None:
    """``fmt`` if it is a layout synthzoo can write values in and read them back with, else SchemaError: values
    are written with it (strftime) and read with it (pandas' strptime), so a layout only one side knows
    (``%s``, a stray ``%``, an unknown or repeated code) made samples that do not read back as datetimes."""
    if fmt is None:
        return None
    if not isinstance(fmt, str) or "%" not in fmt:
        raise SchemaError(f"column {name!r}: \"format\" must be strftime codes such as \"%d/%m/%Y\", got {fmt!r}")
    if len(fmt) > MAX_FORMAT_CHARS:
        raise SchemaError(f"column {name!r}: \"format\" must be at most {MAX_FORMAT_CHARS} characters, got "
                          f"{len(fmt):,}")
    ref = pd.Series([pd.Timestamp("2001-02-03 04:05:06", tz="UTC" if "%z" in fmt or "%Z" in fmt else None)])
    text = None
    try:
        quiet_parsing_advice()
        text = ref.dt.strftime(fmt)
        pd.to_datetime(text, format=fmt)
    except (ValueError, TypeError, OverflowError, re.error) as e:  # pandas' strptime compiles a regex
        wrote = f" (it writes {text.iloc[0][:40]!r})" if text is not None else ""
        raise SchemaError(f"column {name!r}: \"format\" {fmt[:40]!r} does not read back what it writes{wrote}: "
                          f"{str(e).splitlines()[0][:120]}") from None
    return fmt


def finer(a: str, b: str) -> str:
    return a if _ORDER.index(a) >= _ORDER.index(b) else b


def resolution_of_bound(value, fmt: str | None = None) -> str:
    """The resolution a bound's *form* states: ``"1930-01-01"`` -> day, ``"1930-01-01 08:00"`` ->
    minute; a bound in ``format`` -> the finest code it uses; a Timestamp/datetime -> the finest
    non-zero part; a date -> day; a number (epoch seconds) -> second unless fractional."""
    if isinstance(value, str):
        if fmt is not None:
            for code, res in (("%f", "microsecond"), ("%S", "second"), ("%M", "minute"), ("%H", "hour"),
                              ("%I", "hour")):
                if code in fmt:
                    return res
            return "day"
        text = value.strip()
        if _has_time(text):  # only a time of day carries a zone suffix
            text = _ZONE_SUFFIX.sub("", text)
        found = [res for rx, res in _TEXT_FORMS if rx.fullmatch(text)]
        return found[0] if found else "second"
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return "day"
    if isinstance(value, (_dt.datetime, np.datetime64)):
        t = pd.Timestamp(value)
        if t.nanosecond:
            return "nanosecond"
        if t.microsecond:
            return "millisecond" if t.microsecond % 1000 == 0 else "microsecond"
        if t.second:
            return "second"
        if t.minute:
            return "minute"
        return "hour" if t.hour else "day"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return "second"
    return "second" if math.isfinite(x) and x == round(x) else "nanosecond"


def bound_seconds(value, name: str, which: str, tz: str | None, fmt: str | None) -> float:
    """One public bound as wall-clock seconds in the column's zone (numbers are taken as seconds)."""
    if isinstance(value, (bool, np.bool_)):
        raise SchemaError(f"column {name!r}: '{which}' must be a date/time, got {value!r}")
    if isinstance(value, (int, float, np.integer, np.floating)):
        x = float(value)
    else:
        series = pd.Series([value], dtype=object if isinstance(value, str) else None)
        try:
            v = to_seconds(series, name, tz=tz, fmt=fmt, warn=False)
        except SchemaError:
            v = None
        if v is None and fmt is not None:
            # bounds may also be ISO text next to a "format" for the data (that is how a schema saves them)
            try:
                v = to_seconds(series, name, tz=tz, fmt=None, warn=False)
            except SchemaError:
                v = None
        if v is None:
            need = (f"text in the column's \"format\" {fmt!r} or ISO 8601 text" if fmt is not None
                    else "ISO 8601 text such as 2020-01-31 or 2020-01-31 14:05:00")
            raise SchemaError(f"column {name!r}: '{which}' bound {value!r} is not a datetime; expected {need}") from None
        x = float(v[0])
    if not math.isfinite(x):
        raise SchemaError(f"column {name!r}: '{which}' must be a date/time, got {value!r}")
    if not _SPAN_MIN <= x <= _SPAN_MAX:
        shown = show(x, "second") if isinstance(value, (int, float, np.integer, np.floating)) else repr(value)
        raise SchemaError(f"column {name!r}: '{which}' bound {shown} lies outside the years 1 to 9999")
    return x


def unit_of(dtype: str | None, resolution: str | None) -> str:
    """The unit of a datetime column's values: its ``dtype``'s (``"datetime64[us]"`` -> ``"us"``), ``"ns"``
    for the default ``"datetime"``; text (``"string"``) is made through microseconds (any year from 1 to
    9999) unless its resolution is the nanosecond."""
    if dtype is not None and dtype.startswith("datetime64["):
        return dtype[len("datetime64["):-1]
    if dtype == "string":
        return "ns" if resolution == "nanosecond" else "us"
    return "ns"


def unit_span(unit: str) -> tuple[float, float, str]:
    """The wall-clock seconds a unit's datetimes hold here, and those limits as text."""
    if unit == "ns":
        return _NS_MIN, _NS_MAX, "1677-09-22 to 2262-04-10"
    return _SPAN_MIN, _SPAN_MAX, "the years 1 to 9999"


def _wall_seconds(ts: pd.Series, tz: str | None) -> np.ndarray:
    """A datetime64 Series (naive or tz-aware) as float wall-clock seconds in ``tz`` (else UTC)."""
    if getattr(ts.dt, "tz", None) is not None:
        ts = ts.dt.tz_convert(tz or "UTC").dt.tz_localize(None)
    arr = ts.to_numpy()
    unit = np.datetime_data(arr.dtype)[0]
    scale = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}.get(unit)
    if scale is None:  # D, h, m: whole units
        arr, scale = arr.astype("datetime64[s]"), 1.0
    out = arr.astype("int64").astype(float) / scale
    out[pd.isna(arr)] = np.nan
    return out


def to_seconds(s, name: str, tz: str | None = None, fmt: str | None = None, warn: bool = True) -> np.ndarray:
    """Datetime values (datetime64, Timestamps/dates, or text) as float wall-clock seconds in ``tz``
    (else UTC); NaN for missing.

    Text is ISO 8601, or ``fmt``'s layout.  Values with different UTC offsets are converted through
    UTC (to ``tz``, else to UTC with a warning when ``warn``).  Raises :class:`SchemaError` naming the
    column and showing the values that are not datetimes.
    """
    s = pd.Series(s).reset_index(drop=True)
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        if warn:
            _warn_zone_dropped(s, name, tz)
        return _wall_seconds(s, tz)
    na = s.isna().to_numpy()
    if na.all():
        return np.full(len(s), np.nan)
    # the parse's message showed periods as valid ISO dates and durations as '86400000000 microseconds'
    if isinstance(s.dtype, pd.PeriodDtype):
        raise SchemaError(f"column {name!r}: periods (dtype {s.dtype}) are not datetimes; convert them first, e.g. "
                          f"df[{name!r}].dt.to_timestamp()")
    if getattr(s.dtype, "kind", "") == "m":
        raise SchemaError(f"column {name!r}: durations (dtype {s.dtype}) are not datetimes; add them to a start "
                          f"date first, e.g. pd.Timestamp(\"2020-01-01\") + df[{name!r}], or describe the column as "
                          f"numerical in seconds (df[{name!r}].dt.total_seconds())")
    if pd.api.types.is_bool_dtype(s.dtype) or pd.api.types.is_numeric_dtype(s.dtype):
        ex = pd.Series(pd.unique(s[~na])[:3]).tolist()
        raise SchemaError(f"column {name!r}: holds numbers ({ex}, dtype {s.dtype}), not dates or times; give "
                          "them as text such as 2020-01-31 or 2020-01-31 14:05:00, or as datetime values")
    kw = {"format": fmt} if fmt is not None else {"format": "ISO8601"}
    quiet_parsing_advice()  # pandas' parsing advice names arguments synthzoo users cannot pass
    ts, mixed, bad = _parse(s, na, kw)
    if bad.any() and fmt is None:
        # offsets with seconds (to_csv's local mean time), which pandas' ISO parser refuses, rewritten in UTC: only
        # the values that failed, since the regular expression over every value took 9 times the parse of 10^6
        # dates that need none
        failed = s[bad]
        fixed = utc_for_second_offsets(failed)
        if fixed is not failed:
            s = s.astype(object).copy()
            s[bad] = fixed.to_numpy()
            ts, mixed, bad = _parse(s, na, kw)
    if bad.any():
        ex = [str(x)[:40] for x in pd.unique(s[bad])[:3]]
        if fmt is not None:
            hint = f"they do not match the column's \"format\" {fmt!r}"
        else:
            hint = ("expected ISO 8601 text such as 2020-01-31 or 2020-01-31 14:05:00; for another layout declare "
                    "the column's \"format\" in the schema with strftime codes, e.g. \"%d/%m/%Y\"")
        raise SchemaError(f"column {name!r}: {int(bad.sum())} value(s) that are not datetimes, e.g. {ex}; {hint}")
    if mixed and fmt is None:
        _refuse_naive_with_aware(s, na, name)
    if mixed and tz is None and warn:
        warnings.warn(f"column {name!r}: the values carry different UTC offsets (time zones); they were converted "
                      "to UTC. Declare the column's \"tz\" (e.g. \"Europe/Paris\") to read and write them in one zone",
                      TimeZoneWarning, stacklevel=4)
    elif warn:
        _warn_zone_dropped(ts, name, tz)
    return _wall_seconds(ts, tz)


def _has_zone(x) -> bool:
    """Whether one datetime value says its zone: an aware datetime/Timestamp, or text whose time of day ends in
    an offset or Z (a date alone has no zone: "2020-01-01"'s "-01" is its day)."""
    if isinstance(x, str):
        text = x.strip()
        return _has_time(text) and bool(_ZONE_SUFFIX.search(text))
    return getattr(x, "tzinfo", None) is not None


def _has_time(text: str) -> bool:
    """Whether datetime text holds a time of day, the only part a zone suffix can follow."""
    return re.search(r"[T ]\d{2}", text) is not None


def _refuse_naive_with_aware(s: pd.Series, na: np.ndarray, name: str) -> None:
    """Values with a zone and values without one in one column: pandas reads the naive ones as UTC, a guess
    (local clocks? the zone of the others?) that moved them by hours in silence.  Called only on the mixed-offset
    path, where the values are already looked at one by one."""
    zoned = np.array([_has_zone(x) for x in s[~na]], dtype=bool)
    if zoned.any() and not zoned.all():
        present = s[~na].reset_index(drop=True)
        naive, aware = present[~zoned].iloc[0], present[zoned].iloc[0]
        raise SchemaError(f"column {name!r}: mixes values with a time zone (e.g. {str(aware)[:40]!r}) and values "
                          f"without one (e.g. {str(naive)[:40]!r}, {int((~zoned).sum()):,} such); the zone of the "
                          "second kind is not known, so they cannot be placed in time: give every value its UTC "
                          "offset (or none)")


def _parse(s: pd.Series, na: np.ndarray, kw: dict):
    """``(timestamps, mixed, bad)``: ``s`` parsed as it is, or through UTC where its values carry different
    offsets (``mixed``); ``bad`` marks the values, not missing, that did not parse."""
    mixed = False
    try:
        ts = pd.to_datetime(s, errors="coerce", **kw)
    except (ValueError, TypeError, OverflowError):
        ts = None  # e.g. mixed UTC offsets
    if ts is None or ts.dtype == object or bool((ts.isna().to_numpy() & ~na).any()):
        # mixed offsets (text), or Timestamps in different zones (which pandas turns into NaT)
        try:
            alt = pd.to_datetime(s, errors="coerce", utc=True, **kw)
        except (ValueError, TypeError, OverflowError):
            alt = None
        if alt is not None and (ts is None or ts.dtype == object
                                or int((alt.isna().to_numpy() & ~na).sum()) < int((ts.isna().to_numpy() & ~na).sum())):
            ts, mixed = alt, True
    bad = ~na if ts is None or ts.dtype == object else ts.isna().to_numpy() & ~na
    return ts, mixed, bad


#: ISO text ending in a UTC offset with seconds, as Python and pandas' ``to_csv`` write a zone's local mean time
#: (Europe/Amsterdam until 1937: ``+00:19:32``; Asia/Kolkata until 1906: ``+05:21:10``): the time, then the offset.
_SECONDS_OFFSET = re.compile(r"^\s*(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)"
                             r"([+-])(\d{2}):?(\d{2}):?(\d{2}(?:\.\d+)?)\s*$")


def utc_for_second_offsets(s: pd.Series) -> pd.Series:
    """``s`` with each ISO text whose UTC offset has seconds (``1900-01-01 10:00:00+00:19:32``) rewritten as
    the same instant in UTC (``1900-01-01T09:40:28+00:00``): pandas' ISO parser refuses such offsets, so a
    tz-aware column that ``to_csv`` wrote in a zone's local mean time did not read back.  The rest of the
    values are left as they are (and go on to the usual parse, which converts mixed offsets)."""
    is_text = np.array([isinstance(x, str) for x in s], dtype=bool)
    if not is_text.any():
        return s
    parts = s[is_text].str.extract(_SECONDS_OFFSET)
    hit = parts[0].notna()
    if not hit.any():
        return s
    parts = parts[hit]
    wall = pd.to_datetime(parts[0], format="ISO8601", errors="coerce")
    sign = np.where(parts[1] == "-", -1.0, 1.0)
    offset = sign * (parts[2].astype(float) * 3600 + parts[3].astype(float) * 60 + parts[4].astype(float))
    utc = wall - pd.to_timedelta(np.round(offset.to_numpy() * 1e6).astype(np.int64), unit="us")
    ok = utc.notna().to_numpy()  # text that does not parse stays as it was, for the usual error to show it
    arr = utc[ok].to_numpy()
    text = np.char.add(np.datetime_as_string(arr, unit=np.datetime_data(arr.dtype)[0]).astype(object), "+00:00")
    out = s.astype(object).copy()
    out[parts.index[ok]] = text
    return out


def _warn_zone_dropped(ts: pd.Series, name: str, tz: str | None) -> None:
    """Zone-aware values under a schema without ``tz`` are read (and come back) as naive UTC: say so."""
    zone = getattr(ts.dt, "tz", None)
    if zone is not None and tz is None:
        warnings.warn(f"column {name!r}: the values are in time zone {zone}, but the schema gives the column no "
                      f"\"tz\"; they were converted to UTC and come back as UTC times without a zone. Declare "
                      f"\"tz\": \"{zone}\" to read and write them in that zone", TimeZoneWarning, stacklevel=5)


def aligned_bounds(lower: float, upper: float, resolution: str) -> tuple[int, int]:
    """The first and last admissible values within [lower, upper], in steps of ``resolution``
    (integers: value = step * RESOLUTIONS[resolution] nanoseconds)."""
    step = RESOLUTIONS[resolution] / 1e9
    lo = math.ceil(lower / step - 1e-9)
    hi = math.floor(upper / step + 1e-9)
    return lo, hi


def off_resolution(v: np.ndarray, resolution: str, tz: str | None = None) -> np.ndarray:
    """Which (non-missing) values are not whole multiples of ``resolution`` (wall clock).  In a zone ``tz``
    a multiple that a DST change skips is where the release puts it, moved forward (Sao Paulo's midnight of
    2018-11-04 is 01:00), and counts as on the resolution."""
    if resolution == "nanosecond":
        return np.zeros(v.shape, dtype=bool)
    step = RESOLUTIONS[resolution] / 1e9
    q = v / step
    with np.errstate(invalid="ignore"):  # a microsecond of slack for float seconds
        off = np.abs(q - np.round(q)) > max(1e-6 / step, 1e-9)
    if tz is not None and off.any():
        x = v[off]
        floored = np.floor(x / step + 1e-9) * step
        wall = pd.Series(np.round(floored * 1e6).astype(np.int64).view("datetime64[us]"))
        moved = _wall_seconds(wall.dt.tz_localize(tz, ambiguous=np.zeros(len(wall), dtype=bool),
                                                  nonexistent="shift_forward"), tz)
        off[np.flatnonzero(off)[np.abs(moved - x) < 1e-6]] = False
    return off


def from_seconds(v, resolution: str, tz: str | None, lower: float, upper: float, snap: bool = True,
                 unit: str = "ns") -> pd.Series:
    """Wall-clock seconds as a datetime64 Series of ``unit`` (tz-aware in ``tz``); with ``snap`` each
    value is floored to its resolution (no finer than ``unit``) and kept within the admissible range of
    [lower, upper] (without, the values are kept as they are, to the unit)."""
    v = np.asarray(v, dtype=float)
    na = np.isnan(v)
    ticks_of = np.zeros(v.shape, dtype=np.int64)
    x = v[~na]
    per = UNITS[unit]
    if snap:
        step = RESOLUTIONS[resolution]
        lo, hi = aligned_bounds(lower, upper, resolution)
        ticks = np.clip(np.floor(np.clip(x, lower, upper) / (step / 1e9) + 1e-9), lo, hi)
        ticks_of[~na] = ticks.astype(np.int64) * (step // (10 ** 9 // per))
    else:
        ticks_of[~na] = np.round(x * per).astype(np.int64)
    out = pd.Series(ticks_of.view(f"datetime64[{unit}]"))
    out[na] = pd.NaT
    out = out.astype(f"datetime64[{unit}]")
    if tz is not None:
        # wall times a DST change skips move forward; repeated ones take the standard-time reading
        out = out.dt.tz_localize(tz, ambiguous=np.zeros(len(out), dtype=bool), nonexistent="shift_forward")
    return out


_TEXT = {"day": "%Y-%m-%d", "hour": "%Y-%m-%d %H:%M", "minute": "%Y-%m-%d %H:%M", "second": "%Y-%m-%d %H:%M:%S",
         "millisecond": "%Y-%m-%d %H:%M:%S.%f", "microsecond": "%Y-%m-%d %H:%M:%S.%f",
         "nanosecond": "%Y-%m-%d %H:%M:%S.%f"}


def to_text(ts: pd.Series, resolution: str, fmt: str | None = None) -> pd.Series:
    """Datetimes as text: ``fmt`` if given, else ISO 8601 at ``resolution`` (``2020-01-31``,
    ``2020-01-31 14:05:00``; a tz-aware value ends with its offset, ``+01:00``).  Missing stays NaN."""
    na = ts.isna().to_numpy()
    out = np.full(len(ts), np.nan, dtype=object)
    if (~na).any():
        t = ts[~na]
        if fmt is not None:
            text = t.dt.strftime(fmt)
        else:
            text = t.dt.strftime(_TEXT[resolution])
            if resolution == "millisecond":
                text = text.str[:-3]
            elif resolution == "nanosecond":
                text = text + t.dt.nanosecond.map(lambda x: f"{x:03d}")
            if getattr(t.dt, "tz", None) is not None:
                # %z writes +HHMM, and +HHMMSS for an offset with seconds (a zone's local mean time before ~1900)
                off = t.dt.strftime("%z").str.replace(r"^([+-]\d{2})(\d{2})(\d{2})?", _colon_offset, regex=True)
                text = text + off
        out[~na] = text.to_numpy(dtype=object)
    return pd.Series(out)


def _colon_offset(m) -> str:
    return f"{m[1]}:{m[2]}" + (f":{m[3]}" if m[3] else "")


def show(seconds: float, resolution: str, tz: str | None = None) -> str:
    """One wall-clock value as ISO text at ``resolution`` (with the zone's name when there is one)."""
    if seconds is None or not math.isfinite(float(seconds)):
        return str(seconds)
    if abs(float(seconds)) > 9e18:  # beyond numpy's datetime64 too
        return f"{float(seconds):g} epoch seconds"
    if not _NS_MIN <= float(seconds) <= _NS_MAX:
        # beyond datetime64[ns] (the year 1500, a 9999-12-31 sentinel): numpy's seconds cover any year people
        # write, its microseconds (for a finer resolution) any year from 1 to 9999
        if resolution in ("millisecond", "microsecond", "nanosecond") and abs(float(seconds)) < 9e12:
            us = int(round(float(seconds) * 1e6))
            step = max(RESOLUTIONS[resolution] // 1000, 1)
            value, unit = np.datetime64(us - us % step, "us"), "ms" if resolution == "millisecond" else "us"
        else:
            value = np.datetime64(int(math.floor(float(seconds))), "s")
            unit = "D" if resolution == "day" else "m" if resolution in ("hour", "minute") else "s"
        text = np.datetime_as_string(value, unit=unit).replace("T", " ")
        return f"{text} ({tz})" if tz else text
    ns = int(round(float(seconds) * 1e9))
    step = RESOLUTIONS[resolution]
    t = pd.Series(np.array([ns - ns % step], dtype=np.int64).view("datetime64[ns]"))
    text = to_text(t, resolution).iloc[0]
    return f"{text} ({tz})" if tz else text
