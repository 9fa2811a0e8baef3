"""The tuning objective and, for ``"accounted"`` tuning, a score whose sensitivity is true.

Objective (Du & Li, "Systematic Assessment of Tabular Data Synthesis Algorithms", 2024):
``L = a1 * Wasserstein fidelity + a2 * ML affinity (MLA) + a3 * 3-way query error`` of a trial's
synthetic table against validation records (lower is better).

``"non-private"`` and ``"public"`` tuning score on the whole validation frame as the paper does
(:func:`score_terms`).  ``"accounted"`` tuning releases a Gaussian-noised score, so one record
added to or removed from the validation records must move the (clipped) score by at most the
sensitivity the noise is calibrated to, *whatever the validation size* (which is private and
never used):

* **A fixed-size validation sample** (:func:`validation_sketch`): each record is first mapped on
  its own to a form every metric accepts (:func:`canonical_frame`: numbers clipped to the public
  bounds, a missing value where the schema allows none replaced by a fixed public value); then
  the ``m`` records with the smallest keyed hash of their content are kept ("bottom-m sketch"),
  padded with copies of one fixed public dummy row when there are fewer than ``m``.  ``m`` is
  public (a parameter, never read from the data).  Adding or removing one record changes at most
  one of the ``m`` rows: a new record enters only by pushing out the m-th smallest, or replaces a
  dummy row, and no other record moves, since a record's hash depends on its content alone.
* **Query error** (:func:`~synthzoo.metrics.query_error_3way` with ``queries="schema"``): the
  queries are drawn from the public schema, not from validation rows, so one changed row moves
  each answered fraction, hence the mean absolute error, by at most ``1/m``.
* **Wasserstein fidelity** on exactly those ``m`` rows (no random subsample, which would
  reshuffle when the data changes) against ``m`` synthetic rows clipped to the same bounds: the
  ground cost of a 1-way marginal is at most 1 and of a 2-way one at most 2 (each column in
  [0, 1], a missing value at cost 1), so moving one row's mass ``1/m`` changes each distance, and
  their mean, by at most ``2/m``.
* **MLA** depends on models trained and tested on private rows; it is charged at its whole range
  (1 after clipping); the default accounted weights give it 0.

Each term is clipped to [0, 1] (1-Lipschitz, the bounds stay true), so the weighted score has
sensitivity :func:`score_sensitivity` ``= a1 * 2/m + a2 + a3 * 1/m``; tests/test_tuning_sensitivity.py
audits it with adversarial neighbours for validation sizes from 50 to 1,000.

:func:`split_records` is the per-record train/validation split for accounted tuning without a
validation frame: a record goes to validation when a keyed hash (secret key) of its content and
occurrence number falls below the share, so adding a record moves no other record.
"""

from __future__ import annotations

import hashlib
import math
import warnings

import numpy as np
import pandas as pd

from synthzoo.core.errors import ConfigError
from synthzoo.core.schema import Schema, category_key
from synthzoo.metrics import ml_affinity, query_error_3way, wasserstein_fidelity
from synthzoo.metrics._common import OutOfSchemaWarning, views

TERMS = ("fidelity", "mla", "query")
WASSERSTEIN_ROWS = 2000  # non-private / public modes: the metric's random subsample, as before
SCORE_ROWS = 1000  # accounted mode: default public size m of the validation sample
VAL_SHARE = 0.2  # accounted mode without a validation frame: each record's chance to score, not fit
_SKETCH_KEY = "synthzoo:sketch1"  # public, fixed: 16 characters, as pandas' hash key must be
_UNKNOWN = "__synthzoo_unknown_category__"  # a category outside the schema (scored as a mismatch)


# --------------------------------------------------------------------------- all modes
def score_terms(real: pd.DataFrame, fake: pd.DataFrame, schema: Schema, train_for_mla: pd.DataFrame | None,
                weights: tuple, seed: int = 0, report=None, queries: str = "real",
                max_rows: int | None = WASSERSTEIN_ROWS) -> dict:
    """The three objective terms of ``fake`` against ``real`` (only those with a positive weight).

    ``report(step, partial)`` is called after each term with the weighted sum so far, cheapest
    term first, so a pruner can stop hopeless trials before the costly Wasserstein term.
    ``queries`` and ``max_rows`` go to the query error and the Wasserstein fidelity (the defaults
    are the paper's protocol; :func:`accounted_terms` passes ``"schema"`` and ``None``).
    """
    out = {t: float("nan") for t in TERMS}
    partial = 0.0
    step = 0
    order = (("query", 2), ("mla", 1), ("fidelity", 0))
    for term, i in order:
        if weights[i] <= 0:
            continue
        if term == "query":
            out[term] = query_error_3way(real, fake, schema, seed=seed, queries=queries)
        elif term == "mla":
            out[term] = ml_affinity(train_for_mla, fake, real, schema, seed=seed)
        else:
            out[term] = wasserstein_fidelity(real, fake, schema, max_rows=max_rows, seed=seed)
        partial += weights[i] * out[term]
        if report is not None:
            report(step, partial)
        step += 1
    return out


def weighted(terms: dict, weights: tuple) -> float:
    return float(sum(w * terms[t] for w, t in zip(weights, TERMS) if w > 0))


# --------------------------------------------------------------------------- accounted mode
def score_sensitivity(weights: tuple, rows: int = SCORE_ROWS) -> float:
    """Sensitivity of the clipped accounted score to adding or removing one validation record.

    ``rows`` is the public size ``m`` of the validation sample (:func:`validation_sketch`), not
    the private number of validation records: one record changes at most one of the ``m`` rows,
    which moves the query error by at most ``1/m`` and the Wasserstein fidelity by at most
    ``2/m``; MLA is charged at its whole clipped range, 1.
    """
    rows = int(rows)
    if rows < 1:
        raise ConfigError(f"rows must be a positive integer, got {rows}")
    return float(weights[0] * 2.0 / rows + weights[1] * 1.0 + weights[2] * 1.0 / rows)


def clipped_score(terms: dict, weights: tuple) -> float:
    """The weighted score with each term clipped to [0, 1] (a term with weight 0 counts 0)."""
    return float(sum(w * min(max(terms[t], 0.0), 1.0) for w, t in zip(weights, TERMS)
                     if w > 0 and not math.isnan(terms[t])))


def dummy_row(schema: Schema) -> pd.DataFrame:
    """The one fixed public row that pads a validation sample: every column missing where the
    schema allows it, else the first category or the lower bound."""
    row = {}
    for col in schema.columns:
        if col.kind == "categorical":
            row[col.name] = None if col.missing else col.categories[0]
        else:
            row[col.name] = np.nan if col.missing else col.lower
    return _typed(pd.DataFrame([row], columns=schema.names), schema)


def canonical_frame(df: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Each record mapped on its own (no statistic of the frame is used) to a row the metrics
    accept: schema columns in schema order; numeric and datetime values clipped to the public
    bounds (a value that is no number, or infinite, is missing); a category outside the schema
    kept as one "unknown" value, scored as a mismatch; a missing value where the schema allows
    none replaced by :func:`dummy_row`'s value.  Used for validation records and synthetic rows
    of accounted tuning, so that every ground cost lies in [0, 1] per column."""
    missing_cols = [c for c in schema.names if c not in df.columns]
    if missing_cols:
        raise ConfigError(f"frame lacks schema column(s) {missing_cols}")
    dummy = dummy_row(schema).iloc[0]
    out = {}
    for col in schema.columns:
        s = df[col.name]
        if col.kind == "categorical":
            na = pd.isna(s).to_numpy()
            cats = set(col.categories)
            keys = np.empty(len(s), dtype=object)
            for i, (v, m) in enumerate(zip(s.to_numpy(dtype=object), na)):
                if m:
                    keys[i] = None if col.missing else dummy[col.name]
                else:
                    k = category_key(v)
                    keys[i] = k if k in cats else _UNKNOWN
            out[col.name] = keys
        else:
            v = _numbers(s, col)
            v = np.where(np.isfinite(v), v, np.nan)
            v = np.clip(v, col.lower, col.upper)  # NaN stays NaN
            if not col.missing:
                v = np.where(np.isnan(v), col.lower, v)
            out[col.name] = v
    return _typed(pd.DataFrame(out, columns=schema.names, index=range(len(df))), schema)


def _numbers(s: pd.Series, col) -> np.ndarray:
    """A numeric or datetime column as float (datetimes in epoch seconds); unparseable -> NaN."""
    if col.kind == "datetime":
        ts = pd.to_datetime(s, errors="coerce", utc=True)
        ts = ts.dt.tz_localize(None)
        out = ts.astype("datetime64[ns]").to_numpy().astype("int64").astype(float) / 1e9
        out[ts.isna().to_numpy()] = np.nan
        return out
    if pd.api.types.is_bool_dtype(s.dtype):
        s = s.astype(object)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _typed(df: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    for col in schema.columns:
        if col.kind == "datetime":
            if not pd.api.types.is_datetime64_any_dtype(df[col.name].dtype):
                v = pd.to_numeric(df[col.name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                df[col.name] = pd.to_datetime(v, unit="s")
        elif col.kind == "numerical":
            df[col.name] = df[col.name].astype(float)
        else:
            df[col.name] = df[col.name].astype(object)
    return df


def _content_matrix(canon: pd.DataFrame, schema: Schema) -> np.ndarray:
    """(n, d) float matrix of what the metrics see (category codes, numbers; missing -> -inf)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfSchemaWarning)  # unknown categories: mismatches, on purpose
        v = views(canon, schema, "validation")
    cols = [v.cat[c.name].astype(float) if c.kind == "categorical" else v.num[c.name] for c in schema.columns]
    x = np.stack(cols, axis=1) if cols else np.zeros((len(canon), 0))
    return np.where(np.isnan(x), -np.inf, x) + 0.0  # one NaN, and -0.0 == 0.0


def _sketch_hash(x: np.ndarray) -> np.ndarray:
    return pd.util.hash_pandas_object(pd.DataFrame(x), index=False, hash_key=_SKETCH_KEY).to_numpy(np.uint64)


def validation_sketch(val: pd.DataFrame | None, schema: Schema, rows: int = SCORE_ROWS) -> pd.DataFrame:
    """Exactly ``rows`` validation rows: the canonical records (:func:`canonical_frame`) with the
    smallest keyed hash of their content, padded with copies of :func:`dummy_row`.

    The order is total on content (hash first, then the values), so the rows kept depend on the
    multiset of records only; adding or removing one record changes at most one of them.
    """
    rows = int(rows)
    if rows < 1:
        raise ConfigError(f"score_rows must be a positive integer, got {rows}")
    canon = canonical_frame(val, schema) if val is not None and len(val) else dummy_row(schema).iloc[:0]
    if len(canon) > rows:
        x = _content_matrix(canon, schema)
        keys = [x[:, j] for j in range(x.shape[1] - 1, -1, -1)] + [_sketch_hash(x)]
        keep = np.lexsort(keys)[:rows]
        canon = canon.iloc[np.sort(keep)]
    if len(canon) < rows:
        pad = dummy_row(schema).iloc[np.zeros(rows - len(canon), dtype=int)]
        canon = pd.concat([canon, pad], ignore_index=True) if len(canon) else pad
    return _typed(canon.reset_index(drop=True), schema)


def accounted_terms(sketch: pd.DataFrame, fake: pd.DataFrame, schema: Schema, train_for_mla: pd.DataFrame | None,
                    weights: tuple, seed: int = 0) -> dict:
    """The exact terms of accounted tuning: ``fake`` (clipped to the public bounds) against the
    validation sample ``sketch``, queries from the schema, Wasserstein on all rows."""
    fake = canonical_frame(fake, schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfSchemaWarning)  # unknown categories: mismatches, on purpose
        return score_terms(sketch, fake, schema, train_for_mla, weights, seed=seed, queries="schema", max_rows=None)


def accounted_score(val: pd.DataFrame | None, fake: pd.DataFrame, schema: Schema, weights: tuple,
                    rows: int = SCORE_ROWS, seed: int = 0, train_for_mla: pd.DataFrame | None = None) -> float:
    """The exact clipped score accounted tuning noises, of ``fake`` against the validation
    records ``val`` (for audits: its sensitivity is :func:`score_sensitivity`)."""
    return clipped_score(accounted_terms(validation_sketch(val, schema, rows), fake, schema, train_for_mla,
                                         weights, seed), weights)


# --------------------------------------------------------------------------- per-record split
def _token(v, kind: str) -> str:
    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return "\x00"
    if kind == "categorical":
        return "c" + category_key(v)
    try:
        if kind == "datetime":
            return "t%d" % pd.Timestamp(v).value
        return "n" + repr(float(v) + 0.0)
    except (TypeError, ValueError, OverflowError):
        return "s" + str(v)


def record_keys(df: pd.DataFrame, schema: Schema) -> list[bytes]:
    """Each record's content as bytes, independent of the frame's dtypes (an integer column that
    turns float when one record brings a missing value gives the other records the same key)."""
    cols = [(c.kind, df[c.name].to_numpy(dtype=object)) for c in schema.columns if c.name in df.columns]
    return ["\x1f".join(_token(vals[i], kind) for kind, vals in cols).encode() for i in range(len(df))]


def split_records(df: pd.DataFrame, schema: Schema, key: bytes, share: float = VAL_SHARE) -> np.ndarray:
    """Boolean mask of the records that go to validation (the rest fit).

    A record goes to validation when ``BLAKE2b(key; its content, its occurrence number among
    identical records)`` falls below ``share``: with a secret random ``key`` each record's side is
    an independent ``Bernoulli(share)`` draw, and it depends on that record alone, so adding or
    removing a record (anywhere in the frame) moves no other record between the two sides.
    """
    if not (0.0 < float(share) < 1.0):
        raise ConfigError(f"the validation share must lie in (0, 1), got {share!r}")
    if not isinstance(key, (bytes, bytearray)) or not 16 <= len(key) <= 64:
        raise ConfigError("split key must be 16 to 64 bytes (draw them from a NoiseSource)")
    seen: dict[bytes, int] = {}
    limit = int(float(share) * 2 ** 64)
    out = np.zeros(len(df), dtype=bool)
    for i, rec in enumerate(record_keys(df, schema)):
        j = seen.get(rec, 0)
        seen[rec] = j + 1
        h = hashlib.blake2b(rec + b"\x1e" + str(j).encode(), digest_size=8, key=bytes(key)).digest()
        out[i] = int.from_bytes(h, "little") < limit
    return out
