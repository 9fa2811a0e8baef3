"""The relaxed projection model ``rp`` and the RAP++ selector ``rap++`` (Aydore et al. ICML 2021;
Vietri et al. NeurIPS 2022)."""

import itertools
import json
import math
import sys

import numpy as np
import pytest

from synthzoo.core.base import REGISTRY
from synthzoo.core.domain import Domain, EncodedData, Measurement
from synthzoo.core.errors import ConfigError, NotFittedError
from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.models.gum import GUM
from synthzoo.models.pgm import PGM
from synthzoo.core.measurements import estimate_total
from synthzoo.models.rp import RP
from synthzoo.select.rappp import RAPpp


def small_table(n=3000, seed=0) -> EncodedData:
    """Four attributes; b depends strongly on a, the others are weakly tied."""
    rng = np.random.default_rng(seed)
    a = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    b = np.where(rng.random(n) < 0.8, a, rng.integers(0, 4, size=n))
    c = rng.integers(0, 2, size=n)
    e = np.where(rng.random(n) < 0.3, c * 2, rng.integers(0, 3, size=n))
    return EncodedData(np.stack([a, b, c, e], axis=1), Domain(["a", "b", "c", "e"], [3, 4, 2, 3]))


def exact(data, cliques):
    return [Measurement(cl, data.project(cl), 0.0) for cl in cliques]


def test_registered():
    assert REGISTRY["model"]["rp"] is RP
    assert REGISTRY["select"]["rap++"] is RAPpp and RAPpp.get_tags()["adaptive"]


def test_rp_reproduces_exact_marginals():
    data = small_table()
    pairs = [("a", "b"), ("a", "c"), ("b", "e"), ("c", "e")]
    meas = exact(data, [(x,) for x in data.domain.attrs] + pairs)
    model = RP(n_rows=300, iters=500, tol=0.0).fit(data.domain, meas, np.random.default_rng(0))
    assert model.total_ == data.n
    for cl in [(x,) for x in data.domain.attrs] + pairs:
        tvd = 0.5 * np.abs(model.project(cl) - data.project(cl)).sum() / data.n
        assert tvd < 0.02, (cl, tvd)
    # axes follow the clique's order
    np.testing.assert_allclose(model.project(("b", "a")), model.project(("a", "b")).T)
    # sampled records follow the fitted marginals
    rec = model.sample(20_000, np.random.default_rng(1))
    assert rec.shape == (20_000, 4) and rec.dtype == np.int64
    synth = EncodedData(rec, data.domain)
    tvd = 0.5 * np.abs(synth.project(("a", "b")) / 20_000 - data.project(("a", "b")) / data.n).sum()
    assert tvd < 0.03


def test_rp_three_way_measurement_and_projection():
    data = small_table(n=1000)
    meas = exact(data, [("a", "b", "e")])
    model = RP(n_rows=300, iters=600, tol=0.0).fit(data.domain, meas, np.random.default_rng(0))
    got = model.project(("a", "b", "e"))
    assert got.shape == (3, 4, 3)
    assert 0.5 * np.abs(got - data.project(("a", "b", "e"))).sum() / data.n < 0.05
    assert model.project(()) == pytest.approx(1000.0)


def test_rp_warm_start_state_and_errors():
    data = small_table(n=800)
    meas = exact(data, [(x,) for x in data.domain.attrs])
    model = RP(n_rows=100, iters=50)
    with pytest.raises(NotFittedError):
        model.sample(3, np.random.default_rng(0))
    model.fit(data.domain, meas, np.random.default_rng(0))
    assert not model.warm_started_
    model.fit(data.domain, meas + exact(data, [("a", "b")]), np.random.default_rng(1))
    assert model.warm_started_
    state = json.loads(json.dumps(model.get_state()))
    other = RP()
    other.set_state(state, data.domain)
    np.testing.assert_array_equal(other.sample(500, np.random.default_rng(5)),
                                  model.sample(500, np.random.default_rng(5)))
    np.testing.assert_allclose(other.project(("a", "b")), model.project(("a", "b")))
    with pytest.raises(ConfigError, match="different domain"):
        RP().set_state(state, Domain(["a"], [3]))
    with pytest.raises(ConfigError, match="n_rows"):
        RP(n_rows=0).fit(data.domain, meas, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="lr"):
        RP(lr=-1.0).check_params()
    with pytest.raises(ConfigError, match="shape"):
        RP().fit(data.domain, [Measurement(("a",), np.ones(5), 1.0)], np.random.default_rng(0))


def test_rp_without_torch_says_so(monkeypatch):
    data = small_table(n=100)
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    with pytest.raises(ConfigError, match="PyTorch"):
        RP(iters=5).fit(data.domain, exact(data, [("a",)]), np.random.default_rng(0))


def test_estimate_total_weights_by_noise():
    m1 = Measurement(("a",), np.array([50.0, 60.0]), 1.0)      # sum 110, variance 2
    m2 = Measurement(("b",), np.array([30.0, 40.0, 50.0]), 10.0)  # sum 120, variance 300
    assert 110 < estimate_total([m1, m2]) < 110.1
    assert estimate_total([Measurement(("a",), np.array([3.0, 4.0]), 0.0), m2]) == 7.0


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
