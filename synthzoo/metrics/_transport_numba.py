"""Compiled pricing step of :func:`.wasserstein._emd_by_pricing` (numba): the ground costs of every
(real point, synthetic point) pair, less the duals of a restricted transport problem, scanned row by
row without storing the cost matrix.  The costs are the metric's (:func:`.wasserstein._cost`):
categorical columns cost 1 when the codes differ, numeric ones ``|x - y|``, 1 between a missing and
a present value and 0 between two missing ones.  Compiled once and cached on disk (``cache=True``);
``nogil`` lets ``evaluate``'s threads price side by side.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def price(ur, us, is_cat, alpha, beta, q, tol, row_j, col_i):  # pragma: no cover - compiled
    """Reduced costs ``c_ij - alpha_i - beta_j`` of every pair: the ``q`` most negative of each row
    below ``-tol`` into ``row_j`` (n, q; -1 where fewer), the most negative of each column below
    ``-tol`` into ``col_i`` (m; -1 where none).  Returns the most negative reduced cost (0 if none)."""
    n, m, d = ur.shape[0], us.shape[0], ur.shape[1]
    col_best = np.full(m, -tol)
    best = np.zeros(q)
    worst = 0.0
    for i in range(n):
        for t in range(q):
            best[t] = -tol
            row_j[i, t] = -1
        for j in range(m):
            c = 0.0
            for k in range(d):
                a, b = ur[i, k], us[j, k]
                if is_cat[k]:
                    c += 1.0 if a != b else 0.0
                else:
                    na, nb = a != a, b != b
                    if na and nb:
                        pass
                    elif na or nb:
                        c += 1.0
                    else:
                        c += abs(a - b)
            r = c - alpha[i] - beta[j]
            if r < best[q - 1]:  # keep the row's q most negative, in order
                t = q - 1
                while t > 0 and best[t - 1] > r:
                    best[t] = best[t - 1]
                    row_j[i, t] = row_j[i, t - 1]
                    t -= 1
                best[t] = r
                row_j[i, t] = j
            if r < col_best[j]:
                col_best[j] = r
                col_i[j] = i
            if r < worst:
                worst = r
    return worst
