"""Compiled pricing step of :func:`.wasserstein._emd_by_pricing` (numba): the ground costs of every
(real point, synthetic point) pair, less the duals of a restricted transport problem, scanned row by
row without storing the cost matrix.  The costs are the metric's (:func:`.wasserstein._cost`):
categorical columns cost 1 when the codes differ, numeric ones ``|x - y|``, 1 between a missing and
a present value and 0 between two missing ones.  Compiled once and cached on disk
(:func:`~synthzoo.core.jit.cached_njit`); ``nogil`` lets ``evaluate``'s threads price side by side.
"""

from __future__ import annotations

import numpy as np

from ..core.jit import cached_njit


@cached_njit(nogil=True)
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


@cached_njit(nogil=True)
def _swap(key, mass, i, j):  # pragma: no cover - compiled
    key[i], key[j] = key[j], key[i]
    mass[i], mass[j] = mass[j], mass[i]


@cached_njit(nogil=True)
def _sift_up(key, mass, i):  # pragma: no cover - compiled
    while i > 0 and key[(i - 1) // 2] < key[i]:
        _swap(key, mass, i, (i - 1) // 2)
        i = (i - 1) // 2


@cached_njit(nogil=True)
def _sift_down(key, mass, size):  # pragma: no cover - compiled
    i = 0
    while True:
        a, b, top = 2 * i + 1, 2 * i + 2, i
        if a < size and key[a] > key[top]:
            top = a
        if b < size and key[b] > key[top]:
            top = b
        if top == i:
            return
        _swap(key, mass, i, top)
        i = top


@cached_njit(nogil=True)
def isotonic_l1(target, weight, last):  # pragma: no cover - compiled
    """``min sum weight |h - target|`` over nondecreasing ``h`` pinned to 0 before the first point and
    to ``last`` after the last one (a weight above all others pins a value), by slope trick: each
    point adds its breakpoint to a max-heap of the cost's left slopes, and the mass above it moves
    down to it at a cost of the distance (:func:`.wasserstein._one_number_with_missing`)."""
    n = target.shape[0]
    pin = 2.0 * weight.sum() + 1.0
    key, mass = np.empty(n + 2), np.empty(n + 2)
    size, total = 0, 0.0
    for s in range(n + 2):
        t = 0.0 if s == 0 else (last if s == n + 1 else target[s - 1])
        w = pin if (s == 0 or s == n + 1) else weight[s - 1]
        left, moved = w, 0.0
        while left > 0.0 and size > 0 and key[0] > t:
            take = min(mass[0], left)
            total += take * (key[0] - t)
            left -= take
            moved += take
            if mass[0] > take:
                mass[0] -= take
            else:  # the top is used up: the last leaf replaces it
                size -= 1
                key[0], mass[0] = key[size], mass[size]
                _sift_down(key, mass, size)
        key[size], mass[size] = t, w + moved
        _sift_up(key, mass, size)
        size += 1
    return total
