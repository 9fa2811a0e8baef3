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
        "date":  {"type": "datetime", "lower": "2020-01-01", "upper": "2021-12-31", "missing": true}}}
"""

from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from .errors import ConfigError, SchemaError

KINDS = ("categorical", "numerical", "datetime")
#: Output dtypes a categorical column may declare with its ``"dtype"`` key.
CATEGORICAL_DTYPES = ("str", "int", "bool", "category")


class PrivateSchemaWarning(UserWarning):
    """Bounds or categories were read from private data without differential privacy."""


def category_key(value: Any) -> str:
    """The string form under which a raw categorical value is matched to the schema.

    Integral numbers match their integer spelling, so a CSV column read as ``1.0`` or ``1``
    matches the schema category ``"1"``.
    """
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


@dataclass
class Column:
    """One column's public description.

    Parameters
    ----------
    name : str
    kind : {"categorical", "numerical", "datetime"}
    lower, upper : float or str, optional
        Public bounds of a numerical or datetime column (ISO strings or timestamps for datetimes).
    integer : bool, default False
        Values are whole numbers.
    categories : list of str, optional
        The complete public list of a categorical column.
    missing : bool, default False
        Whether missing values may occur.
    dtype : {"str", "int", "bool", "category"}, optional
        How a categorical column's synthetic values are typed (see :attr:`output_dtype`).

    Examples
    --------
    >>> Column("age", "numerical", lower=17, upper=90, integer=True).output_dtype
    dtype('int64')
    """

    name: str
    kind: str
    lower: float | None = None
    upper: float | None = None
    integer: bool = False
    categories: list[str] | None = None
    missing: bool = False
    dtype: str | None = None  # categorical only: how synthetic values are typed (see output_dtype)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SchemaError(f"column {self.name!r}: unknown type {self.kind!r}; expected one of {KINDS}")
        if self.dtype is not None and (self.kind != "categorical" or self.dtype not in CATEGORICAL_DTYPES):
            raise SchemaError(f"column {self.name!r}: 'dtype' is for categorical columns, one of "
                              f"{CATEGORICAL_DTYPES}; got {self.dtype!r} on a {self.kind} column")
        if self.kind == "categorical":
            if not self.categories:
                raise SchemaError(f"column {self.name!r}: a categorical column needs a non-empty 'categories' list")
            self.categories = [category_key(c) for c in self.categories]
            if len(set(self.categories)) != len(self.categories):
                raise SchemaError(f"column {self.name!r}: duplicate categories in the schema")
            if self.dtype == "int" and not all(_INT.fullmatch(c) for c in self.categories):
                raise SchemaError(f"column {self.name!r}: dtype 'int' needs integer categories")
            if self.dtype == "bool" and not set(self.categories) <= {"True", "False"}:
                raise SchemaError(f"column {self.name!r}: dtype 'bool' needs the categories True/False")
        else:
            if self.lower is None or self.upper is None:
                raise SchemaError(
                    f"column {self.name!r}: a {self.kind} column needs public 'lower' and 'upper' bounds "
                    "(or measure them with synthzoo.core.dpschema.dp_schema, which charges the budget)")
            if self.kind == "datetime":
                self.lower = float(_to_epoch_seconds(pd.Series([self.lower]), self.name)[0])
                self.upper = float(_to_epoch_seconds(pd.Series([self.upper]), self.name)[0])
            self.lower, self.upper = float(self.lower), float(self.upper)
            if not (math.isfinite(self.lower) and math.isfinite(self.upper)):
                raise SchemaError(f"column {self.name!r}: bounds must be finite")
            if self.lower > self.upper:
                raise SchemaError(f"column {self.name!r}: lower bound {self.lower} exceeds upper bound {self.upper}")

    @property
    def is_numeric(self) -> bool:
        return self.kind in ("numerical", "datetime")

    @property
    def output_dtype(self):
        """The dtype of this column in every synthetic frame, from the schema alone.

        Never read from the private frame: one extra record with a missing value would otherwise
        flip an integer column to float, and a pandas ``category`` column's observed categories
        would decide which synthetic values survive -- both distinguish neighbouring inputs.

        * numerical: ``int64`` (``Int64`` when missing values are allowed) if ``integer``, else
          ``float64``; datetime: ``datetime64[ns]`` (naive, UTC);
        * categorical: the column's ``dtype`` key, else ``int`` when every category is an integer
          spelling, ``bool`` for True/False, ``str`` otherwise; ``int``/``bool`` become the nullable
          ``Int64``/``boolean`` when missing values are allowed, ``str`` is pandas' default string
          dtype (what ``read_csv`` gives; object before pandas 3), ``category`` a pandas
          ``CategoricalDtype`` over the schema's categories.
        """
        if self.kind == "datetime":
            return np.dtype("datetime64[ns]")
        if self.kind == "numerical":
            if self.integer:
                return pd.Int64Dtype() if self.missing else np.dtype("int64")
            return np.dtype("float64")
        kind = self.dtype or _categorical_default(self.categories)
        if kind == "int":
            return pd.Int64Dtype() if self.missing else np.dtype("int64")
        if kind == "bool":
            return pd.BooleanDtype() if self.missing else np.dtype("bool")
        if kind == "category":
            return pd.CategoricalDtype(list(self.categories))
        return _STR

    def typed(self, values) -> pd.Series:
        """Decoded values (schema strings for categories, floats / epoch seconds otherwise) as a
        Series of :attr:`output_dtype`."""
        v = pd.Series(values)
        na = v.isna().to_numpy()
        dtype = self.output_dtype
        if self.kind == "datetime":
            return pd.to_datetime(v.astype(float), unit="s").astype(dtype)
        if self.kind == "numerical":
            v = v.astype(float)
            return (v.round() if self.integer else v).astype(dtype)
        if isinstance(dtype, pd.CategoricalDtype):
            return pd.Series(pd.Categorical(v.where(~na, None), dtype=dtype))
        if dtype is _STR:
            return pd.Series(v.to_numpy(dtype=object), dtype=_STR)
        if pd.api.types.is_bool_dtype(dtype):
            return v.map({"True": True, "False": False}).astype(dtype)
        return pd.to_numeric(v).astype(dtype)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"type": self.kind}
        if self.kind == "categorical":
            d["categories"] = list(self.categories)
        elif self.kind == "datetime":
            d["lower"] = pd.Timestamp(self.lower, unit="s").isoformat()
            d["upper"] = pd.Timestamp(self.upper, unit="s").isoformat()
        else:
            d["lower"], d["upper"] = _plain(self.lower, self.integer), _plain(self.upper, self.integer)
            d["integer"] = self.integer
        d["missing"] = self.missing
        if self.dtype is not None:
            d["dtype"] = self.dtype
        return d


# pandas' default string dtype from pandas 3 on (NaN as missing); object before
_STR = pd.StringDtype(na_value=np.nan) if int(pd.__version__.split(".")[0]) >= 3 else np.dtype(object)
_INT = re.compile(r"-?\d+")


def _categorical_default(categories) -> str:
    if all(_INT.fullmatch(c) for c in categories):
        return "int"
    if set(categories) <= {"True", "False"}:
        return "bool"
    return "str"


def _plain(x: float, integer: bool):
    return int(x) if integer and float(x).is_integer() else x


def _to_epoch_seconds(s: pd.Series, name: str) -> np.ndarray:
    """Datetime values as float seconds since 1970 (NaT -> NaN)."""
    try:
        ts = pd.to_datetime(s, errors="raise")
    except (ValueError, TypeError) as e:
        raise SchemaError(f"column {name!r}: values are not datetimes ({e})") from None
    if getattr(ts.dt, "tz", None) is not None:
        ts = ts.dt.tz_convert("UTC").dt.tz_localize(None)
    out = ts.astype("datetime64[ns]").to_numpy().astype("int64").astype(float) / 1e9
    out[ts.isna().to_numpy()] = np.nan
    return out


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

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict) -> "Schema":
        if "columns" not in d or not isinstance(d["columns"], dict):
            raise SchemaError("schema JSON needs a 'columns' object mapping names to column descriptions")
        cols = []
        for name, spec in d["columns"].items():
            kind = spec.get("type", spec.get("kind"))
            cols.append(Column(name=name, kind=kind, lower=spec.get("lower"), upper=spec.get("upper"),
                               integer=bool(spec.get("integer", False)), categories=spec.get("categories"),
                               missing=bool(spec.get("missing", False)), dtype=spec.get("dtype")))
        meta = {k: v for k, v in d.items() if k != "columns"}
        return cls(cols, meta)

    @classmethod
    def from_json(cls, path: str | Path) -> "Schema":
        with open(path) as f:
            return cls.from_dict(json.load(f))

    def to_dict(self) -> dict:
        return {**self.meta, "columns": {c.name: c.to_dict() for c in self.columns}}

    def to_json(self, path: str | Path) -> None:
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1)

    @classmethod
    def infer(cls, df: pd.DataFrame, max_categories: int = 50) -> "Schema":
        """Read kinds, bounds and categories straight from ``df``.

        Convenient, but **not differentially private**: bounds and category lists read from
        private rows can reveal individual records.  Use a public schema, or measure them with
        :func:`synthzoo.core.dpschema.dp_schema`, which charges the privacy ledger.
        """
        warnings.warn(
            "Schema.infer reads bounds and categories from the data itself; they are NOT covered by "
            "differential privacy. Use a public schema (Schema.from_json) or measure them through the "
            "privacy ledger with synthzoo.dp_schema(df, kinds, epsilon=..., delta=...).",
            PrivateSchemaWarning, stacklevel=2)
        if len(df) == 0:
            raise SchemaError("cannot infer a schema from an empty frame")
        cols = []
        for name in df.columns:
            kind = infer_kind(df[name], max_categories)
            s = df[name]
            missing = bool(s.isna().any())
            if kind == "categorical":
                cats = sorted({category_key(v) for v in s.dropna()})
                if not cats:
                    raise SchemaError(f"column {name!r}: every value is missing; cannot infer categories")
                cols.append(Column(name, kind, categories=cats, missing=missing))
            elif kind == "datetime":
                v = _to_epoch_seconds(s, name)
                cols.append(Column(name, kind, lower=pd.Timestamp(np.nanmin(v), unit="s"),
                                   upper=pd.Timestamp(np.nanmax(v), unit="s"), missing=missing))
            else:
                v = s.astype(float)
                integer = bool(np.all(np.mod(v.dropna(), 1) == 0))
                cols.append(Column(name, kind, lower=float(v.min()), upper=float(v.max()),
                                   integer=integer, missing=missing))
        return cls(cols)

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
    def validate(self, df: pd.DataFrame, out_of_bounds: str = "raise") -> pd.DataFrame:
        """Check ``df`` against the schema; return it (numeric values clipped if asked).

        Raises :class:`SchemaError` naming the column and the problem: missing or extra
        columns, an empty frame, NaN where the schema allows none, a category outside the
        schema, non-numeric values in a numeric column, non-integers in an integer column,
        infinite values and values outside the public bounds (``out_of_bounds="clip"``
        clips them instead, with a warning that says how many).
        """
        if not isinstance(df, pd.DataFrame):
            raise SchemaError(f"expected a pandas DataFrame, got {type(df).__name__}")
        if out_of_bounds not in ("raise", "clip"):
            raise SchemaError("out_of_bounds must be 'raise' or 'clip'")
        have, want = list(df.columns), self.names
        missing_cols = [c for c in want if c not in have]
        extra = [c for c in have if c not in want]
        if missing_cols:
            raise SchemaError(f"frame lacks schema column(s) {missing_cols}")
        if extra:
            raise SchemaError(f"frame has column(s) {extra} that the schema does not describe")
        if len(set(have)) != len(have):
            raise SchemaError("frame has duplicate column names")
        if len(df) == 0:
            raise SchemaError("frame is empty (0 rows)")
        out = df
        for col in self.columns:
            s = df[col.name]
            na = s.isna().to_numpy()
            if na.any() and not col.missing:
                raise SchemaError(f"column {col.name!r}: {int(na.sum())} missing value(s) (NaN) but the schema "
                                  "declares no missing values (set \"missing\": true if they can occur)")
            if na.all():
                continue
            if col.kind == "categorical":
                keys = pd.Series(s[~na].unique()).map(category_key)
                bad = sorted(set(keys) - set(col.categories))
                if bad:
                    raise SchemaError(f"column {col.name!r}: value(s) {bad[:5]} not among the schema's categories "
                                      f"({len(bad)} unseen)")
                continue
            v = numeric_values(s, col)
            vv = v[~na]
            if not np.all(np.isfinite(vv)):
                raise SchemaError(f"column {col.name!r}: infinite values")
            if col.integer and not np.all(np.mod(vv, 1) == 0):
                raise SchemaError(f"column {col.name!r}: declared integer but holds non-integer values "
                                  f"(e.g. {vv[np.mod(vv, 1) != 0][0]})")
            outside = (vv < col.lower) | (vv > col.upper)
            if outside.any():
                msg = (f"column {col.name!r}: {int(outside.sum())} value(s) outside the public bounds "
                       f"[{col.lower}, {col.upper}] (e.g. {vv[outside][0]})")
                if out_of_bounds == "raise":
                    raise SchemaError(msg + "; pass out_of_bounds='clip' to clip them to the bounds")
                warnings.warn(msg + "; clipped to the bounds", UserWarning, stacklevel=2)
                if out is df:
                    out = df.copy()
                if col.kind == "numerical":
                    out[col.name] = s.clip(col.lower, col.upper)
                else:
                    lo, hi = (pd.Timestamp(b, unit="s") for b in (col.lower, col.upper))
                    out[col.name] = pd.to_datetime(s).clip(lo, hi)
        return out


def numeric_values(s: pd.Series, col: Column) -> np.ndarray:
    """A numeric or datetime column as float64 (datetimes in epoch seconds), NaN for missing."""
    if col.kind == "datetime":
        return _to_epoch_seconds(s, col.name)
    if pd.api.types.is_bool_dtype(s.dtype) or not pd.api.types.is_numeric_dtype(s.dtype):
        conv = pd.to_numeric(s, errors="coerce")
        bad = s[conv.isna() & s.notna()]
        if len(bad) or pd.api.types.is_bool_dtype(s.dtype):
            ex = list(bad.unique()[:3]) if len(bad) else list(s.unique()[:3])
            raise SchemaError(f"column {col.name!r}: declared numerical but holds non-numeric values "
                              f"(e.g. {ex}, dtype {s.dtype})")
        s = conv
    return s.to_numpy(dtype=float, na_value=np.nan)


def infer_kind(s: pd.Series, max_categories: int = 50) -> str:
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return "datetime"
    if pd.api.types.is_bool_dtype(s.dtype):
        return "categorical"
    if pd.api.types.is_numeric_dtype(s.dtype):
        return "numerical" if s.nunique() > max_categories or not _integral(s) else (
            "numerical" if s.nunique() > 10 else "categorical")
    return "categorical"


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
