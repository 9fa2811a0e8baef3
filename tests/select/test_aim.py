"""The "aim" selector (McKenna et al., VLDB 2022): budget annealing within the request, reproducible
noise through the test-only opt-in, any marginal-answering model, workload weights."""

import math

import numpy as np
import pytest

from helpers import ProductModel, chain_data, selector_stage
from synthzoo.core.domain import Domain
from synthzoo.core.errors import ConfigError
from synthzoo.core.graph import junction_tree_cells, model_size_mb
from synthzoo.models.pgm import PGM, _mbi
from synthzoo.select.aim import AIM, workload_candidates


# ------------------------------------------------------------------------------------ AIM
def test_workload_weights_and_model_size():
    w = workload_candidates("abcde", 2)
    assert len(w) == 5 + 10
    assert w[("a",)] == 4 and w[("a", "b")] == 2 * 4  # AIM: sum over the workload of |r & s|
    dom = Domain(list("abcde"), [3, 4, 5, 2, 3])
    mbi = _mbi()
    mdom = mbi.Domain(dom.attrs, dom.shape)
    for cliques in ([("a", "b"), ("b", "c")], [("a", "b"), ("b", "c"), ("a", "c")],
                    [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")], [("a", "b", "c"), ("c", "d"), ("d", "e")]):
        ref = mbi.junction_tree.hypothetical_model_size(mdom, cliques)
        assert model_size_mb(dom, cliques) == pytest.approx(ref), cliques
    assert junction_tree_cells(dom, []) == sum(dom.shape)


@pytest.mark.parametrize("epsilon", [0.05, 1.0])
def test_aim_budget_spent_never_exceeded(epsilon):
    data = chain_data()
    ledger, budget = selector_stage(epsilon, share=0.9)
    aim = AIM(rounds=20)
    ms = aim.run(data, budget, np.random.default_rng(0), model=ProductModel())
    assert budget.spent <= budget.rho * (1 + 1e-9)
    assert budget.spent >= budget.rho * (1 - 1e-6)  # the last round takes exactly what is left
    assert ledger.spent().epsilon <= epsilon * (1 + 1e-9)
    assert [m.clique for m in ms[:5]] == [(a,) for a in data.domain.attrs]
    assert len(ms) == 5 + len(aim.history_) and len(aim.history_) >= 1
    sigmas = [h["sigma"] for h in aim.history_]
    assert all(s2 <= s1 for s1, s2 in zip(sigmas, sigmas[1:]))  # annealing only ever lowers sigma


def test_aim_same_seed_same_measurements():
    data = chain_data()
    runs = [AIM(rounds=20).run(data, selector_stage(1.0, noise_seed=n)[1], np.random.default_rng(3), model=ProductModel())
            for n in (3, 3, 4)]
    assert [m.clique for m in runs[0]] == [m.clique for m in runs[1]]
    for x, y in zip(runs[0], runs[1]):
        np.testing.assert_array_equal(x.noisy, y.noisy)
    assert [m.clique for m in runs[0]] != [m.clique for m in runs[2]] or \
        any(not np.array_equal(x.noisy, y.noisy) for x, y in zip(runs[0], runs[2]))


def test_aim_with_pgm():
    data = chain_data()
    ledger, budget = selector_stage(2.0)
    model = PGM(iters=200)
    aim = AIM(rounds=8)
    ms = aim.run(data, budget, np.random.default_rng(0), model=model)
    assert len(aim.history_) >= 1 and any(len(m.clique) == 2 for m in ms)
    assert ledger.spent().epsilon <= 2.0 * (1 + 1e-9)
    model.fit(data.domain, ms, np.random.default_rng(0))  # the pipeline's final fit, warm-started
    assert model.sample(100, np.random.default_rng(0)).shape == (100, 5)


def test_aim_non_private_stops():
    data = chain_data(n=1000)
    ledger, budget = selector_stage(None)
    aim = AIM(rounds=6)
    ms = aim.run(data, budget, np.random.default_rng(0), model=ProductModel())
    assert all(m.sigma == 0 for m in ms)
    assert 1 <= len(aim.history_) <= 6
    assert math.isinf(ledger.spent().epsilon)


def test_aim_bad_input():
    data = chain_data(n=100)
    with pytest.raises(ConfigError, match="needs a measurement-fitting model"):
        AIM().run(data, selector_stage(1.0)[1], np.random.default_rng(0))
    with pytest.raises(ConfigError, match="rounds"):
        AIM(rounds=3).run(data, selector_stage(1.0)[1], np.random.default_rng(0), model=ProductModel())
    with pytest.raises(ConfigError, match="max_model_size"):
        AIM(max_model_size=0).run(data, selector_stage(1.0)[1], np.random.default_rng(0), model=ProductModel())
    with pytest.raises(ConfigError, match="degree"):
        AIM(degree=0).run(data, selector_stage(1.0)[1], np.random.default_rng(0), model=ProductModel())


def test_aim_degree_three_candidates():
    w = workload_candidates("abcd", 3)
    assert len(w) == 4 + 6 + 4 and all(len(c) <= 3 for c in w)
    data = chain_data(n=500)
    aim = AIM(degree=3, rounds=10)
    ms = aim.run(data, selector_stage(5.0)[1], np.random.default_rng(0), model=ProductModel())
    assert all(len(m.clique) <= 3 for m in ms)


def test_aim_with_a_model_size_cap_materialises_nothing_beyond_it(monkeypatch):
    """Many rows mean little noise, so AIM wants large marginals: the cap bounds the model it builds
    (the junction tree of what it measures) and what its scoring materialises (one candidate at a
    time; marginals outside the tree answered by the model in blocks), besides the counts it keeps."""
    import gc
    import tracemalloc

    from synthzoo.core.domain import EncodedData

    rng = np.random.default_rng(0)
    codes = rng.integers(0, 30, size=(20000, 6))
    codes[:, 2] = (codes[:, 0] + codes[:, 1] + rng.integers(0, 2, 20000)) % 30  # 3-way interactions only
    codes[:, 5] = (codes[:, 3] + codes[:, 4] + rng.integers(0, 2, 20000)) % 30
    data = EncodedData(codes, Domain(list("abcdef"), [30] * 6))
    cap = 0.25  # MB: 32,768 cells -- one 3-way marginal (27,000) fits, two do not

    def run(noise_seed, iters):
        model = PGM(iters=iters, round_iters=iters, max_model_size=cap)
        aim = AIM(degree=3, rounds=12, max_model_size=cap)
        return aim.run(data, selector_stage(20.0, noise_seed=noise_seed)[1], np.random.default_rng(0), model=model)

    run(1, 5)  # compiled kernels loaded: not what is measured below
    # the caches of counts and of model answers have their own bounds (128 and 32 MB): off here
    from synthzoo.core import base

    monkeypatch.setattr(base, "ANSWER_CACHE_CELLS", 0)
    monkeypatch.setattr(EncodedData, "cache_cells", 0)
    data._cache.clear()
    gc.collect()  # the collector's counters from earlier tests would otherwise decide when garbage goes
    tracemalloc.start()
    try:
        ms = run(0, 30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    cliques = [m.clique for m in ms]
    assert any(len(c) == 3 for c in cliques)  # it does go for a large marginal ...
    assert model_size_mb(data.domain, cliques) <= cap  # ... and stays within the cap
    assert not {("a", "b", "c"), ("d", "e", "f")} <= set(cliques)
    # one candidate's answer, the model and its measurements: a few caps, not the 20 three-way
    # candidates' 4 MB at once (nor node x candidate tables of an unbounded query).  Mirror descent's
    # working set is ~20 vectors of the model's cells; momentum's converged refits keep AIM in more
    # rounds (a larger model within its cap) than plain steps did (peak 2.17 against 1.97 MB)
    assert peak < 10 * cap * 2 ** 20, peak


class _LatestMeasurement(ProductModel):
    """Estimates a measured marginal by its latest measurement, others as a product of one-ways."""

    def fit(self, domain, measurements, rng):
        super().fit(domain, measurements, rng)
        self.latest_ = {m.clique: m.noisy for m in measurements}
        return self

    def project(self, clique):
        return self.latest_.get(tuple(clique), super().project(clique))


class _Lagging(_LatestMeasurement):
    """Its between-rounds refit stops before taking in the new measurement (an estimate stopped early);
    ``refine_round`` takes it in."""

    def fit_round(self, domain, measurements, rng):
        if not hasattr(self, "latest_"):
            return self.fit(domain, measurements, rng)
        self.refines_ = getattr(self, "refines_", 0)
        return self

    def refine_round(self, domain, measurements, rng):
        self.refines_ += 1
        return self.fit(domain, measurements, rng)


def test_aim_anneals_on_a_refined_estimate_when_the_test_is_close():
    """A between-rounds estimate that has not moved towards the new measurement would pass AIM's
    annealing test every round (sigma halved each time); AIM asks the model to refine estimates near
    the threshold, so the decisions are those of a model that refits fully."""
    data = chain_data()
    runs = []
    for model in (_LatestMeasurement(), _Lagging()):
        aim = AIM(rounds=20)
        aim.run(data, selector_stage(1.0, noise_seed=5)[1], np.random.default_rng(0), model=model)
        runs.append((aim, model))
    (eager, _), (lagging, model) = runs
    assert [h["sigma"] for h in lagging.history_] == [h["sigma"] for h in eager.history_]
    assert [h["clique"] for h in lagging.history_] == [h["clique"] for h in eager.history_]
    assert model.refines_ == len(lagging.history_) - 1  # every round but the last (which refits nothing)
