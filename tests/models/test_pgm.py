"""The "pgm" model (private-pgm via mbi, McKenna et al. ICML 2019): exact marginals reproduced,
inference matching mbi, the numpy and jax engines agreeing, warm starts, the model-size cap,
saved state.  Small synthetic tables keep these fast; the adult runs are marked slow."""

import itertools
import json

import numpy as np
import pytest

from helpers import chain_data
from synthzoo.core.domain import Domain, EncodedData, Measurement
from synthzoo.core.errors import ConfigError
from synthzoo.models.pgm import PGM, _mbi


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


def test_pgm_sample_does_not_depend_on_the_tables_layout(fitted_exact):
    """The plan lays each node's axes out for its kernels (a child's separator first); sampling reads
    every table in the domain's order, so the rows for a seed are those of any other layout -- also those
    a model file gave before the layout changed."""
    from synthzoo.core.graph import junction_tree
    from synthzoo.models import pgm_engine
    from synthzoo.models.pgm import _JunctionTree

    data, _, model = fitted_exact
    pots, total = model._pots, model.total_
    nodes, edges = junction_tree(data.domain, list(pots))
    samples = []
    for flip in (False, True):  # every node, the root too, given with its axes reversed
        f = (lambda c: tuple(reversed(c))) if flip else tuple
        plan = pgm_engine.Plan(data.domain, [f(c) for c in nodes], [(f(u), f(v)) for u, v in edges], list(pots))
        assert flip == (plan.order[0] != tuple(a for a in data.domain.attrs if a in plan.order[0]))
        marg = plan.calibrate(plan.beliefs(plan.flatten(pots)), total)
        samples.append(_JunctionTree(data.domain, plan, marg, total, 10 ** 6).sample(700, np.random.default_rng(4)))
    np.testing.assert_array_equal(samples[0], samples[1])
    np.testing.assert_array_equal(samples[0], model.sample(700, np.random.default_rng(4)))


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


def test_a_warm_start_begins_at_the_new_measurement(monkeypatch):
    """A warm-started fit starts from the previous model rescaled to the new measurement (one IPF
    step): that start is proportional to the new marginal where it is well above its noise.  Only the
    start moves: the refits reach the estimate of a cold fit run to convergence, in fewer iterations."""
    from synthzoo.models.pgm import _expand

    data = chain_data(n=20000, seed=7)
    rng = np.random.default_rng(3)
    order = [(a,) for a in data.domain.attrs] + [("a", "b"), ("b", "c"), ("c", "e"), ("d", "e"), ("a", "c")]
    ms = [Measurement(c, data.project(c) + rng.normal(0, 2.0, data.domain.project(c).shape), 2.0) for c in order]
    k = len(data.domain.attrs)

    model = PGM(round_iters=3000, round_tol=1e-6).fit_round(data.domain, ms[:k], None)
    new = ms[k]
    pots = _expand(data.domain, model._pots, [new.clique] + [c for c in model._pots if set(c) - set(new.clique)])
    model._match_new(data.domain, pots, list(pots), [(new, new.sigma)])
    start = PGM()
    start._set_fitted(data.domain, ms[:k + 1], pots, float(new.noisy.sum()))
    big = new.noisy > 10 * new.sigma
    ratio = start.project(new.clique)[big] / new.noisy[big]  # the same up to the model's total
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)

    def rounds(model):
        its = 0
        for j in range(k, len(ms) + 1):
            model.fit_round(data.domain, ms[:j], None)
            its += model.iters_
        return model, its

    matched, its = rounds(PGM(round_iters=3000, round_tol=1e-3))  # AIM's round tolerance
    monkeypatch.setattr(PGM, "_match_new", lambda *a: None)
    unmatched, its_plain = rounds(PGM(round_iters=3000, round_tol=1e-3))
    cold = PGM(round_iters=20000, round_tol=0).fit_round(data.domain, ms, None)
    assert its < 0.85 * its_plain  # 1,041 against 1,399
    for q in order[k:] + [("a", "e"), ("b", "d")]:
        ref = cold.project(q)
        assert np.abs(matched.project(q) - ref).max() < 1e-3 * data.n
        assert np.abs(unmatched.project(q) - ref).max() < 1e-3 * data.n


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


def test_pgm_numpy_and_jax_engines_agree():
    """The numpy mirror descent (no compilation) without momentum and the jitted one run the same algorithm."""
    data = chain_data(n=3000, seed=2)
    rng = np.random.default_rng(0)
    cliques = [(a,) for a in data.domain.attrs] + [("a", "b"), ("b", "c"), ("c", "e"), ("a", "c", "d")]
    ms = [Measurement(c, data.project(c) + rng.normal(0, 5, data.domain.project(c).shape), 5.0) for c in cliques]
    a = PGM(iters=150, engine="numpy", momentum=False, tol=0.0).fit(data.domain, ms, np.random.default_rng(0))
    b = PGM(iters=150, engine="jax", tol=0.0).fit(data.domain, ms, np.random.default_rng(0))
    assert a.engine_ == "numpy" and b.engine_ == "jax" and a.iters_ == b.iters_ == 150
    for q in [("a", "b"), ("c", "e"), ("a", "d"), ("b", "d", "e")]:
        np.testing.assert_allclose(a.project(q), b.project(q), rtol=1e-6, atol=1e-6 * data.n)


def test_the_torch_engine_runs_the_numpy_engines_iteration():
    """engine="torch" (here on the CPU; on CUDA where present) takes the numpy engine's steps, momentum,
    tolerance and warm starts included: the same iterations, loss and estimate to rounding, for the final
    fit and for the between-rounds refits an adaptive selector asks for."""
    data = chain_data(n=3000, seed=2)
    rng = np.random.default_rng(0)
    cliques = [(a,) for a in data.domain.attrs] + [("a", "b"), ("b", "c"), ("c", "e"), ("a", "c", "d")]
    ms = [Measurement(c, data.project(c) + rng.normal(0, 5, data.domain.project(c).shape), 5.0) for c in cliques]
    for kw in ({"momentum": False, "tol": 0.0}, {}):
        a = PGM(iters=150, engine="numpy", **kw).fit(data.domain, ms, np.random.default_rng(0))
        b = PGM(iters=150, engine="torch", **kw).fit(data.domain, ms, np.random.default_rng(0))
        assert a.engine_ == "numpy" and b.engine_ == "torch" and a.iters_ == b.iters_
        assert b.alpha_ == pytest.approx(a.alpha_, rel=1e-12)
        for q in [("a", "b"), ("c", "e"), ("a", "d"), ("b", "d", "e")]:
            np.testing.assert_allclose(a.project(q), b.project(q), rtol=1e-9, atol=1e-9 * data.n)
    # rounds: the torch engine between rounds too, warm-started from the previous round.  Near convergence
    # a momentum step's "loss fell" test can flip on the last bit of a loss (numba's and numpy's sums too),
    # so the paths part there: run to a tight tolerance and compare the estimates they converge to
    a, b = (PGM(round_iters=3000, round_tol=1e-9, engine=e) for e in ("numpy", "torch"))
    for k in (len(data.domain.attrs), len(ms) - 1, len(ms)):
        for m in (a, b):
            m.fit_round(data.domain, ms[:k], np.random.default_rng(0))
        assert b.engine_ == "torch" and a.converged_ and b.converged_
        for q in [("a", "c", "d"), ("b", "e")]:
            np.testing.assert_allclose(a.project(q), b.project(q), rtol=1e-6, atol=1e-6 * data.n)
    assert b.warm_started_


def test_the_torch_engine_on_cuda_replays_one_graph_a_fit_with_the_eager_answer(monkeypatch):
    """On CUDA each fit captures its evaluation once as a CUDA graph and replays it every step: the same
    iterations and estimate as the eager loop, warm-started rounds included (a new graph each round)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the graph is a CUDA capture (the eager torch path is tested above)")
    from synthzoo.models import _pgm_torch

    made = []
    real = _pgm_torch._graph
    monkeypatch.setattr(_pgm_torch, "_graph", lambda *a: made.append(real(*a)) or made[-1])
    data = chain_data(n=3000, seed=2)
    rng = np.random.default_rng(0)
    cliques = [(a,) for a in data.domain.attrs] + [("a", "b"), ("b", "c"), ("c", "e"), ("a", "c", "d")]
    ms = [Measurement(c, data.project(c) + rng.normal(0, 5, data.domain.project(c).shape), 5.0) for c in cliques]
    fits = {}
    for graph in (False, True):
        monkeypatch.setattr(_pgm_torch, "CUDA_GRAPH", graph)
        m = PGM(iters=150, engine="torch", momentum=False, tol=0.0).fit(data.domain, ms, np.random.default_rng(0))
        r = PGM(round_iters=3000, round_tol=1e-9, engine="torch")
        for k in (len(data.domain.attrs), len(ms)):
            r.fit_round(data.domain, ms[:k], np.random.default_rng(0))
        fits[graph] = (m, r)
    assert len(made) == 3 and all(g is not None for g in made)
    assert fits[False][0].iters_ == fits[True][0].iters_ == 150
    # (the rounds to a tight tolerance: index_add_'s atomic adds vary the last bits from run to run on a GPU)
    for (a, b), tol in zip(zip(fits[False], fits[True]), (1e-9, 1e-6)):
        assert b.engine_ == "torch"
        for q in [("a", "b"), ("c", "e"), ("a", "d"), ("b", "d", "e")]:
            np.testing.assert_allclose(a.project(q), b.project(q), rtol=tol, atol=tol * data.n)


def test_auto_engine_takes_torch_on_a_gpu_for_large_models_between_rounds_too(monkeypatch):
    """engine="auto": numpy without a GPU or for a small model; torch on CUDA from _TORCH_CELLS cells, in
    the rounds as in the final fit; the jitted program only for a final fit on a JAX GPU (a compile
    per round's structure would cost more than it saves)."""
    from synthzoo.models import pgm

    monkeypatch.setattr(pgm, "_cuda", lambda: False)
    monkeypatch.setattr(pgm, "_gpu", lambda: False)
    assert pgm._pick_engine("auto", 10 ** 8, 1000) == "numpy"
    monkeypatch.setattr(pgm, "_cuda", lambda: True)
    assert pgm._pick_engine("auto", pgm._TORCH_CELLS - 1, 1000) == "numpy"
    assert pgm._pick_engine("auto", pgm._TORCH_CELLS, 250, compile_ok=False) == "torch"
    assert pgm._pick_engine("numpy", 10 ** 8, 1000) == "numpy"
    monkeypatch.setattr(pgm, "_cuda", lambda: False)
    monkeypatch.setattr(pgm, "_gpu", lambda: True)
    assert pgm._pick_engine("auto", 10 ** 7, 1000) == "jax"
    assert pgm._pick_engine("auto", 10 ** 7, 1000, compile_ok=False) == "numpy"
    assert PGM(engine="jax")._round_engine() == "numpy" and PGM(engine="torch")._round_engine() == "torch"


def test_the_jitted_engine_converges_to_the_numpy_engines_estimate():
    """Without momentum the jitted program needs more steps: with a tolerance it runs until its loss
    settles (up to 8 x iters), reaching the estimate the numpy engine (with momentum) converges to,
    where the same number of plain steps stops short."""
    data = chain_data(n=3000, seed=2)
    rng = np.random.default_rng(1)
    cliques = [(a,) for a in data.domain.attrs] + [("a", "b", "c"), ("b", "c", "d"), ("c", "d", "e")]
    ms = [Measurement(c, data.project(c) + rng.normal(0, 20, data.domain.project(c).shape), 20.0) for c in cliques]
    ref = PGM(iters=5000, engine="numpy", tol=0.0).fit(data.domain, ms, np.random.default_rng(0))
    a = PGM(iters=300, engine="numpy").fit(data.domain, ms, np.random.default_rng(0))
    plain = PGM(iters=300, engine="jax", tol=0.0).fit(data.domain, ms, np.random.default_rng(0))
    b = PGM(iters=300, engine="jax").fit(data.domain, ms, np.random.default_rng(0))
    assert plain.iters_ == 300 and 300 < b.iters_ <= 8 * 300

    def gap(m):
        return max(np.abs(m.project(c) - ref.project(c)).max() for c in cliques) / data.n

    # measured: numpy 2.7e-4 of the rows, 300 plain steps 5.8e-3, the jitted engine to its tolerance 1.2e-4
    assert gap(b) < 2 * gap(a) + 1e-4 and gap(b) < gap(plain) / 5


def test_pgm_fit_round_is_a_cheaper_warm_refit():
    data = chain_data(n=2000, seed=3)
    ones = [Measurement((a,), data.project((a,)), 0.0) for a in data.domain.attrs]
    model = PGM(iters=400, round_iters=20, engine="jax").fit_round(data.domain, ones, np.random.default_rng(0))
    assert model.engine_ == "numpy"  # between rounds: never a compile
    model.fit_round(data.domain, ones + [Measurement(("a", "b"), data.project(("a", "b")), 0.0)],
                    np.random.default_rng(0))
    assert model.warm_started_
    with pytest.raises(ConfigError, match="engine"):
        PGM(engine="cupy").fit(data.domain, ones, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="round_iters"):
        PGM(round_iters=0).fit(data.domain, ones, np.random.default_rng(0))


def test_pgm_refine_round_continues_a_loose_refit():
    """``refine_round`` takes the last between-rounds estimate of the same measurements on from where a
    loose ``round_tol`` stopped it, to the lower loss of ``refine_tol``; a no-op when ``refine_tol`` is
    not tighter."""
    data = chain_data(n=3000, seed=6)
    rng = np.random.default_rng(2)
    cliques = [(a,) for a in data.domain.attrs] + [("a", "b"), ("b", "c"), ("c", "e"), ("d", "e")]
    ms = [Measurement(c, data.project(c) + rng.normal(0, 20, data.domain.project(c).shape), 20.0) for c in cliques]
    model = PGM(round_iters=5000, round_tol=1e-2, refine_tol=1e-6, momentum=False)
    model.fit_round(data.domain, ms[:5], None)
    model.fit_round(data.domain, ms, None)
    loose, pots = model.iters_, {c: v.copy() for c, v in model._pots.items()}
    model.refine_round(data.domain, ms, None)
    assert model.warm_started_ and model.iters_ > loose
    ref = PGM(round_iters=20000, round_tol=1e-9, momentum=False).fit_round(data.domain, ms, None)
    early = PGM()
    early._set_fitted(data.domain, ms, pots, model.total_)
    gap = [sum(np.abs(m.project(c) - ref.project(c)).sum() for c in cliques) for m in (early, model)]
    assert gap[1] < 0.5 * gap[0]  # closer to the converged estimate
    same = PGM(round_tol=1e-3, refine_tol=1e-3).fit_round(data.domain, ms, None)
    before = {c: v.copy() for c, v in same._pots.items()}
    same.refine_round(data.domain, ms, None)
    assert all(np.array_equal(before[c], same._pots[c]) for c in before)


def test_pgm_queries_stay_within_the_model_size_cap():
    """A marginal across the junction tree is answered without any table beyond the cap: an attribute
    of 100 values carried through a node of 10,000 cells would need a million-cell table (what made
    AIM run out of memory on large data); the query is answered in blocks instead, with the same
    result as an unbounded elimination."""
    import tracemalloc

    rng = np.random.default_rng(0)
    sizes = [100, 10, 10, 10, 10, 10, 100]
    dom = Domain(list("abcdefg"), sizes)
    z = np.cumsum(rng.normal(size=(20000, 7)), axis=1)
    codes = np.column_stack([np.clip((z[:, i] / np.sqrt(i + 1) * s / 6 + s / 2).astype(int), 0, s - 1)
                             for i, s in enumerate(sizes)])
    data = EncodedData(codes, dom)
    ms = [Measurement(c, data.project(c), 1.0) for c in [("a", "b", "c"), ("c", "d", "e"), ("e", "f", "g")]]
    cap_mb = 0.25  # 32,768 cells: the model's nodes (10,000 and 1,000 cells) fit, a node x 'a' does not
    small = PGM(iters=30, max_model_size=cap_mb).fit(dom, ms, np.random.default_rng(0))
    big = PGM(iters=30, max_model_size=100.0).fit(dom, ms, np.random.default_rng(0))
    tracemalloc.start()
    try:
        for q in [("a", "g"), ("g", "b"), ("a", "d", "g")]:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            got = small.project(q)
            peak = tracemalloc.get_traced_memory()[1] - base
            # within the cap, besides the answer and the model's cached copy of it
            assert peak - 2 * got.nbytes <= cap_mb * 2 ** 20, (q, peak)
            np.testing.assert_allclose(got, big.project(q), rtol=1e-9, atol=1e-9 * data.n)
    finally:
        tracemalloc.stop()
    assert small._tree.limit == int(cap_mb * 2 ** 20 / 8)


def test_pgm_numpy_path_matches_the_compiled_kernel():
    """Without numba the engine runs the same algorithm in numpy (level-batched calibration)."""
    from synthzoo.models import pgm_engine
    from synthzoo.core.graph import junction_tree, maximal

    if pgm_engine._nb is None:
        pytest.skip("numba is not installed: only the numpy path exists")
    data = chain_data(n=3000, seed=4)
    rng = np.random.default_rng(1)
    cliques = [(a,) for a in data.domain.attrs] + [("a", "b"), ("b", "c"), ("c", "e"), ("a", "c", "d")]
    ms = [Measurement(c, data.project(c) + rng.normal(0, 3, data.domain.project(c).shape), 3.0) for c in cliques]
    mc = [m.clique for m in ms]
    cl = maximal(mc)
    plan = pgm_engine.Plan(data.domain, *junction_tree(data.domain, cl), cl, mc)
    theta = {c: np.zeros(data.domain.project(c).shape) for c in cl}
    lip = pgm_engine.lipschitz(data.domain, cl, mc, [3.0] * len(ms))
    args = (plan, [m.noisy for m in ms], [3.0] * len(ms), theta, float(data.n), 200, lip)
    for momentum in (False, True):
        a = pgm_engine.mirror_descent(*args, compiled=True, momentum=momentum)
        b = pgm_engine.mirror_descent(*args, compiled=False, momentum=momentum)
        assert a.iters == b.iters == 200
        np.testing.assert_allclose(a.marg, b.marg, rtol=1e-7, atol=1e-7 * data.n)
    # extreme potentials: messages in log space, nothing underflows to a lost separator value
    far = {c: np.where(np.arange(t.size).reshape(t.shape) % 2 == 0, -900.0, 0.0) for c, t in theta.items()}
    m1 = plan.calibrate(plan.beliefs(plan.flatten(far)), 100.0)
    m2 = plan._calibrate_numpy(plan.beliefs(plan.flatten(far)), 100.0)
    np.testing.assert_allclose(m1, m2, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("host,sub", [
    ("abcd", "ab"),    # last axes summed out: SUM blocks
    ("abcd", "bcd"),   # last axes kept in order: COPY blocks, consecutive targets
    ("abcd", "dcb"),   # kept in another order: blocks over the last axis, spaced targets
    ("abcd", "cda"),   # last two axes kept, next to each other but not last: spaced blocks
    ("abcd", "ac"),    # one summed axis last, kept ones around the summed
    ("abcd", ""),      # everything summed (a separator of two components)
    ("abcd", "abcd"),  # the identity
    ("abcd", "dcba"),  # a transposition
    # blocks of 2-4 cells, which the kernels run with the length a constant (a loop of its own per length)
    ("abc", "ab"), ("bca", "bc"), ("acb", "ac"),  # SUM, L 2, 3, 4
    ("bac", "bc"), ("cab", "cb"),                 # COPY onto consecutive targets, L 2, 4
    ("abc", "ca"), ("bca", "ab"), ("acb", "ba"),  # COPY onto spaced targets, L 2, 3, 4
])
def test_block_maps_sum_and_gather_as_the_per_cell_index(host, sub):
    """The compiled kernels read a map between tables as blocks of consecutive cells
    (``pgm_engine.block_map``); forward (sum onto the smaller table) and backward (gather from it,
    and the product-and-sum of calibration's distribute) they give what the per-cell index gives."""
    from synthzoo.models import _pgm_numba, pgm_engine

    if pgm_engine._nb is None:
        pytest.skip("numba is not installed")
    dom = Domain(tuple("abcd"), (3, 4, 2, 5))
    host, sub = tuple(host), tuple(sub)
    idx = pgm_engine.sub_index(dom, host, sub)
    kind, L, ds, first = pgm_engine.block_map(dom, host, sub, 0, np.int32)
    n, m = dom.size(host), dom.size(sub)
    B = (np.array([kind]), np.array([L]), np.array([ds]), np.array([0]), first)
    assert [_pgm_numba._target(i, 0, B) for i in range(n)] == idx.tolist()
    rng = np.random.default_rng(0)
    x, v = rng.random(n + 7), rng.random(m + 3)
    got = np.full(m + 3, 0.5)
    _pgm_numba._fwd(x, 7, n, got, 3, 0, B)
    want = np.full(m + 3, 0.5)
    want[3:] += np.bincount(idx, weights=x[7:], minlength=m)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    out = np.full(n + 2, 0.25)
    _pgm_numba._bwd(out, 2, n, v, 3, 0, B)
    np.testing.assert_allclose(out[2:], 0.25 + v[3:][idx], rtol=1e-15)
    u, prod = x[:n].copy(), np.empty(n)
    tot = _pgm_numba._bwd_mul_into(prod, u, 0, n, v[3:], 0, B)
    np.testing.assert_allclose(prod, x[:n] * v[3:][idx], rtol=1e-15)
    assert tot == pytest.approx(prod.sum(), rel=1e-13)
    _pgm_numba._bwd_mul_into(u, u, 0, n, v[3:], 0, B)  # in place
    np.testing.assert_array_equal(u, prod)
    if sub and host[-1] not in sub:
        assert kind == pgm_engine.SUM and L > 1
    elif sub:
        assert kind == pgm_engine.COPY and L > 1


def test_the_compiled_exponential_is_exact_to_rounding():
    """Calibration's one exponential per cell is a vectorised one (``_exp_below``): within 2 ulp of
    numpy's, 0 only where ``exp`` is subnormal, and NaN (a step that made one is rejected) stays NaN."""
    from synthzoo.models import _pgm_numba, pgm_engine

    if pgm_engine._nb is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(2)
    t = np.concatenate([-rng.exponential(40, 3000), rng.uniform(-1e-9, 0, 300),
                        [0.0, -0.5 * np.log(2), -707.9, -708.0, -709.0, -745.2, -1e300, -np.inf, np.nan]])
    for top in (0.0, 12.5, -3e5):
        u = np.empty_like(t)
        _pgm_numba._exp_below(t + top, 0, t.size, top, u, np.empty(_pgm_numba._CHUNK))
        ref = np.exp((t + top) - top)
        big = ref > 1e-300
        assert np.max(np.abs(u[big] - ref[big]) / ref[big]) < 4.5e-16
        assert np.all(u[~big & ~np.isnan(t)] < 1e-300)
        assert np.isnan(u[-1]) and u[-2] == 0.0 and u[-3] == 0.0


def test_a_child_reaches_its_separator_in_long_blocks():
    """Each child node's axes are laid out as its separator's (in its parent's order) and then its own, so
    its map onto the separator is one sum over trailing cells (AIM's large models had a kept last axis
    of 2 values there, blocks of 2 cells); the marginals are the brute-force joint's on either path."""
    from synthzoo.models import pgm_engine

    dom = Domain(tuple("abcde"), (3, 4, 2, 5, 2))
    cliques = [("a", "b", "e"), ("a", "d", "e"), ("b", "c")]
    nodes, edges = cliques, [(cliques[0], cliques[1]), (cliques[0], cliques[2])]
    plan = pgm_engine.Plan(dom, nodes, edges, cliques)
    assert sorted(map(sorted, plan.order)) == sorted(map(sorted, nodes))
    assert plan.order[0] == ("a", "b", "e")  # a root keeps its order
    for i, c in enumerate(plan.order):
        p = plan.parent[c]
        if p is None:
            continue
        sep = tuple(a for a in p if a in c)
        assert c[:len(sep)] == sep
        kind, L = plan.bm_kind[plan.sep_map[i]], plan.bm_L[plan.sep_map[i]]
        assert kind == pgm_engine.SUM and L == dom.size(c[len(sep):])
    rng = np.random.default_rng(3)
    theta = {c: rng.normal(size=dom.project(c).shape) for c in cliques}
    idx = {a: k for k, a in enumerate(dom.attrs)}

    def full(c, t):  # a table over c as an array over every axis, in the domain's order
        return t.transpose(np.argsort([idx[a] for a in c])).reshape([dom[a] if a in c else 1 for a in dom.attrs])

    logp = sum(full(c, t) for c, t in theta.items())
    joint = np.exp(logp - logp.max())
    joint *= 50.0 / joint.sum()
    lb = plan.beliefs(plan.flatten(theta))
    for marg in (plan.calibrate(lb, 50.0), plan._calibrate_numpy(lb, 50.0)):
        for c, table in plan.node_tables(marg).items():
            want = joint.sum(axis=tuple(k for k in range(5) if dom.attrs[k] not in c))
            want = want.transpose(np.argsort(np.argsort([idx[a] for a in c])))
            np.testing.assert_allclose(table, want, rtol=1e-10)


def test_node_marginals_reach_many_hosted_potentials_through_intermediates():
    """A node holding many potentials is summed onto them through smaller intermediate tables (fewer
    cells visited than one pass over the node per potential), and the program gives exactly the
    potentials' marginals; run backwards it spreads per-potential values onto the node as the sum
    of their broadcasts.  Both the compiled and the numpy path."""
    from synthzoo.models import _pgm_numba, pgm_engine
    from synthzoo.models.pgm import _aligned, _sum_to

    dom = Domain(tuple("abcdef"), (5, 4, 3, 6, 2, 7))
    node = tuple("abcdef")
    pots = [("a", "b"), ("a", "c"), ("b", "c"), ("a", "d"), ("c", "d"), ("b", "e"), ("d", "e"), ("e", "f")]
    plan = pgm_engine.Plan(dom, [node], [], pots)
    assert len(plan.st_src) > len(pots)  # intermediates were used
    assert plan.st_len.sum() < len(pots) * dom.size(node) / 2
    rng = np.random.default_rng(3)
    marg = rng.random(plan.N)
    table = marg.reshape(dom.shape)
    want = np.concatenate([_sum_to(node, table, c)[1].ravel() for c in pots])
    np.testing.assert_allclose(plan.clique_marginals(marg), want, rtol=1e-12)
    z = np.empty(plan.Z)
    _pgm_numba._reduce(z, marg, plan.kernel_arrays())
    np.testing.assert_allclose(z[:plan.T], want, rtol=1e-12)
    T = rng.normal(size=plan.T)
    spread = sum(_aligned(c, tab, node) for c, tab in plan.tables(T).items()).ravel()
    np.testing.assert_allclose(plan.beliefs(T), spread, rtol=1e-12, atol=1e-12)
    out = np.empty(plan.N)
    _pgm_numba._spread(out, z, T, plan.kernel_arrays())
    np.testing.assert_allclose(out, spread, rtol=1e-12, atol=1e-12)


def test_potentials_and_measurements_are_stored_in_their_host_nodes_axis_order():
    """A potential whose clique lists its attributes in another order than its host node is stored in the
    node's order, and so is each measurement within its potential: every map of the reduction program and
    of the measurements keeps the axes' order (a transposition there was half of an iteration on AIM's
    large models).  The tables and the measurements go in and come out in their own order, and a fit on
    either path reproduces exact marginals given in any order."""
    from synthzoo.models import pgm_engine

    dom = Domain(tuple("abcd"), (3, 4, 2, 5))
    cliques = [("b", "a", "c"), ("d", "c", "a")]
    meas = [("c", "b", "a"), ("a", "d"), ("d",), ("c", "d", "a")]
    plan = pgm_engine.Plan(dom, cliques, [(cliques[0], cliques[1])], cliques, meas)
    assert any(plan.layout[c] != c for c in cliques)
    for c in cliques:
        assert plan.layout[c] == tuple(a for a in plan.host[c] if a in c)
    for attrs, target in plan.st_axes:
        assert [a for a in attrs if a in target] == list(target)
    for c, ml in zip(plan._meas_host, plan.m_layout):
        assert [a for a in plan.layout[c] if a in ml] == list(ml)
    rng = np.random.default_rng(5)
    theta = {c: rng.normal(size=dom.project(c).shape) for c in cliques}
    back = plan.tables(plan.flatten(theta))
    for c in cliques:
        np.testing.assert_array_equal(back[c], theta[c])
        assert back[c].flags.c_contiguous
    # exact marginals of a random table, measured in the attributes' given orders
    data = EncodedData(np.column_stack([rng.integers(0, k, 400) for k in dom.shape]), dom)
    ms = [Measurement(m, data.project(m), 1.0) for m in meas]
    for compiled in (True, False):
        y = plan.measured([m.noisy for m in ms])
        w = np.ones_like(y)
        res = pgm_engine.mirror_descent(plan, [m.noisy for m in ms], [1.0] * len(ms),
                                        {c: np.zeros(dom.project(c).shape) for c in cliques}, 400.0, 3000,
                                        pgm_engine.lipschitz(dom, cliques, meas, [1.0] * len(ms)),
                                        compiled=compiled, momentum=True)
        assert y.shape == w.shape == (sum(dom.size(m) for m in meas),)
        model = plan.node_marginals(res.theta, 400.0)
        for m in ms:
            host = next(n for n in plan.order if set(m.clique) <= set(n))
            got = model[host].sum(axis=tuple(k for k, a in enumerate(host) if a not in m.clique))
            got = got.transpose([tuple(a for a in host if a in m.clique).index(a) for a in m.clique])
            np.testing.assert_allclose(got, m.noisy, atol=0.05)


def _kernel_module_functions() -> list:
    """The top-level functions of the compiled kernels' module, parsed from its source (a kernel loaded from
    numba's disk cache does not show what it was compiled from)."""
    import ast
    import inspect

    from synthzoo.models import _pgm_numba

    return [fn for fn in ast.parse(inspect.getsource(_pgm_numba)).body if isinstance(fn, ast.FunctionDef)]


def test_the_compiled_kernels_are_called_with_no_constant_argument():
    """numba types a constant argument of a call between compiled kernels (a 0 offset, a True flag) as a
    literal and compiles another copy of the callee for it: about 4 of the 18-22 s that a fresh install's
    first ``aim`` fit spent compiling.  The kernels pass typed values (``np.int64(0)``, ``np.bool_(True)``);
    this reads the source, since a kernel loaded from numba's disk cache does not list its callees'
    specialisations.  The ``inline="always"`` helpers may take constants (they are inlined, not called), so
    they are not counted."""
    import ast

    functions = _kernel_module_functions()

    def cached(fn):
        return any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "cached_njit" for d in fn.decorator_list)

    kernels = {fn.name for fn in functions if cached(fn)}
    assert {"mirror_descent", "calibrate", "_fwd", "_bwd", "_measurements", "_bsum"} <= kernels
    constant = []
    for fn in functions:
        for call in ast.walk(fn):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in kernels:
                constant += [(fn.name, call.func.id, ast.unparse(a)) for a in call.args if isinstance(a, ast.Constant)]
    assert constant == []


def test_the_compiled_kernels_copy_no_array_into_a_slice():
    """``a[lo:hi] = b[lo:hi]`` makes numba compile its broadcasting assignment and the error it raises on a shape
    mismatch: the two such copies (``calibrate``, ``_spread``) cost a fresh install's first ``aim`` fit about 2 s
    of compiling.  The kernels copy with a loop; a scalar filled into a slice (``z[:] = 0.0``) is cheap."""
    import ast

    copies = []
    for fn in _kernel_module_functions():
        copies += [(fn.name, ast.unparse(a)) for a in ast.walk(fn) if isinstance(a, ast.Assign)
                   and any(isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Slice) for t in a.targets)
                   and not isinstance(a.value, ast.Constant)]
    assert copies == []


def test_pgm_stops_when_converged():
    """``tol``: a fit stops once the loss has stopped falling; the estimate is the converged one."""
    data = chain_data(n=2000, seed=5)
    ms = [Measurement(c, data.project(c), 1.0) for c in [(a,) for a in data.domain.attrs] + [("a", "b"), ("b", "c")]]
    loose = PGM(iters=5000, tol=1e-3).fit(data.domain, ms, np.random.default_rng(0))
    full = PGM(iters=5000, tol=0.0).fit(data.domain, ms, np.random.default_rng(0))
    assert loose.converged_ and loose.iters_ < 5000 and full.iters_ == 5000
    for q in [("a", "b"), ("b", "c"), ("a", "c")]:
        assert np.abs(loose.project(q) - full.project(q)).sum() / data.n < 0.01


def test_momentum_reaches_the_same_estimate_in_fewer_iterations():
    """Restarted Nesterov momentum changes the path, not the fixed point: after 1,000 iterations it
    is past where plain mirror descent gets after 20,000, and the loss never rises."""
    from synthzoo.core.graph import junction_tree, maximal
    from synthzoo.models import pgm_engine

    data = chain_data(n=5000, seed=6)
    rng = np.random.default_rng(2)
    cliques = [(a,) for a in data.domain.attrs] + [("a", "b"), ("b", "c"), ("c", "e"), ("a", "c", "d")]
    sig = [40.0] * len(data.domain.attrs) + [2.0, 5.0, 2.0, 10.0]  # mixed noise: plain steps are slow
    ms = [Measurement(c, data.project(c) + rng.normal(0, s, data.domain.project(c).shape), s)
          for c, s in zip(cliques, sig)]
    mc = [m.clique for m in ms]
    cl = maximal(mc)
    plan = pgm_engine.Plan(data.domain, *junction_tree(data.domain, cl), cl, mc)
    theta = {c: np.zeros(data.domain.project(c).shape) for c in cl}
    lip = pgm_engine.lipschitz(data.domain, cl, mc, sig)

    def run(iters, momentum):
        return pgm_engine.mirror_descent(plan, [m.noisy for m in ms], sig, theta, float(data.n), iters, lip,
                                         momentum=momentum)

    fast, slow, plain = run(1000, True), run(20000, False), run(1000, False)
    assert fast.loss <= slow.loss and fast.loss < plain.loss
    assert np.abs(fast.marg - slow.marg).max() < 1e-3 * data.n
    losses = [run(i, True).loss for i in (10, 20, 40, 80)]
    assert all(b <= a for a, b in zip(losses, losses[1:]))


def test_calibration_with_underflowing_separators_stays_in_its_buffers(tmp_path):
    """Extreme saved potentials (a model file is untrusted) take calibration's log-sum-exp branch,
    whose scratch buffer is the separators' size: a smaller one was overrun (heap corruption, seen
    only when the process freed memory), so the run is a child process with glibc's checks on."""
    import os
    import subprocess
    import sys

    code = r"""
import gc, json, warnings
import synthzoo as sz
from synthzoo.datasets import make_demo
df, schema = make_demo(n=400, seed=1)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    doc = sz.make("mst", epsilon=1.0, schema=schema, seed=0, model={"name": "pgm", "iters": 50}).fit(df).to_json()
for pot in doc["model_state"]["potentials"]:
    for big in (800.0, 1e308):        # exp(-800) underflows: messages through logs; 1e308 overflows
        pot["values"][0] = big
        try:
            sz.Synthesizer.from_json(json.loads(json.dumps(doc))).sample(5)
        except sz.ConfigError:        # refused as a malformed file: fine, if nothing was overrun
            pass
gc.collect()
print("ok")
"""
    env = {**os.environ, "MALLOC_CHECK_": "3"}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), (r.returncode, r.stderr[-2000:])


@pytest.mark.parametrize("numpy_path", [False, True])
def test_calibration_of_a_subnormal_message_matches_the_joint(numpy_path):
    """A child whose beliefs on one separator cell are ~exp(-744) below its peak sends a message that
    is subnormal in probability space (a few significant bits); when the parent's mass sits on that
    cell, dividing by the message overflowed and calibration failed ("the starting potentials give
    no finite marginals", RAP++ x pgm on 1,000 adult rows, where momentum drives potentials hundreds
    apart).  Such messages are now taken by log-sum-exp; the marginals match the brute-force joint."""
    from synthzoo.models import pgm_engine

    dom = Domain(("a", "b", "c"), (2, 2, 3))
    ab, bc = ("a", "b"), ("b", "c")
    theta = {ab: np.array([[0.0, 754.0], [0.3, 754.2]]), bc: np.array([[0.0, 0.1, -0.2], [-744.0, -744.1, -743.9]])}
    plan = pgm_engine.Plan(dom, [ab, bc], [(ab, bc)], [ab, bc])
    assert plan.parent[bc] == ab  # the subnormal message goes from bc up to ab
    logp = theta[ab][:, :, None] + theta[bc][None, :, :]
    p = np.exp(logp - logp.max())
    p *= 100.0 / p.sum()
    lb = plan.beliefs(plan.flatten(theta))
    marg = plan._calibrate_numpy(lb, 100.0) if numpy_path else plan.calibrate(lb, 100.0)
    tables = plan.node_tables(marg)
    np.testing.assert_allclose(tables[ab], p.sum(axis=2), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(tables[bc], p.sum(axis=0), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("select", ["mst", "aim", "privmrf"])
def test_a_model_size_cap_that_cannot_hold_the_domain_is_refused_before_any_charge(select):
    """A cap below one cell a column is refused when the synthesizer is built; one below the encoded
    domain's one-way marginals before the selector charges anything (both used to fail in the model's
    fit, "no measurement fits", after the selector had spent its budget)."""
    import synthzoo as sz
    from synthzoo.datasets import make_demo

    df, schema = make_demo(600)
    with pytest.raises(ConfigError, match=r"max_model_size=1e-06 MB cannot hold the 11 columns"):
        sz.Synthesizer(select=select, model={"name": "pgm", "max_model_size": 1e-6}, epsilon=1.0, delta=1e-5,
                       schema=schema)
    synth = sz.Synthesizer(select=select, model={"name": "pgm", "max_model_size": 1e-4}, epsilon=1.0, delta=1e-5,
                           schema=schema)
    with pytest.raises(ConfigError, match=r"cannot hold the one-way marginals of the encoded domain"):
        synth.fit(df)
    assert synth.ledger_.spent().epsilon == 0
