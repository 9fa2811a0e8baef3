"""Marginal-based family, first part: the "pgm" model (private-pgm via mbi) and the "mst" and "aim"
selectors.  Small synthetic tables keep these fast; the adult runs are marked slow."""

import itertools
import json
import math
import time

import numpy as np
import pytest

from synthzoo.core.base import Model
from synthzoo.core.domain import Domain, EncodedData, Measurement
from synthzoo.core.errors import ConfigError
from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.models.pgm import PGM, _mbi
from synthzoo.core.graph import junction_tree_cells, model_size_mb
from synthzoo.select.aim import AIM, workload_candidates
from synthzoo.select.mst import MST, independent_estimate


def chain_data(n=3000, seed=0) -> EncodedData:
    """Five attributes: a -> b -> c -> e <- d (tree-structured dependencies)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = (2 * b + rng.integers(0, 2, n)) % 5
    d = rng.integers(0, 2, n)
    e = (c + d) % 3
    dom = Domain(list("abcde"), [3, 4, 5, 2, 3])
    return EncodedData(np.stack([a, b, c, d, e], axis=1), dom)


class ProductModel(Model):
    """Test double: any measurement model works with the selectors. Estimates every marginal as the
    product of the measured one-way marginals."""

    _tags = {"answers_marginals": True}

    def fit(self, domain, measurements, rng):
        self.domain_ = domain
        self.one_ = {m.clique[0]: m.noisy for m in measurements if len(m.clique) == 1}
        self.fits_ = getattr(self, "fits_", 0) + 1
        return self

    def project(self, clique):
        return independent_estimate(self.one_, tuple(clique))

    def sample(self, n, rng):
        return np.zeros((n, len(self.domain_)), dtype=np.int64)

    def get_state(self):
        return {}

    def set_state(self, state, domain):
        pass


def stage(epsilon, share=1.0, noise_seed=None):
    ledger = PrivacyLedger(epsilon, 1e-5, noise_seed=noise_seed)
    return ledger, ledger.stage("select", share)


def exact_marginal(data, clique):
    order = sorted(clique, key=data.domain.attrs.index)
    return np.transpose(data.project(tuple(order)), [order.index(a) for a in clique])


# ------------------------------------------------------------------------------------ PGM
@pytest.fixture(scope="module")
def fitted_exact():
    """PGM fitted non-privately (sigma 0) to the exact one-way and tree marginals."""
    data = chain_data()
    cliques = [(a,) for a in data.domain.attrs] + [("a", "b"), ("b", "c"), ("c", "e"), ("d", "e")]
    ms = [Measurement(c, data.project(c), 0.0) for c in cliques]
    return data, ms, PGM(iters=500).fit(data.domain, ms, np.random.default_rng(0))


def test_pgm_reproduces_exact_marginals(fitted_exact):
    data, ms, model = fitted_exact
    n = data.n
    for m in ms:
        assert np.abs(model.project(m.clique) - m.noisy).sum() / n < 0.02, m.clique
    assert model.project(("a", "b")).sum() == pytest.approx(n, rel=1e-6)
    # the data is a tree, so the model also gets unmeasured pairs about right
    assert np.abs(model.project(("a", "c")) - exact_marginal(data, ("a", "c"))).sum() / n < 0.05


def test_pgm_project_matches_mbi_inference(fitted_exact):
    """The numpy junction-tree inference agrees with mbi's variable elimination."""
    _, _, model = fitted_exact
    from mbi.marginal_oracles import variable_elimination

    for q in [("a", "c"), ("e", "a", "d"), ("b", "e"), ("d", "a"), ("c",)]:
        ref = np.asarray(variable_elimination(model._warm_potentials(), q, model.total_).values)
        np.testing.assert_allclose(model.project(q), ref, rtol=1e-8, atol=1e-8 * model.total_)


def test_pgm_sample_seeded_and_close(fitted_exact):
    data, ms, model = fitted_exact
    a = model.sample(data.n, np.random.default_rng(5))
    b = model.sample(data.n, np.random.default_rng(5))
    c = model.sample(data.n, np.random.default_rng(6))
    assert a.shape == (data.n, 5) and a.dtype == np.int64
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    synth = EncodedData(a, data.domain)
    for m in ms:
        assert np.abs(synth.project(m.clique) - m.noisy).sum() / data.n < 0.04, m.clique


def test_pgm_state_is_json_and_reloads(fitted_exact):
    data, ms, model = fitted_exact
    state = json.loads(json.dumps(model.get_state()))
    assert {"params", "measurements", "potentials", "total"} <= set(state)
    other = PGM()
    other.set_state(state, data.domain)
    np.testing.assert_array_equal(other.sample(500, np.random.default_rng(1)),
                                  model.sample(500, np.random.default_rng(1)))
    with pytest.raises(ConfigError, match="different domain"):
        other.set_state(state, Domain(list("abcde"), [3, 4, 5, 2, 4]))


def test_pgm_independent_attributes_and_warm_start():
    """Attributes no measurement links form separate tree components; a refit that extends the
    measurement list starts from the previous potentials."""
    data = chain_data(n=2000, seed=1)
    ones = [Measurement((a,), data.project((a,)), 0.0) for a in data.domain.attrs]
    model = PGM(iters=200).fit(data.domain, ones, np.random.default_rng(0))
    pa, pd_ = data.project(("a",)), data.project(("d",))
    np.testing.assert_allclose(model.project(("a", "d")), np.outer(pa, pd_) / data.n, atol=0.5)
    assert not model.warm_started_
    model.fit(data.domain, ones + [Measurement(("a", "b"), data.project(("a", "b")), 0.0)],
              np.random.default_rng(0))
    assert model.warm_started_ and ("a", "b") in model.cliques_
    model.fit(data.domain, ones[1:], np.random.default_rng(0))  # not an extension: a cold start
    assert not model.warm_started_


def test_pgm_caps_model_size():
    """Every pair measured would make the junction tree the full joint: PGM keeps what fits, in order."""
    data = chain_data(n=500)
    attrs = data.domain.attrs
    cliques = [(a,) for a in attrs] + list(itertools.combinations(attrs, 2))
    ms = [Measurement(c, data.project(c), 1.0) for c in cliques]
    with pytest.warns(UserWarning, match="max_model_size"):
        model = PGM(iters=50, max_model_size=0.001).fit(data.domain, ms, np.random.default_rng(0))
    mbi = _mbi()
    assert mbi.junction_tree.hypothetical_model_size(mbi.Domain(attrs, data.domain.shape), model.cliques_) <= 0.001
    assert ("a", "b") in model.cliques_ and len(model.measurements_) == len(ms)


def test_pgm_bad_input():
    data = chain_data(n=200)
    with pytest.raises(ConfigError, match="iters"):
        PGM(iters=0).fit(data.domain, [Measurement(("a",), data.project(("a",)), 1.0)], np.random.default_rng(0))
    with pytest.raises(ConfigError, match="shape"):
        PGM().fit(data.domain, [Measurement(("a",), np.zeros(7), 1.0)], np.random.default_rng(0))
    with pytest.raises(ConfigError, match="max_model_size"):
        PGM(max_model_size=-1).fit(data.domain, [Measurement(("a",), data.project(("a",)), 1.0)],
                                   np.random.default_rng(0))
    with pytest.raises(ConfigError, match="at least one"):
        PGM().fit(data.domain, [], np.random.default_rng(0))


# ------------------------------------------------------------------------------------ MST
@pytest.mark.parametrize("epsilon", [0.3, None])
def test_mst_tree_spans_all_attributes(epsilon):
    data = chain_data()
    ledger, budget = stage(epsilon)
    ms = MST().run(data, budget, np.random.default_rng(0))
    d = len(data.domain)
    tree = [m.clique for m in ms if len(m.clique) == 2]
    assert len(tree) == d - 1 == len(set(tree))
    parent = {a: a for a in data.domain.attrs}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in tree:  # d - 1 edges joining d vertices without a cycle: a spanning tree
        assert find(a) != find(b)
        parent[find(a)] = find(b)
    assert [m.clique for m in ms[:d]] == [(a,) for a in data.domain.attrs]
    if epsilon is None:
        assert all(m.sigma == 0 for m in ms)
        assert set(map(frozenset, tree)) == {frozenset(e) for e in [("a", "b"), ("b", "c"), ("c", "e"), ("d", "e")]}


@pytest.mark.parametrize("epsilon", [0.05, 1.0])
def test_mst_budget_spent_never_exceeded(epsilon):
    data = chain_data()
    ledger, budget = stage(epsilon, share=0.9)
    MST().run(data, budget, np.random.default_rng(0), model=ProductModel())
    assert budget.spent <= budget.rho * (1 + 1e-9)
    assert budget.spent >= budget.rho * (1 - 1e-6)
    assert ledger.spent().epsilon <= epsilon * (1 + 1e-9)
    # thirds: one-way, selection (exponential mechanism), tree
    rows = {r["module"]: r["rho"] for r in ledger.breakdown()}
    assert rows["select/one-way"] == pytest.approx(budget.rho / 3, rel=1e-6)
    assert rows["select/select"] == pytest.approx(budget.rho / 3, rel=1e-6)


def test_mst_same_seed_same_measurements():
    data = chain_data()
    # the noise replays through the test-only noise seed only; the generator is post-processing
    runs = [MST().run(data, stage(1.0, noise_seed=n)[1], np.random.default_rng(3)) for n in (3, 3, 4)]
    for x, y in zip(runs[0], runs[1]):
        assert x.clique == y.clique and x.sigma == y.sigma
        np.testing.assert_array_equal(x.noisy, y.noisy)
    assert any(not np.array_equal(x.noisy, y.noisy) for x, y in zip(runs[0], runs[2]))
    fresh = [MST().run(data, stage(1.0)[1], np.random.default_rng(3)) for _ in range(2)]
    assert any(not np.array_equal(x.noisy, y.noisy) for x, y in zip(*fresh))  # same generator, new noise


def test_mst_uses_the_model_estimate():
    data = chain_data()
    model = ProductModel()
    MST().run(data, stage(1.0)[1], np.random.default_rng(0), model=model)
    assert model.fits_ == 1 and set(model.one_) == set(data.domain.attrs)


def test_mst_bad_shares():
    with pytest.raises(ConfigError, match="shares"):
        MST(shares=(1, 0, 1)).run(chain_data(n=100), stage(1.0)[1], np.random.default_rng(0))


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
    ledger, budget = stage(epsilon, share=0.9)
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
    runs = [AIM(rounds=20).run(data, stage(1.0, noise_seed=n)[1], np.random.default_rng(3), model=ProductModel())
            for n in (3, 3, 4)]
    assert [m.clique for m in runs[0]] == [m.clique for m in runs[1]]
    for x, y in zip(runs[0], runs[1]):
        np.testing.assert_array_equal(x.noisy, y.noisy)
    assert [m.clique for m in runs[0]] != [m.clique for m in runs[2]] or \
        any(not np.array_equal(x.noisy, y.noisy) for x, y in zip(runs[0], runs[2]))


def test_aim_with_pgm():
    data = chain_data()
    ledger, budget = stage(2.0)
    model = PGM(iters=200)
    aim = AIM(rounds=8)
    ms = aim.run(data, budget, np.random.default_rng(0), model=model)
    assert len(aim.history_) >= 1 and any(len(m.clique) == 2 for m in ms)
    assert ledger.spent().epsilon <= 2.0 * (1 + 1e-9)
    model.fit(data.domain, ms, np.random.default_rng(0))  # the pipeline's final fit, warm-started
    assert model.sample(100, np.random.default_rng(0)).shape == (100, 5)


def test_aim_non_private_stops():
    data = chain_data(n=1000)
    ledger, budget = stage(None)
    aim = AIM(rounds=6)
    ms = aim.run(data, budget, np.random.default_rng(0), model=ProductModel())
    assert all(m.sigma == 0 for m in ms)
    assert 1 <= len(aim.history_) <= 6
    assert math.isinf(ledger.spent().epsilon)


def test_aim_bad_input():
    data = chain_data(n=100)
    with pytest.raises(ConfigError, match="needs a measurement-fitting model"):
        AIM().run(data, stage(1.0)[1], np.random.default_rng(0))
    with pytest.raises(ConfigError, match="rounds"):
        AIM(rounds=3).run(data, stage(1.0)[1], np.random.default_rng(0), model=ProductModel())
    with pytest.raises(ConfigError, match="max_model_size"):
        AIM(max_model_size=0).run(data, stage(1.0)[1], np.random.default_rng(0), model=ProductModel())
    with pytest.raises(ConfigError, match="degree"):
        AIM(degree=0).run(data, stage(1.0)[1], np.random.default_rng(0), model=ProductModel())


def test_aim_degree_three_candidates():
    w = workload_candidates("abcd", 3)
    assert len(w) == 4 + 6 + 4 and all(len(c) <= 3 for c in w)
    data = chain_data(n=500)
    aim = AIM(degree=3, rounds=10)
    ms = aim.run(data, stage(5.0)[1], np.random.default_rng(0), model=ProductModel())
    assert all(len(m.clique) <= 3 for m in ms)


# ------------------------------------------------------------------------- pipeline (adult)
@pytest.mark.slow
def test_mst_pgm_adult(adult):
    import synthzoo as sz
    from synthzoo.metrics import tvd_2way

    df, schema = adult
    t0 = time.perf_counter()
    s = sz.Synthesizer(preprocess=["privtree", "rare_merge"], select="mst", model="pgm", epsilon=1.0,
                       delta=1e-5, schema=schema, seed=0).fit(df)
    fake = s.sample(len(df))
    assert s.privacy_spent().epsilon <= 1.0 + 1e-9
    assert len(s.select.tree_) == len(df.columns) - 1
    assert tvd_2way(df, fake, schema) < 0.25
    assert time.perf_counter() - t0 < 600


def test_pgm_numpy_and_jax_engines_agree():
    """The numpy mirror descent (no compilation) and the jitted one run the same algorithm."""
    data = chain_data(n=3000, seed=2)
    rng = np.random.default_rng(0)
    cliques = [(a,) for a in data.domain.attrs] + [("a", "b"), ("b", "c"), ("c", "e"), ("a", "c", "d")]
    ms = [Measurement(c, data.project(c) + rng.normal(0, 5, data.domain.project(c).shape), 5.0) for c in cliques]
    a = PGM(iters=150, engine="numpy").fit(data.domain, ms, np.random.default_rng(0))
    b = PGM(iters=150, engine="jax").fit(data.domain, ms, np.random.default_rng(0))
    assert a.engine_ == "numpy" and b.engine_ == "jax"
    for q in [("a", "b"), ("c", "e"), ("a", "d"), ("b", "d", "e")]:
        np.testing.assert_allclose(a.project(q), b.project(q), rtol=1e-6, atol=1e-6 * data.n)


def test_pgm_fit_round_is_a_cheaper_warm_refit():
    data = chain_data(n=2000, seed=3)
    ones = [Measurement((a,), data.project((a,)), 0.0) for a in data.domain.attrs]
    model = PGM(iters=400, round_iters=20, engine="jax").fit_round(data.domain, ones, np.random.default_rng(0))
    assert model.engine_ == "numpy"  # between rounds: never a compile
    model.fit_round(data.domain, ones + [Measurement(("a", "b"), data.project(("a", "b")), 0.0)],
                    np.random.default_rng(0))
    assert model.warm_started_
    with pytest.raises(ConfigError, match="engine"):
        PGM(engine="torch").fit(data.domain, ones, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="round_iters"):
        PGM(round_iters=0).fit(data.domain, ones, np.random.default_rng(0))
