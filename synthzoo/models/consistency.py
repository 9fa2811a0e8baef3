"""PrivSyn's consistency post-processing of noisy marginals.

Zhang, Wang, Li, He, Chen, Chen, "PrivSyn: Differentially Private Data Synthesis"
(USENIX Security 2021), Section 5: noisy marginals that share attributes disagree on the
shared part and may hold negative counts.  Two steps are alternated until both hold:

* **mutual consistency** — for every attribute set ``A`` that is an intersection of measured
  cliques (the empty set, i.e. the total, included), in order of increasing size, the
  projections onto ``A`` of all marginals containing ``A`` are replaced by their
  inverse-variance weighted average; each marginal absorbs its correction spread evenly over
  the cells that sum to one cell of ``A``.  Processing ``A`` after all of its subsets leaves
  those subsets consistent, so one pass makes every overlap agree.
* **Norm-Sub** non-negativity — negative cells are set to zero and the same amount is
  subtracted from every positive cell so that the total is unchanged.

Everything here is post-processing of released measurements: no privacy cost.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.domain import Domain, Measurement
from ..core.measurements import combine_duplicates, inverse_variance_weights


def _closure(cliques: list[tuple], domain: Domain) -> list[tuple]:
    """The cliques and all their intersections (empty set included), smallest first."""
    sets = {frozenset(c) for c in cliques} | {frozenset()}
    frontier = set(sets)
    while frontier:
        new = {a & b for a in frontier for b in sets} - sets
        sets |= new
        frontier = new
    ordered = sorted(sets, key=lambda s: (len(s), sorted(domain.index(x) for x in s)))
    return [tuple(sorted(s, key=domain.index)) for s in ordered]


def _project(arr: np.ndarray, clique: tuple, sub: tuple) -> np.ndarray:
    """Sum ``arr`` (axes in ``clique`` order) down to ``sub`` (axes in ``sub`` order)."""
    keep = [clique.index(a) for a in sub]
    drop = tuple(i for i in range(len(clique)) if i not in keep)
    out = arr.sum(axis=drop) if drop else arr
    # after summing, remaining axes are in clique order; reorder them to sub's order
    remaining = sorted(keep)
    return np.transpose(out, [remaining.index(k) for k in keep]) if len(keep) > 1 else out


def _spread(delta: np.ndarray, sub: tuple, clique: tuple, shape: tuple) -> np.ndarray:
    """Broadcast a correction over ``sub`` to ``clique``'s shape, divided evenly among the cells it covers."""
    order = sorted(range(len(sub)), key=lambda i: clique.index(sub[i]))
    d = np.transpose(delta, order) if len(sub) > 1 else delta
    sub_in_clique = sorted(clique.index(a) for a in sub)
    full = [1] * len(clique)
    for ax in sub_in_clique:
        full[ax] = shape[ax]
    g = int(np.prod(shape, dtype=np.int64)) // max(1, int(np.prod([shape[ax] for ax in sub_in_clique], dtype=np.int64)))
    return np.reshape(d, full) / g


def norm_sub(x: np.ndarray) -> np.ndarray:
    """PrivSyn's Norm-Sub: zero the negative cells and subtract one constant from the positive cells
    so that the total is kept (all zero when the total is not positive)."""
    flat = x.ravel()
    total = flat.sum()
    if total <= 0:
        return np.zeros_like(x)
    if flat.min() >= 0:
        return x.copy()
    # find delta >= 0 with sum(max(x - delta, 0)) == total
    s = np.sort(flat)[::-1]
    csum = np.cumsum(s)
    k = np.arange(1, s.size + 1)
    cand = (csum - total) / k            # delta if exactly the k largest cells stay positive
    ok = s > cand                        # the k-th largest must stay above delta
    kk = int(np.flatnonzero(ok)[-1])
    delta = cand[kk]
    return np.maximum(x - delta, 0.0)


def make_consistent(domain: Domain, measurements: Sequence[Measurement], iterations: int = 100,
                    tol: float = 1e-6) -> tuple[dict[tuple, np.ndarray], float]:
    """Consistent, non-negative marginals from noisy measurements (PrivSyn, Section 5).

    Returns ``({clique: counts}, total)`` where cliques are in domain order, every pair of
    marginals agrees on shared attributes (up to ``tol`` relative to the total once converged),
    every count is >= 0 and all marginals sum to ``total``, the inverse-variance weighted
    estimate of the number of records.  At most ``iterations`` rounds of (consistency, Norm-Sub).
    """
    items = combine_duplicates(domain, measurements)
    if not items:
        raise ValueError("no measurements to make consistent")
    cliques = [c for c, _, _ in items]
    margs = {c: v.copy() for c, v, _ in items}
    sigma = {c: s for c, _, s in items}
    cells = {c: domain.size(c) for c in cliques}
    subsets = _closure(cliques, domain)
    # which marginals contain each subset, and their (fixed) inverse-variance weights on it
    plan = []
    for sub in subsets:
        holders = [c for c in cliques if set(sub) <= set(c)]
        if len(holders) < 2:
            continue
        size_sub = domain.size(sub)
        var = np.array([sigma[c] ** 2 * cells[c] / size_sub for c in holders])
        plan.append((sub, holders, inverse_variance_weights(var)))

    def consist_pass():
        for sub, holders, w in plan:
            projs = [_project(margs[c], c, sub) for c in holders]
            target = sum(wi * p for wi, p in zip(w, projs))
            for c, p in zip(holders, projs):
                margs[c] = margs[c] + _spread(target - p, sub, c, margs[c].shape)

    for _ in range(max(1, int(iterations))):
        consist_pass()
        total = float(np.mean([margs[c].sum() for c in cliques]))
        floor = -tol * max(1.0, abs(total))
        if all(margs[c].min() >= floor for c in cliques):
            break
        for c in cliques:
            if margs[c].min() < 0:
                margs[c] = norm_sub(margs[c])
    # cells left a hair below zero (within tol) are clipped; a common total is restored by rescaling
    total = float(np.mean([margs[c].sum() for c in cliques]))
    for c in cliques:
        arr = np.maximum(margs[c], 0.0)
        s = arr.sum()
        margs[c] = arr * (total / s) if s > 0 else np.full(arr.shape, max(total, 0.0) / arr.size)
    return margs, total
