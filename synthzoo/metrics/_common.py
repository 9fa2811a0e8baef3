"""Shared input handling for the metrics: checking frames against the schema and turning
columns into arrays the metrics can count or measure distances on.

Every metric goes through :func:`check_frames`, so bad input fails the same way everywhere:

* a frame whose column set differs from the schema's, or an empty frame -> ``SchemaError``;
* NaN in a column whose schema declares no missing values -> ``SchemaError``;
* a non-numeric value in a numeric column -> ``SchemaError`` (from the schema);
* a *synthetic* category outside the schema, or a numeric value outside the public bounds,
  is not an error: a generator that invents values is bad, not broken.  It is scored as a
  mismatch (unknown categories get a code of their own that no real row has) and reported
  with an :class:`OutOfSchemaWarning`.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import importlib.util
import threading
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.errors import ConfigError, SchemaError
from ..core.schema import (Column, Schema, _near_categories, category_key, check_column_names, numeric_values,
                           one_value_per_cell)


class OutOfSchemaWarning(UserWarning):
    """A frame holds values the schema does not allow; they are scored as mismatches."""


class HoldoutWarning(UserWarning):
    """The holdout cannot support the membership comparison every privacy risk rests on: it holds
    the training rows themselves (in part or whole), or too few rows for the attacks' rates."""


def holdout_overlap(train: pd.DataFrame, holdout: pd.DataFrame, schema: Schema) -> tuple[float, float, int, int]:
    """(share of holdout rows that are training rows, counted one-to-one as multisets; the share
    of training rows with an exact copy elsewhere in the training rows, the rate at which fresh
    rows of a coarse table duplicate training rows by chance; the holdout's distinct rows; the
    distinct rows among as many training rows, drawn with a fixed seed).  Rows are compared as the metrics
    read them (category codes, numbers), not by their dtypes: the training rows passed as the
    holdout with an integer column read back as floats matched 11 % and were not warned about."""
    def hashes(df: pd.DataFrame, role: str) -> pd.Series:
        cols = {c.name: category_codes(df[c.name], c, role, warn=False) if c.kind == "categorical" else
                numeric_array(df[c.name], c, role, warn=False) for c in schema.columns}
        return pd.util.hash_pandas_object(pd.DataFrame(cols), index=False)
    h_t, h_h = hashes(train, "train"), hashes(holdout, "test")
    ct, ch = h_t.value_counts(), h_h.value_counts()
    both = ch.index.intersection(ct.index)
    overlap = float(np.minimum(ch[both], ct[both]).sum()) / max(len(holdout), 1)
    chance = float(ct[ct > 1].sum()) / max(len(train), 1)
    k = min(len(h_t), len(h_h))
    alike = h_t.iloc[np.random.default_rng(0).choice(len(h_t), k, replace=False)].nunique() if k else 0
    return overlap, chance, int(ch.size), int(alike)


def resolve_schema(schema: Schema | None, real: pd.DataFrame) -> Schema:
    if schema is None:
        raise ConfigError("schema: the metrics need the table's public schema (synthzoo.Schema); pass schema=...")
    if not isinstance(schema, Schema):
        raise ConfigError(f"schema: expected a synthzoo Schema, got {type(schema).__name__}")
    return schema


def check_frame(df: pd.DataFrame, schema: Schema, role: str) -> pd.DataFrame:
    """Column set, emptiness and NaN checks; returns ``df`` with columns in schema order."""
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"{role} table: expected a pandas DataFrame, got {type(df).__name__}")
    have, want = list(df.columns), schema.names
    check_column_names(df, f"the {role} table")
    lacking = [c for c in want if c not in have]
    extra = [c for c in have if c not in want]
    if lacking or extra:
        parts = []
        if lacking:
            parts.append(f"lacks schema column(s) {lacking}")
        if extra:
            parts.append(f"has column(s) {extra} the schema does not describe")
        raise SchemaError(f"{role} table " + " and ".join(parts))
    if len(df) == 0:
        raise SchemaError(f"{role} table is empty (0 rows); nothing to evaluate")
    for col in schema.columns:
        if not col.missing:
            n = int(df[col.name].isna().sum())
            if n:
                raise SchemaError(f"{role} table, column {col.name!r}: {count(n, 'missing value')} (NaN) but the "
                                  "schema declares none")
    return df[want]


def check_frames(schema: Schema, **frames: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """Check several frames at once (``real=..., synthetic=...``); ``None`` entries are skipped."""
    schema = resolve_schema(schema, None)
    return {role: check_frame(df, schema, role) for role, df in frames.items() if df is not None}


def out_of_schema(schema: Schema, **frames: pd.DataFrame | None) -> list[str]:
    """The :class:`OutOfSchemaWarning` messages of each frame (``train=..., synthetic=...``), once per table
    and column: every metric reads the columns again (on subsamples and baseline tables too), so a caller
    that scores many metrics says these once and silences the metrics' own (evaluate said one out-of-bounds
    column in some 90 warnings)."""
    msgs = []
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always", OutOfSchemaWarning)
        for role, df in frames.items():
            if df is not None:
                views(df, schema, role)  # what every metric reads, warnings included
    for w in got:
        if issubclass(w.category, OutOfSchemaWarning):
            msgs.append(str(w.message))
        else:  # anything else the reading says is said as it was
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return msgs


# ---------------------------------------------------------------------------------------
# column views
# ---------------------------------------------------------------------------------------

def category_codes(s: pd.Series, col: Column, role: str = "synthetic", warn: bool = True) -> np.ndarray:
    """Categories -> 0..k-1 in schema order; missing -> k; a value outside the schema -> k+1.

    Code k+1 never matches a schema category, so an invented value always counts as a mismatch.
    """
    k = len(col.categories)
    index = {c: i for i, c in enumerate(col.categories)}
    na = s.isna().to_numpy()
    out = np.full(len(s), k, dtype=np.int64)
    if (~na).any():
        vals = s[~na].to_numpy(dtype=object)
        # factorise once (hash-based, in C), then look up each distinct value's code; a list in a cell (a
        # JSON field read as is) is said naming the table and column, not as pandas' "unhashable type"
        try:
            with one_value_per_cell(s, col.name):
                inv, uniq = pd.factorize(vals)
        except SchemaError as e:
            raise SchemaError(f"{role} table: {e}") from None
        lookup = {u: index.get(category_key(u), k + 1) for u in uniq}
        codes = np.fromiter((lookup[u] for u in uniq), dtype=np.int64, count=len(uniq))[inv]
        out[~na] = codes
        n_bad = int((codes == k + 1).sum())
        if n_bad and warn:
            bad = sorted({category_key(u) for u in uniq if lookup[u] == k + 1})
            # the schema's hint for near misses (" Mgr", "MGR"), as its validation error gives it
            warnings.warn(f"{role} table, column {col.name!r}: {count(n_bad, 'value')} outside the schema's categories "
                          f"(e.g. {bad[:3]}){_near_categories(bad[:3], col.categories)}; scored as mismatches",
                          OutOfSchemaWarning, stacklevel=3)
    return out


def numeric_array(s: pd.Series, col: Column, role: str = "synthetic", warn: bool = True) -> np.ndarray:
    """A numeric/datetime column as float64 (NaN = missing), warning about out-of-bound values."""
    try:
        v = numeric_values(s, col)
    except SchemaError as e:
        raise SchemaError(f"{role} table: {e}") from None
    if warn:
        ok = ~np.isnan(v)
        if not np.all(np.isfinite(v[ok])):
            raise SchemaError(f"{role} table, column {col.name!r}: infinite values")
        outside = ok & ((v < col.lower) | (v > col.upper))
        if outside.any():
            warnings.warn(f"{role} table, column {col.name!r}: {count(int(outside.sum()), 'value')} outside the public "
                          f"bounds [{col.show(col.lower)}, {col.show(col.upper)}] (e.g. {col.show(v[outside][0])}); "
                          "scored as they are", OutOfSchemaWarning, stacklevel=3)
    return v


@dataclass
class ColumnViews:
    """Per-column arrays of one frame: ``cat[name]`` codes or ``num[name]`` floats."""

    n: int
    cat: dict
    num: dict


def views(df: pd.DataFrame, schema: Schema, role: str) -> ColumnViews:
    cat, num = {}, {}
    for col in schema.columns:
        if col.kind == "categorical":
            cat[col.name] = category_codes(df[col.name], col, role)
        else:
            num[col.name] = numeric_array(df[col.name], col, role)
    return ColumnViews(len(df), cat, num)


def prepare(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema,
            names: tuple[str, str] = ("real", "synthetic")) -> tuple[ColumnViews, ColumnViews]:
    """Check both frames and return their column views."""
    frames = check_frames(schema, **{names[0]: real, names[1]: synthetic})
    return views(frames[names[0]], schema, names[0]), views(frames[names[1]], schema, names[1])


# ---------------------------------------------------------------------------------------
# discretisation shared by the marginal metrics
# ---------------------------------------------------------------------------------------

def quantile_inner_edges(real_values: np.ndarray, bins: int) -> np.ndarray:
    """Inner edges of ``bins`` quantile bins of the real (non-missing) values, duplicates merged."""
    v = real_values[~np.isnan(real_values)]
    if v.size == 0:
        return np.empty(0)
    q = np.quantile(v, np.linspace(0, 1, bins + 1)[1:-1])
    return np.unique(q)


def bin_numeric(values: np.ndarray, inner_edges: np.ndarray) -> tuple[np.ndarray, int]:
    """Right-closed bins (like ``pandas.qcut``): bin i holds (e_{i-1}, e_i]; values beyond the
    edges fall into the end bins; missing values get the extra code ``len(inner_edges) + 1``.

    Right-closed matters for spiky columns: capital-gain is 0 in 90% of rows, so every
    quantile is 0 and a left-closed rule would put zeros and positives in the same bin.
    """
    n_bins = inner_edges.size + 1
    codes = np.searchsorted(inner_edges, values, side="left").astype(np.int64)
    codes[np.isnan(values)] = n_bins
    return codes, n_bins + 1


def discretise_pair(real: ColumnViews, synth: ColumnViews, schema: Schema, bins: int):
    """Integer codes of every column for real and synthetic rows, plus each column's code count."""
    rc, sc, sizes = [], [], []
    for col in schema.columns:
        if col.kind == "categorical":
            rc.append(real.cat[col.name])
            sc.append(synth.cat[col.name])
            sizes.append(len(col.categories) + 2)  # + missing + out-of-schema
        else:
            edges = quantile_inner_edges(real.num[col.name], bins)
            r, size = bin_numeric(real.num[col.name], edges)
            s, _ = bin_numeric(synth.num[col.name], edges)
            rc.append(r)
            sc.append(s)
            sizes.append(size)
    return np.stack(rc, axis=1), np.stack(sc, axis=1), np.asarray(sizes, dtype=np.int64)


def varies(x: np.ndarray) -> bool:
    """Whether the numbers ``x`` (no NaN) take more than one value: max > min, not an sd > 0 -- the sd of
    100 copies of 0.1 is 1.4e-17, and a correlation of that rounding noise read as an association."""
    return x.size > 0 and bool(np.ptp(x) > 0)


def check_column_pairs(schema: Schema, metric: str) -> None:
    """``ConfigError`` for a metric over pairs of columns on a one-column table: with no pair, its 0 read as
    a perfect score (and the report's reading as "at least as good as both references")."""
    if len(schema.columns) < 2:
        raise ConfigError(f"{metric}: needs at least two columns (it compares pairs of columns)")


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, pluralised for any count but one: "1 target class", "3 target classes"."""
    return f"{n:,} {noun if n == 1 else noun + ('es' if noun.endswith(('s', 'sh', 'ch', 'x')) else 's')}"


def check_bool(value, name: str) -> bool:
    """``value`` as a bool, or ``ConfigError``: a text such as ``"no"`` or ``"false"`` is truthy, and was
    obeyed as True."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{name} must be True or False, got {value!r}")
    return bool(value)


class WorkSlots:
    """At most ``n`` threads working at once, where a thread that waits for another's result gives
    its slot up meanwhile.

    ``evaluate`` runs its units of work on a few more threads than ``n_jobs``; each takes a slot
    (:meth:`run`) before it starts.  When a unit needs a value another unit is computing (a model
    fitted on the real rows, a neighbour search -- see :class:`OnceCache`), its thread frees the
    slot while it waits, so another unit keeps the core busy, and takes it back at once when the
    value is there (for a moment one thread more than ``n`` may run)."""

    def __init__(self, n: int):
        self.n, self.running = n, 0
        self._cond = threading.Condition()
        self._queue: collections.deque = collections.deque()

    @contextlib.contextmanager
    def run(self):
        # first come, first served: a thread that has waited for a slot is not overtaken by one
        # that asks later (the units arrive longest first)
        with self._cond:
            me = object()
            self._queue.append(me)
            while self.running >= self.n or self._queue[0] is not me:
                self._cond.wait()
            self._queue.popleft()
            self.running += 1
            self._cond.notify_all()
        _SLOTS.current = self
        try:
            yield
        finally:
            _SLOTS.current = None
            self._release()

    def _release(self):
        with self._cond:
            self.running -= 1
            self._cond.notify_all()

    def _resume(self):
        with self._cond:
            self.running += 1


_SLOTS = threading.local()


def _wait(event: threading.Event) -> None:
    """``event.wait()``, the calling thread's work slot (if it holds one) freed meanwhile."""
    slots = getattr(_SLOTS, "current", None)
    if slots is None or event.is_set():
        event.wait()
        return
    slots._release()
    try:
        event.wait()
    finally:
        slots._resume()


class OnceCache:
    """A memo whose values are computed once even when several threads ask for the same key at the
    same time: the first caller computes, the others wait for its result (``evaluate`` scores the
    release and its baselines on threads, and they share fitted models and neighbour searches).
    ``max_items`` bounds the memory of long sessions (the oldest entries go first).  A computation
    must not ask for a key another thread is computing while that thread waits for it.  A waiting
    thread gives up its :class:`WorkSlots` slot meanwhile."""

    def __init__(self, max_items: int | None = None):
        self._lock = threading.Lock()
        self._data: dict = {}
        self._pending: dict = {}
        self.max_items = max_items

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def known(self, key):
        """The value of ``key`` if it is computed or being computed (waiting for it), else ``None``."""
        with self._lock:
            if key in self._data:
                return self._data[key]
            event = self._pending.get(key)
        if event is None:
            return None
        _wait(event)
        with self._lock:
            return self._data.get(key)

    def get(self, key, compute):
        while True:
            with self._lock:
                if key in self._data:
                    return self._data[key]
                event = self._pending.get(key)
                owner = event is None
                if owner:
                    event = self._pending[key] = threading.Event()
            if owner:
                break
            _wait(event)  # then read the result, or compute it here if the owner failed
        try:
            value = compute()
            with self._lock:
                if self.max_items is not None and len(self._data) >= self.max_items:
                    for k in list(self._data)[: max(1, len(self._data) - self.max_items + 1)]:
                        del self._data[k]
                self._data[key] = value
            return value
        finally:
            with self._lock:
                del self._pending[key]
            event.set()


def join_parts(parts) -> pd.DataFrame:
    """The rows a computation split into parts gives in one piece: ``parts`` are ``((i, n), frame)``
    pairs (any order), part i holding the items at positions i, i + n, i + 2n, ... of the whole
    list, one row each; every part must be there."""
    parts = sorted(parts, key=lambda p: p[0][0])
    n = parts[0][0][1] if parts else 0
    if [p[0] for p in parts] != [(i, n) for i in range(n)]:
        raise ValueError(f"join_parts: needs the parts 0..{n - 1} of {n}, got {[p[0] for p in parts]}")
    frames = [p[1] for p in parts]
    at = np.concatenate([np.arange(i, i + n * len(f), n) for i, f in enumerate(frames)])
    return pd.concat(frames, ignore_index=True).iloc[np.argsort(at, kind="stable")].reset_index(drop=True)


#: what the metrics import lazily (keeping ``import synthzoo`` light).  Two threads importing one
#: package at once can deadlock on Python's per-module import locks (``_DeadlockError`` in
#: ``sklearn.metrics._dist_metrics``, seen with ``evaluate(n_jobs=2)`` in a fresh process), so
#: :func:`import_lazy_dependencies` imports them in the calling thread before workers start.  It is
#: the one guard: every entry point that runs metric code on several threads calls it first --
#: ``evaluate`` (and through it ``evaluate_files``, ``risk_response`` and ``synthzoo eval``) before
#: its thread pool, ``attribute_disclosure(n_jobs > 1)`` before its forests' joblib threads.
LAZY_IMPORTS = ("scipy.optimize", "scipy.spatial", "scipy.special", "scipy.stats", "sklearn.decomposition",
                "sklearn.ensemble", "sklearn.linear_model", "sklearn.metrics", "sklearn.model_selection",
                "sklearn.neighbors", "sklearn.neural_network", "sklearn.preprocessing", "sklearn.utils",
                "synthzoo.metrics._distance_numba", "synthzoo.metrics._singling_numba",
                "synthzoo.metrics._transport_numba")
#: optional libraries: imported beforehand when installed (xgboost and catboost only when named)
OPTIONAL_LAZY_IMPORTS = ("lightgbm", "ot", "ot.lp.emd_wrap")
_IMPORT_LOCK = threading.Lock()
_IMPORTED: set = set()


def import_lazy_dependencies(extra=()) -> None:
    """Import every library a metric may import lazily, here, once per process, under a lock
    (two evaluations started from two user threads wait for each other's imports); ``extra``
    names further optional libraries (evaluators such as ``xgboost``).  A library that is not
    installed is skipped: the metric that needs it raises its own clear error later."""
    wanted = [*LAZY_IMPORTS, *OPTIONAL_LAZY_IMPORTS, *extra]
    if all(m in _IMPORTED for m in wanted):
        return
    with _IMPORT_LOCK:
        for name in wanted:
            if name in _IMPORTED:
                continue
            try:
                if importlib.util.find_spec(name.split(".")[0]) is not None:
                    importlib.import_module(name)
            except ImportError:
                pass
            _IMPORTED.add(name)
