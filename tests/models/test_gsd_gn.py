"""The Private-GSD genetic algorithm ("gsd") and the GEM generative network ("gn"): both fit
measured marginals better than independent columns, are reproducible from the seed, and
save/load to identical samples."""

import itertools
import json

import numpy as np
import pytest

from synthzoo.core.domain import Domain, EncodedData, Measurement, count
from synthzoo.core.errors import ConfigError, NotFittedError
from synthzoo.models.gn import GN
from synthzoo.models.gsd import GSD

FAST = {"gsd": lambda **kw: GSD(**{"generations": 3000, **kw}), "gn": lambda **kw: GN(**{"iters": 300, **kw})}


# for tests that check plumbing rather than fit quality
QUICK = {"gsd": lambda **kw: GSD(**{"generations": 300, **kw}), "gn": lambda **kw: GN(**{"iters": 30, **kw})}


@pytest.fixture(scope="module")
def table():
    """A small table with strong pairwise dependence: b copies a (mostly), c depends on a and b."""
    rng = np.random.default_rng(0)
    n = 2000
    a = rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])
    b = np.where(rng.random(n) < 0.8, a, rng.integers(0, 4, n))
    c = np.where(rng.random(n) < 0.85, (a + b) % 3, rng.integers(0, 3, n))
    d = np.where(rng.random(n) < 0.7, (c > 0).astype(int), rng.integers(0, 2, n))
    domain = Domain(["a", "b", "c", "d"], [4, 4, 3, 2])
    return EncodedData(np.stack([a, b, c, d], axis=1), domain)


def exact_measurements(data: EncodedData) -> list[Measurement]:
    """Non-private measurements (sigma 0) of every one- and two-way marginal."""
    cliques = [(x,) for x in data.domain.attrs] + list(itertools.combinations(data.domain.attrs, 2))
    return [Measurement(c, data.project(c), 0.0) for c in cliques]


def pair_errors(data: EncodedData, estimate) -> float:
    """Mean L1 distance between true and estimated normalised two-way marginals."""
    errs = []
    for p in itertools.combinations(data.domain.attrs, 2):
        est = np.asarray(estimate(p), dtype=float)
        errs.append(np.abs(est / est.sum() - data.project(p) / data.n).sum())
    return float(np.mean(errs))


def independent(data: EncodedData, pair) -> np.ndarray:
    return np.outer(data.project(pair[:1]), data.project(pair[1:])) / data.n


@pytest.mark.parametrize("name", ["gsd", "gn"])
def test_fits_exact_marginals_better_than_independent_columns(name, table):
    model = FAST[name]().fit(table.domain, exact_measurements(table), np.random.default_rng(0))
    base = pair_errors(table, lambda p: independent(table, p))
    fitted = pair_errors(table, model.project)
    assert fitted < 0.5 * base, (fitted, base)
    # the records drawn from the model keep the correlation too
    rows = model.sample(4000, np.random.default_rng(1))
    assert rows.shape == (4000, 4) and rows.dtype == np.int64
    assert np.all(rows >= 0) and np.all(rows < np.array(table.domain.shape))
    drawn = pair_errors(table, lambda p: count(rows[:, [table.domain.index(x) for x in p]],
                                               table.domain.project(p).shape))
    assert drawn < 0.6 * base, (drawn, base)
    # project answers in the estimated total's scale, axes in the order asked
    assert np.isclose(model.project(("b", "a")).sum(), table.n, rtol=1e-6)
    assert np.allclose(model.project(("b", "a")), model.project(("a", "b")).T)


@pytest.mark.parametrize("name", ["gsd", "gn"])
def test_same_seed_same_output(name, table):
    meas = exact_measurements(table)

    def run(seed):
        model = QUICK[name]().fit(table.domain, meas, np.random.default_rng(seed))
        return model.sample(500, np.random.default_rng(seed)), model.project(("a", "c"))

    (s1, p1), (s2, p2), (s3, _) = run(7), run(7), run(8)
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(p1, p2)
    assert not np.array_equal(s1, s3)


@pytest.mark.parametrize("name", ["gsd", "gn"])
def test_state_round_trip_gives_identical_samples(name, table):
    model = QUICK[name]().fit(table.domain, exact_measurements(table), np.random.default_rng(2))
    state = json.loads(json.dumps(model.get_state()))  # JSON-able
    loaded = QUICK[name]()
    loaded.set_state(state, table.domain)
    np.testing.assert_array_equal(model.sample(700, np.random.default_rng(3)),
                                  loaded.sample(700, np.random.default_rng(3)))
    np.testing.assert_allclose(model.project(("a", "b", "d")), loaded.project(("a", "b", "d")))
    with pytest.raises(ConfigError, match="different domain"):
        QUICK[name]().set_state(state, Domain(["a", "b", "c", "d"], [4, 4, 3, 3]))


@pytest.mark.parametrize("name", ["gsd", "gn"])
def test_noisy_measurements_and_warm_start(name, table):
    """A private-style fit (noisy, some negative counts) works, and refitting with one more
    measurement (as an adaptive selector does) starts from the previous fit."""
    rng = np.random.default_rng(4)
    meas = [Measurement(m.clique, m.noisy + rng.normal(0, 20, m.noisy.shape), 20.0)
            for m in exact_measurements(table)]
    model = FAST[name]()
    model.fit(table.domain, meas[:4], np.random.default_rng(0))
    one_way_only = pair_errors(table, model.project)
    model.fit(table.domain, meas, np.random.default_rng(1))
    assert pair_errors(table, model.project) < one_way_only
    assert abs(model.project(()).sum() - table.n) < 0.05 * table.n


@pytest.mark.parametrize("name", ["gsd", "gn"])
def test_bad_parameters_and_input(name, table):
    bad = {"gsd": [{"n_rows": 0}, {"loss": "l3"}, {"mutations": 0, "crossovers": 0}, {"population": 1.5}],
           "gn": [{"iters": -1}, {"lr": 0}, {"hidden": (0,)}, {"loss": "huber"}, {"device": "tpu"}]}[name]
    for params in bad:
        key = next(iter(params))
        with pytest.raises(ConfigError, match=key):
            QUICK[name](**params).check_params()
    model = QUICK[name]()
    with pytest.raises(NotFittedError):
        model.sample(3, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="at least one measurement"):
        model.fit(table.domain, [], np.random.default_rng(0))
    with pytest.raises(ConfigError, match="zz"):
        model.fit(table.domain, [Measurement(("zz",), np.ones(3), 1.0)], np.random.default_rng(0))
    model.fit(table.domain, exact_measurements(table)[:4], np.random.default_rng(0))
    with pytest.raises(ConfigError, match="n must be"):
        model.sample(-1, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="not in the domain"):
        model.project(("a", "nope"))
    assert model.sample(0, np.random.default_rng(0)).shape == (0, 4)


def test_output_layer_computes_only_real_logits_with_the_padded_layers_answer_and_gradient():
    """The head multiplies only the rows of real codes; the answer and every gradient are those of
    the padded layer with -inf on its padding."""
    import torch

    from synthzoo.models.torch_mlp import TorchMLP

    sizes = [2, 5, 3, 7]
    pad = TorchMLP._pad_mask(sizes, "cpu")
    gen = torch.Generator().manual_seed(0)
    shapes = [(16, 6), (16,), (len(sizes) * 7, 16), (len(sizes) * 7,)]
    ws = [torch.randn(s, generator=gen, dtype=torch.float64).requires_grad_(True) for s in shapes]
    z = torch.randn(9, 6, generator=gen, dtype=torch.float64)
    weights = torch.randn(9, len(sizes), 7, generator=gen, dtype=torch.float64)

    def padded(ws):
        h = torch.relu(z @ ws[0].T + ws[1])
        return (h @ ws[2].T + ws[3]).view(9, len(sizes), 7).masked_fill(pad, float("-inf"))

    grads = []
    for f in (padded, lambda ws: TorchMLP._padded_logits(ws, z, pad)):
        out = f(ws)
        (torch.softmax(out, 2) * weights).sum().backward()
        grads.append([w.grad.clone() for w in ws])
        for w in ws:
            w.grad = None
        assert torch.isneginf(out[pad.expand(9, -1, -1)]).all()
    ref = padded(ws)
    np.testing.assert_allclose(TorchMLP._padded_logits(ws, z, pad).detach()[~pad.expand(9, -1, -1)],
                               ref.detach()[~pad.expand(9, -1, -1)], rtol=1e-12)
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert not grads[1][2][pad.reshape(-1)].any()  # padding rows of the head never learn


def test_threshold_factor_follows_gems_moving_threshold(table):
    """With ``threshold_factor`` a fit ends as soon as every measured cell is within the threshold, set at
    the fit's first step from the moving average of the starting largest errors, which persists
    across warm refits; without it every step runs."""
    meas = exact_measurements(table)
    full = GN(iters=200).fit(table.domain, meas[:4], np.random.default_rng(0))
    assert full.steps_ == 200
    model = GN(iters=200, threshold_factor=0.5)
    model.fit(table.domain, meas[:4], np.random.default_rng(0))
    first = model.steps_
    assert 0 < first < 200
    ema = model._ema_error
    assert ema > 0
    model.fit(table.domain, meas, np.random.default_rng(1))  # the pairs: larger errors, a higher average
    assert model._ema_error > 0.5 * ema and 0 < model.steps_ <= 200
    # a factor of 1 or more is met by the starting errors themselves: no step is taken
    again = GN(iters=200, threshold_factor=1e9)
    again.fit(table.domain, meas[:4], np.random.default_rng(0))
    assert again.steps_ == 0
    # a tiny factor cannot be met: the cap holds
    strict = GN(iters=50, threshold_factor=1e-9).fit(table.domain, meas, np.random.default_rng(0))
    assert strict.steps_ == 50
    with pytest.raises(ConfigError, match="threshold_factor"):
        GN(threshold_factor=0).check_params()
    with pytest.raises(ConfigError, match="max_cells"):
        GN(max_cells=0).check_params()


def test_threshold_steps_fit_the_worst_cells(table):
    """GEM's optimisation stops once the largest measured error is under half its starting value, and a
    warm refit after more measurements starts from the moving average."""
    meas = exact_measurements(table)
    model = GN(iters=400, threshold_factor=0.5, hidden=(64,), batch=1024)
    model.fit(table.domain, meas, np.random.default_rng(0))
    start = model._ema_error  # the first fit's starting largest error

    def largest():
        return max(np.abs(model.project(m.clique) / model.total_ - m.noisy / table.n).max() for m in meas)

    assert 0 < model.steps_ < 400 and largest() < 0.6 * start  # 0.5 on the step's batch; project's differs
    model.fit(table.domain, meas, np.random.default_rng(1))
    assert model._ema_error < start and largest() < 0.6 * model._ema_error


def test_two_way_answers_from_the_gram_matrix_equal_the_batched_products(table, monkeypatch):
    """Both ways of forming a step's two-way answers give the same objective, hence the same steps."""
    meas = exact_measurements(table)
    fits = {}
    for path in ("gram", "batched"):
        monkeypatch.setattr(GN, "_pair_path", path)
        model = GN(iters=5, hidden=(16,), batch=32).fit(table.domain, meas, np.random.default_rng(5))
        fits[path] = (model.loss_, model._weights)
    assert np.isclose(fits["gram"][0], fits["batched"][0], rtol=1e-5)
    for a, b in zip(fits["gram"][1], fits["batched"][1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    from synthzoo.models.gn import _pairs_by_gram

    assert _pairs_by_gram(500, 29, 1048) and not _pairs_by_gram(50, 29, 1048)  # the 100-column table
    assert _pairs_by_gram(2, 31, 140)  # adult after binning
