"""Continuous features for record models (GAN, VAE, diffusion, transformer), from the public schema.

* ``"features"`` -- :class:`Features`: numbers (and datetimes) scaled to [-1, 1] on their public
  bounds, categories one-hot, a flag for missing values.  Reads no data, spends no budget.
* ``"mode_features"`` -- :class:`ModeFeatures`: CTGAN's mode-specific normalisation (Xu et al.,
  NeurIPS 2019) for numbers, one-hot categories.  The modes of each numeric column are fitted to a
  histogram on the public bounds released with the discrete Gaussian mechanism and charged to the
  ledger -- every reference implementation fits its Gaussian mixture on the raw column for free.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..core.base import Preprocessor, register
from ..core.errors import BudgetExceededError
from ..core.features import ModeNormalised, OneHot, ScaledNumber
from ..core.params import Integral, Interval
from ..core.privacy.ledger import Budget
from ..core.privacy.mechanisms import discrete_gaussian
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


def histogram_edges(col: Column, bins: int) -> np.ndarray:
    """Equal-width bins on the public bounds (one per admissible integer when there are fewer)."""
    lo, hi = col.lower, col.upper
    if col.integer:
        k = int(math.floor(hi) - math.ceil(lo) + 1)
        if k <= bins:
            return np.arange(math.ceil(lo), math.floor(hi) + 2, dtype=float) - 0.5
    return np.linspace(lo, hi, int(bins) + 1) if hi > lo else np.array([lo - 0.5, hi + 0.5])


@register("preprocess", "mode_features")
class ModeFeatures(Preprocessor):
    """CTGAN's mode-specific normalisation with modes fitted to DP histograms; categories one-hot.

    Budget: the module's rho is split evenly over the numeric columns; each gets one discrete
    Gaussian histogram (L2 sensitivity 1: a record falls in one bin; missing values in none) on
    ``bins`` equal-width bins over its public bounds, charged as ``"mode_histogram"``.  The
    variational Gaussian mixture (at most ``n_modes`` modes, CTGAN's weight concentration 0.001) is
    fitted to that noisy histogram only.

    Parameters
    ----------
    n_modes : int, default 10
        Most modes per column (CTGAN's default).
    bins : int, default 100
        Histogram bins per numeric column.

    Examples
    --------
    >>> sz.Synthesizer(preprocess=[ModeFeatures(n_modes=10)], model="ctgan", epsilon=1.0)  # doctest: +SKIP
    """

    _tags = {"kinds": _ALL, "output": "features", "spends_budget": True}
    _parameter_constraints = {"n_modes": [Interval(Integral, 1, None)], "bins": [Interval(Integral, 2, None)]}
    paper = "Xu et al., Modeling Tabular Data using Conditional GAN, NeurIPS 2019 (mode-specific normalisation)"

    def __init__(self, n_modes: int = 10, bins: int = 100):
        self.n_modes = n_modes
        self.bins = bins

    def fit(self, df: pd.DataFrame, columns: list[Column], budget: Budget, rng: np.random.Generator) -> dict:
        """``{name: encoder}``: modes from a noisy histogram per numeric column, one-hot categories."""
        self.check_columns(df, columns)
        numeric = [c for c in columns if c.is_numeric]
        if numeric and budget.private and not budget.remaining > 0:
            raise BudgetExceededError(f"mode_features: budget {budget.name!r} has no rho left for {len(numeric)} "
                                      "numeric column(s); give preprocessing a share of the budget")
        rho = budget.remaining / len(numeric) if (numeric and budget.private) else math.inf
        out = {}
        for c in columns:
            if c.kind == "categorical":
                out[c.name] = OneHot(c)
                continue
            edges = histogram_edges(c, int(self.bins))
            v = numeric_values(df[c.name], c)
            v = v[~np.isnan(v)]
            idx = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, edges.size - 2)
            counts = np.bincount(idx, minlength=edges.size - 1).astype(float)
            noisy, _ = discrete_gaussian(budget, counts, 1.0, rho, mechanism="mode_histogram", note=c.name)
            out[c.name] = ModeNormalised.from_histogram(c, edges, noisy, int(self.n_modes), rng)
        return out
