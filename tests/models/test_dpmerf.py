"""DP-MERF ("dpmerf"): random Fourier features of one-hot records have unit norm (the sensitivity the
release assumes), the noise matches the Gaussian mechanism's closed form and is charged to the ledger,
the generator learns, and fit/sample/save/load are reproducible."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import synthzoo as sz
from synthzoo.core.domain import EncodedData
from synthzoo.core.errors import ConfigError
from synthzoo.core.privacy import PrivacyLedger, mechanisms
from synthzoo.datasets import make_demo
from synthzoo.metrics.marginal import tvd_1way, tvd_2way
from synthzoo.models.dpmerf import DPMERF
from synthzoo.models.merf_features import RandomFourierFeatures, noisy_mean_embedding

QUICK = {"iters": 40, "batch": 200}  # plumbing tests: a few steps are enough


@pytest.fixture(scope="module")
def demo():
    return make_demo(n=1500, seed=0)


@pytest.fixture(scope="module")
def encoded(demo):
    """The demo table encoded as the pipeline encodes it (uniform binning on public bounds)."""
    df, schema = demo
    s = sz.Synthesizer(preprocess=["uniform"], select=None, model={"name": "dpmerf", "iters": 0},
                       epsilon=1.0, delta=1e-5, schema=schema, seed=0).fit(df)
    return EncodedData(s.encoder_.transform(df), s.encoder_.domain)


def synth(schema, seed=0, epsilon=1.0, noise_seed=None, **params):
    return sz.Synthesizer(preprocess=["uniform"], select=None, model={"name": "dpmerf", **params},
                          epsilon=epsilon, delta=1e-5, schema=schema, seed=seed, noise_seed=noise_seed)


# ------------------------------------------------------------------------------ features
def test_every_record_has_unit_feature_norm(encoded):
    """||phi(x)|| = 1 for every record: the sum embedding's add/remove sensitivity is exactly 1."""
    feats = RandomFourierFeatures(encoded.domain, 2000, math.sqrt(len(encoded.domain)), np.random.default_rng(0))
    phi = feats.transform(encoded.codes)
    assert phi.shape == (encoded.n, 2000)
    norms = np.linalg.norm(phi, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-12) and norms.max() <= 1.0 + 1e-12
    # worst case over the whole domain too: random records, not only the observed ones
    rng = np.random.default_rng(1)
    any_codes = np.stack([rng.integers(0, s, 5000) for s in encoded.domain.shape], axis=1)
    assert np.linalg.norm(feats.transform(any_codes), axis=1).max() <= 1.0 + 1e-12
    # adding one record moves the per-class sum matrix by exactly that record's phi (Frobenius 1)
    lab = encoded.column("churn")
    attrs = tuple(a for a in encoded.domain.attrs if a != "churn")
    f2 = RandomFourierFeatures(encoded.domain, 500, 3.0, np.random.default_rng(0), attrs=attrs)
    full = f2.class_sums(encoded.codes, lab, 2)
    less = f2.class_sums(encoded.codes[1:], lab[1:], 2)
    assert np.isclose(np.linalg.norm(full - less), 1.0)


def test_kernel_approximation(encoded):
    """phi(x) . phi(x') approximates exp(-hamming(x, x') / l^2) (the product kernel on one-hot records)."""
    d = len(encoded.domain)
    l2 = float(d)
    feats = RandomFourierFeatures(encoded.domain, 20000, math.sqrt(l2), np.random.default_rng(0))
    rows = encoded.codes[:40]
    phi = feats.transform(rows)
    ham = (rows[:, None, :] != rows[None, :, :]).sum(axis=2)
    assert np.abs(phi @ phi.T - np.exp(-ham / l2)).max() < 0.05


def test_noise_matches_the_gaussian_mechanism(encoded):
    """sigma = sensitivity / sqrt(2 rho) for both releases, the ledger is charged exactly the budget, and the
    empirical noise on the sum embedding has that standard deviation."""
    ledger = PrivacyLedger(1.0, 1e-5)
    budget = ledger.stage("dpmerf", 0.9)
    rng = np.random.default_rng(0)
    feats = RandomFourierFeatures(encoded.domain, 4000, math.sqrt(len(encoded.domain)), rng)
    share = 0.05
    emb = noisy_mean_embedding(encoded, feats, budget, count_share=share)
    rho = 0.9 * ledger.total_rho
    assert np.isclose(emb.sigma_count, mechanisms.gaussian_sigma(share * rho, 1.0))
    assert np.isclose(emb.sigma_sum, 1.0 / math.sqrt(2 * (1 - share) * rho))
    assert [c.mechanism for c in ledger.charges] == ["discrete_gaussian", "gaussian"]  # count, sums
    assert np.isclose(sum(c.rho for c in ledger.charges), rho)
    assert np.isclose(ledger.charges[1].rho, (1 - share) * rho)
    assert ledger.spent().epsilon <= 1.0 + 1e-9
    # the noise: noisy sums = mean * n_hat; exact sums from the same features
    resid = (emb.mean * emb.total - feats.class_sums(encoded.codes, None, 1)).ravel()
    assert resid.size == 4000
    assert abs(resid.std() / emb.sigma_sum - 1) < 0.06  # 4000 draws: the ratio's sd is about 0.011
    assert abs(resid.mean()) < 6 * emb.sigma_sum / math.sqrt(resid.size)  # 6 s.e.: secret noise, no flake
    assert abs(emb.total - encoded.n) < 6 * emb.sigma_count
    assert emb.weights.tolist() == [1.0]


def test_non_private_release_is_exact(encoded):
    budget = PrivacyLedger(None).stage("dpmerf", 1.0)
    rng = np.random.default_rng(0)
    feats = RandomFourierFeatures(encoded.domain, 200, 2.0, rng)
    emb = noisy_mean_embedding(encoded, feats, budget)
    assert emb.total == encoded.n and emb.sigma_sum == 0.0 and emb.sigma_count == 0.0
    assert np.allclose(emb.mean[0], feats.transform(encoded.codes).mean(axis=0))


def test_class_conditional_release(encoded):
    ledger = PrivacyLedger(1.0, 1e-5)
    rng = np.random.default_rng(0)
    attrs = tuple(a for a in encoded.domain.attrs if a != "churn")
    feats = RandomFourierFeatures(encoded.domain, 200, 2.0, rng, attrs=attrs)
    emb = noisy_mean_embedding(encoded, feats, ledger.stage("m", 1.0), label="churn")
    true = np.bincount(encoded.column("churn"), minlength=2) / encoded.n
    assert emb.mean.shape == (2, 200) and np.isclose(emb.weights.sum(), 1.0)
    assert np.abs(emb.weights - true).max() < 0.05
    with pytest.raises(ConfigError, match="churn"):  # the label may not also be a feature
        noisy_mean_embedding(encoded, RandomFourierFeatures(encoded.domain, 20, 1.0, rng), ledger.stage("x", 0.1),
                             label="churn")


# --------------------------------------------------------------------------------- model
def test_pipeline_spends_within_request(demo):
    df, schema = demo
    s = synth(schema, **QUICK).fit(df)
    spent = s.privacy_spent()
    assert 0 < spent.epsilon <= 1.0 + 1e-9 and spent.delta <= 1e-5
    br = s.privacy_breakdown()
    assert list(br["module"]) == ["dpmerf"] and int(br["charges"].iloc[0]) == 2
    assert br["rho"].sum() <= s.ledger_.total_rho * (1 + 1e-9)
    assert np.isclose(br["rho"].sum(), s.ledger_.total_rho)  # the model stage takes the whole budget
    assert s.model.sigma_sum_ > 0 and s.model.sigma_count_ > s.model.sigma_sum_


@pytest.mark.parametrize("output", ["expected", "softmax", "gumbel"])
def test_same_seed_same_samples(output, demo):
    df, schema = demo
    a = synth(schema, seed=3, noise_seed=1, output=output, **QUICK).fit(df).sample(300)
    b = synth(schema, seed=3, noise_seed=1, output=output, **QUICK).fit(df).sample(300)
    c = synth(schema, seed=4, noise_seed=1, output=output, **QUICK).fit(df).sample(300)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_model_sample_reproducible_from_rng_state(encoded):
    budget = PrivacyLedger(1.0, 1e-5).stage("dpmerf", 1.0)
    m = DPMERF(**QUICK).fit_records(encoded, budget, np.random.default_rng(0))
    x = m.sample(500, np.random.default_rng(5))
    assert x.shape == (500, len(encoded.domain)) and x.dtype == np.int64
    assert np.all(x >= 0) and np.all(x < np.array(encoded.domain.shape))
    np.testing.assert_array_equal(x, m.sample(500, np.random.default_rng(5)))
    assert not np.array_equal(x, m.sample(500, np.random.default_rng(6)))
    assert m.sample(0, np.random.default_rng(0)).shape == (0, len(encoded.domain))


@pytest.mark.parametrize("label", [None, "churn"])
def test_save_load_round_trip(label, demo, tmp_path):
    df, schema = demo
    s = synth(schema, seed=1, label=label, **QUICK).fit(df)
    first = s.sample(250)
    s.save(tmp_path / "m.json")
    t = sz.Synthesizer.load(tmp_path / "m.json")
    pd.testing.assert_frame_equal(first, t.sample(250))
    assert t.privacy_spent() == s.privacy_spent()
    state = s.model.get_state()
    assert set(state) == {"params", "domain", "attrs", "class_weights", "total", "weights"}
    assert len(state["class_weights"]) == (1 if label is None else 2)
    fresh = DPMERF()
    fresh.set_state(state, s.encoder_.domain)
    np.testing.assert_array_equal(fresh.sample(100, np.random.default_rng(0)),
                                  s.model.sample(100, np.random.default_rng(0)))
    # a state without its fields is refused, naming them
    with pytest.raises(ConfigError, match=r"model_state: lacks \['attrs', 'class_weights', 'total', 'weights'\]"):
        DPMERF().set_state({"params": {}, "domain": s.encoder_.domain.to_dict()}, s.encoder_.domain)


@pytest.mark.parametrize("param,value", [
    ("n_features", 3), ("n_features", 0), ("length_scale", 0.0), ("length_scale", float("inf")),
    ("hidden", (0,)), ("hidden", "wide"), ("iters", -1), ("lr", 0), ("batch", 0), ("noise_dim", 1.5),
    ("count_share", 1.0), ("count_share", 0), ("label", 3), ("output", "hard"), ("temperature", -1.0),
    ("device", "tpu")])
def test_bad_params_rejected_at_construction(param, value, demo):
    _, schema = demo
    with pytest.raises(ConfigError, match=param):
        synth(schema, **{param: value})


def test_bad_label_and_combinations(demo):
    df, schema = demo
    with pytest.raises(ConfigError, match="no_such_column"):  # at construction, before any charge
        synth(schema, label="no_such_column", **QUICK)
    with pytest.raises(ConfigError, match="selector"):
        sz.Synthesizer(preprocess=["uniform"], select="indif", model="dpmerf", epsilon=1.0, schema=schema)
    with pytest.raises(ConfigError):
        DPMERF().fit(None, [], np.random.default_rng(0))  # a record model fits no measurements
    with pytest.raises(sz.core.errors.NotFittedError):
        DPMERF().sample(3, np.random.default_rng(0))


def test_non_private_run(demo):
    df, schema = demo
    with pytest.warns(UserWarning, match="NON-PRIVATE"):
        s = synth(schema, epsilon=None, **QUICK)
    s.fit(df)
    assert math.isinf(s.privacy_spent().epsilon)
    assert s.model.sigma_sum_ == 0.0 and s.model.total_ == len(df)
    schema.validate(s.sample(100))


@pytest.mark.parametrize("output,iters,batch", [("gumbel", 300, 300), ("expected", 150, 200)])
def test_generator_learns(output, iters, batch, demo):
    """Training brings the synthetic marginals much closer to the real ones than the untrained generator."""
    df, schema = demo
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        untrained = synth(schema, epsilon=None, output=output, iters=0).fit(df).sample(len(df))
        trained = synth(schema, epsilon=None, output=output, iters=iters, batch=batch).fit(df).sample(len(df))
        private = synth(schema, epsilon=5.0, noise_seed=0, output=output, iters=iters, batch=batch).fit(df).sample(len(df))
    t1_0, t1 = tvd_1way(df, untrained, schema), tvd_1way(df, trained, schema)
    t2_0, t2 = tvd_2way(df, untrained, schema), tvd_2way(df, trained, schema)
    assert t1 < 0.5 * t1_0, (t1, t1_0)
    assert t2 < 0.6 * t2_0, (t2, t2_0)
    assert tvd_2way(df, private, schema) < 0.75 * t2_0


def test_class_conditional_model(demo):
    df, schema = demo
    s = synth(schema, epsilon=5.0, label="churn", iters=150, batch=300).fit(df)
    fake = s.sample(3000)
    true = df["churn"].value_counts(normalize=True)
    got = fake["churn"].value_counts(normalize=True)
    assert abs(true.iloc[0] - got[true.index[0]]) < 0.05
    assert s.model.class_weights_.shape == (2,)


def test_hyperparameter_space_is_valid():
    space = DPMERF.hyperparameter_space()
    assert set(space) <= set(DPMERF().get_params())
    for name, spec in space.items():
        kind = spec[0]
        assert kind in ("int", "float", "log", "cat")
        value = spec[1][0] if kind == "cat" else (int(spec[1]) if kind == "int" else spec[1])
        if name == "n_features":
            value = 2 * (value // 2)
        DPMERF(**{name: value}).check_params()
