"""A module written outside the package: a toy selector and a toy measurement model, registered
through the public API only, pass the shipped conformance kit and run in the ablation grid with
no edit anywhere else; a bad parameter fails at construction, naming it."""

import importlib.metadata
import itertools

import numpy as np
import pytest

import synthzoo as sz
from synthzoo.core import base
from synthzoo.core.base import MeasurementModel, Selector, register, unregister
from synthzoo.core.domain import Domain, Measurement, count
from synthzoo.core.errors import ConfigError
from synthzoo.core.params import Integral, Interval, Real
from synthzoo.core.privacy import mechanisms
from synthzoo.datasets import make_demo
from synthzoo.testing import CHECKS, check_module


class ToyPairs(Selector):
    """Every one-way marginal and the first ``pairs`` pairs, each with the discrete Gaussian
    mechanism, the budget split evenly."""

    _parameter_constraints = {"pairs": [Interval(Integral, 0, None)]}

    def __init__(self, pairs: int = 3):
        self.pairs = pairs

    def run(self, data, budget, rng, model=None):
        self.check_run_inputs(data, budget, model)
        attrs = data.domain.attrs
        cliques = [(a,) for a in attrs] + list(itertools.combinations(attrs, 2))[: self.pairs]
        rho = budget.remaining * (1 - 1e-9) / len(cliques) if budget.private else float("inf")
        return [mechanisms.measure_marginal(data, c, budget, rho) for c in cliques]


class ToyIndependent(MeasurementModel):
    """Independent columns from the one-way measurements (a product distribution)."""

    _parameter_constraints = {"smoothing": [Interval(Real, 0, None)]}

    def __init__(self, smoothing: float = 0.5):
        self.smoothing = smoothing

    def _fit(self, domain: Domain, measurements: list[Measurement], rng) -> None:
        one = {m.clique[0]: m.noisy for m in measurements if len(m.clique) == 1}
        self._set(domain, [np.clip(one[a], 0, None) + self.smoothing for a in domain.attrs],
                  float(np.mean([m.noisy.sum() for m in measurements])))

    def _set(self, domain, probs, total):
        self._fitted(domain)
        self.probs_ = [p / p.sum() for p in probs]
        self.total_ = max(total, 1.0)

    def _project(self, clique):
        out = np.array(self.total_)
        for a in clique:
            out = np.multiply.outer(out, self.probs_[self.domain_.index(a)])
        return out

    def sample(self, n, rng):
        self._require_fit()
        n = self._check_n(n)
        return np.stack([rng.choice(p.size, size=n, p=p) for p in self.probs_], axis=1).astype(np.int64)

    def _get_state(self):
        return {"total": self.total_, "probs": [p.tolist() for p in self.probs_]}

    def _set_state(self, state, domain):
        probs = [np.asarray(p, dtype=float) for p in state["probs"]]
        if [p.size for p in probs] != list(domain.shape) or any(np.any(p < 0) for p in probs):
            raise ConfigError("toy_independent.set_state: probabilities do not fit the domain")
        self._set(domain, probs, float(state["total"]))


@pytest.fixture(scope="module")
def toys():
    sel, mod = register("select", "toy_pairs")(ToyPairs), register("model", "toy_independent")(ToyIndependent)
    yield sel, mod
    unregister("select", "toy_pairs")
    unregister("model", "toy_independent")


@pytest.mark.parametrize("which", [0, 1])
def test_toy_modules_pass_the_shipped_conformance_kit(toys, which):
    assert check_module(toys[which]) == list(CHECKS)


def test_toy_modules_run_in_the_grid_with_no_edit_elsewhere(toys, tmp_path):
    from synthzoo import bench

    df, schema = make_demo(n=1500, seed=0)
    df.to_csv(tmp_path / "demo.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    res = bench.grid(str(tmp_path / "demo.csv"), selectors=["toy_pairs", "mst"], models=["toy_independent", "gum"],
                     epsilons=[1.0], schema=str(tmp_path / "schema.json"), isolate=False, ml=False, log=lambda s: None)
    cells = res[res["kind"] == "cell"]
    assert len(cells) == 4 and (cells["status"] == "ok").all(), cells[["select", "model", "status", "reason"]]
    assert (cells["eps_spent"] <= 1.0 + 1e-9).all()


class PaidButExact(ToyPairs):
    """Broken on purpose: pays for each noisy marginal, then hands on the exact counts."""

    def run(self, data, budget, rng, model=None):
        return [Measurement(m.clique, data.project(m.clique).astype(float), m.sigma)
                for m in super().run(data, budget, rng, model)]


class FreeQuantileBins(base.Preprocessor):
    """Broken on purpose: bins at the private column's 10-90 % quantiles, declared free."""

    _tags = {"kinds": ("numerical", "datetime")}
    _parameter_constraints = {}

    def fit(self, df, columns, budget, rng):
        from synthzoo.core.encoding import BinEncoder
        from synthzoo.core.schema import numeric_values

        self.check_columns(df, columns)
        inner = {c.name: np.nanquantile(numeric_values(df[c.name], c), [0.1, 0.5, 0.9]) for c in columns}
        return {c.name: BinEncoder(c, np.unique(np.r_[c.lower, inner[c.name], c.upper])) for c in columns}


@pytest.mark.parametrize("role, name, cls, check", [
    ("select", "toy_paid_but_exact", PaidButExact, "same_seed_same_output"),
    ("preprocess", "toy_free_quantiles", FreeQuantileBins, "free_preprocessing_reads_no_private_value")])
def test_the_kit_catches_a_module_that_reads_private_data_for_free(role, name, cls, check):
    # both passed every check of the kit (an ablation helper wrote them as plugins)
    from synthzoo.testing import ConformanceError

    register(role, name)(cls)
    try:
        with pytest.raises(ConformanceError, match=f"fails check '{check}'"):
            check_module(cls)
    finally:
        unregister(role, name)


def test_the_kit_names_an_unknown_check():
    with pytest.raises(ConfigError, match=r"unknown check\(s\) \['budget_never_exeeded'\]"):
        check_module(ToyPairs, checks=["budget_never_exeeded"])


def test_a_bad_parameter_fails_at_construction_naming_it(toys):
    with pytest.raises(ConfigError, match="pairs"):
        ToyPairs(pairs=-2)
    with pytest.raises(ConfigError, match="smoothing"):
        sz.Synthesizer(select="toy_pairs", model={"name": "toy_independent", "smoothing": "lots"})
    # a parameter check the module forgot to declare is a programming error named at construction
    with pytest.raises(ConfigError, match="mst: parameter shares"):
        sz.Synthesizer(select={"name": "mst", "shares": (1, -1, 1)}, model="pgm")


def test_modules_from_the_entry_point_group_are_loaded_and_failures_named(monkeypatch):
    loaded = []

    class EP:
        def __init__(self, name, fail):
            self.name, self.value, self.fail = name, f"pkg.{name}:register", fail

        def load(self):
            if self.fail:
                raise ImportError("no module named pkg")
            loaded.append(self.name)

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [EP("good", False)]
                        if group == base.ENTRY_POINT_GROUP else [])
    monkeypatch.setattr(base, "_plugins_loaded", False)
    sz.available()
    assert loaded == ["good"]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [EP("broken", True)])
    monkeypatch.setattr(base, "_plugins_loaded", False)
    with pytest.raises(ConfigError, match="plugin 'broken'.*failed to load"):
        sz.available()
    # a broken plugin raised once, and then every plugin, the good ones after it too, was silently missing
    loaded.clear()
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [EP("broken", True), EP("good", False),
                                                                           EP("worse", True)])
    monkeypatch.setattr(base, "_plugins_loaded", False)
    for _ in range(2):
        with pytest.raises(ConfigError, match=r"plugin 'broken'.*failed to load.*and 1 more: \['worse'\]"):
            sz.available()
    assert loaded == ["good", "good"]  # loaded on each try, whatever failed before it


def test_register_refuses_a_class_of_the_wrong_role_and_a_bad_space():
    with pytest.raises(TypeError, match="Selector"):
        register("select", "not_a_selector")(ToyIndependent)

    class BadSpace(ToyPairs):
        @classmethod
        def hyperparameter_space(cls):
            return {"pairs": ("int", -3, 5)}

    with pytest.raises(ConfigError, match="pairs"):
        register("select", "bad_space")(BadSpace)
    assert "bad_space" not in sz.available("select")["select"]


def test_count_is_the_one_marginal_counter():
    codes = np.array([[0, 1], [1, 1], [0, 1]])
    assert count(codes, (2, 2)).tolist() == [[0, 2], [0, 1]]


def test_a_misspelt_module_parameter_lists_the_parameters_there_are():
    # the bare "GUM.__init__() got an unexpected keyword argument 'iteration'"
    with pytest.raises(ConfigError, match=r"model module 'gum': unknown parameter\(s\) \['iteration'\]; its "
                                          r"parameters are \[.*'iterations'"):
        sz.Synthesizer(select="indif", model={"name": "gum", "iteration": 5})
    # a module built by hand says it the same way (README: "a misspelt parameter is an error listing the module's
    # parameters"), a plugin's class included
    with pytest.raises(ConfigError, match=r"PrivTree: got an unexpected keyword argument 'thet'; its parameters are "
                                          r"\[.*'theta'"):
        sz.preprocess.PrivTree(thet=1)
    with pytest.raises(ConfigError, match=r"ToyPairs: .*unexpected keyword argument 'widht'"):
        ToyPairs(widht=2)
