"""Mirror descent for Private-PGM in numpy: no compilation, few and large array operations.

An adaptive selector (AIM, PrivMRF, RAP++) refits the graphical model after every measurement,
and every refit has a new set of cliques.  A jitted JAX program is compiled once per clique
structure -- on adult that compile is most of the round's time.  This engine runs the same
algorithm (McKenna, Sheldon, Miklau, ICML 2019, Algorithm 1: entropic mirror descent on the
marginal polytope, ``mbi``'s Armijo step-size rule) on a precomputed :class:`Plan` of the
junction tree in which every table is a slice of one flat vector:

* potentials live on the maximal measured cliques (as in ``mbi``), so the previous round's
  potentials are a valid warm start for the next round's larger model;
* every map between tables -- a node onto its separator, a measurement's gradient back onto its
  potential -- is one precomputed index array, so it is a single ``bincount`` or gather over all
  tables at once; node marginals reach the potentials they host through a short program of such
  maps via smaller intermediate tables (:meth:`Plan._reductions`), so a node holding ten
  potentials is summed over a few times, not ten; the compiled kernels read each map as blocks of
  consecutive cells with one index per block (:func:`block_map`), since an iteration over a large
  tree is bound by memory traffic (about 40 float64 passes over it), not arithmetic;
* calibration is a collect/distribute (Hugin) pass in probability space, batched by tree
  level: the trees are rooted at their centres and all nodes of one level are computed
  together, so a pass costs about ten array operations per level whatever the number of
  nodes.  Beliefs are ``exp(theta - max)`` per node, child messages are combined in log
  space, nothing overflows;
* an accepted step's marginals are those of the next iteration, so an iteration costs one
  calibration (two only when the step is rejected);
* warm-started rounds stop when the objective has converged (``tol``) instead of running a fixed
  number of iterations;
* ``momentum=True`` accelerates the iteration with Nesterov's momentum on the potentials and a
  function-value restart (O'Donoghue & Candes, "Adaptive restart for accelerated gradient schemes",
  FoCM 2015): the step is ``-alpha grad + beta_k * (last step)``, ``beta_k = k / (k + 3)`` for the
  ``k``-th step since the last restart; a momentum step is kept only when it lowers the loss, else
  the momentum is dropped and the next step is mbi's plain Armijo step.  The loss never rises, the
  fixed point is the same (the estimator's answer does not change), and it gets there in far fewer
  iterations: on adult's AIM measurements 250 accelerated iterations reach a lower loss than 4,000
  plain ones (mirror descent is slow along the noisier measurements' directions).

Loss, gradient and step rule are ``mbi``'s: ``L(mu) = sum_m ||(mu_m - y_m) / sigma_m||^2 / 2``,
initial step ``2 / (L_grad * total)`` with ``L_grad`` the Lipschitz constant from metadata,
accept on ``L(mu) - L(mu') >= alpha/2 <grad, mu - mu'>`` and grow alpha by 1 %, else halve it.
The inner product ``<grad, mu - mu'>`` over the potentials equals ``<w r, M(mu) - M(mu')>`` over
the measurements (the gradient of a potential is the sum of its measurements' weighted
residuals), so it costs one dot product over the measured cells.

Memory: the flat vectors hold a few copies of the junction tree (``N`` cells); the numpy and torch
paths' index arrays (``int32`` where they fit) add about four times ``N`` entries, the compiled
kernels' block maps a small share of that, so a model within a ``max_model_size`` cap costs a small
multiple of that cap.
"""

from __future__ import annotations

import os
from collections import deque

import numpy as np

from ..core.domain import Domain

#: The compiled kernels (:mod:`._pgm_numba`), or None: numba missing, or ``SYNTHZOO_PGM_NUMPY=1``
#: (which runs the numpy path, e.g. to check the two agree).
try:
    if os.environ.get("SYNTHZOO_PGM_NUMPY") == "1":
        raise ImportError("numpy path requested")
    from . import _pgm_numba as _nb
except ImportError:  # pragma: no cover - numba is a dependency; the numpy path is the fallback
    _nb = None


def sub_index(domain: Domain, host: tuple, sub: tuple, dtype=np.int64) -> np.ndarray:
    """For every cell of a table over ``host`` (C order), the flat index of its cell in the table
    over ``sub`` (a subset of ``host``, in ``sub``'s own axis order); built by broadcasting, so it
    costs one integer array of the host's size."""
    shape = [domain[a] for a in host]
    sub_shape = [domain[a] for a in sub]
    strides = [1] * len(sub)
    for k in range(len(sub) - 2, -1, -1):
        strides[k] = strides[k + 1] * sub_shape[k + 1]
    idx = np.zeros(shape, dtype=dtype)
    for k, a in enumerate(sub):
        ax = host.index(a)
        view = [1] * len(host)
        view[ax] = shape[ax]
        idx += (np.arange(shape[ax], dtype=dtype) * strides[k]).reshape(view)
    return idx.ravel()


#: Kinds of a :func:`block_map`: each block of ``L`` source cells sums into one cell, or is added cell by
#: cell onto ``L`` cells ``ds`` apart.
SUM, COPY = 0, 1


def block_map(domain: Domain, host: tuple, sub: tuple, offset: int = 0, dtype=np.int64) -> tuple:
    """The map of :func:`sub_index` (host cells onto ``sub`` cells, plus ``offset``) as blocks of
    consecutive host cells: ``(kind, L, ds, first)``, ``first`` the target of each block's first cell.

    When the host's last axes are summed out, each block of ``L`` cells (their sizes' product) sums
    into one ``sub`` cell (``SUM``).  Otherwise the host's last ``r`` axes appear, in that order and
    next to each other, somewhere in ``sub``, and a block of their ``L`` cells lands on ``L`` ``sub``
    cells ``ds`` apart (``COPY``; ``ds`` is 1 when they are also ``sub``'s last axes, and the
    product of the sizes of ``sub``'s axes after them when the two orders differ).  The compiled
    kernels then read one index per block and stream the cells within it, instead of an index per
    cell; ``first`` is built over the other axes only, so a map costs ``1 / L`` of the host's cells."""
    if not host:
        return COPY, 1, 1, np.full(1, offset, dtype=dtype)
    if host[-1] not in sub:
        r = 0
        while r < len(host) and host[-1 - r] not in sub:
            r += 1
        kind, ds = SUM, 0
    else:
        pos = sub.index(host[-1])
        r = 1
        while r < len(host) and pos - r >= 0 and sub[pos - r] == host[-1 - r]:
            r += 1
        kind, ds = COPY, int(np.prod([domain[a] for a in sub[pos + 1:]]))
    L = int(np.prod([domain[a] for a in host[len(host) - r:]]))
    outer = host[:len(host) - r]  # a block's first cell: these axes' values, the run's at 0
    stride = {a: int(np.prod([domain[b] for b in sub[k + 1:]])) for k, a in enumerate(sub)}
    first = np.full([domain[a] for a in outer], offset, dtype=dtype)
    for k, a in enumerate(outer):
        if a in stride:
            view = [1] * len(outer)
            view[k] = domain[a]
            first += (np.arange(domain[a], dtype=dtype) * stride[a]).reshape(view)
    return kind, L, ds, first.ravel()


def _centre(comp: list, adj: dict) -> tuple:
    """A centre of a tree (a node of least eccentricity): peel leaves until one or two remain."""
    if len(comp) <= 2:
        return comp[0]
    deg = {n: len(adj[n]) for n in comp}
    layer = [n for n in comp if deg[n] <= 1]
    left = len(comp)
    while left > 2:
        left -= len(layer)
        nxt = []
        for u in layer:
            for v in adj[u]:
                deg[v] -= 1
                if deg[v] == 1:
                    nxt.append(v)
        layer = nxt
    order = {n: i for i, n in enumerate(comp)}
    return min(layer, key=order.__getitem__)


def _reorder(table: np.ndarray, axes: tuple, to: tuple) -> np.ndarray:
    """``table`` over ``axes`` with its axes in the order ``to`` (a view)."""
    return table if axes == to else np.transpose(table, [axes.index(a) for a in to])


class _Level:
    """One depth of the rooted forest (numpy path): its nodes' cells are ``[lo, hi)`` of the flat
    vector, its separators ``[s_lo, s_hi)`` of the flat separator vector."""

    __slots__ = ("lo", "hi", "starts", "cell_node", "s_lo", "s_hi", "sep", "pp_cell", "pp_sep")


class Plan:
    """The flat layout of one model structure: junction tree (nodes ordered by level from the
    roots), where each potential and each measurement lives, and every index array a mirror-descent
    iteration needs.  Measurement cliques are optional (a plan for inference only).

    A node's axes are laid out as its separator with its parent (in the parent's order) and then its
    own, so ``order`` holds the given nodes with their axes permuted (a root keeps its order).
    Nodes are numbered in layout order (parents before children); node ``i`` holds the cells
    ``[node_lo[i], node_lo[i+1])`` of every flat node vector and, when it has a parent, the
    separator cells ``[sep_lo[i], sep_lo[i+1])`` of every flat separator vector.  ``sep_of[x]`` is the
    separator cell of node cell ``x``; ``pp[pp_lo[i] + j]`` the separator cell of node ``i`` that cell
    ``j`` of its parent sums into.  A potential's cells in the flat vector ``T`` follow its host node's
    axis order (``layout[clique]``), and a measurement's in the flat measurement vectors its potential's
    (``m_layout``); :meth:`flatten`, :meth:`tables` and :meth:`measured` convert from and to the
    cliques' own order."""

    def __init__(self, domain: Domain, nodes: list[tuple], edges: list[tuple], cliques: list[tuple],
                 meas_cliques: list[tuple] = ()):
        self.domain = domain
        nodes = [tuple(n) for n in nodes]
        self.cliques = [tuple(c) for c in cliques]
        adj: dict[tuple, list[tuple]] = {n: [] for n in nodes}
        for u, v in edges:
            adj[tuple(u)].append(tuple(v))
            adj[tuple(v)].append(tuple(u))
        self.adj = adj
        # components, each rooted at a centre (fewest levels), breadth first
        self.parent: dict[tuple, tuple | None] = {}
        depth: dict[tuple, int] = {}
        seen: set = set()
        by_level: list[list[tuple]] = []
        for start in nodes:
            if start in seen:
                continue
            comp, queue = [], deque([start])
            seen.add(start)
            while queue:
                u = queue.popleft()
                comp.append(u)
                for v in adj[u]:
                    if v not in seen:
                        seen.add(v)
                        queue.append(v)
            root = _centre(comp, adj)
            self.parent[root], depth[root] = None, 0
            queue = deque([root])
            while queue:
                u = queue.popleft()
                if depth[u] == len(by_level):
                    by_level.append([])
                by_level[depth[u]].append(u)
                for v in adj[u]:
                    if v not in depth:
                        self.parent[v], depth[v] = u, depth[u] + 1
                        queue.append(v)
        # Each child's axes: its separator's, in its parent's order, then its own. Its map onto the separator
        # (collect's message, distribute's product) is then a sum over trailing cells, and the parent's onto
        # it keeps the parent's order, so both stream in long blocks (block_map) instead of blocks of a
        # kept last axis of 2-4 values.
        name = {}
        for lvl in by_level:
            for n in lvl:
                p = self.parent[n]
                if p is None:
                    name[n] = n
                else:
                    sep = [a for a in name[p] if a in n]
                    name[n] = tuple(sep + [a for a in n if a not in sep])
        by_level = [[name[n] for n in lvl] for lvl in by_level]
        self.parent = {name[n]: None if p is None else name[p] for n, p in self.parent.items()}
        self.adj = {name[n]: [name[v] for v in vs] for n, vs in adj.items()}
        self.order = [n for lvl in by_level for n in lvl]  # parents before children
        index = {n: i for i, n in enumerate(self.order)}
        self.size = {n: domain.size(n) for n in self.order}
        self.shape = {n: tuple(domain[a] for a in n) for n in self.order}
        sizes = [self.size[n] for n in self.order]
        self.node_lo = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.offset = {n: int(self.node_lo[i]) for i, n in enumerate(self.order)}
        self.N = int(self.node_lo[-1])
        itype = np.int32 if max(self.N, 1) < 2 ** 31 - 1 else np.int64
        self.itype = itype
        n_nodes = len(self.order)
        self.parent_ix = np.array([-1 if self.parent[n] is None else index[self.parent[n]] for n in self.order],
                                  dtype=np.int64)
        kids = [[] for _ in range(n_nodes)]
        for i, p in enumerate(self.parent_ix):
            if p >= 0:
                kids[p].append(i)
        self.child_ptr = np.concatenate([[0], np.cumsum([len(k) for k in kids])]).astype(np.int64)
        self.child_list = np.array([c for k in kids for c in k], dtype=np.int64)

        # ---- separators: each non-root node's separator with its parent, in the child's axis order
        sep_sizes, pp_lo = [], np.full(n_nodes, -1, dtype=np.int64)
        self._seps: list = []  # (node, parent, separator, its first cell) of each non-root node
        self._maps: list = []  # block maps of the compiled kernels (block_map), finished by _finish_maps
        self.sep_map = np.full(n_nodes, -1, dtype=np.int64)  # node -> its map onto its separator
        self.pp_map = np.full(n_nodes, -1, dtype=np.int64)  # node -> its parent's map onto that separator
        s_pos = pp_pos = 0
        for i, c in enumerate(self.order):
            p = self.parent[c]
            if p is None:
                sep_sizes.append(0)
                continue
            sep = tuple(a for a in c if a in p)
            self._seps.append((c, p, sep, s_pos))
            self.sep_map[i] = self._map(domain, c, sep, s_pos)
            self.pp_map[i] = self._map(domain, p, sep, s_pos)
            pp_lo[i] = pp_pos
            pp_pos += self.size[p]
            s_pos += domain.size(sep)
            sep_sizes.append(domain.size(sep))
        self.sep_lo = np.concatenate([[0], np.cumsum(sep_sizes)]).astype(np.int64)
        self.S = int(s_pos)
        self.pp_lo = pp_lo
        self._sep_of = self._pp = self._red_idx = self._mp = None  # per-cell maps: built on first use

        self._by_level = [len(lvl) for lvl in by_level]
        self._levels = None

        # ---- potentials (flat vector T), their host nodes, and the reduction program from node
        # marginals to potential marginals (and back, for beliefs and gradients): see _reductions
        self.host = {cl: min((n for n in self.order if set(cl) <= set(n)), key=self.size.__getitem__)
                     for cl in self.cliques}
        # each potential is stored with its axes in its host node's order, so that every map from the node
        # through the intermediates onto it, and from it onto its measurements, keeps the order of the axes
        # and streams in blocks: in the clique's own order some were transpositions (on bench_pgm_engines'
        # model a 1.9-million-cell node onto its potential with a stride of 40,656 cells, and back: about
        # half of an iteration's time; AIM's potentials mostly had their host's order already)
        self.layout = {cl: tuple(a for a in self.host[cl] if a in cl) for cl in self.cliques}
        self.t_offset, pos = {}, 0
        for cl in self.cliques:
            self.t_offset[cl] = pos
            pos += domain.size(cl)
        self.T = pos
        hosted: dict[tuple, list] = {}
        for cl in self.cliques:
            hosted.setdefault(self.host[cl], []).append(cl)
        self._reductions(domain, hosted, itype)

        # ---- measurements: each lives in the smallest potential clique holding it
        self.meas_cliques = [tuple(m) for m in meas_cliques]
        self.m_offset, pos = [], 0
        ms = []
        self._meas_host = []  # each measurement's potential clique
        self.m_layout = []  # each measurement's axes in the flat vectors: its potential's order
        for mc in self.meas_cliques:
            cl = min((c for c in self.cliques if set(mc) <= set(c)), key=domain.size)
            self.m_offset.append(pos)
            self._meas_host.append(cl)
            self.m_layout.append(tuple(a for a in self.layout[cl] if a in mc))
            ms.append((self._map(domain, self.layout[cl], self.m_layout[-1], pos), self.t_offset[cl], domain.size(cl)))
            pos += domain.size(mc)
        self.M = pos
        # each measurement's map from its potential's cells (``[ms_src, ms_src + ms_len)`` of ``T``)
        self.ms_map, self.ms_src, self.ms_len = (np.array([m[k] for m in ms], dtype=np.int64) for k in range(3))
        self._finish_maps()

    def _map(self, domain: Domain, host: tuple, sub: tuple, offset: int) -> int:
        self._maps.append(block_map(domain, host, sub, offset, self.itype))
        return len(self._maps) - 1

    # ---- the per-cell index arrays of the numpy and torch paths (and of tests), built on first use:
    # the compiled kernels read the block maps only, so a refit on the CPU never builds them
    @property
    def sep_of(self) -> np.ndarray:
        """Separator cell of every node cell (0 for roots' cells)."""
        if self._sep_of is None:
            parts = {c: sub_index(self.domain, c, sep, self.itype) + lo for c, _, sep, lo in self._seps}
            self._sep_of = np.concatenate([parts[c] if c in parts else np.zeros(self.size[c], self.itype)
                                           for c in self.order]) if self.order else np.zeros(0, self.itype)
        return self._sep_of

    @property
    def pp(self) -> np.ndarray:
        """For each non-root node (layout order), the separator cell each of its parent's cells sums into."""
        if self._pp is None:
            parts = [sub_index(self.domain, p, sep, self.itype) + lo for _, p, sep, lo in self._seps]
            self._pp = np.concatenate(parts) if parts else np.zeros(0, self.itype)
        return self._pp

    @property
    def red_idx(self) -> np.ndarray:
        """The reduction steps' per-cell targets (local to each step's destination), step ``s`` at
        ``red_idx[st_idx[s]:st_idx[s + 1]]``."""
        if self._red_idx is None:
            parts = [sub_index(self.domain, a, b, self.itype) for a, b in self.st_axes]
            self._red_idx = np.concatenate(parts) if parts else np.zeros(0, self.itype)
        return self._red_idx

    @property
    def mp_t(self) -> np.ndarray:
        """Potential cell of every (measurement, potential cell) pair: with :attr:`mp_m`, the map
        between potentials and measurements."""
        return self._measure_pairs()[0]

    @property
    def mp_m(self) -> np.ndarray:
        return self._measure_pairs()[1]

    def _measure_pairs(self) -> tuple:
        if self._mp is None:
            dom, it = self.domain, self.itype
            mt = [np.arange(dom.size(cl), dtype=it) + self.t_offset[cl] for cl in self._meas_host]
            mm = [sub_index(dom, self.layout[cl], ml, it) + lo for cl, ml, lo in zip(self._meas_host, self.m_layout,
                                                                                     self.m_offset)]
            self._mp = (np.concatenate(mt) if mt else np.zeros(0, it), np.concatenate(mm) if mm else np.zeros(0, it))
        return self._mp

    def _finish_maps(self) -> None:
        """The block maps as flat arrays: map ``k`` has kind ``bm_kind[k]``, block length ``bm_L[k]``,
        target spacing ``bm_ds[k]`` and its blocks' first target cells at ``bm_blk[bm_lo[k]:bm_lo[k + 1]]``."""
        maps, self._maps = self._maps, None
        self.bm_kind = np.array([m[0] for m in maps], dtype=np.int64)
        self.bm_L = np.array([m[1] for m in maps], dtype=np.int64)
        self.bm_ds = np.array([m[2] for m in maps], dtype=np.int64)
        self.bm_lo = np.concatenate([[0], np.cumsum([m[3].size for m in maps])]).astype(np.int64)
        self.bm_blk = np.concatenate([m[3] for m in maps]) if maps else np.zeros(0, self.itype)

    def _reductions(self, domain: Domain, hosted: dict, itype) -> None:
        """The program that sums node marginals onto the potential cliques they host.

        A node holding ``k`` potentials could be summed onto each of them, ``k`` passes over the node;
        instead each node's potentials are reached through smaller intermediate tables: greedily, the
        intermediate over the attributes of the potentials that lack one attribute of the current
        table (so that attribute is summed out once for all of them) when it saves cells, recursively
        from there; a node whose potentials all fit in the union of fewer attributes starts with that
        union.  On AIM's models at 300,000 rows (nodes of a million cells hosting ten pairs) this is a
        few passes over the node instead of ten.

        Step ``s`` adds its source table -- node cells ``[st_src, st_src + st_len)`` when ``st_node``,
        else cells of the vector ``Z`` -- into the cells ``st_dst + red_idx[...]`` of ``Z``, which holds
        the potential marginals in ``[0, T)`` and the intermediates after them (``Z`` cells in all).
        Run forward the steps give the potential marginals; run backward as gathers they spread
        per-potential values (potentials, gradients) onto the nodes."""
        steps: list = []  # (from node, src lo, src len, dst lo, local indices)
        self.st_axes: list = []  # each step's (source attributes, destination attributes)
        width = [self.T]

        def reduce(attrs: tuple, from_node: bool, lo: int, targets: list) -> None:
            size = domain.size(attrs)
            targets = list(targets)
            while targets:
                best, gain = None, 0
                for a in attrs:  # sum out the attribute whose intermediate saves the most cells
                    served = [c for c in targets if a not in c]
                    if len(served) < 2:
                        continue
                    keep = tuple(x for x in attrs if any(x in c for c in served))
                    k = domain.size(keep)
                    g = len(served) * (size - k) - size
                    if g > gain:
                        best, gain = (served, keep), g
                if best is None:
                    for c in targets:  # one pass over this table for each
                        steps.append((from_node, lo, size, self.t_offset[c], domain.size(c),
                                      self._map(domain, attrs, self.layout[c], 0)))
                        self.st_axes.append((attrs, self.layout[c]))
                    return
                served, keep = best
                ilo = width[0]
                width[0] += domain.size(keep)
                steps.append((from_node, lo, size, ilo, domain.size(keep), self._map(domain, attrs, keep, 0)))
                self.st_axes.append((attrs, keep))
                reduce(keep, False, ilo, served)
                targets = [c for c in targets if c not in served]

        for h in self.order:
            if h in hosted:
                reduce(h, True, self.offset[h], hosted[h])
        self.Z = int(width[0])
        self.st_node = np.array([st[0] for st in steps], dtype=np.bool_)
        self.st_src = np.array([st[1] for st in steps], dtype=np.int64)
        self.st_len = np.array([st[2] for st in steps], dtype=np.int64)
        self.st_dst = np.array([st[3] for st in steps], dtype=np.int64)
        self.st_idx = np.concatenate([[0], np.cumsum(self.st_len)]).astype(np.int64)  # a step maps every source cell
        self._dst_len = [int(st[4]) for st in steps]
        self.st_map = np.array([st[5] for st in steps], dtype=np.int64)

    @property
    def levels(self) -> list:
        """Per-level arrays of the numpy path (built on first use: the numba kernel does not need them)."""
        if self._levels is not None:
            return self._levels
        itype, sizes = self.itype, [self.size[n] for n in self.order]
        levels: list[_Level] = []
        first = 0
        for li, count in enumerate(self._by_level):
            lvl = self.order[first:first + count]
            L = _Level()
            a, b = first, first + count
            first = b
            L.lo, L.hi = int(self.node_lo[a]), int(self.node_lo[b])
            L.starts = self.node_lo[a:b] - L.lo
            L.cell_node = np.repeat(np.arange(len(lvl), dtype=itype), sizes[a:b])
            L.s_lo, L.s_hi = int(self.sep_lo[a]), int(self.sep_lo[b])
            if li:
                L.sep = self.sep_of[L.lo:L.hi] - L.s_lo
                plo = levels[li - 1].lo
                L.pp_cell = np.concatenate([np.arange(self.size[self.parent[c]], dtype=itype)
                                            + (self.offset[self.parent[c]] - plo) for c in lvl])
                L.pp_sep = self.pp[int(self.pp_lo[a]):int(self.pp_lo[a]) + len(L.pp_cell)] - L.s_lo
            levels.append(L)

        self._levels = levels
        return levels

    @property
    def nbytes(self) -> int:
        """Bytes held by the plan's index arrays (those built so far)."""
        arrays = [a for a in (self._sep_of, self._pp, self._red_idx, *(self._mp or ())) if a is not None]
        arrays.append(self.bm_blk)
        arrays += [getattr(L, k) for L in self._levels or [] for k in ("cell_node", "sep", "pp_cell", "pp_sep")
                   if hasattr(L, k)]
        return int(sum(a.nbytes for a in arrays))

    def kernel_arrays(self) -> tuple:
        """The arrays the compiled kernels (:mod:`._pgm_numba`) read, as one tuple: the tree
        (``node_lo, parent, child_ptr, child_list, sep_lo``), each node's block maps onto its
        separator and its parent's (``sep_map, pp_map``), the reduction program (``st_node, st_src,
        st_len, st_dst, st_map``), the measurements' maps (``ms_map, ms_src, ms_len``) and the block
        maps (``bm_kind, bm_L, bm_ds, bm_lo, bm_blk``)."""
        return (self.node_lo, self.parent_ix, self.child_ptr, self.child_list, self.sep_lo, self.sep_map,
                self.pp_map, self.st_node, self.st_src, self.st_len, self.st_dst, self.st_map, self.ms_map,
                self.ms_src, self.ms_len, self.bm_kind, self.bm_L, self.bm_ds, self.bm_lo, self.bm_blk)

    # ------------------------------------------------------------------ flat <-> tables
    def flatten(self, theta: dict) -> np.ndarray:
        """Potentials ``{clique: table}`` (clique axis order) as the flat vector ``T`` (each in its
        :attr:`layout`)."""
        return np.concatenate([_reorder(np.asarray(theta[cl], dtype=float), cl, self.layout[cl]).ravel()
                               for cl in self.cliques]) if self.cliques else np.zeros(0)

    def tables(self, flat: np.ndarray) -> dict:
        """The flat vector ``T`` back as ``{clique: table}`` (clique axis order)."""
        out = {}
        for cl in self.cliques:
            lay = self.layout[cl]
            t = flat[self.t_offset[cl]:self.t_offset[cl] + self.domain.size(cl)].reshape([self.domain[a] for a in lay])
            out[cl] = np.ascontiguousarray(_reorder(t, lay, cl)) if lay != cl else t.copy()
        return out

    def node_tables(self, marg: np.ndarray) -> dict:
        """A flat node vector (e.g. calibrated marginals) as ``{node: table}`` (views)."""
        return {n: marg[self.offset[n]:self.offset[n] + self.size[n]].reshape(self.shape[n]) for n in self.order}

    def measured(self, ys: list) -> np.ndarray:
        """Noisy measurements (in ``meas_cliques`` order) as one flat vector, each in its
        :attr:`m_layout`."""
        return np.concatenate([_reorder(np.asarray(y, dtype=float).reshape([self.domain[a] for a in mc]), mc, ml).ravel()
                               for y, mc, ml in zip(ys, self.meas_cliques, self.m_layout)]) if ys else np.zeros(0)

    # ------------------------------------------------------------------ inference (numpy)
    def beliefs(self, T: np.ndarray) -> np.ndarray:
        """Node log-potentials (flat): every clique potential added into its host node."""
        if _nb is not None:
            node = np.empty(self.N)
            _nb._spread(node, np.empty(self.Z), np.ascontiguousarray(T, dtype=float), self.kernel_arrays())
            return node
        return self._spread(T)

    def _spread(self, T: np.ndarray) -> np.ndarray:
        """The reduction program backwards (numpy): per-potential values summed onto the node cells."""
        z = np.zeros(self.Z)
        z[:self.T] = T
        node = np.zeros(self.N)
        for s in range(len(self.st_src) - 1, -1, -1):
            lo, n = int(self.st_src[s]), int(self.st_len[s])
            vals = z[int(self.st_dst[s]) + self.red_idx[self.st_idx[s]:self.st_idx[s + 1]]]
            if self.st_node[s]:
                node[lo:lo + n] += vals
            else:
                z[lo:lo + n] += vals
        return node

    def calibrate(self, logb: np.ndarray, total: float) -> np.ndarray:
        """Node marginals (flat; counts summing to ``total`` per node) of the model with node
        log-potentials ``logb``.  Raises :class:`FloatingPointError` when a marginal vanishes or
        overflows (a step so large that every belief of a node underflows)."""
        if _nb is not None:
            out, u, t = np.empty(self.N), np.empty(self.N), np.empty(self.N)
            lmsg, msg, sepsum = np.empty(self.S), np.empty(self.S), np.empty(self.S)
            if not _nb.calibrate(logb, float(total), self.kernel_arrays(), out, u, t,
                                 np.empty(self.S), lmsg, msg, sepsum):  # scratch of the separators' size
                raise FloatingPointError("PGM engine: a clique marginal vanished")
            return out
        return self._calibrate_numpy(logb, total)

    def _calibrate_numpy(self, logb: np.ndarray, total: float) -> np.ndarray:
        """The numpy path of :meth:`calibrate`, batched by level; messages in log space (a log-sum-exp
        per separator cell), so no message underflows whatever the potentials."""
        levels = self.levels
        lbs, lmsgs = [None] * len(levels), [None] * len(levels)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for li in range(len(levels) - 1, -1, -1):  # collect: deepest level first
                L = levels[li]
                lb = logb[L.lo:L.hi]
                if li + 1 < len(levels):  # the children's messages
                    C = levels[li + 1]
                    lb = lb + np.bincount(C.pp_cell, weights=lmsgs[li + 1][C.pp_sep], minlength=L.hi - L.lo)
                lbs[li] = lb
                if li:
                    top = np.full(L.s_hi - L.s_lo, -np.inf)
                    np.maximum.at(top, L.sep, lb)
                    top[~np.isfinite(top)] = 0.0
                    lmsgs[li] = np.log(np.bincount(L.sep, weights=np.exp(lb - top[L.sep]), minlength=top.size)) + top
            marg = np.empty(self.N)
            for li, L in enumerate(levels):  # distribute: roots first
                lb = lbs[li]
                if li:  # marginal = conditional given the separator x the parent's separator marginal
                    P = levels[li - 1]
                    sep_sum = np.bincount(L.pp_sep, weights=marg[P.lo:P.hi][L.pp_cell], minlength=L.s_hi - L.s_lo)
                    lsep = np.where(sep_sum > 0, np.log(sep_sum) - lmsgs[li], -np.inf)
                    u = np.exp(lb + lsep[L.sep])
                else:
                    top = np.maximum.reduceat(lb, L.starts)
                    u = np.exp(lb - top[L.cell_node])
                s = np.add.reduceat(u, L.starts)
                if not (np.all(s > 0) and np.all(np.isfinite(s))):
                    raise FloatingPointError("PGM engine: a clique marginal vanished")
                np.multiply(u, (total / s)[L.cell_node], out=marg[L.lo:L.hi])
        return marg

    def clique_marginals(self, marg: np.ndarray) -> np.ndarray:
        """Flat marginals over the potential cliques (vector ``T``) from the node marginals."""
        z = np.zeros(self.Z)
        for s in range(len(self.st_src)):
            lo, n, dst = int(self.st_src[s]), int(self.st_len[s]), int(self.st_dst[s])
            src = marg if self.st_node[s] else z
            z[dst:dst + self._dst_len[s]] += np.bincount(self.red_idx[self.st_idx[s]:self.st_idx[s + 1]],
                                                         weights=src[lo:lo + n], minlength=self._dst_len[s])
        return z[:self.T].copy()

    def measurement_marginals(self, mu_t: np.ndarray) -> np.ndarray:
        return np.bincount(self.mp_m, weights=mu_t[self.mp_t], minlength=self.M)

    def gradient(self, wr: np.ndarray) -> np.ndarray:
        """Gradient over the potentials of ``sum_m w_m ||r_m||^2 / 2`` given the weighted residuals."""
        return np.bincount(self.mp_t, weights=wr[self.mp_m], minlength=self.T)

    def node_marginals(self, theta: dict, total: float) -> dict:
        """Calibrated node marginals ``{node: table}`` of the model with potentials ``theta``."""
        return self.node_tables(self.calibrate(self.beliefs(self.flatten(theta)), total))


def lipschitz(domain: Domain, cliques: list[tuple], meas_cliques: list[tuple], sigmas: list[float]) -> float:
    """``mbi``'s metadata bound: ``max_C sum_{m -> C} |C| / |m| / sigma_m^2`` (exact for marginals)."""
    blocks: dict[tuple, float] = {}
    for mc, s in zip(meas_cliques, sigmas):
        cl = min((c for c in cliques if set(mc) <= set(c)), key=domain.size)
        blocks[cl] = blocks.get(cl, 0.0) + domain.size(cl) / domain.size(mc) / max(s, 1e-12) ** 2
    return max(blocks.values())


#: Iterations over which the relative decrease of the loss is measured for ``tol``.
WINDOW = 25


class Result:
    """What :func:`mirror_descent` returns: ``theta`` (potentials), ``marg`` (calibrated flat node
    marginals of ``theta``), ``iters`` run, ``loss`` reached, ``alpha`` (the final step size)."""

    __slots__ = ("theta", "marg", "iters", "loss", "alpha", "converged")

    def __init__(self, theta, marg, iters, loss, alpha, converged):
        self.theta, self.marg, self.iters, self.loss, self.alpha, self.converged = \
            theta, marg, iters, loss, alpha, converged


def mirror_descent(plan: Plan, ys: list, sigmas: list[float], theta: dict, total: float, iters: int,
                   lipschitz_constant: float, tol: float = 0.0, alpha: float | None = None,
                   compiled: bool | None = None,
                   momentum: bool = False, device=None) -> Result:
    """At most ``iters`` steps of mirror descent from ``theta`` (clique -> log-potential table).

    ``tol > 0`` stops early once the loss fell by less than ``tol`` times the larger of the loss and its
    noise level (half a squared standard deviation per measured cell, ``M / 2``) over the last
    :data:`WINDOW` iterations -- the objective has converged; ``tol=0`` runs all ``iters``.
    ``alpha`` starts the step size elsewhere than ``mbi``'s ``2 / (L_grad * total)`` (a warm start
    passes the previous fit's final step; the Armijo rule still checks every step).  ``momentum``:
    accelerate with restarted Nesterov momentum (module docstring).  ``compiled``: the numba kernel
    (default when numba is installed) or the numpy path (False).  ``device`` (a torch device, e.g.
    ``"cuda"``): the numpy path's iteration in torch there (:mod:`._pgm_torch`) instead."""
    T = plan.flatten(theta)
    y = plan.measured(ys)
    w = np.repeat([1.0 / max(s, 1e-12) ** 2 for s in sigmas],
                  [plan.domain.size(mc) for mc in plan.meas_cliques]) if sigmas else np.zeros(0)
    a0 = 2.0 / (lipschitz_constant * total)
    alpha = a0 if alpha is None or not alpha > 0 else float(alpha)
    if device is None and ((_nb is not None) if compiled is None else compiled):
        T, marg, done, loss, alpha, converged = _nb.mirror_descent(
            T, y, w, float(total), int(iters), float(tol), WINDOW, 0.5 * plan.M, alpha, bool(momentum),
            plan.kernel_arrays(), plan.Z)
        if done == 0 and not loss == loss:
            raise FloatingPointError("PGM engine: the starting potentials give no finite marginals")
        return Result(plan.tables(T), marg, int(done), float(loss), float(alpha), bool(converged))
    if device is not None:
        from . import _pgm_torch

        T, evaluate, gradient, to_numpy = _pgm_torch.operations(plan, T, y, w, float(total), device)
    else:
        def evaluate(t, prev):
            try:
                marg = plan._calibrate_numpy(plan.beliefs(t), total)
            except FloatingPointError:
                return None, np.nan, np.nan
            ym = plan.measurement_marginals(plan.clique_marginals(marg))
            r = ym - y
            wr = w * r
            armijo = float(np.dot(prev[2], prev[1] - ym)) if prev is not None else np.nan
            return (marg, ym, wr), 0.5 * float(np.dot(r, wr)), armijo

        def gradient(state):
            return plan.gradient(state[2])

        def to_numpy(a):
            return a
    T, state, done, loss, alpha, converged = _iterate(evaluate, gradient, T, int(iters), float(tol), alpha,
                                                      bool(momentum), 0.5 * plan.M)
    return Result(plan.tables(to_numpy(T)), to_numpy(state[0]), done, loss, alpha, converged)


def _iterate(evaluate, gradient, T, iters: int, tol: float, alpha: float, momentum: bool, noise_level: float):
    """The mirror-descent loop of the numpy and torch paths (the numba kernel runs the same one).

    ``evaluate(t, prev)`` gives ``(state, loss, armijo)`` for potentials ``t``: ``state`` is
    ``(marginals, measured marginals, weighted residuals)``, ``loss`` NaN where a clique marginal
    vanished, ``armijo`` the product ``<wr, ym - ym'>`` with the accepted state ``prev``;
    ``gradient(state)`` the loss's gradient over the potentials.  Returns ``(T, state, iterations
    run, loss, alpha, converged)``."""
    state, loss, _ = evaluate(T, None)
    if not loss == loss:
        raise FloatingPointError("PGM engine: the starting potentials give no finite marginals")
    grad = gradient(state)
    hist = [loss]
    done, converged = 0, False
    step, k = T * 0.0, 0  # the last accepted step; accepted steps since the last restart
    for _ in range(iters):
        done += 1
        beta = k / (k + 3.0) if momentum else 0.0
        new = T - alpha * grad + beta * step
        state2, loss2, armijo = evaluate(new, state)
        if not loss2 == loss2:  # the step drove a belief to underflow: reject it, as mbi's NaN loss does
            ok = False
        elif beta > 0:
            ok = loss2 < loss
        else:
            ok = loss - loss2 >= 0.5 * alpha * armijo
        if ok:
            step = new - T
            T, state, loss = new, state2, loss2
            grad = gradient(state)
            alpha *= 1.01
            k += 1
        elif beta > 0:  # the momentum step overshot: restart from a plain step
            k = 0
        else:
            alpha *= 0.5
        hist.append(loss)
        if tol > 0 and len(hist) > WINDOW and hist[-1 - WINDOW] - loss <= tol * max(loss, noise_level):
            converged = True
            break
    return T, state, done, loss, alpha, converged
