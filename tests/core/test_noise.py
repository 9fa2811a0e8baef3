"""The secret noise source: distributions against their exact laws, secrecy and the replay opt-in."""

import copy
import math
import pickle

import numpy as np
import pytest
from scipy import stats

from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.core.privacy.noise import NoiseSource, discrete_gaussian_pmf, discrete_gaussian_tail

#: Significance of each goodness-of-fit check below.  The samples come from OS entropy (the secret source
#: itself), so a correct sampler still fails a check with probability ALPHA: at 1e-4 the 12 checks failed
#: about 1 suite run in 830.  At 1e-9 the critical value moves only from about 3.9 to 6.1 standard normal
#: deviations, and the continuous samplers draw 200,000 values (was 50,000) so that their KS checks still
#: see a normal scale about 3 % off (at 50,000 and 1e-4 it took about 4 %).
ALPHA = 1e-9


def _chi2_pvalue(samples: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    """Chi-square goodness of fit; cells with expected count < 5 pooled into the two tails."""
    n = samples.size
    obs = np.array([(samples == k).sum() for k in support], dtype=float)
    exp = pmf * n
    tail_obs = n - obs.sum()
    keep = exp >= 5
    o = np.append(obs[keep], obs[~keep].sum() + tail_obs)
    e = np.append(exp[keep], n - exp[keep].sum())
    return float(stats.chisquare(o, e).pvalue)


@pytest.mark.parametrize("sigma", [0.4, 1.0, 3.7, 25.0])
def test_discrete_gaussian_matches_its_pmf(sigma):
    z = NoiseSource().discrete_gaussian(sigma, 200_000)
    assert z.dtype == np.int64
    k = np.arange(-int(6 * sigma) - 3, int(6 * sigma) + 4)
    assert _chi2_pvalue(z, k, discrete_gaussian_pmf(k, sigma)) > ALPHA
    # variance of the discrete Gaussian is at most sigma^2 (Canonne et al., Prop. 19)
    assert z.var() <= sigma ** 2 * 1.02


@pytest.mark.parametrize("scale", [0.5, 2.0, 10.0])
def test_discrete_laplace_matches_its_pmf(scale):
    z = NoiseSource().discrete_laplace(scale, 200_000)
    q = math.exp(-1 / scale)
    k = np.arange(-int(12 * scale) - 3, int(12 * scale) + 4)
    pmf = (1 - q) / (1 + q) * q ** np.abs(k)
    assert _chi2_pvalue(z, k, pmf) > ALPHA


def test_continuous_samplers_match_their_laws():
    src = NoiseSource()
    assert stats.kstest(src.normal(2.0, 200_000) / 2.0, "norm").pvalue > ALPHA
    assert stats.kstest(src.laplace(1.5, 200_000) / 1.5, "laplace").pvalue > ALPHA
    assert stats.kstest(src.gumbel(0.5, 200_000) / 0.5, "gumbel_r").pvalue > ALPHA
    u = src.uniform(200_000)
    assert u.min() > 0 and u.max() < 1 and stats.kstest(u, "uniform").pvalue > ALPHA
    counts = np.bincount(src.integers(7, 70_000), minlength=7)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_discrete_gaussian_tail_sums_the_pmf():
    sigma = 2.5
    k = np.arange(3, 200)
    assert discrete_gaussian_tail(3, sigma) == pytest.approx(discrete_gaussian_pmf(k, sigma).sum(), rel=1e-12)
    assert discrete_gaussian_tail(-1000, sigma) == pytest.approx(1.0)


def test_os_entropy_never_repeats_and_replay_opt_in_does():
    a, b = NoiseSource().words(4), NoiseSource().words(4)
    assert not np.array_equal(a, b)
    r1, r2 = NoiseSource(12345), NoiseSource(12345)
    assert np.array_equal(r1.discrete_gaussian(3.0, 100), r2.discrete_gaussian(3.0, 100))
    assert r1.replayable and not NoiseSource().replayable
    assert "12345" not in repr(r1)


def test_noise_source_cannot_be_pickled_and_the_ledger_flags_replay():
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(NoiseSource())
    led = PrivacyLedger(1.0, 1e-5, noise_seed=3)
    assert copy.deepcopy(led).noise is led.noise  # a copied ledger shares its source, copies no state
    assert led.replayable and "REPLAYABLE NOISE" in led.report()
    assert not PrivacyLedger(1.0, 1e-5).replayable
    with pytest.raises(Exception, match="noise_seed"):
        PrivacyLedger(1.0, 1e-5, noise_seed=-1)


def test_uniform_stays_inside_the_open_interval_at_the_extreme_words(monkeypatch):
    # the largest 53-bit word plus a half rounded up to 2^53: uniform() returned exactly 1.0 (once in 2^53 draws),
    # and a Gaussian drawn from it was infinite
    src = NoiseSource()
    words = np.array([0, 2 ** 11, 2 ** 64 - 1, 2 ** 64 - 2 ** 11, 2 ** 63], dtype=np.uint64)
    monkeypatch.setattr(src, "words", lambda n: words[:n])
    u = src.uniform(5)
    assert ((u > 0) & (u < 1)).all() and u[2] == u[3] == np.nextafter(1.0, 0.0) and u[4] == 0.5 + 2.0 ** -54
    assert u[0] == 2.0 ** -54 and u[1] == 2.0 ** -54 * 3
