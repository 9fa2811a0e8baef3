"""The relaxed projection model "rp" (Aydore et al., ICML 2021; RAP++): exact marginals reproduced,
three-way measurements, warm starts and saved state."""

import json
import sys

import numpy as np
import pytest

from helpers import exact, small_table
from synthzoo.core.domain import Domain, EncodedData, Measurement
from synthzoo.core.errors import ConfigError, NotFittedError
from synthzoo.core.measurements import estimate_total
from synthzoo.models.rp import RP


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
