"""Marginal-based fidelity and utility: total variation distance over 1- and 2-way marginals and
the random 3-way range/point query error.

Both follow the evaluation protocol of the seed papers — Du & Li, "Systematic assessment of
tabular data synthesis algorithms" and Chen et al., "Benchmarking differentially private
tabular data synthesis" — where marginals are compared on a discretised table and the query
error is the mean absolute difference of the answered fraction over random queries.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.schema import Schema
from ._common import check_frame, check_positive_int, discretise_pair, prepare, resolve_schema, views

QUERY_SOURCES = ("real", "schema")


def _pair_tvd(rc: np.ndarray, sc: np.ndarray, sizes: np.ndarray, i: int, j: int) -> float:
    m = int(sizes[i] * sizes[j])
    hr = np.bincount(rc[:, i] * sizes[j] + rc[:, j], minlength=m) / rc.shape[0]
    hs = np.bincount(sc[:, i] * sizes[j] + sc[:, j], minlength=m) / sc.shape[0]
    return 0.5 * float(np.abs(hr - hs).sum())


def tvd_2way(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, bins: int = 10) -> float:
    """Mean total variation distance over all 2-way marginals (lower is better, in [0, 1]).

    Numeric and datetime columns are cut into ``bins`` quantile bins computed on the *real*
    rows (synthetic values are binned with the same edges; values beyond them fall into the
    end bins); categorical values are used as they are; a missing value is its own bin and a
    synthetic category outside the schema its own (never matching) bin.  For each pair of
    columns TVD = 0.5 * || p_real - p_synth ||_1 of the normalised 2-way histograms.

    Reference values on adult: two halves of the real table ~0.02; columns sampled
    independently ~0.07.
    """
    schema = resolve_schema(schema, real)
    bins = check_positive_int(bins, "bins")
    r, s = prepare(real, synthetic, schema)
    rc, sc, sizes = discretise_pair(r, s, schema, bins)
    d = rc.shape[1]
    if d < 2:
        return tvd_1way(real, synthetic, schema, bins)
    vals = [_pair_tvd(rc, sc, sizes, i, j) for i, j in itertools.combinations(range(d), 2)]
    return float(np.mean(vals))


def tvd_1way(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, bins: int = 10) -> float:
    """Mean total variation distance over the 1-way marginals, discretised as in :func:`tvd_2way`."""
    schema = resolve_schema(schema, real)
    bins = check_positive_int(bins, "bins")
    r, s = prepare(real, synthetic, schema)
    rc, sc, sizes = discretise_pair(r, s, schema, bins)
    out = []
    for i in range(rc.shape[1]):
        hr = np.bincount(rc[:, i], minlength=int(sizes[i])) / rc.shape[0]
        hs = np.bincount(sc[:, i], minlength=int(sizes[i])) / sc.shape[0]
        out.append(0.5 * float(np.abs(hr - hs).sum()))
    return float(np.mean(out))


def tvd_2way_matrix(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, bins: int = 10) -> pd.DataFrame:
    """The per-pair TVD values behind :func:`tvd_2way` as a symmetric column x column frame
    (diagonal: the 1-way TVD), for the report's heatmap and for finding the worst pairs."""
    schema = resolve_schema(schema, real)
    bins = check_positive_int(bins, "bins")
    r, s = prepare(real, synthetic, schema)
    rc, sc, sizes = discretise_pair(r, s, schema, bins)
    d = rc.shape[1]
    m = np.zeros((d, d))
    for i in range(d):
        hr = np.bincount(rc[:, i], minlength=int(sizes[i])) / rc.shape[0]
        hs = np.bincount(sc[:, i], minlength=int(sizes[i])) / sc.shape[0]
        m[i, i] = 0.5 * float(np.abs(hr - hs).sum())
    for i, j in itertools.combinations(range(d), 2):
        m[i, j] = m[j, i] = _pair_tvd(rc, sc, sizes, i, j)
    return pd.DataFrame(m, index=schema.names, columns=schema.names)


# ---------------------------------------------------------------------------------------
# 3-way queries
# ---------------------------------------------------------------------------------------

def make_queries_3way(real: pd.DataFrame, schema: Schema, n_queries: int = 1000, seed: int = 0) -> list:
    """Draw the random 3-way queries of :func:`query_error_3way` from the real rows.

    A query is a list of three ``(column, predicate)`` pairs on distinct columns.  A predicate
    is ``("point", code)`` for a categorical column (a category drawn from a random real row,
    missing included), ``("range", lo, hi)`` for a numeric one (lo, hi two values drawn from
    the real column) or ``("missing",)`` when the drawn numeric value was missing.
    """
    schema = resolve_schema(schema, real)
    n_queries = check_positive_int(n_queries, "n_queries")
    r = views(check_frame(real, schema, "real"), schema, "real")
    return _draw_queries(r, schema, n_queries, seed)


def _draw_queries(r, schema: Schema, n_queries: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    names = schema.names
    k = min(3, len(names))
    nonmissing = {c: v[~np.isnan(v)] for c, v in r.num.items()}
    queries = []
    for _ in range(n_queries):
        cols = rng.choice(len(names), size=k, replace=False)
        q = []
        for ci in cols:
            col = schema.columns[ci]
            if col.kind == "categorical":
                q.append((col.name, ("point", int(r.cat[col.name][rng.integers(r.n)]))))
                continue
            a = r.num[col.name][rng.integers(r.n)]
            pool = nonmissing[col.name]
            if np.isnan(a) or pool.size == 0:
                q.append((col.name, ("missing",)))
            else:
                b = pool[rng.integers(pool.size)]
                q.append((col.name, ("range", float(min(a, b)), float(max(a, b)))))
        queries.append(q)
    return queries


def make_schema_queries_3way(schema: Schema, n_queries: int = 1000, seed: int = 0,
                             missing_share: float = 0.1) -> list:
    """Draw random 3-way queries from the public schema alone (no row is read).

    Same form as :func:`make_queries_3way`: three distinct random columns; a categorical column
    gets a point query on a category drawn uniformly from the schema's list (missing included
    when the schema allows it); a numeric or datetime column gets ``("missing",)`` with
    probability ``missing_share`` when the schema allows missing values, else a range between two
    points drawn uniformly on the public bounds.  Because the queries do not depend on the data,
    adding or removing one real record moves each answered fraction by at most one record's
    share: what a differentially private score needs (the tuner's ``"accounted"`` mode).
    """
    schema = resolve_schema(schema, None)
    n_queries = check_positive_int(n_queries, "n_queries")
    if not (0.0 <= float(missing_share) <= 1.0):
        raise ConfigError(f"missing_share must lie in [0, 1], got {missing_share!r}")
    return _draw_schema_queries(schema, n_queries, seed, float(missing_share))


def _draw_schema_queries(schema: Schema, n_queries: int, seed: int, missing_share: float = 0.1) -> list:
    rng = np.random.default_rng(seed)
    k = min(3, len(schema.names))
    queries = []
    for _ in range(n_queries):
        q = []
        for ci in rng.choice(len(schema.names), size=k, replace=False):
            col = schema.columns[ci]
            if col.kind == "categorical":
                # codes as in ``views``: 0..k-1 the schema's categories, k missing
                q.append((col.name, ("point", int(rng.integers(len(col.categories) + int(col.missing))))))
            elif col.missing and rng.random() < missing_share:
                q.append((col.name, ("missing",)))
            else:
                a, b = rng.uniform(col.lower, col.upper, size=2)
                q.append((col.name, ("range", float(min(a, b)), float(max(a, b)))))
        queries.append(q)
    return queries


def _answer(v, queries: list) -> np.ndarray:
    out = np.empty(len(queries))
    for qi, q in enumerate(queries):
        mask = np.ones(v.n, dtype=bool)
        for name, pred in q:
            if pred[0] == "point":
                mask &= v.cat[name] == pred[1]
            elif pred[0] == "range":
                x = v.num[name]
                mask &= (x >= pred[1]) & (x <= pred[2])  # NaN compares False: missing is outside any range
            else:
                mask &= np.isnan(v.num[name])
        out[qi] = mask.mean()
    return out


def query_answers_3way(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, n_queries: int = 1000,
                       seed: int = 0, queries: str = "real") -> tuple[np.ndarray, np.ndarray]:
    """The answered fractions (real, synthetic) of the seeded random 3-way queries, drawn from
    the real rows (``queries="real"``, :func:`make_queries_3way`) or from the public schema
    (``queries="schema"``, :func:`make_schema_queries_3way`)."""
    schema = resolve_schema(schema, real)
    n_queries = check_positive_int(n_queries, "n_queries")
    if queries not in QUERY_SOURCES:
        raise ConfigError(f"queries must be one of {QUERY_SOURCES}, got {queries!r}")
    r, s = prepare(real, synthetic, schema)
    qs = _draw_queries(r, schema, n_queries, seed) if queries == "real" else _draw_schema_queries(schema, n_queries, seed)
    return _answer(r, qs), _answer(s, qs)


def query_error_3way(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, n_queries: int = 1000,
                     seed: int = 0, queries: str = "real") -> float:
    """Mean absolute error of random 3-way counting queries, as fractions of rows (lower is better).

    The utility measure of Du & Li and Chen et al.: each query picks 3 distinct random columns;
    a numeric column gets a random range between two values drawn from the real column, a
    categorical one a point query on a category drawn from the real column (missing counts as
    a category).  The error is |fraction of real rows answering - fraction of synthetic rows
    answering|, averaged over ``n_queries`` queries drawn with ``seed`` (the same queries for
    both tables, and for every synthetic table scored with the same seed).

    ``queries="schema"`` draws the queries from the public schema instead of the real rows (see
    :func:`make_schema_queries_3way`): the error then moves by at most ``1 / len(real)`` when one
    real record is added, removed or replaced, which the tuner's private score relies on.
    """
    a, b = query_answers_3way(real, synthetic, schema, n_queries, seed, queries)
    return float(np.mean(np.abs(a - b)))
