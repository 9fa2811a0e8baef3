"""Graphical-model structure in one place: maximal cliques, greedy triangulation, junction trees
and their size -- what AIM's and PrivMRF's model-size caps and PGM's estimation all read, so
that the three can never disagree about how large a model is.

The triangulation is greedy elimination (as in AIM's reference code and PrivMRF): first a vertex
whose neighbours are already a clique (no fill-in), else the one whose elimination clique has the
fewest cells, ties by position in the domain.  The junction tree joins the maximal cliques of the
triangulated graph by a maximum spanning tree on separator sizes (Jensen & Jensen 1994), which
is a valid junction tree of a chordal graph.
"""

from __future__ import annotations

import math

import numpy as np

from .domain import Domain


def bits(mask: int):
    """Set positions of an integer bitmask, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


try:  # the elimination loops compiled once (numba is a dependency); plain Python without it
    from .jit import cached_njit

    _jit = cached_njit(nogil=True)
except ImportError:  # pragma: no cover
    def _jit(f):
        return f


@_jit
def _eliminate(A, logs, alive):  # pragma: no cover - compiled
    """Greedy elimination of the vertices marked ``alive`` of the graph with boolean adjacency ``A``
    (fill-in added to ``A`` in place): each step takes a vertex whose live neighbours are already a
    clique, else the one whose elimination clique has the smallest sum of ``logs``, ties by index.
    Returns the elimination cliques (boolean rows, elimination order) and how many there are."""
    d = A.shape[0]
    live = alive.copy()
    out = np.zeros((d, d), dtype=np.bool_)
    n = 0
    for _ in range(d):
        best, best_fill, best_cost = -1, True, math.inf
        for v in range(d):
            if not live[v]:
                continue
            fill = False
            for u in range(d):
                if fill:
                    break
                if u != v and live[u] and A[v, u]:
                    for w in range(u + 1, d):
                        if w != v and live[w] and A[v, w] and not A[u, w]:
                            fill = True
                            break
            if fill and best >= 0 and not best_fill:
                continue  # a vertex needing no fill-in is already known
            cost = 0.0
            for u in range(d):
                if u == v or (live[u] and A[v, u]):
                    cost += logs[u]
            if best < 0 or (not fill and best_fill) or (fill == best_fill and cost < best_cost):
                best, best_fill, best_cost = v, fill, cost
        if best < 0:
            break
        v = best
        for u in range(d):
            if u != v and live[u] and A[v, u]:
                out[n, u] = True
                for w in range(d):
                    if w != v and w != u and live[w] and A[v, w]:
                        A[u, w] = True
        out[n, v] = True
        live[v] = False
        n += 1
    return out, n


@_jit
def _maximal_cells(E, n, sizes):  # pragma: no cover - compiled
    """Sum of cells (``prod sizes``) over the distinct elimination cliques (rows of ``E[:n]``) not
    contained in another."""
    total = 0.0
    d = E.shape[1]
    for i in range(n):
        contained = False
        for j in range(n):
            if i == j:
                continue
            sub, same = True, True
            for k in range(d):
                if E[i, k] and not E[j, k]:
                    sub = False
                    break
                if E[j, k] != E[i, k]:
                    same = False
            if sub and (not same or j < i):
                contained = True
                break
        if not contained:
            cells = 1.0
            for k in range(d):
                if E[i, k]:
                    cells *= sizes[k]
            total += cells
    return total


@_jit
def _cells_with(A, logs, sizes, cand, cand_len):  # pragma: no cover - compiled
    """Junction-tree cells of the graph ``A`` plus, for each candidate row of ``cand`` (its first
    ``cand_len`` entries are vertices), the clique on those vertices.  Components of ``A`` the
    candidate does not touch keep their own triangulation (computed once): the greedy elimination
    of separate components does not interact."""
    d = A.shape[0]
    comp = np.full(d, -1, dtype=np.int64)
    n_comp = 0
    stack = np.empty(d, dtype=np.int64)
    for s in range(d):
        if comp[s] >= 0:
            continue
        comp[s] = n_comp
        top = 0
        stack[0] = s
        while top >= 0:
            u = stack[top]
            top -= 1
            for w in range(d):
                if A[u, w] and comp[w] < 0:
                    comp[w] = n_comp
                    top += 1
                    stack[top] = w
        n_comp += 1
    own = np.zeros(n_comp)
    for c in range(n_comp):
        alive = comp == c
        E, n = _eliminate(A.copy(), logs, alive)
        own[c] = _maximal_cells(E, n, sizes)
    res = np.empty(cand.shape[0])
    for r in range(cand.shape[0]):
        touched = np.zeros(n_comp, dtype=np.bool_)
        for k in range(cand_len[r]):
            touched[comp[cand[r, k]]] = True
        total = 0.0
        for c in range(n_comp):
            if not touched[c]:
                total += own[c]
        alive = np.zeros(d, dtype=np.bool_)
        for u in range(d):
            alive[u] = touched[comp[u]]
        B = A.copy()
        for i in range(cand_len[r]):
            for j in range(cand_len[r]):
                if i != j:
                    B[cand[r, i], cand[r, j]] = True
        E, n = _eliminate(B, logs, alive)
        res[r] = total + _maximal_cells(E, n, sizes)
    return res


def _matrix(adj: list[int]) -> np.ndarray:
    d = len(adj)
    A = np.zeros((d, d), dtype=np.bool_)
    for v, mask in enumerate(adj):
        for u in bits(mask):
            A[v, u] = True
    return A


def triangulate(adj: list[int], logs: list[float], memo: dict | None = None) -> tuple[list[int], list[int]]:
    """Chordal completion of a graph given as adjacency bitmasks, and its maximal cliques (bitmasks).

    ``logs`` are the vertices' log domain sizes (the cost of an elimination clique is the sum over
    it).  The greedy elimination is :func:`_eliminate` (compiled); ``memo`` is accepted for
    callers that kept one and is unused."""
    d = len(adj)
    A = _matrix(adj)
    E, n = _eliminate(A, np.asarray(logs, dtype=float), np.ones(d, dtype=np.bool_))
    masks = [int(sum(1 << int(u) for u in np.flatnonzero(E[i]))) for i in range(n)]
    chordal = [int(sum(1 << int(u) for u in np.flatnonzero(A[v]))) for v in range(d)]
    cliques = []
    for c in masks:
        if c not in cliques and not any(c != o and c & o == c for o in masks):
            cliques.append(c)
    return chordal, cliques


def _adjacency(domain: Domain, cliques) -> list[int]:
    adj = [0] * len(domain)
    for cl in cliques:
        idx = [domain.index(a) for a in cl]
        for i in idx:
            for j in idx:
                if i != j:
                    adj[i] |= 1 << j
    return adj


def chordal_cliques(domain: Domain, cliques) -> list[tuple]:
    """Maximal cliques of the greedy triangulation of the graph that joins attributes sharing a
    clique (every domain attribute included), attributes in domain order, sorted by position."""
    logs = [math.log(s) for s in domain.shape]
    _, masks = triangulate(_adjacency(domain, cliques), logs)
    out = [tuple(domain.attrs[u] for u in bits(m)) for m in masks]
    return sorted(out, key=lambda c: [domain.index(a) for a in c])


def junction_tree_cells(domain: Domain, cliques) -> int:
    """Cells of the junction tree over ``cliques`` (sum over its maximal cliques)."""
    return int(sum(domain.size(c) for c in chordal_cliques(domain, cliques)))


def candidate_cells(domain: Domain, cliques, candidates) -> np.ndarray:
    """For each candidate clique, :func:`junction_tree_cells` of ``cliques`` plus that candidate, in
    one compiled pass (components the candidate does not touch are triangulated once)."""
    A = _matrix(_adjacency(domain, cliques))
    candidates = [tuple(c) for c in candidates]
    width = max((len(c) for c in candidates), default=1)
    cand = np.zeros((len(candidates), max(width, 1)), dtype=np.int64)
    lens = np.zeros(len(candidates), dtype=np.int64)
    for r, c in enumerate(candidates):
        lens[r] = len(c)
        cand[r, :len(c)] = [domain.index(a) for a in c]
    logs = np.array([math.log(s) for s in domain.shape])
    return _cells_with(A, logs, np.asarray(domain.shape, dtype=float), cand, lens)


def model_size_mb(domain: Domain, cliques) -> float:
    """Junction-tree size in MB of float64 cells: AIM's ``hypothetical_model_size`` and the cap of
    PrivMRF's and PGM's ``max_model_size``."""
    return junction_tree_cells(domain, cliques) * 8 / 2 ** 20


def junction_tree(domain: Domain, cliques) -> tuple[list[tuple], list[tuple]]:
    """``(nodes, edges)`` of a junction tree over ``cliques``: the maximal cliques of the
    triangulation, joined by a maximum spanning tree on separator sizes (Kruskal; ties by
    position).  Components that share nothing stay apart (a forest)."""
    nodes = chordal_cliques(domain, cliques)
    cand = []
    for i in range(len(nodes)):
        for j in range(i + 1, len(nodes)):
            w = len(set(nodes[i]) & set(nodes[j]))
            if w:
                cand.append((-w, i, j))
    parent = list(range(len(nodes)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    edges = []
    for _, i, j in sorted(cand):
        a, b = find(i), find(j)
        if a != b:
            parent[a] = b
            edges.append((nodes[i], nodes[j]))
    return nodes, edges


def maximal(cliques) -> list[tuple]:
    """Cliques not contained in another one (first occurrence kept), in the order given."""
    out: list[tuple] = []
    for c in cliques:
        s = set(c)
        if any(s <= set(o) for o in out):
            continue
        out = [o for o in out if not set(o) < s] + [tuple(c)]
    return out
