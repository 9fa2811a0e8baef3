"""PrivMRF selection: budget use and accounting, reproducibility, parameter checks, any model through
fit/project, non-private runs, the network's size cap and helpers, and that the chosen marginals
follow the data's dependencies."""

import itertools
import math

import dp_accounting as dpa
import numpy as np
import pandas as pd
import pytest

import synthzoo as sz
from synthzoo.core.base import Model
from synthzoo.core.domain import Domain, EncodedData
from synthzoo.core.errors import ConfigError
from synthzoo.core.graph import junction_tree_cells, triangulate
from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.core.scores import model_errors
from synthzoo.datasets import make_demo
from synthzoo.models import GUM
from synthzoo.select import PrivMRF
from synthzoo.select.privmrf import maximal_sets, subsets_within


@pytest.fixture(scope="module")
def demo():
    return make_demo(n=1500, seed=0)


def synth(schema, model="gum", epsilon=1.0, seed=0, noise_seed=None, **params):
    return sz.Synthesizer(preprocess=["uniform"], select={"name": "privmrf", **params}, model=model,
                          epsilon=epsilon, delta=1e-5, schema=schema, seed=seed, noise_seed=noise_seed)


def dependent_table(n=6000, seed=0):
    """a -> e (a noisy copy), a -> b -> c chain, d independent of everything."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    e = np.where(rng.random(n) < 0.9, a, rng.integers(0, 4, n))
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 4, n))
    c = np.where(rng.random(n) < 0.7, b, rng.integers(0, 4, n))
    d = rng.integers(0, 3, n)
    dom = Domain(list("abcde"), [4, 4, 4, 3, 4])
    return EncodedData(np.stack([a, b, c, d, e], axis=1), dom)


class IndependentModel(Model):
    """A minimal measurement-fitting model: only ``fit`` and ``project`` (product of one-way estimates
    taken from any measurement holding the attribute).  Not registered."""

    _tags = {"answers_marginals": True}

    def fit(self, domain, measurements, rng):
        self.domain_ = domain
        self.one = {}
        for m in measurements:
            for i, a in enumerate(m.clique):
                axes = tuple(j for j in range(len(m.clique)) if j != i)
                self.one.setdefault(a, np.clip(m.noisy.sum(axis=axes), 0, None))
        self.total = float(np.mean([m.noisy.sum() for m in measurements]))
        self.fits = getattr(self, "fits", 0) + 1
        return self

    def project(self, clique):
        out = np.array(self.total)
        for a in clique:
            p = self.one.get(a, np.ones(self.domain_[a]))
            out = np.multiply.outer(out, p / p.sum() if p.sum() > 0 else np.full(p.size, 1 / p.size))
        return out

    def sample(self, n, rng):  # independent columns from the one-way estimates
        cols = []
        for a in self.domain_.attrs:
            p = self.one.get(a, np.ones(self.domain_[a]))
            p = p / p.sum() if p.sum() > 0 else np.full(p.size, 1 / p.size)
            cols.append(rng.choice(p.size, size=n, p=p))
        return np.stack(cols, axis=1).astype(np.int64) if cols else np.zeros((n, 0), dtype=np.int64)

    def get_state(self):
        return {}

    def set_state(self, state, domain):
        pass


# ------------------------------------------------------------------------------ pipeline
@pytest.mark.parametrize("model", ["gum", "pgm"])
def test_runs_and_spends_its_whole_budget_but_never_more(model, demo):
    df, schema = demo
    s = synth(schema, model=model, epsilon=1.0).fit(df)
    spent = s.privacy_spent()
    assert 0.999 <= spent.epsilon <= 1.0 * (1 + 1e-9) and spent.delta <= 1e-5
    row = s.privacy_breakdown().set_index("module").loc["privmrf"]
    assert row["rho"] == pytest.approx(s.ledger_.total_rho, rel=1e-6)  # the whole stage (no preprocessing cost)
    assert row["rho"] <= s.ledger_.total_rho * (1 + 1e-9)
    fake = s.sample(300)
    assert list(fake.columns) == list(df.columns) and len(fake) == 300
    schema.validate(fake)
    assert s.select.selected_ and all(isinstance(c, tuple) for c in s.select.selected_)


def test_small_epsilon_still_within_budget(demo):
    df, schema = demo
    s = synth(schema, epsilon=0.05).fit(df)
    assert 0.0499 <= s.privacy_spent().epsilon <= 0.05 * (1 + 1e-9)


def test_same_seed_same_samples(demo):
    df, schema = demo
    a = synth(schema, seed=3, noise_seed=2).fit(df)
    b = synth(schema, seed=3, noise_seed=2).fit(df)
    c = synth(schema, seed=4, noise_seed=2).fit(df)
    assert a.select.selected_ == b.select.selected_
    pd.testing.assert_frame_equal(a.sample(300), b.sample(300))
    assert not a.sample(300).equals(c.sample(300))


def test_non_private_run(demo):
    df, schema = demo
    with pytest.warns(UserWarning, match="NON-PRIVATE"):
        s = synth(schema, epsilon=None)
    s.fit(df)
    assert math.isinf(s.privacy_spent().epsilon)
    assert "NO differential privacy" in s.privacy_report()
    sel = s.select
    d = len(df.columns)
    assert 0 < len(sel.history_) <= min(d // 2, 8)
    # exact measurements: each refinement marginal is new, and the rounds stop
    assert len(set(sel.selected_)) == len(sel.selected_)
    schema.validate(s.sample(100))


# ---------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("param, value", [
    ("graph_share", 0.0), ("graph_share", 1.0), ("graph_share", "x"), ("criteria_share", -0.1),
    ("criteria_share", 0.95), ("theta", 0), ("theta", float("nan")), ("refine_ratio", -1),
    ("steps", 0), ("steps", 2.5), ("max_candidates", 0), ("max_candidates", True), ("max_attrs", 0),
    ("max_model_size", 0), ("max_model_size", "big")])
def test_bad_parameters_raise_config_error_naming_them(param, value, demo):
    _, schema = demo
    with pytest.raises(ConfigError, match=param):
        synth(schema, **{param: value})


def test_unknown_parameter_and_missing_model_are_config_errors(demo):
    _, schema = demo
    with pytest.raises(ConfigError, match="privmrf"):
        synth(schema, rounds=3)
    data = dependent_table(500)
    led = PrivacyLedger(1.0, 1e-5)
    with pytest.raises(ConfigError, match="adaptive"):
        PrivMRF().run(data, led.stage("s", 1.0), np.random.default_rng(0), model=None)


# ------------------------------------------------------------------------------ accounting
def run_direct(data, epsilon=2.0, model=None, seed=0, **params):
    led = PrivacyLedger(epsilon, 1e-5)
    budget = led.stage("privmrf", 1.0)
    sel = PrivMRF(**params)
    ms = sel.run(data, budget, np.random.default_rng(seed), model=model or GUM(iterations=20))
    return sel, ms, led


def test_every_noisy_statistic_is_charged_with_its_sensitivity():
    data = dependent_table(3000)
    sel, ms, led = run_direct(data, epsilon=1.0, graph_share=0.1, criteria_share=0.1)
    rho = led.total_rho
    notes = [c.note for c in led.charges]
    count = [c for c in led.charges if c.note.startswith("record count")]
    pairs = [c for c in led.charges if c.note.startswith("pairwise dependency")]
    crit = [c for c in led.charges if "L1 criteria" in c.note]
    margs = [c for c in led.charges if c.note.startswith("marginal")]
    # real-valued scores: the Gaussian mechanism; counts: the discrete Gaussian (an exact zCDP event)
    assert all(isinstance(c.event, dpa.GaussianDpEvent) for c in pairs + crit)
    assert all(isinstance(c.event, dpa.ZCDpEvent) for c in count + margs)
    assert len(count) == 1 and len(pairs) == 1 and len(crit) == len(sel.history_) > 0
    assert len(margs) == len(ms) == len(sel.selected_) and len(notes) == 2 + len(crit) + len(margs)
    # shares: graph 0.1 (count + pair scores), criteria 0.1, marginals the rest
    assert count[0].rho + pairs[0].rho == pytest.approx(0.1 * rho, rel=1e-9)
    assert sum(c.rho for c in crit) == pytest.approx(0.1 * rho, rel=1e-9)
    assert sum(c.rho for c in margs) == pytest.approx(0.8 * rho, rel=1e-6)
    assert sum(c.rho for c in led.charges) <= rho * (1 + 1e-9)
    # sensitivities: 4 sqrt(m) for the m pair scores, sqrt(k) for k criteria, 1 per marginal
    m = math.comb(len(data.domain), 2)
    sigma_pairs = 4 * math.sqrt(m) * pairs[0].event.noise_multiplier
    assert sel.sigma_pairs_ == pytest.approx(sigma_pairs)
    assert pairs[0].rho == pytest.approx(1 / (2 * pairs[0].event.noise_multiplier ** 2))
    for c, h in zip(crit, sel.history_):
        assert h["sigma_criteria"] == pytest.approx(math.sqrt(h["candidates"]) * c.event.noise_multiplier)
    for c, m_ in zip(margs, ms):
        assert c.rho == pytest.approx(1 / (2 * m_.sigma ** 2))


def test_pipeline_ledger_lists_the_selection_charges(demo):
    df, schema = demo
    # replayable noise (test-only): under secret noise a run can, rarely, find no marginal worth refining
    s = synth(schema, epsilon=1.0, noise_seed=0).fit(df)
    notes = [c.note for c in s.ledger_.charges if c.module == "privmrf"]
    assert any(n.startswith("pairwise dependency") for n in notes)
    assert any("L1 criteria" in n for n in notes)
    assert "privmrf" in s.privacy_report()


def test_whole_budget_spent_without_refinement():
    data = dependent_table(2000)
    sel, ms, led = run_direct(data, epsilon=1.0, refine_ratio=0.0)
    assert sel.history_ == [] and len(ms) == len(sel.initial_)
    assert led.rho_spent == pytest.approx(led.total_rho, rel=1e-6)
    assert led.rho_spent <= led.total_rho * (1 + 1e-9)


def test_one_attribute_table_spends_everything():
    data = EncodedData(np.random.default_rng(0).integers(0, 5, (800, 1)), Domain(["x"], [5]))
    sel, ms, led = run_direct(data, epsilon=1.0)
    assert [m.clique for m in ms] == [("x",)]
    assert led.rho_spent == pytest.approx(led.total_rho, rel=1e-6)


def test_criteria_move_by_at_most_one_per_record():
    """The sensitivity the criteria are charged with: adding a record moves each L1 error by <= 1."""
    data = dependent_table(1000)
    model = IndependentModel().fit(data.domain, [type("M", (), {"clique": ("a",), "noisy": np.full(4, 250.0)})()],
                                   None)
    cliques = [("a",), ("a", "b"), ("b", "c", "e"), ("d",)]
    before = model_errors(cliques, data, model)
    rng = np.random.default_rng(1)
    for _ in range(20):
        row = np.array([[rng.integers(0, s) for s in data.domain.shape]])
        bigger = EncodedData(np.vstack([data.codes, row]), data.domain)
        after = model_errors(cliques, bigger, model)
        assert np.all(np.abs(after - before) <= 1 + 1e-9)


# -------------------------------------------------------------------------- any model
def test_works_with_a_model_that_only_fits_and_projects():
    data = dependent_table(3000)
    model = IndependentModel()
    sel, ms, led = run_direct(data, epsilon=2.0, model=model, steps=2)
    assert model.fits == 2  # once before each refinement round, never after the last one
    assert len(sel.history_) == 2
    assert led.rho_spent == pytest.approx(led.total_rho, rel=1e-6)


def test_bad_model_answer_is_reported():
    class Broken(IndependentModel):
        def project(self, clique):
            return np.zeros(1)

    data = dependent_table(2000)
    with pytest.raises(ConfigError, match="project"):
        run_direct(data, epsilon=2.0, model=Broken())


# --------------------------------------------------------------------------- statistics
def two_pair_table(n=8000, seed=0):
    """Eight 6-valued attributes: e copies a (80 %), c copies b (60 %), everything else independent."""
    rng = np.random.default_rng(seed)
    cols = {k: rng.integers(0, 6, n) for k in "abcdfgh"}
    cols["e"] = np.where(rng.random(n) < 0.8, cols["a"], rng.integers(0, 6, n))
    cols["c"] = np.where(rng.random(n) < 0.6, cols["b"], cols["c"])
    names = list("abcdefgh")
    return EncodedData(np.stack([cols[k] for k in names], axis=1), Domain(names, [6] * 8))


def test_strongly_dependent_pairs_are_selected():
    """At epsilon 2 only pairs are theta-useful (216-cell triples are not); the greedy Bayesian
    network must pick the two dependent pairs among the 28 for the initial measurements."""
    data = two_pair_table()
    for seed in range(3):
        sel, ms, _ = run_direct(data, epsilon=2.0, seed=seed, model=GUM(iterations=30))
        assert ("a", "e") in sel.initial_ and ("b", "c") in sel.initial_
        assert max(len(c) for c in sel.selected_) == 2
        assert len(sel.initial_) <= len(data.domain)


def test_exact_run_measures_the_dependent_pairs():
    data = dependent_table(8000)
    led = PrivacyLedger(None, 1e-5)
    sel = PrivMRF(max_attrs=2)
    sel.run(data, led.stage("s", 1.0), np.random.default_rng(0), model=GUM(iterations=30))
    assert ("a", "e") in sel.selected_ and ("a", "b") in sel.selected_ and ("b", "c") in sel.selected_


def test_noisy_pair_scores_rank_dependent_pairs_first():
    data = dependent_table(8000)
    # a cap of 30 cells: after the first edge (16 cells for a 4x4 pair + 11 for the rest) no other fits,
    # so the network is exactly the pair with the largest noisy TVD, a-e
    for seed in range(3):
        sel, _, _ = run_direct(data, epsilon=5.0, seed=seed, max_model_size=30 * 8 / 2 ** 20)
        assert sel.cliques_ == [("a", "e"), ("b",), ("c",), ("d",)]


# ------------------------------------------------------------------------------ helpers
def test_triangulate_adds_a_chord_to_a_four_cycle():
    adj = [0b1010, 0b0101, 0b1010, 0b0101]  # 0-1-2-3-0
    chordal, cliques = triangulate(adj, [math.log(3)] * 4)
    edges = {(u, v) for u in range(4) for v in range(u + 1, 4) if chordal[u] >> v & 1}
    assert len(edges) == 5  # one chord
    assert len(cliques) == 2 and all(bin(c).count("1") == 3 for c in cliques)


def test_network_respects_the_size_cap():
    rng = np.random.default_rng(0)
    d = 9
    dom = Domain([f"x{i}" for i in range(d)], rng.integers(3, 12, d))
    tvd = rng.random((d, d))
    tvd = np.triu(tvd, 1) + np.triu(tvd, 1).T
    for cap_mb in (0.001, 0.05, 2.0):
        cliques = PrivMRF(max_model_size=cap_mb)._network(dom, tvd, cap_mb * 2 ** 20 / 8)
        assert {a for c in cliques for a in c} == set(dom.attrs)
        assert junction_tree_cells(dom, cliques) <= cap_mb * 2 ** 20 / 8
    # a generous cap gives the complete graph
    assert PrivMRF()._network(dom, tvd, 1e12) == [dom.attrs]


def test_maximal_sets_and_subsets_match_brute_force():
    sizes = [2, 3, 5, 7, 2]
    items = [0, 1, 2, 3, 4]
    for limit, kmax in [(30, 3), (12, 2), (1, 4), (0.5, 2), (1000, 5)]:
        feasible = [s for k in range(kmax + 1) for s in itertools.combinations(items, k)
                    if math.prod(sizes[i] for i in s) <= limit]
        maximal = {s for s in feasible if not any(set(s) < set(o) for o in feasible)}
        assert {tuple(sorted(s)) for s in maximal_sets(items, sizes, limit, kmax)} == maximal
        subs = [s for k in range(1, kmax + 1) for s in itertools.combinations(items, k)
                if k == 1 or math.prod(sizes[i] for i in s) <= limit]
        assert sorted(subsets_within(items, sizes, limit, kmax)) == sorted(subs)


def test_theta_useful_cap_on_measured_marginals():
    data = dependent_table(3000)
    sel, ms, _ = run_direct(data, epsilon=0.5, theta=6.0)
    sigma = ms[0].sigma
    cap = sel.n_hat_ / (6.0 * max(1.0, math.sqrt(2 / math.pi) * sigma))
    for m in ms:
        if len(m.clique) > 1:
            assert m.noisy.size <= cap * 1.3  # 1.3: the initial cap uses the planned number of marginals
