"""Public schema: what is known about a table without looking at its private rows.

A schema lists each column's kind (categorical / numerical / datetime), its public bounds or
category list and whether missing values may occur.  Everything here is *public knowledge*:
synthzoo never reads bounds or categories from private data without charging the privacy
ledger (see :mod:`synthzoo.core.dpschema` for the DP way to measure them).

JSON format (the one of ``../shared/datasets/*/schema.json``)::

    {"name": "adult", "target": "income", "task": "binary classification",
     "columns": {
        "age":   {"type": "numerical", "lower": 17, "upper": 90, "integer": true, "missing": false},
        "sex":   {"type": "categorical", "categories": ["Female", "Male"], "missing": false},
        "date":  {"type": "datetime", "lower": "2020-01-01", "upper": "2021-12-31", "missing": true},
        "seen":  {"type": "datetime", "lower": "2020-01-01 00:00", "upper": "2021-12-31 23:59",
                  "resolution": "minute", "tz": "Europe/Paris", "dtype": "string"}}}

Datetime columns: see :mod:`synthzoo.core.datetimes` (resolution, format, time zone, output type).
"""

from __future__ import annotations

import ctypes
import functools
import json
import datetime as _dt
import math
import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from . import datetimes as dtm
from .errors import ConfigError, SchemaError, quiet_parsing_advice

KINDS = ("categorical", "numerical", "datetime")
#: Output dtypes a categorical column may declare with its ``"dtype"`` key.
CATEGORICAL_DTYPES = ("str", "string", "int", "bool", "boolean", "category", "category[int]", "category[interval]")
#: The pandas category dtypes (``ordered`` applies to them).
CATEGORY_DTYPES = ("category", "category[int]", "category[interval]")
#: The categories of a True/False column, as :func:`category_key` spells its values (a bool dtype lists them).
BOOL_CATEGORIES = ("False", "True")
#: Output dtypes a datetime column may declare with its ``"dtype"`` key.
DATETIME_DTYPES = dtm.DATETIME_DTYPES
#: Output dtypes a numerical column may declare with its ``"dtype"`` key: numpy's integer and float
#: widths and pandas' nullable ones (capitalised), which hold missing values.
NUMERICAL_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
                    "float64", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Float32",
                    "Float64")
#: The integer ones, which a categorical column of integer categories may declare too (``int`` at a width).
INTEGER_DTYPES = tuple(d for d in NUMERICAL_DTYPES if "int" in d.lower())
#: Keys a column description may have (anything else is a typo, and an error).
COLUMN_KEYS = ("type", "kind", "lower", "upper", "integer", "categories", "missing", "dtype", "resolution",
               "format", "tz", "decimals", "ordered", "description")


class PrivateSchemaWarning(UserWarning):
    """Bounds or categories were read from private data without differential privacy."""


def category_key(value: Any) -> str:
    """The string form under which a raw categorical value is matched to the schema.

    Integral numbers match their integer spelling, so a CSV column read as ``1.0`` or ``1``
    matches the schema category ``"1"``; a number a float32 holds exactly is spelt as float32 spells it, so
    a float32 column's 1.1 (widened to 1.100000023841858 when pandas hands out its values) matches ``"1.1"``.
    """
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)):
        if float(value).is_integer():
            return str(int(value))
        f32 = np.float32(value)
        if np.isfinite(f32) and float(f32) == float(value):
            return str(f32)
    return str(value)


def _kept_numerical_dtype(dtype, integer: bool, missing: bool) -> str | None:
    """The ``"dtype"`` :meth:`Schema.infer` records for a numerical column, so that synthetic values come
    back in the frame's width or nullable flavour (``uint8``, ``int32``, ``float32``, ``Int16``, ...);
    None where the default types it so already, and for ``float64``: a reader makes whole numbers with
    a gap float64, which the default's ``Int64`` writes back as the file had them ("3", not "3.0")."""
    name = str(dtype)
    if name not in NUMERICAL_DTYPES or name == "float64":
        return None
    default = ("Int64" if missing else "int64") if integer else "float64"
    return None if name == default else name


def nullable_dtype_name(name: str) -> str:
    """pandas' nullable flavour of one of numpy's :data:`NUMERICAL_DTYPES` (``uint8`` -> ``UInt8``)."""
    return name[0].upper() + name[1:].replace("int", "Int")


def is_integer_dtype_name(name) -> bool:
    """Whether ``name`` is one of :data:`NUMERICAL_DTYPES` that holds integers only."""
    return isinstance(name, str) and name in NUMERICAL_DTYPES and "int" in name.lower()


_INTERVAL_TEXT = re.compile(r"([\(\[])(.+), (.+)([\)\]])")
_CLOSED = {("(", "]"): "right", ("[", ")"): "left", ("[", "]"): "both", ("(", ")"): "neither"}


def interval_categories(categories: list[str], name: str) -> pd.IntervalIndex:
    """The intervals a ``"category[interval]"`` column's categories print as (``"(0, 10]"``, as pandas prints
    ``pd.cut``'s bins), numbers or timestamps at their ends, all closed on the same side; SchemaError naming the
    column for a category that is no such interval or does not print back as itself."""
    def end(text: str):
        for read in (int, float, pd.Timestamp):
            try:
                return read(text)
            except (ValueError, TypeError):
                continue
        return None

    parts = [_INTERVAL_TEXT.fullmatch(c) for c in categories]
    bad = [c for c, m in zip(categories, parts) if m is None or end(m[2]) is None or end(m[3]) is None]
    closed = {_CLOSED[m[1], m[4]] for m in parts if m is not None}
    if bad or len(closed) != 1:
        what = f"{bad[0]!r} is not one" if bad else f"they are closed on different sides ({sorted(closed)})"
        raise SchemaError(f"column {name!r}: dtype 'category[interval]' needs categories written as pandas prints "
                          f"intervals of one kind, e.g. '(0, 10]'; {what}")
    try:
        index = pd.IntervalIndex.from_arrays([end(m[2]) for m in parts], [end(m[3]) for m in parts],
                                             closed=closed.pop())
    except (ValueError, TypeError) as e:
        raise SchemaError(f"column {name!r}: the categories are not intervals of one type ({str(e)[:80]})") from None
    back = [category_key(i) for i in index]
    if back != list(categories):
        odd = next(c for c, b in zip(categories, back) if c != b)
        raise SchemaError(f"column {name!r}: category {odd!r} reads back as {back[categories.index(odd)]!r}; write "
                          "it as pandas prints the interval")
    return index


def period_dtype(name) -> pd.PeriodDtype | None:
    """The pandas period dtype a categorical column's ``"dtype"`` names (``"period[M]"``,
    ``"period[Q-DEC]"``: ``str`` of the dtype), or None for any other value."""
    if not (isinstance(name, str) and name.startswith("period[") and name.endswith("]")):
        return None
    try:
        with warnings.catch_warnings():  # (pandas deprecates business-day periods with a FutureWarning)
            warnings.simplefilter("ignore", FutureWarning)
            dtype = pd.api.types.pandas_dtype(name)
    except (TypeError, ValueError):
        return None
    return dtype if isinstance(dtype, pd.PeriodDtype) else None


def _period_text(text: str, dtype: pd.PeriodDtype) -> str | None:
    """``text`` read as a period of ``dtype`` and printed back (None if it does not read): pandas reads
    "2020-01-15" as the period 2020-01, so a category is a period's only where the two agree."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return str(pd.Period(text, freq=dtype.freq))
    except (TypeError, ValueError, OverflowError):
        return None


def _near_categories(bad, categories) -> str:
    """A hint for values that are a listed category but for spaces around them or letter case (" Adelie",
    "adelie"): the usual slips of a hand-made CSV, which the error alone leaves to be spotted."""
    folded = {str(c).strip().casefold(): c for c in categories}
    near = []
    for v in bad:
        c = folded.get(str(v).strip().casefold())
        if c is not None:
            why = "spaces around it" if str(v).strip() == str(c) else "letter case"
            near.append(f"{v!r} is {c!r} but for {why}")
    return f"; {'; '.join(near)}" if near else ""


@dataclass
class Column:
    """One column's public description.

    Parameters
    ----------
    name : str
    kind : {"categorical", "numerical", "datetime"}
    lower, upper : float or str, optional
        Public bounds of a numerical or datetime column (ISO text, datetimes or epoch seconds for
        datetimes; stored as wall-clock seconds in the column's zone).
    integer : bool, default False
        Values are whole numbers.
    categories : list of str, optional
        The complete public list of a categorical column.
    missing : bool, default False
        Whether missing values may occur.
    dtype : str, optional
        How synthetic values are typed (see :attr:`output_dtype`): for a categorical column one of
        ``"str", "string"`` (pandas' ``StringDtype`` with ``pd.NA`` for missing values, what
        ``convert_dtypes`` makes), ``"int", "bool"``, ``"boolean"`` (pandas' nullable ``BooleanDtype``, with or
        without missing values), ``"category"``, ``"category[int]"`` (a pandas category column whose categories
        are integers), ``"category[interval]"`` (one whose categories are intervals, as ``pd.cut`` makes: the
        categories written as pandas prints them, ``"(0, 10]"``), or a pandas period dtype (``"period[M]"``, the categories written as pandas prints its
        periods); for a datetime column ``"datetime"`` (default, ``datetime64[ns]``),
        a unit ``"datetime64[s]"``, ``"[ms]"``, ``"[us]"`` or ``"[ns]"``, or ``"string"``; for a numerical column one of :data:`NUMERICAL_DTYPES` (default ``int64``
        for integers, ``Int64`` when missing values may occur, else ``float64``): an integer dtype
        implies ``integer``, numpy's cannot hold missing values, and the bounds must lie in its range.
    resolution : str, optional
        Datetime columns: ``"day"``, ``"hour"``, ``"minute"``, ``"second"``, ``"millisecond"``,
        ``"microsecond"`` or ``"nanosecond"``; synthetic values are whole multiples of it.  Default:
        the form of the bounds (``"1930-01-01"`` means days).
    format : str, optional
        Datetime columns: strftime codes of the text (``"%d/%m/%Y"``), for reading and for
        ``dtype="string"`` output; default ISO 8601.
    tz : str, optional
        Datetime columns: the IANA time zone values are read and returned in; default naive (UTC).
    decimals : int, optional
        Numerical columns that are not integers: synthetic values are rounded to this many decimal
        places (the precision the values are recorded at, e.g. 2 for amounts of money), rather than
        written with a float's 15-17 digits.
    ordered : bool, default False
        Categorical columns: the categories are ordered as listed (low to high), and synthetic values
        are a pandas ordered category column over them (``dtype`` ``"category"``, the default then, or
        ``"category[int]"``).

    Examples
    --------
    >>> Column("age", "numerical", lower=17, upper=90, integer=True).output_dtype
    dtype('int64')
    >>> Column("dob", "datetime", lower="1930-01-01", upper="2005-12-31").resolution
    'day'
    """

    name: str
    kind: str
    lower: float | None = None
    upper: float | None = None
    integer: bool = False
    categories: list[str] | None = None
    missing: bool = False
    dtype: str | None = None  # how synthetic values are typed (see output_dtype)
    resolution: str | None = None  # datetime only
    format: str | None = None  # datetime only
    tz: str | None = None  # datetime only
    decimals: int | None = None  # numerical, not integer, only
    ordered: bool = False  # categorical only: the categories' order is the list's
    # read from the rows (Schema.infer): a schema built of such a column is marked READ_FROM_ROWS, whatever
    # meta it is given; not part of the description (never written, not compared)
    read_from_rows: bool = field(default=False, compare=False, repr=False)

    @classmethod
    def from_spec(cls, name: str, spec: dict) -> "Column":
        """A column from its JSON description (``"type"`` or ``"kind"``; the keys of :data:`COLUMN_KEYS`).
        A numerical column's integer ``dtype`` implies ``"integer": true``."""
        return cls(name, spec.get("type", spec.get("kind")), lower=spec.get("lower"), upper=spec.get("upper"),
                   integer=spec.get("integer", is_integer_dtype_name(spec.get("dtype"))),
                   categories=spec.get("categories"),
                   missing=spec.get("missing", False), dtype=spec.get("dtype"), resolution=spec.get("resolution"),
                   format=spec.get("format"), tz=spec.get("tz"), decimals=spec.get("decimals"),
                   ordered=spec.get("ordered", False))

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"column names must be non-empty strings, got {self.name!r}")
        if self.kind not in KINDS:
            raise SchemaError(f"column {self.name!r}: unknown type {self.kind!r}; expected one of {KINDS}")
        if self.kind != "datetime":
            extra = [k for k in ("resolution", "format", "tz") if getattr(self, k) is not None]
            if extra:
                raise SchemaError(f"column {self.name!r}: {extra} apply to datetime columns only, not to a "
                                  f"{self.kind} column")
        if self.dtype is not None:
            allowed = {"categorical": CATEGORICAL_DTYPES + INTEGER_DTYPES, "datetime": DATETIME_DTYPES,
                       "numerical": NUMERICAL_DTYPES}[self.kind]
            if not isinstance(self.dtype, str) or (self.dtype not in allowed and not (
                    self.kind == "categorical" and period_dtype(self.dtype) is not None)):
                period = " or a pandas period dtype ('period[M]')" if self.kind == "categorical" else ""
                raise SchemaError(f"column {self.name!r}: 'dtype' of a {self.kind} column must be one of "
                                  f"{allowed}{period}; got {str(self.dtype)[:40]!r}")
        if not isinstance(self.integer, (bool, np.bool_)) or not isinstance(self.missing, (bool, np.bool_)):
            raise SchemaError(f"column {self.name!r}: 'integer' and 'missing' must be true or false")
        if not isinstance(self.ordered, (bool, np.bool_)):
            raise SchemaError(f"column {self.name!r}: 'ordered' must be true or false, got {str(self.ordered)[:40]!r}")
        if self.ordered and (self.kind != "categorical" or self.dtype not in (None, *CATEGORY_DTYPES)):
            raise SchemaError(f"column {self.name!r}: 'ordered' applies to categorical columns typed as a pandas "
                              f"category ('dtype' one of {list(CATEGORY_DTYPES)}), not to a {self.kind} column"
                              + (f" of dtype {self.dtype!r}" if self.kind == "categorical" else ""))
        self.ordered = bool(self.ordered)
        if self.decimals is not None:
            if self.kind != "numerical" or self.integer:
                raise SchemaError(f"column {self.name!r}: 'decimals' applies to numerical columns that are not "
                                  "integers")
            if (isinstance(self.decimals, (bool, np.bool_)) or not isinstance(self.decimals, (int, np.integer))
                    or not 0 <= self.decimals <= 15):
                raise SchemaError(f"column {self.name!r}: 'decimals' must be a whole number from 0 to 15, got "
                                  f"{str(self.decimals)[:40]!r}")
            self.decimals = int(self.decimals)
        if self.kind == "categorical":
            if not self.categories or not isinstance(self.categories, (list, tuple)):
                raise SchemaError(f"column {self.name!r}: a categorical column needs a non-empty 'categories' list")
            if any(isinstance(c, (list, dict, tuple)) or c is None for c in self.categories):
                raise SchemaError(f"column {self.name!r}: categories must be strings or numbers")
            if any(isinstance(c, (float, np.floating)) and not math.isfinite(c) for c in self.categories):
                raise SchemaError(f"column {self.name!r}: a category cannot be NaN or infinite (missing values are "
                                  "declared with \"missing\": true)")
            self.categories = [category_key(c) for c in self.categories]
            if len(set(self.categories)) != len(self.categories):
                raise SchemaError(f"column {self.name!r}: duplicate categories in the schema")
            if (self.dtype in ("int", "category[int]") or is_integer_dtype_name(self.dtype)) \
                    and not all(_INT.fullmatch(c) for c in self.categories):
                raise SchemaError(f"column {self.name!r}: dtype {self.dtype!r} needs integer categories")
            if self.dtype in ("int", "category[int]") or is_integer_dtype_name(self.dtype):
                ints = [int(c) for c in self.categories]
                if not is_integer_dtype_name(self.dtype):  # int64 holds them, as for a declared width
                    lo, hi = min(ints), max(ints)
                    if lo < -2 ** 63 or hi >= 2 ** 63:
                        raise SchemaError(f"column {self.name!r}: categories from {lo} to {hi} exceed what dtype "
                                          f"{self.dtype!r} (int64) holds; declare dtype 'str' to keep them as text")
                else:
                    self._check_width(min(ints), max(ints), "categories")
            if self.dtype == "category[interval]":
                interval_categories(self.categories, self.name)  # each must read back as the interval it prints
            if self.dtype in ("bool", "boolean") and not set(self.categories) <= set(BOOL_CATEGORIES):
                raise SchemaError(f"column {self.name!r}: dtype {self.dtype!r} needs the categories True/False")
            if (period := period_dtype(self.dtype)) is not None:
                bad = [c for c in self.categories if _period_text(c, period) != c]
                if bad:
                    raise SchemaError(f"column {self.name!r}: dtype {self.dtype!r} needs categories written as "
                                      f"periods of that frequency (as pandas prints them); got {bad[0][:40]!r}")
        else:
            if self.lower is None or self.upper is None:
                raise SchemaError(
                    f"column {self.name!r}: a {self.kind} column needs public 'lower' and 'upper' bounds "
                    "(or measure them with synthzoo.core.dpschema.dp_schema, which charges the budget)")
            if self.kind == "datetime":
                self._datetime_init()
            else:
                for which in ("lower", "upper"):
                    b = getattr(self, which)
                    if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, float, np.integer, np.floating)):
                        raise SchemaError(f"column {self.name!r}: '{which}' must be a number, got {b!r}")
                self.lower, self.upper = float(self.lower), float(self.upper)
            if not (math.isfinite(self.lower) and math.isfinite(self.upper)):
                raise SchemaError(f"column {self.name!r}: bounds must be finite")
            if not math.isfinite(self.upper - self.lower):  # binning and scaling divide by the span
                raise SchemaError(f"column {self.name!r}: bounds [{self.show(self.lower)}, {self.show(self.upper)}] "
                                  "span more than a float64 holds; rescale the column (divide it by a power of ten)")
            if self.kind == "numerical" and self.integer and max(abs(self.lower), abs(self.upper)) > 2.0 ** 53:
                raise SchemaError(f"column {self.name!r}: integer bounds beyond +-2^53 cannot be held exactly, got "
                                  f"[{self.show(self.lower)}, {self.show(self.upper)}]")
            if self.lower > self.upper:
                raise SchemaError(f"column {self.name!r}: lower bound {self.show(self.lower)} exceeds upper bound "
                                  f"{self.show(self.upper)}")
            if self.kind == "numerical" and self.integer and math.ceil(self.lower) > math.floor(self.upper):
                raise SchemaError(f"column {self.name!r}: an integer column, but no whole number lies between the "
                                  f"bounds {self.show(self.lower)} and {self.show(self.upper)}")
            if self.kind == "numerical" and self.dtype is not None:
                self._check_numerical_dtype()
            if self.kind == "datetime":
                lo, hi = dtm.aligned_bounds(self.lower, self.upper, self.resolution)
                if lo > hi:
                    raise SchemaError(f"column {self.name!r}: no whole {self.resolution} lies between the bounds "
                                      f"{self.show(self.lower, exact=True)} and {self.show(self.upper, exact=True)}")

    def _check_numerical_dtype(self) -> None:
        """A declared numerical dtype must hold every value the schema allows: whole numbers for an
        integer dtype, missing values for a numpy one only if none may occur, the bounds in its range."""
        if is_integer_dtype_name(self.dtype) and not self.integer:
            raise SchemaError(f"column {self.name!r}: dtype {self.dtype!r} holds whole numbers only, but 'integer' "
                              "is false")
        self._check_width(self.lower, self.upper, "bounds")

    def _check_width(self, lo, hi, what: str) -> None:
        """The declared width holds ``[lo, hi]`` (the bounds, or the integer categories) and, when missing
        values may occur and it is an integer width, is one of pandas' nullable dtypes."""
        d = self.dtype
        if self.missing and d[0].islower() and is_integer_dtype_name(d):  # numpy's floats hold NaN
            raise SchemaError(f"column {self.name!r}: dtype {d!r} cannot hold missing values, but 'missing' is true; "
                              f"declare {nullable_dtype_name(d)!r} (pandas' nullable dtype) or 'missing': false")
        info = np.iinfo(d.lower()) if is_integer_dtype_name(d) else np.finfo(d.lower())
        least, most = (int(info.min), int(info.max)) if is_integer_dtype_name(d) else (float(info.min), float(info.max))
        if lo < least or hi > most:  # Python numbers: float16's own scalars overflowed in the comparison
            span = f"[{self.show(lo)}, {self.show(hi)}]" if what == "bounds" else f"from {lo} to {hi}"
            raise SchemaError(f"column {self.name!r}: {what} {span} exceed what dtype {d!r} holds "
                              f"([{least}, {most}])")

    def _datetime_init(self) -> None:
        for which in ("lower", "upper"):
            b = getattr(self, which)
            if isinstance(b, (bool, np.bool_)) or not isinstance(b, (str, int, float, np.integer, np.floating,
                                                                      _dt.date, np.datetime64)):
                raise SchemaError(f"column {self.name!r}: '{which}' must be a date/time (ISO text), got "
                                  f"{type(b).__name__} {str(b)[:40]!r}")
        self.tz = dtm.check_tz(self.tz, self.name)
        self.format = dtm.check_format(self.format, self.name)
        if self.resolution is None and self.format is None:
            for which in ("lower", "upper"):
                v = getattr(self, which)
                if isinstance(v, str) and re.fullmatch(r"\s*\d{4}(-\d{2})?\s*", v):
                    raise SchemaError(
                        f"column {self.name!r}: '{which}' bound {v!r} is a year or year-month, which is not a "
                        f"resolution synthzoo has (the coarsest is a day); declare the column's \"format\" (e.g. "
                        f"\"%Y-%m\": values are read and written as such text, synthesized as days) or give the "
                        f"bound as a date such as 1980-01-01")
        if self.resolution is None:
            self.resolution = dtm.finer(dtm.resolution_of_bound(self.lower, self.format),
                                        dtm.resolution_of_bound(self.upper, self.format))
        elif not isinstance(self.resolution, str) or self.resolution not in dtm.RESOLUTIONS:
            coarse = {"week": None, "month": "%Y-%m", "year": "%Y"}.get(str(self.resolution).strip().lower(), 0)
            hint = "" if coarse == 0 else (
                "; the coarsest resolution is a day" + (f": declare the column's \"format\" {coarse!r} with \"dtype\": "
                                                        "\"string\" to read and write such text (synthesized as days)"
                                                        if coarse else ""))
            raise SchemaError(f"column {self.name!r}: unknown resolution {str(self.resolution)[:40]!r}; expected "
                              f"one of {tuple(dtm.RESOLUTIONS)}{hint}")
        self.lower = dtm.bound_seconds(self.lower, self.name, "lower", self.tz, self.format)
        self.upper = dtm.bound_seconds(self.upper, self.name, "upper", self.tz, self.format)
        self._check_unit()

    @property
    def unit(self) -> str | None:
        """A datetime column's unit of pandas datetimes (``"ns"`` by default, the ``dtype``'s
        ``"datetime64[us]"`` -> ``"us"``); None for other columns."""
        return dtm.unit_of(self.dtype, self.resolution) if self.kind == "datetime" else None

    def _check_unit(self) -> None:
        """The unit holds the resolution and the bounds: datetime64[ns] spans 1677-09-22 to 2262-04-10
        only, the other units the years 1 to 9999 (pandas 3 reads 1500-01-01 as microseconds)."""
        unit, shown = self.unit, self.dtype if self.dtype not in (None, "datetime") else "datetime"
        finest = {"s": "second", "ms": "millisecond", "us": "microsecond", "ns": "nanosecond"}[unit]
        if dtm.finer(self.resolution, finest) != finest:
            raise SchemaError(f"column {self.name!r}: the resolution {self.resolution!r} is finer than dtype "
                              f"{shown!r} holds (whole {finest}s); declare a coarser \"resolution\" or a finer "
                              f"\"dtype\" such as \"datetime64[{'ns' if finest == 'microsecond' else 'us'}]\"")
        lo, hi, span = dtm.unit_span(unit)
        for which, x in (("lower", self.lower), ("upper", self.upper)):
            if not lo <= x <= hi:
                if self.dtype == "string":  # text at the nanosecond
                    fix = "declare a coarser \"resolution\" (a microsecond's holds the years 1 to 9999)"
                else:
                    fix = ("declare \"dtype\": \"datetime64[us]\" (pandas' microsecond datetimes, the years 1 to "
                           "9999) or \"string\" (text)")
                what = ("text at the nanosecond" if self.dtype == "string"
                        else f"dtype {shown!r}" + (f" (datetime64[{unit}])" if shown == "datetime" else ""))
                raise SchemaError(f"column {self.name!r}: '{which}' bound {self.show(x)} lies outside what {what} "
                                  f"holds, {span}; {fix}")

    @property
    def is_numeric(self) -> bool:
        return self.kind in ("numerical", "datetime")

    def show(self, x, exact: bool = False) -> str:
        """A bound or value as people read it: ISO text for datetimes (at the column's resolution,
        or to the second and finer with ``exact``), ``%g`` for numbers."""
        if self.kind == "datetime":
            res = self.resolution or "second"
            if exact:
                res = dtm.finer(res, "second")
                if float(x) != round(float(x)):
                    res = dtm.finer(res, "microsecond")
            return dtm.show(x, res, self.tz)
        try:
            x = float(x)
        except (TypeError, ValueError):
            return str(x)
        return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:g}"

    @property
    def output_dtype(self):
        """The dtype of this column in every synthetic frame, from the schema alone.

        Never read from the private frame: one extra record with a missing value would otherwise
        flip an integer column to float, a pandas ``category`` column's observed categories would
        decide which synthetic values survive, and one record with another UTC offset turns a parsed
        datetime column into text -- all distinguish neighbouring inputs.

        * numerical: the column's ``dtype`` key, else ``int64`` (``Int64`` when missing values are
          allowed) if ``integer``, else ``float64``;
        * datetime: ``datetime64[ns]`` (tz-aware in the column's ``tz``), the unit its ``dtype``
          declares (``"datetime64[us]"``), or pandas' string dtype for ``dtype="string"``;
        * categorical: the column's ``dtype`` key, else ``int`` when every category is a plain integer
          spelling (``"007"`` and ``"02139"`` are not: they stay text), ``bool`` for True/False, ``str``
          otherwise; ``int``/``bool`` become the nullable
          ``Int64``/``boolean`` when missing values are allowed (or an integer width of
          :data:`INTEGER_DTYPES`, as declared), ``str`` is pandas' default string
          dtype (what ``read_csv`` gives; object before pandas 3), ``string`` pandas' ``StringDtype``
          with ``pd.NA`` as missing (``"string"``, what ``convert_dtypes`` gives), ``category`` a pandas
          ``CategoricalDtype`` over the schema's categories.
        """
        if self.kind == "datetime":
            if self.dtype == "string":
                return _STR
            return pd.DatetimeTZDtype(self.unit, self.tz) if self.tz else np.dtype(f"datetime64[{self.unit}]")
        if self.kind == "numerical":
            if self.dtype is not None:
                return pd.api.types.pandas_dtype(self.dtype)
            if self.integer:
                return pd.Int64Dtype() if self.missing else np.dtype("int64")
            return np.dtype("float64")
        kind = self.dtype or ("category" if self.ordered else _categorical_default(self.categories))
        if is_integer_dtype_name(kind):
            return pd.api.types.pandas_dtype(kind)
        if kind == "int":
            return pd.Int64Dtype() if self.missing else np.dtype("int64")
        if kind == "bool":
            return pd.BooleanDtype() if self.missing else np.dtype("bool")
        if kind == "boolean":
            return pd.BooleanDtype()
        if kind == "string":
            return pd.StringDtype()
        if kind == "category":
            return pd.CategoricalDtype(list(self.categories), ordered=self.ordered)
        if kind == "category[int]":  # a pandas category column over integers: its categories stay integers
            return pd.CategoricalDtype(pd.Index([int(c) for c in self.categories], dtype="int64"), ordered=self.ordered)
        if kind == "category[interval]":  # pd.cut's bins: intervals again
            return pd.CategoricalDtype(interval_categories(self.categories, self.name), ordered=self.ordered)
        return period_dtype(kind) or _STR

    def typed(self, values) -> pd.Series:
        """Decoded values (schema strings for categories, floats / wall-clock seconds otherwise) as a
        Series of :attr:`output_dtype`; datetimes are floored to the column's resolution."""
        v = pd.Series(values)
        na = v.isna().to_numpy()
        dtype = self.output_dtype
        if self.is_numeric:
            x = v.to_numpy(dtype=float)
            bad = np.isinf(x) | (np.isnan(x) & (not self.missing))
            if bad.any():  # no fitted model decodes to these; weights edited in a model file do
                raise ConfigError(f"column {self.name!r}: the model's output holds {int(bad.sum())} non-finite "
                                  "value(s), which the schema does not allow (a model file with edited weights?)")
        if self.kind == "datetime":
            ts = self.datetimes(x)
            if self.dtype == "string":
                return pd.Series(dtm.to_text(ts, self.resolution, self.format).to_numpy(dtype=object), dtype=_STR)
            return ts.astype(dtype)
        if self.kind == "numerical":
            v = pd.Series(x, index=v.index)
            if self.decimals is not None:  # within the bounds still, where a bound has more decimals
                v = v.round(self.decimals).clip(self.lower, self.upper)
            return (v.round() if self.integer else v).astype(dtype)
        if isinstance(dtype, pd.CategoricalDtype):
            if self.dtype in ("category[int]", "category[interval]"):  # schema strings -> its categories, by position
                codes = pd.Categorical(v.where(~na, None), categories=list(self.categories)).codes
                return pd.Series(pd.Categorical.from_codes(codes, dtype=dtype), index=v.index)
            return pd.Series(pd.Categorical(v.where(~na, None), dtype=dtype))
        if dtype is _STR or isinstance(dtype, pd.StringDtype):
            return pd.Series(v.to_numpy(dtype=object), dtype=dtype)
        if isinstance(dtype, pd.PeriodDtype):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                return pd.Series(pd.PeriodIndex(v.where(~na, None).to_list(), dtype=dtype), index=v.index)
        if pd.api.types.is_bool_dtype(dtype):
            return v.map({"True": True, "False": False}).astype(dtype)
        return pd.to_numeric(v).astype(dtype)

    def as_categorical(self, s: pd.Series) -> pd.Categorical:
        """The values of this categorical column as a pandas Categorical over the schema's categories,
        matched by :func:`category_key` (missing values get code -1): one hash pass over the values,
        then array lookups.  A Categorical over the schema's categories is returned as it is.
        Raises :class:`SchemaError` naming values outside the schema."""
        if self.is_schema_categorical(s):
            return s.array
        if isinstance(getattr(s, "dtype", None), pd.CategoricalDtype):
            # through the frame's own categories, those in use: pd.cut's intervals factorized with a missing value
            # became float intervals ("(0.0, 10.0]") that no longer matched their category "(0, 10]"
            cat = pd.Categorical(s)
            codes = np.asarray(cat.codes, dtype=np.int64)
            used = np.unique(codes[codes >= 0])
            pos = np.full(len(cat.categories) + 1, -1, dtype=np.int64)  # the last reads code -1 (missing)
            pos[used] = self.positions(cat.categories[used])
            return pd.Categorical.from_codes(pos[codes], dtype=pd.CategoricalDtype(self.categories))
        values = np.asarray(s, dtype=object)
        shared = _by_identity(values)  # (row -> object, objects): values are then matched per object
        if shared is None:
            codes, uniques = pd.factorize(values, use_na_sentinel=True)
        else:
            codes, objects = shared
            of_object, uniques = pd.factorize(objects, use_na_sentinel=True)
        pos = self.positions(uniques)
        itype = np.int8 if len(self.categories) < 127 else np.int16 if len(self.categories) < 32767 else np.int32
        lookup = np.append(pos, -1).astype(itype)  # the NA sentinel -1 reads the appended -1
        if shared is not None:
            lookup = lookup[of_object]  # composed on the few objects: one lookup per row
        return pd.Categorical.from_codes(lookup[codes], dtype=pd.CategoricalDtype(self.categories))

    def positions(self, values) -> np.ndarray:
        """The index among the schema's categories of each of ``values`` (distinct, none missing),
        matched by :func:`category_key`.  Raises :class:`SchemaError` naming values outside the schema."""
        keys = [category_key(u) for u in values]
        index = {c: i for i, c in enumerate(self.categories)}
        pos = np.array([index.get(k, -1) for k in keys], dtype=np.int64)
        if (pos < 0).any():
            for u, p in zip(values, pos):
                if p < 0 and isinstance(u, bytes):  # b'abc' is not 'abc': the text would show "b'abc'" unexplained
                    _no_bytes(self.name, u)
            bad = sorted({k for k, p in zip(keys, pos) if p < 0})
            raise SchemaError(f"column {self.name!r}: value(s) {bad[:5]} not among the schema's categories "
                              f"({len(bad)} unseen){_near_categories(bad[:5], self.categories)}")
        return pos

    def is_schema_categorical(self, s) -> bool:
        """Whether ``s`` is already a pandas Categorical over exactly this column's categories, in order."""
        dtype = getattr(s, "dtype", None)
        return (isinstance(dtype, pd.CategoricalDtype) and len(dtype.categories) == len(self.categories)
                and list(dtype.categories) == self.categories)

    def datetimes(self, seconds, snap: bool = True) -> pd.Series:
        """Wall-clock seconds as datetimes of this column (tz-aware in ``tz``); ``snap`` floors them to
        the resolution within the bounds."""
        return dtm.from_seconds(seconds, self.resolution, self.tz, self.lower, self.upper, snap=snap, unit=self.unit)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"type": self.kind}
        if self.kind == "categorical":
            d["categories"] = list(self.categories)
        elif self.kind == "datetime":
            lo, hi = dtm.aligned_bounds(self.lower, self.upper, self.resolution)
            step = dtm.RESOLUTIONS[self.resolution] / 1e9
            exact = (lo * step != self.lower) or (hi * step != self.upper)
            # ISO text at the resolution; a bound between two steps keeps its exact value (to the ns)
            res = "nanosecond" if exact else self.resolution
            d["lower"], d["upper"] = dtm.show(self.lower, res), dtm.show(self.upper, res)
            d["resolution"] = self.resolution
            if self.tz is not None:
                d["tz"] = self.tz
            if self.format is not None:
                d["format"] = self.format
        else:
            d["lower"], d["upper"] = _plain(self.lower, self.integer), _plain(self.upper, self.integer)
            d["integer"] = self.integer
            if self.decimals is not None:
                d["decimals"] = self.decimals
        d["missing"] = self.missing
        if self.dtype is not None:
            d["dtype"] = self.dtype
        if self.ordered:
            d["ordered"] = True
        return d


#: From this many values text is factorized by object identity first (below, by value alone).
IDENTITY_ROWS = 1 << 16


def _by_identity(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """For a long object array whose values are mostly shared objects, ``(codes, objects)``: the
    index of each value's object in ``objects``, one object per identity; None otherwise.

    pandas' CSV reader keeps one Python object per distinct text, and every row selection shares
    them, so a long text column is hashed as integers -- its references, about five times faster
    than strings are hashed and compared -- and only the few distinct objects by value."""
    n = len(values)
    if n < IDENTITY_ROWS or values.dtype != object or values.ndim != 1 or not values.flags.c_contiguous:
        return None
    # the array's references as integers; ``values`` keeps every object alive while they are read
    ids = np.ctypeslib.as_array((ctypes.c_ssize_t * n).from_address(values.ctypes.data))
    if len(pd.unique(ids[:4096])) > 1024:  # mostly distinct objects: hashing by value is as cheap
        return None
    codes, distinct = pd.factorize(ids)
    objects = np.empty(len(distinct), dtype=object)
    objects[:] = [ctypes.cast(int(i), ctypes.py_object).value for i in distinct]
    return codes, objects


def _distinct(s: pd.Series) -> np.ndarray:
    """The distinct values of ``s`` (missing values included), as ``s.unique()``, by identity first
    for long text columns."""
    values = s.to_numpy() if s.dtype == object or isinstance(s.dtype, pd.StringDtype) else None
    shared = _by_identity(np.asarray(values, dtype=object)) if values is not None else None
    return np.asarray(s.unique() if shared is None else pd.unique(shared[1]), dtype=object)


# pandas' default string dtype from pandas 3 on (NaN as missing); object before
_STR = pd.StringDtype(na_value=np.nan) if int(pd.__version__.split(".")[0]) >= 3 else np.dtype(object)
_INT = re.compile(r"-?\d+")


def _categorical_default(categories) -> str:
    # plain integer spellings only: "02139" or "007" would come back as 2139 and 7; and within int64, which
    # 20-digit codes (card or account numbers) exceed
    if all(_INT.fullmatch(c) and str(int(c)) == c and -2 ** 63 <= int(c) < 2 ** 63 for c in categories):
        return "int"
    if set(categories) <= set(BOOL_CATEGORIES):
        return "bool"
    return "str"


def _plain(x: float, integer: bool):
    return int(x) if integer and float(x).is_integer() else x


def _to_epoch_seconds(s: pd.Series, name: str) -> np.ndarray:
    """Datetime values as float seconds since 1970, UTC wall clock (NaT -> NaN); ISO text only."""
    return dtm.to_seconds(s, name)


@dataclass
class Schema:
    """An ordered set of :class:`Column` descriptions plus optional metadata (target, task).

    Parameters
    ----------
    columns : list of Column
    meta : dict, optional
        Any other top-level key of the JSON format (``name``, ``target``, ``task``, ...).

    Examples
    --------
    >>> schema = Schema.from_dict({"columns": {"sex": {"type": "categorical", "categories": ["F", "M"]}}})
    >>> schema.names
    ['sex']
    """

    columns: list[Column]
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise SchemaError("schema lists a column twice")
        if not names:
            raise SchemaError("schema has no columns")
        inferred = [c.name for c in self.columns if c.read_from_rows]
        if inferred and READ_FROM_ROWS not in self.meta:
            # built from an inferred schema's columns (a subset, one column changed): still read from the rows
            more = f" and {len(inferred) - 5} more" if len(inferred) > 5 else ""
            shown = ", ".join(repr(n) for n in inferred[:5]) + more
            self.meta = {**self.meta, READ_FROM_ROWS: f"Schema.infer: column(s) {shown}: kinds, bounds, categories "
                                                      "and missing values"}

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict) -> "Schema":
        """A schema from its JSON form (see the module docstring).  Unknown keys in a column
        description are an error naming them (a typo such as ``"lowr"`` must not pass silently)."""
        if not isinstance(d, dict) or "columns" not in d or not isinstance(d["columns"], dict):
            raise SchemaError("schema JSON needs a 'columns' object mapping names to column descriptions")
        cols = []
        for name, spec in d["columns"].items():
            if not isinstance(spec, dict):
                raise SchemaError(f"column {name!r}: the description must be an object, got {type(spec).__name__}")
            unknown = sorted(set(spec) - set(COLUMN_KEYS))
            if unknown:
                raise SchemaError(f"column {name!r}: unknown key(s) {unknown}; a column description has "
                                  f"{list(COLUMN_KEYS)}")
            cols.append(Column.from_spec(name, spec))
        meta = {k: v for k, v in d.items() if k != "columns"}
        _check_meta(meta, {c.name: c for c in cols})
        for c in cols if READ_FROM_ROWS in meta else ():
            c.read_from_rows = True  # the mark stays with the columns, as in the schema Schema.infer returned
        return cls(cols, meta)

    @classmethod
    def from_json(cls, path: str | Path) -> "Schema":
        return cls.from_dict(read_json_file(path, "schema"))

    def to_dict(self) -> dict:
        return {**self.meta, "columns": {c.name: c.to_dict() for c in self.columns}}

    def to_json(self, path: str | Path) -> None:
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1)

    @classmethod
    def infer(cls, df: pd.DataFrame, max_categories: int = 50) -> "Schema":
        """Read kinds, bounds and categories straight from ``df``.

        Convenient, but **not differentially private**: bounds and category lists read from
        private rows can reveal individual records (a text column of more than ``max_categories``
        distinct values, often an identifier, gets a warning of its own).  The schema's meta records
        it (:data:`READ_FROM_ROWS`), so that a private release fitted on it says in its
        ``privacy_report()`` that its (epsilon, delta) does not cover the schema.  Use a public schema, or
        measure them with :func:`synthzoo.core.dpschema.dp_schema`, which charges the privacy ledger.
        """
        warnings.warn(
            "Schema.infer reads bounds and categories from the data itself; they are NOT covered by "
            "differential privacy. Use a public schema (Schema.from_json) or measure them through the "
            "privacy ledger with synthzoo.dp_schema(df, kinds, epsilon=..., delta=...).",
            PrivateSchemaWarning, stacklevel=2)
        if not isinstance(df, pd.DataFrame):
            raise SchemaError(f"Schema.infer expects a pandas DataFrame, got {type(df).__name__}")
        check_column_names(df)
        if len(df) == 0:
            raise SchemaError("cannot infer a schema from an empty table")
        cols = []
        for name in df.columns:
            kind = infer_kind(df[name], max_categories)  # a list or dict in a cell: SchemaError
            s = df[name]
            missing = bool(s.isna().any())
            if kind == "categorical":
                if isinstance(s.dtype, pd.CategoricalDtype):  # the dtype's set, unused ones too, in its order
                    cats = list(dict.fromkeys(category_key(c) for c in s.dtype.categories))
                elif isinstance(s.dtype, pd.PeriodDtype):  # periods listed in time order, as pandas prints them
                    cats = [str(p) for p in sorted(s.dropna().unique())]
                else:
                    cats = sorted({category_key(v) for v in s.dropna()})
                if not cats:
                    raise SchemaError(f"column {name!r}: every value is missing, so nothing says what it holds; "
                                      "drop it, or describe it in a schema (its type and public bounds or "
                                      "categories)")
                layout = number_layout(cats) if len(cats) > 1 else None
                if layout == "comma":
                    # '4,324': thousands separators, or decimal commas -- a decimal mark must not be guessed
                    warnings.warn(f"column {name!r}: its text reads as numbers with a comma every three digits (e.g. "
                                  f"{next(c for c in cats if ',' in c)!r}), taken as {len(cats):,} categories: if the "
                                  "commas separate thousands, read the file with thousands=',' (the command line's "
                                  "--thousands ','); if they are decimal commas, read the file with decimal=',' (the "
                                  "command line's --decimal ',')", UserWarning, stacklevel=2)
                elif layout == "thousands":
                    warnings.warn(f"column {name!r}: its text reads as numbers with commas separating thousands (e.g. "
                                  f"{next(c for c in cats if ',' in c)!r}), taken as {len(cats):,} categories; read "
                                  "the file with thousands=',' (the command line's --thousands ',') to have numbers",
                                  UserWarning, stacklevel=2)
                elif layout is not None:
                    how = ("decimal=',' and thousands='.' (the command line's --decimal ',' --thousands '.')"
                           if layout == "decimal comma, thousands point" else
                           "decimal=',' (the command line's --decimal ',')")
                    warnings.warn(f"column {name!r}: its text reads as numbers with a decimal comma (e.g. "
                                  f"{cats[0]!r}), taken as {len(cats):,} categories; read the file with {how} to have "
                                  "numbers", UserWarning, stacklevel=2)
                odd = _not_iso_dates(cats)
                if odd and len(odd) <= 0.1 * len(cats):  # one typo or placeholder turned dates into text
                    warnings.warn(f"column {name!r}: its text reads as ISO dates except {len(odd):,} value(s), e.g. "
                                  f"{odd[:3]}, so it was taken as {len(cats):,} categories, not dates; correct or "
                                  "blank those values, or describe the column as a datetime in a schema",
                                  UserWarning, stacklevel=2)
                if len(cats) > max_categories:  # one category per person prints their values in the release
                    warnings.warn(f"column {name!r}: {len(cats):,} distinct values taken as categories (more than "
                                  f"max_categories={max_categories}); each is a value of your rows and a release can "
                                  "print it. An identifier or free text belongs out of the table; otherwise give the "
                                  "column's public categories, or let dp_schema choose them", PrivateSchemaWarning,
                                  stacklevel=2)
                # a pandas category column comes back as one (its dtype is the frame's, like bool's: its categories,
                # unused ones included, and its order), over integers when its categories are integers
                dtype, ordered = None, False
                if isinstance(s.dtype, pd.CategoricalDtype):
                    dtype = ("category[int]" if pd.api.types.is_integer_dtype(s.dtype.categories.dtype) else
                             "category[interval]" if isinstance(s.dtype.categories.dtype, pd.IntervalDtype) else
                             "category")
                    ordered = bool(s.dtype.ordered)
                elif isinstance(s.dtype, pd.PeriodDtype):  # periods come back as periods
                    dtype = str(s.dtype)
                elif isinstance(s.dtype, pd.StringDtype) and s.dtype.na_value is pd.NA:
                    dtype = "string"  # convert_dtypes' text, missing as pd.NA: the frame's dtype, like bool's
                elif isinstance(s.dtype, pd.BooleanDtype):
                    dtype = "boolean"  # convert_dtypes' booleans: 'bool' makes numpy's bool where none is missing
                if dtype is None and all(_INT.fullmatch(c) for c in cats) and str(s.dtype) in INTEGER_DTYPES:
                    dtype = _kept_numerical_dtype(s.dtype, True, missing)  # the frame's width, as for numbers
                cols.append(Column(name, kind, categories=cats, missing=missing, dtype=dtype, ordered=ordered))
            elif kind == "datetime":
                cols.append(_infer_datetime(name, s, missing))
            else:
                v = s.astype(float)
                if np.isinf(v).any():  # not "bounds must be finite": the bounds are read from these values
                    raise SchemaError(f"column {name!r}: {int(np.isinf(v).sum()):,} infinite value(s) (inf or -inf); "
                                      "replace them with missing values or finite numbers")
                # every float64 beyond 2^53 is whole: that says nothing of a float column's values being integers
                integer = bool(np.all(np.mod(v.dropna(), 1) == 0)) and not (
                    pd.api.types.is_float_dtype(s.dtype) and v.abs().max() > 2.0 ** 53)
                cols.append(Column(name, kind, lower=float(v.min()), upper=float(v.max()), integer=integer,
                                   missing=missing, decimals=None if integer else _decimals(v, dtype=s.dtype),
                                   dtype=_kept_numerical_dtype(s.dtype, integer, missing)))
        # the mark travels with the schema (JSON, model files) and with its columns: a release fitted on it
        # reports that its (epsilon, delta) does not cover the schema
        for c in cols:
            c.read_from_rows = True
        return cls(cols, {READ_FROM_ROWS: "Schema.infer: every column's kind, bounds, categories and missing values"})

    # -- access --------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def __getitem__(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def __iter__(self) -> Iterable[Column]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    # -- validation ----------------------------------------------------------------------
    def check_columns(self, df: pd.DataFrame, what: str = "the table") -> None:
        """SchemaError unless ``df`` has exactly the schema's columns (in any order), each named once;
        ``what`` names the frame in the message."""
        check_column_names(df)
        have, want = list(df.columns), self.names
        missing_cols = [c for c in want if c not in have]
        extra = [c for c in have if c not in want]
        if missing_cols:
            also = f" and has column(s) {extra} that the schema does not describe" if extra else ""
            spaced = [f"{c!r} is {c.strip()!r} with spaces around it" for c in extra
                      if isinstance(c, str) and c != c.strip() and c.strip() in missing_cols]
            spaced += [f"{c!r} is {m!r} in other letter case" for c in extra if isinstance(c, str)
                       and c.strip() not in missing_cols for m in missing_cols
                       if isinstance(m, str) and c.strip().casefold() == m.casefold()]
            raise SchemaError(f"{what} lacks schema column(s) {missing_cols}{also}"
                              + (f" ({'; '.join(spaced)})" if spaced else ""))
        if extra:
            unnamed = [c for c in extra if isinstance(c, str) and re.fullmatch(r"Unnamed: \d+", c)]
            hint = (f" ({unnamed[0]!r} is a column with an empty header field, such as the row index pandas' to_csv "
                    "writes without index=False: drop it)" if unnamed else "")
            raise SchemaError(f"{what} has column(s) {extra} that the schema does not describe{hint}")

    def validate(self, df: pd.DataFrame, out_of_bounds: str = "raise", categories: bool = False) -> pd.DataFrame:
        """Check ``df`` against the schema; return it (numeric values clipped if asked).

        Raises :class:`SchemaError` naming the column and the problem: missing or extra
        columns, an empty frame, NaN where the schema allows none, a category outside the
        schema, non-numeric values in a numeric column, non-integers in an integer column,
        infinite values and values outside the public bounds (``out_of_bounds="clip"``
        clips them instead, with a warning that says how many).

        ``categories=True`` returns the categorical columns as pandas Categoricals over the
        schema's categories (:meth:`Column.as_categorical`): each column's values are matched
        to the schema once, in the same pass that checks them, and encoders read the codes
        (on a table of millions of rows, matching text values is most of the encoding time).
        """
        if not isinstance(df, pd.DataFrame):
            raise SchemaError(f"expected a pandas DataFrame, got {type(df).__name__}")
        if out_of_bounds not in ("raise", "clip"):
            raise SchemaError("out_of_bounds must be 'raise' or 'clip'")
        self.check_columns(df)
        if len(df) == 0:
            raise SchemaError("frame is empty (0 rows)")
        out = df

        for col in self.columns:
            with one_value_per_cell(df[col.name], col.name):
                out = self._validate_column(df, out, col, out_of_bounds, categories)
        return out

    @staticmethod
    def _validate_column(df: pd.DataFrame, out: pd.DataFrame, col: Column, out_of_bounds: str,
                         categories: bool) -> pd.DataFrame:
        """:meth:`validate` on one column: ``out``, copied from ``df`` once something changes."""
        s = df[col.name]
        if col.kind == "categorical":  # the distinct values say all: one hash pass, no row-sized mask
            if categories:
                codes = col.as_categorical(s)  # raises on values outside the schema
                if not col.missing and (codes.codes < 0).any():
                    _no_missing(col, s)
                if out is df:
                    out = df.copy(deep=False)
                out[col.name] = pd.Series(codes, index=s.index, name=col.name)
                return out
            uniq = pd.Series(_distinct(s))
            na_u = uniq.isna().to_numpy()
            if na_u.any() and not col.missing:
                _no_missing(col, s)
            col.positions(uniq[~na_u])  # raises on values outside the schema
            return out
        na = s.isna().to_numpy()
        if na.any() and not col.missing:
            _no_missing(col, s)
        if na.all():
            return out
        if (col.kind == "numerical" and pd.api.types.is_integer_dtype(s.dtype) and not na.any()
                and col.lower <= s.min() and s.max() <= col.upper):
            return out  # whole numbers within the bounds: nothing below can fail
        v = numeric_values(s, col)
        vv = v[~na]
        if not np.all(np.isfinite(vv)):
            raise SchemaError(f"column {col.name!r}: infinite values")
        if col.integer and not np.all(np.mod(vv, 1) == 0):
            raise SchemaError(f"column {col.name!r}: declared integer but holds non-integer values "
                              f"(e.g. {vv[np.mod(vv, 1) != 0][0]})")
        if col.kind == "datetime":
            off = dtm.off_resolution(vv, col.resolution, col.tz)
            if off.any():
                zone = (" (the values carry UTC offsets: declare the column's \"tz\" so that days are "
                        "days of that zone)" if col.tz is None and col.resolution == "day"
                        and _zone_aware(s) else "")
                raise SchemaError(f"column {col.name!r}: the schema's resolution is {col.resolution!r} but "
                                  f"{int(off.sum())} value(s) are finer (e.g. {col.show(vv[off][0], exact=True)});"
                                  f" declare a finer \"resolution\" or round the values{zone}")
        outside = (vv < col.lower) | (vv > col.upper)
        if outside.any():
            msg = (f"column {col.name!r}: {int(outside.sum())} value(s) outside the public bounds "
                   f"[{col.show(col.lower)}, {col.show(col.upper)}] (e.g. {col.show(vv[outside][0])})")  # on the resolution: checked above
            if out_of_bounds == "raise":
                raise SchemaError(msg + "; pass out_of_bounds='clip' to clip them to the bounds")
            warnings.warn(msg + "; clipped to the bounds", UserWarning, stacklevel=3)
            if out is df:
                out = df.copy()
            if col.kind == "numerical":
                out[col.name] = s.clip(col.lower, col.upper)
            else:
                clipped = col.datetimes(np.clip(v, col.lower, col.upper), snap=False)
                clipped.index = s.index
                out[col.name] = clipped
        return out


def _no_missing(col: Column, s: pd.Series) -> None:
    raise SchemaError(f"column {col.name!r}: {int(s.isna().sum())} missing value(s) (NaN) but the schema "
                      "declares no missing values (set \"missing\": true if they can occur)")


def _zone_aware(s: pd.Series) -> bool:
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return getattr(s.dt, "tz", None) is not None
    return bool(s.dropna().astype(str).str.contains(r"(?:Z|[+-]\d\d:?\d\d(?::?\d\d)?)$", regex=True).any())


def datetime_dtype_spec(dtype, name: str) -> dict:
    """The ``"dtype"`` and ``"tz"`` keys of a column description that keep a pandas datetime dtype's unit and
    zone (``datetime64[us, Europe/Paris]`` -> ``{"dtype": "datetime64[us]", "tz": "Europe/Paris"}``), as
    :meth:`Schema.infer` and :func:`~synthzoo.core.dpschema.kinds_from_dtypes` record them: nothing for the
    default nanoseconds without a zone.  Read from the dtype alone, never from a value; the zone's name is
    :func:`~synthzoo.core.datetimes.tz_name`'s (SchemaError naming column ``name`` where it has none)."""
    tz = dtm.tz_name(getattr(dtype, "tz", None), name)
    unit = dtype.unit if isinstance(dtype, pd.DatetimeTZDtype) else np.datetime_data(np.dtype(dtype))[0]
    return {**({"dtype": f"datetime64[{unit}]"} if unit != "ns" else {}), **({"tz": tz} if tz is not None else {})}


def _infer_datetime(name: str, s: pd.Series, missing: bool) -> Column:
    """Schema.infer's datetime column: bounds, resolution, zone and text-or-datetime read from the
    frame (not private: Schema.infer has warned)."""
    spec = datetime_dtype_spec(s.dtype, name) if pd.api.types.is_datetime64_any_dtype(s.dtype) else {}
    tz = spec.get("tz")
    text = not pd.api.types.is_datetime64_any_dtype(s.dtype) and all(isinstance(x, str) for x in s.dropna())
    fmt = None
    if text:  # a non-ISO layout (31/12/2020), or ISO with a 'T' (the default writes a space), is kept
        vals = s.dropna().astype(str)
        fmt = next((f for pat, f in _T_LAYOUTS if vals.str.fullmatch(pat).all()), None) or date_layout(s)
        # ISO text with UTC offsets (what to_csv writes for a tz-aware column): one offset is the column's
        # zone, several (summer and winter time) make it UTC -- either way the output keeps an offset
        offsets = vals.str.extract(_OFFSET, expand=False)
        if fmt is None and offsets.notna().all() and len(vals):
            zones = set(offsets.str.replace("Z", "+00:00").str.replace(r"^([+-]\d{2})(\d{2})$", r"\1:\2",
                                                                          regex=True))
            tz = zones.pop() if len(zones) == 1 else "UTC"
            # pandas keeps a fixed offset in whole minutes (+00:19:32 became +00:19): one with seconds is read as UTC
            tz = "UTC" if tz in ("+00:00", "-00:00") or len(tz) > 6 else tz
    elif not spec:  # zone-aware datetime objects (several zones keep pandas' object dtype): as the text's offsets,
        # their one zone, or UTC for several, so that the release keeps a zone (it came back as naive UTC)
        zones = {getattr(x, "tzinfo", None) for x in s.dropna()}
        if zones and None not in zones:
            names = {dtm.tz_name(z, name) for z in zones}
            tz = names.pop() if len(names) == 1 else "UTC"
    v = dtm.to_seconds(s, name, tz=tz, fmt=fmt)
    ok = v[~np.isnan(v)]
    if ok.size == 0:
        raise SchemaError(f"column {name!r}: every value is missing; cannot infer its bounds")
    res = next((r for r in dtm.RESOLUTIONS if not dtm.off_resolution(ok, r, tz).any()), "nanosecond")
    # text stays text; datetime64 and Python date/datetime objects come back as datetime64, in the frame's unit
    # where it is not the default nanosecond (pandas 3 makes microseconds)
    dtype = "string" if text else spec.get("dtype")
    return Column(name, "datetime", lower=float(ok.min()), upper=float(ok.max()), missing=missing,
                  resolution=res, tz=tz, dtype=dtype, format=fmt)


#: A number written with a decimal comma (``3,14``, ``-1.234,5``): read as text unless read with decimal=','.
_DECIMAL_COMMA = re.compile(r"-?\d{1,3}(\.\d{3})*,\d+|-?\d+,\d+")
#: Whole numbers with a comma every three digits (``4,324``, ``1,234,567``): thousands separators, or (one
#: group) a decimal comma; the text alone cannot tell which.
_GROUPED = re.compile(r"-?\d{1,3}(,\d{3})+")
_PLAIN_INT = re.compile(r"-?\d{1,3}")
#: Numbers with a decimal point and, where they are large, a comma every three digits (``40,123.45``, ``17.5``)
_GROUPED_POINT = re.compile(r"-?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?")


def number_layout(texts) -> str | None:
    """How text values that read as numbers are written, when a reader told of no separator left them text:
    ``"comma"`` (``4,324``: thousands separators or decimal commas -- the text cannot tell), ``"thousands"``
    (``40,123.45``: the point is the decimal mark, so the commas separate thousands), ``"decimal comma"``
    (``3,14``), ``"decimal comma, thousands point"`` (``1.234,5``), or None (not numbers so written).  The
    one home of these patterns, for :meth:`Schema.infer`'s warning and the command line's error."""
    texts = [str(t) for t in texts]
    if not texts or not any("," in t for t in texts):
        return None
    if all(_GROUPED.fullmatch(t) or _PLAIN_INT.fullmatch(t) for t in texts):
        return "comma"
    if all(_GROUPED_POINT.fullmatch(t) for t in texts):
        return "thousands"
    if all(_DECIMAL_COMMA.fullmatch(t) for t in texts):
        return "decimal comma, thousands point" if any("." in t for t in texts) else "decimal comma"
    return None

def _decimals(v: pd.Series, most: int = 6, dtype=None) -> int | None:
    """The fewest decimal places (up to ``most``) that every value is written with, or None.

    A value's distance to its rounding must be float noise both in absolute terms and relative to the
    column's largest magnitude (at the precision of ``dtype``, the column's own float type): an absolute
    tolerance alone read a column of values below 5e-5 as having one decimal place, so all of them
    rounded to 0."""
    x = v.dropna().to_numpy(dtype=float)
    x = x[np.isfinite(x)]
    # pandas' nullable Float32/Float64 have a numpy float inside (np.finfo of the extension dtype raised)
    dtype = getattr(dtype, "numpy_dtype", dtype)
    eps = np.finfo(dtype).eps if dtype is not None and pd.api.types.is_float_dtype(dtype) else np.finfo(float).eps
    scale = float(np.abs(x).max()) if x.size else 0.0
    for d in range(1, most + 1):
        off = np.abs(np.round(x, d) - x)
        if np.all(off <= 0.5 * 10.0 ** -(d + 3)) and np.all(off <= 16 * eps * scale):
            return d
    return None


#: A UTC offset at the end of ISO text (``+01:00``, ``-0500``, ``Z``).
#: A UTC offset at the end of ISO text; with seconds where to_csv writes a zone's local mean time (+00:19:32).
_OFFSET = r"\d(Z|[+-]\d{2}:?\d{2}(?::?\d{2}(?:\.\d+)?)?)$"

#: ISO layouts with a 'T' separator that Schema.infer keeps as the column's "format".
_T_LAYOUTS = ((r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", "%Y-%m-%dT%H:%M:%S"),
              (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}", "%Y-%m-%dT%H:%M"))

#: Day-month-year layouts of dates as spreadsheets and other locales write them, which Schema.infer
#: recognises in text (with an optional time): the separator and the date part's regular expression.
_DMY = re.compile(r"(\d{1,2})([/.-])(\d{1,2})\2\d{4}( \d{1,2}:\d{2}(:\d{2})?)?")
_YMD_SLASH = re.compile(r"\d{4}/\d{1,2}/\d{1,2}( \d{1,2}:\d{2}(:\d{2})?)?")


def date_layout(s: pd.Series, warn: bool = True) -> str | None:
    """The strftime layout of a text column of non-ISO dates (``31/12/2020``, ``12.31.2020 14:05``,
    ``2020/12/31``), or None.  Day first or month first is read from the values: a first field above
    12 is a day, a second one a month's day; when every value fits both, day first (most of the
    world's order), with a warning (``warn``) that the schema's ``"format"`` decides it."""
    v = pd.unique(s.dropna())
    if len(v) == 0 or not all(isinstance(x, str) for x in v):
        return None
    if all(_YMD_SLASH.fullmatch(x) for x in v):
        layouts = ["%Y/%m/%d"]
    else:
        m = [_DMY.fullmatch(x) for x in v]
        if not all(m) or len({x.group(2) for x in m}) != 1:
            return None
        sep = m[0].group(2)
        first = max(int(x.group(1)) for x in m)
        second = max(int(x.group(3)) for x in m)
        layouts = ([f"%d{sep}%m{sep}%Y"] if first > 12 or second <= 12 else []) + \
                  ([f"%m{sep}%d{sep}%Y"] if second > 12 or first <= 12 else [])
    times = {len(x.split(" ")[1].split(":")) if " " in x else 0 for x in v}
    if len(times) != 1:
        return None
    clock = {0: "", 2: " %H:%M", 3: " %H:%M:%S"}[times.pop()]
    for i, layout in enumerate(layouts):
        quiet_parsing_advice()
        ok = pd.to_datetime(pd.Series(v), format=layout + clock, errors="coerce").notna().all()
        if ok:
            if warn and i == 0 and len(layouts) > 1:
                warnings.warn(f"column {s.name!r}: dates such as {v[0]!r} read day first ({layout + clock}); "
                              "if the month comes first, give the column's \"format\" in the schema", UserWarning,
                              stacklevel=4)
            return layout + clock
    return None


def unsupported_numbers(s: pd.Series, name) -> str | None:
    """What is wrong with a column of numbers pandas types but synthzoo cannot take as they are (complex
    numbers, durations, periods), with what to do; None for any other column."""
    kind = getattr(s.dtype, "kind", "")
    if kind == "c":
        return (f"column {name!r}: complex numbers (dtype {s.dtype}) are not supported: their imaginary part "
                "would be lost; keep the real and imaginary parts as two numerical columns")
    if kind == "m":
        return (f"column {name!r}: durations (dtype {s.dtype}) are not supported as they are (they would be read "
                "as counts of the dtype's unit); convert them to numbers first, e.g. "
                f"df[{name!r}].dt.total_seconds(), with bounds in that unit")
    if isinstance(s.dtype, pd.PeriodDtype):
        return (f"column {name!r}: periods (dtype {s.dtype}) are not supported as numbers (they would be read "
                f"as ordinals); convert them first, e.g. df[{name!r}].dt.to_timestamp() for a datetime column, or "
                "text for a categorical one")
    if kind == "M":  # read as nanoseconds since 1970 (1.57784e+15), said only as a bounds error
        return (f"column {name!r}: declared numerical but holds datetimes (dtype {s.dtype}); declare it "
                "\"type\": \"datetime\" in the schema")
    return None


def dates_declared_numerical(s: pd.Series, name) -> str | None:
    """The error for a column declared numerical whose text reads as dates (ISO, or a layout
    :func:`date_layout` knows), with what to declare; None when it does not.  Its first distinct values are read
    to say so (an error message, before any charge; never a decision about a release)."""
    if pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        return None
    sample = pd.Series(pd.unique(s.dropna())[:20], dtype=object)
    if not len(sample) or not all(isinstance(x, str) for x in sample):
        return None
    iso = _iso_text(sample)
    layout = None if iso else date_layout(sample, False)
    if not iso and layout is None:
        return None
    res = functools.reduce(dtm.finer, (dtm.resolution_of_bound(x, layout) for x in sample))  # as each is written
    fmt = f', "format": "{layout}"' if layout else ""
    return (f"column {name!r}: declared numerical but holds dates (e.g. {sample[:3].tolist()}, dtype {s.dtype}); "
            f"declare it \"type\": \"datetime\", \"resolution\": \"{res}\"{fmt} in the schema")


def numeric_values(s: pd.Series, col: Column) -> np.ndarray:
    """A numeric or datetime column as float64 (datetimes in epoch seconds), NaN for missing."""
    check_one_value_per_cell(s, col.name)  # a list in a cell: said so, not pandas' "unhashable type"
    if col.kind == "datetime":
        return dtm.to_seconds(s, col.name, tz=col.tz, fmt=col.format)
    problem = unsupported_numbers(s, col.name)
    if problem:
        raise SchemaError(problem)
    if pd.api.types.is_bool_dtype(s.dtype) or not pd.api.types.is_numeric_dtype(s.dtype):
        conv = pd.to_numeric(s, errors="coerce")
        bad = s[conv.isna() & s.notna()]
        if not len(bad) and pd.api.types.is_bool_dtype(s.dtype):  # it showed them as [np.False_, np.True_]
            raise SchemaError(booleans_declared_numerical(col.name, s.dtype))
        if len(bad):
            dated = dates_declared_numerical(bad, col.name)
            if dated:
                raise SchemaError(dated)
            raise SchemaError(f"column {col.name!r}: declared numerical but holds non-numeric values "
                              f"(e.g. {pd.Series(bad.unique()[:3]).tolist()}, dtype {s.dtype})")
        s = conv
    return s.to_numpy(dtype=float, na_value=np.nan)


def booleans_declared_numerical(name, dtype) -> str:
    """The error for a boolean column described as numerical (one wording for fit's check and dp_schema's)."""
    return (f"column {name!r}: declared numerical but holds booleans (dtype {dtype}); describe it as categorical "
            f"(categories True and False), or convert it first, e.g. df[{name!r}].astype(int)")


#: What pandas' infer_dtype calls an object column of numbers only
_NUMBER_OBJECTS = ("decimal", "integer", "floating", "mixed-integer-float")


def infer_kind(s: pd.Series, max_categories: int = 50) -> str:
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return "datetime"
    problem = None if isinstance(s.dtype, pd.PeriodDtype) else unsupported_numbers(s, s.name)
    if problem:  # complex numbers were taken as their real part, durations as text categories
        raise SchemaError(problem)
    if pd.api.types.is_bool_dtype(s.dtype):
        return "categorical"
    # one compiled pass over an object column says both: numbers only, or containers among the values
    inferred = pd.api.types.infer_dtype(s, skipna=True) if s.dtype == object else None
    check_one_value_per_cell(s, str(s.name), inferred)
    if inferred in _NUMBER_OBJECTS:
        s = pd.to_numeric(s)  # Decimal from a database driver, or Python numbers: numbers, not text categories
    if pd.api.types.is_numeric_dtype(s.dtype):
        return "numerical" if s.nunique() > max_categories or not _integral(s) else (
            "numerical" if s.nunique() > 10 else "categorical")
    if _iso_text(s) or date_layout(s, warn=False) is not None:
        return "datetime"  # dates as a CSV holds them: read back as text (dtype "string")
    v = s.dropna()
    if len(v) and all(isinstance(x, _dt.date) for x in v):
        return "datetime"  # Python date / datetime objects in an object column
    return "categorical"


_ISO = re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2}(:?\d{2})?)?")


#: Most bytes a schema file may hold (a schema of thousands of columns is a few MB): a device such as
#: /dev/zero, or a file that is not a schema, is not read without end.
MAX_SCHEMA_BYTES = 64 * 2 ** 20


def read_json_file(path: str | Path, what: str, max_bytes: int = MAX_SCHEMA_BYTES):
    """A JSON document from ``path``; a file that is not valid JSON (or a directory, an endless device,
    nesting past the parser's depth, an integer of thousands of digits) is a SchemaError naming the file
    and the problem, not a parser traceback.  A missing file stays a FileNotFoundError."""
    doc, problem = read_json(path, max_bytes, bom=True)
    if problem is not None:
        raise SchemaError(f"{what} file {str(path)!r} {problem}")
    return doc


def read_json(path: str | Path, max_bytes: int, bom: bool = False):
    """``(document, None)`` from the JSON file at ``path`` -- at most ``max_bytes`` read, whatever the
    size says (a device, a pipe) -- else ``(None, what is wrong)`` (see :func:`parse_json_bytes`).  A
    missing file raises FileNotFoundError.  ``bom``: a leading UTF-8 byte-order mark (Windows editors write
    one) is skipped, as RFC 8259 allows; a schema file's, not a model file's."""
    if Path(path).is_dir():
        return None, "is a directory, not a JSON file"
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except (IsADirectoryError, PermissionError) as e:
        return None, f"cannot be read: {e.strerror}"
    if len(data) > max_bytes:
        return None, f"holds more than max_bytes={max_bytes:,} bytes; not read"
    if bom and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return parse_json_bytes(data)


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list) -> dict:
    """A JSON object as a dict, refusing a key given twice (json.loads keeps the last: a column described
    twice in a schema file silently lost its first description)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _cut_short(e: json.JSONDecodeError) -> bool:
    """The parser ran out of text inside a document that was valid so far: a truncated file, not another
    format (what is left at the error is nothing, an unterminated last string, or the start of a number or
    of true / false / null)."""
    rest = e.doc[e.pos:].rstrip()
    if not e.doc[:e.pos].strip() or e.doc.lstrip()[:1] not in ("{", "["):
        return False
    if e.msg.startswith("Unterminated string"):
        return "\n" not in rest
    return (rest == "" or any(w.startswith(rest) for w in ("true", "false", "null"))
            or re.fullmatch(r"[-+0-9.eE]+", rest) is not None)


def parse_json_bytes(data: bytes):
    """``(document, None)`` for UTF-8 JSON bytes, else ``(None, what is wrong)`` in words a person can
    act on (invalid JSON with its line and column, not UTF-8, nested past the parser, an integer past
    Python's digit limit, too large for memory) -- for the callers' own error naming the file."""
    if not data.strip():
        return None, f"is empty ({len(data):,} bytes{'' if not data else ', all whitespace'})"
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_unique_keys), None
    except _DuplicateKey as e:
        return None, (f"names {e.args[0]!r} twice in one JSON object; the second would silently replace the "
                      "first: keep one")
    except json.JSONDecodeError as e:
        if _cut_short(e):
            return None, (f"ends in the middle of its JSON document (after {len(data):,} bytes): it was cut short, "
                          "as by an interrupted copy or download; copy or write it again")
        return None, f"is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}"
    except UnicodeDecodeError as e:
        return None, f"is not UTF-8 text ({e.reason} at byte {e.start})"
    except RecursionError:
        return None, "is nested too deeply"
    except ValueError as e:  # an integer past Python's digit limit
        return None, f"holds an integer too long to read ({str(e).split(':')[-1].split(';')[0].strip()})"
    except MemoryError:
        return None, f"is too large to parse in memory ({len(data):,} bytes)"


def _iso_text(s: pd.Series) -> bool:
    """Every non-missing value is ISO 8601 date or date-time text that parses."""
    v = s.dropna()
    if len(v) == 0 or not all(isinstance(x, str) and _ISO.fullmatch(x) for x in v):
        return False
    return bool(_parse_iso(v).notna().all())


def _parse_iso(v: pd.Series) -> pd.Series:
    """ISO text parsed in UTC (NaT where it does not parse); offsets with seconds, which pandas refuses, are
    rewritten only when some value did not parse (the rewrite is a regular expression over every value)."""
    quiet_parsing_advice()
    parsed = pd.to_datetime(v, format="ISO8601", errors="coerce", utc=True)
    if parsed.isna().any():
        parsed = pd.to_datetime(dtm.utc_for_second_offsets(v), format="ISO8601", errors="coerce", utc=True)
    return parsed


def _not_iso_dates(values: list) -> list:
    """The values that are not ISO 8601 dates, when at least one is (else [])."""
    text = [v for v in values if isinstance(v, str)]
    iso = [v for v in text if _ISO.fullmatch(v)]
    if not iso:
        return []
    parsed = _parse_iso(pd.Series(iso, dtype=object))
    ok = set(np.asarray(iso, dtype=object)[parsed.notna().to_numpy()])
    return [v for v in values if v not in ok] if ok else []


def _integral(s: pd.Series) -> bool:
    v = s.dropna().to_numpy(dtype=float)
    return bool(np.all(np.mod(v, 1) == 0))


def per_column(schema: Schema, encoders: dict, what: str = "encoder") -> dict:
    """``encoders`` in the schema's column order; every column must have one (ConfigError names
    the columns without)."""
    missing = [c for c in schema.names if c not in encoders]
    if missing:
        raise ConfigError(f"no {what} for column(s) {missing}")
    return {c: encoders[c] for c in schema.names}


_CONTAINERS = (list, tuple, dict, set, frozenset, np.ndarray)


def check_one_value_per_cell(s: pd.Series, name: str, inferred: str | None = None) -> None:
    """SchemaError naming the column when a cell of ``s`` holds a list, dict, set or array (a JSON field read
    as is): pandas cannot hash or convert it, and text made of it is no category anyone declared; or bytes
    (``read_sas``' text, numpy's ``S`` arrays), which became the text ``"b'abc'"``.
    ``inferred``: ``pd.api.types.infer_dtype(s, skipna=True)`` where the caller has it already."""
    if s.dtype != object:
        return
    # infer_dtype is one compiled pass; a list or dict among the values makes it say "mixed" (or "mixed-integer")
    if (inferred or pd.api.types.infer_dtype(s, skipna=True)) in ("mixed", "mixed-integer", "bytes"):
        for v in s.to_numpy():
            if isinstance(v, _CONTAINERS):
                raise SchemaError(f"column {name!r}: holds {type(v).__name__} values (e.g. {repr(v)[:40]}); each "
                                  "cell must be one number, text or date -- spread the values over columns of "
                                  "their own, or turn them into text")
            if isinstance(v, bytes):
                _no_bytes(name, v)


def _no_bytes(name: str, v: bytes) -> None:
    raise SchemaError(f"column {name!r}: holds bytes (e.g. {repr(v)[:40]}), not text; decode them first, e.g. "
                      f"df[{name!r}] = df[{name!r}].str.decode('utf-8') (read_sas takes an encoding= that does it)")


@contextmanager
def one_value_per_cell(s: pd.Series, name: str):
    """:func:`check_one_value_per_cell` where pandas raised a TypeError hashing or converting ``s``: costs
    nothing until something fails."""
    try:
        yield
    except TypeError:
        check_one_value_per_cell(s, name)
        raise


def check_column_names(df: pd.DataFrame, role: str = "the table") -> None:
    """SchemaError naming a column that appears more than once (pandas allows it; every step here
    addresses columns by name), or one named by something other than text: a schema names columns by text,
    so ``read_csv(header=None)``'s 0, 1, 2 were "missing" beside a schema's "0", "1", "2"."""
    names = pd.Index(df.columns)
    odd = [c for c in names if not isinstance(c, str)]
    if odd:
        raise SchemaError(f"{role} has column name(s) that are not text: {', '.join(repr(c) for c in odd[:5])}; "
                          "name every column with text, e.g. df.columns = df.columns.astype(str)")
    if names.has_duplicates:
        dup = list(dict.fromkeys(names[names.duplicated()]))
        raise SchemaError(f"{role} has {'a column' if len(dup) == 1 else 'columns'} named "
                          f"{', '.join(repr(str(c)) for c in dup[:5])} more than once; give each column its own name")


#: Schema meta key that marks a schema read from the rows (:meth:`Schema.infer`): not covered by DP.  A schema
#: built from such columns (``Column.read_from_rows``) is marked again, whatever meta it is given.  Delete it
#: (and build from columns with ``read_from_rows=False``) only once every description in it is public knowledge.
READ_FROM_ROWS = "read_from_rows"


#: The ML tasks a schema's ``"task"`` may name (any letter case and spacing) and how each is scored:
#: any other text was once scored as classification unless it held "regress", so a typo such as
#: "regresion" trained classifiers on a numeric target.
TASKS = {"classification": "classification", "binary classification": "classification",
         "multiclass classification": "classification", "regression": "regression"}


def task_kind(task) -> str | None:
    """``"classification"`` or ``"regression"`` for a task text of :data:`TASKS`, else ``None``."""
    return TASKS.get(" ".join(task.lower().split())) if isinstance(task, str) else None


def task_mismatch(kind: str, column: Column) -> str | None:
    """Why a task of ``kind`` (:func:`task_kind`) cannot predict ``column``, or ``None`` when it can: a
    classification target is categorical, a categorical target is classified."""
    if kind == "classification" and column.kind != "categorical":
        return "a classification target must be categorical"
    if kind == "regression" and column.kind == "categorical":
        return "a categorical target is classified, not regressed"
    return None


def _check_meta(meta: dict, columns: dict) -> None:
    """The top-level keys the library reads (``target``, ``task``, ``other_category``, ``rows``) are
    checked where a schema is read from JSON, naming the key: a typo in ``target`` must not surface later
    as a traceback in an evaluation.  Other top-level keys are free-form notes."""
    rows = meta.get("rows")
    # a description of the table (no module reads it, a private fit drops it), but one that cannot be a count
    # is a mistake in the file: -5 rows was accepted silently
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, (int, np.integer, float))
                             or not float(rows).is_integer() or rows < 0):
        raise SchemaError(f"\"rows\" (top level) must be the table's row count, a whole number >= 0, got "
                          f"{str(rows)[:40]!r}")
    target = meta.get("target")
    if target is not None and (not isinstance(target, str) or target not in columns):
        shown = repr(target) if isinstance(target, str) else f"a {type(target).__name__}"
        raise SchemaError(f"\"target\" (top level) must name one of the schema's columns, got {shown[:80]}; "
                          f"columns are {list(columns)[:20]}")
    mark = meta.get(READ_FROM_ROWS)
    if mark is not None and not isinstance(mark, str):
        raise SchemaError(f"\"{READ_FROM_ROWS}\" (top level) must be a text, got a {type(mark).__name__}")
    task = meta.get("task")
    if task is not None and not isinstance(task, str):
        raise SchemaError(f"\"task\" (top level) must be a text such as \"binary classification\" or \"regression\", "
                          f"got a {type(task).__name__}")
    if task is not None and task_kind(task) is None:
        raise SchemaError(f"\"task\" (top level): unknown task {task[:80]!r}; choose from {sorted(TASKS)} "
                          f"(any letter case)")
    other = meta.get("other_category")
    if other is not None:
        if not isinstance(other, dict):
            raise SchemaError(f"\"other_category\" (top level) must map categorical columns to their catch-all "
                              f"label, got a {type(other).__name__}")
        for name, label in other.items():
            col = columns.get(name)
            if col is None or col.kind != "categorical" or not isinstance(label, str):
                raise SchemaError(f"\"other_category\" entry {str(name)[:40]!r}: must name a categorical "
                                  f"column and give a text label, got {str(label)[:40]!r}")
