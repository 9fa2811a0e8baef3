"""The RAP++ selector "rap++" (Vietri et al., NeurIPS 2022): one Gumbel top-q pick per round, the
budget spent fully and never exceeded, any marginal-answering model."""

import itertools
import math

import numpy as np
import pytest

from helpers import small_table
from synthzoo.core.base import REGISTRY
from synthzoo.core.errors import ConfigError
from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.models.gum import GUM
from synthzoo.models.pgm import PGM
from synthzoo.models.rp import RP
from synthzoo.select.rappp import RAPpp


def test_registered():
    assert REGISTRY["model"]["rp"] is RP
    assert REGISTRY["select"]["rap++"] is RAPpp and RAPpp.get_tags()["adaptive"]


def run_rappp(model, epsilon=1.0, seed=0, noise_seed=None, **params):
    data = small_table()
    ledger = PrivacyLedger(epsilon, 1e-5, noise_seed=noise_seed)
    budget = ledger.stage("rap++", 0.9)
    sel = RAPpp(**params)
    meas = sel.run(data, budget, np.random.default_rng(seed), model=model)
    return sel, meas, budget, ledger, data


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_rappp_budget_never_exceeded_and_fully_used(epsilon):
    sel, meas, budget, ledger, data = run_rappp(GUM(iterations=5), epsilon=epsilon, rounds=3, q=2)
    assert budget.spent <= budget.rho * (1 + 1e-9)
    assert budget.spent >= budget.rho * (1 - 1e-6)
    assert ledger.rho_spent <= ledger.total_rho
    mech = [c.mechanism for c in ledger.charges]
    # one-way marginals, then per round ONE Gumbel top-q call and q Gaussian measurements
    assert mech.count("gumbel_top_k") == 3 and mech.count("discrete_gaussian") == 4 + 3 * 2
    assert len(meas) == 4 + 3 * 2 and len(sel.selected_) == 6


def test_rappp_non_private_picks_worst_marginal_and_stops():
    # exact answers and no noise: the first pick is the strongly dependent pair (a, b)
    sel, meas, *_ = run_rappp(GUM(iterations=5), epsilon=None, rounds=1, q=1)
    assert sel.selected_ == [("a", "b")]
    assert all(m.sigma == 0 for m in meas)
    # exact measurements are never repeated; the rounds stop when the workload is measured
    sel, meas, *_ = run_rappp(GUM(iterations=5), epsilon=None, rounds=10, q=4)
    assert sorted(sel.selected_) == sorted(itertools.combinations("abce", 2))
    assert len(sel.history_) == 2


@pytest.mark.parametrize("make_model", [lambda: RP(n_rows=200, iters=100), lambda: GUM(iterations=5)],
                         ids=["rp", "gum"])
def test_rappp_same_seed_same_output_with_any_model(make_model):
    def go(seed):
        model = make_model()
        sel, meas, *_ = run_rappp(model, seed=seed, noise_seed=seed, rounds=2, q=2)
        model.fit(small_table().domain, meas, np.random.default_rng(seed))
        return sel.selected_, [m.noisy for m in meas], model.sample(300, np.random.default_rng(seed))

    a, b = go(3), go(3)
    assert a[0] == b[0]
    for x, y in zip(a[1], b[1]):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a[2], b[2])
    c = go(4)
    assert not np.array_equal(a[2], c[2])


def test_rappp_with_pgm():
    # the interface (fit / project) is the only coupling: Private-PGM works as the model too
    model = PGM(iters=50)
    sel, meas, budget, _, data = run_rappp(model, rounds=1, q=2)
    assert len(sel.selected_) == 2 and budget.spent >= budget.rho * (1 - 1e-6)
    model.fit(data.domain, meas, np.random.default_rng(0))
    rec = model.sample(200, np.random.default_rng(0))
    assert rec.shape == (200, 4) and np.all(rec.max(axis=0) < np.array(data.domain.shape))


def test_rappp_rejects_bad_setup():
    data = small_table(n=100)
    budget = PrivacyLedger(1.0, 1e-5).stage("rap++", 1.0)
    with pytest.raises(ConfigError, match="adaptive"):
        RAPpp().run(data, budget, np.random.default_rng(0), model=None)
    for bad in ({"q": 0}, {"rounds": 1.5}, {"select_share": 1.0}, {"oneway_share": 0}, {"degree": True}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            RAPpp(**bad).check_params()
    assert math.isinf(PrivacyLedger(None).stage("x", 1.0).rho)
