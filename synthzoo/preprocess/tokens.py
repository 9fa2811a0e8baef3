"""Token sequences for autoregressive record models (the ``transformer`` model), from the public schema.

``"tokens"`` -- :class:`Tokens`: a category is one token, a number a few digit tokens of a public
grid on its public bounds (:mod:`synthzoo.core.tokens`).  Reads no data, spends no budget: unlike
REaLTabFormer (Solatorio & Dupriez 2023), whose vocabulary is the set of values in the training
rows, nothing here depends on the rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.base import Preprocessor, register
from ..core.params import Integral, Interval
from ..core.privacy.ledger import Budget
from ..core.schema import Column
from ..core.tokens import CategoryTokens, NumberTokens, grid_step


@register("preprocess", "tokens")
class Tokens(Preprocessor):
    """Categories as one token, numbers as digit tokens on a public grid; from the schema alone.

    Parameters
    ----------
    digits : int, default 4
        Significant digits of the public range kept for non-integer numeric and datetime columns:
        the grid's step is ``10 ** (ceil(log10(upper - lower)) - digits)``.  Integer columns keep
        every integer.
    base : int, default 10
        Values per digit token (10: decimal digits, as REaLTabFormer; 100 halves the number of
        positions of a number, at 100 tokens per position).

    Examples
    --------
    >>> sz.Synthesizer(preprocess=[Tokens(digits=5)], model="transformer", epsilon=None)  # doctest: +SKIP
    """

    _tags = {"kinds": ("categorical", "numerical", "datetime"), "output": "tokens"}
    _parameter_constraints = {"digits": [Interval(Integral, 1, 12)], "base": [Interval(Integral, 2, 1000)]}
    paper = ("Solatorio & Dupriez, REaLTabFormer: Generating Realistic Relational and Tabular Data using "
             "Transformers, 2023 (column-wise tokens, numbers as digits)")

    def __init__(self, digits: int = 4, base: int = 10):
        self.digits = digits
        self.base = base

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"base": ("cat", [10, 100])}

    def fit(self, df: pd.DataFrame, columns: list[Column], budget: Budget, rng: np.random.Generator) -> dict:
        """``{name: encoder}`` built from the schema; ``df`` is only checked for the columns."""
        self.check_columns(df, columns)
        return {c.name: CategoryTokens(c) if c.kind == "categorical"
                else NumberTokens(c, grid_step(c, int(self.digits)), int(self.base)) for c in columns}
