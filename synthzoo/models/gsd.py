"""Private-GSD: a genetic algorithm that evolves a small synthetic dataset to fit noisy marginals.

Liu, Vietri, Wu, "Generating Private Synthetic Data with Genetic Algorithms" (ICML 2023).
A population of candidate datasets of ``n_rows`` records each is evolved generation by
generation.  Fitness is the L2 (or L1) distance between a candidate's normalised marginals and
the normalised noisy measurements.  Each generation makes children from the current members:

* **mutation** -- one attribute of one random record is set to a uniformly random value;
* **crossover** -- one record takes the values of a random subset of attributes from a random
  record of another member (values move between elites column-wise, so correlated values
  travel together);

and keeps the best ``population`` datasets among members and children (elitist truncation).

The paper's speed trick makes every generation cheap: a child differs from its parent in one
record, so its marginals differ in at most two cells per measured marginal.  Each member keeps
integer counts over all measured cells; a child's fitness is its parent's plus the change on
those few cells, computed for all children at once, and only survivors get their counts
updated.  Nothing is ever recounted inside the loop.

Post-processing of noisy measurements only: no privacy cost.
"""

from __future__ import annotations

import numpy as np

from ..core.base import MeasurementModel, register
from ..core.domain import Domain, Measurement, count
from ..core.measurements import normalised_targets
from ..core.errors import ConfigError
from ..core.params import Boolean, Integral, Interval, Options
from ..core.sampling import allocate, cycle_rows
from ..core.statecheck import INTEGER, NUMBER, shaped

_PAPER = "Liu, Vietri, Wu, Generating Private Synthetic Data with Genetic Algorithms (ICML 2023)"


# ----------------------------------------------------------------------------- shared helpers
def one_way(domain: Domain, targets) -> list[np.ndarray]:
    """Per attribute, a distribution read off the smallest target holding it (uniform if none)."""
    out = []
    for a in domain.attrs:
        holders = [(c, v) for c, v, _ in targets if a in c]
        if not holders:
            out.append(np.full(domain[a], 1.0 / domain[a]))
            continue
        c, v = min(holders, key=lambda cv: cv[1].size)
        axes = tuple(i for i, x in enumerate(c) if x != a)
        p = np.clip(v.sum(axis=axes) if axes else v, 0.0, None)
        out.append(p / p.sum() if p.sum() > 0 else np.full(domain[a], 1.0 / domain[a]))
    return out


# ------------------------------------------------------------------------------------ model
@register("model", "gsd")
class GSD(MeasurementModel):
    """Private-GSD genetic algorithm (Liu, Vietri, Wu, ICML 2023).

    Parameters
    ----------
    n_rows : int, default 1000
        Records per candidate dataset (the paper's N').
    population : int, default 10
        Datasets kept after every generation (all of them are the elites).
    generations : int, default 4000
        Most generations per ``fit``; the fit stops early once the best fitness has not improved
        for ``max(200, generations // 10)`` generations.
    mutations, crossovers : int, default 40, 40
        Children made per generation by each operator.
    loss : {"l2", "l1"}, default "l2"
        The paper's default is L2.
    warm_start : bool, default True
        A repeated ``fit`` on the same domain (adaptive selectors) starts from the previous
        population instead of a fresh one.

    Examples
    --------
    >>> sz.Synthesizer(select={"name": "rap++", "rounds": "d-1", "q": 1}, model=GSD(n_rows=2000), epsilon=1.0)  # doctest: +SKIP
    """

    paper = _PAPER
    _parameter_constraints = {
        "n_rows": [Interval(Integral, 1, None)], "population": [Interval(Integral, 1, None)],
        "generations": [Interval(Integral, 0, None)], "mutations": [Interval(Integral, 0, None)],
        "crossovers": [Interval(Integral, 0, None)], "loss": [Options("l2", "l1")], "warm_start": [Boolean()]}

    def __init__(self, n_rows: int = 1000, population: int = 10, generations: int = 4000, mutations: int = 40,
                 crossovers: int = 40, loss: str = "l2", warm_start: bool = True):
        self.n_rows = n_rows
        self.population = population
        self.generations = generations
        self.mutations = mutations
        self.crossovers = crossovers
        self.loss = loss
        self.warm_start = warm_start

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"n_rows": ("int", 500, 5000), "population": ("int", 4, 40), "generations": ("int", 1000, 20000),
                "mutations": ("int", 10, 200), "crossovers": ("int", 0, 200), "loss": ("cat", ["l2", "l1"])}

    def _check_related_params(self) -> None:
        if self.mutations + self.crossovers < 1:
            self._bad("mutations", "leaves no child per generation: mutations + crossovers must be at least 1")

    # ------------------------------------------------------------------------ fit
    def _fit(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> None:
        """Evolve the population towards the noisy marginals (post-processing: spends no budget)."""
        targets, total = normalised_targets("GSD", domain, measurements)
        N, P, d = int(self.n_rows), int(self.population), len(domain)
        dtype = np.int16 if max(domain.shape) < 2 ** 15 else np.int32

        pop = getattr(self, "_pop", None)
        if not (self.warm_start and pop is not None and getattr(self, "domain_", None) == domain
                and pop.shape[1] == N):
            pop = None
        if pop is None:
            probs = one_way(domain, targets)
            pop = np.empty((P, N, d), dtype=dtype)
            for j, p in enumerate(probs):  # every member matches the one-way estimates exactly
                col = np.repeat(np.arange(p.size), allocate(p, N))
                for k in range(P):
                    pop[k, :, j] = rng.permutation(col)
        elif pop.shape[0] != P:
            pop = pop[np.arange(P) % pop.shape[0]]
        pop = np.array(pop, dtype=dtype, order="C")  # a copy: the loop updates it in place

        # cell key of a record in every target: a linear map of its codes, K = X @ W + offset
        m = len(targets)
        W = np.zeros((d, m), dtype=np.int64)
        sizes = np.array([t[1].size for t in targets], dtype=np.int64)
        offset = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        for i, (c, v, _) in enumerate(targets):
            for a, stride in zip(c, np.cumprod((1,) + v.shape[:0:-1])[::-1]):
                W[domain.index(a), i] = int(stride)
        target = np.concatenate([v.ravel() for _, v, _ in targets])
        Q = target.size

        Wf = W.astype(float)  # keys stay far below 2**53: a float matrix product (BLAS) is exact

        def keys(X):  # (..., d) -> (..., m)
            return (X @ Wf).astype(np.int64) + offset

        counts = np.stack([np.bincount(keys(pop[k]).ravel(), minlength=Q) for k in range(P)]).astype(np.int64)
        l2 = self.loss == "l2"

        def fitness(cnt):
            r = cnt / N - target
            return (r * r).sum(axis=-1) if l2 else np.abs(r).sum(axis=-1)

        fit = fitness(counts)
        shape = np.array(domain.shape)
        n_mut, n_cx = int(self.mutations), int(self.crossovers)
        C = n_mut + n_cx
        patience = max(200, int(self.generations) // 10)
        best, stale = fit.min(), 0
        gens = 0
        for gens in range(1, int(self.generations) + 1):
            parent = rng.integers(0, P, size=C)
            row = rng.integers(0, N, size=C)
            old = pop[parent, row]                                      # (C, d)
            new = old.copy()
            # mutation: one attribute to a uniformly random value
            j = rng.integers(0, d, size=n_mut)
            new[np.arange(n_mut), j] = np.floor(rng.random(n_mut) * shape[j]).astype(dtype)
            # crossover: a random subset of attributes from a record of another member
            if n_cx:
                donor = pop[rng.integers(0, P, size=n_cx), rng.integers(0, N, size=n_cx)]
                mask = rng.random((n_cx, d)) < 0.5
                mask[np.arange(n_cx), rng.integers(0, d, size=n_cx)] = True
                new[n_mut:] = np.where(mask, donor, new[n_mut:])
            ko, kn = keys(old), keys(new)                               # (C, m)
            moved = ko != kn
            a = counts[parent[:, None], ko] / N - target[ko]
            b = counts[parent[:, None], kn] / N - target[kn]
            if l2:  # (a - 1/N)^2 - a^2 + (b + 1/N)^2 - b^2
                delta = 2.0 * (b - a) / N + 2.0 / (N * N)
            else:
                delta = np.abs(a - 1.0 / N) - np.abs(a) + np.abs(b + 1.0 / N) - np.abs(b)
            child_fit = fit[parent] + np.where(moved, delta, 0.0).sum(axis=1)

            allfit = np.concatenate([fit, child_fit])
            keep = np.argsort(allfit, kind="stable")[:P]
            kids = keep[keep >= P] - P
            if kids.size:
                # surviving children take the slots of the dropped members; only their data is
                # copied, so a generation costs O(children kept * (n_rows * d + cells)), not O(P * ...)
                alive = np.zeros(P, dtype=bool)
                alive[keep[keep < P]] = True
                free = np.flatnonzero(~alive)
                src = parent[kids]
                new_pop, new_cnt = pop[src], counts[src]
                new_pop[np.arange(kids.size), row[kids]] = new[kids]
                flat = new_cnt.reshape(-1)
                base = (np.arange(kids.size) * Q)[:, None]
                np.subtract.at(flat, (base + ko[kids]).ravel(), 1)
                np.add.at(flat, (base + kn[kids]).ravel(), 1)
                pop[free], counts[free] = new_pop, new_cnt
                fit = fit.copy()
                fit[free] = child_fit[kids]
            if gens % 1000 == 0:
                fit = fitness(counts)  # drop the rounding drift of the incremental updates
            top = fit.min()
            if top < best * (1 - 1e-12):
                best, stale = top, 0
            else:
                stale += 1
                if stale >= patience or best <= 0:
                    break
        fit = fitness(counts)
        order = np.argsort(fit, kind="stable")
        pop, fit = pop[order], fit[order]
        self._fitted(domain)
        self.total_ = total
        self._pop = pop
        self.rows_ = pop[0].astype(np.int64)
        self.error_ = float(fit[0])
        self.generations_run_ = gens

    # -------------------------------------------------------------------- queries
    def _project(self, clique: tuple) -> np.ndarray:
        """Counts over ``clique`` of the best dataset, scaled to the estimated total."""
        idx = [self.domain_.index(a) for a in clique]
        return count(self.rows_[:, idx], self.domain_.project(clique).shape) * (self.total_ / self.rows_.shape[0])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` records resampled from the fittest dataset (whole copies first, then without replacement)."""
        self._require_fit()
        n = self._check_n(n)
        return self.rows_[cycle_rows(self.rows_.shape[0], n, rng)].astype(np.int64)

    def _sample_work(self) -> tuple[float, str]:
        """A copy of one saved row per record (a table lookup: bounded by the record's size)."""
        d = len(self.domain_) if getattr(self, "domain_", None) is not None else 0
        return 4.0 * d, f"a copy of {d} codes"

    # ---------------------------------------------------------------------- state
    _state_spec = {"total": NUMBER, "rows": [[INTEGER]]}

    def _get_state(self) -> dict:
        """The estimated total and the fittest synthetic dataset (a function of the noisy
        measurements and the generator's randomness only)."""
        return {"total": self.total_, "rows": self.rows_.tolist()}

    def _set_state(self, state: dict, domain: Domain) -> None:
        total = float(state["total"])
        # one code per attribute in every row: rows of unequal lengths, or of another width that reshape(-1, d)
        # silently regrouped into other records, are named
        raw = shaped(state["rows"], [len(state["rows"]), len(domain)], "model file: model_state.rows")
        if not np.all(np.mod(raw, 1) == 0):
            raise ConfigError("GSD.set_state: saved rows must hold integer codes")
        rows = raw.astype(np.int64).reshape(-1, len(domain))
        if rows.shape[0] == 0:
            raise ConfigError("GSD.set_state: no saved rows")
        if rows.size and (rows.min() < 0 or np.any(rows.max(axis=0) >= np.array(domain.shape))):
            raise ConfigError("GSD.set_state: saved rows fall outside the domain")
        self._fitted(domain)
        self.total_, self.rows_ = total, rows
        self._pop = rows[None].astype(np.int16 if max(domain.shape) < 2 ** 15 else np.int32)
