"""InDif marginal selection and measurement, as in PrivSyn.

Zhang, Wang, Li, He, Chen, Chen, "PrivSyn: Differentially Private Data Synthesis"
(USENIX Security 2021), Section 4 (DenseMarg).  Steps:

1. **InDif scores.**  For every pair of attributes ``(a, b)``,
   ``InDif(a, b) = sum_cells |M_ab - M_a x M_b / n|`` on counts: how far the pair is from
   independent.  One record changes a score by at most 4, so the vector of ``m`` scores has
   L2 sensitivity ``4 sqrt(m)``; it is released with one Gaussian mechanism using a share
   ``select_share`` of the budget (per-score noise ``4 sqrt(m / (2 rho_sel))``).
2. **Greedy selection.**  Measuring a marginal with ``c`` cells under the Gaussian mechanism,
   with the budget split ``rho_i ~ c_i^(2/3)`` (the split that minimises the total expected L1
   noise), costs ``sqrt(S / (pi rho)) * S`` in expected L1 error where ``S = sum c_i^(2/3)``;
   leaving a pair out costs its InDif score.  Pairs are added one at a time, each time the one
   that lowers (noise error of the chosen set + InDif of the pairs left out) the most, until
   none does.
3. **Marginal combination** (optional).  Triangles of selected pairs whose three-way marginal is
   small are measured as one triple instead of three pairs.
4. **Measurement.**  Every attribute's one-way marginal and every selected marginal, each with
   the Gaussian mechanism (L2 sensitivity 1), the remaining budget split ``rho_i ~ c_i^(2/3)``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..core.base import Model, Selector, register
from ..core.domain import EncodedData, Measurement
from ..core.params import Boolean, Integral, Interval, Real
from ..core.privacy import mechanisms
from ..core.privacy.ledger import Budget
from ..core.scores import INDIF_SENSITIVITY, indif_scores

_PAPER = "Zhang et al., PrivSyn: Differentially Private Data Synthesis (USENIX Security 2021)"

def noisy_indif_scores(data: EncodedData, budget: Budget, rho: float):
    """Exact and noisy InDif scores: one Gaussian release of the whole score vector.

    The vector of ``m`` scores has L2 sensitivity ``4 sqrt(m)``; with ``rho`` the per-score noise
    standard deviation is ``4 sqrt(m / (2 rho))``.  Returns ``(pairs, exact, noisy, sigma)``.
    """
    pairs, exact = indif_scores(data)
    if not pairs:
        return pairs, exact, exact.copy(), 0.0
    sens = INDIF_SENSITIVITY * math.sqrt(len(pairs))
    noisy, sigma = mechanisms.gaussian(budget, exact, sens, rho, mechanism="gaussian",
                                       note=f"InDif scores of {len(pairs)} pairs")
    return pairs, exact, noisy, sigma


def noise_error(cells: np.ndarray, rho: float) -> float:
    """Expected total L1 noise of Gaussian-measured marginals with ``cells`` cells, budget ``rho`` split
    ``rho_i ~ cells_i^(2/3)`` (0 when ``rho`` is infinite)."""
    if math.isinf(rho):
        return 0.0
    s = float(np.sum(np.asarray(cells, dtype=float) ** (2.0 / 3.0)))
    return math.sqrt(s / (math.pi * rho)) * s


def greedy_select(scores: np.ndarray, pair_cells: np.ndarray, base_cells: np.ndarray, rho: float,
                  max_pairs: int | None = None) -> list[int]:
    """PrivSyn's greedy choice of pairs: indices (in order chosen) minimising noise + dependency error.

    ``base_cells`` are the cells of marginals measured in any case (the one-way marginals); they
    share the measurement budget ``rho`` and so weigh on the noise of every choice.
    """
    scores = np.asarray(scores, dtype=float)
    w = np.asarray(pair_cells, dtype=float) ** (2.0 / 3.0)
    s_sel = float(np.sum(np.asarray(base_cells, dtype=float) ** (2.0 / 3.0)))
    inv = 0.0 if math.isinf(rho) else 1.0 / math.sqrt(math.pi * rho)
    free = np.ones(scores.size, dtype=bool)
    left_out = float(scores.sum())
    current = s_sel ** 1.5 * inv + left_out
    chosen: list[int] = []
    limit = scores.size if max_pairs is None else min(int(max_pairs), scores.size)
    while len(chosen) < limit:
        cand = (s_sel + w) ** 1.5 * inv + (left_out - scores)
        cand[~free] = np.inf
        j = int(np.argmin(cand))
        if not cand[j] < current:
            break
        chosen.append(j)
        free[j] = False
        s_sel += w[j]
        left_out -= scores[j]
        current = float(cand[j])
    return chosen


def combine_triangles(pairs: list[tuple[str, str]], domain, max_cells: int, order: dict) -> list[tuple]:
    """PrivSyn's marginal combination: merge triangles of selected pairs into three-way marginals.

    A triangle is merged when its three-way marginal has at most ``max_cells`` cells and it shares at
    most one attribute pair's worth (two attributes) with triangles merged before; pairs covered by a
    merged triangle are dropped.  Cliques come back with attributes in domain order.
    """
    adj: dict[str, set] = {}
    for a, b in pairs:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    tris = set()
    for a, b in pairs:
        for c in adj[a] & adj[b]:
            tris.add(tuple(sorted((a, b, c), key=order.__getitem__)))
    # smallest marginals first: they cost the least noise
    tris = sorted(tris, key=lambda t: (domain.size(t), [order[x] for x in t]))
    used: set[str] = set()
    merged: list[tuple] = []
    covered: set[frozenset] = set()
    for t in tris:
        if domain.size(t) > max_cells or len(set(t) & used) > 2:
            continue
        edges = {frozenset(e) for e in itertools.combinations(t, 2)}
        if edges <= covered:  # nothing new
            continue
        merged.append(t)
        used.update(t)
        covered |= edges
    rest = [tuple(sorted(p, key=order.__getitem__)) for p in pairs if frozenset(p) not in covered]
    return merged + rest


@register("select", "indif")
class InDif(Selector):
    """PrivSyn's InDif selection + Gaussian measurement (Zhang et al., USENIX Security 2021).

    Spends the whole budget it is given: ``select_share`` of it on the noisy InDif scores, the
    rest on measuring every one-way marginal and the selected marginals.

    Parameters
    ----------
    select_share : float, default 0.1
        Fraction of the budget for the InDif scores, in (0, 1).
    combine : bool, default False
        Merge triangles of selected pairs into three-way marginals (PrivSyn's combination).
    combine_max_cells : int, default 5000
        Largest three-way marginal a combination may create.
    max_pairs : int or None, default None
        Cap on the number of selected pairs (None: as many as the greedy rule wants).

    Examples
    --------
    >>> sz.Synthesizer(select=InDif(select_share=0.2), model="gum", epsilon=1.0)  # doctest: +SKIP
    """

    paper = _PAPER
    _parameter_constraints = {"select_share": [Interval(Real, 0, 1, closed="neither")], "combine": [Boolean()],
                              "combine_max_cells": [Interval(Integral, 1, None)],
                              "max_pairs": [None, Interval(Integral, 0, None)]}

    def __init__(self, select_share: float = 0.1, combine: bool = False, combine_max_cells: int = 5000,
                 max_pairs: int | None = None):
        self.select_share = select_share
        self.combine = combine
        self.combine_max_cells = combine_max_cells
        self.max_pairs = max_pairs

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"select_share": ("float", 0.02, 0.3), "combine": ("cat", [False, True])}

    def run(self, data: EncodedData, budget: Budget, rng: np.random.Generator,
            model: Model | None = None) -> list[Measurement]:
        """Select pairs by noisy InDif, then measure all one-way and the selected marginals."""
        self.check_run_inputs(data, budget, model)
        domain = data.domain
        order = {a: i for i, a in enumerate(domain.attrs)}
        private = budget.private
        total = budget.remaining

        pairs: list[tuple[str, str]] = []
        selected: list[tuple] = []
        noisy = np.zeros(0)
        sigma_sel = 0.0
        if len(domain) >= 2:
            rho_sel = self.select_share * total if private else math.inf
            sel_budget = budget.sub(f"{budget.name}/scores", rho_sel)
            pairs, _, noisy, sigma_sel = noisy_indif_scores(data, sel_budget, rho_sel)
            rho_meas = budget.remaining if private else math.inf
            pair_cells = np.array([domain.size(p) for p in pairs], dtype=float)
            base_cells = np.array(domain.shape, dtype=float)
            chosen = greedy_select(noisy, pair_cells, base_cells, rho_meas, self.max_pairs)
            selected = [pairs[i] for i in chosen]
            if self.combine and selected:
                selected = combine_triangles(selected, domain, int(self.combine_max_cells), order)
        # fitted attributes for inspection (sklearn style): what was released and chosen
        self.pairs_, self.scores_noisy_, self.sigma_select_ = pairs, noisy, sigma_sel
        self.selected_ = selected

        cliques = [(a,) for a in domain.attrs] + [tuple(c) for c in selected]
        return measure(data, cliques, budget)


def measure(data: EncodedData, cliques: list[tuple], budget: Budget) -> list[Measurement]:
    """Discrete Gaussian measurement (L2 sensitivity 1) of each clique's counts, spending what is left of
    ``budget`` split ``rho_i ~ cells_i^(2/3)`` (PrivSyn's optimal split for L1 error)."""
    if not cliques:
        return []
    cells = np.array([data.domain.size(c) for c in cliques], dtype=float)
    w = cells ** (2.0 / 3.0)
    private = budget.private
    rho_all = budget.remaining if private else math.inf
    # a hair under the remainder so that float rounding never trips the stage's limit
    rhos = w / w.sum() * rho_all * (1 - 1e-12) if private else np.full(len(cliques), math.inf)
    meas_budget = budget.sub(f"{budget.name}/measure", float(rhos.sum()) if private else math.inf)
    return [mechanisms.measure_marginal(data, clique, meas_budget, float(rho)) for clique, rho in zip(cliques, rhos)]
