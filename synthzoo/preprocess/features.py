"""Continuous features for record models (GAN, VAE, diffusion, transformer), from the public schema.

* ``"features"`` -- :class:`Features`: numbers (and datetimes) scaled to [-1, 1] on their public
  bounds, categories one-hot, a flag for missing values.  Reads no data, spends no budget.
* ``"mode_features"`` -- :class:`ModeFeatures`: CTGAN's mode-specific normalisation (Xu et al.,
  NeurIPS 2019) for numbers, one-hot categories.  The modes of each numeric column are fitted to a
  histogram over PrivTree bins on the public bounds, both released through the ledger -- every
  reference implementation fits its Gaussian mixture on the raw column for free.
* ``"quantile_features"`` -- :class:`QuantileFeatures`: numbers as their quantile levels (the
  ``QuantileTransformer`` of TabDDPM and TableDiffusion), categories one-hot.  The quantile function
  of each numeric column comes from the same DP histogram over PrivTree bins -- the reference
  implementations fit it on the raw column.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..core.base import Preprocessor, register
from ..core.errors import BudgetExceededError
from ..core.features import ModeNormalised, OneHot, QuantileNumber, ScaledNumber
from ..core.params import Boolean, Integral, Interval, Real
from ..core.privacy.ledger import Budget
from ..core.privacy.mechanisms import charge_pure_dp, discrete_gaussian, epsilon_for_rho
from ..core.privacy.privtree import privtree_edges
from ..core.schema import Column, numeric_values

_ALL = ("categorical", "numerical", "datetime")


@register("preprocess", "features")
class Features(Preprocessor):
    """Scaled numbers, one-hot categories and missing flags, from the public schema alone.

    Examples
    --------
    >>> sz.Synthesizer(preprocess=["features"], model="tvae", epsilon=None)  # doctest: +SKIP
    """

    _tags = {"kinds": _ALL, "output": "features"}
    paper = "Xu et al., Modeling Tabular Data using Conditional GAN, NeurIPS 2019 (min-max and one-hot encodings)"

    def fit(self, df: pd.DataFrame, columns: list[Column], budget: Budget, rng: np.random.Generator) -> dict:
        """``{name: encoder}`` built from the schema; ``df`` is only checked for the columns."""
        self.check_columns(df, columns)
        return {c.name: OneHot(c) if c.kind == "categorical" else ScaledNumber(c) for c in columns}


class _HistogramFeatures(Preprocessor):
    """Continuous features whose numeric encoders are fitted to a noisy PrivTree histogram per column
    on its public bounds (each numeric column an equal share of the budget), or to the column itself
    in a non-private run (recorded as a non-private ``_exact_event``); categories one-hot.

    A subclass names the two ledger events (``_exact_event``, ``_histogram_event``) and builds its
    encoder with ``_from_values(column, values, rng)`` (non-private) and ``_from_histogram(column,
    edges, noisy_counts, rng)`` (private)."""

    def measured_columns(self, columns: list[Column]) -> list[str]:
        return [c.name for c in columns if c.is_numeric]  # categories are one-hot from the schema

    def fit(self, df: pd.DataFrame, columns: list[Column], budget: Budget, rng: np.random.Generator) -> dict:
        """``{name: encoder}``: an encoder fitted to a noisy PrivTree histogram per numeric column,
        one-hot categories."""
        self.check_columns(df, columns)
        numeric = [c for c in columns if c.is_numeric]
        if numeric and budget.private and not budget.remaining > 0:
            raise BudgetExceededError(f"{self.name}: budget {budget.name!r} has no rho left for {len(numeric)} "
                                      "numeric column(s); give preprocessing a share of the budget")
        rho = budget.remaining * (1 - 1e-12) / len(numeric) if (numeric and budget.private) else math.inf
        out = {}
        for c in columns:
            if c.kind == "categorical":
                out[c.name] = OneHot(c)
                continue
            v = numeric_values(df[c.name], c)
            v = v[~np.isnan(v)]
            if not budget.private:  # the papers' fit on the column itself (recorded as non-private)
                budget.charge(self._exact_event, None, math.inf, note=c.name)
                out[c.name] = self._from_values(c, v, rng)
                continue
            edges, noisy = privtree_histogram(c, v, budget, rho, float(self.tree_share), int(self.max_depth),
                                              self._histogram_event)
            out[c.name] = self._from_histogram(c, edges, noisy, rng)
        return out


@register("preprocess", "mode_features")
class ModeFeatures(_HistogramFeatures):
    """CTGAN's mode-specific normalisation with modes fitted to DP statistics; categories one-hot.

    Per numeric column, two releases share the column's even part of the module's budget:

    1. PrivTree (Zhang et al., SIGMOD 2016) on the public bounds, ``tree_share`` of it (pure DP,
       charged as ``"privtree"``): adaptive bins, fine where the data are dense -- a point mass such
       as adult's capital-gain = 0 ends in a bin of its own, which equal-width bins on [0, 99999]
       smear over a thousand values;
    2. a discrete Gaussian histogram over those bins (L2 sensitivity 1: a record falls in one bin,
       missing values in none), the rest, charged as ``"mode_histogram"``.

    The variational Gaussian mixture (at most ``n_modes`` modes, CTGAN's weight concentration 0.001)
    is fitted to that noisy histogram only, on points drawn within its bins (admissible integers for
    integer columns).  A non-private run (``epsilon=None``) fits it on the column, as the paper does.

    Parameters
    ----------
    n_modes : int, default 10
        Most modes per column (CTGAN's default).
    tree_share : float, default 0.5
        Share of each column's budget for the PrivTree bins.
    max_depth : int, default 20
        PrivTree's depth cap (resolution ``range / 2^max_depth``).

    Examples
    --------
    >>> sz.Synthesizer(preprocess=[ModeFeatures(n_modes=10)], model="ctgan", epsilon=1.0)  # doctest: +SKIP
    """

    _tags = {"kinds": _ALL, "output": "features", "spends_budget": True}
    _parameter_constraints = {"n_modes": [Interval(Integral, 1, None)],
                              "tree_share": [Interval(Real, 0, 1, closed="neither")],
                              "max_depth": [Interval(Integral, 1, 40)]}
    paper = ("Xu et al., Modeling Tabular Data using Conditional GAN, NeurIPS 2019 (mode-specific normalisation); "
             "Zhang, Xiao & Xie, PrivTree, SIGMOD 2016")

    def __init__(self, n_modes: int = 10, tree_share: float = 0.5, max_depth: int = 20):
        self.n_modes = n_modes
        self.tree_share = tree_share
        self.max_depth = max_depth

    _exact_event, _histogram_event = "mode_fit", "mode_histogram"

    def _from_values(self, c, v, rng):
        return ModeNormalised.from_values(c, v, int(self.n_modes), rng)

    def _from_histogram(self, c, edges, noisy, rng):
        return ModeNormalised.from_histogram(c, edges, noisy, int(self.n_modes), rng)


def privtree_histogram(c: Column, v: np.ndarray, budget: Budget, rho: float, tree_share: float, max_depth: int,
                       mechanism: str) -> tuple[np.ndarray, np.ndarray]:
    """A private column's noisy histogram over PrivTree bins on its public bounds (integer bins
    ``[a, b)`` for an integer column): the bins with ``tree_share`` of ``rho`` (pure DP, charged as
    ``"privtree"``), then a discrete Gaussian count per bin (L2 sensitivity 1: a record falls in one
    bin, a missing value in none) with the rest, charged as ``mechanism``.  ``v`` holds the column's
    values without NaN.  Returns ``(edges, noisy_counts)``."""
    lo, hi = (float(math.ceil(c.lower)), float(math.floor(c.upper)) + 1.0) if c.integer else (c.lower, c.upper)
    eps = epsilon_for_rho(tree_share * rho, bounded_range=False)
    charge_pure_dp(budget, eps, "privtree", note=c.name)
    edges = privtree_edges(v, lo, hi, c.integer, eps, budget.noise, theta=0.0, max_depth=max_depth)
    idx = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, edges.size - 2)
    counts = np.bincount(idx, minlength=edges.size - 1).astype(float)
    noisy, _ = discrete_gaussian(budget, counts, 1.0, (1 - tree_share) * rho, mechanism=mechanism, note=c.name)
    return edges, noisy


@register("preprocess", "quantile_features")
class QuantileFeatures(_HistogramFeatures):
    """Numbers as their quantile levels (the ``QuantileTransformer`` of TabDDPM and TableDiffusion)
    with the quantile function fitted to DP statistics; categories one-hot.

    Per numeric column, the column's even part of the module's budget buys a histogram over PrivTree
    bins (as :class:`ModeFeatures`: ``tree_share`` for the bins, charged as ``"privtree"``, the rest
    for discrete Gaussian counts, charged as ``"quantile_histogram"``); the quantile function is that
    noisy histogram's, uniform within each bin (:meth:`QuantileNumber.from_histogram`).  PrivTree gives
    a point mass such as adult's capital-gain = 0 a bin of its own, so it stays a point mass.  A
    non-private run (``epsilon=None``) takes the column's own ``n_quantiles`` quantiles, as the papers'
    ``QuantileTransformer`` does (recorded as a non-private ``"quantile_fit"``).

    A value that many records hold -- every value of an integer column, a point mass such as
    capital-gain = 0 -- owns a range of levels.  ``QuantileTransformer`` maps it to the middle of that
    range, so the model must learn a spike per value, and a smooth model leaks the narrow spikes next to
    a wide one into it (adult's hours-per-week = 40, 47 % of rows, came out at 55 %).  With
    ``dequantize`` (the default) each record's level is drawn uniformly within its value's range -- the
    randomised probability integral transform (Brockwell 2007), the uniform dequantization of
    Theis et al. (ICLR 2016) -- so the levels of any column are uniform and the model learns a smooth
    density; :meth:`QuantileNumber.inverse` maps every level of the range back to the value, so the
    encoding still round-trips exactly.  The draw is per record, so a private fit takes it from the secret
    noise (a public seed hands draws out by row, and a neighbouring table would shift every later row's).

    Parameters
    ----------
    n_quantiles : int, default 1000
        Levels of a non-private fit (scikit-learn's default).
    dequantize : bool, default True
        Draw each record's level uniformly within the levels its value holds; False maps it to their
        middle, as ``QuantileTransformer``.
    tree_share : float, default 0.5
        Share of each column's budget for the PrivTree bins.
    max_depth : int, default 20
        PrivTree's depth cap (resolution ``range / 2^max_depth``).

    Examples
    --------
    >>> sz.Synthesizer(preprocess=["quantile_features"], model="tabddpm", epsilon=1.0)  # doctest: +SKIP
    """

    _tags = {"kinds": _ALL, "output": "features", "spends_budget": True}
    _parameter_constraints = {"n_quantiles": [Interval(Integral, 2, None)], "dequantize": [Boolean()],
                              "tree_share": [Interval(Real, 0, 1, closed="neither")],
                              "max_depth": [Interval(Integral, 1, 40)]}
    paper = ("Kotelnikov et al., TabDDPM, ICML 2023 (quantile transform of numerical features); "
             "Zhang, Xiao & Xie, PrivTree, SIGMOD 2016")

    def __init__(self, n_quantiles: int = 1000, dequantize: bool = True, tree_share: float = 0.5,
                 max_depth: int = 20):
        self.n_quantiles = n_quantiles
        self.dequantize = dequantize
        self.tree_share = tree_share
        self.max_depth = max_depth

    _exact_event, _histogram_event = "quantile_fit", "quantile_histogram"

    def _from_values(self, c, v, rng):
        return QuantileNumber.from_values(c, v, int(self.n_quantiles), spread=bool(self.dequantize))

    def _from_histogram(self, c, edges, noisy, rng):
        return QuantileNumber.from_histogram(c, edges, noisy, spread=bool(self.dequantize))
