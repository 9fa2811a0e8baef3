"""Measure a schema (bounds, category lists) from private data under differential privacy.

:meth:`Schema.infer` reads bounds and categories straight from the rows, which is not DP: a
maximum *is* one person's value, and a category list names every rare value.  This module is
the private alternative; every access goes through a :class:`PrivacyLedger`.

* **Bounds** — "approximate bounds" from a noisy histogram over a fixed, data-independent set
  of logarithmic buckets (``0`` and ``+-2^k`` for k in a wide fixed range), discrete Gaussian
  mechanism with L2 sensitivity 1 (a record sits in one bucket); the bounds are the edges of the
  outermost buckets whose noisy count clears a threshold.  This is the construction of
  Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo, Gipson, "Differentially Private SQL with
  Bounded User Contribution", PoPETs 2020 (its ``ApproxBounds``).  Datetimes use blocks of years
  instead, 16 over 1700-2260 and doubling in length beyond, to what the column's unit holds (powers
  of two of epoch seconds centre on 1970 and cut earlier birth dates).  Both are coarse, so a second
  noisy histogram over uniform sub-buckets of the first answer refines it (how many sub-buckets is
  read from the first release, so that sparse data is not cut finer than the noise allows); choosing
  the second grid from the first release is adaptive composition, and both histograms are charged.
* **Categories** — the set of values is itself private.  DP partition selection with the
  Gaussian mechanism (Desfontaines, Voss, Gipson, Mandayam, "Differentially private partition
  selection", PoPETs 2022; Wilson et al. 2020, Sec. 3): discrete Gaussian noise on the counts
  of the values *present* in the data, keeping those whose noisy count reaches the smallest
  integer ``T`` with ``P(1 + Z >= T) <= delta_sel`` (the discrete Gaussian's own tail, summed
  exactly).  A value held by a single record is released with probability at most
  ``delta_sel``; otherwise the release is a post-processed discrete Gaussian count.  The
  mechanism is (delta_sel, rho)-approximate zCDP and is charged to the ledger as a zCDP event
  plus ``extra_delta=delta_sel``.
* **Missing values** — declared only on DP evidence: the noisy count of missing values, released
  by the same histogram or selection (a record with a missing value sits in one more bucket, at
  no extra cost), must exceed ``missing_z`` standard deviations.  A missing code declared for a
  column without missing values would make the release invent them; a column's few missing
  values that the noise hid are filled by :func:`conform`, which says what it changed.

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
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import dp_accounting as dpa
import numpy as np
import pandas as pd
from scipy.stats import norm

from .errors import BudgetExceededError, ConfigError, SchemaError
from .privacy.ledger import Budget, PrivacyLedger, check_privacy_params, gaussian_sigma, privacy_warnings
from .privacy.mechanisms import discrete_gaussian
from .privacy.noise import discrete_gaussian_tail
from .datetimes import RESOLUTIONS, resolution_of_bound, unit_of, unit_span
from .schema import (BOOL_CATEGORIES, COLUMN_KEYS, INTEGER_DTYPES, KINDS, NUMERICAL_DTYPES, Column, Schema, _distinct,
                     _iso_text, _to_epoch_seconds, booleans_declared_numerical, category_key, check_column_names,
                     check_one_value_per_cell, date_layout, dates_declared_numerical, datetime_dtype_spec,
                     is_integer_dtype_name, nullable_dtype_name, numeric_values, period_dtype, unsupported_numbers)

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


#: How much rarer than ``false_positive`` a bucket cut off from the data's main run must be to widen the core:
#: an empty bucket anywhere on the grid clears the threshold with probability ``false_positive``, and one far
#: from the data took the range to it (an upper bound of 1e3 to 1e16 for data in [-80, 0], 7 of 10,000 fits at
#: epsilon 1); a real cluster apart from the rest (a 999999 sentinel) holds enough rows to clear the higher bar.
_APART_FACTOR = 1e-3


def _outermost(noisy: np.ndarray, sigma: float, false_positive: float) -> tuple[int, int] | None:
    """Span of the buckets whose noisy count clears the threshold (:func:`_threshold`), those in runs apart
    from the main one (the run, through buckets above one sigma, of the largest count) only when they clear
    the threshold of ``false_positive * _APART_FACTOR``."""
    K = noisy.size
    above = np.flatnonzero(noisy > _threshold(sigma, K, false_positive))
    if above.size == 0:
        return None
    ev = np.r_[False, noisy > sigma, False]
    starts = np.flatnonzero(ev[1:] & ~ev[:-1])  # where each run of buckets above one sigma begins
    run = np.searchsorted(starts, np.arange(K), side="right") - 1  # each bucket's run (valid where ev)
    main = run[int(np.argmax(noisy))]
    far = _threshold(sigma, K, false_positive * _APART_FACTOR)
    keep = [int(i) for i in above if run[i] == main or noisy[i] > far]  # the largest count is in main's run
    return min(keep), max(keep)


#: Evidence (noisy count in standard deviations) a tail ring beyond the margin needs, innermost first.
#: A far ring that is only noise would widen the range 2^8-fold, so it needs strong evidence; an inner
#: one 4-fold, so it needs less: on the COMPAS-like table at epsilon 0.1 (1,000 draws) 0.75 instead of
#: 1.0 and 1.0 instead of 1.25 cut the draws that clip over 2 % of days_b_screening_arrest's two-sided
#: tail from 6.4 % to 3.8 %, for ranges 1.4 times as wide on average.
_RING_Z = (0.75, 1.0, 2.5)
#: Noisy count, in standard deviations, above which the outermost tail ring found is taken to show a tail
#: that runs on, so the next ring is taken too.  A thin tail spreads its rows over ever wider buckets, and
#: the ring after a well-filled one often holds as many rows over four times the buckets, where the noise
#: hides them: on the COMPAS-like table at epsilon 0.1, days_b_screening_arrest's two-sided tail (3.7 %
#: of the rows in [-2048, -32]) lost 4.3 % to a lower bound of -32 after an inner ring of 3.7 sigma.
#: Data that ends (ages, counts) leaves the ring past the margin near empty, so this seldom fires there.
_EXTEND_Z = 2.0
#: Evidence (in standard deviations of the sum) the first two tail rings' noisy counts need together to
#: take both.  A tail spread over both rings can miss each ring's own threshold and still show in the sum,
#: whose noise grows only by sqrt(2): on the COMPAS-like table at epsilon 0.1 (2,000 draws) 1.25 cut the
#: draws clipping over 2 % of days_b_screening_arrest from 45 to 23, for ranges of the count columns 11-29 %
#: wider on average (1.5: 33 draws, 5-11 %; 1.0: 18, 28-54 %).
_SUM_Z = 1.25
#: Rows, as a multiple of ``clip_share`` of the rows' low estimate, a same-sign tail ring must show beyond its
#: evidence (:data:`_RING_Z`, :data:`_SUM_Z`) to be taken: clipping a ring that holds less costs no more than the
#: trimming aims to clip, while taking one widens the range 4- to 2^16-fold.  In sigmas alone, an empty ring
#: passed 0.75 sigma 23 % of the time whatever the rows: a 2,000-row N(0, 1) column at epsilon 1 got bounds
#: 1,000 wide in 36 % of 200 draws; with the floor, in none (5 such columns: 40 % to 11 %).  Such bounds damage
#: the release: given [-2048, 8] for an N(0, 1) column, mst drew 1 % of its rows near -1,280.  On the COMPAS-like table at epsilon 0.1 (benchmarks/bench_dp_schema.py, 2,000
#: draws) those clipping over 2 % of days_b_screening_arrest went from 25 to 41, and the mean log2 of each range
#: over the data's fell: age 4.22 to 3.39, priors_count 3.18 to 2.50, juv_fel_count 0.84 to 0.10 (1.5, on 500
#: draws: 20 instead of 14, and the count columns clipped).
_RING_SHARE = 1.0
#: Margin, in blocks, of a linear grid (datetimes) where the noise could hide a block's rows: two, since
#: the walk stops at a block whose noisy count falls below sigma, which a block of 2.5 sigma does 1 % of
#: the time (measured: one draw in 170 clipped 3.5 % of a birth-date column with one block).
_LINEAR_MARGIN = 2

#: Widths of the tail rings in buckets (log2 grid, linear grid), innermost first.
_RING_WIDTHS = ((2, 6, 8), (1, 2, 4))
#: Evidence the cell of 0 (with the small same-sign buckets the rings leave) needs past the rings of
#: one-signed data; a false one only moves a bound to 0.
_ZERO_Z = 1.5
#: Evidence the rings of the other sign need (:func:`_other_sign`), innermost first: on a
#: made-up 600-row table (``-1`` for 12.7 % of a 0-99 score, zeros for 16 % of a float count) the
#: bounds stopped short of both in 170 and 127 of 197 draws, behind the empty buckets between.
#: The first ring holds magnitudes up to 2 (a ``-1``), where a false one costs a bound of -2; the rest of the
#: data's mirror is a ring of its own, since a false one there cost the mirror: on adult at epsilon 1 (200
#: draws, six non-negative columns) lower bounds below -2 (age to -32, fnlwgt to -2^21) fell from 50 to 12.
_OTHER_Z = (1.5, 2.5, 2.5, 3.0)


def _far_ring(noisy: np.ndarray, rings: list, tails: int, sigma: float, floor: float) -> int:
    """Index of the outermost ring whose noisy count clears its evidence (``rings[r][2]`` sigmas, plus ``floor``
    rows for the first ``tails``, the same-sign tail rings), -1 if none."""
    far = -1
    for r, (_, _, z) in enumerate(rings):
        if noisy[r] > z * sigma + (floor if r < tails else 0.0):
            far = r
    return far


def _other_sign(zero: int, inner: int, lo2: int, step: int, K: int) -> list[tuple[int, int, float]]:
    """Rings of the log grid on the other side of 0 (``step`` -1: negatives, +1: positives), innermost
    first, scaled to the data: magnitudes up to 2 (a ``-1`` sentinel), then up to that of the data's
    innermost bucket ``inner`` (a false ring then only mirrors the range), then at least 6 buckets and on
    to magnitude 1 (``-9`` sentinels), then 8 more."""
    j0 = max(abs(inner - zero) - 1, 0)  # offset of the data's innermost bucket from 0 (0: the first one)
    two = 1 - lo2  # offset of the bucket (1, 2]
    far = max(j0 + 6, -lo2)
    ends = (min(two, j0), j0, far, far + 8)  # last offset of each ring
    out, first = [], 0
    for last, z in zip(ends, _OTHER_Z):
        if last < first:
            continue
        x, y = sorted((zero + step * (1 + first), zero + step * (1 + last)))
        x, y = max(x, 0), min(y, K - 1)
        if x <= y:
            out.append((x, y, z))
        first = last + 1
    return out

#: The span of history nearly every date in a table falls in, cut into blocks of DATETIME_BLOCK_YEARS years;
#: beyond it the blocks double in length (:func:`_block_starts`) out to what the column's unit holds.
DATETIME_SPAN = ("1700-01-01", "2260-01-01")
DATETIME_BLOCK_YEARS = 16
_YEAR = 365.2425 * 86_400.0


def _block_starts() -> np.ndarray:
    """Starts of the datetime blocks, increasing (wall-clock epoch seconds of January 1sts): every
    :data:`DATETIME_BLOCK_YEARS` years over :data:`DATETIME_SPAN`, then blocks that double in length outwards
    (32, 64, 128, ... years) to the year 1 and past 9999, where the column's unit holds them.  Equal blocks over
    the years 1 to 9999 would be 625 where these are 49, and each bucket's threshold grows with their number: at
    the COMPAS-like table's rho per datetime column (epsilon 0.1), 20,000 births over 1620-1900 found no range
    in 60 of 300 draws on equal blocks and in none on these, 20,000 over 1000-1500 in 276 against none.  Far
    from the common span a block's length is relative precision, as the powers of two of numbers are."""
    f0, f1 = (int(x[:4]) for x in DATETIME_SPAN)
    years = list(range(f0, f1, DATETIME_BLOCK_YEARS))
    w, y = 2 * DATETIME_BLOCK_YEARS, f0
    while y > 1:
        y, w = max(y - w, 1), 2 * w
        years.insert(0, y)
    w, y = 2 * DATETIME_BLOCK_YEARS, f1
    while y <= 9999:
        years.append(y)
        y, w = y + w, 2 * w
    return (np.array(years) - 1970).astype("datetime64[Y]").astype("datetime64[s]").astype(np.int64).astype(float)


_BLOCK_STARTS = _block_starts()
_FINE = tuple(_BLOCK_STARTS[np.searchsorted(_BLOCK_STARTS, _to_epoch_seconds(pd.Series(list(DATETIME_SPAN)), "span"))])


@dataclass
class BoundsReport:
    """What :func:`dp_bounds` released about one column and why the bounds are where they are (all
    of it post-processing of the noisy histograms; nothing exact)."""

    lower: float
    upper: float
    grid: str  # "log2 buckets" / "16-year blocks"
    core: tuple[float, float]  # span of the buckets that cleared the high threshold
    walked: tuple[float, float]  # after extending through buckets with evidence of data
    margin: int  # buckets added on each side without evidence (what the noise could hide)
    hidden: float  # rows one bucket could hold unseen (2 sigma of the first histogram)
    trimmed: tuple[int, int]  # sub-buckets trimmed off (left, right)
    clipped_estimate: float  # noisy count of what the trimmed sub-buckets hold (an estimate)
    n_estimate: float  # noisy count of the values inside the measured range
    missing_count: float | None = None  # noisy count of missing values (NaN bucket), if measured
    sigma: float = 0.0  # standard deviation of missing_count
    rings: tuple[int, int] = (0, 0)  # tail rings beyond the margin with evidence of data (left, right)
    #: ``(side, edge)`` where the fixed log2 grid cannot say where the values are: "low"/"high", bounds at the grid's
    #: outermost edge (its last bucket holds everything beyond it, clipped); "fine", evidence only in the buckets
    #: around 0 (a smaller scale is not told apart from 0)
    grid_edges: tuple = ()
    #: noisy counts of the values beyond a "low"/"high" grid edge, each in a cell of its own in the second histogram
    #: (they are clipped to the edge: part of ``clipped_estimate`` too)
    beyond: dict = field(default_factory=dict)
    #: ``(side, bound)`` for each side whose bound tail rings took beyond the margin, and the probability that a
    #: ring holding nothing clears the innermost ring's threshold at this budget (what the reader weighs it by)
    past_margin: tuple = ()
    empty_ring_passes: float = 0.0
    #: sides ("low"/"high") of one-signed data taken on to 0 because the noise could hide a tail there
    to_zero: tuple = ()

    def as_dict(self, column) -> dict:
        r = lambda x: float(round(x, 1))  # noqa: E731
        return {"kind": column.kind, "lower": column.show(self.lower), "upper": column.show(self.upper),
                "grid": self.grid, "core": [column.show(self.core[0]), column.show(self.core[1])],
                "walked": [column.show(self.walked[0]), column.show(self.walked[1])], "margin_buckets": self.margin,
                "rows_a_bucket_can_hide": r(self.hidden), "trimmed_sub_buckets": list(self.trimmed),
                "clipped_estimate": r(max(self.clipped_estimate, 0.0)), "rows_estimate": r(self.n_estimate),
                "missing_estimate": None if self.missing_count is None else r(self.missing_count),
                "tail_rings": list(self.rings), "grid_edges": [[side, float(x)] for side, x in self.grid_edges],
                **({"beyond_grid_estimate": {k: r(max(x, 0.0)) for k, x in self.beyond.items()}}
                   if self.beyond else {}),
                **({"past_margin": [[side, column.show(x)] for side, x in self.past_margin],
                    "empty_ring_passes": float(f"{self.empty_ring_passes:.2g}")} if self.past_margin else {}),
                **({"to_zero": list(self.to_zero)} if self.to_zero else {})}


def _grid(kind: str, integer: bool, log2_range, span):
    """Fixed, data-independent buckets: ``(edges (K, 2), index(v) -> bucket, log_scale)``.

    Numbers: 0 and +-2^k buckets (integer columns need no buckets below 1).  Datetimes: the blocks of
    :func:`_block_starts` (:data:`DATETIME_BLOCK_YEARS` years over :data:`DATETIME_SPAN`, doubling beyond)
    within the public ``span`` (values outside fall in the outermost blocks), not powers of two of epoch
    seconds, whose buckets shrink towards 1970 and cut a birth-date column into slivers."""
    if kind == "datetime":
        lo, hi = span
        left = _BLOCK_STARTS[(_BLOCK_STARTS > lo) & (_BLOCK_STARTS < hi)]
        left = np.r_[lo, left]
        edges = np.stack([left, np.r_[left[1:], hi]], axis=1)
        return edges, (lambda v: np.clip(np.searchsorted(left, v, side="right") - 1, 0, len(left) - 1)), False
    lo2, hi2 = int(log2_range[0]), int(log2_range[1])
    if integer:  # no bucket below 1, and none beyond 2^53, past which integers are not held exactly
        lo2, hi2 = max(lo2, 0), min(hi2, 53)
    return _log_bucket_edges(lo2, hi2), (lambda v: _log_bucket_index(v, lo2, hi2)), True


def dp_bounds(values, budget: Budget, rho: float | None = None, *,
              integer: bool = False, name: str = "column", refine_share: float = 0.75, n_refine: int = 32,
              false_positive: float = 1e-3, clip_share: float = 0.0075, max_margin: int = 2,
              log2_range: tuple[int, int] = (LOG2_MIN, LOG2_MAX), kind: str = "numerical",
              span: tuple[float, float] | None = None, report: bool = False,
              known_lower: float | None = None, known_upper: float | None = None):
    """DP approximate (lower, upper) bounds of ``values`` (NaNs are ignored), spending ``rho``, that
    aim to clip at most about ``clip_share`` of the values on each side.

    Two discrete Gaussian histograms, each of L2 sensitivity 1 (one record, one bucket):

    1. Over fixed, data-independent buckets (``0`` and ``+-2^k`` for numbers, Wilson et al., PoPETs
       2020's ``ApproxBounds``; for datetimes, ``kind="datetime"``, :data:`DATETIME_BLOCK_YEARS`-year blocks
       over :data:`DATETIME_SPAN`, doubling in length beyond it), plus one bucket for missing values.  The *core*
       is the outermost buckets whose noisy count clears ``sigma * Phi^-1(1 - fp / K)`` (a stray
       far bucket would widen the range a millionfold, so a bucket apart from the run of the largest
       count must clear the bar of ``fp * _APART_FACTOR``).  It is then *walked* outwards through
       neighbouring buckets whose noisy count exceeds ``sigma`` (evidence of data), and widened by
       a *margin* of up to ``max_margin`` buckets when the noise could hide more than
       ``clip_share`` of the rows in a bucket (``2 sigma > clip_share * n_hat``) -- at a small
       budget a thin tail cannot be seen, and cutting it is what damaged tables (capped ages,
       birth dates lost); at a large one there is no margin.
    2. Over ``n_refine`` uniform sub-buckets of that range (fewer when the first histogram says they
       would be sparse), values outside counted in the edge sub-buckets.  Sub-buckets are trimmed
       from each side only while the noisy count of what would be clipped (floored at 0: what is
       clipped is never negative), plus one standard deviation per sub-bucket, stays below
       ``clip_share`` of a low estimate of the rows: tight bounds when the budget allows it, the
       safe wide range when it does not.  Beyond a margin, tail rings with evidence of data
       (:data:`_RING_Z`) extend the range.

    Choosing the second grid from the first release is adaptive composition; both are charged.
    ``rho`` defaults to all of ``budget.remaining``, ``refine_share`` of it to the second histogram.
    Integers (``integer=True``, a public fact) get integral bounds.  ``span`` (datetimes: public
    wall-clock seconds; default the years 1 to 9999 -- pass ``datetimes.unit_span("ns")[:2]`` for a
    nanosecond column) limits the blocks and the result.  In a non-private run (``budget.private``
    False) the exact minimum and maximum are returned.  ``known_lower`` / ``known_upper`` are public bounds of one side
    (a count is never negative): kept as given, and the measurement looks at the other side only
    (values beyond a known bound are counted at it).  With ``report=True`` returns ``(lower, upper,
    BoundsReport)``.
    Raises :class:`SchemaError` naming the column if no bucket clears the threshold.
    """
    v = np.asarray(values, dtype=float)
    na = np.isnan(v)
    v_all, v = v, v[~na]
    if np.isinf(v).any():
        raise SchemaError(f"column {name!r}: infinite values cannot be bounded")
    if not 0.0 < refine_share < 1.0:
        raise ConfigError(f"refine_share must lie in (0, 1), got {refine_share}")
    if int(n_refine) < 1:
        raise ConfigError(f"n_refine must be >= 1, got {n_refine}")
    if not 0.0 < clip_share < 0.5:
        raise ConfigError(f"clip_share must lie in (0, 0.5), got {clip_share}")
    if int(max_margin) < 0:
        raise ConfigError(f"max_margin must be >= 0, got {max_margin}")
    lo2, hi2 = int(log2_range[0]), int(log2_range[1])
    if lo2 >= hi2:
        raise ConfigError(f"log2_range must be increasing, got {log2_range}")
    if kind == "datetime" and span is None:
        span = unit_span("us")[:2]
    if known_lower is not None or known_upper is not None:
        v = np.clip(v, -np.inf if known_lower is None else known_lower, np.inf if known_upper is None else known_upper)
    rho = _rho(budget, rho)
    if not budget.private:
        # A non-private run records its access (reported as non-private) and answers exactly.
        budget.charge("exact_bounds", None, math.inf, f"{name}: exact minimum and maximum")
        if v.size == 0:
            raise SchemaError(f"column {name!r}: every value is missing; cannot bound it")
        lo, hi = float(v.min()), float(v.max())
        if integer:
            lo, hi = float(math.floor(lo)), float(math.ceil(hi))
        lo = lo if known_lower is None else float(known_lower)
        hi = hi if known_upper is None else float(known_upper)
        rep = BoundsReport(lo, hi, "exact", (lo, hi), (lo, hi), 0, 0.0, (0, 0), 0.0, float(v.size),
                           float(na.sum()))
        return (lo, hi, rep) if report else (lo, hi)

    edges, index, log_scale = _grid(kind, integer, (lo2, hi2), span)
    K = len(edges)
    glo2 = max(lo2, 0) if integer else lo2  # the grid's smallest exponent (as _grid sets it)
    counts = np.bincount(index(v), minlength=K).astype(float)
    counts = np.r_[counts, float(na.sum())]  # the missing values' bucket: one record, one bucket still
    rho1 = rho * (1.0 - refine_share)
    noisy_all, sigma = discrete_gaussian(budget, counts, 1.0, rho1, mechanism="histogram",
                                         note=f"{name}: bounds, {K} {'log2 buckets' if log_scale else 'blocks'} "
                                              "and missing values")
    noisy, noisy_missing = noisy_all[:K], float(noisy_all[K])
    span_idx = _outermost(noisy, sigma, false_positive)
    if span_idx is None:
        raise SchemaError(
            f"column {name!r}: no value range could be measured (no noisy bucket count cleared the "
            f"threshold at sigma={sigma:.3g}); give dp_schema more budget, or declare the column's public "
            f"'lower' and 'upper' in its description (kinds, or the --schema file of `fit --dp-schema`)")
    a, b = span_idx
    core = (float(edges[a, 0]), float(edges[b, 1]))
    zero = (K - 1) // 2 if log_scale else -1  # the {0} bucket of the log grid
    # The sign the core shows: walk, margin and tail rings stay on it, and the other sign is looked for in
    # the second histogram, where a thin mass a few empty buckets past 0 (a -1 sentinel, the zeros of a
    # float column) is not lost.  0 is a floor more readily than a ceiling: counts and amounts are never
    # negative, and a margin or a weakly evidenced ring past 0 invented negative counts (a lower bound of
    # -4 to -131072 for the COMPAS-like table's three count columns in every one of 200 draws), while
    # negative data that reaches 0 (days between two dates) walks on into the positives.
    pos, neg = log_scale and a >= zero, log_scale and b < zero

    def walk(a, b):  # outwards through buckets with evidence of data (noisy count above one sigma)
        while a > 0 and noisy[a - 1] > sigma and (not pos or a > zero):
            a -= 1
        while b < K - 1 and noisy[b + 1] > sigma and (not neg or b < zero):
            b += 1
        return a, b

    a, b = walk(a, b)
    if neg and b == zero:
        neg = False
        a, b = walk(a, b)
    inside = noisy[a:b + 1]
    n_hat = float(inside.sum())
    n_low = max(n_hat - 2.0 * sigma * math.sqrt(inside.size), 1.0)
    hidden = 2.0 * sigma
    margin = 0
    if hidden > clip_share * n_low:
        # on a log scale a tail a bucket hides halves from bucket to bucket; a linear block holds it
        need = math.log2(hidden / (clip_share * n_low)) if log_scale else _LINEAR_MARGIN
        margin = int(min(max_margin, max(1, math.ceil(need))))
    # without a margin there are no rings either (the histogram sees every bucket), but the other sign is
    # still looked for in the second histogram, not walked to (an empty bucket passes one sigma 16 % of the time)
    walked = (float(edges[a, 0]), float(edges[b, 1]))
    # a margin never takes one-signed data to the other sign, nor non-negative data below 0
    a = (max(a - margin, zero + 1) if a > zero else a) if pos else max(a - margin, 0)
    b = min(b + margin, zero - 1) if neg else min(b + margin, K - 1)
    lo, hi = float(edges[a, 0]), float(edges[b, 1])
    if integer:
        lo, hi = float(math.floor(lo)), float(math.ceil(hi))
    # A range that reaches the grid's outermost bucket: what lies beyond the edge is clipped to it, so it gets a
    # cell of its own in the second histogram (one record, one cell still: no extra charge), and the report an
    # estimate of how much was clipped (1e300s were clipped to 2^64 with 'about 2 values clipped' said)
    top = 2.0 ** (min(hi2, 53) if integer else hi2)  # the grid's outermost edge (as _grid sets it)
    over = [side for side, at in (("low", a == 0), ("high", b == K - 1)) if log_scale and at]

    rho2 = rho - rho1
    sigma2 = gaussian_sigma(rho2, 1.0)
    # Second histogram, one record in one cell (sensitivity 1): k uniform sub-buckets of [lo, hi] (values
    # beyond a side with no rings counted in its edge sub-bucket), and -- when a margin was needed, i.e.
    # the budget cannot see a thin tail bucket by bucket -- a few wide rings beyond the margin on each
    # side (2, 6, then 8 buckets), where a spread-out tail adds up to something the noise does not hide.
    # One-signed data: past the same-sign rings, a cell for 0 (and the small buckets the rings left), then
    # rings of the other sign scaled to the data (_other_sign, _OTHER_Z), with or without a margin.
    left, right = [], []  # (first bucket, last bucket, evidence in sigmas), innermost first
    tails = [0, 0]  # how many of left's and right's rings are same-sign tail rings (the rest: 0, other sign)
    if margin:
        widths = _RING_WIDTHS[0 if log_scale else 1]
        i, j = a, b
        for w, z in zip(widths, _RING_Z):
            x, y = max(i - w, zero + 1 if pos else 0), i - 1
            if x <= y:
                left.append((x, y, z))
                i = x
            x, y = j + 1, min(j + w, zero - 1 if neg else K - 1)
            if x <= y:
                right.append((x, y, z))
                j = y
        tails = [len(left), len(right)]
    else:
        i, j = a, b
    if pos:
        if i > zero:
            left.append((zero, i - 1, _ZERO_Z))
        left += _other_sign(zero, i, glo2, -1, K)
    if neg:
        if j < zero:
            right.append((j + 1, zero, _ZERO_Z))
        right += _other_sign(zero, j, glo2, +1, K)
    k = int(n_refine)
    while k > 4 and n_hat / k < 4 * _threshold(sigma2, k, 0.01):
        k //= 2
    if integer:
        k = max(1, min(k, int(hi - lo)))
    sub = np.linspace(lo, hi, k + 1)
    if integer:
        sub = np.unique(np.round(sub))
        k = sub.size - 1
    bucket = index(v)
    cell = np.clip(np.searchsorted(sub, v, side="right") - 1, 0, max(k - 1, 0)) + len(left)
    for r, (x, y, _) in enumerate(left):  # ring r on the left is cell len(left) - 1 - r (outermost first)
        cell[(bucket >= x) & (bucket <= y)] = len(left) - 1 - r
    for r, (x, y, _) in enumerate(right):
        cell[(bucket >= x) & (bucket <= y)] = len(left) + k + r
    n_cells = len(left) + k + len(right)
    for side in over:
        cell[(v < -top) if side == "low" else (v > top)] = n_cells
        n_cells += 1
    counts2 = np.r_[np.bincount(cell, minlength=n_cells).astype(float), float(na.sum())]
    noisy2, sigma2 = discrete_gaussian(budget, counts2, 1.0, rho2, mechanism="histogram",
                                       note=f"{name}: bounds refinement, {k} sub-buckets, {len(left) + len(right)} "
                                            "tail rings and missing values")
    noisy2, missing2 = noisy2[:-1], float(noisy2[-1])
    ring_l = noisy2[:len(left)][::-1]  # innermost first
    inner = noisy2[len(left):len(left) + k]
    ring_r = noisy2[len(left) + k:len(left) + k + len(right)]
    beyond = {side: float(x) for side, x in zip(over, noisy2[len(left) + k + len(right):])}
    start = {side: max(x, 0.0) for side, x in beyond.items()}  # clipped whatever the trimming does
    floor = _RING_SHARE * clip_share * n_low  # rows a tail ring must show beyond its noise (_RING_SHARE)
    far_l, far_r = (_far_ring(ring_l, left, tails[0], sigma2, floor),
                    _far_ring(ring_r, right, tails[1], sigma2, floor))
    # a well-filled outermost tail ring: the tail runs on into the next (_EXTEND_Z); never into 0's cell or
    # the other sign, which one-signed data must not reach on a guess
    if far_l == 0 < tails[0] - 1 and ring_l[far_l] > _EXTEND_Z * sigma2:
        far_l += 1
    if far_r == 0 < tails[1] - 1 and ring_r[far_r] > _EXTEND_Z * sigma2:
        far_r += 1
    # the first two tail rings together (_SUM_Z): a tail spread over both can show in their sum alone
    if far_l < 1 < tails[0] and ring_l[0] + ring_l[1] > _SUM_Z * sigma2 * math.sqrt(2) + floor:
        far_l = 1
    if far_r < 1 < tails[1] and ring_r[0] + ring_r[1] > _SUM_Z * sigma2 * math.sqrt(2) + floor:
        far_r = 1
    rings = (far_l + 1, far_r + 1)
    trim_l = trim_r = 0
    clipped = sum(start.values())
    if k > 1 and hi > lo:
        # trim sub-buckets from a side with no tail beyond, only while the noisy count of what would be
        # clipped (with what lies beyond the grid's edge) plus one standard deviation stays below
        # clip_share of a low estimate of the rows
        total = float(inner.sum()) + clipped
        limit = clip_share * max(total - 2.0 * sigma2 * math.sqrt(k + len(over)), 0.0)

        def trim(seq, side):
            s, t, n0 = start.get(side, 0.0), 0, int(side in over)
            for x in seq[:-1]:
                # what is clipped is never negative: the running estimate is floored at 0, so the negative
                # noise of empty outer sub-buckets cannot pay for the rows of the next one
                if max(s + x, 0.0) + sigma2 * math.sqrt(t + 1 + n0) > limit:
                    break
                s, t = max(s + x, 0.0), t + 1
            return t, s

        cl, cr = start.get("low", 0.0), start.get("high", 0.0)
        if far_l < 0:
            trim_l, cl = trim(inner, "low")
        if far_r < 0:
            trim_r, cr = trim(inner[::-1][:k - trim_l], "high")
        clipped = cl + cr
        lo, hi = float(sub[trim_l]), float(sub[k - trim_r])
    if far_l >= 0:
        lo = float(edges[left[far_l][0], 0])
    if far_r >= 0:
        hi = float(edges[right[far_r][1], 1])
    # One-signed data whose side towards 0 needed a margin, and where no ring took the bound on nor did the trimming
    # move it: the bound goes on to 0.  The log grid's buckets shrink towards 0, so a margin of m buckets there
    # covers only 2^-m of the core's edge, and a thin tail -- the 0s and 1s of a uniform 0-99 column, 2 % of it --
    # falls short of every ring's evidence at a small budget and was clipped.  The margin on the other side makes
    # the bound at most 2^-(2m+1) of the far one, so going on to 0 costs little width.
    to_zero = []
    if margin and pos and far_l < 0 and trim_l == 0 and known_lower is None and lo > 0:
        lo = 0.0
        to_zero.append("low")
    if margin and neg and far_r < 0 and trim_r == 0 and known_upper is None and hi < 0:
        hi = 0.0
        to_zero.append("high")
    # the sides whose bound rings took past the margin (a side known in public keeps its bound whatever the rings)
    past = [side for side, far, known in (("low", far_l, known_lower), ("high", far_r, known_upper))
            if far >= 0 and known is None]
    if integer:
        lo, hi = float(math.floor(lo)), float(math.ceil(hi))
    if span is not None:
        lo, hi = max(lo, span[0]), min(hi, span[1])
    lo = lo if known_lower is None else float(known_lower)
    hi = hi if known_upper is None else float(known_upper)
    # the two noisy counts of missing values, inverse-variance weighted (post-processing)
    w1, w2 = 1.0 / sigma ** 2, 1.0 / sigma2 ** 2
    noisy_missing, sigma_missing = (w1 * noisy_missing + w2 * missing2) / (w1 + w2), (w1 + w2) ** -0.5
    grid = "log2 buckets" if log_scale else f"{DATETIME_BLOCK_YEARS}-year blocks" + (
        f" (doubling beyond {DATETIME_SPAN[0][:4]}-{DATETIME_SPAN[1][:4]})" if lo < _FINE[0] or hi > _FINE[1] else "")
    at_edge = []
    if log_scale:  # post-processing of the released bounds and evidence
        bottom = 2.0 ** lo2
        if known_lower is None and lo <= -top:
            at_edge.append(("low", -top))
        if known_upper is None and hi >= top:
            at_edge.append(("high", top))
        if not integer and -bottom <= walked[0] and walked[1] <= bottom:
            at_edge.append(("fine", bottom))
    rep = BoundsReport(lo, hi, grid, core, walked, margin, hidden, (trim_l, trim_r), clipped, n_hat,
                       noisy_missing, sigma_missing, rings, tuple(at_edge),
                       {side: beyond[side] for side, _ in at_edge if side in beyond},
                       tuple((side, lo if side == "low" else hi) for side in past),
                       float(norm.sf(min(_RING_Z[0] + floor / sigma2, _ZERO_Z, _OTHER_Z[0]))) if past else 0.0,
                       tuple(to_zero))
    return (lo, hi, rep) if report else (lo, hi)


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
                  delta_sel: float, max_categories: int | None = None, name: str = "column",
                  report: bool = False):
    """The values of a categorical column released by DP partition selection.

    Discrete Gaussian noise (L2 sensitivity 1: one value per record) on the counts of the values present
    in ``values`` (values matched by :func:`category_key`); a value is released when its noisy count
    exceeds :func:`selection_threshold` (Desfontaines, Voss, Gipson, Mandayam, "Differentially private
    partition selection", PoPETs 2022).  Missing values are one more, *public* key (always counted,
    present or not): its noisy count is released as such.  Cost: ``rho`` (default: all of
    ``budget.remaining``) as a Gaussian event **plus** an additive ``delta_sel``, both charged.  If
    more than ``max_categories`` pass, the ones with the largest noisy counts are kept
    (post-processing).  Returned sorted; may be empty.  With ``report=True`` returns
    ``(categories, noisy missing count, threshold)``.  In a non-private run every observed value is
    returned (the most frequent ``max_categories``).
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
    n_missing = float(s.isna().sum())
    note = f"{name}: categories, partition selection"  # the number of distinct values is private
    if not budget.private:
        budget.charge("gaussian_partition_selection", None, math.inf, note)
        noisy, keep, noisy_missing, threshold = counts, counts > 0, n_missing, 1
    else:
        sigma = gaussian_sigma(rho, 1.0)
        budget.charge("gaussian_partition_selection", dpa.ZCDpEvent(rho), rho, note, extra_delta=delta_sel)
        drawn = np.r_[counts, n_missing] + budget.noise.discrete_gaussian(sigma, (counts.size + 1,))
        noisy, noisy_missing = drawn[:-1], float(drawn[-1])
        threshold = selection_threshold(sigma, delta_sel)
        keep = noisy >= threshold
    chosen, score = cats[keep], noisy[keep]
    if max_categories is not None and chosen.size > int(max_categories):
        # the largest noisy counts, ties broken by the value itself: ``cats`` is in the order the values first
        # appear in the rows, and a tie broken by that order made the release depend on which record came first
        # (removing a table's first record then moved a value past the cut as a change of 2 in its count would)
        best = sorted(range(chosen.size), key=lambda i: (-score[i], str(chosen[i])))
        chosen = chosen[best[: int(max_categories)]]
    out = sorted(str(c) for c in chosen)
    return (out, noisy_missing, threshold) if report else out


# -------------------------------------------------------------------------------------------------
# whole schema
# -------------------------------------------------------------------------------------------------
def kind_from_dtype(dtype) -> str:
    """Column kind from a dtype alone: datetime64 -> datetime, bool / text -> categorical, numbers ->
    numerical."""
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if pd.api.types.is_bool_dtype(dtype):
        return "categorical"
    if pd.api.types.is_numeric_dtype(dtype):
        return "numerical"
    return "categorical"


def _written_resolution(s: pd.Series, layout: str | None) -> str:
    """The coarsest resolution every value of a text column of dates is a whole multiple of, for
    :func:`kind_hint`'s suggestion (an error message, before any charge): "day" for dates, finer for
    date-times (a suggested "day" for '2021-11-21 07:30' made the fit it led to fail on resolution)."""
    from . import datetimes as dtm

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = dtm.to_seconds(s, str(s.name), fmt=layout, warn=False)
    except (SchemaError, ValueError, TypeError, OverflowError):
        return "day"
    ok = v[np.isfinite(v)]
    return next((r for r in RESOLUTIONS if not dtm.off_resolution(ok, r).any()), "nanosecond")


def kind_hint(s: pd.Series) -> tuple[dict, str]:
    """What to declare for an undeclared column, and why, for an error message: text that reads as dates
    gets a datetime description (the values are read to say so, never to decide a release)."""
    kind = kind_from_dtype(s.dtype)
    if kind == "categorical" and not pd.api.types.is_bool_dtype(s.dtype):
        iso = _iso_text(s)
        layout = None if iso else date_layout(s, False)
        if iso or layout:
            return ({"type": "datetime", "resolution": _written_resolution(s, layout),
                     **({"format": layout} if layout else {})},
                    f"its text reads as {'dates' if layout else 'ISO dates'}")
    if kind == "numerical" and not pd.api.types.is_bool_dtype(s.dtype):
        # whole numbers (an integer dtype, or floats only because of missing values: hmeq's DEROG) are
        # suggested as such, which a private run does not read from the dtype (it warned, a second round trip)
        v = pd.to_numeric(s, errors="coerce").dropna().to_numpy(dtype=float)
        if v.size and np.isfinite(v).all() and (v == np.round(v)).all():
            return {"type": kind, "integer": True}, ""
    # True/False (a reader's bool column, or its object column of bools around missing values): the two values are
    # the type's, not the rows', so no catch-all is needed
    if pd.api.types.is_bool_dtype(s.dtype) or (
            s.dtype == object and s.notna().any() and all(isinstance(v, (bool, np.bool_)) for v in s.dropna())):
        return {"type": kind, "categories": list(BOOL_CATEGORIES)}, ""
    return {"type": kind}, ""


def _dtype_kind(dtype, name: str) -> str | dict:
    """:func:`kind_from_dtype`, with what else the dtype states, as a partial description: a datetime dtype's
    unit and zone (:func:`~synthzoo.core.schema.datetime_dtype_spec`); a boolean's two values (numpy's ``bool``
    without missing values, pandas' ``boolean`` with them measured); a pandas category, nullable text, integer or
    narrow float dtype, so that the release comes back in it (a numpy integer is integral and never missing, a
    nullable one integral).  A category dtype's own categories are not taken (``astype("category")`` reads them
    from the values), so it comes back as a category over their text, with the catch-all."""
    kind = kind_from_dtype(dtype)
    spec: dict = {}
    if kind == "datetime":
        spec = datetime_dtype_spec(dtype, name)
    elif pd.api.types.is_bool_dtype(dtype):
        boolean = isinstance(dtype, pd.BooleanDtype)
        spec = {"categories": list(BOOL_CATEGORIES), "dtype": "boolean" if boolean else "bool",
                **({} if boolean else {"missing": False})}
    elif isinstance(dtype, pd.CategoricalDtype):  # over text: measured categories need the catch-all's text
        spec = {"dtype": "category"}
    elif isinstance(dtype, pd.StringDtype) and dtype.na_value is pd.NA:
        spec = {"dtype": "string"}
    elif kind == "numerical" and str(dtype) in NUMERICAL_DTYPES and str(dtype) != "float64":
        spec = {"dtype": str(dtype)}  # dp_schema takes integer-ness (and a numpy integer's no-missing) from it
    return {"type": kind, **spec} if spec else kind


def kinds_from_dtypes(df: pd.DataFrame) -> dict[str, str | dict]:
    """The kind each column's dtype suggests (:func:`kind_from_dtype`), as a ``kinds`` mapping for
    :func:`dp_schema`; a datetime column whose dtype has a unit other than nanoseconds or a time zone gets
    a partial description that keeps them (``{"type": "datetime", "dtype": "datetime64[us]", "tz":
    "Europe/Paris"}``), so that the release is sampled in the frame's own dtype.

    The rest of what a dtype states comes too, so that the release is typed as the frame is: a numpy
    ``bool`` column's two values and no missing one (``{"type": "categorical", "categories": ["False",
    "True"], "dtype": "bool", "missing": False}``: nothing left to measure, no catch-all), pandas'
    ``boolean`` its two values, a ``category`` or nullable ``string`` dtype itself, an integer dtype its
    integer-ness (a numpy one also that no value is missing) and a width other than ``float64`` itself.

    A private ``dp_schema`` does not read kinds from the frame: a dtype is a function of the rows
    wherever a reader infers it (``read_csv`` makes a numeric column text when one record holds
    text, an integer column ``float64`` when one value is missing; ``to_datetime`` picks the unit and
    zone from the text), so a kind taken from it would tell neighbouring tables apart whatever the
    noise.  Passing ``kinds=kinds_from_dtypes(df)`` declares the frame's dtypes public -- right where
    you set them yourself (``astype``, ``tz_localize``, a typed source), not where a reader guessed them
    from the values.
    """
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"kinds_from_dtypes expects a pandas DataFrame, got {type(df).__name__}")
    check_column_names(df, "kinds_from_dtypes: the table")  # a twice-named column's df[c] is a frame
    return {c: _dtype_kind(df[c].dtype, c) for c in df.columns}


def dp_schema(df: pd.DataFrame, kinds: Mapping[str, str | dict] | None = None, epsilon=_EPS_DEFAULT,
              delta=_DELTA_DEFAULT, ledger: PrivacyLedger | None = None, noise_seed: int | None = None,
              max_categories: int = 100, known: Schema | None = None, *, share: float | None = None,
              selection_delta: float | None = None, other: str | None = OTHER, integers: Iterable[str] = (),
              bounds_options: Mapping | None = None, datetime_span: tuple | None = None,
              missing_z: float = 2.0) -> tuple[Schema, PrivacyLedger]:
    """A :class:`Schema` for ``df`` measured under differential privacy; the DP alternative to
    :meth:`Schema.infer`.  Returns ``(schema, ledger)``; :func:`dp_schema_report` says what was
    measured and why, and :func:`conform` fits the private frame to it.

    * Column kinds come from ``kinds`` (or ``known``): a private run refuses a column without one,
      before any charge, since a dtype is not public where a reader inferred it from the values
      (:func:`kinds_from_dtypes` turns dtypes you set yourself into ``kinds``; a non-private run,
      ``epsilon=None``, takes the dtypes' kinds for the columns ``kinds`` omits).  A ``kinds`` entry is a kind
      (``{"age": "numerical"}``) or a *partial column description* with the public facts one knows
      (``{"dob": {"type": "datetime", "resolution": "day"}, "race": {"type": "categorical",
      "categories": [...]}, "age": {"type": "numerical", "integer": true}}``): what it gives is kept,
      what it lacks (bounds, categories, missing) is measured.  Integer-ness comes from the
      description or ``integers`` only (public knowledge): pandas stores an integer column with a
      missing value as float, so reading it from the dtype would tell neighbouring frames apart.
      A datetime column's resolution, zone, format and output type come from its description
      (default resolution ``"second"``; a declared ``"format"`` means text in that layout, a
      ``"dtype": "string"`` ISO text).
    * Columns of ``known`` (a public, possibly partial Schema) are taken as they are, free.
    * Every column with something to measure costs an equal share of the budget: numerical /
      datetime bounds by :func:`dp_bounds` (datetimes on blocks of years, 16 over 1700-2260 and doubling
      beyond, never buckets centred on 1970, within what the column's declared ``dtype`` holds -- the
      years 1677-2262 of the default nanoseconds, 1 to 9999 for ``"datetime64[us]"`` and other units or
      ``"string"`` -- and the public ``datetime_span``, a pair of dates, if given), with a margin where
      the noise could hide a tail, so that at a small budget bounds are wide rather than cut; categories by
      :func:`dp_categories` (Gaussian partition selection) plus the catch-all category ``other``
      (always added, so its presence says nothing; ``other=None`` omits it).
    * ``missing`` is declared only where DP evidence says so: the noisy count of missing values
      (released by the same histogram or selection, at no extra cost) exceeds ``missing_z``
      standard deviations.  A declared missing code that never occurs would make the release
      invent missing values; missing values in a column declared without them are filled by
      :func:`conform`.

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
    frame, an unknown kind or key, ``kinds``/``known`` naming a column the frame lacks, a numerical
    column with a non-numeric dtype, or a column whose measurement released nothing.
    """
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"dp_schema expects a pandas DataFrame, got {type(df).__name__}")
    if df.shape[1] == 0:
        raise SchemaError("dp_schema: the frame has no columns")
    if len(df) == 0:
        raise SchemaError("dp_schema: the frame is empty (0 rows)")
    check_column_names(df, "dp_schema: the table")
    if kinds is not None and not isinstance(kinds, Mapping):  # a list of names: dict() failed inside Python
        raise ConfigError("kinds must map each column to its kind, e.g. {'age': 'numerical', 'city': "
                          f"'categorical'}}; got a {type(kinds).__name__}")
    specs: dict[str, dict] = {}
    for col, kind in dict(kinds or {}).items():
        if col not in df.columns:
            raise SchemaError(f"kinds names column {col!r}, which the frame lacks")
        spec = dict(kind) if isinstance(kind, Mapping) else {"type": kind}
        unknown = sorted(set(spec) - set(COLUMN_KEYS))
        if unknown:
            raise SchemaError(f"column {col!r}: unknown key(s) {unknown} in kinds; a column description has "
                              f"{list(COLUMN_KEYS)}")
        spec["type"] = spec.pop("kind", spec.get("type"))
        if spec["type"] not in KINDS:
            raise SchemaError(f"column {col!r}: unknown kind {spec['type']!r}; expected one of {KINDS}")
        if spec["type"] == "numerical" and is_integer_dtype_name(spec.get("dtype")):
            spec.setdefault("integer", True)  # a declared integer width says so
        if spec.get("dtype") in INTEGER_DTYPES and spec["dtype"][0].islower():
            spec.setdefault("missing", False)  # ... and numpy's integers hold no missing value: nothing to measure
        if spec.get("ordered") and "categories" not in spec:  # measured categories have no public order
            raise SchemaError(f"column {col!r}: 'ordered' needs the column's public 'categories', listed in their "
                              "order (categories measured from the rows have none)")
        specs[col] = spec
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
    if not (isinstance(missing_z, (int, float)) and math.isfinite(missing_z)):
        raise ConfigError(f"missing_z must be a number, got {missing_z!r}")
    integers = [integers] if isinstance(integers, str) else list(integers)
    for c in integers:
        if c not in df.columns:
            raise SchemaError(f"integers names column {c!r}, which the frame lacks")

    cols = [c for c in df.columns if known is None or c not in known]
    undeclared = [c for c in cols if c not in specs]
    private = ledger.private if isinstance(ledger, PrivacyLedger) else (
        (epsilon.value if isinstance(epsilon, _Default) else epsilon) is not None)
    for c in cols:
        kind = _dtype_kind(df[c].dtype, str(c))  # a private run refuses an undeclared column below, before any charge
        specs.setdefault(c, dict(kind) if isinstance(kind, dict) else {"type": kind})
    for c in integers:
        if c in specs and specs[c]["type"] != "numerical":
            raise SchemaError(f"integers names column {c!r}, whose kind is {specs[c]['type']!r}, not numerical")
        if c in specs:
            specs[c]["integer"] = True
    for c in cols:  # checks of declared facts against dtypes: errors before any charge, never decisions
        check_one_value_per_cell(df[c], str(c))  # fit would refuse such cells after the charges
        d = specs[c].get("dtype")
        if specs[c]["type"] == "categorical" and "categories" not in specs[c]:
            if d in ("bool", "boolean"):
                specs[c]["categories"] = list(BOOL_CATEGORIES)  # the declared dtype lists them: nothing to measure
            elif other is not None and (d in ("int", "category[int]", "category[interval]")
                                        or is_integer_dtype_name(d) or period_dtype(d) is not None):
                whole = d in ("int", "category[int]") or is_integer_dtype_name(d)  # integers have bounds to measure
                raise SchemaError(f"column {c!r}: measured categories need the catch-all {other!r} for the values "
                                  f"they do not release, which dtype {d!r} cannot hold; list the column's public "
                                  "categories in kinds" + (", or declare it {'type': 'numerical', 'integer': True} "
                                                           "to measure its bounds" if whole else ""))
        if specs[c]["type"] == "datetime" and "dtype" not in specs[c] and specs[c].get("format"):
            specs[c]["dtype"] = "string"  # a declared text layout: the column is text, and comes back in it
        if not private and specs[c]["type"] == "datetime" and "dtype" not in specs[c] \
                and isinstance(df[c].dtype, pd.StringDtype):
            # non-private: dates in a text dtype come back as text in the column's format.  A private run takes
            # the output type from the description only ("dtype": "string"): a reader's dtype follows the values
            # (a date column whose one dated record is removed reads back as all-missing floats)
            specs[c]["dtype"] = "string"
        if specs[c].get("dtype") in INTEGER_DTYPES and specs[c]["dtype"][0].islower() and df[c].isna().any():
            d = specs[c]["dtype"]
            raise SchemaError(f"column {c!r}: declared dtype {d!r} holds no missing values, but the column has some; "
                              f"declare {nullable_dtype_name(d)!r} (pandas' nullable dtype) instead")
        if specs[c]["type"] == "numerical" and unsupported_numbers(df[c], c):  # complex: before any charge
            raise SchemaError(unsupported_numbers(df[c], c))
        if specs[c]["type"] == "numerical" and pd.api.types.is_bool_dtype(df[c].dtype):
            raise SchemaError(booleans_declared_numerical(c, df[c].dtype))  # what fit says, with what to do
        if specs[c]["type"] == "numerical" and not pd.api.types.is_numeric_dtype(df[c].dtype):
            raise SchemaError(dates_declared_numerical(df[c], c) or f"column {c!r}: declared numerical but has "
                              f"dtype {df[c].dtype}; convert it to numbers first")
        if specs[c]["type"] == "numerical" and np.isinf(df[c].to_numpy(dtype=float, na_value=np.nan)).any():
            # dp_bounds refused them after the other columns' charges, and fit refuses them anyway
            raise SchemaError(f"column {c!r}: infinite values (inf or -inf) cannot be bounded; replace them with "
                              "missing values or finite numbers")
        if specs[c]["type"] == "categorical" and "categories" in specs[c]:
            _check_listed(df[c], Column.from_spec(c, {**specs[c], "missing": specs[c].get("missing", True)}),
                          "kinds (or the --schema file of `fit --dp-schema`)")
    for c in (known.names if known is not None else []):  # a public schema's lists too: conform has no catch-all
        if known[c].kind == "categorical" and c not in known.meta.get("other_category", {}):
            _check_listed(df[c], known[c], "the known schema")
    todo = [c for c in cols if _needs(specs[c])]
    for c in todo:
        if specs[c]["type"] == "datetime" and "resolution" not in specs[c] and "format" not in specs[c]:
            warnings.warn(f"column {c!r}: no \"resolution\" declared; dp_schema does not read it from the values, "
                          "so the column is measured and synthesized to the second. Declare it in kinds (e.g. "
                          f"{{{c!r}: {{'type': 'datetime', 'resolution': 'day'}}}} for dates)", UserWarning, stacklevel=2)
    free = {c: Column.from_spec(c, specs[c]) for c in cols if c not in todo}  # fully described: public, free
    n_sel = sum(specs[c]["type"] == "categorical" and "categories" not in specs[c] for c in todo)
    span = (-math.inf, math.inf) if datetime_span is None else tuple(
        _to_epoch_seconds(pd.Series(list(datetime_span)), "datetime_span"))
    if not span[0] < span[1]:
        raise ConfigError(f"datetime_span must be increasing, got {datetime_span}")
    spans = {c: _column_span(specs[c], span, c) for c in todo if specs[c]["type"] == "datetime"}  # before any charge
    seconds = {}  # the datetime columns' values parsed now: text that is no date failed after other columns' charges
    for c in cols:  # a datetime description's own errors (an unknown zone, a format that does not read back) too
        if specs[c]["type"] == "datetime":
            spec = specs[c]  # one given bound stands for both (a lone upper bound before 1970 is no error)
            probe = Column.from_spec(c, {**spec, "lower": spec.get("lower", spec.get("upper", 0.0)),
                                         "upper": spec.get("upper", spec.get("lower", 0.0))})
            seconds[c] = _dt_seconds(df[c], probe)
    for c in todo:  # and the others' ('decimals' on integers, a dtype the values do not fit): they failed after charges
        spec = specs[c]
        if spec["type"] == "numerical":
            Column.from_spec(c, {**spec, "lower": spec.get("lower", spec.get("upper", 0.0)),
                                 "upper": spec.get("upper", spec.get("lower", 0.0))})
        elif spec["type"] == "categorical" and "categories" not in spec:  # (no room for the catch-all: above)
            cats = dict.fromkeys(category_key(v) for v in _distinct(df[c]) if not pd.isna(v))  # not row by row
            Column.from_spec(c, {**spec, "categories": list(cats) or ["0"]})

    own_ledger = ledger is None
    ledger, budget, delta_sel = _make_budget(ledger, epsilon, delta, share, selection_delta, n_sel, bool(todo),
                                             noise_seed)
    # Errors, not decisions, before any charge (values are read only to say what to declare, as
    # Schema.validate's bounds error does).  A private run takes no kind from the dtypes: read_csv types a
    # column from its values (one record of text makes a numeric column text), so the kind would leak.  A
    # non-private one does, but not for text that reads as dates, which as categories would all be merged.
    hints = {c: kind_hint(df[c]) for c in (undeclared if ledger.private else
                                            [c for c in undeclared if "categories" not in specs[c]])}
    if ledger.private and undeclared:
        shown = undeclared[:6]
        more = f", ... ({len(undeclared)} columns)" if len(undeclared) > 6 else ""
        notes = "".join(f"; column {c!r}: {hints[c][1]}" for c in shown if hints[c][1])
        raise SchemaError(f"dp_schema: no kind declared for column(s) {shown}{more}{notes}. A private dp_schema does "
                          "not read kinds from the frame's dtypes: a CSV reader decides them from the values (one "
                          "record of text turns a numeric column into text), so the kind itself would leak. Declare "
                          f"them, e.g. kinds={{{', '.join(f'{c!r}: {hints[c][0]}' for c in shown)}{more}}} (check it "
                          "against your data dictionary), or give each a \"type\" in the --schema file of `fit "
                          "--dp-schema`; kinds=kinds_from_dtypes(df) declares dtypes you set yourself public")
    for c, (hint, note) in hints.items():
        if note:
            raise SchemaError(f"column {c!r}: {note}, but dp_schema takes an undeclared text column as categorical, "
                              f"which would merge every date into the catch-all category; declare it, e.g. "
                              f"kinds={{{c!r}: {hint}}} (or {{'type': 'categorical'}} to keep it as text), or give it "
                              "a \"type\" in the --schema file of `fit --dp-schema`")
    # shares by what each column needs (public facts only): numerical bounds and category selection a full
    # share, datetime bounds (year blocks over a public span: easy) half, a lone missing-value count a quarter
    weight = {c: _weight(specs[c]) for c in todo}
    unit = (budget.remaining / sum(weight.values())) if (todo and budget.private) else math.inf
    share_of = {c: unit * weight[c] for c in todo}
    opts = dict(bounds_options or {})
    # integer-ness is public: the dtype warning below never decides anything
    for c in todo:
        if (specs[c]["type"] == "numerical" and not specs[c].get("integer")
                and pd.api.types.is_integer_dtype(df[c].dtype)):
            warnings.warn(f"column {c!r}: integer dtype, but integer-ness is public knowledge that dp_schema does "
                          "not read from dtypes (a missing value would change them); declare it in kinds "
                          "({'type': 'numerical', 'integer': True}) or integers=[...] for integral synthetic values",
                          UserWarning, stacklevel=2)

    columns, other_of, reports = [], {}, {}
    for c in df.columns:
        if c not in cols:
            columns.append(known[c])
            continue
        if c not in todo:
            columns.append(free[c])
            continue
        spec = dict(specs[c])
        kind = spec["type"]
        if kind == "categorical" and "categories" not in spec:
            cats, noisy_na, thr = dp_categories(df[c], budget, share_of[c], delta_sel=delta_sel,
                                                max_categories=max_categories, name=c, report=True)
            sigma = gaussian_sigma(share_of[c], 1.0) if budget.private else 0.0
            if other is not None:
                if other not in cats:
                    cats.append(other)
                other_of[c] = other
            if not cats:
                raise SchemaError(f"column {c!r}: partition selection released no category; give dp_schema "
                                  "more budget, keep other='__other__', or list the categories in kinds")
            spec["categories"] = cats
            rep = {"kind": "categorical", "released": [x for x in cats if x != other],
                   "selection_threshold": float(thr), "other": other}
        elif kind in ("numerical", "datetime") and ("lower" not in spec or "upper" not in spec):
            if kind == "datetime":
                vals = seconds[c]  # parsed before any charge
            else:
                vals = df[c].to_numpy(dtype=float, na_value=np.nan)
            given = {k: spec[k] for k in ("lower", "upper") if k in spec}  # one public bound: keep it
            if given:
                probe = Column.from_spec(c, {**spec, "lower": spec.get("lower", spec.get("upper")),
                                             "upper": spec.get("upper", spec.get("lower"))})
                given = {k: getattr(probe, k) for k in given}
            lo, hi, brep = dp_bounds(vals, budget, share_of[c], integer=bool(spec.get("integer")), name=c, kind=kind,
                                     span=spans.get(c), report=True,
                                     known_lower=given.get("lower"), known_upper=given.get("upper"), **opts)
            for side, edge in brep.grid_edges:  # said now, not only in the report: the fix is the caller's
                text = grid_edge_text(side, edge, brep.beyond.get(side), brep.n_estimate)
                warnings.warn(f"column {c!r}: {text} in kinds (or the --schema file of "
                              "`fit --dp-schema`)", UserWarning, stacklevel=2)
            if kind == "numerical" and spec.get("dtype"):  # a declared width bounds the range (public)
                info = (np.iinfo if is_integer_dtype_name(spec["dtype"]) else np.finfo)(spec["dtype"].lower())
                lo, hi = min(max(lo, float(info.min)), float(info.max)), max(min(hi, float(info.max)), float(info.min))
            if kind == "datetime":
                if "resolution" not in spec:  # a format's finest code states it (public), else seconds
                    spec["resolution"] = resolution_of_bound("", spec["format"]) if spec.get("format") else "second"
                step = RESOLUTIONS[spec["resolution"]] / 1e9
                lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
                # ... never out of the span (nanoseconds start on 1677-09-22 at 00:12:43.145224193)
                lo, hi = max(lo, math.ceil(spans[c][0] / step) * step), min(hi, math.floor(spans[c][1] / step) * step)
            spec["lower"], spec["upper"] = lo, hi
            noisy_na, sigma = brep.missing_count, brep.sigma
            brep.lower, brep.upper = lo, hi
            rep = brep
        else:  # the values' form is public; only missingness is measured: one noisy count
            n_na = float(df[c].isna().sum())
            noisy, sigma = discrete_gaussian(budget, np.array([n_na]), 1.0, share_of[c], mechanism="count",
                                             note=f"{c}: missing values")
            noisy_na = float(noisy[0])
            rep = {"kind": kind}
        if "missing" not in spec:
            spec["missing"] = bool(noisy_na > missing_z * sigma) if budget.private else bool(noisy_na > 0)
            why = {"missing_estimate": float(round(noisy_na, 1)), "missing_threshold": float(round(missing_z * sigma, 1))}
        else:
            why = {"missing_given": True}
        column = Column.from_spec(c, spec)
        columns.append(column)
        base = rep.as_dict(column) if isinstance(rep, BoundsReport) else rep
        reports[c] = {**base, **why, "missing": column.missing}

    meta = dict(known.meta) if known is not None else {}
    if other_of:
        meta["other_category"] = {**meta.get("other_category", {}), **other_of}
    meta["dp_schema"] = {"measured": todo, "epsilon": ledger.epsilon, "delta": ledger.delta,
                         "selection_delta": delta_sel * n_sel if ledger.private else 0.0,
                         "clip_share": float(opts.get("clip_share", 0.0075)),
                         "missing": f"declared where the noisy count of missing values exceeds {missing_z:g} sigma",
                         "columns": reports,
                         # the measurement's own account (DP events and releases only), so that a synthesizer
                         # fitted on this schema -- even one read back from JSON -- charges its cost; with a shared
                         # ledger the charges are already in it
                         "account": ledger.account() if own_ledger else None}
    return Schema(columns, meta), ledger


def _check_listed(s: pd.Series, col: Column, where: str) -> None:
    """A public category list must hold every value of its column: nothing can take the others in (there is
    no catch-all category for a list the caller gives), and finding them only in :func:`conform`, after the
    charge, would lose the budget.  An error, not a decision (values are read to say what to declare)."""
    left, _, keys = _left_out(s, col)
    if left.any():
        bad = pd.Series(keys[left]).value_counts()
        shown = ", ".join(repr(k) for k in bad.index[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise SchemaError(f"column {col.name!r}: {int(left.sum()):,} value(s) not in the categories listed in "
                          f"{where}: {shown}; add them to the list, or leave the list out so that dp_schema "
                          "measures the categories (rare ones are then merged into a catch-all category)")


def _column_span(spec: dict, span: tuple[float, float], name: str) -> tuple[float, float]:
    """The public span a datetime column's bounds are measured in: what its declared unit holds (nanoseconds
    by default: 1677-09-22 to 2262-04-10), within ``datetime_span``; the dtype is the description's, never
    the frame's (a reader picks a unit from the values)."""
    lo, hi, _ = unit_span(unit_of(spec.get("dtype"), spec.get("resolution")))
    lo, hi = max(lo, span[0]), min(hi, span[1])
    if not lo < hi:
        raise ConfigError(f"column {name!r}: datetime_span lies outside what the column's dtype holds")
    return lo, hi


def _weight(spec: dict) -> float:
    if spec["type"] == "categorical":
        return 1.0 if "categories" not in spec else 0.25
    if "lower" in spec and "upper" in spec:
        return 0.25
    return 0.5 if spec["type"] == "datetime" else 1.0


def _needs(spec: dict) -> bool:
    """Whether a partial description leaves something to measure."""
    if "missing" not in spec:
        return True
    if spec["type"] == "categorical":
        return "categories" not in spec
    return "lower" not in spec or "upper" not in spec




def _dt_seconds(s: pd.Series, col: Column) -> np.ndarray:
    from .datetimes import to_seconds

    return to_seconds(s, col.name, tz=col.tz, fmt=col.format)


def check_dp_schema_meta(schema: Schema, where: str = "schema") -> dict | None:
    """The ``meta["dp_schema"]`` record of ``schema``, its types checked as untrusted input (a schema file or a
    model file may have been edited); SchemaError naming the field.  None when there is none."""
    info = schema.meta.get("dp_schema")
    if info is None:
        return None
    at = f"{where}: dp_schema"

    def num(x, ok_none=False):
        return (x is None and ok_none) or (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x))

    if not isinstance(info, dict):
        raise SchemaError(f"{at}: must be an object")
    if not (num(info.get("epsilon"), True) and num(info.get("delta"), True) and num(info.get("clip_share", 0.0))):
        raise SchemaError(f"{at}: epsilon, delta and clip_share must be numbers (epsilon null for a non-private run)")
    measured, cols = info.get("measured", []), info.get("columns", {})
    if not (isinstance(measured, list) and all(isinstance(c, str) and c in schema for c in measured)):
        raise SchemaError(f"{at}.measured: must list columns of the schema")
    if not (isinstance(cols, dict) and all(isinstance(r, dict) for r in cols.values())):
        raise SchemaError(f"{at}.columns: must map column names to objects")
    for name, r in cols.items():
        w = f"{at}.columns.{name}"
        if "released" in r and not (isinstance(r["released"], list) and num(r.get("selection_threshold"))):
            raise SchemaError(f"{w}: a categorical record needs a 'released' list and a 'selection_threshold'")
        if "lower" in r:
            pairs = [r.get(k) for k in ("core", "walked", "trimmed_sub_buckets")]
            if not (all(isinstance(x, list) and len(x) == 2 for x in pairs) and "upper" in r
                    and all(num(r.get(k)) for k in ("margin_buckets", "rows_a_bucket_can_hide", "clipped_estimate"))):
                raise SchemaError(f"{w}: a bounds record needs upper, core, walked, margin_buckets, "
                                  "rows_a_bucket_can_hide, trimmed_sub_buckets and clipped_estimate")
            edges = r.get("grid_edges", [])
            if not (isinstance(edges, list) and all(isinstance(e, list) and len(e) == 2 and e[0] in ("low", "high", "fine")
                                                    and num(e[1]) for e in edges)):
                raise SchemaError(f"{w}.grid_edges: must list [\"low\" | \"high\" | \"fine\", edge] pairs")
            beyond = r.get("beyond_grid_estimate", {})
            if not (isinstance(beyond, dict) and all(k in ("low", "high") and num(x) for k, x in beyond.items())):
                raise SchemaError(f"{w}.beyond_grid_estimate: must map \"low\" / \"high\" to numbers")
            past = r.get("past_margin", [])
            if not (isinstance(past, list) and all(isinstance(e, list) and len(e) == 2 and e[0] in ("low", "high")
                                                   and isinstance(e[1], str) for e in past)
                    and (not past or (num(r.get("empty_ring_passes")) and 0 <= r["empty_ring_passes"] <= 1))):
                raise SchemaError(f"{w}.past_margin: must list [\"low\" | \"high\", bound] pairs, with "
                                  "empty_ring_passes a probability")
        # a declared 'missing' (missing_given) leaves the bounds' noisy count of missing values without a threshold
        if "missing_estimate" in r and not (num(r["missing_estimate"], True) and (
                r.get("missing_given") is True or num(r.get("missing_threshold")))):
            raise SchemaError(f"{w}: missing_estimate and missing_threshold must be numbers (or missing_given true)")
    if not (info.get("account") is None or isinstance(info.get("account"), dict)):
        raise SchemaError(f"{at}.account: must be an object or null")
    return info


def measured_under_dp(schema: Schema | None) -> bool:
    """Whether ``schema`` says :func:`dp_schema` measured it with a finite epsilon (its record checked)."""
    info = check_dp_schema_meta(schema) if schema is not None else None
    return bool(info) and info.get("epsilon") is not None


def grid_edge_text(side: str, edge: float, beyond: float | None = None, rows: float | None = None) -> str:
    """What a bound at the edge of :func:`dp_bounds`' log2 grid means, and what to do (``BoundsReport.grid_edges``);
    ``beyond``, ``rows``: the noisy counts of the values past the edge and of the column (``BoundsReport.beyond``,
    ``n_estimate``), said as the share clipped."""
    if side == "fine":
        return (f"every value the measurement saw lies within +-{edge:g} of 0, the log2 grid's innermost buckets: "
                "values of a smaller scale are not told apart from 0, and the bounds may be far wider than the values; "
                "declare the column's 'lower' and 'upper'")
    share = ""
    if beyond is not None:
        n = max(beyond, 0.0)
        of = f", {min(100 * n / rows, 100):.3g} % of about {rows:,.0f}" if rows and rows >= 1 else ""
        share = f" (about {n:,.0f} values{of}, a noisy estimate)"
    return (f"the {'lower' if side == 'low' else 'upper'} bound is the log2 grid's outermost edge {edge:g}: "
            f"values beyond it{share} were counted there and are clipped to it; declare the column's 'lower' and "
            "'upper'")


def dp_schema_report(schema: Schema) -> str:
    """What :func:`dp_schema` measured for each column and why, from the schema's
    ``meta["dp_schema"]`` -- DP releases and public facts only (so it may be shown and saved with a
    model).  :func:`conform` says what this did to the private frame."""
    info = check_dp_schema_meta(schema)
    if not info:
        return ""
    eps = info.get("epsilon")
    head = (f"schema measured under DP (epsilon={eps:g}, delta={info.get('delta'):g}) for {len(info.get('measured', []))} "
            "column(s):" if eps is not None else "schema measured WITHOUT privacy (exact bounds and categories):")
    lines = [head]
    share = float(info.get("clip_share", 0.0075))
    for name, r in info.get("columns", {}).items():
        if name not in schema:
            continue
        col = schema[name]
        miss = (" missing values declared" if r.get("missing") else " no missing values declared") + (
            " (as the description said)" if r.get("missing_given") else
            f" (noisy count {r['missing_estimate']:g} vs threshold {r['missing_threshold']:g})"
            if r.get("missing_estimate") is not None and "missing_threshold" in r and eps is not None else "")
        if r.get("kind") == "categorical" and "released" in r:
            n_rel = len(r["released"])
            shown = ", ".join(map(repr, r["released"][:12])) + (" ..." if n_rel > 12 else "")
            text = f"{n_rel} categor{'y' if n_rel == 1 else 'ies'} released ({shown})"
            if r.get("other") is not None and eps is not None:
                text += (f"; every other value is merged into {r['other']!r} (at this budget any held by fewer than "
                         f"about {r['selection_threshold']:,.0f} rows, the selection threshold; conform lists which, "
                         "for your eyes only) -- list the public categories in kinds to keep them")
        elif "lower" in r:
            text = f"bounds [{r['lower']}, {r['upper']}]"
            if eps is not None:
                text += f" on {r['grid']}: data seen in [{r['core'][0]}, {r['core'][1]}]"
                if r["walked"] != r["core"]:
                    text += f", evidence of a tail to [{r['walked'][0]}, {r['walked'][1]}]"
                if r["margin_buckets"]:
                    text += (f"; widened by {r['margin_buckets']} bucket(s) each side because a bucket can hide about "
                             f"{r['rows_a_bucket_can_hide']:,.0f} rows, more than {100 * share:g} % of the column")
                t = r["trimmed_sub_buckets"]
                beyond = r.get("beyond_grid_estimate", {})  # clipped at the grid's edge: said with the edge
                if t[0] or t[1]:
                    text += (f"; trimmed {t[0]} + {t[1]} empty-looking sub-buckets (about "
                             f"{max(r['clipped_estimate'] - sum(beyond.values()), 0.0):,.0f} values clipped, a noisy "
                             "estimate)")
                past = [f"{'lower' if side == 'low' else 'upper'} bound goes on to {bound}"
                        for side, bound in r.get("past_margin", [])]
                if past:
                    text += (f"; past the margin, {'tail rings' if len(past) > 1 else 'a tail ring'} cleared "
                             f"{'their thresholds' if len(past) > 1 else 'its threshold'}, so the "
                             f"{' and the '.join(past)} (a ring that holds nothing does so in up to "
                             f"{100 * r['empty_ring_passes']:.2g} % of draws at this budget: declare the column's "
                             "public 'lower' and 'upper' if they are known)")
                for side in r.get("to_zero", []):
                    text += (f"; the {'lower' if side == 'low' else 'upper'} bound goes on to 0: the margin's buckets "
                             "shrink towards 0, and a tail there would be hidden by the noise")
                for side, edge in r.get("grid_edges", []):
                    text += "; " + grid_edge_text(side, edge, beyond.get(side), r.get("rows_estimate"))
        else:
            text = "public description kept"
        lines.append(f"  {name:<24} {col.kind:<11} {text};{miss}")
    return "\n".join(lines)


def conform(df: pd.DataFrame, schema: Schema, seed: int = 0) -> pd.DataFrame:
    """Make a private frame fit a DP-measured schema (record-by-record, so free of privacy cost).

    Categorical values outside a column's released categories become its catch-all label
    (``schema.meta["other_category"][column]``, set by :func:`dp_schema`); numeric and datetime
    values outside the bounds are clipped; missing values in a column the schema declares without
    them become the catch-all label (categorical; one of the categories, uniformly, where the column has
    no catch-all) or a value uniform within the bounds, drawn from
    the record's own values, the column and ``seed`` (:func:`_record_uniforms`: one record's fill
    never depends on another's, so a neighbouring table changes only its own record).  One warning
    says, per column, how many values each step changed -- exact counts from the private frame, for
    its owner's eyes: they are not part of any release.  Returns a new frame that passes ``schema.validate``.
    """
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"conform expects a pandas DataFrame, got {type(df).__name__}")
    if not isinstance(schema, Schema):
        raise ConfigError(f"conform: schema must be a synthzoo.Schema (as dp_schema returns), got "
                          f"{type(schema).__name__}")
    check_column_names(df, "conform: the table")  # a twice-named column's out[name] is a frame
    other_of = schema.meta.get("other_category", {})
    out = df.copy()
    changes = []
    n = max(len(df), 1)
    for col in schema.columns:
        if col.name not in out.columns:
            continue
        s = out[col.name]
        left, na, vals = _left_out(s, col)  # vals: category keys, or numbers
        if col.kind == "categorical":
            unseen, keys = left, vals
            fill = na & (not col.missing)
            if fill.any() and col.name not in other_of and col.categories:
                # no catch-all (a public list, or other=None): the record's own draw among the categories, as a
                # number's fill is uniform within its bounds
                new = keys.astype(object)
                pick = np.floor(_record_uniforms(df.loc[fill], col.name, seed) * len(col.categories)).astype(int)
                new[fill] = np.asarray(col.categories, dtype=object)[pick]
                new[na & ~fill] = np.nan
                out[col.name] = new
                changes.append(f"{col.name}: {int(fill.sum()):,} missing value(s) set to categories drawn uniformly "
                               "(the DP schema declares no missing values)")
                continue
            if (unseen.any() or fill.any()) and col.name in other_of:
                new = keys.astype(object)
                new[unseen | fill] = other_of[col.name]
                new[na & ~fill] = np.nan
                out[col.name] = new
                if unseen.any():
                    changes.append(f"{col.name}: {int(unseen.sum()):,} value(s) ({100 * unseen.sum() / n:.2f} %) of "
                                   f"unreleased categories merged into {other_of[col.name]!r}: "
                                   f"{_merged(keys[unseen])}; list the column's public categories (kinds, or the "
                                   "--schema file of `fit --dp-schema`) to keep them")
                if fill.any():
                    changes.append(f"{col.name}: {int(fill.sum()):,} missing value(s) set to {other_of[col.name]!r} "
                                   "(the DP schema declares no missing values)")
            continue
        v, outside = vals, left
        fill = na & (not col.missing)
        if not (outside.any() or fill.any()):
            continue
        w = np.clip(v, col.lower, col.upper)
        if fill.any():
            w[fill] = col.lower + _record_uniforms(df.loc[fill], col.name, seed) * (col.upper - col.lower)
            if col.integer:
                w[fill] = np.floor(w[fill])
            changes.append(f"{col.name}: {int(fill.sum()):,} missing value(s) filled within the bounds (the DP "
                           "schema declares no missing values)")
        if outside.any():
            below, above = int((v < col.lower).sum()), int((v > col.upper).sum())
            changes.append(f"{col.name}: {int(outside.sum()):,} value(s) ({100 * outside.sum() / n:.2f} %) clipped to "
                           f"[{col.show(col.lower)}, {col.show(col.upper)}] ({below:,} below, {above:,} above)")
        if col.kind == "datetime":
            if fill.any():  # filled values at the column's resolution; the others as they were
                w[fill] = col.datetimes(w[fill]).pipe(lambda t: numeric_values(t, col))
            fixed = col.datetimes(w, snap=False)
            fixed.index = s.index
            out[col.name] = fixed
        else:
            out[col.name] = pd.Series(w, index=s.index)
    if changes:
        warnings.warn("conform changed the private frame to fit the DP schema (exact counts from your data: not "
                      "part of any release, do not publish them):\n  " + "\n  ".join(changes), UserWarning,
                      stacklevel=2)
    return schema.validate(out)


def _record_uniforms(rows: pd.DataFrame, column: str, seed: int) -> np.ndarray:
    """One number in [0, 1) per row, a function of that row's own values, ``column`` and ``seed`` only.

    A stream drawn in row order (as ``conform`` once did) hands a row the draw of its position, so
    adding one record with a missing value shifted the fill of every later one; a keyed hash of the
    record keeps the change to that record.  Identical records would share one draw (a spike where
    few columns describe a row), so the k-th copy of a record hashes k in as well: adding a record
    adds one draw to its copies' set and changes no other (the table is a multiset of records)."""
    import hashlib

    def mix(x):  # splitmix64's finaliser; uint64 products wrap modulo 2^64, as intended
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))

    h = pd.util.hash_pandas_object(rows, index=False).to_numpy(np.uint64)
    copy = pd.Series(h).groupby(h).cumcount().to_numpy(np.uint64)
    salt = int.from_bytes(hashlib.blake2b(f"{int(seed)}:{column}".encode(), digest_size=8).digest(), "little")
    x = mix(mix(h ^ np.uint64(salt)) ^ mix(copy + np.uint64(1)))
    return (x >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def public_kinds(schema: Schema, categories: bool = True) -> dict:
    """The ``kinds`` of :func:`dp_schema` that a data dictionary of ``schema``'s table publishes
    without its rows: types, integer-ness, decimal places, output dtypes, date resolution and text form,
    and (``categories``) the category lists; bounds are left to be measured."""
    out = {}
    for c in schema:
        if c.kind == "categorical":  # its dtype only with the list (measured categories may not fit it)
            out[c.name] = ({"type": "categorical", "categories": list(c.categories),
                            **({"ordered": True} if c.ordered else {}), **({"dtype": c.dtype} if c.dtype else {})}
                           if categories else "categorical")
        elif c.kind == "numerical":
            out[c.name] = {"type": "numerical", "integer": c.integer,
                           **({"decimals": c.decimals} if c.decimals is not None else {}),
                           **({"dtype": c.dtype} if c.dtype else {})}
        else:
            out[c.name] = {"type": "datetime", "resolution": c.resolution, **({"dtype": c.dtype} if c.dtype else {})}
    return out


def clipped_shares(df: pd.DataFrame, schema: Schema) -> dict[str, float]:
    """Per column, the exact share of ``df``'s non-missing values that ``schema`` leaves out:
    categories it does not list (which :func:`conform` merges) and values beyond its bounds (which it
    clips).  Computed from the private rows: for the data owner's eyes, not part of any release."""
    out = {}
    for col in schema:
        left, na, _ = _left_out(df[col.name], col)
        present = int((~na).sum())
        out[col.name] = float(left.sum() / present) if present else 0.0
    return out


def filled_shares(df: pd.DataFrame, schema: Schema) -> dict[str, float]:
    """Per column, the exact share of ``df``'s rows whose missing value :func:`conform` fills because
    ``schema`` declares the column without missing values (the noise hid them: ``missing`` is declared only
    on DP evidence).  Like :func:`clipped_shares`, computed from the private rows for the data owner's eyes."""
    n = len(df)
    return {col.name: float(_left_out(df[col.name], col)[1].sum() / n) if (n and not col.missing) else 0.0
            for col in schema}


def _left_out(s: pd.Series, col) -> tuple[np.ndarray, np.ndarray, object]:
    """``(left_out, missing, values)`` of one column against ``col``: which present values lie
    outside it (a category it does not list, a value beyond its bounds), which are missing, and the
    values compared (category keys, or numbers as :func:`numeric_values` reads them)."""
    if col.kind == "categorical":
        na = s.isna().to_numpy()
        keys = s.map(category_key, na_action="ignore")
        return ~na & ~keys.isin(col.categories).to_numpy(), na, keys
    v = numeric_values(s, col)
    na = np.isnan(v)
    return ~na & ((v < col.lower) | (v > col.upper)), na, v


def _merged(values: pd.Series, show: int = 8) -> str:
    """The merged categories with their exact counts, largest first (for the data owner's eyes)."""
    vc = values.value_counts()
    text = ", ".join(f"{k!r} {v:,}" for k, v in vc.iloc[:show].items())
    return text + (f" and {len(vc) - show:,} more" if len(vc) > show else "")


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
        eps, dlt = check_privacy_params(eps, dlt)
        privacy_warnings(eps, dlt, stacklevel=4)
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
