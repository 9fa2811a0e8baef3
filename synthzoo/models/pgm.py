"""Private-PGM: a graphical model fitted to noisy marginals, via the ``mbi`` package.

McKenna, Sheldon, Miklau, "Graphical-model based estimation and inference for differential
privacy" (ICML 2019).  ``fit`` finds the Markov random field whose marginals best match the
noisy measurements in (inverse-noise) weighted L2 norm, by mirror descent over the marginal
polytope (the paper's Algorithm 1 with mbi's Armijo step-size rule), built from ``mbi``'s loss
(``from_linear_measurements``), total estimate and junction-tree message passing.  The whole
optimisation -- initial marginals, every iteration, final potentials -- is one jitted JAX
program: calling ``mbi``'s ``Estimator.estimate`` runs its set-up eagerly, which compiles a
small XLA program per array shape (about 190 for adult, most of the fit's time on a CPU).

The fitted potentials are then calibrated once on the junction tree in numpy; every later
question -- ``project`` for an adaptive selector, ``sample`` for records -- is answered in numpy
from the junction-tree clique marginals, so neither compiles anything per query and sampling
is seeded from the caller's ``numpy`` generator.

Post-processing only: the model sees noisy measurements, never records, and spends no budget.

The file is one thing, the PGM model: estimation (the jitted path here, the numpy mirror descent
in :mod:`.pgm_engine`, warm starts, the model-size cap) and exact inference on its junction
tree (calibration, marginal queries, sampling), which share the potentials and the tree.
"""

from __future__ import annotations

import os
import warnings
from collections import deque

import numpy as np

from ..core.base import MeasurementModel, register
from ..core.domain import Domain, Measurement
from ..core.errors import ConfigError
from ..core.graph import junction_tree, maximal, model_size_mb
from ..core.measurements import check_measurements, estimate_total
from ..core.params import Boolean, Integral, Interval, Options, Real
from . import pgm_engine

_PAPER = ("McKenna, Sheldon, Miklau, Graphical-model based estimation and inference for differential "
          "privacy (ICML 2019)")

_MBI = None
_RUN = None
# cells x iterations the numpy engine is given before the jitted one is worth its compile time:
# on 2 cores numpy takes ~50 ns per cell-iteration, the compile of a model ~20-40 s
_NUMPY_WORK = 4e8


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
    """The jitted optimiser: ``run(potentials, loss_fn, total, alpha, iters) -> potentials``.

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
            pot, _ = jax.lax.fori_loop(0, iters, step, (potentials, jnp.asarray(alpha, dtype=float)))
            return pot

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


def _multiply(a_attrs: tuple, a: np.ndarray, b_attrs: tuple, b: np.ndarray) -> tuple[tuple, np.ndarray]:
    attrs = a_attrs + tuple(x for x in b_attrs if x not in a_attrs)
    return attrs, _aligned(a_attrs, a, attrs) * _aligned(b_attrs, b, attrs)


def _sum_to(attrs: tuple, arr: np.ndarray, keep) -> tuple[tuple, np.ndarray]:
    keep = set(keep)
    axes = tuple(i for i, a in enumerate(attrs) if a not in keep)
    return tuple(a for a in attrs if a in keep), (arr.sum(axis=axes) if axes else arr)


def _safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros(np.broadcast_shapes(num.shape, den.shape)), where=den > 0)


def _logsumexp_to(attrs: tuple, arr: np.ndarray, keep) -> tuple[tuple, np.ndarray]:
    keep = set(keep)
    axes = tuple(i for i, a in enumerate(attrs) if a not in keep)
    kept = tuple(a for a in attrs if a in keep)
    if not axes:
        return kept, arr
    top = np.max(arr, axis=axes, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out = np.log(np.sum(np.exp(arr - top), axis=axes)) + np.squeeze(top, axis=axes)
    return kept, out


class _JunctionTree:
    """Calibrated junction-tree clique marginals (counts) answering marginal queries and sampling."""

    def __init__(self, domain: Domain, nodes: list[tuple], edges: list[tuple], potentials: dict, total: float):
        self.domain = domain
        self.nodes = [tuple(c) for c in nodes]
        self.adj: dict[tuple, list[tuple]] = {c: [] for c in self.nodes}
        for u, v in edges:
            self.adj[tuple(u)].append(tuple(v))
            self.adj[tuple(v)].append(tuple(u))
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
        for c in sorted(self.nodes, key=lambda c: domain.size(c)):  # smallest clique holding each attribute
            for a in c:
                self.home.setdefault(a, c)
        missing = [a for a in domain.attrs if a not in self.home]
        if missing:
            raise ConfigError(f"PGM: the junction tree does not cover attributes {missing}")
        self.total = float(total)
        self.marg = self._calibrate(potentials)

    def _calibrate(self, potentials: dict) -> dict:
        """Shafer-Shenoy message passing in log space: every clique's marginal, scaled to the total."""
        belief = {c: np.zeros(self.domain.project(c).shape) for c in self.nodes}
        for cl, table in potentials.items():  # each potential goes to the smallest clique holding it
            host = min((c for c in self.nodes if set(cl) <= set(c)), key=self.domain.size)
            belief[host] = belief[host] + _aligned(tuple(cl), np.asarray(table, dtype=float), host)
        msgs: dict[tuple, tuple[tuple, np.ndarray]] = {}

        def send(u, v):
            table = belief[u]
            for w in self.adj[u]:
                if w != v:
                    m_attrs, m = msgs[(w, u)]
                    table = table + _aligned(m_attrs, m, u)
            msgs[(u, v)] = _logsumexp_to(u, table, set(u) & set(v))

        for root in self.roots:
            order, parent = [root], {root: None}  # breadth-first: parents before children
            for u in order:
                for v in self.adj[u]:
                    if v not in parent:
                        parent[v] = u
                        order.append(v)
            for u in reversed(order[1:]):  # collect towards the root
                send(u, parent[u])
            for u in order[1:]:  # distribute from the root
                send(parent[u], u)
        marg = {}
        for c in self.nodes:
            table = belief[c]
            for w in self.adj[c]:
                m_attrs, m = msgs[(w, c)]
                table = table + _aligned(m_attrs, m, c)
            table = np.exp(table - np.max(table))
            marg[c] = table * (self.total / table.sum())
        return marg

    # ------------------------------------------------------------------ queries
    def _component_marginal(self, query: tuple, comp: int) -> tuple[tuple, np.ndarray]:
        """Counts over ``query`` (attributes of one tree component), by a collect pass on the
        smallest subtree holding them: P = prod mu_C / prod mu_S over a connected subtree."""
        q = set(query)
        holders = [c for c in self.nodes if self.comp[c] == comp and q <= set(c)]
        if holders:
            c = min(holders, key=self.domain.size)
            return _sum_to(c, self.marg[c], q)
        keep = {c for c in self.nodes if self.comp[c] == comp}
        changed = True
        while changed:  # prune leaves that hold no query attribute their neighbour lacks
            changed = False
            for v in sorted(keep, key=self.nodes.index):
                nb = [u for u in self.adj[v] if u in keep]
                if len(keep) > 1 and len(nb) == 1 and (q & set(v)) <= set(nb[0]):
                    keep.discard(v)
                    changed = True
        root = next(c for c in self.nodes if c in keep)
        return self._collect(root, None, keep, q)

    def _collect(self, v: tuple, parent, keep: set, q: set) -> tuple[tuple, np.ndarray]:
        attrs, table = v, self.marg[v]
        if parent is not None:  # conditional of v given its separator with the parent
            sep = tuple(a for a in v if a in parent)
            s_attrs, s_tab = _sum_to(v, table, sep)
            table = _safe_divide(table, _aligned(s_attrs, s_tab, v))
        for u in self.adj[v]:
            if u in keep and u != parent:
                m_attrs, m = self._collect(u, v, keep, q)
                attrs, table = _multiply(attrs, table, m_attrs, m)
        keep_attrs = set(q)
        if parent is not None:
            keep_attrs |= set(v) & set(parent)
        return _sum_to(attrs, table, keep_attrs)

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
                attrs, table = _multiply(attrs, table, p_attrs, p / self.total if self.total > 0 else p)
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
            r_shape = self.marg[root].shape
            flat = _round_counts(self.marg[root].ravel(), n, rng)
            cells = rng.permutation(np.repeat(np.arange(flat.size), flat))
            for a, col in zip(root, np.unravel_index(cells, r_shape)):
                out[:, idx[a]] = col
            queue = deque((root, u) for u in self.adj[root])
            seen = {root}
            while queue:
                parent, c = queue.popleft()
                if c in seen:
                    continue
                seen.add(c)
                queue.extend((c, u) for u in self.adj[c] if u not in seen)
                sep = tuple(a for a in c if a in parent)
                new = tuple(a for a in c if a not in parent)
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
    marginals by mirror descent (``mbi``), sampled from its junction tree.

    Parameters
    ----------
    iters : int, default 1000
        Mirror-descent iterations per ``fit``.
    warm_start : bool, default True
        When a ``fit`` receives the measurements of the previous ``fit`` plus new ones (as an
        adaptive selector such as AIM does every round), start from the previous potentials.
    max_model_size : float, default 100.0
        Cap in MB on the junction tree (float64 cells, :func:`synthzoo.core.graph.model_size_mb`).
        Exact inference is exponential in the tree width: when the measured marginals would exceed
        the cap (e.g. every pair measured), measurements are kept in the order given -- selectors list
        the most important first -- skipping those that would break it, with a warning.
    round_iters : int, default 250
        Iterations of each between-rounds refit an adaptive selector asks for (:meth:`fit_round`);
        warm-started, so a few hundred iterations track the estimate.
    engine : {"auto", "numpy", "jax"}, default "auto"
        ``"numpy"`` (:mod:`.pgm_engine`, nothing compiled), ``"jax"`` (one jitted program per model
        structure: faster per iteration, ~20-40 s to compile) or ``"auto"`` (numpy unless
        junction-tree cells x iterations exceed 4e8).  Both run the same algorithm and agree to
        ~1e-10 of the marginals.

    Examples
    --------
    >>> sz.Synthesizer(preprocess=["privtree"], select="mst", model=PGM(iters=2500), epsilon=1.0)  # doctest: +SKIP
    """

    paper = _PAPER
    _load_limits = {"max_model_size": 4096}  # MB of junction tree a loaded model may build
    _parameter_constraints = {
        "iters": [Interval(Integral, 1, None)], "warm_start": [Boolean()],
        "max_model_size": [Interval(Real, 0, None, closed="neither")], "round_iters": [Interval(Integral, 1, None)],
        "engine": [Options("auto", "numpy", "jax")]}

    def __init__(self, iters: int = 1000, warm_start: bool = True, max_model_size: float = 100.0,
                 round_iters: int = 250, engine: str = "auto"):
        self.iters = iters
        self.warm_start = warm_start
        self.max_model_size = max_model_size
        self.round_iters = round_iters
        self.engine = engine

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

    def _fit(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> None:
        """Estimate the graphical model from noisy marginals (post-processing: spends no budget)."""
        self._estimate(domain, measurements, int(self.iters), self.engine)

    def fit_round(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> "PGM":
        """An adaptive selector's between-rounds estimate: ``round_iters`` warm-started iterations of
        the numpy engine (no compilation, and the clique structure changes every round)."""
        self._estimate(domain, check_measurements(self._label(), domain, measurements), int(self.round_iters),
                       "numpy")
        return self

    def _estimate(self, domain: Domain, measurements: list[Measurement], iters: int, engine: str) -> None:
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
        theta = warm if warm is not None else {c: np.zeros(domain.project(c).shape) for c in cliques}
        lip = pgm_engine.lipschitz(domain, cliques, meas_cliques, sigmas)
        nodes, edges = junction_tree(domain, cliques)
        if engine == "auto":  # numpy unless the iterations would outweigh JAX's compile time
            cells = sum(domain.size(c) for c in nodes)
            engine = "numpy" if cells * iters <= _NUMPY_WORK else "jax"
        if engine == "numpy":
            plan = pgm_engine.Plan(domain, nodes, edges, cliques, meas_cliques)
            theta = pgm_engine.mirror_descent(plan, [m.noisy for m in used], sigmas, theta, total, iters, lip)
        else:
            theta = self._jax_fit(domain, used, sigmas, theta, total, iters, lip)
        self._set_fitted(domain, measurements, theta, total, (nodes, edges))
        self._keys = keys
        self.warm_started_ = warm is not None
        self.engine_ = engine

    @staticmethod
    def _jax_fit(domain, used, sigmas, theta: dict, total: float, iters: int, lip: float) -> dict:
        mbi = _mbi()
        mdom = mbi.Domain(domain.attrs, domain.shape)
        import jax.numpy as jnp

        lms = [mbi.LinearMeasurement(m.noisy.ravel(), m.clique, stddev=float(s)) for m, s in zip(used, sigmas)]
        loss_fn = mbi.marginal_loss.from_linear_measurements(lms, mdom)
        start = _expand(domain, theta, [tuple(c) for c in loss_fn.cliques])
        vec = mbi.CliqueVector(mdom, list(start), {c: mbi.Factor(mdom.project(c), jnp.asarray(v))
                                                   for c, v in start.items()})
        fitted = _mirror_descent()(vec, loss_fn, total, 2.0 / (lip * total), int(iters))
        return {tuple(c): np.asarray(fitted[c].values, dtype=float) for c in fitted.cliques}

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
                    tree=None) -> None:
        cliques = list(pots)
        tree = junction_tree(domain, cliques) if tree is None else tree
        self._tree = _JunctionTree(domain, tree[0], tree[1], pots, total)
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

    # ------------------------------------------------------------------- state
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
        measurements = [Measurement.from_state(m) for m in state["measurements"]]
        pots = {tuple(p["clique"]): np.asarray(p["values"], dtype=float).reshape(p["shape"])
                for p in state["potentials"]}
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
