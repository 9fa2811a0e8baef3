"""PrivSyn's consistency post-processing and the GUM sampler ("gum")."""

import itertools
import json
import warnings

import numpy as np
import pytest

from helpers import correlated_table
from synthzoo.core.domain import Domain, EncodedData, Measurement
from synthzoo.core.errors import ConfigError, NotFittedError
from synthzoo.models import GUM
from synthzoo.models.consistency import make_consistent, norm_sub


def tvd(p, q):
    return 0.5 * np.abs(p / p.sum() - q / q.sum()).sum()


# ---------------------------------------------------------------------- consistency
def _noisy_measurements(data, cliques, sigma, rng):
    return [Measurement(c, data.project(c) + rng.normal(0, s, data.domain.project(c).shape), s)
            for c, s in zip(cliques, sigma)]


def test_consistency_makes_overlaps_agree_and_non_negative():
    data = correlated_table(n=600)
    rng = np.random.default_rng(3)
    cliques = [("a",), ("b",), ("c",), ("d",), ("e",), ("a", "b"), ("b", "c"), ("a", "c"), ("c", "d"),
               ("a", "e"), ("a", "b", "e")]
    sig = [5.0, 5.0, 5.0, 5.0, 5.0, 20.0, 20.0, 10.0, 20.0, 8.0, 30.0]
    meas = _noisy_measurements(data, cliques, sig, rng)
    assert any((m.noisy < 0).any() for m in meas)
    margs, total = make_consistent(data.domain, meas, iterations=500)
    for arr in margs.values():
        assert arr.min() >= 0
        assert arr.sum() == pytest.approx(total, rel=1e-9)
    for c1, c2 in itertools.combinations(margs, 2):
        common = [a for a in c1 if a in c2]
        if not common:
            continue
        p1 = margs[c1].sum(axis=tuple(i for i, a in enumerate(c1) if a not in common))
        p2 = margs[c2].sum(axis=tuple(i for i, a in enumerate(c2) if a not in common))
        np.testing.assert_allclose(p1, p2, atol=1e-3 * total)
    # the total is an inverse-variance weighted estimate: close to n
    assert abs(total - data.n) < 40


def test_consistency_of_exact_marginals_is_identity_and_merges_repeats():
    data = correlated_table(n=800)
    cliques = [("a",), ("a", "b"), ("b", "c")]
    meas = [Measurement(c, data.project(c), 0.0) for c in cliques]
    meas.append(Measurement(("b", "a"), data.project(("b", "a")) + 3.0, 2.0))  # noisy repeat, reversed order
    margs, total = make_consistent(data.domain, meas)
    assert total == pytest.approx(data.n)
    for c in cliques:
        np.testing.assert_allclose(margs[c], data.project(c), atol=1e-9)


def test_norm_sub_keeps_total_and_order():
    x = np.array([10.0, -3.0, 4.0, 1.0, -2.0])
    y = norm_sub(x)
    assert y.min() >= 0 and y.sum() == pytest.approx(x.sum())
    assert np.all(np.diff(y[np.argsort(x)]) >= -1e-12)  # monotone in x
    assert np.array_equal(norm_sub(np.array([1.0, 2.0])), [1.0, 2.0])
    assert np.array_equal(norm_sub(np.array([-1.0, 0.5])), [0.0, 0.0])


# ------------------------------------------------------------------------------ GUM
def _exact_fit(data, cliques, **params):
    meas = [Measurement(c, data.project(c), 0.0) for c in cliques]
    return GUM(**params).fit(data.domain, meas, np.random.default_rng(0))


CHAIN = [("a",), ("b",), ("c",), ("d",), ("e",), ("a", "b"), ("b", "c"), ("a", "e"), ("c", "d")]


@pytest.mark.parametrize("scope", ["neighbours", "record"])
def test_gum_reproduces_exact_marginals(scope):
    data = correlated_table(n=4000)
    gum = _exact_fit(data, CHAIN, iterations=40, duplicate_scope=scope)
    x = gum.sample(4000, np.random.default_rng(1))
    assert x.shape == (4000, 5) and x.dtype == np.int64
    syn = EncodedData(x, data.domain)
    for c in CHAIN:
        assert tvd(syn.project(c), data.project(c)) < 0.01, c
    # a marginal that was never measured follows from the chain (a -> b -> c), far from independence
    ind = np.outer(data.project(("a",)), data.project(("c",))) / data.n
    assert tvd(syn.project(("a", "c")), data.project(("a", "c"))) < 0.5 * tvd(ind, data.project(("a", "c")))


def test_gum_other_sizes_and_noisy_targets():
    data = correlated_table(n=3000)
    rng = np.random.default_rng(5)
    meas = _noisy_measurements(data, CHAIN, [10.0] * len(CHAIN), rng)
    gum = GUM(iterations=30).fit(data.domain, meas, rng)
    for n in (1, 17, 10_000):
        x = gum.sample(n, np.random.default_rng(0))
        assert x.shape == (n, 5)
        assert (x >= 0).all() and (x < np.array(data.domain.shape)).all()
    assert gum.sample(0, rng).shape == (0, 5)
    x = EncodedData(gum.sample(10_000, rng), data.domain)
    for c in CHAIN:
        assert tvd(x.project(c), gum.marginals_[tuple(c)]) < 0.02


def test_gum_same_seed_same_output():
    data = correlated_table(n=1000)
    a = _exact_fit(data, CHAIN, iterations=10).sample(500, np.random.default_rng(42))
    b = _exact_fit(data, CHAIN, iterations=10).sample(500, np.random.default_rng(42))
    c = _exact_fit(data, CHAIN, iterations=10).sample(500, np.random.default_rng(43))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_gum_state_round_trip():
    data = correlated_table(n=1000)
    rng = np.random.default_rng(2)
    meas = _noisy_measurements(data, CHAIN, [3.0] * len(CHAIN), rng)
    gum = GUM(iterations=12, alpha=0.8).fit(data.domain, meas, rng)
    state = json.loads(json.dumps(gum.get_state()))
    assert "codes" not in json.dumps(state)
    other = GUM()
    other.set_state(state, data.domain)
    assert other.get_params() == {**gum.get_params(), "duplicate_ratio": (0.5, 1.0)}
    assert np.array_equal(gum.sample(700, np.random.default_rng(9)), other.sample(700, np.random.default_rng(9)))
    np.testing.assert_array_equal(gum.project(("a", "c")), other.project(("a", "c")))
    with pytest.raises(ConfigError, match="different domain"):
        GUM().set_state(state, Domain(list("abcde"), [4, 5, 7, 3, 5]))


def test_gum_project():
    data = correlated_table(n=2000)
    gum = _exact_fit(data, CHAIN, iterations=10)
    np.testing.assert_allclose(gum.project(("b", "a")), data.project(("b", "a")), atol=1e-6)
    np.testing.assert_allclose(gum.project(("c",)), data.project(("c",)), atol=1e-6)
    est = gum.project(("d", "e"))  # no marginal covers it: internal synthetic set scaled to the total
    assert est.shape == (3, 4) and est.sum() == pytest.approx(2000)
    assert np.array_equal(est, gum.project(("d", "e")))


def test_gum_errors():
    data = correlated_table(n=200)
    with pytest.raises(NotFittedError):
        GUM().sample(10, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="alpha"):
        _exact_fit(data, CHAIN, alpha=0.0)
    with pytest.raises(ConfigError, match="iterations"):
        _exact_fit(data, CHAIN, iterations=-1)
    with pytest.raises(ConfigError, match="duplicate_scope"):
        _exact_fit(data, CHAIN, duplicate_scope="all")
    with pytest.raises(ConfigError, match="at least one measurement"):
        GUM().fit(data.domain, [], np.random.default_rng(0))
    with pytest.raises(ConfigError, match="not in the domain"):
        GUM().fit(data.domain, [Measurement(("zz",), np.ones(2), 1.0)], np.random.default_rng(0))
    with pytest.raises(ConfigError, match="n must be"):
        _exact_fit(data, CHAIN, iterations=1).sample(-3, np.random.default_rng(0))


def test_gum_progress_callback():
    data = correlated_table(n=500)
    seen = []
    gum = _exact_fit(data, CHAIN, iterations=5, progress=lambda i, t, e: seen.append((i, t, e)))
    gum.sample(300, np.random.default_rng(0))
    assert [s[0] for s in seen] == [1, 2, 3, 4, 5] and all(s[1] == 5 for s in seen)
    assert seen[-1][2] < seen[0][2]



def test_gum_with_no_marginals_samples_uniform_codes_without_rounds():
    # a model file that records no marginal (seen when fuzzing files) ran GUM's rounds over no targets, each taking
    # the mean of an empty error list: numpy's "Mean of empty slice" RuntimeWarning on every round
    data = correlated_table(n=500)
    gum = _exact_fit(data, [("a",)], iterations=50)
    state = {**json.loads(json.dumps(gum.get_state())), "marginals": []}
    other, calls = GUM(), []
    other.set_state(state, data.domain)
    other.progress = lambda *a: calls.append(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = other.sample(20_000, np.random.default_rng(0))
    assert calls == [] and x.shape == (20_000, 5)
    for j, size in enumerate(data.domain.shape):  # every column uniform over its public domain, to the row
        counts = np.bincount(x[:, j], minlength=size)
        assert counts.sum() == 20_000 and counts.max() - counts.min() <= 1
