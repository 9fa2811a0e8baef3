"""Compiled counting of the rows conjunctive predicates match (numba), for singling out
(:class:`.privacy._BitIndex`).

Every one-column condition of a predicate is an interval of the column's value ranks, and a
table's rows sorted by rank put each interval's rows in one contiguous slice.  A predicate's
matches are counted over the smallest slice among its conditions, each row checked against the
other conditions by its ranks, and the count stops at ``cap``: singling out asks only whether a
predicate matches exactly one row (``cap=2``), and a predicate that matches many rows shows two
after a few rows.  The counts are exact integers, the same as the bit-set counts of
``_BitIndex.bits``.
"""

from __future__ import annotations

import numpy as np

from ..core.jit import cached_njit


@cached_njit(nogil=True)
def count_matches(rank, order, start, cols, lo, hi, cap):  # pragma: no cover - compiled
    """Rows matching every condition of each predicate, at most ``cap``.

    ``rank[j]``: each row's value rank in column j (missing: the number of distinct values);
    ``order[j]``: the rows sorted by that rank; ``start[j, r]``: the position in ``order[j]`` of the
    first row of rank >= r.  Predicate q's condition c holds for a row whose rank in column
    ``cols[q, c]`` lies in ``[lo[q, c], hi[q, c]]`` (empty when ``hi < lo``)."""
    n_q, k = cols.shape
    out = np.zeros(n_q, dtype=np.int64)
    for q in range(n_q):
        best, a, b = -1, 0, 0
        for c in range(k):
            j = cols[q, c]
            if hi[q, c] < lo[q, c]:
                best = -2
                break
            s, e = start[j, lo[q, c]], start[j, hi[q, c] + 1]
            if best == -1 or e - s < b - a:
                best, a, b = c, s, e
        if best < 0:
            continue
        jb = cols[q, best]
        cnt = 0
        for t in range(a, b):
            r = order[jb, t]
            ok = True
            for c in range(k):
                if c != best:
                    x = rank[cols[q, c], r]
                    if x < lo[q, c] or x > hi[q, c]:
                        ok = False
                        break
            if ok:
                cnt += 1
                if cnt >= cap:
                    break
        out[q] = cnt
    return out
