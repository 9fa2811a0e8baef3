"""Continuous feature encodings for record models (GAN, VAE, diffusion, transformer), built from
the public schema -- the contract between the ``features`` preprocessor, the record models and
decoding.

A :class:`FeatureTable` turns a frame into a float matrix and back.  Its :attr:`~FeatureTable.layout`
says which slice is which column and how a model should produce it:

* ``"tanh"`` -- a scalar in [-1, 1] (a number scaled on its public bounds, or CTGAN's within-mode
  value ``alpha``);
* ``"softmax"`` -- a one-hot block (categories, missing included; CTGAN's mode indicator);
* ``"sigmoid"`` -- a 0/1 flag (a numeric value is missing).

Column encoders:

* :class:`ScaledNumber` -- ``2 (v - lower) / (upper - lower) - 1`` on the *public* bounds (datetimes
  as epoch seconds), plus a missing flag when the schema allows missing values; reads no data.
* :class:`OneHot` -- the schema's categories (and missing) as a one-hot block; reads no data.
* :class:`ModeNormalised` -- CTGAN's mode-specific normalisation (Xu et al., NeurIPS 2019): a value
  becomes its mode's one-hot indicator and ``alpha = (v - mu_k) / (4 sigma_k)``.  The modes are
  fitted here on a *noisy histogram* on the public bounds (the ``features`` preprocessor releases it
  through the ledger), never on the column -- unlike every reference implementation.
* :class:`QuantileNumber` -- a value becomes its quantile level ``u`` in [0, 1], as ``2 u - 1``
  (scikit-learn's ``QuantileTransformer``, which TabDDPM and TableDiffusion use: TabDDPM diffuses
  the normal scores ``Phi^-1(u)``).  The quantile function is fitted here on a *noisy histogram*
  (the ``quantile_features`` preprocessor releases it through the ledger), or, in a non-private
  run, on the column itself.  Point masses (adult's capital-gain is 92 % zeros) and integer
  columns round-trip: a tie maps to the middle of its levels, and every level of it maps back to it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import ConfigError
from .schema import Column, Schema, category_key, numeric_values, per_column


@dataclass(frozen=True)
class Segment:
    """One slice of the feature matrix: ``[start, start + width)`` of column ``column``, produced by
    ``activation`` ("tanh", "softmax" or "sigmoid")."""

    column: str
    start: int
    width: int
    activation: str

    @property
    def stop(self) -> int:
        return self.start + self.width


class ScaledNumber:
    """A numeric or datetime column scaled to [-1, 1] on its public bounds (+ a missing flag)."""

    kind = "scaled"

    def __init__(self, column: Column):
        self.column = column

    def segments(self) -> list[tuple[int, str]]:
        return [(1, "tanh")] + ([(1, "sigmoid")] if self.column.missing else [])

    def transform(self, s: pd.Series, rng: np.random.Generator) -> np.ndarray:
        v = numeric_values(s, self.column)
        lo, hi = self.column.lower, self.column.upper
        span = hi - lo if hi > lo else 1.0
        na = np.isnan(v)
        out = np.zeros((len(v), 2 if self.column.missing else 1), dtype=np.float32)
        out[~na, 0] = 2.0 * (v[~na] - lo) / span - 1.0
        if self.column.missing:
            out[na, 1] = 1.0
        return out

    def inverse(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        lo, hi = self.column.lower, self.column.upper
        # in float64: with a model's float32 output the arithmetic stayed float32 (numpy's rules for Python
        # floats), so clipping to float32(upper) could land above the public bound (hmeq's DEBTINC), and a
        # datetime's seconds since 1970 moved by a second or two
        v = lo + (np.clip(np.asarray(x[:, 0], dtype=float), -1.0, 1.0) + 1.0) / 2.0 * (hi - lo)
        v = _finish(v, self.column)
        if self.column.missing:
            v[x[:, 1] > 0.5] = np.nan
        return v

    def to_state(self) -> dict:
        return {"type": self.kind}


class OneHot:
    """A categorical column as a one-hot block over the schema's categories (and missing)."""

    kind = "onehot"

    def __init__(self, column: Column):
        self.column = column
        self._index = {c: i for i, c in enumerate(column.categories)}

    @property
    def width(self) -> int:
        return len(self.column.categories) + (1 if self.column.missing else 0)

    def segments(self) -> list[tuple[int, str]]:
        return [(self.width, "softmax")]

    def codes(self, s: pd.Series) -> np.ndarray:
        """Category index per value (missing: the last index)."""
        na = s.isna().to_numpy()
        idx = np.full(len(s), len(self.column.categories), dtype=np.int64)
        if (~na).any():
            mapped = s[~na].map(category_key).map(self._index)
            if mapped.isna().any():
                raise ConfigError(f"column {self.column.name!r}: values outside the schema's categories")
            idx[~na] = mapped.to_numpy(dtype=np.int64)
        return idx

    def transform(self, s: pd.Series, rng: np.random.Generator) -> np.ndarray:
        out = np.zeros((len(s), self.width), dtype=np.float32)
        out[np.arange(len(s)), self.codes(s)] = 1.0
        return out

    def inverse(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        k = np.argmax(x, axis=1)
        cats = np.asarray(self.column.categories + [np.nan], dtype=object)
        return cats[k]

    def to_state(self) -> dict:
        return {"type": self.kind}


class ModeNormalised:
    """CTGAN's mode-specific normalisation of a numeric column, with modes fitted on DP statistics.

    Parameters
    ----------
    column : Column
    means, stds, weights : array-like
        The modes (a Gaussian mixture on the column's scale).  :meth:`from_histogram` fits them to a
        noisy histogram; nothing here ever reads the column's values to choose them.
    """

    kind = "modes"

    def __init__(self, column: Column, means, stds, weights):
        self.column = column
        self.means = np.asarray(means, dtype=float)
        self.stds = np.maximum(np.asarray(stds, dtype=float), 1e-9)
        self.weights = np.asarray(weights, dtype=float)
        if not (self.means.ndim == 1 and self.means.shape == self.stds.shape == self.weights.shape
                and self.means.size >= 1 and np.all(np.isfinite(self.means)) and np.all(self.weights >= 0)):
            raise ConfigError(f"column {column.name!r}: malformed modes")
        self.weights = self.weights / self.weights.sum() if self.weights.sum() > 0 else \
            np.full(self.means.size, 1.0 / self.means.size)

    @classmethod
    def from_histogram(cls, column: Column, edges: np.ndarray, noisy_counts: np.ndarray, n_modes: int,
                       rng: np.random.Generator) -> "ModeNormalised":
        """Fit up to ``n_modes`` modes to a noisy histogram over ``edges`` (any increasing edges;
        negative counts clipped), on 4,000 points drawn within the bins in proportion to the noisy
        counts (for an integer column, the bin ``[a, b)``'s admissible integers ``ceil(a) .. ceil(b) - 1``) --
        post-processing of the histogram only."""
        counts = np.clip(np.asarray(noisy_counts, dtype=float), 0.0, None)
        lo, hi = float(edges[0]), float(edges[-1])
        if counts.sum() <= 0 or hi <= lo:
            return cls(column, [(lo + hi) / 2], [max((hi - lo) / 4, 1e-9)], [1.0])
        m = 4000
        bins = rng.choice(counts.size, size=m, p=counts / counts.sum())
        if column.integer:
            # an admissible integer of the bin [a, b): ceil(a) .. ceil(b) - 1, as the histogram counted them.
            # PrivTree halves integer ranges at non-integer points (0.5625, 1.125, ...): drawn from a + [0, b - a),
            # a bin holding the integer 1 gave the point 0.5625, a mode of no spread there, and the column's 1s fell
            # in a wide mode far away (hmeq's NINQ: a mode at 7.5, the 1s at alpha -0.7)
            first = np.ceil(edges[bins])
            pts = first + np.floor(rng.random(m) * np.maximum(np.ceil(edges[bins + 1]) - first, 1.0))
        else:
            pts = edges[bins] + rng.random(m) * (edges[bins + 1] - edges[bins])
        return cls.from_values(column, pts, min(n_modes, int(np.count_nonzero(counts))), rng, (lo, hi))

    @classmethod
    def from_values(cls, column: Column, values: np.ndarray, n_modes: int, rng: np.random.Generator,
                    span: tuple[float, float] | None = None) -> "ModeNormalised":
        """CTGAN's modes of ``values`` (NaN dropped, at most 20,000 drawn): a variational Bayesian
        Gaussian mixture (Dirichlet process, weight concentration 0.001) whose modes above 0.5 %
        weight are kept, each with the mean and scale of the points it takes.  A private run calls
        it on points drawn from a DP histogram only; a non-private one on the column (the paper).  A value
        holding :data:`SPIKE_SHARE` of the points is a mode of its own, of no spread (at most ``n_modes - 1``
        of them, the largest), and the mixture is fitted to the other points."""
        pts = np.asarray(values, dtype=float)
        pts = pts[~np.isnan(pts)]
        lo, hi = span if span is not None else (column.lower, column.upper)
        if pts.size == 0 or hi <= lo:
            return cls(column, [(lo + hi) / 2], [max((hi - lo) / 4, 1e-9)], [1.0])
        if pts.size > 20_000:
            pts = pts[rng.choice(pts.size, 20_000, replace=False)]
        # the points as shares of [lo, hi], computed in halves: bounds of +-8e307 made sums of the points, and
        # bounds of +-1e308 hi - lo itself, overflow to inf ("malformed modes", after the histogram's charge);
        # halving is exact, so ordinary columns get the same shares to the bit
        half = hi / 2 - lo / 2
        # a value holding SPIKE_SHARE of the points (a zero-inflated count, hours-per-week's 40) is a mode of its
        # own, of no spread; the mixture takes the rest.  Fitted with the points around it, such a mode took their
        # spread: adult's capital-gain 0 (92 % of the rows) got a mode at 0.6 of scale 12 at epsilon 1, so a
        # generator's within-mode noise of 0.02 decoded a third of the zeros as 1s and 2s (1-way TVD .285)
        vals, cnt = np.unique(pts, return_counts=True)
        spikes = np.flatnonzero(cnt >= SPIKE_SHARE * pts.size)
        spikes = spikes[np.argsort(-cnt[spikes], kind="stable")][:n_modes - 1]
        spike_w = cnt[spikes] / pts.size
        # a scale that decodes any alpha in [-1, 1] back onto the spike (an integer's within 0.4 of it)
        spike_std = np.full(spikes.size, min(1e-6 * 2 * half, 0.1) if column.integer else 1e-6 * 2 * half)
        rest = pts[~np.isin(pts, vals[spikes])]
        if rest.size == 0:
            return cls(column, vals[spikes], spike_std, spike_w)
        means, stds, weights = cls._mixture(rest, min(n_modes - spikes.size, np.unique(rest).size), rng, lo, half)
        return cls(column, np.r_[vals[spikes], means], np.r_[spike_std, stds],
                   np.r_[spike_w, weights * (1.0 - spike_w.sum())])

    @staticmethod
    def _mixture(pts: np.ndarray, k: int, rng: np.random.Generator, lo: float, half: float):
        """CTGAN's mixture of ``pts`` with at most ``k`` modes: their means, scales and weights on the column's
        scale (``lo + 2 * half`` is the top of the range)."""
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.mixture import BayesianGaussianMixture

        k = int(max(1, k))
        z = (pts / 2 - lo / 2) / half
        gm = BayesianGaussianMixture(n_components=k, weight_concentration_prior_type="dirichlet_process",
                                     weight_concentration_prior=0.001, max_iter=100, n_init=1,
                                     random_state=int(rng.integers(2 ** 31)))
        with warnings.catch_warnings():  # a mixture that stops at max_iter is still a fine set of modes
            warnings.simplefilter("ignore", ConvergenceWarning)
            gm.fit(z.reshape(-1, 1))
        keep = gm.weights_ > 0.005
        if not keep.any():
            keep = gm.weights_ == gm.weights_.max()
        # the modes' means and scales from the points they take (an M-step without the Wishart prior,
        # which would give a point mass a scale of a thousandth of the range)
        resp = gm.predict_proba(z.reshape(-1, 1))[:, keep]
        mass = np.maximum(resp.sum(axis=0), 1e-12)
        mean_z = (resp * z[:, None]).sum(axis=0) / mass
        std_z = np.sqrt((resp * (z[:, None] - mean_z[None, :]) ** 2).sum(axis=0) / mass)
        means = (lo / 2 + mean_z * half) * 2  # back on the column's scale, never past the bounds' magnitude
        return means, np.maximum(std_z, 1e-6) * 2 * half, gm.weights_[keep] / gm.weights_[keep].sum()

    @property
    def n_modes(self) -> int:
        return self.means.size

    def segments(self) -> list[tuple[int, str]]:
        return [(1, "tanh"), (self.n_modes, "softmax")] + ([(1, "sigmoid")] if self.column.missing else [])

    def transform(self, s: pd.Series, rng: np.random.Generator) -> np.ndarray:
        """Each value's mode drawn from its posterior over the modes (as CTGAN), then ``alpha``."""
        v = numeric_values(s, self.column)
        na = np.isnan(v)
        k = self.n_modes
        out = np.zeros((len(v), 1 + k + (1 if self.column.missing else 0)), dtype=np.float32)
        x = v[~na]
        if x.size:
            # in halves (exact), so that values and modes of +-8e307 do not overflow in their difference
            dev = (x[:, None] / 2 - self.means[None, :] / 2) / (self.stds[None, :] / 2)
            logp = np.log(self.weights + 1e-12)[None, :] - np.log(self.stds)[None, :] - 0.5 * dev ** 2
            p = np.exp(logp - logp.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            mode = (p.cumsum(axis=1) < rng.random(x.size)[:, None]).sum(axis=1).clip(0, k - 1)
            rows = np.flatnonzero(~na)
            out[rows, 0] = np.clip((x / 2 - self.means[mode] / 2) / (2 * self.stds[mode]), -0.99, 0.99)
            out[rows, 1 + mode] = 1.0
        if self.column.missing:
            out[na, -1] = 1.0
        return out

    def inverse(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        k = self.n_modes
        mode = np.argmax(x[:, 1:1 + k], axis=1)
        with np.errstate(over="ignore"):  # past the largest float only near bounds of +-1e308: clipped to them
            v = np.clip(x[:, 0], -1.0, 1.0) * 4 * self.stds[mode] + self.means[mode]
        v = _finish(np.clip(v, self.column.lower, self.column.upper), self.column)
        if self.column.missing:
            v[x[:, -1] > 0.5] = np.nan
        return v

    def to_state(self) -> dict:
        return {"type": self.kind, "means": self.means.tolist(), "stds": self.stds.tolist(),
                "weights": self.weights.tolist()}


class QuantileNumber:
    """A numeric column as its quantile level ``u`` in [0, 1], stored as ``2 u - 1`` (+ a missing flag).

    Parameters
    ----------
    column : Column
    values, levels : array-like
        The knots of the quantile function: ``levels`` (non-decreasing, from 0 to 1) and the column's
        ``values`` there (non-decreasing, finite); linear between knots.  :meth:`from_histogram`
        builds them from a noisy histogram, :meth:`from_values` from the column (non-private).

    spread : bool, default False
        Draw each value's level uniformly within the levels :meth:`inverse` maps back to it (the
        randomised probability integral transform: uniform levels for a discrete column).

    Notes
    -----
    Without ``spread``, ``transform`` is scikit-learn's: the mean of the forward and the backward
    interpolation, so a value held by many records (a tie among the knots) maps to the middle of its
    levels; ``inverse`` maps every level of that range back to the value (for an integer column,
    every level whose value rounds to it).  Values outside the knots map to 0 or 1.
    """

    kind = "quantile"

    def __init__(self, column: Column, values, levels, spread: bool = False):
        self.column = column
        self.values = np.asarray(values, dtype=float)
        self.levels = np.asarray(levels, dtype=float)
        self.spread = bool(spread)
        v, lv = self.values, self.levels
        if not (v.ndim == 1 and v.shape == lv.shape and v.size >= 2 and np.all(np.isfinite(v))
                and np.all(np.isfinite(lv)) and np.all(np.diff(v) >= 0) and np.all(np.diff(lv) >= 0)
                and lv[0] == 0.0 and lv[-1] == 1.0):
            raise ConfigError(f"column {column.name!r}: malformed quantile knots")
        # the knots' values over a power of two at least their magnitude (exact: the same interpolation, to the
        # bit): np.interp's slope between knots of +-8.9e307 overflowed to inf, and the samples piled at a bound
        self._scale = 2.0 ** int(np.frexp(np.max(np.abs(v)))[1])
        self._unit = v / self._scale

    @classmethod
    def from_values(cls, column: Column, values: np.ndarray, n_quantiles: int = 1000,
                    spread: bool = False) -> "QuantileNumber":
        """The empirical quantiles of ``values`` (NaN dropped) at ``n_quantiles`` evenly spaced levels
        (at most one per value), as ``QuantileTransformer`` fits them -- a non-private run only."""
        pts = np.asarray(values, dtype=float)
        pts = pts[~np.isnan(pts)]
        if pts.size == 0:
            return cls.on_bounds(column, spread)
        lv = np.linspace(0.0, 1.0, int(max(2, min(n_quantiles, pts.size))))
        q = np.maximum.accumulate(np.percentile(pts, lv * 100.0))  # monotone despite rounding
        return cls(column, q, lv, spread)

    @classmethod
    def from_histogram(cls, column: Column, edges: np.ndarray, noisy_counts: np.ndarray,
                       spread: bool = False) -> "QuantileNumber":
        """The quantile function of a noisy histogram over increasing ``edges`` (negative counts
        clipped): uniform within each bin.  An integer column's bin ``[a, b)`` holds the integers
        ``ceil(a) .. ceil(b) - 1``, each the middle of a unit interval: the bin spans
        ``[ceil(a) - 0.5, ceil(b) - 0.5]``, so every integer maps strictly inside its bin's levels and
        back to itself (a bin of one integer is a point mass).  Post-processing only."""
        edges = np.asarray(edges, dtype=float)
        counts = np.clip(np.asarray(noisy_counts, dtype=float), 0.0, None)
        if counts.sum() <= 0 or edges[-1] <= edges[0]:
            return cls.on_bounds(column, spread)
        counts = counts + 1e-6 * counts.sum()  # strictly increasing: a bin noise emptied still inverts
        cdf = np.concatenate([[0.0], np.cumsum(counts) / counts.sum()])
        cdf[-1] = 1.0
        lo, hi = edges[:-1], edges[1:]
        if column.integer:
            lo, hi = np.ceil(lo) - 0.5, np.ceil(hi) - 0.5
        values = np.stack([lo, np.maximum(hi, lo)], axis=1).reshape(-1)
        levels = np.stack([cdf[:-1], cdf[1:]], axis=1).reshape(-1)
        keep = np.ones(values.size, dtype=bool)  # drop repeated knots (a continuous bin's shared edge)
        keep[1:] = (np.diff(values) != 0) | (np.diff(levels) != 0)
        return cls(column, np.maximum.accumulate(values[keep]), np.maximum.accumulate(levels[keep]), spread)

    @classmethod
    def on_bounds(cls, column: Column, spread: bool = False) -> "QuantileNumber":
        """Uniform on the public bounds (no data)."""
        lo, hi = float(column.lower), float(column.upper)
        return cls(column, [lo, hi if hi > lo else lo], [0.0, 1.0], spread)

    def segments(self) -> list[tuple[int, str]]:
        return [(1, "tanh")] + ([(1, "sigmoid")] if self.column.missing else [])

    def _top(self, v: np.ndarray) -> np.ndarray:
        """The highest level at which the quantile function is ``v`` (the forward interpolation)."""
        return np.interp(v / self._scale, self._unit, self.levels)

    def _bottom(self, v: np.ndarray) -> np.ndarray:
        """The lowest level at which the quantile function is ``v`` (the backward interpolation)."""
        return -np.interp(-v / self._scale, -self._unit[::-1], -self.levels[::-1])

    def levels_of(self, v: np.ndarray) -> np.ndarray:
        """Quantile levels in [0, 1] of values (no NaN): the middle of the levels a value holds."""
        return 0.5 * (self._top(v) + self._bottom(v))

    def level_ranges(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The levels ``[a, b]`` that :meth:`inverse` maps back to each value: those of a tie (a
        point mass), and for an integer column every level whose value rounds to it."""
        if self.column.integer:
            return self._bottom(v - 0.5), self._top(v + 0.5)
        return self._bottom(v), self._top(v)

    def transform(self, s: pd.Series, rng: np.random.Generator) -> np.ndarray:
        v = numeric_values(s, self.column)
        na = np.isnan(v)
        out = np.zeros((len(v), 2 if self.column.missing else 1), dtype=np.float32)
        if self.spread:  # the randomised probability integral transform: uniform levels for discrete data
            a, b = self.level_ranges(v[~na])
            u = a + rng.random(a.size) * (b - a)
        else:
            u = self.levels_of(v[~na])
        out[~na, 0] = 2.0 * u - 1.0
        if self.column.missing:
            out[na, 1] = 1.0
        return out

    def inverse(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        u = (np.clip(np.asarray(x[:, 0], dtype=float), -1.0, 1.0) + 1.0) / 2.0
        v = _finish(np.interp(u, self.levels, self._unit) * self._scale, self.column)
        if self.column.missing:
            v[x[:, 1] > 0.5] = np.nan
        return v

    def to_state(self) -> dict:
        return {"type": self.kind, "values": self.values.tolist(), "levels": self.levels.tolist(),
                "spread": self.spread}


def _finish(v: np.ndarray, column: Column) -> np.ndarray:
    v = np.clip(np.asarray(v, dtype=float), column.lower, column.upper)  # float64 first: see ScaledNumber.inverse
    if column.integer:
        v = np.clip(np.round(v), math.ceil(column.lower), math.floor(column.upper))
    return v


def feature_encoder_from_state(column: Column, state: dict):
    """A feature encoder from its saved state (untrusted input: CTGAN's modes must be finite, lie
    within the column's bounds and number at most 1,000)."""
    kind = state.get("type") if isinstance(state, dict) else None
    where = f"model file: feature encoder of column {column.name!r}"
    if kind in ("scaled", "onehot") and set(state) != {"type"}:
        raise ConfigError(f"{where}: a {kind!r} encoder has no other key, got {sorted(state)}")
    if kind == "scaled" and column.is_numeric:
        return ScaledNumber(column)
    if kind == "onehot" and column.kind == "categorical":
        return OneHot(column)
    if kind == "modes" and column.is_numeric:
        if set(state) != {"type", "means", "stds", "weights"}:
            raise ConfigError(f"{where}: a 'modes' encoder has the keys means, stds, weights")
        arrs = []
        for key in ("means", "stds", "weights"):
            v = state[key]
            if not isinstance(v, list) or not 1 <= len(v) <= 1000 or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v):
                raise ConfigError(f"{where}: the modes' {key!r} must be a list of 1 to 1,000 finite numbers")
            arrs.append(np.asarray(v, dtype=float))
        means, stds, weights = arrs
        # a mode fitted to a noisy histogram may sit a little past the bounds (integer bins reach
        # upper + 1) and spread wider than the range: a margin of one range each way, no more
        pad = max(column.upper - column.lower, 1.0)
        if not (np.all(means >= column.lower - pad) and np.all(means <= column.upper + pad) and np.all(stds > 0)
                and np.all(stds <= 2 * pad) and np.all(weights >= 0)):
            raise ConfigError(f"{where}: modes must lie within the bounds (give or take one range), with scales in "
                              "(0, twice the range] and weights >= 0")
        return ModeNormalised(column, means, stds, weights)
    if kind == "quantile" and column.is_numeric:
        if not {"type", "values", "levels"} <= set(state) <= {"type", "values", "levels", "spread"}:
            raise ConfigError(f"{where}: a 'quantile' encoder has the keys values, levels (and spread)")
        if not isinstance(state.get("spread", False), bool):
            raise ConfigError(f"{where}: the quantile encoder's 'spread' must be true or false")
        for key in ("values", "levels"):
            v = state[key]
            if not isinstance(v, list) or not 2 <= len(v) <= 100_000 or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v):
                raise ConfigError(f"{where}: the quantile {key!r} must be a list of 2 to 100,000 finite numbers")
        pad = 0.5 if column.integer else 0.0  # an integer k stands for the unit interval around it
        if min(state["values"]) < column.lower - pad or max(state["values"]) > column.upper + pad:
            raise ConfigError(f"{where}: quantile values must lie within the bounds [{column.lower}, {column.upper}]"
                              + (" (half a unit beyond them for integers)" if pad else ""))
        return QuantileNumber(column, state["values"], state["levels"], state.get("spread", False))
    raise ConfigError(f"{where}: unknown or mismatched feature encoder {kind!r}")


#: The share of a numeric column's points one value must hold to be a mode of no spread of its own
#: (:meth:`ModeNormalised.from_values`).
SPIKE_SHARE = 0.1

#: What sampling says when a model's network output is not finite (weights edited in a model file).
NONFINITE_OUTPUT = ("the model's network output holds non-finite values (NaN or infinity), which no sound model "
                    "produces: weights edited in a model file (or a fit that diverged)")


class FeatureTable:
    """One feature encoder per schema column: a frame <-> an (n, dim) float32 matrix with a layout.

    Examples
    --------
    >>> schema = Schema.from_dict({"columns": {"x": {"type": "numerical", "lower": 0, "upper": 10},
    ...                                        "c": {"type": "categorical", "categories": ["a", "b"]}}})
    >>> table = FeatureTable(schema, {"x": ScaledNumber(schema["x"]), "c": OneHot(schema["c"])})
    >>> [(s.column, s.width, s.activation) for s in table.layout]
    [('x', 1, 'tanh'), ('c', 2, 'softmax')]
    """

    def __init__(self, schema: Schema, encoders: dict):
        self.schema = schema
        self.encoders = per_column(schema, encoders, "feature encoder")
        self.layout: list[Segment] = []
        self.columns: dict[str, slice] = {}
        pos = 0
        for c in schema.names:
            start = pos
            for width, act in self.encoders[c].segments():
                self.layout.append(Segment(c, pos, int(width), act))
                pos += int(width)
            self.columns[c] = slice(start, pos)
        self.dim = pos

    def transform(self, df: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
        """The (n, dim) feature matrix of ``df`` (``rng`` draws CTGAN's per-record modes)."""
        return np.concatenate([self.encoders[c].transform(df[c], rng) for c in self.schema.names], axis=1)

    def inverse(self, x: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """Raw-typed values: categories as their schema strings, numbers as float (epoch s).  A model's
        output holding NaN or infinity (no fitted model's does; weights edited in a model file overflow to
        it) is a ConfigError: decoded, a NaN became a missing value or a category without a word."""
        x = np.asarray(x)
        if x.size and not np.isfinite(x).all():
            raise ConfigError(NONFINITE_OUTPUT)
        return pd.DataFrame({c: self.encoders[c].inverse(x[:, self.columns[c]], rng) for c in self.schema.names})

    def to_dict(self) -> dict:
        """The layout as JSON (what a record model's saved state is checked against)."""
        return {"dim": self.dim, "layout": [[s.column, s.start, s.width, s.activation] for s in self.layout]}

    def __eq__(self, other) -> bool:
        return isinstance(other, FeatureTable) and self.to_dict() == other.to_dict()

    def to_state(self) -> dict:
        return {c: e.to_state() for c, e in self.encoders.items()}

    @classmethod
    def from_state(cls, schema: Schema, state: dict) -> "FeatureTable":
        if not isinstance(state, dict):
            raise ConfigError("model file: the feature encoders must be an object")
        return cls(schema, {c.name: feature_encoder_from_state(c, state.get(c.name)) for c in schema.columns})


@dataclass
class FeatureData:
    """Records as features: the matrix and the table that made it (layout, decoding)."""

    x: np.ndarray
    table: FeatureTable

    @property
    def n(self) -> int:
        return self.x.shape[0]
