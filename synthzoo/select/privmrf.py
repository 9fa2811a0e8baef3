"""PrivMRF selection: a DP Markov network, theta-useful marginals, refinement by noisy L1 criteria.

Cai, Lei, Wei, Xiao, "Data Synthesis via Differentially Private Markov Random Fields" (PVLDB 14(11),
2021); the defaults follow the authors' code (``caicre/PrivMRF``, ``init_measure=0``, TVD scores).
The selector's budget (zCDP rho) is split ``graph_share`` (paper's beta1 = 0.1) for the Markov
network, ``criteria_share`` (beta3 = 0.1) for the refinement criteria and the rest (0.8) for the
marginals, which all get the same share.

1. **Markov network.**  A noisy record count ``n_hat`` (5 % of the graph share) and the noisy
   pairwise dependency of every attribute pair: ``InDif(a, b) = sum |M_ab - M_a x M_b / n|`` on
   counts, i.e. ``2 n TVD(P_ab, P_a x P_b)`` (PrivMRF's "pairwise TVD" score), released as one
   vector by the Gaussian mechanism.  One added or removed record moves one score by less than 4
   (as for PrivSyn's InDif), so the vector of ``m`` scores has L2 sensitivity ``4 sqrt(m)``.
   Edges are then added greedily: each time the absent edge whose addition maximises
   ``sum of noisy TVDs over the edges of the triangulated graph - 1e-8 * junction-tree cells``,
   among those that keep the junction tree within ``max_model_size`` MB, until none fits.
2. **Initial marginals.**  A marginal is *theta-useful* when its cells hold on average ``theta``
   times the mean absolute noise: ``cells <= n_hat / (theta * sqrt(2/pi) * sigma)``, with sigma the
   noise the marginals will get.  Inside every maximal clique of the network, a greedy Bayesian
   network picks, one attribute at a time, the (attribute, parent set) with the best
   correlation-based score ``sum_p TVD(a, p) / sqrt(|P| + sum_{p,q in P} TVD(p, q))`` among the
   maximal theta-useful parent sets (at most ``max_attrs - 1`` parents).  Each attribute keeps its
   best such marginal; those contained in another are dropped, attributes left uncovered get
   their one-way marginal, and other marginals of the Bayesian networks fill the list up to
   ``d``.  All are measured with the Gaussian mechanism (L2 sensitivity 1).
3. **Refinement** (the paper's "entropy descent"; ``steps = min(d // 2, 8)`` rounds adding
   ``int(refine_ratio * d)`` marginals in all).  Candidates are the subsets of the network's
   maximal cliques with at most ``max_attrs`` attributes that are theta-useful (one-way marginals
   always), weighted ``|C|^2 / #candidates of C`` summed over the cliques ``C`` holding them.  Each
   round the model is fitted to every measurement so far; up to ``max_candidates`` candidates are
   drawn by weight; their criteria ``||M_r(D) - M_r(model)||_1`` (counts) are released as one vector
   by the Gaussian mechanism with ``criteria_share / steps`` of the budget; the largest noisy ones
   are measured.  Sensitivity: the model's answer depends on noisy measurements only
   (post-processing), and one added or removed record changes one cell of ``M_r(D)`` by 1, so each
   criterion moves by at most 1 and the vector of ``k`` criteria by at most ``sqrt(k)`` in L2 --
   the add/remove neighbouring relation used for every Gaussian measurement in this package
   (PrivMRF's code charges the same unit per criterion).  Picking the top ones from a released
   vector is post-processing.  Queried candidates in the lower half of the noisy criteria have
   their weight halved.  The last round measures with exactly what is left, so the selector
   spends all of its budget and never more.

Where this differs from the authors' code: the search keeps the triangulated network (fill-in
edges are not candidates again) and evaluates the edges' gains lazily (lazy greedy), which takes
the search from O(d^4) to about O(d^2) triangulations; a maximal clique's full marginal is a
refinement candidate when it is theta-useful; the record count is charged to the budget (the
code draws it with 100 times less noise than its budget allows, uncharged); the theta-useful cap
never falls below ``n_hat / theta`` (noise under one count; also the cap of a non-private run);
already measured marginals are not candidates; the halved weights are those of the lower half by
noisy criterion (the code halves an arbitrary half); the parent-set score sums the TVDs among the
parents (the code indexes them by position); attribute hierarchies are left to the preprocessors.
The true marginals are counted once (``EncodedData.project`` caches them), and each round's
criteria are computed in one vectorised pass; the model is reached through ``fit_round`` (its
between-rounds refit, ``fit`` by default) and ``project`` only, so any measurement-fitting model
works.
"""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np

from ..core.base import Model, Selector, register
from ..core.domain import Domain, EncodedData, Measurement
from ..core.graph import bits, triangulate
from ..core.params import Integral, Interval, Real
from ..core.privacy import mechanisms
from ..core.privacy.ledger import Budget
from ..core.scores import INDIF_SENSITIVITY, indif_scores, model_errors

_PAPER = ("Cai, Lei, Wei, Xiao, Data Synthesis via Differentially Private Markov Random Fields "
          "(PVLDB 14(11), 2021)")

BIAS = math.sqrt(2.0 / math.pi)  # mean absolute value of N(0, 1)
COUNT_SHARE = 0.05  # share of the graph budget spent on the noisy record count
SIZE_PENALTY = 1e-8  # PrivMRF's penalty per junction-tree cell in the network score (TVD units)


# ------------------------------------------------------------------------ graph helpers
def _cells(mask: int, shape: list[int]) -> int:
    out = 1
    for u in bits(mask):
        out *= shape[u]
    return out


def maximal_sets(items: list[int], sizes: list[int], limit: float, kmax: int) -> list[tuple]:
    """Subsets ``S`` of ``items`` with ``prod(sizes[S]) <= limit`` and ``|S| <= kmax`` that are maximal
    (no feasible superset); ``[]`` when even the empty set does not fit (``limit < 1``)."""
    if limit < 1:
        return []
    if not items or kmax <= 0:
        return [()]
    x, rest = items[-1], items[:-1]
    without = maximal_sets(rest, sizes, limit, kmax)
    with_x = maximal_sets(rest, sizes, limit / sizes[x], kmax - 1)
    out = [s for s in without if s not in with_x]  # a subset of some S + x is S itself (see PrivMRF)
    return out + [s + (x,) for s in with_x]


def subsets_within(items: list[int], sizes: list[int], limit: float, kmax: int) -> list[tuple]:
    """Non-empty subsets of ``items`` with at most ``kmax`` elements whose cells are within ``limit``
    (every single item counts), in increasing lexicographic order of positions."""
    out: list[tuple] = []

    def grow(start, prefix, cells):
        for i in range(start, len(items)):
            c = cells * sizes[items[i]]
            if prefix and c > limit:
                continue
            s = prefix + (items[i],)
            out.append(s)
            if len(s) < kmax:
                grow(i + 1, s, c)

    grow(0, (), 1)
    return out


@register("select", "privmrf")
class PrivMRF(Selector):
    """PrivMRF (Cai, Lei, Wei, Xiao, PVLDB 2021): a Markov network from noisy pairwise TVDs under a
    junction-tree size cap, theta-useful initial marginals from greedy Bayesian networks inside its
    cliques, then rounds of refinement that measure the marginals with the largest Gaussian-noised
    L1 error of the current model.

    Parameters
    ----------
    graph_share : float, default 0.1
        Budget share for the Markov network (noisy pair TVDs and record count); paper 0.1.
    criteria_share : float, default 0.1
        Budget share for the noisy refinement criteria; paper 0.1.  The rest (0.8) goes to the
        marginals, the same share each.
    theta : float, default 6.0
        Theta-usefulness; a measured marginal has at most ``n / (theta * sqrt(2/pi) * sigma)`` cells.
    refine_ratio : float, default 0.8
        The refinement measures ``int(refine_ratio * d)`` marginals (paper's t = 0.8).
    steps : int or None, default None
        Refinement rounds; None means ``min(d // 2, 8)`` as in the authors' code.
    max_candidates : int, default 400
        Candidates whose criteria are released per round (drawn by weight).
    max_attrs : int, default 6
        Most attributes in a measured marginal; the code uses 6 (10 on binary data sets).
    max_model_size : float, default 80.0
        Cap in MB (float64 cells) on the network's junction tree.  The authors' code allows 5e7
        cells (381 MB) on a GPU; 80 MB (AIM's default) keeps CPU fits practical.

    Examples
    --------
    >>> sz.Synthesizer(preprocess=["privtree"], select=PrivMRF(theta=6.0), model="pgm", epsilon=1.0)  # doctest: +SKIP
    """

    paper = _PAPER
    _tags = {"adaptive": True}
    _parameter_constraints = {
        "graph_share": [Interval(Real, 0, 1, closed="neither")],
        "criteria_share": [Interval(Real, 0, 1, closed="neither")],
        "theta": [Interval(Real, 0, None, closed="neither")], "refine_ratio": [Interval(Real, 0, None)],
        "steps": [None, Interval(Integral, 1, None)], "max_candidates": [Interval(Integral, 1, None)],
        "max_attrs": [Interval(Integral, 1, None)], "max_model_size": [Interval(Real, 0, None, closed="neither")]}

    def __init__(self, graph_share: float = 0.1, criteria_share: float = 0.1, theta: float = 6.0,
                 refine_ratio: float = 0.8, steps: int | None = None, max_candidates: int = 400,
                 max_attrs: int = 6, max_model_size: float = 80.0):
        self.graph_share = graph_share
        self.criteria_share = criteria_share
        self.theta = theta
        self.refine_ratio = refine_ratio
        self.steps = steps
        self.max_candidates = max_candidates
        self.max_attrs = max_attrs
        self.max_model_size = max_model_size

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"theta": ("float", 2.0, 20.0), "refine_ratio": ("float", 0.2, 2.0),
                "max_model_size": ("log", 1.0, 100.0)}

    def _check_related_params(self) -> None:
        if not self.graph_share + self.criteria_share < 1:
            self._bad("criteria_share", f"leaves nothing for the marginals: graph_share + criteria_share must be "
                                        f"below 1 (graph_share is {self.graph_share!r})")

    # ------------------------------------------------------------------------- run
    def run(self, data: EncodedData, budget: Budget, rng: np.random.Generator,
            model: Model | None = None) -> list[Measurement]:
        """Build the network, measure the initial marginals, then refine round by round until the
        budget is spent; returns every measurement in the order taken."""
        self.check_run_inputs(data, budget, model)
        domain = data.domain
        attrs = domain.attrs
        d = len(attrs)
        private = budget.private
        rho = budget.remaining

        def share(x: float) -> float:
            return x * rho if private else math.inf

        # 1. the Markov network: noisy record count, noisy pair TVDs, greedy edges under the size cap
        rho_count = share(self.graph_share * (COUNT_SHARE if d >= 2 else 1.0))
        rho_pairs = share(self.graph_share * (1.0 - COUNT_SHARE))
        n_hat = max(mechanisms.noisy_count(budget, data.n, rho_count, note="record count (theta-usefulness)"), 1.0)
        tvd = np.zeros((d, d))
        sigma_pairs = 0.0
        if d >= 2:
            pairs, exact = indif_scores(data)
            sens = INDIF_SENSITIVITY * math.sqrt(len(pairs))
            noisy, sigma_pairs = mechanisms.gaussian(budget, exact, sens, rho_pairs,
                                                     note=f"pairwise dependency (TVD) of {len(pairs)} pairs")
            iu = np.triu_indices(d, 1)  # combinations() order == row-major upper triangle
            tvd[iu] = noisy / (2.0 * n_hat)
            tvd = tvd + tvd.T
        cap_cells = float(self.max_model_size) * 2 ** 20 / 8
        cliques = self._network(domain, tvd, cap_cells)

        # 2. theta-useful initial marginals (noise estimated for d initial + t*d refinement marginals)
        r_want = int(self.refine_ratio * d)
        rho_marg = share(1.0 - self.graph_share - self.criteria_share)
        limit = self._useful_cells(n_hat, rho_marg / (d + self.refine_ratio * d) if private else math.inf)
        initial = self._initial(domain, cliques, tvd, limit, rng)

        # plan the refinement: candidates, number of marginals and rounds
        limit = self._useful_cells(n_hat, rho_marg / (len(initial) + r_want) if private else math.inf)
        weights = self._candidates(domain, cliques, limit, set(initial))
        R = min(r_want, len(weights))
        S = min(R, min(d // 2, 8) if self.steps is None else int(self.steps))
        per_step = [R // S + (1 if i < R % S else 0) for i in range(S)] if S else []

        if S:
            rho_crit = share(self.criteria_share) / S if private else math.inf
            rho_m = (budget.remaining - share(self.criteria_share)) / (len(initial) + R) if private else math.inf
        else:  # nothing to refine: the criteria's share goes to the initial marginals
            rho_crit = 0.0
            rho_m = budget.remaining * (1 - 1e-9) / len(initial) if private else math.inf
        measurements = [mechanisms.measure_marginal(data, cl, budget, rho_m) for cl in initial]
        measured = list(initial)
        history = []

        # 3. refinement rounds
        cand = list(weights)
        w = np.array([weights[c] for c in cand], dtype=float)
        for step, m_step in enumerate(per_step, start=1):
            last = step == S
            model.fit_round(domain, measurements, rng.spawn(1)[0])  # between rounds: the model's refit
            if len(cand) > self.max_candidates:
                draw = rng.choice(len(cand), size=int(self.max_candidates), replace=True, p=w / w.sum())
                query = np.unique(draw)
            else:
                query = np.arange(len(cand))
            cls = [cand[i] for i in query]
            exact = model_errors(cls, data, model)
            # one criterion moves by <= 1 per added/removed record: L2 sensitivity sqrt(k) for k of them
            noisy, sigma_c = mechanisms.gaussian(budget, exact, math.sqrt(len(cls)), rho_crit,
                                                 note=f"PrivMRF round {step}: L1 criteria of {len(cls)} marginals")
            order = np.argsort(-noisy, kind="stable")
            take = order[:m_step]
            low = order[(len(order) + 1) // 2:]
            w[query[low]] /= 2  # lower half of this round's noisy criteria: drawn less often from now on
            chosen = [cls[i] for i in take]
            if last and private:
                rho_m = budget.remaining * (1 - 1e-9) / len(chosen)  # exactly what is left
            for cl in chosen:
                measurements.append(mechanisms.measure_marginal(data, cl, budget, rho_m))
                measured.append(cl)
            keep = np.ones(len(cand), dtype=bool)
            keep[query[take]] = False
            cand = [c for c, k in zip(cand, keep) if k]
            w = w[keep]
            history.append({"round": step, "chosen": chosen, "candidates": len(cls), "sigma_criteria": sigma_c,
                            "sigma": mechanisms.gaussian_sigma(rho_m, 1.0)})

        self.n_hat_ = n_hat
        self.sigma_pairs_ = float(sigma_pairs)
        self.cliques_ = cliques
        self.initial_ = initial
        self.history_ = history
        self.selected_ = measured
        return measurements

    # ------------------------------------------------------------------ phases
    def _useful_cells(self, n_hat: float, rho_each: float) -> float:
        """Theta-useful cap on a marginal's cells for per-marginal budget ``rho_each``."""
        sigma = mechanisms.gaussian_sigma(rho_each, 1.0)
        return n_hat / (float(self.theta) * max(1.0, BIAS * sigma))

    def _network(self, domain: Domain, tvd: np.ndarray, cap_cells: float) -> list[tuple]:
        """Greedy Markov network on the noisy TVDs; returns the maximal cliques of its triangulation
        (attributes in domain order) in a deterministic order.

        Each step adds the absent edge with the largest gain in ``sum of noisy TVDs over the edges of
        the triangulated graph - SIZE_PENALTY * junction-tree cells`` among those that keep the tree
        within ``cap_cells``; the graph is kept triangulated.  Gains are evaluated lazily (as in lazy
        greedy): an edge's gain is recomputed only when its last known gain is the best, and accepted
        when it still beats every other last known gain; an edge past the cap is dropped for good
        (edges only make the tree larger)."""
        d = len(domain)
        shape = list(domain.shape)
        logs = [math.log(s) for s in shape]
        tv = tvd.tolist()

        memo: dict = {}

        def evaluate(adj):
            chordal, cl = triangulate(adj, logs, memo)
            cells = sum(_cells(c, shape) for c in cl)
            score = sum(tv[u][v] for u in range(d) for v in bits(chordal[u] >> (u + 1) << (u + 1)))
            return chordal, cells, score - SIZE_PENALTY * cells

        def with_edge(adj, i, j):
            trial = list(adj)
            trial[i] |= 1 << j
            trial[j] |= 1 << i
            return trial

        adj = [0] * d
        adj, _, current = evaluate(adj)
        heap = []  # (-last known gain, position, edge, graph version of that gain)
        for pos, (i, j) in enumerate(itertools.combinations(range(d), 2)):
            heap.append((-math.inf, pos, (i, j), -1))
        heapq.heapify(heap)
        version = 0
        while heap:
            neg, pos, (i, j), seen = heapq.heappop(heap)
            if adj[i] >> j & 1:
                continue  # already in (a fill-in edge)
            if seen == version:  # fresh and better than every last known gain: take it
                adj, _, current = evaluate(with_edge(adj, i, j))
                version += 1
                continue
            chordal, cells, score = evaluate(with_edge(adj, i, j))
            if cells > cap_cells:
                continue
            heapq.heappush(heap, (-(score - current), pos, (i, j), version))
        _, cl = triangulate(adj, logs)
        out = [tuple(domain.attrs[u] for u in bits(c)) for c in cl]
        return sorted(out, key=lambda c: [domain.index(a) for a in c])

    def _initial(self, domain: Domain, cliques: list[tuple], tvd: np.ndarray, limit: float,
                 rng: np.random.Generator) -> list[tuple]:
        """Greedy Bayesian network inside each clique; each attribute's best (attribute + parents)
        marginal, one-way marginals for the uncovered, other network marginals up to ``d``."""
        attrs = domain.attrs
        d = len(attrs)
        sizes = list(domain.shape)
        best: dict[int, tuple] = {}  # attribute -> (score, marginal)
        found: list[tuple] = []
        kmax = int(self.max_attrs) - 1
        for clique in cliques:
            remaining = [domain.index(a) for a in clique]
            placed = [remaining.pop(int(rng.integers(len(remaining))))]
            while remaining:
                top, top_score = None, 0.0
                for a in remaining:
                    for ps in maximal_sets(sorted(placed), sizes, limit / sizes[a], kmax):
                        if not ps:
                            continue
                        num = float(sum(tvd[a, p] for p in ps))
                        den = len(ps) + float(sum(tvd[p, q] for p, q in itertools.combinations(ps, 2)))
                        score = num / math.sqrt(max(den, 1.0))
                        if score > top_score:
                            top, top_score = (a, ps), score
                if top is None:
                    break  # no theta-useful parent set with a positive score: PrivMRF stops here
                a, ps = top
                marg = tuple(sorted((a, *ps)))
                found.append(marg)
                if a not in best or best[a][0] < top_score:
                    best[a] = (top_score, marg)
                remaining.remove(a)
                placed.append(a)
        chosen = _drop_contained([best[a][1] for a in sorted(best)])
        covered = {u for m in chosen for u in m}
        chosen += [(u,) for u in range(d) if u not in covered]
        extra = [m for m in _drop_contained(found) if not any(set(m) <= set(c) for c in chosen)]
        for i in rng.permutation(len(extra)):
            if len(chosen) >= d:
                break
            if not any(set(extra[i]) <= set(c) for c in chosen):
                chosen.append(extra[i])
        return [tuple(attrs[u] for u in m) for m in chosen]

    def _candidates(self, domain: Domain, cliques: list[tuple], limit: float, measured: set) -> dict:
        """Refinement candidates (theta-useful subsets of the maximal cliques, at most ``max_attrs``
        attributes) with PrivMRF's weights, measured marginals left out."""
        sizes = list(domain.shape)
        weights: dict[tuple, float] = {}
        for clique in cliques:
            idx = [domain.index(a) for a in clique]
            subs = subsets_within(idx, sizes, limit, int(self.max_attrs))
            wc = len(clique) ** 2 / len(subs)
            for s in subs:
                cl = tuple(domain.attrs[u] for u in s)
                weights[cl] = weights.get(cl, 0.0) + wc
        return {c: v for c, v in weights.items() if c not in measured}


def _drop_contained(marginals: list[tuple]) -> list[tuple]:
    """Distinct marginals not contained in another one of the list (largest first, then by position)."""
    uniq = sorted(set(marginals), key=lambda m: (-len(m), m))
    out: list[tuple] = []
    for m in uniq:
        if not any(set(m) <= set(o) for o in out):
            out.append(m)
    return out
