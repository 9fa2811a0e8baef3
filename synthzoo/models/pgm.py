"""Private-PGM: a graphical model fitted to noisy marginals.

McKenna, Sheldon, Miklau, "Graphical-model based estimation and inference for differential
privacy" (ICML 2019).  ``fit`` finds the Markov random field whose marginals best match the
noisy measurements in (inverse-noise) weighted L2 norm, by mirror descent over the marginal
polytope (the paper's Algorithm 1 with ``mbi``'s Armijo step-size rule and Lipschitz bound).

Estimation runs in :mod:`.pgm_engine` (a flat junction-tree plan; one numba kernel compiled once
for every model structure, numpy without numba), warm-started between an adaptive selector's
rounds and stopped once the objective has converged; on a CUDA device the same plan and iteration
run in torch (:mod:`._pgm_torch`, nothing compiled per structure).  ``engine="jax"`` runs the same
algorithm as one jitted ``mbi`` program instead, compiled per model structure.  The
engine returns the calibrated junction-tree marginals with the potentials; every later question
-- ``project`` for an adaptive selector, ``sample`` for records -- is answered in numpy from
them, within the model-size cap, and sampling is seeded from the caller's ``numpy`` generator.

Post-processing only: the model sees noisy measurements, never records, and spends no budget.

The file is one thing, the PGM model: estimation (the jitted path here, the engine in
:mod:`.pgm_engine`, warm starts, the model-size cap) and exact inference on its junction tree
(marginal queries, sampling), which share the potentials and the tree.
"""

from __future__ import annotations

import os
import warnings
from collections import deque

import numpy as np

from ..core.base import WORK_ROWS, MeasurementModel, register
from ..core.domain import Domain, Measurement
from ..core.errors import ConfigError
from ..core.graph import junction_tree, maximal, model_size_mb
from ..core.measurements import check_measurements, estimate_total
from ..core.params import Boolean, Integral, Interval, Options, Real
from ..core.statecheck import INTEGER, NUMBER, TEXT, shaped
from . import pgm_engine

_PAPER = ("McKenna, Sheldon, Miklau, Graphical-model based estimation and inference for differential "
          "privacy (ICML 2019)")

_MBI = None
_RUN = None
# cells x iterations the numpy engine is given before the jitted one is worth its compile time:
# on 2 cores numpy takes ~50 ns per cell-iteration, the compile of a model ~20-40 s
_NUMPY_WORK = 4e8
#: The jitted engine's steps between convergence checks, and its most steps per requested iteration
#: (it has no momentum; see ``PGM._jax_fit``).
JAX_CHUNK = 250
JAX_STEPS_PER_ITER = 8
#: Largest log-factor by which :meth:`PGM._match_new` rescales a cell of a warm start.
_MATCH_LOG = 4.0


#: Junction-tree cells from which ``engine="auto"`` runs mirror descent in torch on a CUDA device
#: (:mod:`._pgm_torch`): below it an iteration is shorter than the GPU's fixed cost of launching its few
#: hundred array operations.
_TORCH_CELLS = 2 ** 18


def _cuda() -> bool:
    """Whether torch sees a CUDA device (the torch engine's case)."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch, or a broken CUDA install: no GPU
        return False


def _pick_engine(engine: str, cells: int, iters: int, compile_ok: bool = True) -> str:
    """The engine that ``engine`` means for a model of ``cells`` junction-tree cells: ``"auto"`` is torch
    on a CUDA device for a large model, the jitted program on a JAX GPU when cells x iterations pay
    for its compile (never between rounds, ``compile_ok=False``: the structure changes every round),
    else numpy."""
    if engine != "auto":
        return engine
    if cells >= _TORCH_CELLS and _cuda():
        return "torch"
    if compile_ok and cells * iters > _NUMPY_WORK and _gpu():
        return "jax"
    return "numpy"


def _gpu() -> bool:
    """Whether JAX is installed with a GPU (the jitted engine's case)."""
    try:
        import jax

        return any(d.platform == "gpu" for d in jax.devices())
    except Exception:  # noqa: BLE001 - no jax, or no backend: no GPU
        return False


def _mbi():
    """Import ``mbi`` with JAX in float64 and without the persistent compilation cache.

    float32 stalls mirror descent on tables of tens of thousands of records (mbi's own warning);
    the compilation cache only fills the disk with many small programs.
    """
    global _MBI
    if _MBI is None:
        os.environ.setdefault("JAX_ENABLE_X64", "1")
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_enable_compilation_cache", False)
        import mbi
        import mbi.estimation
        import mbi.junction_tree
        import mbi.marginal_loss
        import mbi.marginal_oracles

        _MBI = mbi
    return _MBI


def _mirror_descent():
    """The jitted optimiser: ``run(potentials, loss_fn, total, alpha, iters) -> (potentials, alpha, loss)``
    (the step size to continue with and the loss at the returned potentials).

    McKenna et al. (ICML 2019), Algorithm 1: ``theta <- theta - alpha * grad L(mu(theta))`` with
    ``mu`` the model's clique marginals (junction-tree message passing).  The step size follows
    mbi's ``MirrorDescent``: start at ``2 / (L * total)`` (L the Lipschitz constant of the loss
    gradient), accept a step on sufficient decrease and grow alpha by 1%, else halve it.
    """
    global _RUN
    if _RUN is None:
        mbi = _mbi()
        import jax
        import jax.numpy as jnp

        oracle = mbi.marginal_oracles.message_passing_hugin

        def run(potentials, loss_fn, total, alpha, iters):
            def step(_, carry):
                pot, alpha = carry
                mu = oracle(pot, total)
                loss, grad = jax.value_and_grad(loss_fn)(mu)
                theta = pot - alpha * grad
                mu2 = oracle(theta, total)
                ok = loss - loss_fn(mu2) >= 0.5 * alpha * grad.dot(mu - mu2)
                pot = jax.tree.map(lambda new, old: jnp.where(ok, new, old), theta, pot)
                return pot, jnp.where(ok, 1.01 * alpha, 0.5 * alpha)

            # a traced trip count: changing iters does not recompile
            pot, alpha = jax.lax.fori_loop(0, iters, step, (potentials, jnp.asarray(alpha, dtype=float)))
            return pot, alpha, loss_fn(oracle(pot, total))

        _RUN = jax.jit(run)
    return _RUN


# ----------------------------------------------------------------------------- numpy tables
def _aligned(attrs: tuple, arr: np.ndarray, target: tuple) -> np.ndarray:
    """``arr`` over ``attrs`` viewed over ``target`` (a superset): axes reordered, size-1 where absent."""
    arr = np.transpose(arr, [attrs.index(a) for a in target if a in attrs])
    shape, k = [], 0
    for a in target:
        if a in attrs:
            shape.append(arr.shape[k])
            k += 1
        else:
            shape.append(1)
    return arr.reshape(shape)


def _sum_to(attrs: tuple, arr: np.ndarray, keep) -> tuple[tuple, np.ndarray]:
    keep = set(keep)
    axes = tuple(i for i, a in enumerate(attrs) if a not in keep)
    return tuple(a for a in attrs if a in keep), (arr.sum(axis=axes) if axes else arr)


def _safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros(np.broadcast_shapes(num.shape, den.shape)), where=den > 0)


def _contract(operands: list, keep: tuple, limit: int) -> np.ndarray:
    """``sum`` over every attribute not in ``keep`` of the product of ``operands`` (``(attrs, table)``
    pairs), by ``np.einsum``: two operands in one loop that allocates only the result, more with
    pairwise intermediates of at most ``limit`` cells (or one loop over all indices when no such
    order exists)."""
    # first sum each operand over the attributes no other operand and not the result needs
    reduced = []
    for i, (attrs, table) in enumerate(operands):
        need = set(keep).union(*(set(o[0]) for j, o in enumerate(operands) if j != i))
        if any(a not in need for a in attrs):
            attrs, table = _sum_to(attrs, table, need)
        reduced.append((attrs, table))
    operands = reduced
    if len(operands) == 1:
        attrs, table = operands[0]
        return _aligned(attrs, table, keep) if attrs != keep else table
    labels: dict[str, int] = {}
    for attrs, _ in operands:
        for x in attrs:
            labels.setdefault(x, len(labels))
    if len(labels) > 52:  # einsum's label limit (only with many one-value attributes): in turn
        attrs, table = operands[0]
        for b_attrs, b in operands[1:]:
            union = attrs + tuple(x for x in b_attrs if x not in attrs)
            attrs, table = union, _aligned(attrs, table, union) * _aligned(b_attrs, b, union)
        return _aligned(*_sum_to(attrs, table, keep), keep)
    args = []
    for attrs, table in operands:
        args += [table, [labels[x] for x in attrs]]
    out = [labels[x] for x in keep]
    if len(operands) <= 2:
        return np.einsum(*args, out, optimize=False)
    path = np.einsum_path(*args, out, optimize=("greedy", max(int(limit), 1)))[0]
    return np.einsum(*args, out, optimize=path)


class _JunctionTree:
    """Calibrated junction-tree node marginals (counts) answering marginal queries and sampling.

    ``plan`` is the engine's :class:`~synthzoo.models.pgm_engine.Plan` (tree, rooted order) and
    ``marg`` its calibrated flat node marginals.  A query held by one node is a sum over that node.
    A query across nodes is variable elimination over the smallest subtree holding it, with
    intermediates kept within ``limit`` cells: when a message over the query's carried attributes
    and a separator would exceed it, the query is answered in blocks of values of one query
    attribute (conditioning), so no array larger than ``limit`` cells -- the model-size cap -- is
    ever built, however the query straddles the tree."""

    def __init__(self, domain: Domain, plan, marg: np.ndarray, total: float, limit: int):
        self.domain = domain
        self.nodes = list(plan.order)
        self.adj = {n: list(plan.adj[n]) for n in self.nodes}
        self.total = float(total)
        self.marg = {n: t.copy() for n, t in plan.node_tables(marg).items()}
        self.limit = max(int(limit), max((t.size for t in self.marg.values()), default=1))
        # connected components (the tree is a forest when attributes are independent)
        self.comp: dict[tuple, int] = {}
        self.roots: list[tuple] = []
        for c in self.nodes:
            if c in self.comp:
                continue
            self.roots.append(c)
            todo = [c]
            self.comp[c] = len(self.roots) - 1
            while todo:
                u = todo.pop()
                for v in self.adj[u]:
                    if v not in self.comp:
                        self.comp[v] = self.comp[c]
                        todo.append(v)
        self.home: dict[str, tuple] = {}
        for c in sorted(self.nodes, key=lambda c: domain.size(c)):  # smallest node holding each attribute
            for a in c:
                self.home.setdefault(a, c)
        missing = [a for a in domain.attrs if a not in self.home]
        if missing:
            raise ConfigError(f"PGM: the junction tree does not cover attributes {missing}")
        self._cond: dict = {}
        self._cond_cells = 0

    # ------------------------------------------------------------------ queries
    def _conditional(self, v: tuple, parent: tuple) -> np.ndarray:
        """P(v | separator with ``parent``) as a table over ``v``; cached within the cap."""
        key = (v, parent)
        hit = self._cond.get(key)
        if hit is None:
            sep = tuple(a for a in v if a in parent)
            s_attrs, s_tab = _sum_to(v, self.marg[v], sep)
            hit = _safe_divide(self.marg[v], _aligned(s_attrs, s_tab, v))
            if self._cond_cells + hit.size <= self.limit:
                self._cond[key] = hit
                self._cond_cells += hit.size
        return hit

    def _subtree(self, q: set, comp: int) -> tuple[tuple, set, dict]:
        """The smallest subtree holding ``q``: (root, nodes, parent map)."""
        keep = {c for c in self.nodes if self.comp[c] == comp}
        changed = True
        while changed:  # prune leaves holding no query attribute their neighbour lacks
            changed = False
            for v in [c for c in self.nodes if c in keep]:
                nb = [u for u in self.adj[v] if u in keep]
                if len(keep) > 1 and len(nb) == 1 and (q & set(v)) <= set(nb[0]):
                    keep.discard(v)
                    changed = True
        root = max((c for c in self.nodes if c in keep), key=lambda c: len(q & set(c)))
        parent, order = {root: None}, [root]
        for u in order:
            for w in self.adj[u]:
                if w in keep and w not in parent:
                    parent[w] = u
                    order.append(w)
        return root, order, parent

    def _eliminate(self, q: tuple, order: list, parent: dict, sizes: dict, ev: dict) -> np.ndarray:
        """Counts over ``q`` by collecting towards ``order[0]``; ``ev`` restricts attributes to slices."""
        msgs: dict = {}
        qs = set(q)
        for v in reversed(order):
            p = parent[v]
            table = self.marg[v] if p is None else self._conditional(v, p)
            idx = tuple(ev.get(a, slice(None)) for a in v)
            ops = [(v, table[idx] if ev else table)]
            carried = set(v) & qs
            for w in self.adj[v]:
                if parent.get(w) is v and w in msgs:
                    ops.append(msgs.pop(w))
                    carried |= set(ops[-1][0]) & qs
            keep = tuple(a for a in q if a in carried)
            if p is not None:
                keep += tuple(a for a in v if a in p and a not in keep)
            msgs[v] = (keep, _contract(ops, keep, self.limit))
        attrs, table = msgs[order[0]]
        return _aligned(attrs, table, q) if attrs != q else table

    def _peak(self, q: set, order: list, parent: dict, sizes: dict) -> int:
        """Largest message (cells) the elimination builds, with query attributes of ``sizes``."""
        below: dict = {}
        peak = 0
        for v in reversed(order):
            carried = set(v) & q
            for w in self.adj[v]:
                if parent.get(w) is v:
                    carried |= below.get(w, set())
            below[v] = carried
            attrs = carried | ({a for a in v if a in parent[v]} if parent[v] is not None else set())
            peak = max(peak, int(np.prod([sizes[a] for a in attrs], dtype=np.float64)))
        return peak

    def _component_marginal(self, query: tuple, comp: int) -> tuple[tuple, np.ndarray]:
        """Counts over ``query`` (attributes of one tree component)."""
        q = set(query)
        holders = [c for c in self.nodes if self.comp[c] == comp and q <= set(c)]
        if holders:
            c = min(holders, key=self.domain.size)
            return _sum_to(c, self.marg[c], q)
        _, order, parent = self._subtree(q, comp)
        sizes = {a: self.domain[a] for a in self.domain.attrs}
        if self._peak(q, order, parent, sizes) <= self.limit:
            return query, self._eliminate(query, order, parent, sizes, {})
        return query, self._blocked(query, order, parent, sizes, {})

    def _blocked(self, query: tuple, order, parent, sizes: dict, ev: dict) -> np.ndarray:
        """The query answered in blocks of one attribute's values (conditioning on them), each block
        small enough that no message exceeds the limit; recursive when one value is still too many."""
        q = set(query)
        free = [a for a in query if a not in ev and sizes[a] > 1]
        if not free:
            return self._eliminate(query, order, parent, sizes, ev)
        a = max(free, key=lambda x: sizes[x])
        one = dict(sizes, **{a: 1})
        per = self._peak(q, order, parent, one)
        k = max(1, min(sizes[a], self.limit // max(per, 1)))
        whole = ev.get(a, slice(0, self.domain[a]))
        out = np.empty([sizes[x] for x in query])  # blocks are written in place: no second copy
        ax = query.index(a)
        for lo in range(whole.start, whole.stop, k):
            blk = slice(lo, min(lo + k, whole.stop))
            sub = dict(sizes, **{a: blk.stop - blk.start})
            sub_ev = dict(ev, **{a: blk})
            part = (self._eliminate(query, order, parent, sub, sub_ev) if self._peak(q, order, parent, sub) <= self.limit
                    else self._blocked(query, order, parent, sub, sub_ev))
            idx = [slice(None)] * len(query)
            idx[ax] = slice(lo - whole.start, blk.stop - whole.start)
            out[tuple(idx)] = part
        return out

    def project(self, clique: tuple) -> np.ndarray:
        by_comp: dict[int, list[str]] = {}
        for a in clique:
            by_comp.setdefault(self.comp[self.home[a]], []).append(a)
        if not clique:
            return np.array(self.total)
        attrs, table = (), None
        for comp, part in by_comp.items():
            p_attrs, p = self._component_marginal(tuple(part), comp)
            if table is None:
                attrs, table = p_attrs, p
            else:  # independent components: outer product, rescaled to the total
                p = p / self.total if self.total > 0 else p
                attrs = attrs + p_attrs
                table = np.multiply.outer(table, p)
        out = _aligned(attrs, table, tuple(clique))
        return np.asarray(out, dtype=float).reshape(self.domain.project(clique).shape).copy()

    # ----------------------------------------------------------------- sampling
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` records: each component from its root down, each clique's new attributes drawn from
        their conditional given the separator.  Draws are stratified (randomised rounding at the
        root, stratified uniforms within each separator group), as in private-pgm's ``round``
        method, so the records' marginals sit closer to the model's than i.i.d. draws would."""
        idx = {a: i for i, a in enumerate(self.domain.attrs)}
        out = np.zeros((n, len(self.domain)), dtype=np.int64)
        for root in self.roots:
            # every table in the domain's order, not the node's (the plan lays nodes out for its kernels):
            # the draws, and so a saved model's rows for a seed, do not depend on the layout
            r_attrs = tuple(a for a in self.domain.attrs if a in root)
            r_table = _aligned(root, self.marg[root], r_attrs)
            flat = _round_counts(r_table.ravel(), n, rng)
            cells = rng.permutation(np.repeat(np.arange(flat.size), flat))
            for a, col in zip(r_attrs, np.unravel_index(cells, r_table.shape)):
                out[:, idx[a]] = col
            queue = deque((root, u) for u in self.adj[root])
            seen = {root}
            while queue:
                parent, c = queue.popleft()
                if c in seen:
                    continue
                seen.add(c)
                queue.extend((c, u) for u in self.adj[c] if u not in seen)
                sep = tuple(a for a in self.domain.attrs if a in c and a in parent)
                new = tuple(a for a in self.domain.attrs if a in c and a not in parent)
                if not new:
                    continue
                table = _aligned(c, self.marg[c], sep + new)
                s_size = int(np.prod(table.shape[:len(sep)], dtype=np.int64)) if sep else 1
                cond = table.reshape(s_size, -1)
                if sep:
                    key = np.ravel_multi_index(tuple(out[:, idx[a]] for a in sep), table.shape[:len(sep)]) \
                        if len(sep) > 1 else out[:, idx[sep[0]]]
                else:
                    key = np.zeros(n, dtype=np.int64)
                draw = _stratified_conditional(cond, key, rng)
                for a, col in zip(new, np.unravel_index(draw, table.shape[len(sep):])):
                    out[:, idx[a]] = col
        return out


def _round_counts(p: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Integer counts summing to ``n`` proportional to ``p``: floors plus randomised rounding of the rest."""
    p = np.clip(np.asarray(p, dtype=float), 0.0, None)
    tot = p.sum()
    p = np.full(p.size, 1.0 / p.size) if not tot > 0 else p / tot
    raw = p * n
    base = np.floor(raw).astype(np.int64)
    extra = n - int(base.sum())
    if extra > 0:
        frac = raw - base
        w = frac / frac.sum() if frac.sum() > 0 else np.full(p.size, 1.0 / p.size)
        extra = min(extra, int(np.count_nonzero(w)))
        base[rng.choice(p.size, size=extra, replace=False, p=w)] += 1
        short = n - int(base.sum())
        if short > 0:  # only when fewer cells have mass than records are missing
            base += np.bincount(rng.choice(p.size, size=short, p=p), minlength=p.size)
    return base


def _stratified_conditional(cond: np.ndarray, key: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each row i, a column index drawn from ``cond[key[i]]`` (unnormalised weights).

    Rows sharing a key get stratified uniforms ``(rank + U) / group size`` with a random rank, so
    each group's draws follow the conditional closely.  Vectorised: one global search over the
    rows' cumulative distributions laid end to end (row r's CDF shifted by r).
    """
    n = key.size
    rows, k = cond.shape
    mass = cond.sum(axis=1, keepdims=True)
    probs = np.where(mass > 0, cond / np.where(mass > 0, mass, 1.0), 1.0 / k)
    cdf = np.cumsum(probs, axis=1)
    cdf[:, -1] = 1.0
    perm = rng.permutation(n)
    order = perm[np.argsort(key[perm], kind="stable")]  # random order within each key group
    sorted_key = key[order]
    starts = np.searchsorted(sorted_key, sorted_key, side="left")
    sizes = np.bincount(key, minlength=rows)
    ranks = np.arange(n) - starts
    u = np.empty(n)
    u[order] = (ranks + rng.random(n)) / sizes[sorted_key]
    shifted = (cdf + np.arange(rows)[:, None]).ravel()
    pos = np.searchsorted(shifted, key + u, side="right")
    return np.minimum(pos - key * k, k - 1)


def _expand(domain: Domain, pots: dict, cliques: list[tuple]) -> dict | None:
    """Potentials over ``pots``' cliques re-expressed over ``cliques`` (each old clique added into
    the first new clique holding it): the same distribution, a warm start for a larger model.
    None when some old clique fits in no new clique."""
    out = {c: np.zeros(domain.project(c).shape) for c in cliques}
    for old, table in pots.items():
        host = next((c for c in cliques if set(old) <= set(c)), None)
        if host is None:
            return None
        out[host] += _aligned(tuple(old), np.asarray(table, dtype=float), host)
    return out


# ---------------------------------------------------------------------------------- model
@register("model", "pgm")
class PGM(MeasurementModel):
    """Private-PGM (McKenna, Sheldon, Miklau, ICML 2019): a Markov random field fitted to the noisy
    marginals by mirror descent (``mbi``'s algorithm), sampled from its junction tree.

    Parameters
    ----------
    iters : int, default 1000
        Most mirror-descent iterations per ``fit``.
    warm_start : bool, default True
        When a ``fit`` receives the measurements of the previous ``fit`` plus new ones (as an
        adaptive selector such as AIM does every round), start from the previous potentials rescaled
        to the new measurements (one step of iterative proportional fitting) and from the previous step
        size; the Armijo rule checks every step.
    max_model_size : float, default 100.0
        Cap in MB on the junction tree (float64 cells, :func:`synthzoo.core.graph.model_size_mb`).
        Exact inference is exponential in the tree width: when the measured marginals would exceed
        the cap (e.g. every pair measured), measurements are kept in the order given -- selectors list
        the most important first -- skipping those that would break it, with a warning.  The cap
        also bounds every table a marginal query builds (queries across the tree are answered in
        blocks when their messages would be larger).
    round_iters : int, default 250
        Most iterations of each between-rounds refit an adaptive selector asks for (:meth:`fit_round`);
        warm-started, so a few hundred iterations track the estimate.
    engine : {"auto", "numpy", "torch", "jax"}, default "auto"
        ``"numpy"`` runs :mod:`.pgm_engine` (compiled once by numba when it is installed, nothing
        compiled per model); ``"torch"`` the same iteration in torch (:mod:`._pgm_torch`), on CUDA
        when present (else on the CPU, slower than numpy); ``"jax"`` mbi's jitted program (compiled
        per model structure).  ``"auto"``: torch on a CUDA device for a junction tree of 2**18 cells or
        more, for every fit including the between-rounds refits; else the jitted program on a JAX GPU
        for a final fit whose cells x iterations exceed 4e8; else numpy.  numpy and torch run the same
        iteration (momentum included) and agree to rounding; with ``momentum=False`` the jitted one
        agrees to ~1e-10 of the marginals, but it has no momentum (it runs ``mbi``'s plain steps), so
        with ``tol`` > 0 it may take up to 8 x ``iters`` steps to converge (``iters_`` says how many).
    tol : float, default 1e-4
        Stop a ``fit`` once the loss fell by less than ``tol`` (relative) over the last 25
        iterations: the objective has converged.  0 runs every iteration.
    round_tol : float, default 1e-4
        The same for the between-rounds refits (:meth:`fit_round`); the final ``fit`` continues
        from them with ``tol``.  An adaptive selector reads these estimates (AIM's scores and its
        annealing test, whether a new measurement moved the estimate by more than its noise), so
        they must be converged: stopped early, the estimate has not yet moved towards the new
        measurement and AIM anneals too soon (fewer rounds, a worse model).
    refine_tol : float, default 1e-4
        The tolerance of :meth:`refine_round`, which continues the last between-rounds estimate when
        a selector's decision hinges on it (AIM's annealing test near its threshold).  With a looser
        ``round_tol`` the rounds are cheap and only the borderline ones are taken to ``refine_tol``;
        a ``refine_tol`` not below ``round_tol`` makes :meth:`refine_round` a no-op.
    momentum : bool, default True
        Accelerate mirror descent with restarted Nesterov momentum on the potentials (numpy and
        torch engines; see :mod:`.pgm_engine`): the same estimate in a fraction of the iterations.
        False runs ``mbi``'s plain mirror descent.

    Examples
    --------
    >>> sz.Synthesizer(preprocess=["privtree"], select="mst", model=PGM(iters=2500), epsilon=1.0)  # doctest: +SKIP
    """

    paper = _PAPER
    # MB of junction tree a loaded model may build: loading and sampling peaked at about 9 times the tree
    # (a 348 MB tree: 3.0 GB resident), so a file can ask for at most ~4.5 GB
    _load_limits = {"max_model_size": 512}
    _parameter_constraints = {
        "iters": [Interval(Integral, 1, None)], "warm_start": [Boolean()],
        "max_model_size": [Interval(Real, 0, None, closed="neither")], "round_iters": [Interval(Integral, 1, None)],
        "engine": [Options("auto", "numpy", "torch", "jax")], "tol": [Interval(Real, 0, 1, closed="left")],
        "round_tol": [Interval(Real, 0, 1, closed="left")], "refine_tol": [Interval(Real, 0, 1, closed="left")],
        "momentum": [Boolean()]}

    def __init__(self, iters: int = 1000, warm_start: bool = True, max_model_size: float = 100.0,
                 round_iters: int = 250, engine: str = "auto", tol: float = 1e-4, round_tol: float = 1e-4,
                 momentum: bool = True, refine_tol: float = 1e-4):
        self.iters = iters
        self.momentum = momentum
        self.warm_start = warm_start
        self.max_model_size = max_model_size
        self.round_iters = round_iters
        self.engine = engine
        self.tol = tol
        self.round_tol = round_tol
        self.refine_tol = refine_tol

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"iters": ("int", 200, 3000)}

    # ------------------------------------------------------------------------ fit

    @staticmethod
    def _stddevs(measurements: list[Measurement]) -> list[float]:
        """Noise scale per measurement; exact ones (sigma 0, a non-private run) get a floor far below
        the noisy ones so that they dominate the fit without a division by zero."""
        positive = [m.sigma for m in measurements if m.sigma > 0]
        floor = 1e-3 * min(positive) if positive else 1.0
        return [m.sigma if m.sigma > 0 else floor for m in measurements]

    @staticmethod
    def _key(m: Measurement) -> tuple:
        return (m.clique, float(m.sigma), m.noisy.shape, m.noisy.tobytes())

    @property
    def _limit_cells(self) -> int:
        """The cap in cells: the largest table a query may build."""
        return int(float(self.max_model_size) * 2 ** 20 / 8)

    def check_schema(self, schema, private: bool) -> None:
        # every column is at least one cell of the model, whatever the preprocessors make of it
        self._check_cap(len(schema.columns) * 8 / 2 ** 20, f"the {len(schema.columns)} columns of the schema, "
                        "at least one cell each")

    def check_domain(self, domain: Domain) -> None:
        # the one-way marginals of every column: the smallest model over the domain, so a cap below it
        # would drop measurements the selector is about to pay for (or all of them)
        self._check_cap(model_size_mb(domain, [(a,) for a in domain.attrs]),
                        f"the one-way marginals of the encoded domain ({sum(domain.shape):,} cells)")

    def _check_cap(self, need_mb: float, what: str) -> None:
        if float(self.max_model_size) < need_mb:
            self._bad("max_model_size", f"MB cannot hold {what}, {need_mb:.3g} MB: no model fits in it. "
                      f"Raise it (the default is 100)")

    def _fit(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> None:
        """Estimate the graphical model from noisy marginals (post-processing: spends no budget)."""
        self._estimate(domain, measurements, int(self.iters), self.engine, float(self.tol))

    def fit_round(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> "PGM":
        """An adaptive selector's between-rounds estimate: at most ``round_iters`` warm-started
        iterations, stopped at ``round_tol``, by the numpy engine or the torch one (``engine``); never
        the jitted program, which would compile again for every round's new structure."""
        self._estimate(domain, check_measurements(self._label(), domain, measurements), int(self.round_iters),
                       self._round_engine(), float(self.round_tol), compile_ok=False)
        return self

    def refine_round(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> "PGM":
        """The last :meth:`fit_round` estimate (of the same ``measurements``) continued from where it
        stopped to ``refine_tol``; nothing when ``refine_tol`` is not below ``round_tol``."""
        if float(self.refine_tol) < float(self.round_tol):
            self._estimate(domain, check_measurements(self._label(), domain, measurements), int(self.round_iters),
                           self._round_engine(), float(self.refine_tol), compile_ok=False)
        return self

    def _round_engine(self) -> str:
        return self.engine if self.engine in ("torch", "auto") else "numpy"

    def _estimate(self, domain: Domain, measurements: list[Measurement], iters: int, engine: str,
                  tol: float, compile_ok: bool = True) -> None:
        used = self._within_cap(domain, measurements)
        sigmas = self._stddevs(used)
        meas_cliques = [m.clique for m in used]
        cliques = maximal(meas_cliques)
        total = estimate_total(used)
        keys = [self._key(m) for m in measurements]
        prev = getattr(self, "_keys", None)
        warm = None
        if (self.warm_start and prev is not None and getattr(self, "domain_", None) == domain
                and len(prev) <= len(keys) and keys[:len(prev)] == prev):
            warm = _expand(domain, self._pots, cliques)  # None when an old clique fits in no new one
            if warm is not None:
                fresh = {id(m) for m in measurements[len(prev):]}
                self._match_new(domain, warm, cliques, [(m, s) for m, s in zip(used, sigmas) if id(m) in fresh])
        theta = warm if warm is not None else {c: np.zeros(domain.project(c).shape) for c in cliques}
        lip = pgm_engine.lipschitz(domain, cliques, meas_cliques, sigmas)
        nodes, edges = junction_tree(domain, cliques)
        plan = pgm_engine.Plan(domain, nodes, edges, cliques, meas_cliques)
        engine = _pick_engine(engine, plan.N, iters, compile_ok)
        alpha = getattr(self, "alpha_", None) if warm is not None else None
        marg = None
        if engine in ("numpy", "torch"):
            device = None if engine == "numpy" else ("cuda" if _cuda() else "cpu")
            res = pgm_engine.mirror_descent(plan, [m.noisy for m in used], sigmas, theta, total, iters, lip,
                                            tol=tol, alpha=alpha, momentum=bool(self.momentum), device=device)
            theta, marg = res.theta, res.marg
            self.iters_, self.alpha_, self.converged_ = res.iters, res.alpha, res.converged
        else:
            theta, self.iters_, self.converged_ = self._jax_fit(domain, used, sigmas, theta, total, iters, lip, tol)
            self.alpha_ = None
        self._set_fitted(domain, measurements, theta, total, plan, marg)
        self._keys = keys
        self.warm_started_ = warm is not None
        self.engine_ = engine

    def _match_new(self, domain: Domain, theta: dict, cliques: list[tuple], new: list) -> None:
        """Start a warm-started fit from the previous model rescaled to each new measurement: one step of
        iterative proportional fitting (Deming & Stephan, Ann. Math. Stat. 1940) adds
        ``log(y / mu)`` to the potential hosting the new clique, ``mu`` the previous model's marginal
        and ``y`` the noisy counts (``new``: ``(measurement, sigma)`` pairs), so that the start already
        agrees with the new measurement instead of ignoring it.  Only the start moves: mirror descent
        converges to the same estimate, in fewer iterations when the measurement is precise (an AIM
        run's estimates on adult resampled to 300,000 rows, ``benchmarks/bench_pgm_replay.py``: 11,948
        against 15,092 iterations, the final estimates within 2.2e-4 of the rows in any cell).  A count
        below ``min(mu, sigma)`` (under the noise, where the model holds more) is taken as that, and each
        cell's factor lies within ``e^+-4``, so a noisy cell cannot send the start far off."""
        for m, sigma in new:
            mu = self.project(m.clique)  # the previous fit's answer, usually cached: AIM scored this clique
            target = np.maximum(m.noisy, np.minimum(mu, sigma))
            with np.errstate(divide="ignore", invalid="ignore"):
                step = np.log(target) - np.log(mu)
            step = np.clip(np.nan_to_num(step, nan=0.0), -_MATCH_LOG, _MATCH_LOG)  # inf becomes the largest float
            host = next(c for c in cliques if set(m.clique) <= set(c))
            theta[host] = theta[host] + _aligned(tuple(m.clique), step, host)

    @staticmethod
    def _jax_fit(domain, used, sigmas, theta: dict, total: float, iters: int, lip: float,
                 tol: float = 0.0) -> tuple[dict, int, bool]:
        """mbi's jitted mirror descent from ``theta``: ``(potentials, steps, converged)``.  With ``tol`` > 0
        it runs in chunks of :data:`JAX_CHUNK` steps until the loss falls by less than ``tol`` (relative)
        over a chunk -- a stricter rule than the numpy engine's (``tol`` over 25 steps) -- for at most
        :data:`JAX_STEPS_PER_ITER` x ``iters`` steps: without momentum it needs several times the steps
        to the same estimate (on adult's 4-way marginals, 1,000 plain steps left the loss 6 % above the
        converged one), and on the GPU it is chosen for a step costs about 1/90 of a numpy one.  With
        ``tol`` 0, exactly ``iters`` steps."""
        mbi = _mbi()
        mdom = mbi.Domain(domain.attrs, domain.shape)
        import jax.numpy as jnp

        lms = [mbi.LinearMeasurement(m.noisy.ravel(), m.clique, stddev=float(s)) for m, s in zip(used, sigmas)]
        loss_fn = mbi.marginal_loss.from_linear_measurements(lms, mdom)
        start = _expand(domain, theta, [tuple(c) for c in loss_fn.cliques])
        vec = mbi.CliqueVector(mdom, list(start), {c: mbi.Factor(mdom.project(c), jnp.asarray(v))
                                                   for c, v in start.items()})
        run = _mirror_descent()
        alpha, steps, converged, prev = 2.0 / (lip * total), 0, False, None
        budget = int(iters) if not tol > 0 else int(iters) * JAX_STEPS_PER_ITER
        while steps < budget:
            k = min(JAX_CHUNK if tol > 0 else budget, budget - steps)
            vec, alpha, loss = run(vec, loss_fn, total, alpha, k)
            steps, loss = steps + k, float(loss)
            if prev is not None and prev - loss <= tol * abs(prev):
                converged = True
                break
            prev = loss
        return {tuple(c): np.asarray(vec[c].values, dtype=float) for c in vec.cliques}, steps, converged

    def _within_cap(self, domain: Domain, measurements: list[Measurement]) -> list[Measurement]:
        """The measurements to fit: all of them, or, when their junction tree would exceed
        ``max_model_size``, those kept greedily in the order given (a warning names the rest).
        Greedy in order, so a list that extends a previous one keeps a superset of its choice
        (the warm start stays valid)."""
        cap = float(self.max_model_size)
        if model_size_mb(domain, [m.clique for m in measurements]) <= cap:
            return measurements
        kept, cliques, dropped = [], [], []
        for m in measurements:
            if any(set(m.clique) <= set(c) for c in cliques) or model_size_mb(domain, cliques + [m.clique]) <= cap:
                kept.append(m)
                cliques.append(m.clique)
            else:
                dropped.append(m.clique)
        if not kept:
            raise ConfigError(f"PGM: no measurement fits in max_model_size={cap} MB")
        warnings.warn(f"PGM: {len(dropped)} of {len(measurements)} measurements left out (first: {dropped[:3]}); "
                      f"with them the junction tree would exceed max_model_size={cap:g} MB. Measure fewer "
                      "marginals (e.g. select='mst' or 'aim') or raise max_model_size.", UserWarning, stacklevel=3)
        return kept

    def _set_fitted(self, domain: Domain, measurements: list[Measurement], pots: dict, total: float,
                    plan=None, marg=None) -> None:
        """Keep the potentials and the calibrated junction tree (calibrated here unless the engine
        already returned the marginals of ``pots``)."""
        cliques = list(pots)
        if plan is None:
            nodes, edges = junction_tree(domain, cliques)
            plan = pgm_engine.Plan(domain, nodes, edges, cliques)
        if marg is None:
            marg = plan.calibrate(plan.beliefs(plan.flatten(pots)), total)
        self._tree = _JunctionTree(domain, plan, marg, total, self._limit_cells)
        self._fitted(domain)
        self.measurements_ = measurements
        self.total_ = float(total)
        self.cliques_ = cliques
        self._pots = pots

    def _warm_potentials(self):
        """The previous fit's potentials as an ``mbi.CliqueVector`` (warm start of the next fit)."""
        mbi = _mbi()
        import jax.numpy as jnp

        mdom = mbi.Domain(self.domain_.attrs, self.domain_.shape)
        return mbi.CliqueVector(mdom, list(self._pots), {c: mbi.Factor(mdom.project(c), jnp.asarray(v))
                                                         for c, v in self._pots.items()})

    # ----------------------------------------------------------------- queries
    def _project(self, clique: tuple) -> np.ndarray:
        """Model counts over ``clique``, summing to the estimated total."""
        return self._tree.project(clique)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` encoded records drawn from the fitted model with ``rng`` (same rng state, same records)."""
        self._require_fit()
        n = self._check_n(n)
        if n == 0:
            return np.zeros((0, len(self.domain_)), dtype=np.int64)
        return self._tree.sample(n, rng)

    def _sample_work(self) -> tuple[float, str]:
        """Per record and clique of the junction tree: its separator's key, a sort and a search; per sample
        (spread over :data:`~synthzoo.core.base.WORK_ROWS` records), each clique's table turned into
        conditional distributions.  Bounded by ``max_model_size``."""
        if getattr(self, "domain_", None) is None:
            return 0.0, "not fitted"
        tables = self._tree.marg
        cells = sum(t.size for t in tables.values())
        work = sum(20.0 + len(c) for c in tables) + 5.0 * cells / WORK_ROWS
        return work, f"a junction tree of {len(tables)} cliques and {cells:.2g} cells"

    # ------------------------------------------------------------------- state
    _state_spec = {"total": NUMBER, "measurements": [Measurement.STATE_SPEC],
                   "potentials": ("nonempty", [{"clique": [TEXT], "shape": [INTEGER], "values": [NUMBER]}])}

    def _get_state(self) -> dict:
        """The noisy measurements and the fitted potentials (functions of the noisy measurements
        only), so a loaded model samples exactly as the fitted one."""
        return {
            "total": self.total_,
            "measurements": [m.to_state() for m in self.measurements_],
            "potentials": [{"clique": list(c), "shape": list(v.shape), "values": v.ravel().tolist()}
                           for c, v in self._pots.items()],
        }

    def _set_state(self, state: dict, domain: Domain) -> None:
        total = float(state["total"])
        if not total > 0:  # the model's marginals are shares of it
            raise ConfigError(f"model file: model_state.total: must be a positive record count, got {total:g}")
        for i, m in enumerate(state["measurements"]):
            shaped(m["noisy"], m["shape"], f"model file: model_state.measurements[{i}]")
        measurements = [Measurement.from_state(m) for m in state["measurements"]]
        pots = {}
        for i, p in enumerate(state["potentials"]):
            if tuple(p["clique"]) in pots:  # the dict kept the last and dropped the first, without a word
                raise ConfigError(f"model file: model_state.potentials[{i}]: a second potential over {p['clique']}")
            pots[tuple(p["clique"])] = shaped(p["values"], p["shape"], f"model file: model_state.potentials[{i}]")
        for c, v in pots.items():
            if any(a not in domain for a in c) or v.shape != domain.project(c).shape:
                raise ConfigError(f"PGM.set_state: potential over {c} does not fit the domain")
            if not np.all(np.isfinite(v)):
                raise ConfigError(f"PGM.set_state: potential over {c} holds non-finite values")
        if not pots:
            raise ConfigError("PGM.set_state: no potentials")
        if model_size_mb(domain, list(pots)) > float(self.max_model_size):
            raise ConfigError(f"PGM.set_state: the junction tree of the saved potentials exceeds max_model_size="
                              f"{self.max_model_size} MB")
        self._set_fitted(domain, check_measurements("PGM", domain, measurements), pots, total)
        self._keys = [self._key(m) for m in measurements]
