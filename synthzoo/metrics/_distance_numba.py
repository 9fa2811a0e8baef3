"""Compiled nearest-neighbour search under Gower distance (numba), for :mod:`.distance`.

One row of distances at a time, in chunks that stay in the first-level cache, with the two
nearest neighbours updated as the chunk is scanned: no distance matrix is stored.  Every sum runs
in exactly the order of the numpy path (:meth:`.distance.GowerSpace.block`): the clean numeric
columns left to right from 0 (the order of ``scipy.spatial.distance.cdist``'s city-block kernel),
then the columns with missing values, then the categorical part -- ``columns - matches`` with the
matches an exact integer (here a popcount of one-hot bit sets, there a product of one-hot
blocks), or the weighted mismatches summed in column order (as the one-hot product accumulates
them) -- then the scaling.  So every distance is bit-identical to the numpy path's, and so are the
neighbours, ties to the lower index (``tests/metrics/test_eval_shortcuts.py`` checks both).
Compiled once and cached on disk (:func:`~synthzoo.core.jit.cached_njit`); ``nogil`` lets ``evaluate``'s
threads search side by side.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import intrinsic

from ..core.jit import cached_njit

_CHUNK = 1024  # reference rows per chunk: a chunk's distances and columns stay in L1


@intrinsic
def _popcount(typingctx, x):  # pragma: no cover - compiled
    """The number of set bits of a uint64 (LLVM's ctpop: one instruction, vectorised)."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return types.uint64(types.uint64), codegen


@cached_njit(nogil=True)
def top2(a_num, a_nan, a_cat, a_bits, b_num_t, b_nan_t, b_cat_t, b_bits_t, n_b, clean, nan_cols, w_num, oos,
         w_cat, weighted, n_cat, inv_total, mode, rd1, ri1, rd2, ri2, cd1, ci1, cd2, ci2):  # pragma: no cover
    """The two nearest ``b`` rows of every ``a`` row, ordered by (distance, index): distances
    ``rd1``/``rd2`` and indices ``ri1``/``ri2`` (filled with inf and a large index on entry).
    ``mode`` 0: rows only; 1: also the two nearest ``a`` rows of every ``b`` row (``cd*``/``ci*``);
    2: ``b`` is ``a`` itself -- only the upper triangle (j >= i) is computed and each distance
    updates both rows.

    ``a_*`` are row-major (rows x columns), ``b_*_t`` column-major; numbers are the encoded (scaled,
    weighted) values, ``*_nan`` their missing flags, ``*_cat`` the category codes (``oos[c]``: column
    c's out-of-schema code, which matches nothing; read when ``weighted``), ``*_bits`` the one-hot
    bit sets of the categories (out-of-schema slots clear; read when not ``weighted``);
    ``clean``/``nan_cols`` the numeric columns without / with a missing value in either table,
    ``w_num`` the numeric weights (the distance of a missing to a present value), ``w_cat`` the
    categorical ones.

    Candidates reach every row in increasing index order (a row's own scan runs left to right,
    and the other direction's candidates arrive with the outer row index, which only grows; in
    mode 2 a row's candidates from earlier rows all precede its own scan), so keeping the first
    of equal distances -- strict comparisons -- orders ties by index."""
    n_a = a_num.shape[0]
    buf = np.empty(_CHUNK, dtype=np.float64)
    acc = np.empty(_CHUNK, dtype=np.float64)
    cnt = np.empty(_CHUNK, dtype=np.int64)
    n_clean, n_nan, n_catcols, n_words = clean.shape[0], nan_cols.shape[0], a_cat.shape[1], a_bits.shape[1]
    for i in range(n_a):
        j_start = i if mode == 2 else 0
        d1, i1, d2, i2 = rd1[i], ri1[i], rd2[i], ri2[i]
        for c0 in range(j_start, n_b, _CHUNK):
            m = min(_CHUNK, n_b - c0)
            for j in range(m):
                buf[j] = 0.0
            for kk in range(n_clean):
                k = clean[kk]
                x = a_num[i, k]
                col = b_num_t[k, c0:c0 + m]
                for j in range(m):
                    buf[j] += abs(x - col[j])
            for kk in range(n_nan):
                k = nan_cols[kk]
                x, xn, w = a_num[i, k], a_nan[i, k], w_num[k]
                col, coln = b_num_t[k, c0:c0 + m], b_nan_t[k, c0:c0 + m]
                for j in range(m):
                    if xn and coln[j]:
                        buf[j] += 0.0
                    elif xn or coln[j]:
                        buf[j] += w
                    else:
                        buf[j] += abs(x - col[j])
            if n_catcols > 0 and weighted:
                for j in range(m):
                    acc[j] = 0.0
                for c in range(n_catcols):
                    code, w = a_cat[i, c], w_cat[c]
                    colc = b_cat_t[c, c0:c0 + m]
                    if code == oos[c]:
                        for j in range(m):
                            acc[j] += w
                    else:
                        for j in range(m):
                            acc[j] += w if colc[j] != code else 0.0
                for j in range(m):
                    buf[j] += acc[j]
            elif n_catcols > 0:
                for j in range(m):
                    cnt[j] = 0
                for q in range(n_words):
                    x_bits = a_bits[i, q]
                    colb = b_bits_t[q, c0:c0 + m]
                    for j in range(m):
                        cnt[j] += _popcount(x_bits & colb[j])
                for j in range(m):
                    buf[j] = (buf[j] + n_cat) - np.float64(cnt[j])
            for j in range(m):
                buf[j] *= inv_total
            # most chunks hold no new neighbour: a vectorised count of candidates first
            hits = 0
            if mode == 0:
                for j in range(m):
                    hits += buf[j] < d2
            elif mode == 1:
                for j in range(m):
                    hits += (buf[j] < d2) | (buf[j] < cd2[c0 + j])
            else:
                for j in range(m):
                    hits += (buf[j] < d2) | (buf[j] < rd2[c0 + j])
            if hits == 0:
                continue
            for j in range(m):
                d = buf[j]
                jj = c0 + j
                if d < d2:
                    if d < d1:
                        d2, i2, d1, i1 = d1, i1, d, jj
                    else:
                        d2, i2 = d, jj
                if mode == 1:
                    if d < cd2[jj]:
                        if d < cd1[jj]:
                            cd2[jj], ci2[jj], cd1[jj], ci1[jj] = cd1[jj], ci1[jj], d, i
                        else:
                            cd2[jj], ci2[jj] = d, i
                elif mode == 2 and jj > i:
                    if d < rd2[jj]:
                        if d < rd1[jj]:
                            rd2[jj], ri2[jj], rd1[jj], ri1[jj] = rd1[jj], ri1[jj], d, i
                        else:
                            rd2[jj], ri2[jj] = d, i
        rd1[i], ri1[i], rd2[i], ri2[i] = d1, i1, d2, i2


def one_hot_bits(onehot: np.ndarray) -> np.ndarray:
    """(n, slots) 0/1 one-hot rows -> (n, words) uint64 bit sets, slot s at bit s % 64 of word s // 64."""
    n, slots = onehot.shape
    words = max(1, (slots + 63) // 64)
    packed = np.zeros((n, words * 8), dtype=np.uint8)
    packed[:, : (slots + 7) // 8] = np.packbits(onehot.astype(bool), axis=1, bitorder="little")
    return packed.view("<u8").astype(np.uint64)


def search(a: dict, b: dict, clean, nan_cols, w_num, oos, w_cat, weighted: bool, total: float, mode: int):
    """Run :func:`top2` on two encodings of :class:`.distance.GowerSpace`; returns
    ``((row_d, row_i), (col_d, col_i))`` (the second ``None`` unless ``mode == 1``), index -1 where
    a row has fewer than two candidates."""
    n_a, n_b = a["n"], b["n"]
    big = np.iinfo(np.int64).max
    n_col = n_b if mode == 1 else 0
    rd1, rd2, cd1, cd2 = np.full(n_a, np.inf), np.full(n_a, np.inf), np.full(n_col, np.inf), np.full(n_col, np.inf)
    ri1, ri2, ci1, ci2 = (np.full(n, big, dtype=np.int64) for n in (n_a, n_a, n_col, n_col))
    c = np.ascontiguousarray
    top2(c(a["num"]), c(a["nan"]), c(a["cat"]), c(a["bits"]), c(b["num"].T), c(b["nan"].T), c(b["cat"].T),
         c(b["bits"].T), n_b, clean, nan_cols, w_num, oos, w_cat, weighted, float(a["n_cat"]), 1.0 / total, mode,
         rd1, ri1, rd2, ri2, cd1, ci1, cd2, ci2)

    def pack(d1, i1, d2, i2):
        idx = np.stack([i1, i2], 1)
        idx[idx == big] = -1
        return np.stack([d1, d2], 1), idx
    return pack(rd1, ri1, rd2, ri2), (pack(cd1, ci1, cd2, ci2) if mode == 1 else None)
