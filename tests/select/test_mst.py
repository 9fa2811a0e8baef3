"""The "mst" selector (McKenna, Sheldon, Miklau, JPC 2021): a spanning tree over all attributes,
the budget in thirds and never exceeded, the model's estimate used for the edge weights."""

import time

import numpy as np
import pytest

from helpers import ProductModel, chain_data, selector_stage
from synthzoo.core.errors import ConfigError
from synthzoo.select.mst import MST


# ------------------------------------------------------------------------------------ MST
@pytest.mark.parametrize("epsilon", [0.3, None])
def test_mst_tree_spans_all_attributes(epsilon):
    data = chain_data()
    ledger, budget = selector_stage(epsilon)
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
    ledger, budget = selector_stage(epsilon, share=0.9)
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
    runs = [MST().run(data, selector_stage(1.0, noise_seed=n)[1], np.random.default_rng(3)) for n in (3, 3, 4)]
    for x, y in zip(runs[0], runs[1]):
        assert x.clique == y.clique and x.sigma == y.sigma
        np.testing.assert_array_equal(x.noisy, y.noisy)
    assert any(not np.array_equal(x.noisy, y.noisy) for x, y in zip(runs[0], runs[2]))
    fresh = [MST().run(data, selector_stage(1.0)[1], np.random.default_rng(3)) for _ in range(2)]
    assert any(not np.array_equal(x.noisy, y.noisy) for x, y in zip(*fresh))  # same generator, new noise


def test_mst_uses_the_model_estimate():
    data = chain_data()
    model = ProductModel()
    MST().run(data, selector_stage(1.0)[1], np.random.default_rng(0), model=model)
    assert model.fits_ == 1 and set(model.one_) == set(data.domain.attrs)


def test_mst_bad_shares():
    with pytest.raises(ConfigError, match="shares"):
        MST(shares=(1, 0, 1)).run(chain_data(n=100), selector_stage(1.0)[1], np.random.default_rng(0))


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
