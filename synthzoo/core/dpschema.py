"""Measure a schema (bounds, category lists) from private data under differential privacy.

:meth:`Schema.infer` reads bounds and categories straight from the rows, which is not DP: a
maximum *is* one person's value, and a category list names every rare value.  This module is
the private alternative; every access goes through a :class:`PrivacyLedger`.

* **Bounds** — "approximate bounds" from a noisy histogram over a fixed, data-independent set
  of logarithmic buckets (``0`` and ``+-2^k`` for k in a wide fixed range), discrete Gaussian
  mechanism with L2 sensitivity 1 (a record sits in one bucket); the bounds are the edges of the
  outermost buckets whose noisy count clears a threshold.  This is the construction of
  Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo, Gipson, "Differentially Private SQL with
  Bounded User Contribution", PoPETs 2020 (its ``ApproxBounds``).  Powers of two are coarse (a
  date column would get a 34-year range), so a second noisy histogram over uniform sub-buckets
  of the first answer refines it (how many sub-buckets is read from the first release, so
  that sparse data is not cut finer than the noise allows); choosing the second grid from the
  first release is adaptive composition, and both histograms are charged.
* **Categories** — the set of values is itself private.  DP partition selection with the
  Gaussian mechanism (Desfontaines, Voss, Gipson, Mandayam, "Differentially private partition
  selection", PoPETs 2022; Wilson et al. 2020, Sec. 3): discrete Gaussian noise on the counts
  of the values *present* in the data, keeping those whose noisy count reaches the smallest
  integer ``T`` with ``P(1 + Z >= T) <= delta_sel`` (the discrete Gaussian's own tail, summed
  exactly).  A value held by a single record is released with probability at most
  ``delta_sel``; otherwise the release is a post-processed discrete Gaussian count.  The
  mechanism is (delta_sel, rho)-approximate zCDP and is charged to the ledger as a zCDP event
  plus ``extra_delta=delta_sel``.
* **Missing values** — not measured: every measured column is declared ``missing=True``
  (unless ``known`` says otherwise).  Declaring a missing code that never occurs costs a
  little utility (one more code per column, whose count the synthesizer measures as about
  zero) and no privacy; measuring it would cost budget and a false "no missing" would make
  the private frame fail validation.

Values outside the measured bounds (a few extreme records: that is what keeps them private)
are clipped by the pipeline's ``out_of_bounds="clip"``; values of released columns that were
not released (rare categories) are mapped to a catch-all category (``other``, default
``"__other__"``), which :func:`conform` applies to the private frame before fitting.

The file is one thing, measuring a schema under DP: the bounds and category mechanisms, the
whole-schema driver that splits one budget over the columns, and :func:`conform`, which makes the
private frame fit what was released.
"""

from __future__ import annotations

import math
import warnings
from typing import Iterable, Mapping

import dp_accounting as dpa
import numpy as np
import pandas as pd
from scipy.stats import norm

from .errors import BudgetExceededError, ConfigError, SchemaError
from .privacy.ledger import Budget, PrivacyLedger
from .privacy.mechanisms import discrete_gaussian, gaussian_sigma
from .privacy.noise import discrete_gaussian_tail
from .schema import KINDS, Column, Schema, _to_epoch_seconds, category_key

#: Exponents of the fixed logarithmic bucket grid: +-2^k for k in [LOG2_MIN, LOG2_MAX], plus 0.
#: Wide enough for amounts, counts, epoch seconds and epoch nanoseconds.
LOG2_MIN, LOG2_MAX = -32, 64
OTHER = "__other__"


class _Default:
    """Marks an argument left at its default (so that ``epsilon`` next to ``ledger`` is detected)."""

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


_EPS_DEFAULT, _DELTA_DEFAULT = _Default(1.0), _Default(1e-6)


# -------------------------------------------------------------------------------------------------
# bounds
# -------------------------------------------------------------------------------------------------
def _log_bucket_edges(log2_min: int, log2_max: int) -> np.ndarray:
    """Edges (lower, upper) of the fixed buckets, in increasing order.

    Buckets: [-2^k, -2^(k-1)) for k = max..min+1, [-2^min, 0), {0}, (0, 2^min], (2^(k-1), 2^k].
    Values beyond +-2^max fall in the outermost bucket (which then reports 2^max).
    """
    pos = [(0.0, 2.0 ** log2_min)] + [(2.0 ** (k - 1), 2.0 ** k) for k in range(log2_min + 1, log2_max + 1)]
    neg = [(-hi, -lo) for lo, hi in reversed(pos)]
    return np.array(neg + [(0.0, 0.0)] + pos)


def _log_bucket_index(v: np.ndarray, log2_min: int, log2_max: int) -> np.ndarray:
    n_side = log2_max - log2_min + 1
    zero = n_side
    a = np.abs(v)
    with np.errstate(divide="ignore"):
        k = np.ceil(np.log2(np.where(a > 0, a, 1.0)))
    # bucket j (0-based) on one side covers (2^(min+j-1), 2^(min+j)]; anything below 2^min goes to j=0.
    j = np.clip(k - log2_min, 0, n_side - 1).astype(np.int64)
    # log2 rounds: a value an ulp above 2^k must go one bucket up, so it stays <= its upper edge.
    j = np.where((a > np.exp2(j + log2_min)) & (j < n_side - 1), j + 1, j)
    idx = np.where(v > 0, zero + 1 + j, np.where(v < 0, zero - 1 - j, zero))
    return idx


def _threshold(sigma: float, n_buckets: int, false_positive: float) -> float:
    """Count a bucket must clear: an empty bucket passes with prob ~ false_positive / n_buckets."""
    return sigma * float(norm.isf(false_positive / n_buckets))


def _outermost(noisy: np.ndarray, tau: float) -> tuple[int, int] | None:
    above = np.flatnonzero(noisy > tau)
    if above.size == 0:
        return None
    return int(above[0]), int(above[-1])


def dp_bounds(values, budget: Budget, rho: float | None = None, *,
              integer: bool = False, name: str = "column", refine_share: float = 0.6, n_refine: int = 32,
              false_positive: float = 1e-3, refine_false_positive: float = 0.01,
              log2_range: tuple[int, int] = (LOG2_MIN, LOG2_MAX)) -> tuple[float, float]:
    """DP approximate (lower, upper) bounds of ``values`` (NaNs are ignored), spending ``rho``.

    Two discrete Gaussian histograms, each with L2 sensitivity 1 (one record, one bucket): first over
    the fixed logarithmic buckets (Wilson et al., PoPETs 2020, ``ApproxBounds``), then over
    uniform sub-buckets of the first answer (values outside it counted in the edge
    sub-buckets): ``n_refine`` of them, halved while the first histogram's noisy total says
    they would hold fewer than 4 thresholds' worth of records each (post-processing).  Each
    answer spans the outermost buckets whose noisy count clears
    ``sigma * Phi^{-1}(1 - fp / n_buckets)``, a data-independent threshold (``fp`` is
    ``false_positive`` for the log buckets, where a stray bucket could widen the range a
    millionfold, and ``refine_false_positive`` for the sub-buckets, where it cannot).  Bounds
    are therefore *approximate*: a few extreme values (those in sparse outer buckets) fall
    outside and are clipped by the pipeline (``out_of_bounds="clip"``).

    ``rho`` defaults to all of ``budget.remaining``; ``refine_share`` of it goes to the second
    histogram.  Integers (``integer=True``, a public dtype fact) get integral bounds.  In a
    non-private run (``budget.private`` False) the exact minimum and maximum are returned.
    Raises :class:`SchemaError` naming the column if no bucket clears the threshold (too
    little data for the budget): then give more budget or public bounds.
    """
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if np.isinf(v).any():
        raise SchemaError(f"column {name!r}: infinite values cannot be bounded")
    if not 0.0 < refine_share < 1.0:
        raise ConfigError(f"refine_share must lie in (0, 1), got {refine_share}")
    if int(n_refine) < 1:
        raise ConfigError(f"n_refine must be >= 1, got {n_refine}")
    lo2, hi2 = int(log2_range[0]), int(log2_range[1])
    if lo2 >= hi2:
        raise ConfigError(f"log2_range must be increasing, got {log2_range}")
    rho = _rho(budget, rho)
    if not budget.private:
        # A non-private run records its access (reported as non-private) and answers exactly.
        budget.charge("exact_bounds", None, math.inf, f"{name}: exact minimum and maximum")
        if v.size == 0:
            raise SchemaError(f"column {name!r}: every value is missing; cannot bound it")
        lo, hi = float(v.min()), float(v.max())
        return (float(math.floor(lo)), float(math.ceil(hi))) if integer else (lo, hi)

    edges = _log_bucket_edges(lo2, hi2)
    counts = np.bincount(_log_bucket_index(v, lo2, hi2), minlength=len(edges)).astype(float)
    rho1 = rho * (1.0 - refine_share)
    noisy, sigma = discrete_gaussian(budget, counts, 1.0, rho1, mechanism="log_histogram",
                                     note=f"{name}: bounds, {len(edges)} log2 buckets")
    span = _outermost(noisy, _threshold(sigma, len(edges), false_positive))
    if span is None:
        raise SchemaError(
            f"column {name!r}: no value range could be measured (no noisy bucket count cleared the "
            f"threshold at sigma={sigma:.3g}); give dp_schema more budget, or pass public bounds in `known`")
    lo, hi = float(edges[span[0], 0]), float(edges[span[1], 1])

    # refinement: uniform sub-buckets of [lo, hi].  Their number comes from the released first
    # histogram only (post-processing): about 4 thresholds' worth of records per sub-bucket on
    # average, so that sparse data is not cut into buckets that all fall below the threshold.
    sigma2 = gaussian_sigma(rho - rho1, 1.0)
    n_hat = float(np.sum(noisy[span[0]:span[1] + 1]))
    k = int(n_refine)
    while k > 4 and n_hat / k < 4 * _threshold(sigma2, k, refine_false_positive):
        k //= 2
    sub = np.linspace(lo, hi, k + 1)
    idx = np.clip(np.searchsorted(sub, v, side="right") - 1, 0, k - 1)
    counts2 = np.bincount(idx, minlength=k).astype(float)
    noisy2, sigma2 = discrete_gaussian(budget, counts2, 1.0, rho - rho1, mechanism="histogram",
                                       note=f"{name}: bounds refinement, {k} sub-buckets")
    span2 = _outermost(noisy2, _threshold(sigma2, k, refine_false_positive)) if hi > lo else None
    if span2 is not None:
        lo, hi = float(sub[span2[0]]), float(sub[span2[1] + 1])
    if integer:
        lo, hi = float(math.floor(lo)), float(math.ceil(hi))
    return lo, hi


# -------------------------------------------------------------------------------------------------
# categories
# -------------------------------------------------------------------------------------------------
def selection_threshold(sigma: float, delta_sel: float) -> int:
    """Partition-selection threshold ``T``: a value held by one record reaches it (``1 + Z >= T``,
    ``Z`` discrete Gaussian of parameter ``sigma``) with probability at most ``delta_sel``.

    The smallest such integer, from the discrete Gaussian's exact tail (Desfontaines et al.,
    PoPETs 2022, Gaussian thresholding with one partition per record; discrete noise as in
    Canonne, Kamath & Steinke 2020).
    """
    k = max(0, math.floor(sigma * float(norm.isf(delta_sel))) - 2)  # the continuous answer, a little low
    while discrete_gaussian_tail(k, sigma) > delta_sel:
        k += 1
    return int(k) + 1


def dp_categories(values, budget: Budget, rho: float | None = None, *,
                  delta_sel: float, max_categories: int | None = None, name: str = "column") -> list[str]:
    """The values of a categorical column released by DP partition selection.

    Discrete Gaussian noise (L2 sensitivity 1: one value per record) on the counts of the values present
    in ``values`` (NaN ignored; values matched by :func:`category_key`); a value is released
    when its noisy count exceeds :func:`selection_threshold` (Desfontaines, Voss, Gipson,
    Mandayam, "Differentially private partition selection", PoPETs 2022).  Cost: ``rho``
    (default: all of ``budget.remaining``) as a Gaussian event **plus** an additive
    ``delta_sel``, both charged.  If more than ``max_categories`` pass, the ones with the
    largest noisy counts are kept (post-processing).  Returned sorted; may be empty.
    In a non-private run every observed value is returned (the most frequent ``max_categories``).
    """
    if not 0.0 < delta_sel < 1.0:
        raise ConfigError(f"delta_sel must lie in (0, 1), got {delta_sel}")
    if max_categories is not None and int(max_categories) < 1:
        raise ConfigError(f"max_categories must be >= 1, got {max_categories}")
    rho = _rho(budget, rho)
    s = pd.Series(values).astype(object)  # a 'category' dtype would also list unobserved values
    keys = s[s.notna()].map(category_key)
    vc = keys.value_counts(sort=False)
    cats = np.asarray(vc.index, dtype=object)
    counts = vc.to_numpy(dtype=float)
    note = f"{name}: categories, partition selection"  # the number of distinct values is private
    if not budget.private:
        budget.charge("gaussian_partition_selection", None, math.inf, note)
        noisy, keep = counts, counts > 0
    else:
        sigma = gaussian_sigma(rho, 1.0)
        budget.charge("gaussian_partition_selection", dpa.ZCDpEvent(rho), rho, note, extra_delta=delta_sel)
        noisy = counts + budget.noise.discrete_gaussian(sigma, counts.shape)
        keep = noisy >= selection_threshold(sigma, delta_sel)
    chosen, score = cats[keep], noisy[keep]
    if max_categories is not None and chosen.size > int(max_categories):
        chosen = chosen[np.argsort(-score, kind="stable")[: int(max_categories)]]
    return sorted(str(c) for c in chosen)


# -------------------------------------------------------------------------------------------------
# whole schema
# -------------------------------------------------------------------------------------------------
def kind_from_dtype(dtype) -> str:
    """Column kind from a dtype alone (dtypes are public; values are not)."""
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if pd.api.types.is_bool_dtype(dtype):
        return "categorical"
    if pd.api.types.is_numeric_dtype(dtype):
        return "numerical"
    return "categorical"


def dp_schema(df: pd.DataFrame, kinds: Mapping[str, str] | None = None, epsilon=_EPS_DEFAULT,
              delta=_DELTA_DEFAULT, ledger: PrivacyLedger | None = None, noise_seed: int | None = None,
              max_categories: int = 100, known: Schema | None = None, *, share: float | None = None,
              selection_delta: float | None = None, other: str | None = OTHER, integers: Iterable[str] = (),
              bounds_options: Mapping | None = None) -> tuple[Schema, PrivacyLedger]:
    """A :class:`Schema` for ``df`` measured under differential privacy; the DP alternative to
    :meth:`Schema.infer`.  Returns ``(schema, ledger)``.

    * Column kinds come from ``kinds`` (``{"age": "numerical", ...}``) or, for the columns it
      omits, from the dtypes: datetime64 -> datetime, bool / text -> categorical, numbers ->
      numerical.  Integer-ness of numerical columns comes from ``integers`` only (public
      knowledge): pandas stores an integer column with a missing value as float, so reading it
      from the dtype would tell neighbouring frames apart.
    * Columns of ``known`` (a public, possibly partial Schema) are taken as they are, free.
    * Every other column costs an equal share of the budget: numerical / datetime columns get
      :func:`dp_bounds` (Wilson et al., PoPETs 2020), categorical ones :func:`dp_categories`
      (Gaussian partition selection, Desfontaines et al., PoPETs 2022) plus the catch-all
      category ``other`` (always added, so its presence says nothing; ``other=None`` omits it).
      Released bounds may clip a few extreme values; apply :func:`conform` to the private frame.
    * Measured columns are declared ``missing=True`` (no budget spent on missingness).

    Noise comes from the ledger's secret source (OS entropy); ``noise_seed`` is the test-only
    opt-in for replayable noise, for a new ledger only (a given ledger brings its own source).

    Budget: without ``ledger``, a new ``PrivacyLedger(epsilon, delta)`` is made and all of it
    spent (``share`` defaults to 1); ``selection_delta`` (default ``delta / 10``) is reserved
    from ``delta`` for the partition selections and split evenly between categorical columns.
    With ``ledger``, ``epsilon``/``delta`` must not be given, ``share`` (of ``ledger.total_rho``)
    is required, and ``selection_delta`` defaults to the ledger's unused ``reserved_delta``.
    ``epsilon=None`` is a non-private run: exact bounds and all observed categories, reported
    as non-private by the ledger.

    Errors (:class:`SchemaError` / :class:`ConfigError`) name the column or parameter: an empty
    frame, an unknown kind, ``kinds``/``known`` naming a column the frame lacks, a numerical
    column with a non-numeric dtype, or a column whose measurement released nothing.
    """
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"dp_schema expects a pandas DataFrame, got {type(df).__name__}")
    if df.shape[1] == 0:
        raise SchemaError("dp_schema: the frame has no columns")
    if len(df) == 0:
        raise SchemaError("dp_schema: the frame is empty (0 rows)")
    if len(set(df.columns)) != df.shape[1]:
        raise SchemaError("dp_schema: the frame has duplicate column names")
    kinds = dict(kinds or {})
    for col, kind in kinds.items():
        if col not in df.columns:
            raise SchemaError(f"kinds names column {col!r}, which the frame lacks")
        if kind not in KINDS:
            raise SchemaError(f"column {col!r}: unknown kind {kind!r}; expected one of {KINDS}")
    if known is not None:
        if not isinstance(known, Schema):
            raise ConfigError(f"known must be a Schema, got {type(known).__name__}")
        extra = [c for c in known.names if c not in df.columns]
        if extra:
            raise SchemaError(f"known schema describes column(s) {extra} that the frame lacks")
    if max_categories is not None and int(max_categories) < 1:
        raise ConfigError(f"max_categories must be >= 1, got {max_categories}")
    if other is not None and not isinstance(other, str):
        raise ConfigError(f"other must be a string label or None, got {other!r}")
    integers = [integers] if isinstance(integers, str) else list(integers)
    for c in integers:
        if c not in df.columns:
            raise SchemaError(f"integers names column {c!r}, which the frame lacks")

    todo = [c for c in df.columns if known is None or c not in known]
    col_kind = {c: kinds.get(c, kind_from_dtype(df[c].dtype)) for c in todo}
    for c in integers:
        if c in col_kind and col_kind[c] != "numerical":
            raise SchemaError(f"integers names column {c!r}, whose kind is {col_kind[c]!r}, not numerical")
    for c in todo:  # decided from dtypes only, before any private value is read
        if col_kind[c] == "numerical" and (pd.api.types.is_bool_dtype(df[c].dtype)
                                           or not pd.api.types.is_numeric_dtype(df[c].dtype)):
            raise SchemaError(f"column {c!r}: declared numerical but has dtype {df[c].dtype}; convert it to "
                              "numbers first (dtypes are public, values are not inspected)")
    n_cat = sum(col_kind[c] == "categorical" for c in todo)

    ledger, budget, delta_sel = _make_budget(ledger, epsilon, delta, share, selection_delta, n_cat, bool(todo),
                                             noise_seed)
    per_col = (budget.remaining / len(todo)) if (todo and budget.private) else math.inf
    opts = dict(bounds_options or {})

    columns, other_of = [], {}
    for c in df.columns:
        if c not in todo:
            columns.append(known[c])
            continue
        kind = col_kind[c]
        if kind == "categorical":
            cats = dp_categories(df[c], budget, per_col, delta_sel=delta_sel,
                                 max_categories=max_categories, name=c)
            if other is not None:
                if other not in cats:
                    cats.append(other)
                other_of[c] = other
            if not cats:
                raise SchemaError(f"column {c!r}: partition selection released no category; give dp_schema "
                                  "more budget, keep other='__other__', or list the categories in `known`")
            columns.append(Column(c, "categorical", categories=cats, missing=True))
        else:
            if kind == "datetime":
                vals = _to_epoch_seconds(df[c], c)
                integer = False
            else:
                vals = df[c].to_numpy(dtype=float, na_value=np.nan)
                # never from the dtype: pandas turns an integer column with one missing value into
                # float64, so the dtype would tell neighbouring frames apart
                integer = c in integers
                if not integer and pd.api.types.is_integer_dtype(df[c].dtype):
                    warnings.warn(f"column {c!r}: integer dtype, but integer-ness is public knowledge that "
                                  "dp_schema does not read from dtypes (a missing value would change them); "
                                  "list it in integers=[...] for integral synthetic values", UserWarning,
                                  stacklevel=2)
            lo, hi = dp_bounds(vals, budget, per_col, integer=integer, name=c, **opts)
            if kind == "datetime":
                columns.append(Column(c, kind, lower=pd.Timestamp(lo, unit="s"), upper=pd.Timestamp(hi, unit="s"),
                                      missing=True))
            else:
                columns.append(Column(c, kind, lower=lo, upper=hi, integer=integer, missing=True))

    meta = dict(known.meta) if known is not None else {}
    if other_of:
        meta["other_category"] = {**meta.get("other_category", {}), **other_of}
    meta["dp_schema"] = {"measured": todo, "epsilon": ledger.epsilon, "delta": ledger.delta,
                         "selection_delta": delta_sel * n_cat if ledger.private else 0.0,
                         "missing": "declared for every measured column (not measured)"}
    return Schema(columns, meta), ledger


def conform(df: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Make a private frame fit a DP-measured schema (record-by-record, so free of privacy cost).

    Categorical values outside a column's released categories become its catch-all label
    (``schema.meta["other_category"][column]``, set by :func:`dp_schema`); numeric values
    outside the bounds are clipped (:meth:`Schema.validate` with ``out_of_bounds="clip"``,
    which warns with the count).  Returns a new frame that passes ``schema.validate``.
    """
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"conform expects a pandas DataFrame, got {type(df).__name__}")
    other_of = schema.meta.get("other_category", {})
    out = df.copy()
    for col in schema.columns:
        if col.kind != "categorical" or col.name not in out.columns or col.name not in other_of:
            continue
        s = out[col.name]
        na = s.isna()
        keys = s.map(category_key, na_action="ignore")
        unseen = ~na & ~keys.isin(col.categories)
        if unseen.any():
            s = keys.astype(object)
            s[unseen] = other_of[col.name]
            s[na] = np.nan
            out[col.name] = s
    return schema.validate(out, out_of_bounds="clip")


def _rho(budget: Budget, rho: float | None) -> float:
    if not isinstance(budget, Budget):
        raise ConfigError(f"budget must be a synthzoo Budget, got {type(budget).__name__}")
    if rho is None:
        rho = budget.remaining
    if budget.private and not (0 < rho < math.inf):
        raise ConfigError(f"rho must be positive and finite in a private run, got {rho}")
    if budget.private and rho > budget.remaining * (1 + 1e-9):
        # refuse before the first of several charges, so that nothing is half spent
        raise BudgetExceededError(f"{budget.name}: asks for rho={rho:.6g} but only {budget.remaining:.6g} is left")
    return rho


def _make_budget(ledger, epsilon, delta, share, selection_delta, n_cat: int, any_measured: bool, noise_seed=None):
    """The ledger and stage budget dp_schema spends, and the per-column selection delta."""
    if ledger is None:
        eps = epsilon.value if isinstance(epsilon, _Default) else epsilon
        dlt = delta.value if isinstance(delta, _Default) else delta
        share = 1.0 if share is None else share
        if selection_delta is None:
            selection_delta = float(dlt) / 10.0 if n_cat else 0.0
        if n_cat and eps is not None and not 0 < selection_delta < float(dlt):
            raise ConfigError(f"selection_delta must lie in (0, delta={dlt}), got {selection_delta}")
        ledger = PrivacyLedger(eps, dlt, reserved_delta=selection_delta if (n_cat and eps is not None) else 0.0,
                               noise_seed=noise_seed)
    else:
        if not isinstance(ledger, PrivacyLedger):
            raise ConfigError(f"ledger must be a PrivacyLedger, got {type(ledger).__name__}")
        if noise_seed is not None:
            raise ConfigError("dp_schema: noise_seed applies to a new ledger; a given ledger brings its own noise")
        if not isinstance(epsilon, _Default) or not isinstance(delta, _Default):
            raise ConfigError("dp_schema: pass either a ledger or epsilon/delta, not both (the ledger carries "
                              "its own request)")
        if share is None and any_measured:
            raise ConfigError("dp_schema: with a shared ledger, say which share of its total rho the schema "
                              "may spend (share=...)")
        share = 1.0 if share is None else share
        if selection_delta is None and n_cat and ledger.private:
            selection_delta = ledger.reserved_delta_remaining
            if selection_delta <= 0:
                raise ConfigError("dp_schema: partition selection needs an additive delta but the ledger "
                                  "reserves none; build it with PrivacyLedger(epsilon, delta, "
                                  "reserved_delta=...) or pass selection_delta=")
    if not (isinstance(share, (int, float)) and 0 < share <= 1):
        raise ConfigError(f"share must lie in (0, 1], got {share!r}")
    budget = ledger.stage("schema", share)
    # per-column selection delta; a non-private run never uses it (any value in (0, 1) will do)
    delta_sel = (selection_delta / n_cat) if (n_cat and ledger.private) else 0.5
    return ledger, budget, delta_sel
