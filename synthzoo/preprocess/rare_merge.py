"""Differentially private rare-category merging.

Algorithm 1 of Chen et al., "Benchmarking Differentially Private Tabular Data Synthesis"
(SIGMOD 2025): measure a column's category histogram with the (discrete) Gaussian mechanism, take the
noisy total ``n_hat`` as the sum of the noisy cells, and merge every category whose noisy count
is below ``max(theta * n_hat, 3 * sigma)`` into one group.  Below ``3 * sigma`` a count cannot
be told from noise, and below ``theta * n_hat`` a category is too rare to be worth a domain cell.

As in the reference code (github.com/KaiChen9909/tab_bench, ``preprocess_common/preprocess.py``),
``n_hat`` is the sum of the released noisy counts, so it costs no budget beyond the histogram.
Unlike it, the histogram runs over the schema's *public* category list (zero counts included) --
the reference used the categories present in the private data -- and the choice of columns to
merge uses the public number of categories, not the private number of distinct values.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..core.base import Preprocessor, register
from ..core.encoding import CategoricalEncoder
from ..core.errors import BudgetExceededError
from ..core.params import Integral, Interval, Real
from ..core.privacy.ledger import Budget
from ..core.privacy.mechanisms import discrete_gaussian
from ..core.schema import Column


def rare_groups(noisy: np.ndarray, n_hat: float, sigma: float, theta: float) -> list[list[int]]:
    """Category groups: frequent categories alone, the rare ones (``noisy < max(theta n_hat, 3 sigma)``)
    together in one group placed last.  A single rare category stays alone: merging it with
    nothing would change nothing."""
    thresh = max(theta * n_hat, 3.0 * sigma)
    rare = np.flatnonzero(noisy < thresh)
    if rare.size < 2:
        return [[i] for i in range(noisy.size)]
    keep = np.flatnonzero(noisy >= thresh)
    return [[int(i)] for i in keep] + [[int(i) for i in rare]]


@register("preprocess", "rare_merge")
class RareMerge(Preprocessor):
    """DP rare-category merge (Chen et al., Benchmarking DP Tabular Data Synthesis, Algorithm 1).

    Budget: the module's zCDP budget is split evenly over the columns it measures (those with at
    least ``min_categories`` schema categories); each gets one Gaussian histogram of L2
    sensitivity 1 (a record falls in exactly one cell), discrete Gaussian noise of parameter
    ``sigma = 1 / sqrt(2 rho_col)``, charged
    once as ``"rare_merge"`` with the column name as note.  When the schema allows missing values
    the histogram has one more cell for them: it counts towards ``n_hat`` (so ``theta`` is a share
    of all rows) but is never merged -- missing values keep their own code.

    Parameters
    ----------
    theta : float, default 0.002
        Rarity threshold as a fraction of the (noisy) number of rows; Chen et al. use 0.002.
    min_categories : int, default 2
        Columns with fewer schema categories are left as they are and spend nothing.  Chen et
        al. merge only columns with at least 100 distinct values (read from the private data);
        ``min_categories=100`` is the public-information analogue.

    Fitted attributes: ``sigma_`` (per-column noise std, 0 when not private),
    ``noisy_counts_`` / ``n_hat_`` per measured column, ``merged_`` (merged category names).

    Examples
    --------
    >>> sz.make("privsyn", preprocess=["privtree", RareMerge(theta=0.005)], epsilon=1.0)  # doctest: +SKIP
    """

    _tags = {"kinds": ("categorical",), "spends_budget": True}
    _parameter_constraints = {"theta": [Interval(Real, 0, 1, closed="left")],
                              "min_categories": [Interval(Integral, 1, None)]}
    paper = ("Chen et al., Benchmarking Differentially Private Tabular Data Synthesis, SIGMOD 2025 "
             "(Algorithm 1, rare-category merge)")

    def __init__(self, theta: float = 0.002, min_categories: int = 2):
        self.theta = theta
        self.min_categories = min_categories

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"theta": ("log", 1e-4, 5e-2)}

    def measured_columns(self, columns: list[Column]) -> list[str]:
        return [c.name for c in columns if len(c.categories) >= self.min_categories]

    def fit(self, df: pd.DataFrame, columns: list[Column], budget: Budget, rng: np.random.Generator) -> dict:
        """Return ``{name: CategoricalEncoder}`` with rare categories merged, charging ``budget``."""
        self.check_columns(df, columns)
        self.sigma_: float | None = None
        self.noisy_counts_: dict[str, np.ndarray] = {}
        self.n_hat_: dict[str, float] = {}
        self.merged_: dict[str, list[str]] = {}
        out = {}
        names = set(self.measured_columns(columns))
        measured = [c for c in columns if c.name in names]
        if measured and budget.private and not budget.remaining > 0:
            raise BudgetExceededError(f"rare_merge: budget {budget.name!r} has no rho left for "
                                      f"{len(measured)} column(s); give preprocessing a share of the budget")
        if measured:
            rho_col = budget.remaining / len(measured) if budget.private else math.inf  # even split
        for col in columns:
            if len(col.categories) < self.min_categories:
                out[col.name] = CategoricalEncoder(col)
                continue
            k = len(col.categories)
            # identity encoding: category index, missing -> k (one extra cell when allowed)
            codes = CategoricalEncoder(col).transform(df[col.name])
            counts = np.bincount(codes, minlength=k + (1 if col.missing else 0))
            noisy, sigma = discrete_gaussian(budget, counts, 1.0, rho_col, mechanism="rare_merge", note=col.name)
            self.sigma_ = sigma
            n_hat = float(noisy.sum())
            groups = rare_groups(noisy[:k], n_hat, sigma, float(self.theta))
            self.noisy_counts_[col.name] = noisy
            self.n_hat_[col.name] = n_hat
            self.merged_[col.name] = [col.categories[i] for i in groups[-1]] if len(groups) < k else []
            out[col.name] = CategoricalEncoder(col, groups)
        return out
