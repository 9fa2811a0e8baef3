"""RAP++'s adaptive rounds: select the worst-fitting marginals with one Gumbel top-q call, measure them.

Aydore et al., "Differentially Private Query Release Through Adaptive Projection" (RAP, ICML
2021), and Vietri et al., "Private Synthetic Data for Multitask Learning and Marginal Queries"
(RAP++, NeurIPS 2022).

* **Workload.**  Every ``degree``-way marginal small enough to count (at most
  :data:`~synthzoo.core.domain.MAX_CELLS` cells; the rest are left out with a warning, and a degree
  whose marginals are all past it is a ConfigError before the selector charges anything).
* **Initialisation.**  Every one-way marginal is measured with the Gaussian mechanism, with
  ``oneway_share`` of the selector's budget split evenly among them (as AIM and the other
  selectors here do: it gives the model a starting point for the first selection).  This is an
  addition to RAP, which starts from a random relaxed dataset.
* **Rounds.**  The rest of the budget is split evenly over ``rounds`` rounds.  In each, the model
  (any measurement-fitting model, e.g. ``rp``) answers every workload marginal; the score of a
  marginal is the L1 distance, in counts, between the data's marginal and the model's, and ONE
  Gumbel top-``q`` call (Durfee & Rogers 2019; one-shot, no peeling) picks ``q`` marginals with
  ``select_share`` of the round's budget.  Each is then measured with Gaussian noise, sharing the
  rest of the round's budget equally, and the model is refitted (warm) to all measurements.
* **Sensitivity.**  RAP++ scores normalised answers; a marginal's normalised L1 error changes by at
  most ``2/n`` when one record is replaced.  Here the answers are counts (the model's answer is a
  function of earlier noisy measurements only) and neighbouring tables differ by one added or
  removed record, as for every Gaussian measurement in this package: one cell moves by 1, so the
  L1 score changes by at most 1 -- the same scale (``1/n`` of a count is a normalised unit, and
  add/remove is half of replace-one).  The Gumbel scale is ``2 * 1 / epsilon``.
* **Accounting.**  Top-``q`` by Gumbel noise is ``q`` exponential mechanisms, ``q * epsilon^2 / 8``
  zCDP in all; the per-marginal Gaussian costs ``1 / (2 sigma^2)``.  The last round takes exactly
  what is left, so the selector spends all of its budget and never more.

Re-selecting an already measured marginal is allowed in a private run (its measurements then
average out); in a non-private run measurements are exact, so only unmeasured marginals are
candidates and the rounds stop when none is left.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from ..core.base import Model, Selector, register
from ..core.domain import MAX_CELLS, EncodedData, Measurement
from ..core.errors import ConfigError
from ..core.params import Integral, Interval, Real, Text
from ..core.privacy import mechanisms
from ..core.privacy.ledger import Budget
from ..core.scores import model_errors

_PAPER = ("Aydore et al., Differentially Private Query Release Through Adaptive Projection (ICML 2021); "
          "Vietri et al., Private Synthetic Data for Multitask Learning and Marginal Queries (NeurIPS 2022)")


ROUNDS_RULE = r"d-1|(?:\d+(?:\.\d*)?|\.\d+)?d"  # "d-1", "d", "5d", "0.5d"


def _rounds_for(spec, d: int) -> int:
    """Rounds as an integer, or as a rule of the number of attributes ``d`` the papers use:
    ``"d-1"`` (RAP++'s select epochs) or ``"<k>d"`` (e.g. ``"5d"``, GEM's ``T = 5 d``)."""
    if not isinstance(spec, str):
        return int(spec)
    s = spec.replace(" ", "")
    if s == "d-1":
        return max(1, d - 1)
    k = float(s[:-1] or 1) if s.endswith("d") else 0.0
    if k > 0:
        return max(1, int(round(k * d)))
    raise ConfigError(f"RAP++ parameter rounds={spec!r}: must be an integer >= 1, 'd-1' or '<k>d'")


@register("select", "rap++")
class RAPpp(Selector):
    """RAP++ adaptive selection (Aydore et al. ICML 2021; Vietri et al. NeurIPS 2022): per round, one
    Gumbel top-``q`` selection of the marginals the model answers worst, then Gaussian measurement.

    Parameters
    ----------
    degree : int, default 2
        The workload is every ``degree``-way marginal.
    rounds : int or str, default 10
        Number of adaptive rounds ``T``: an integer, or ``"d-1"`` / ``"<k>d"`` (k times the number of
        attributes), the rules RAP++ and GEM use.
    q : int, default 5
        Marginals selected and measured per round.
    select_share : float, default 0.5
        Share of each round's budget spent on selection (the rest on measurement); RAP++'s code
        splits each round evenly.
    oneway_share : float, default 0.1
        Share of the selector's budget for measuring every one-way marginal first.

    Examples
    --------
    >>> sz.Synthesizer(select=RAPpp(rounds="d-1", q=1), model="rp", epsilon=1.0)  # doctest: +SKIP
    """

    paper = _PAPER
    _tags = {"adaptive": True}
    _test_params = {"rounds": 3, "q": 2}
    _parameter_constraints = {
        "degree": [Interval(Integral, 1, None)], "q": [Interval(Integral, 1, None)],
        "rounds": [Interval(Integral, 1, None), Text(ROUNDS_RULE, "'d-1' or '<k>d' (e.g. '5d')")],
        "select_share": [Interval(Real, 0, 1, closed="neither")],
        "oneway_share": [Interval(Real, 0, 1, closed="neither")]}

    def __init__(self, degree: int = 2, rounds: int | str = 10, q: int = 5, select_share: float = 0.5,
                 oneway_share: float = 0.1):
        self.degree = degree
        self.rounds = rounds
        self.q = q
        self.select_share = select_share
        self.oneway_share = oneway_share

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"rounds": ("int", 3, 30), "q": ("int", 1, 10), "select_share": ("float", 0.1, 0.9)}

    # ------------------------------------------------------------------------- run
    def run(self, data: EncodedData, budget: Budget, rng: np.random.Generator,
            model: Model | None = None) -> list[Measurement]:
        """Measure every one-way marginal, then ``rounds`` rounds of Gumbel top-``q`` selection and
        Gaussian measurement against the refitted model; returns every measurement in the order taken."""
        self.check_run_inputs(data, budget, model)
        domain = data.domain
        d = len(domain)
        private = budget.private
        rho = budget.remaining
        workload = self._countable(domain, list(itertools.combinations(domain.attrs, min(int(self.degree), d))))
        T = _rounds_for(self.rounds, d)

        rho_one = self.oneway_share * rho / d if private else math.inf
        measurements = [mechanisms.measure_marginal(data, (a,), budget, rho_one) for a in domain.attrs]
        measured = {(a,) for a in domain.attrs}
        model.fit_round(domain, measurements, rng.spawn(1)[0])
        history = []
        for t in range(1, T + 1):
            cands = workload if private else [c for c in workload if c not in measured]
            if not cands:
                break  # non-private: every workload marginal is measured exactly
            q = min(int(self.q), len(cands))
            if private:
                # even split of what is left over the rounds left; the last round takes all of it
                rho_round = budget.remaining / (T - t + 1) * (1 - 1e-9)
                rho_sel = self.select_share * rho_round
                rho_meas = (1 - self.select_share) * rho_round / q
                eps = math.sqrt(8.0 * rho_sel / q)  # q * eps^2 / 8 = rho_sel
            else:
                rho_meas, eps = math.inf, math.inf
            scores = model_errors(cands, data, model)  # L1 error in counts: sensitivity 1
            picks = mechanisms.gumbel_top_k(budget, scores, q, 1.0, eps,
                                            note=f"RAP++ round {t}: top {q} of {len(cands)} marginals")
            chosen = [cands[i] for i in picks]
            for cl in chosen:
                measurements.append(mechanisms.measure_marginal(data, cl, budget, rho_meas))
                measured.add(cl)
            history.append({"round": t, "cliques": chosen, "epsilon": eps,
                            "sigma": mechanisms.gaussian_sigma(rho_meas, 1.0), "candidates": len(cands)})
            if t < T:
                model.fit_round(domain, measurements, rng.spawn(1)[0])
        self.history_ = history
        self.selected_ = [c for h in history for c in h["cliques"]]
        return measurements

    def _countable(self, domain, workload: list[tuple]) -> list[tuple]:
        """The workload's marginals small enough to count (:data:`~synthzoo.core.domain.MAX_CELLS`), checked
        before the first charge: one past it was a ValueError in the first round, after the one-way marginals
        (and the preprocessors) were charged.  The domain is public (the preprocessors' DP release)."""
        keep = [c for c in workload if domain.size(c) <= MAX_CELLS]
        if not keep:
            raise ConfigError(f"RAP++ parameter degree={self.degree}: every {len(workload[0])}-way marginal of this "
                              f"domain has more than {MAX_CELLS:,} cells, too many to count; lower degree")
        if len(keep) < len(workload):
            warnings.warn(f"RAP++: {len(workload) - len(keep)} of the {len(workload)} {len(workload[0])}-way "
                          f"marginals have more than {MAX_CELLS:,} cells, too many to count: left out of the workload "
                          "(lower degree, or bin more coarsely)", UserWarning, stacklevel=3)
        return keep
