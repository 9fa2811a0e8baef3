"""Column encoders: raw values <-> integer codes. Preprocessors decide the parameters
(bin edges, category groups); these classes only apply them, so a fitted encoding is plain
data that can be saved as JSON.

Missing values get their own code (the last one) when the schema allows them, so they are
measured like any other value and come back at the measured rate.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .domain import INTEGER_TABLE_CELLS as _TABLE_CELLS
from .domain import Domain, code_dtype
from .errors import ConfigError
from .schema import Column, Schema, numeric_values, per_column


class CategoricalEncoder:
    """Categories -> codes, where several categories may share one code (a merged group).

    ``groups`` is a list of lists of category indices; code ``g`` stands for group ``g``.
    Decoding a group picks one of its members uniformly (the schema makes them public; their
    relative frequencies were never measured, so nothing private decides between them).
    """

    kind = "categorical"

    def __init__(self, column: Column, groups: list[list[int]] | None = None):
        self.column = column
        k = len(column.categories)
        self.groups = [list(map(int, g)) for g in groups] if groups is not None else [[i] for i in range(k)]
        flat = sorted(i for g in self.groups for i in g)
        if flat != list(range(k)):
            raise ValueError(f"column {column.name!r}: groups must partition the {k} categories")
        self._code_of = np.empty(k, dtype=np.int64)
        for g, members in enumerate(self.groups):
            self._code_of[members] = g

    @property
    def size(self) -> int:
        return len(self.groups) + (1 if self.column.missing else 0)

    @property
    def missing_code(self) -> int | None:
        return len(self.groups) if self.column.missing else None

    def transform(self, s: pd.Series) -> np.ndarray:
        # matched to the schema once (Column.as_categorical: one hash pass; a frame already validated with
        # categories=True passes through), then every row is one array lookup
        idx = np.asarray(self.column.as_categorical(s).codes)
        out = self._code_of[idx]
        na = idx < 0
        if na.any():
            if self.missing_code is None:
                raise ValueError(f"column {self.column.name!r}: missing values but the schema allows none")
            out[na] = self.missing_code
        return out

    def inverse(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        cats = np.asarray(self.column.categories, dtype=object)
        out = np.empty(len(codes), dtype=object)
        out[:] = np.nan
        sizes = np.array([len(g) for g in self.groups])
        real = codes < len(self.groups)
        c = codes[real]
        pick = (rng.random(c.size) * sizes[c]).astype(np.int64)
        members = np.zeros((len(self.groups), int(sizes.max())), dtype=np.int64)
        for g, m in enumerate(self.groups):
            members[g, :len(m)] = m
        out[real] = cats[members[c, pick]]
        return out

    def to_state(self) -> dict:
        return {"type": "categorical", "groups": self.groups}


class BinEncoder:
    """Numeric (or datetime, as epoch seconds) values -> bin codes over public-bounded edges.

    ``edges`` are increasing, start at the column's lower bound and end at its upper bound;
    bin i is [edges[i], edges[i+1]) and the last bin includes the upper bound.  Integer
    columns get integer edges, so every bin holds at least one admissible integer.
    Decoding draws a value uniformly inside the bin (an admissible integer for integer columns).
    """

    kind = "numerical"

    def __init__(self, column: Column, edges):
        self.column = column
        lo, hi = column.lower, column.upper
        e = np.clip(np.asarray(edges, dtype=float), lo, hi)
        e = np.unique(np.concatenate([[lo], e, [hi]]))
        if column.integer:
            # integer bins [a, b): admissible integers a..b-1; the last bin ends at upper+1
            ints = np.unique(np.ceil(e[:-1])) if e.size > 1 else np.array([math.ceil(lo)], dtype=float)
            e = np.concatenate([ints, [math.floor(hi) + 1]])
        elif e.size == 1:  # lower == upper: one degenerate bin
            e = np.array([lo, hi])
        self.edges = e

    @property
    def n_bins(self) -> int:
        return len(self.edges) - 1

    def _table(self, n: int) -> np.ndarray | None:
        """For an integer column of at most :data:`~synthzoo.core.domain.INTEGER_TABLE_CELLS` integers, the code of every integer
        from the lower edge (the bins' edges are integers, so ``v`` and ``floor(v)`` share a bin);
        None otherwise (binary search), and for ``n`` values fewer than half the integers when the
        table is not built yet (building it would cost more than it saves)."""
        e = self.edges
        if not self.column.integer or not np.all(np.mod(e, 1) == 0) or not 0 < e[-1] - e[0] <= _TABLE_CELLS:
            return None
        key = e.tobytes()
        if getattr(self, "_table_key", None) != key:  # edges may be replaced (encoder_from_state)
            if 2 * n < e[-1] - e[0]:
                return None
            ints = np.arange(e[0], e[-1])
            self._table_codes = np.clip(np.searchsorted(e, ints, side="right") - 1, 0, self.n_bins - 1)
            self._table_key = key
        return self._table_codes

    @property
    def size(self) -> int:
        return self.n_bins + (1 if self.column.missing else 0)

    @property
    def missing_code(self) -> int | None:
        return self.n_bins if self.column.missing else None

    def transform(self, s: pd.Series) -> np.ndarray:
        v = numeric_values(s, self.column)
        na = np.isnan(v)
        table = self._table(len(v))
        if table is not None:  # integer edges: the bin of floor(v), read from a table of the integers
            lo = self.edges[0]
            idx = np.clip(v[~na] - lo, 0, table.size - 1).astype(np.int64)
            out = table[idx]
        else:
            out = np.clip(np.searchsorted(self.edges, v[~na], side="right") - 1, 0, self.n_bins - 1)
        codes = np.empty(len(v), dtype=np.int64)
        codes[~na] = out
        if na.any():
            if self.missing_code is None:
                raise ValueError(f"column {self.column.name!r}: missing values but the schema allows none")
            codes[na] = self.missing_code
        return codes

    def inverse(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = np.full(len(codes), np.nan)
        real = codes < self.n_bins
        c = codes[real]
        lo, hi = self.edges[c], self.edges[c + 1]
        if self.column.integer:
            out[real] = np.floor(lo + rng.random(c.size) * (hi - lo))
            out[real] = np.minimum(out[real], hi - 1)
        else:
            out[real] = np.minimum(lo + rng.random(c.size) * (hi - lo), self.column.upper)
        return out

    def to_state(self) -> dict:
        return {"type": "bins", "edges": self.edges.tolist()}


#: Most bins or category groups a saved encoder may have.
MAX_CODES = 1_000_000


def encoder_from_state(column: Column, state: dict):
    """An encoder from :meth:`to_state`'s output, which may come from an untrusted file: the type must
    suit the column, category groups must partition the schema's categories, and bin edges must be
    increasing, start at the column's lower bound and end at its upper bound (integer columns:
    integer edges ending at upper + 1) -- so no bin can decode to a value outside the public bounds.
    Raises :class:`ConfigError` naming the column."""
    where = f"model file: encoder of column {column.name!r}"
    kind = state.get("type") if isinstance(state, dict) else None
    if kind == "categorical" and column.kind == "categorical":
        groups = state.get("groups")
        if set(state) != {"type", "groups"} or not isinstance(groups, list) or not all(
                isinstance(g, list) and g and all(isinstance(i, int) and not isinstance(i, bool) for i in g)
                for g in groups):
            raise ConfigError(f"{where}: 'groups' must be a list of non-empty lists of category indices")
        try:
            return CategoricalEncoder(column, groups)
        except ValueError as e:
            raise ConfigError(f"{where}: {e}") from None
    if kind == "bins" and column.is_numeric:
        edges = state.get("edges")
        if set(state) != {"type", "edges"} or not isinstance(edges, list) or not 2 <= len(edges) <= MAX_CODES + 1 \
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in edges):
            raise ConfigError(f"{where}: 'edges' must be a list of 2 to {MAX_CODES + 1:,} numbers")
        e = np.asarray(edges, dtype=float)
        lo, hi = column.lower, column.upper
        if column.integer:
            first, last = math.ceil(lo), math.floor(hi) + 1
        else:
            first, last = lo, hi
        ok = (np.all(np.isfinite(e)) and e[0] == first and e[-1] == last
              and (np.all(np.diff(e) > 0) or (lo == hi and e.size == 2))
              and (not column.integer or np.all(np.mod(e, 1) == 0)))
        if not ok:
            raise ConfigError(f"{where}: bin edges must increase from the lower bound {column.show(first)} to the "
                              f"upper bound {column.show(last)}{' (+1, integer bins)' if column.integer else ''}; "
                              f"the file's run from {column.show(e[0]) if np.isfinite(e[0]) else e[0]} to "
                              f"{column.show(e[-1]) if np.isfinite(e[-1]) else e[-1]} (edited?)")
        enc = BinEncoder(column, e)
        enc.edges = e  # saved edges are final; no re-rounding
        return enc
    raise ConfigError(f"{where}: unknown encoder {kind!r} for a {column.kind} column")


class TableEncoder:
    """One encoder per schema column: a frame <-> an (n, d) code matrix over a :class:`Domain`."""

    def __init__(self, schema: Schema, encoders: dict):
        self.schema = schema
        self.encoders = per_column(schema, encoders)
        self.domain = Domain(schema.names, [self.encoders[c].size for c in schema.names])

    def transform(self, df: pd.DataFrame, chunk: int = 1 << 20) -> np.ndarray:
        """The (n, d) code matrix in the domain's smallest integer type, filled column by column in
        row chunks: no frame-sized temporary, only one chunk of one column at a time.  Column-major,
        so that each column is filled, and later counted, as one contiguous run."""
        n = len(df)
        out = np.empty((n, len(self.schema.names)), dtype=code_dtype(self.domain.shape), order="F")
        for j, c in enumerate(self.schema.names):
            col, enc = df[c], self.encoders[c]
            for lo in range(0, n, chunk):
                out[lo:lo + chunk, j] = enc.transform(col.iloc[lo:lo + chunk])
        return out

    def inverse(self, codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """Raw-typed values: categorical columns as their schema strings, numeric as float (epoch s)."""
        # object columns stay object (pandas would otherwise infer a string dtype, a pass over every
        # value, before the schema types them anyway)
        return pd.DataFrame({c: pd.Series(self.encoders[c].inverse(codes[:, i], rng), copy=False,
                                          dtype=object if self.encoders[c].kind == "categorical" else None)
                             for i, c in enumerate(self.schema.names)})

    def to_state(self) -> dict:
        return {c: e.to_state() for c, e in self.encoders.items()}

    @classmethod
    def from_state(cls, schema: Schema, state: dict) -> "TableEncoder":
        return cls(schema, {c.name: encoder_from_state(c, state[c.name]) for c in schema.columns})
