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

from .domain import Domain


def bits(mask: int):
    """Set positions of an integer bitmask, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def triangulate(adj: list[int], logs: list[float], memo: dict | None = None) -> tuple[list[int], list[int]]:
    """Chordal completion of a graph given as adjacency bitmasks, and its maximal cliques (bitmasks).

    ``logs`` are the vertices' log domain sizes (the cost of an elimination clique is the sum over
    it); ``memo`` caches those sums by mask across calls on similar graphs."""
    adj = list(adj)
    d = len(adj)
    alive = (1 << d) - 1
    elim = []
    memo = {} if memo is None else memo
    while alive:
        best, best_key = -1, None
        for v in bits(alive):
            nb = adj[v] & alive
            fill = False
            for u in bits(nb):
                if nb & ~adj[u] & ~(1 << u):
                    fill = True
                    break
            if fill and best_key is not None and not best_key[0]:
                continue  # a vertex needing no fill-in is already known
            c = nb | (1 << v)
            cost = memo.get(c)
            if cost is None:
                cost = memo[c] = sum(logs[u] for u in bits(c))
            key = (fill, cost, v)
            if best_key is None or key < best_key:
                best, best_key = v, key
        nb = adj[best] & alive
        for u in bits(nb):
            adj[u] |= nb & ~(1 << u)
        elim.append(nb | (1 << best))
        alive &= ~(1 << best)
    cliques = []
    for c in elim:
        if c not in cliques and not any(c != o and c & o == c for o in elim):
            cliques.append(c)
    return adj, cliques


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
