"""Uniform (equal-width) binning on the public bounds of numeric and datetime columns.

The simplest discretiser of Chen et al., "Benchmarking Differentially Private Tabular Data
Synthesis" (SIGMOD 2025): the bins depend only on the schema's public ``lower``/``upper``
bounds, so fitting reads no private data and spends no privacy budget.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..core.base import Preprocessor, register
from ..core.encoding import BinEncoder
from ..core.params import Integral, Interval
from ..core.privacy.ledger import Budget
from ..core.schema import Column


def _binning_domain(col: Column) -> tuple[float, float]:
    """The half-open interval the bins cover.

    Integer columns use ``[lower, upper + 1)`` (bounds rounded inward to integers), so that
    integer k owns ``[k, k + 1)`` and every admissible integer weighs the same; other columns
    use ``[lower, upper]`` (last bin closed).
    """
    if col.integer:
        return float(math.ceil(col.lower)), float(math.floor(col.upper)) + 1.0
    return col.lower, col.upper


@register("preprocess", "uniform")
class Uniform(Preprocessor):
    """Equal-width bins over each column's public bounds; no privacy budget.

    Parameters
    ----------
    bins : int, default 20
        Number of equal-width bins per column.  Integer columns with fewer admissible
        integers than ``bins`` get one bin per integer (:class:`BinEncoder` merges the
        empty integer bins).

    Examples
    --------
    >>> sz.Synthesizer(preprocess=[Uniform(bins=32)], select="mst", model="pgm", epsilon=1.0)  # doctest: +SKIP
    """

    _tags = {"kinds": ("numerical", "datetime")}
    _parameter_constraints = {"bins": [Interval(Integral, 1, None)]}
    paper = ("Chen et al., Benchmarking Differentially Private Tabular Data Synthesis, SIGMOD 2025 "
             "(uniform discretisation)")

    def __init__(self, bins: int = 20):
        self.bins = bins

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"bins": ("int", 4, 100)}

    def fit(self, df: pd.DataFrame, columns: list[Column], budget: Budget, rng: np.random.Generator) -> dict:
        """Return ``{name: BinEncoder}`` with ``bins`` equal-width bins per column (reads no rows)."""
        self.check_columns(df, columns)
        out = {}
        for col in columns:
            lo, hi = _binning_domain(col)
            out[col.name] = BinEncoder(col, np.linspace(lo, hi, int(self.bins) + 1))
        return out
