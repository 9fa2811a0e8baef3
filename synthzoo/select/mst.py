"""MST selection and measurement.

McKenna, Sheldon, Miklau, "Winning the NIST Contest: A scalable and general approach to
differentially private synthetic data" (Journal of Privacy and Confidentiality, 2021).
The selector's budget is split in thirds:

1. measure every one-way marginal with the Gaussian mechanism (one third, split evenly);
2. choose a maximum spanning tree over the attributes: the weight of pair ``(a, b)`` is the L1
   distance between its true two-way marginal and the estimate a model fitted to the noisy
   one-way marginals makes of it; the ``d - 1`` edges are picked one at a time (Kruskal order:
   only edges joining two components are candidates) by the exponential mechanism with
   sensitivity 1, as in MST (one third, split evenly over the edges);
3. measure the tree's two-way marginals with the Gaussian mechanism (the last third).

The estimate in step 2 comes from the pipeline's model (``model.fit`` on the one-way
measurements, then ``model.project``), so any measurement-fitting model works; without a model
it is the product of the noisy one-way marginals (what a graphical model fitted to one-way
marginals alone is).  The weights use the true marginals, but the model only ever sees noisy
measurements, so one record moves a weight by at most 1.

MST's domain compression (merging categories whose noisy count is small) is left to the
``rare_merge`` preprocessor.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..core.base import Model, Selector, register
from ..core.domain import EncodedData, Measurement
from ..core.params import Interval, Real, Sequence
from ..core.privacy import mechanisms
from ..core.privacy.ledger import Budget

_PAPER = ("McKenna, Sheldon, Miklau, Winning the NIST Contest: A scalable and general approach to "
          "differentially private synthetic data (JPC 2021)")

MST_SENSITIVITY = 1.0  # L1 weight of a pair moves by at most 1 when one record is added or removed


def independent_estimate(one_way: dict, clique: tuple) -> np.ndarray:
    """Counts over ``clique`` if its attributes were independent, from (noisy) one-way counts.

    Negative noisy counts are clipped; the total is the mean of the one-way totals."""
    probs, totals = [], []
    for a in clique:
        x = np.clip(np.asarray(one_way[a], dtype=float), 0.0, None)
        totals.append(float(np.asarray(one_way[a], dtype=float).sum()))
        s = x.sum()
        probs.append(x / s if s > 0 else np.full(x.size, 1.0 / x.size))
    out = np.array(max(np.mean(totals), 0.0)) if totals else np.array(0.0)
    for p in probs:
        out = np.multiply.outer(out, p)
    return out


class _DisjointSet:
    def __init__(self, items):
        self.parent = {x: x for x in items}

    def find(self, x):
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b) -> None:
        self.parent[self.find(a)] = self.find(b)


@register("select", "mst")
class MST(Selector):
    """MST (McKenna, Sheldon, Miklau, JPC 2021): all one-way marginals plus the two-way marginals of
    a noisy maximum spanning tree over the attribute pairs.

    Parameters
    ----------
    shares : tuple of three floats, default (1/3, 1/3, 1/3)
        Budget weights ``(one-way, selection, tree)``, normalised to sum to one; MST uses thirds.

    Examples
    --------
    >>> sz.Synthesizer(preprocess=["privtree"], select=MST(), model="pgm", epsilon=1.0)  # doctest: +SKIP
    """

    paper = _PAPER
    _parameter_constraints = {"shares": [Sequence(Interval(Real, 0, None, closed="neither"), length=3)]}

    def __init__(self, shares=(1 / 3, 1 / 3, 1 / 3)):
        self.shares = shares

    def run(self, data: EncodedData, budget: Budget, rng: np.random.Generator,
            model: Model | None = None) -> list[Measurement]:
        """Measure all one-way marginals, select a spanning tree, measure its two-way marginals."""
        self.check_run_inputs(data, budget, model)
        s_one, s_sel, _ = (float(x) / sum(self.shares) for x in self.shares)
        domain = data.domain
        attrs = domain.attrs
        private = budget.private
        total = budget.remaining
        if len(attrs) < 2:  # no pair to choose: everything goes to the one-way marginals
            s_one = 1.0

        # 1. one-way marginals, one third split evenly (MST scales each to L2 sensitivity 1/sqrt(d))
        rho_one = s_one * total * (1 - 1e-12) if private else math.inf
        one_budget = budget.sub(f"{budget.name}/one-way", rho_one)
        one = [mechanisms.measure_marginal(data, (a,), one_budget, rho_one / len(attrs)) for a in attrs]
        self.tree_ = []
        if len(attrs) < 2:
            return one

        # 2. noisy maximum spanning tree
        weights = self._weights(data, one, rng, model)
        rho_sel = s_sel * total if private else math.inf
        sel_budget = budget.sub(f"{budget.name}/select", rho_sel)
        edges = self._spanning_tree(attrs, weights, sel_budget, rho_sel)
        self.tree_ = edges  # the released choice; the exact weights are not kept

        # 3. the tree's two-way marginals with what is left, split evenly
        rho_tree = budget.remaining * (1 - 1e-12) if private else math.inf
        tree_budget = budget.sub(f"{budget.name}/tree", rho_tree)
        two = [mechanisms.measure_marginal(data, e, tree_budget, rho_tree / len(edges)) for e in edges]
        return one + two

    @staticmethod
    def _weights(data: EncodedData, one: list[Measurement], rng: np.random.Generator,
                 model: Model | None) -> dict:
        """L1 error of the one-way-only estimate on every pair (uses the true two-way marginals)."""
        pairs = list(itertools.combinations(data.domain.attrs, 2))
        if model is not None:
            model.fit_round(data.domain, one, rng.spawn(1)[0])
            estimate = model.project
        else:
            noisy = {m.clique[0]: m.noisy for m in one}
            estimate = lambda pair: independent_estimate(noisy, pair)  # noqa: E731
        return {p: float(np.abs(data.project(p) - estimate(p)).sum()) for p in pairs}

    @staticmethod
    def _spanning_tree(attrs, weights: dict, budget: Budget, rho: float) -> list:
        """Kruskal's algorithm with each edge chosen by the exponential mechanism (MST, Alg. 2)."""
        ds = _DisjointSet(attrs)
        rounds = len(attrs) - 1
        eps = mechanisms.epsilon_for_rho(rho / rounds) if budget.private else math.inf
        edges: list[tuple] = []
        candidates = list(weights)
        for _ in range(rounds):
            candidates = [e for e in candidates if ds.find(e[0]) != ds.find(e[1])]
            scores = np.array([weights[e] for e in candidates])
            i = mechanisms.exponential(budget, scores, MST_SENSITIVITY, eps,
                                       note=f"spanning-tree edge among {len(candidates)} pairs")
            a, b = candidates[i]
            ds.union(a, b)
            edges.append((a, b))
        return edges

