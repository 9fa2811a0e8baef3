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
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.spatial.distance import cdist

from ..core.schema import Schema
from ._common import views


class GowerSpace:
    """A schema's records encoded for Gower distance computations.

    ``weights`` (one non-negative number per schema column, default all 1) gives the weighted
    Gower distance sum_j w_j d_j / sum_j w_j, as epsilon-identifiability uses it."""

    def __init__(self, schema: Schema, weights=None):
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
        return {"num": num, "nan": np.isnan(num), "oh": oh, "ohw": ohw, "ohc": ohc, "n_cat": float(self.w_cat.sum()),
                "n": v.n}

    def block(self, a: dict, ia: slice, b: dict) -> np.ndarray:
        """Gower distances between rows ``ia`` of ``a`` and all rows of ``b``."""
        d = None
        if a["num"].shape[1]:
            an, bn = a["num"][ia], b["num"]
            anan, bnan = a["nan"][ia], b["nan"]
            has_nan = anan.any(0) | bnan.any(0)
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


def gower_nearest(query: pd.DataFrame, reference: pd.DataFrame, schema: Schema, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Distances (n_query, k) and indices of the ``k`` nearest reference rows under Gower distance."""
    space = GowerSpace(schema)
    return space.nearest(space.encode(query, "query"), space.encode(reference, "reference"), k)
