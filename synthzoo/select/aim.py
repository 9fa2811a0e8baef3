"""AIM: adaptive and iterative selection and measurement of marginals.

McKenna, Mullins, Sheldon, Miklau, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data" (VLDB 2022), Algorithm 1.

* **Workload and candidates.**  The workload is every ``degree``-way marginal; the candidates
  are its downward closure, each weighted by ``w_r = sum_{s in workload} |r & s|``.
* **Initialisation.**  Every one-way marginal is measured with the Gaussian mechanism.
* **Rounds.**  The model (any measurement-fitting model) is fitted to the measurements so far and
  answers ``model.project(r)``.  Among the candidates whose addition keeps the model small
  (junction-tree size at most ``max_model_size * rho_used / rho`` MB, or already covered by a
  measured marginal), one is chosen by the exponential mechanism on the quality score
  ``w_r * (||M_r(D) - M_r(p_hat)||_1 - sqrt(2/pi) * sigma * n_r)`` (sensitivity ``max w_r``), and
  measured with Gaussian noise ``sigma``.
* **Annealing.**  Rounds start with ``rho_sel = 0.1 rho / T`` for selection and ``rho_meas = 0.9 rho / T``
  for measurement (``T = 16 d`` by default).  When a measurement moves the model's estimate of its
  marginal by less than ``sqrt(2/pi) * sigma * n_r`` (the expected size of its noise), sigma is
  halved and epsilon doubled.  A between-rounds estimate may stop early (cheaper rounds); when it
  moved by less than 1.15 times that, the model refines it first (:meth:`Model.refine_round`), so
  only converged estimates decide.  When less than two rounds' worth is left, the last round takes
  exactly what remains (split 0.1 / 0.9), so the selector spends all its budget and never more.

**Without privacy** (``epsilon=None``) measurements are exact and there is no budget to pace the model's
growth: the cap is ``max_model_size`` from the first round, the candidate with the largest weighted error
is taken, and a round ends the run when that candidate is already measured.  Every 2-way marginal a table
has can then enter, and the junction tree that holds them grows towards the cap whatever the rows: on
``make_demo(800)`` (11 columns) it reached 44 MB in round 17 and 80 MB by the last, 213 CPU s against
about 2 for the private run.  A smaller ``max_model_size`` makes a quicker non-private baseline.

The true marginals are counted once (``EncodedData.project`` caches them) and each round's
scores are computed in one vectorised pass over all candidates.  AIM talks to the model only
through ``fit`` and ``project``; a model may keep a warm start between the repeated fits.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..core.base import Model, Selector, register
from ..core.domain import Domain, EncodedData, Measurement
from ..core.errors import ConfigError
from ..core.graph import candidate_cells
from ..core.params import Integral, Interval, Real
from ..core.privacy import mechanisms
from ..core.privacy.ledger import Budget
from ..core.scores import model_errors

_PAPER = ("McKenna, Mullins, Sheldon, Miklau, AIM: An Adaptive and Iterative Mechanism for Differentially "
          "Private Synthetic Data (VLDB 2022)")

BIAS = math.sqrt(2.0 / math.pi)  # E|N(0, sigma^2)| = sqrt(2/pi) sigma
#: The annealing test asks the model to refine its estimate (:meth:`Model.refine_round`) when the
#: measured marginal moved by less than this multiple of the threshold: a refit stopped early is not
#: where it converges, so only estimates near the threshold can flip the decision.  With PGM's warm
#: start at the new measurement, the refined movement was 0.94-1.22 times the early one over 1,185
#: rounds of 30 adult runs (refining every round); only an early estimate above the threshold that a
#: refinement takes 13 % lower could flip, which none did.  1.5 (before that warm start, when early
#: estimates had moved 85-95 % of the way) refined 16 of 71 rounds at 300,000 rows, changing no decision.
REFINE_MARGIN = 1.15


def workload_candidates(attrs, degree: int) -> dict[tuple, float]:
    """Downward closure of the all-``degree``-way workload with AIM's weights ``sum_s |r & s|``."""
    attrs = tuple(attrs)
    k = min(int(degree), len(attrs))
    workload = [frozenset(w) for w in itertools.combinations(attrs, k)]
    out: dict[tuple, float] = {}
    for size in range(1, k + 1):
        for r in itertools.combinations(attrs, size):
            s = frozenset(r)
            out[r] = float(sum(len(s & w) for w in workload))
    return out


@register("select", "aim")
class AIM(Selector):
    """AIM (McKenna, Mullins, Sheldon, Miklau, VLDB 2022): adaptive selection of marginals by the
    exponential mechanism against the model's current estimate, with budget annealing.

    Parameters
    ----------
    degree : int, default 2
        The workload is every ``degree``-way marginal (2 or 3 typically).
    rounds : int or None, default None
        ``T``, which sets the initial per-round budget ``rho / T``; None means ``16 d`` as in AIM.
        Must be at least the number of attributes (the first round measures every one-way marginal).
    max_model_size : float, default 80.0
        Cap on the junction-tree size in MB (AIM's default 80), reached as the budget is used.

    Examples
    --------
    >>> sz.Synthesizer(preprocess=["privtree"], select=AIM(degree=2), model="pgm", epsilon=1.0)  # doctest: +SKIP
    """

    paper = _PAPER
    _tags = {"adaptive": True}
    _test_params = {"rounds": 40}
    _parameter_constraints = {"degree": [Interval(Integral, 1, None)], "rounds": [None, Interval(Integral, 1, None)],
                              "max_model_size": [Interval(Real, 0, None, closed="neither")]}

    def __init__(self, degree: int = 2, rounds: int | None = None, max_model_size: float = 80.0):
        self.degree = degree
        self.rounds = rounds
        self.max_model_size = max_model_size

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"max_model_size": ("log", 1.0, 200.0)}

    # ------------------------------------------------------------------------- run
    def _too_few_rounds(self, d: int):
        raise ConfigError(f"AIM parameter rounds={self.rounds}: must be at least the number of attributes ({d}); "
                          "the first round measures every one-way marginal")

    def check_schema(self, schema, private: bool) -> None:
        if private and self.rounds is not None and int(self.rounds) < len(schema):
            self._too_few_rounds(len(schema))

    def run(self, data: EncodedData, budget: Budget, rng: np.random.Generator,
            model: Model | None = None) -> list[Measurement]:
        """Measure all one-way marginals, then select and measure marginals round by round until the
        budget is spent; returns every measurement in the order taken."""
        self.check_run_inputs(data, budget, model)
        domain = data.domain
        d = len(domain)
        T = d * 16 if self.rounds is None else int(self.rounds)
        private = budget.private
        rho = budget.remaining
        if private and T < d:
            self._too_few_rounds(d)
        rho_sel = 0.1 * rho / T if private else math.inf
        rho_meas = 0.9 * rho / T if private else math.inf

        candidates = workload_candidates(domain.attrs, self.degree)  # clique -> weight w_r
        self._size_cache = None
        measurements = [mechanisms.measure_marginal(data, (a,), budget, rho_meas) for a in domain.attrs]
        measured: list[tuple] = [(a,) for a in domain.attrs]
        model.fit_round(domain, measurements, rng.spawn(1)[0])
        history = []
        t = 0
        while True:
            t += 1
            last = False
            if private:
                remaining = budget.remaining
                if remaining < 2 * (rho_sel + rho_meas):  # last round: exactly what is left
                    remaining *= 1 - 1e-9  # float slack for the ledger's check
                    rho_sel, rho_meas, last = 0.1 * remaining, 0.9 * remaining, True
                used = rho - budget.remaining + rho_sel + rho_meas
                size_limit = self.max_model_size * used / rho
            else:
                last = t >= T
                size_limit = self.max_model_size
            sigma = mechanisms.gaussian_sigma(rho_meas, 1.0)
            eps = mechanisms.epsilon_for_rho(rho_sel) if private else math.inf

            pool = self._filter(domain, candidates, measured, size_limit)
            sizes = np.array([domain.size(c) for c in pool], dtype=float)
            w = np.array([candidates[c] for c in pool])
            scores = w * (model_errors(pool, data, model) - BIAS * sigma * sizes)  # AIM's quality score
            sens = max(candidates[c] for c in pool)
            i = mechanisms.exponential(budget, scores, sens, eps, note=f"AIM round {t}: {len(pool)} candidates")
            cl = pool[i]
            if not private and cl in measured:
                break  # exact measurements: measuring the same marginal again adds nothing
            z = model.project(cl) if not last else None
            measurements.append(mechanisms.measure_marginal(data, cl, budget, rho_meas))
            measured.append(cl)
            history.append({"round": t, "clique": cl, "sigma": sigma, "epsilon": eps, "candidates": len(pool)})
            if last:
                break
            model.fit_round(domain, measurements, rng.spawn(1)[0])
            if private:
                w = model.project(cl)
                threshold = BIAS * sigma * domain.size(cl)
                if np.abs(w - z).sum() <= REFINE_MARGIN * threshold:  # near the line: a tighter estimate decides
                    model.refine_round(domain, measurements, rng.spawn(1)[0])
                    w = model.project(cl)
                if np.abs(w - z).sum() <= threshold:
                    rho_sel, rho_meas = 4 * rho_sel, 4 * rho_meas  # epsilon doubled, sigma halved
        self.history_ = history
        self._size_cache = None  # sizes of this run's last round only
        self.selected_ = [h["clique"] for h in history]
        return measurements


    def _filter(self, domain: Domain, candidates: dict, measured: list, size_limit: float) -> list[tuple]:
        """Candidates covered by a measured marginal, or whose addition keeps the model under the cap.

        The junction-tree sizes of all uncovered candidates come from one compiled pass
        (:func:`~synthzoo.core.graph.candidate_cells`) and are kept until the measured cliques change:
        a round that measured an already covered marginal reuses them."""
        sets = [frozenset(m) for m in measured]
        maximal = [s for s in dict.fromkeys(sets) if not any(s < o for o in sets)]
        key = frozenset(maximal)
        open_ = [cl for cl in candidates if not any(frozenset(cl) <= m for m in maximal)]
        cache = getattr(self, "_size_cache", None)
        if cache is None or cache[0] != key:
            cells = candidate_cells(domain, [tuple(m) for m in maximal], open_)
            cache = self._size_cache = (key, dict(zip(open_, cells * 8 / 2 ** 20)))
        sizes = cache[1]
        return [cl for cl in candidates if cl not in sizes or sizes[cl] <= size_limit]
