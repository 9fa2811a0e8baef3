"""Gower distance between mixed-type records, and exact nearest-neighbour search with it.

Gower's distance (Gower, 1971) averages per-column dissimilarities in [0, 1]:

* numeric / datetime: ``|x - y| / (upper - lower)`` with the schema's *public* bounds (values
  outside the bounds may give more than 1 for that column);
* categorical: 0 if equal, 1 otherwise (a synthetic value outside the schema differs from
  every real value);
* missing: 0 between two missing values, 1 between a missing and a present value.

No one-hot blow-up of the distance itself: categorical mismatches are counted with one
matrix product of one-hot blocks (matches = A @ B.T), numeric parts with ``cdist`` on the few
numeric columns, so the cost grows with the number of columns, not of categories squared.
The searches for the one or two nearest neighbours run compiled (:mod:`._distance_numba`: one
row of distances at a time, summed in the same order, so the distances and neighbours are
bit-identical to the numpy blocks'); more neighbours, and ``compiled=False``, use the blocks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.spatial.distance import cdist

from ..core.schema import Schema
from ._common import views

try:  # numba is a dependency; without it the numpy blocks do every search
    from . import _distance_numba as _nb
except ImportError:  # pragma: no cover
    _nb = None


class GowerSpace:
    """A schema's records encoded for Gower distance computations.

    ``weights`` (one non-negative number per schema column, default all 1) gives the weighted
    Gower distance sum_j w_j d_j / sum_j w_j, as epsilon-identifiability uses it.  ``compiled``
    (default: when numba is installed) runs the one- and two-neighbour searches compiled; the
    results are the same either way."""

    def __init__(self, schema: Schema, weights=None, compiled: bool | None = None):
        self.schema = schema
        self.p = len(schema)
        w = np.ones(self.p) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != (self.p,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"weights: expected {self.p} finite non-negative numbers with a positive sum")
        self.weighted = weights is not None
        kinds = [c.kind == "categorical" for c in schema.columns]
        self.w_num = w[[not k for k in kinds]]
        self.w_cat = w[kinds]
        self.total = float(w.sum())
        self.compiled = (_nb is not None) if compiled is None else bool(compiled and _nb is not None)
        # each categorical column's out-of-schema code (see category_codes): it matches nothing
        self._oos = np.array([len(c.categories) + 1 for c in schema.columns if c.kind == "categorical"],
                             dtype=np.int64)

    def encode(self, df: pd.DataFrame, role: str = "table") -> dict:
        v = views(df, self.schema, role)
        num_cols = [c for c in self.schema.columns if c.kind != "categorical"]
        cat_cols = [c for c in self.schema.columns if c.kind == "categorical"]
        num = np.empty((v.n, len(num_cols)), dtype=np.float64)
        for k, c in enumerate(num_cols):
            span = c.upper - c.lower
            num[:, k] = self.w_num[k] * (v.num[c.name] - c.lower) / span if span > 0 else 0.0
        onehots = []
        for c in cat_cols:
            k = len(c.categories) + 2  # + missing + out-of-schema
            oh = np.zeros((v.n, k), dtype=np.float32)
            codes = v.cat[c.name]
            oh[np.arange(v.n), codes] = 1.0
            # an out-of-schema value must mismatch everything, even another out-of-schema value
            oh[:, -1] = 0.0
            onehots.append(oh)
        oh = np.concatenate(onehots, axis=1) if onehots else np.zeros((v.n, 0), dtype=np.float32)
        ohw, ohc = oh, None
        if self.weighted and onehots:
            # weights as large as 1e16 (entropy weights) make "total - matches" lose the small terms,
            # so weighted distances sum the mismatches directly: ohw (weights on a's value, its
            # out-of-schema slot kept) times ohc = 1 - one-hot of b (out-of-schema never matches)
            blocks = []
            for c, w in zip(cat_cols, self.w_cat):
                o = np.zeros((v.n, len(c.categories) + 2))
                o[np.arange(v.n), v.cat[c.name]] = w
                blocks.append(o)
            ohw = np.concatenate(blocks, axis=1)
            ohc = 1.0 - oh.astype(np.float64)
        # for the compiled searches: category codes (weighted) or one-hot bit sets (unweighted)
        codes = np.stack([v.cat[c.name] for c in cat_cols], axis=1) if cat_cols else np.zeros((v.n, 0), np.int64)
        bits = _nb.one_hot_bits(oh) if self.compiled and not self.weighted else np.zeros((v.n, 0), np.uint64)
        return {"num": num, "nan": np.isnan(num), "oh": oh, "ohw": ohw, "ohc": ohc, "cat": codes, "bits": bits,
                "n_cat": float(self.w_cat.sum()), "n": v.n}

    def block(self, a: dict, ia: slice, b: dict) -> np.ndarray:
        """Gower distances between rows ``ia`` of ``a`` and all rows of ``b``."""
        d = None
        if a["num"].shape[1]:
            an, bn = a["num"][ia], b["num"]
            anan, bnan = a["nan"][ia], b["nan"]
            # columns with a missing value anywhere in either table take the slow path -- decided on
            # the whole tables, so d(x, y) is summed in the same order in every block and both
            # orientations (the pair and triangle searches rely on it)
            has_nan = a["nan"].any(0) | bnan.any(0)
            clean = ~has_nan
            if clean.any():
                d = cdist(an[:, clean], bn[:, clean], metric="cityblock")
            for k in np.nonzero(has_nan)[0]:
                diff = np.abs(an[:, k][:, None] - bn[:, k][None, :])
                ma, mb = anan[:, k][:, None], bnan[:, k][None, :]
                diff[ma & mb] = 0.0
                diff[ma ^ mb] = self.w_num[k]
                d = diff if d is None else np.add(d, diff, out=d)
        if d is None:
            d = np.zeros((ia.stop - ia.start, b["n"]), dtype=np.float64)
        if a["n_cat"] and self.weighted:
            d += a["ohw"][ia] @ b["ohc"].T
        elif a["n_cat"]:  # mismatches = columns - matches (one float32 product, added in place)
            d += a["n_cat"]
            np.subtract(d, a["oh"][ia] @ b["oh"].T, out=d)
        d *= 1.0 / self.total
        return d

    def rowwise(self, a: dict, ia: np.ndarray, b: dict, ib: np.ndarray) -> np.ndarray:
        """Gower distances between the aligned row pairs (a[ia[i]], b[ib[i]])."""
        d = np.zeros(len(ia))
        if a["n_cat"] and self.weighted:
            d += np.einsum("ij,ij->i", a["ohw"][ia], b["ohc"][ib])
        elif a["n_cat"]:
            d += a["n_cat"] - np.einsum("ij,ij->i", a["oh"][ia], b["oh"][ib])
        if a["num"].shape[1]:
            x, y = a["num"][ia], b["num"][ib]
            mx, my = a["nan"][ia], b["nan"][ib]
            diff = np.abs(x - y)
            diff[mx & my] = 0.0
            diff = np.where(mx ^ my, self.w_num[None, :], diff)
            d += diff.sum(1)
        return d / self.total

    def nearest(self, query: dict, ref: dict, k: int = 1, block_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` smallest Gower distances (sorted) from each query row to the reference rows,
        and their indices (for ``k=1``, the first reference row among tied nearest ones)."""
        k = min(k, ref["n"])
        if k <= 2 and self.compiled:
            (dist, idx), _ = self._search(query, ref, 0)
            return self._clamp(dist[:, :k]), idx[:, :k]
        if block_rows is None:
            block_rows = max(64, int(4_000_000 // max(ref["n"], 1)))
        dist = np.empty((query["n"], k), dtype=np.float64)
        idx = np.empty((query["n"], k), dtype=np.int64)
        for start in range(0, query["n"], block_rows):
            sl = slice(start, min(start + block_rows, query["n"]))
            d = self.block(query, sl, ref)
            if k <= 2:  # argmin passes: the first of tied nearest rows, and cheaper than a partition
                r = np.arange(d.shape[0])
                i = d.argmin(axis=1)
                dist[sl, 0], idx[sl, 0] = d[r, i], i
                if k == 2:
                    d[r, i] = np.inf
                    j = d.argmin(axis=1)
                    dist[sl, 1], idx[sl, 1] = d[r, j], j
                continue
            if k < d.shape[1]:
                part = np.argpartition(d, k - 1, axis=1)[:, :k]
            else:
                part = np.tile(np.arange(d.shape[1]), (d.shape[0], 1))
            pd_ = np.take_along_axis(d, part, axis=1)
            order = np.argsort(pd_, axis=1, kind="stable")
            dist[sl] = np.take_along_axis(pd_, order, axis=1)
            idx[sl] = np.take_along_axis(part, order, axis=1)
        if not self.weighted:  # float32 matmul rounding can leave ~1e-7 for identical rows
            dist[dist < 1e-6] = 0.0
        return dist, idx

    def _block_rows(self, n_ref: int) -> int:
        return max(64, int(4_000_000 // max(n_ref, 1)))

    def _search(self, a: dict, b: dict, mode: int):
        """The compiled two-nearest search (:func:`._distance_numba.top2`; ``mode`` 0: a's rows,
        1: both directions, 2: a against itself), unclamped."""
        # columns with a missing value in either table take the missing-aware sum, as in block()
        has_nan = a["nan"].any(0) | b["nan"].any(0)
        return _nb.search(a, b, np.nonzero(~has_nan)[0], np.nonzero(has_nan)[0], self.w_num, self._oos, self.w_cat,
                          self.weighted, self.total, mode)

    def _clamp(self, dist: np.ndarray) -> np.ndarray:
        if not self.weighted:  # float32 matmul rounding can leave ~1e-7 for identical rows
            dist[dist < 1e-6] = 0.0
        return dist

    def nearest_pair(self, a: dict, b: dict) -> tuple[tuple, tuple]:
        """The two nearest ``b`` rows of each ``a`` row and the two nearest ``a`` rows of each ``b``
        row -- ``(nearest(a, b, 2), nearest(b, a, 2))`` -- from one pass over the distance matrix:
        each block's rows give the first, its columns the second.  The distance of (x, y) is computed
        as that of (y, x) -- the same sums in the same order (the weighted categorical part is a
        product of one-hot blocks, which OpenBLAS accumulates in order; a test checks it) -- so the
        result equals the two searches exactly, ties to the lower index included."""
        if a["n"] < 2 or b["n"] < 2:
            return self.nearest(a, b, 2), self.nearest(b, a, 2)
        if self.compiled:
            (da, ia), (db, ib) = self._search(a, b, 1)
            return (self._clamp(da), ia), (self._clamp(db), ib)
        step = self._block_rows(b["n"])
        da, ia = np.empty((a["n"], 2)), np.empty((a["n"], 2), dtype=np.int64)
        db, ib = np.full((b["n"], 2), np.inf), np.full((b["n"], 2), -1, dtype=np.int64)
        for start in range(0, a["n"], step):
            sl = slice(start, min(start + step, a["n"]))
            d = self.block(a, sl, b)
            cd, ci = _top2(np.ascontiguousarray(d.T))  # columns first: _top2 overwrites its input
            _merge2(db, ib, cd, np.where(ci >= 0, ci + start, -1))
            da[sl], ia[sl] = _top2(d)
        if not self.weighted:
            for dist in (da, db):
                dist[dist < 1e-6] = 0.0
        return (da, ia), (db, ib)

    def nearest_self(self, a: dict) -> tuple[np.ndarray, np.ndarray]:
        """``nearest(a, a, 2)`` (each row's first neighbour is itself or an identical row) from the
        upper triangle of the distance matrix only: block i holds rows i against rows from i on, its
        rows give their neighbours there and its columns past the diagonal block give theirs among
        block i's rows.  Exactly equal to the full search (see :meth:`nearest_pair`), for half the
        distances."""
        if a["n"] < 2:
            return self.nearest(a, a, 2)
        if self.compiled:
            (d, i), _ = self._search(a, a, 2)
            return self._clamp(d), i
        n = a["n"]
        step = self._block_rows(n)
        d_best, i_best = np.full((n, 2), np.inf), np.full((n, 2), -1, dtype=np.int64)
        for start in range(0, n, step):
            stop = min(start + step, n)
            d = self.block(a, slice(start, stop), _slice(a, start))
            if stop < n:  # columns past the diagonal block: their nearest among this block's rows
                cd, ci = _top2(np.ascontiguousarray(d[:, stop - start:].T))
                _merge2(d_best[stop:], i_best[stop:], cd, np.where(ci >= 0, ci + start, -1))
            rd, ri = _top2(d)
            _merge2(d_best[start:stop], i_best[start:stop], rd, np.where(ri >= 0, ri + start, -1))
        if not self.weighted:
            d_best[d_best < 1e-6] = 0.0
        return d_best, i_best


def take_rows(e: dict, rows) -> dict:
    """Rows ``rows`` (an index array or a slice, which gives views) of an encoding of
    :meth:`GowerSpace.encode`: every per-row array; scalars and absent parts kept."""
    return {k: (v[rows] if isinstance(v, np.ndarray) else v) for k, v in e.items()} | {"n": len(e["num"][rows])}


def concat_rows(a: dict, b: dict) -> dict:
    """Two encodings of one space: the rows of ``a``, then those of ``b``."""
    return {k: (np.concatenate([v, b[k]]) if isinstance(v, np.ndarray) else v) for k, v in a.items()} | \
        {"n": a["n"] + b["n"]}


def _slice(e: dict, start: int, stop: int | None = None) -> dict:
    """Rows ``start:stop`` of an encoding (views, no copy)."""
    return take_rows(e, slice(start, stop))


def _top2(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``d``: the two smallest values and their columns, the lower column first among
    equal values (two argmin passes, as :meth:`GowerSpace.nearest`).  ``d`` is overwritten."""
    r = np.arange(d.shape[0])
    i = d.argmin(axis=1)
    d1 = d[r, i]
    if d.shape[1] < 2:
        return np.stack([d1, np.full_like(d1, np.inf)], 1), np.stack([i, np.full_like(i, -1)], 1)
    d[r, i] = np.inf
    j = d.argmin(axis=1)
    return np.stack([d1, d[r, j]], 1), np.stack([i, j], 1)


def _merge2(d: np.ndarray, i: np.ndarray, d2: np.ndarray, i2: np.ndarray) -> None:
    """Merge candidate pairs (d2, i2) into the running two nearest (d, i), in place: the two
    smallest by (distance, index) -- the order one search over all columns would give."""
    dd, ii = np.concatenate([d, d2], 1), np.concatenate([i, i2], 1)
    # fillers (inf, -1) must sort after every real candidate, also after a real inf
    key_i = np.where(ii < 0, np.iinfo(np.int64).max, ii)
    order = np.lexsort((key_i, dd), axis=-1)[:, :2]
    d[:] = np.take_along_axis(dd, order, 1)
    i[:] = np.take_along_axis(ii, order, 1)


def gower_nearest(query: pd.DataFrame, reference: pd.DataFrame, schema: Schema, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Distances (n_query, k) and indices of the ``k`` nearest reference rows under Gower distance."""
    space = GowerSpace(schema)
    return space.nearest(space.encode(query, "query"), space.encode(reference, "reference"), k)
