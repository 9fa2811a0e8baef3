"""Random Fourier features of encoded records and their differentially private mean embedding.

The feature half of DP-MERF (Harder, Adamczewski, Park, "DP-MERF: Differentially Private Mean
Embeddings with Random Features for Practical Privacy-preserving Data Generation", AISTATS 2021).

**Records as vectors.**  Every column reaches the models as integer codes over a finite domain,
so a record is the concatenation ``x`` of one one-hot block per attribute (width ``sum(sizes)``,
exactly ``d`` ones).  The Gaussian kernel on these vectors is
``k(x, x') = exp(-||x - x'||^2 / (2 l^2)) = exp(-hamming(x, x') / l^2)``: a product over the
attributes, so the mean embedding carries every marginal, the low-order ones with the most
weight when ``l^2`` is of the order of ``d``.

**Random features** (Rahimi & Recht 2007).  ``F = D/2`` frequencies ``w_j ~ N(0, I / l^2)``,
drawn from the caller's generator (data-independent, so free), and
``phi(x) = sqrt(2/D) [cos(W x), sin(W x)]`` with ``phi(x) . phi(x') ~ k(x, x')``.  For a one-hot
``x``, ``W x`` is the sum of one column of ``W`` per attribute (a gather, not a product).

**Sensitivity.**  ``||phi(x)||^2 = (2/D) * sum_j (cos^2 + sin^2) = 1`` for *every* ``x``.  The
repository's neighbouring relation is add/remove one record (as every Gaussian measurement here),
so the SUM embedding ``S = sum_i phi(x_i)`` has L2 sensitivity exactly 1.  (The paper releases
the MEAN under replace-one, sensitivity ``2/n`` with ``n`` public; here ``n`` is not read for
free.)  With a label column ``y`` (the paper's class-conditional embedding) the release is the
matrix ``S = sum_i e_{y_i} phi(x_i)^T``, one row per class; adding a record moves one row by
``phi(x)``, so the Frobenius sensitivity is still 1.

**The count.**  ``n`` (or, with a label, the class counts ``n_c``) is released by a second
Gaussian mechanism of sensitivity 1 with ``count_share`` of the budget; the target mean embedding
is ``S_noisy / n_hat`` and the class weights are the clipped, normalised noisy counts.  Two
Gaussian events compose (in RDP) exactly as one Gaussian on the stacked vector, so the split
costs nothing beyond the noise each part gets.  With ``m = ||mu||^2 <= 1`` the squared error
``D / (2 rho_sum n^2) + m / (2 rho_count n^2)`` is smallest at
``rho_count / rho_sum = sqrt(m / D)``: about 2% of the budget for ``D = 2000``.

The counts go through :func:`synthzoo.core.privacy.mechanisms.discrete_gaussian` (integer
noise on integer counts), the sums through :func:`~synthzoo.core.privacy.mechanisms.gaussian`
(the embedding is real-valued and only the generator's training target); both charge the budget
before drawing from its secret noise source.  The random frequencies come from the user's seed:
they are data-independent and may be public, as in DP-MERF.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.domain import Domain, EncodedData
from ..core.errors import ConfigError
from ..core.privacy import mechanisms
from ..core.privacy.ledger import Budget

SENSITIVITY = 1.0  # L2 sensitivity of the sum embedding and of the count(s), add/remove one record
_CHUNK = 4096      # records per block when embedding (bounds the (rows, F) temporaries)


class RandomFourierFeatures:
    """``phi(x) = sqrt(2/D) [cos(W x), sin(W x)]`` of one-hot encoded records over ``attrs``.

    Parameters
    ----------
    domain: the encoded domain.
    n_features: ``D``, the length of ``phi`` (even; ``D/2`` frequencies).
    length_scale: the Gaussian kernel's length scale ``l`` (absolute, in one-hot units).
    rng: numpy generator the frequencies are drawn from (data-independent).
    attrs: the attributes embedded (default all; a label column is left out by the caller).
    """

    def __init__(self, domain: Domain, n_features: int, length_scale: float, rng: np.random.Generator,
                 attrs=None):
        n_features = int(n_features)
        if n_features < 2 or n_features % 2:
            raise ConfigError(f"RandomFourierFeatures: n_features must be an even integer >= 2, got {n_features}")
        if not (length_scale > 0 and math.isfinite(length_scale)):
            raise ConfigError(f"RandomFourierFeatures: length_scale must be a positive number, got {length_scale}")
        self.domain = domain
        self.attrs = tuple(domain.attrs if attrs is None else attrs)
        if not self.attrs:
            raise ConfigError("RandomFourierFeatures: no attribute to embed")
        self.cols = np.array([domain.index(a) for a in self.attrs], dtype=np.int64)
        self.sizes = np.array([domain[a] for a in self.attrs], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.width = int(self.sizes.sum())
        self.n_freq = n_features // 2
        self.length_scale = float(length_scale)
        # row r of W holds the frequencies' weights on one-hot position r: W x = sum of d rows
        self.W = rng.normal(0.0, 1.0 / self.length_scale, size=(self.width, self.n_freq))

    @property
    def dim(self) -> int:
        """``D``, the length of ``phi(x)``."""
        return 2 * self.n_freq

    @property
    def scale(self) -> float:
        """``sqrt(2/D)``, which makes ``||phi(x)|| = 1``."""
        return 1.0 / math.sqrt(self.n_freq)

    def blocks(self) -> list[np.ndarray]:
        """Per embedded attribute, its rows of ``W``: a list of ``(size, F)`` arrays."""
        return [self.W[o:o + s] for o, s in zip(self.offsets, self.sizes)]

    def phases(self, codes: np.ndarray) -> np.ndarray:
        """``W x`` for encoded rows ``codes`` (n, len(domain)): shape (n, F)."""
        idx = np.asarray(codes)[:, self.cols] + self.offsets
        out = np.zeros((idx.shape[0], self.n_freq))
        for j in range(idx.shape[1]):
            out += self.W[idx[:, j]]
        return out

    def transform(self, codes: np.ndarray) -> np.ndarray:
        """``phi(x)`` for each row of ``codes``: shape (n, D), every row of unit L2 norm."""
        codes = np.asarray(codes)
        out = np.empty((codes.shape[0], self.dim))
        for lo in range(0, codes.shape[0], _CHUNK):
            t = self.phases(codes[lo:lo + _CHUNK])
            out[lo:lo + _CHUNK, :self.n_freq] = np.cos(t)
            out[lo:lo + _CHUNK, self.n_freq:] = np.sin(t)
        return out * self.scale

    def class_sums(self, codes: np.ndarray, labels: np.ndarray | None, n_classes: int) -> np.ndarray:
        """``sum_i e_{y_i} phi(x_i)^T``: shape (n_classes, D) (one row without labels)."""
        codes = np.asarray(codes)
        out = np.zeros((n_classes, self.dim))
        for lo in range(0, codes.shape[0], _CHUNK):
            phi = self.transform(codes[lo:lo + _CHUNK])
            if labels is None:
                out[0] += phi.sum(axis=0)
            else:
                np.add.at(out, labels[lo:lo + _CHUNK], phi)
        return out


@dataclass
class NoisyEmbedding:
    """The DP release: ``mean[c] ~ (1/n) sum_{i: y_i = c} phi(x_i)`` (one row without a label),
    the class weights (noisy shares; ``[1.0]`` without a label) and the noisy record count."""

    mean: np.ndarray
    weights: np.ndarray
    total: float
    sigma_sum: float
    sigma_count: float


def noisy_mean_embedding(data: EncodedData, features: RandomFourierFeatures, budget: Budget,
                         count_share: float = 0.02, label: str | None = None,
                         module: str = "dpmerf") -> NoisyEmbedding:
    """Release the mean embedding of ``data`` under the features, spending all of ``budget``.

    ``count_share`` of the budget's remaining rho goes to the count(s) (sensitivity 1), the rest to
    the sum embedding (sensitivity 1, see the module docstring).  With ``label`` the release is
    per class (the label column must not be among ``features.attrs``).  In a non-private run both
    are exact (and the ledger records a non-private access).
    """
    if not isinstance(data, EncodedData):
        raise ConfigError(f"{module}: needs EncodedData, got {type(data).__name__}")
    if not (0.0 < count_share < 1.0):
        raise ConfigError(f"{module}: count_share must lie strictly between 0 and 1, got {count_share}")
    if budget.private and not budget.remaining > 0:
        raise ConfigError(f"{module}: the budget {budget.name!r} has nothing left to spend")
    if label is None:
        labels, n_classes = None, 1
        counts = np.array([float(data.n)])
    else:
        if label not in data.domain:
            raise ConfigError(f"{module}: label column {label!r} is not in the domain {list(data.domain.attrs)}")
        if label in features.attrs:
            raise ConfigError(f"{module}: the label column {label!r} must not be embedded as a feature too")
        labels = data.column(label)
        n_classes = data.domain[label]
        counts = np.bincount(labels, minlength=n_classes).astype(float)

    rho = budget.remaining * (1 - 1e-9)  # all of it in exact arithmetic reported epsilon 1 + 2e-16 for a request of 1
    rho_count = count_share * rho if budget.private else math.inf
    rho_sum = rho - rho_count if budget.private else math.inf
    what = "class counts" if label is not None else "record count"
    noisy_counts, sigma_count = mechanisms.discrete_gaussian(budget, counts, SENSITIVITY, rho_count,
                                                             note=f"DP-MERF {what}")
    sums = features.class_sums(data.codes, labels, n_classes)
    noisy_sums, sigma_sum = mechanisms.gaussian(budget, sums, SENSITIVITY, rho_sum,
                                                note=f"DP-MERF sum embedding ({features.dim} random features"
                                                     f"{', per class' if label is not None else ''})")
    # post-processing
    total = max(float(noisy_counts.sum()), 1.0)
    clipped = np.clip(noisy_counts, 0.0, None)
    weights = clipped / clipped.sum() if clipped.sum() > 0 else np.full(n_classes, 1.0 / n_classes)
    return NoisyEmbedding(noisy_sums / total, weights, total, float(sigma_sum), float(sigma_count))
