"""The PGM engine's mirror descent in torch: the numpy path of :mod:`.pgm_engine` on a GPU.

The engine's plan already has the shape a GPU wants: calibration batched by tree level, every map
between tables precomputed, so an iteration is a few hundred array operations whatever the model's
cells, and nothing is compiled per structure (the rounds of AIM or PrivMRF change the cliques every
time, which is what makes mbi's jitted program slow for them).  Each map onto a smaller table -- a
node onto its separator, a node onto the potentials it hosts, a potential onto a measurement -- is a
dense reduction of the table viewed in its own shape: the numpy path's ``bincount`` as a scatter
would queue millions of atomic adds on the same few addresses.  The two scatters with a few adds per
cell (children's messages into their parent, a measurement's residuals into its potential) stay
``index_add_``; their atomic adds make the last bits of a fit on a GPU vary from run to run.
The loop -- Armijo rule, restarted momentum, the convergence window -- is the numpy path's
(:func:`~.pgm_engine._iterate`), in float64, so the answer agrees with the CPU engines to rounding.
On CUDA an evaluation is about 160 kernels whose arithmetic takes less time than launching them one by
one (2.9 million cells on an H200: 0.9 ms of kernels in a 4.7 ms step), so it is captured once per fit
as a CUDA graph and replayed every step (1.9 ms a step; ``benchmarks/bench_pgm_torch.py``).
"""

from __future__ import annotations

import numpy as np


class _Lvl:
    __slots__ = ("lo", "hi", "nodes", "cell_node", "s_len", "sep", "pp_cell", "pp_sep", "maps")


def _axes(host: tuple, sub: tuple) -> tuple:
    """Where ``sub``'s attributes sit in ``host``: a table over ``host`` reduces onto ``sub`` (in
    ``sub``'s own axis order) by summing the other axes and permuting the rest."""
    return tuple(host.index(a) for a in sub)


def _reduce(x, shape: tuple, pos: tuple, op: str):
    """A flat table of ``shape`` summed (``op="sum"``) or maximised (``"amax"``) onto the axes ``pos``,
    in that order, flat: what ``np.bincount(sub_index(...), x)`` gives, as one dense reduction (a
    scatter onto a small table is a queue of atomic adds to the same few addresses on a GPU)."""
    drop = [i for i in range(len(shape)) if i not in pos]
    y = x.view(shape)
    if drop:  # (never an empty list: torch reads dim=[] as every dimension)
        y = y.sum(dim=drop) if op == "sum" else y.amax(dim=drop)
    kept = sorted(pos)
    order = [kept.index(q) for q in pos]
    if order != sorted(order):
        y = y.permute(order)
    return y.reshape(-1)


class TorchPlan:
    """A :class:`~.pgm_engine.Plan` on ``device``: its gathers as int64 index tensors, its reductions
    (node onto separator, parent onto separator, node onto potential cliques, clique onto measurement)
    as dense reductions of each table viewed in its own shape."""

    def __init__(self, plan, device):
        import torch

        self.torch, self.device = torch, torch.device(device)
        self.N, self.Z, self.T, self.M = plan.N, plan.Z, plan.T, plan.M
        dom = plan.domain

        def t(a):
            return torch.as_tensor(np.asarray(a, dtype=np.int64), device=self.device)

        self.levels = []
        first = 0
        for L, count in zip(plan.levels, plan._by_level):
            q = _Lvl()
            q.lo, q.hi, q.nodes = L.lo, L.hi, count
            q.s_len = L.s_hi - L.s_lo
            q.cell_node = t(L.cell_node)
            q.sep = t(L.sep) if hasattr(L, "sep") else None
            q.pp_cell = t(L.pp_cell) if hasattr(L, "pp_cell") else None
            q.pp_sep = t(L.pp_sep) if hasattr(L, "pp_sep") else None
            # per node: its cells in the level, its shape, and (non-roots) where its separator's axes sit
            # in it and in its parent, and its parent's cells in the level above
            q.maps = []
            for c in plan.order[first:first + count]:
                a = plan.offset[c] - L.lo
                par = plan.parent[c]
                if par is None:
                    q.maps.append((a, a + plan.size[c], plan.shape[c], None, None, None, None))
                    continue
                sep = tuple(x for x in c if x in par)
                pa = plan.offset[par] - self.levels[-1].lo
                q.maps.append((a, a + plan.size[c], plan.shape[c], _axes(c, sep), pa, pa + plan.size[par],
                               (plan.shape[par], _axes(par, sep))))
            first += count
            self.levels.append(q)
        # reduction steps: (from node, source lo, source length, gather index into Z, source shape, axes)
        self.steps = []
        for s, (host, sub) in enumerate(plan.st_axes):
            idx = plan.st_dst[s] + plan.red_idx[plan.st_idx[s]:plan.st_idx[s + 1]].astype(np.int64)
            self.steps.append((bool(plan.st_node[s]), int(plan.st_src[s]), int(plan.st_len[s]), t(idx),
                               int(plan.st_dst[s]), tuple(dom[x] for x in host), _axes(host, sub)))
        # measurements: (potential cells, its shape, the measurement's axes in it, measurement cells)
        self.meas = []
        for cl, ml, m_lo in zip(plan._meas_host, plan.m_layout, plan.m_offset):
            t_lo, lay = plan.t_offset[cl], plan.layout[cl]
            self.meas.append((t_lo, t_lo + dom.size(cl), tuple(dom[x] for x in lay), _axes(lay, ml), m_lo,
                              m_lo + dom.size(ml)))
        self.mp_t, self.mp_m = t(plan.mp_t), t(plan.mp_m)

    def zeros(self, n):
        return self.torch.zeros(n, dtype=self.torch.float64, device=self.device)

    def spread(self, T):
        """Per-potential values summed onto the node cells (``Plan._spread``): gathers only."""
        z = self.zeros(self.Z)
        z[:self.T] = T
        node = self.zeros(self.N)
        for from_node, lo, n, idx, *_ in reversed(self.steps):
            (node if from_node else z)[lo:lo + n] += z[idx]
        return node

    def _per_node(self, x, L, op):
        """Each node's cells of the level's vector ``x`` reduced (``"sum"``, ``"amax"``) to one value."""
        torch = self.torch
        parts = [x[a:b] for a, b, *_ in L.maps]
        return torch.stack([p.sum() if op == "sum" else p.amax() for p in parts])

    def _to_sep(self, x, L, op):
        """The level's node vector ``x`` reduced onto the level's separator vector."""
        return self.torch.cat([_reduce(x[a:b], shape, pos, op) for a, b, shape, pos, *_ in L.maps])

    def calibrate(self, logb, total: float):
        """Node marginals of the node log-potentials ``logb`` and a 0-d flag: every clique marginal
        positive and finite (``Plan._calibrate_numpy``, message for message)."""
        torch = self.torch
        lv = self.levels
        lbs, lmsgs = [None] * len(lv), [None] * len(lv)
        for li in range(len(lv) - 1, -1, -1):  # collect: deepest level first
            L = lv[li]
            lb = logb[L.lo:L.hi]
            if li + 1 < len(lv):  # children's messages: each parent cell receives one per child
                C = lv[li + 1]
                lb = lb + self.zeros(L.hi - L.lo).index_add_(0, C.pp_cell, lmsgs[li + 1][C.pp_sep])
            lbs[li] = lb
            if li:
                top = self._to_sep(lb, L, "amax")
                top = torch.where(torch.isfinite(top), top, 0.0)
                lmsgs[li] = torch.log(self._to_sep(torch.exp(lb - top[L.sep]), L, "sum")) + top
        marg = self.zeros(self.N)
        fine = torch.ones((), dtype=torch.bool, device=self.device)
        for li, L in enumerate(lv):  # distribute: roots first
            lb = lbs[li]
            if li:
                P = lv[li - 1]
                up = marg[P.lo:P.hi]
                sep_sum = torch.cat([_reduce(up[pa:pb], pshape, ppos, "sum")
                                     for _, _, _, _, pa, pb, (pshape, ppos) in L.maps])
                lsep = torch.where(sep_sum > 0, torch.log(sep_sum) - lmsgs[li], -torch.inf)
                u = torch.exp(lb + lsep[L.sep])
            else:
                top = self._per_node(lb, L, "amax")
                u = torch.exp(lb - top[L.cell_node])
            s = self._per_node(u, L, "sum")
            fine = fine & torch.all(s > 0) & torch.all(torch.isfinite(s))
            marg[L.lo:L.hi] = u * (total / s)[L.cell_node]
        return marg, fine

    def clique_marginals(self, marg):
        z = self.zeros(self.Z)
        for from_node, lo, n, _, dst, shape, pos in self.steps:
            src = marg if from_node else z
            part = _reduce(src[lo:lo + n], shape, pos, "sum")
            z[dst:dst + part.numel()] += part
        return z[:self.T]

    def measurement_marginals(self, mu_t):
        return self.torch.cat([_reduce(mu_t[a:b], shape, pos, "sum") for a, b, shape, pos, _, _ in self.meas]) \
            if self.meas else self.zeros(0)

    def gradient(self, wr):
        """Each measurement's weighted residuals added into its potential's cells (few adds per cell:
        one per measurement the potential hosts)."""
        return self.zeros(self.T).index_add_(0, self.mp_t, wr[self.mp_m])


#: Capture an iteration's evaluation as one CUDA graph on a CUDA device (a switch for benchmarks and tests).
CUDA_GRAPH = True


def operations(plan, T0: np.ndarray, y: np.ndarray, w: np.ndarray, total: float, device) -> tuple:
    """What :func:`~.pgm_engine.mirror_descent`'s loop needs, on ``device``: the potentials there,
    ``evaluate(t, prev)`` (one synchronisation: the loss, the Armijo product and whether every clique
    marginal stayed finite come back together), ``gradient(state)`` and a copy back to numpy.

    On CUDA the evaluation -- a few hundred small operations whose launches, not their arithmetic, set an
    iteration's time -- is captured once per fit as a CUDA graph and replayed for every step: the
    structure is fixed within a fit, so the same kernels run on the same buffers each time."""
    import torch

    tp = TorchPlan(plan, device)
    dev = tp.device
    y = torch.as_tensor(np.asarray(y, dtype=np.float64), device=dev)
    w = torch.as_tensor(np.asarray(w, dtype=np.float64), device=dev)

    def core(t, prev_ym, prev_wr):
        # (the Armijo product with zeros for the first evaluation, which has no accepted state to compare)
        marg, fine = tp.calibrate(tp.spread(t), total)
        ym = tp.measurement_marginals(tp.clique_marginals(marg))
        r = ym - y
        wr = w * r
        stats = torch.stack([0.5 * torch.dot(r, wr), fine.to(torch.float64), torch.dot(prev_wr, prev_ym - ym)])
        return marg, ym, wr, stats

    T = torch.as_tensor(np.asarray(T0, dtype=np.float64), device=dev)
    zero = tp.zeros(len(y))
    replay = _graph(torch, core, T, zero) if CUDA_GRAPH and dev.type == "cuda" else None

    def evaluate(t, prev):
        if replay is None:
            *state, stats = core(t, *((prev[1], prev[2]) if prev is not None else (zero, zero)))
        else:
            state, stats = replay(t, prev)
        loss, ok, armijo = stats.tolist()
        return tuple(state), (loss if ok else float("nan")), armijo

    def gradient(state):
        return tp.gradient(state[2])

    def to_numpy(a):
        return a.cpu().numpy()

    return T, evaluate, gradient, to_numpy


def _graph(torch, core, T, zero):
    """``core`` captured as a CUDA graph on static copies of its inputs: ``replay(t, prev)`` copies them in,
    replays, and returns copies of the outputs (the loop keeps the accepted state beside the trial's).
    None where the capture fails: the loop then runs ``core`` as it is."""
    s_t, s_ym, s_wr = T.clone(), zero.clone(), zero.clone()
    try:
        side = torch.cuda.Stream(device=T.device)
        side.wait_stream(torch.cuda.current_stream(T.device))
        with torch.cuda.stream(side):  # a first run outside the capture: lazy initialisations and workspaces
            core(s_t, s_ym, s_wr)
        torch.cuda.current_stream(T.device).wait_stream(side)
        g = torch.cuda.CUDAGraph()
        # thread_local: a capture in the default mode makes another thread's CUDA calls fail while it lasts
        # (a user fitting two models in threads); this capture's own thread makes no unsafe call
        with torch.cuda.graph(g, capture_error_mode="thread_local"):
            out = core(s_t, s_ym, s_wr)
    except RuntimeError:  # a capture this torch or driver refuses: the eager loop gives the same answer
        return None

    def replay(t, prev):
        s_t.copy_(t)
        if prev is None:
            s_ym.zero_()
            s_wr.zero_()
        else:
            s_ym.copy_(prev[1])
            s_wr.copy_(prev[2])
        g.replay()
        return [o.clone() for o in out[:3]], out[3]

    return replay
