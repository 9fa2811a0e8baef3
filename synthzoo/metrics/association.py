"""Pairwise association matrices and their real-vs-synthetic difference (for the report).

One association measure per pair of column kinds, each in [-1, 1] or [0, 1]:

* numeric x numeric: Pearson correlation (signed; rows where either value is missing dropped);
* categorical x categorical: Cramér's V (missing is a category);
* categorical x numeric: the correlation ratio eta (how much of the numeric variance the
  categories explain, as a correlation; rows with a missing numeric value dropped).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ..core.schema import Schema
from ._common import check_column_pairs, prepare, resolve_schema, varies


def _pearson(x, y) -> float:
    ok = ~(np.isnan(x) | np.isnan(y))
    if ok.sum() < 3:
        return 0.0
    x, y = x[ok], y[ok]
    if not (varies(x) and varies(y)):  # a constant column: no association (its sd may be rounding noise)
        return 0.0
    return float(np.mean((x - x.mean()) * (y - y.mean())) / (x.std() * y.std()))


def _cramers_v(a, b) -> float:
    ua, ia = np.unique(a, return_inverse=True)
    ub, ib = np.unique(b, return_inverse=True)
    if len(ua) < 2 or len(ub) < 2:
        return 0.0
    table = np.zeros((len(ua), len(ub)))
    np.add.at(table, (ia, ib), 1)
    n = table.sum()
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / n
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return float(np.sqrt(chi2 / (n * (min(table.shape) - 1))))


def _eta(cat, x) -> float:
    ok = ~np.isnan(x)
    cat, x = cat[ok], x[ok]
    if x.size < 3 or not varies(x):
        return 0.0
    u, inv = np.unique(cat, return_inverse=True)
    counts = np.bincount(inv)
    means = np.bincount(inv, weights=x) / counts
    between = float(np.sum(counts * (means - x.mean()) ** 2))
    return float(np.sqrt(between / (x.var() * x.size)))


def pairwise_matrix(v, schema: Schema, cat_cat, cat_num, num_num) -> np.ndarray:
    """Column x column matrix of ``cat_cat(a, b)`` between categories, ``cat_num(cat, num)`` between a
    category and a number and ``num_num(x, y)`` between numbers, on ``prepare``'s column views; 1 on
    the diagonal.  (This module's associations and SynthEval's squared ones share it.)"""
    cols = schema.columns
    d = len(cols)
    m = np.eye(d)
    for i, j in itertools.combinations(range(d), 2):
        a, b = cols[i], cols[j]
        if a.kind == "categorical" and b.kind == "categorical":
            val = cat_cat(v.cat[a.name], v.cat[b.name])
        elif a.kind == "categorical":
            val = cat_num(v.cat[a.name], v.num[b.name])
        elif b.kind == "categorical":
            val = cat_num(v.cat[b.name], v.num[a.name])
        else:
            val = num_num(v.num[a.name], v.num[b.name])
        m[i, j] = m[j, i] = val
    return m


def _matrix(v, schema: Schema) -> np.ndarray:
    return pairwise_matrix(v, schema, _cramers_v, _eta, _pearson)


def association_matrices(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(real, synthetic) association matrices as column x column frames."""
    schema = resolve_schema(schema, real)
    r, s = prepare(real, synthetic, schema)
    names = schema.names
    return (pd.DataFrame(_matrix(r, schema), index=names, columns=names),
            pd.DataFrame(_matrix(s, schema), index=names, columns=names))


def association_difference(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> float:
    """Mean absolute difference of the pairwise associations (off-diagonal; lower is better)."""
    check_column_pairs(resolve_schema(schema, real), "association_difference")
    a, b = association_matrices(real, synthetic, schema)
    d = np.abs(a.to_numpy() - b.to_numpy())
    return float(d[np.triu_indices(len(d), 1)].mean())
