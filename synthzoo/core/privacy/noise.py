"""The one source of the randomness a differential-privacy guarantee rests on.

Every noise draw of a DP mechanism in synthzoo -- Gaussian and discrete Gaussian measurements,
Gumbel / exponential-mechanism selection, PrivTree's Laplace noise, partition selection,
DP-MERF's embedding noise, the tuner's score noise and its random stopping, DP-SGD's noise and
Poisson sampling -- comes from a :class:`NoiseSource`, and each privacy ledger owns exactly one
(``ledger.noise``; a mechanism reaches it through the budget it charges, so noise cannot be
drawn without a charge).

**Secret by default.**  ``NoiseSource()`` reads fresh bytes from the operating system's
cryptographically secure generator (``os.urandom``, the kernel's ChaCha20 CSPRNG on Linux) for
every draw.  No seed exists: there is nothing to store, log or put in a model file, and nothing
an attacker holding the released file and this code can recompute.  A user's ``seed`` never
reaches this module; it governs sampling from a fitted model and post-processing only.

**Replayable only on request.**  ``NoiseSource(noise_seed=k)`` replays the same noise for the
same ``k`` (a PCG64 stream), for tests and reproducible research.  A release made so is private
only while ``k`` stays secret; the ledger's report, the CLI and the saved model say so, and
``k`` itself is never saved (this object cannot be pickled or serialised).

Samplers turn uniform 64-bit words into the distributions the mechanisms need; the words come
from either stream, so the secret and the replayable noise have identical distributions.

* :meth:`discrete_gaussian` -- Canonne, Kamath & Steinke, "The Discrete Gaussian for
  Differential Privacy" (NeurIPS 2020), Algorithm 3 (rejection from a discrete Laplace),
  vectorised.  Used for every count: integer noise on integer counts has no floating-point
  structure to betray the true count (Mironov, CCS 2012).
* :meth:`discrete_laplace` -- ``P(x) ~ exp(-|x| / t)``, as the difference of two geometric
  variables (floors of exponentials).
* Continuous samplers (:meth:`normal`, :meth:`laplace`, :meth:`gumbel`) by inversion of a
  53-bit uniform.  They are used only where the value noised is not an integer count (InDif and
  criteria scores, random-feature embeddings, gradients) or where only a decision leaves the
  mechanism (Gumbel argmax, PrivTree's split decisions); each such use says why in its docstring.
  Inversion from 53-bit uniforms truncates a tail beyond about 8.3 standard deviations
  (probability below 1e-16 per draw).
"""

from __future__ import annotations

import math
import os

import numpy as np
from scipy.special import ndtri

_TWO53 = 2.0 ** -53
#: The largest float64 below 1.
_BELOW_ONE = float(np.nextafter(1.0, 0.0))


class NoiseSource:
    """Randomness for DP noise: OS entropy (default) or, for tests only, a replayable stream.

    Parameters
    ----------
    noise_seed : int or None, default None
        ``None`` draws every word from ``os.urandom`` (secret, never stored).  An integer makes
        the noise replayable: the same seed gives the same noise, and the release is private only
        while the seed stays secret.  Never saved anywhere.

    Examples
    --------
    >>> src = NoiseSource()
    >>> z = src.discrete_gaussian(3.0, size=5)          # int64 noise for counts
    >>> NoiseSource(7).normal(1.0, 3).tolist() == NoiseSource(7).normal(1.0, 3).tolist()
    True
    """

    def __init__(self, noise_seed: int | None = None):
        if noise_seed is not None:
            if isinstance(noise_seed, bool) or not isinstance(noise_seed, (int, np.integer)) or noise_seed < 0:
                raise ValueError(f"noise_seed must be None or a non-negative integer, got {noise_seed!r}")
            self._replay = np.random.PCG64(int(noise_seed))
        else:
            self._replay = None

    @property
    def replayable(self) -> bool:
        """True when the noise comes from a ``noise_seed`` (test-only opt-in)."""
        return self._replay is not None

    def __repr__(self) -> str:  # never shows the seed
        return "NoiseSource(replayable: noise_seed set)" if self.replayable else "NoiseSource(os entropy)"

    def __reduce__(self):
        raise TypeError("a NoiseSource cannot be pickled or saved: DP noise must not be replayable from a file")

    def __deepcopy__(self, memo):  # a copied ledger draws from the same source (nothing to copy)
        return self

    # ------------------------------------------------------------------ raw words
    def words(self, n: int) -> np.ndarray:
        """``n`` uniform 64-bit words."""
        n = int(n)
        if n <= 0:
            return np.zeros(0, dtype=np.uint64)
        if self._replay is not None:
            return self._replay.random_raw(n).astype(np.uint64, copy=False)
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64).copy()

    def uniform(self, size=None) -> np.ndarray:
        """Uniform on the open interval (0, 1), 53-bit resolution (never exactly 0 or 1)."""
        n = _count(size)
        u = ((self.words(n) >> np.uint64(11)).astype(np.float64) + 0.5) * _TWO53
        # the largest word's (2^53 - 1) + 0.5 rounds up to 2^53, i.e. 1.0 (once in 2^53 draws; a Gaussian
        # drawn from it is then infinite): the float just below 1 instead, every other draw unchanged
        return _shape(np.minimum(u, _BELOW_ONE), size)

    def integers(self, high: int, size=None) -> np.ndarray:
        """Uniform integers in ``[0, high)`` (rejection sampling, no modulo bias)."""
        high = int(high)
        if high < 1:
            raise ValueError(f"high must be >= 1, got {high}")
        n = _count(size)
        if high == 1:
            return _shape(np.zeros(n, dtype=np.int64), size)
        limit = (2 ** 64 // high) * high  # accept words below the largest multiple of high
        out = np.empty(0, dtype=np.uint64)
        while out.size < n:
            w = self.words(2 * (n - out.size) + 8)
            out = np.concatenate([out, w if limit == 2 ** 64 else w[w < np.uint64(limit)]])
        return _shape((out[:n] % np.uint64(high)).astype(np.int64), size)

    def seed_material(self) -> int:
        """128 fresh bits, for seeding a generator whose draws are themselves part of a mechanism
        (e.g. the tuner's random-search sampler).  Not for noise: the samplers here are."""
        w = self.words(2)
        return int(w[0]) << 64 | int(w[1])

    def generator(self) -> np.random.Generator:
        """A numpy Generator seeded with 128 bits from this source, for auxiliary secret draws
        (Poisson counts, random splits) whose law numpy implements; use it and drop it."""
        return np.random.Generator(np.random.PCG64(self.seed_material()))

    # ------------------------------------------------------------------ continuous
    def normal(self, scale: float, size=None) -> np.ndarray:
        """``N(0, scale^2)`` by inversion."""
        return _scale(ndtri(self.uniform(size)), scale)

    def laplace(self, scale: float, size=None) -> np.ndarray:
        """``Laplace(0, scale)`` by inversion."""
        u = self.uniform(size) - 0.5
        return _scale(-np.sign(u) * np.log1p(-2.0 * np.abs(u)), scale)

    def gumbel(self, scale: float, size=None) -> np.ndarray:
        """Standard Gumbel times ``scale`` (``-log(-log U)``)."""
        return _scale(-np.log(-np.log(self.uniform(size))), scale)

    def exponential(self, scale: float, size=None) -> np.ndarray:
        """``Exp`` with mean ``scale``."""
        return _scale(-np.log(self.uniform(size)), scale)

    def bernoulli(self, p, size=None) -> np.ndarray:
        """Boolean draws, true with probability ``p`` (a number or an array of ``size``)."""
        return self.uniform(size) < p

    # ------------------------------------------------------------------ discrete
    def geometric_failures(self, t: float, size=None) -> np.ndarray:
        """``floor(t * E)``, ``E ~ Exp(1)``: ``P(k) = (1 - q) q^k`` with ``q = exp(-1/t)``."""
        if not t > 0:
            raise ValueError(f"scale must be positive, got {t}")
        return np.floor(t * -np.log(self.uniform(size))).astype(np.int64)

    def discrete_laplace(self, scale: float, size=None) -> np.ndarray:
        """Discrete Laplace on the integers, ``P(x) ~ exp(-|x| / scale)`` (int64)."""
        n = _count(size)
        g = self.geometric_failures(scale, 2 * n)
        return _shape(g[:n] - g[n:], size)

    def discrete_gaussian(self, sigma: float, size=None) -> np.ndarray:
        """Discrete Gaussian ``P(x) ~ exp(-x^2 / (2 sigma^2))`` on the integers (int64).

        Canonne, Kamath & Steinke (NeurIPS 2020), Algorithm 3: draw ``Y`` from the discrete
        Laplace of scale ``t = floor(sigma) + 1`` and keep it with probability
        ``exp(-(|Y| - sigma^2 / t)^2 / (2 sigma^2))``; vectorised over batches of candidates.
        The acceptance probability is computed in float64 (relative error ~1e-16, far below any
        delta in use) instead of the paper's exact rational Bernoulli sampler.
        """
        if not (sigma > 0 and math.isfinite(sigma)):
            raise ValueError(f"sigma must be positive and finite, got {sigma}")
        n = _count(size)
        t = math.floor(sigma) + 1.0
        s2 = sigma * sigma
        out, filled = np.empty(n, dtype=np.int64), 0
        while filled < n:
            want = n - filled
            m = int(want * 1.6) + 16  # acceptance is above 0.6 for every sigma
            y = self.discrete_laplace(t, m)
            keep = self.uniform(m) < np.exp(-((np.abs(y) - s2 / t) ** 2) / (2.0 * s2))
            y = y[keep][:want]
            out[filled:filled + y.size] = y
            filled += y.size
        return _shape(out, size)

    def poisson(self, mean: float) -> int:
        """One Poisson count (the tuner's random stopping)."""
        return int(self.generator().poisson(float(mean)))


def discrete_gaussian_pmf(x, sigma: float) -> np.ndarray:
    """The discrete Gaussian's probabilities at the integers ``x`` (for tests and thresholds)."""
    x = np.asarray(x, dtype=float)
    k = np.arange(-int(40 * sigma) - 40, int(40 * sigma) + 41, dtype=float)
    z = np.exp(-k ** 2 / (2 * sigma * sigma)).sum()
    return np.exp(-x ** 2 / (2 * sigma * sigma)) / z


def discrete_gaussian_tail(k: int, sigma: float) -> float:
    """``P(Z >= k)`` for ``Z`` discrete Gaussian with parameter ``sigma``."""
    lo = int(k)
    hi = max(lo, 0) + int(40 * sigma) + 40
    ks = np.arange(lo, hi + 1, dtype=float)
    return float(min(1.0, discrete_gaussian_pmf(ks, sigma).sum()))


def _count(size) -> int:
    if size is None:
        return 1
    return int(np.prod(size)) if isinstance(size, tuple) else int(size)


def _shape(a: np.ndarray, size):
    if size is None:
        return a[0]
    return a.reshape(size) if isinstance(size, tuple) else a


def _scale(a, scale: float):
    if not (scale >= 0 and math.isfinite(scale)):
        raise ValueError(f"scale must be finite and >= 0, got {scale}")
    return a * scale
