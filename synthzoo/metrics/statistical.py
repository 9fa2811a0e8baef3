"""SynthEval's statistical utility metrics (Lautrup, Hyrup, Zimek, Schneider-Kamp, "SynthEval: a
framework for detailed utility and privacy evaluation of tabular synthetic data", Data Mining and
Knowledge Discovery 2024; reference implementation ``syntheval`` 1.7).

Each function takes ``real, synthetic, schema`` and follows SynthEval's definition; where this
module departs from the ``syntheval`` package the function's docstring says why, citing the paper.
Conventions shared by all of them (SynthEval min-max scales numbers on the real and synthetic
rows together and label-encodes categories; it does not handle missing values):

* numbers are scaled to [0, 1] with the schema's *public* bounds -- the same scale for every
  release (equal to SynthEval's when the bounds are the range the two tables show);
* categories are the schema's codes, a missing value is a category of its own;
* a missing number is left out of the statistics of its column (pairwise for correlations).

``tests/metrics/test_crosscheck.py`` compares every function with ``syntheval`` on fixed tables.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.schema import Schema
from ._common import ColumnViews, check_column_pairs, check_positive_int, prepare, resolve_schema, varies
from .association import pairwise_matrix


def _scaled(v: ColumnViews, schema: Schema) -> dict:
    """Numeric columns on [0, 1] by the public bounds (NaN = missing)."""
    out = {}
    for c in schema.columns:
        if c.kind != "categorical":
            span = c.upper - c.lower
            out[c.name] = (v.num[c.name] - c.lower) / span if span > 0 else np.zeros(v.n)
    return out


def _num_cols(schema: Schema) -> list[str]:
    return [c.name for c in schema.columns if c.kind != "categorical"]


def _cat_cols(schema: Schema) -> list[str]:
    return [c.name for c in schema.columns if c.kind == "categorical"]


# ---------------------------------------------------------------------------------------
# Kolmogorov-Smirnov (numbers) and total variation with a permutation test (categories)
# ---------------------------------------------------------------------------------------

def _tvd_counts(a: np.ndarray, b: np.ndarray, na: int, nb: int) -> np.ndarray:
    return 0.5 * np.abs(a / na - b / nb).sum(-1)


def ks_test(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, sig_level: float = 0.05,
            n_perms: int = 1000, seed: int = 0) -> dict:
    """SynthEval's ``ks_test``: per column, the two-sample Kolmogorov-Smirnov distance and p-value
    for a number (``scipy.stats.ks_2samp``), the total variation distance with a permutation
    p-value for a category; the count and share of columns whose p-value is below ``sig_level``.

    The permutation test is exact in distribution and fast: under the null the real side's
    category counts of a random relabelling follow a multivariate hypergeometric law, so the
    ``n_perms`` null statistics are drawn from it directly (SynthEval permutes the rows with
    ``scipy.stats.permutation_test``; the p-value is (#null >= observed + 1) / (n_perms + 1) in
    both, so values agree up to Monte-Carlo noise).

    Returns ``avg_stat`` (mean over all columns), ``avg_ks`` (numbers), ``avg_tvd`` (categories),
    ``n_significant``, ``frac_significant`` and ``columns`` (a frame: column, kind, statistic,
    p_value)."""
    from scipy.stats import ks_2samp
    schema = resolve_schema(schema, real)
    n_perms = check_positive_int(n_perms, "n_perms")
    if not 0 < sig_level < 1:
        raise ConfigError(f"sig_level must lie in (0, 1), got {sig_level!r}")
    r, s = prepare(real, synthetic, schema)
    rng = np.random.default_rng(seed)
    rows = []
    for c in schema.columns:
        if c.kind == "categorical":
            k = len(c.categories) + 2
            cr = np.bincount(r.cat[c.name], minlength=k)
            cs = np.bincount(s.cat[c.name], minlength=k)
            stat = float(_tvd_counts(cr, cs, r.n, s.n))
            null_r = rng.multivariate_hypergeometric(cr + cs, r.n, size=n_perms)
            null = _tvd_counts(null_r, cr + cs - null_r, r.n, s.n)
            p = float((np.sum(null >= stat - 1e-12) + 1) / (n_perms + 1))
            rows.append((c.name, "categorical", stat, p))
        else:
            x, y = r.num[c.name], s.num[c.name]
            x, y = x[~np.isnan(x)], y[~np.isnan(y)]
            if x.size == 0 or y.size == 0:
                rows.append((c.name, "numerical", np.nan, np.nan))
                continue
            res = ks_2samp(x, y)
            rows.append((c.name, "numerical", float(res.statistic), float(res.pvalue)))
    cols = pd.DataFrame(rows, columns=["column", "kind", "statistic", "p_value"])
    sig = cols["p_value"] < sig_level
    return {"avg_stat": float(cols["statistic"].mean()),
            "avg_ks": float(cols.loc[cols.kind == "numerical", "statistic"].mean()),
            "avg_tvd": float(cols.loc[cols.kind == "categorical", "statistic"].mean()),
            "n_significant": int(sig.sum()), "frac_significant": float(sig.mean()), "columns": cols}


# ---------------------------------------------------------------------------------------
# Hellinger distance
# ---------------------------------------------------------------------------------------

def _scott_edges(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bin edges by Scott's reference rule (width 3.5 sd n^(-1/3)) on the pooled values; a column
    whose inter-quartile range is 0 (zero-inflated) gets percentile edges, as SynthEval does."""
    z = np.concatenate([x, y])
    q25, q75 = np.percentile(z, [25, 75])
    lo, hi = float(z.min()), float(z.max())
    if q75 - q25 == 0 or hi == lo:
        edges = np.unique(np.percentile(z, [0, 10, 25, 75, 90, 100]))
        return edges if edges.size >= 2 else np.array([lo - 0.5, lo + 0.5])
    width = 3.5 * float(np.std(z)) * z.size ** (-1 / 3)
    n_bins = int(min(max(np.ceil((hi - lo) / width), 1), 10_000))
    return np.linspace(lo, hi, n_bins + 1)


def _hellinger(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.sqrt(0.5 * np.sum((np.sqrt(p) - np.sqrt(q)) ** 2)))


def hellinger_distance(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> dict:
    """SynthEval's ``h_dist``: the mean Hellinger distance H(p, q) = ||sqrt p - sqrt q||_2 / sqrt 2 of
    the per-column distributions (0 = equal, 1 = disjoint).

    A category's distribution is its frequencies (missing included).  A number is binned with
    Scott's reference rule on the pooled values, as the paper specifies.  Two departures from
    ``syntheval`` 1.7: it histograms a categorical column separately per table over each table's
    own code range, so the bins misalign when the synthetic table lacks the first or last
    category; and its numeric bins take ceil(n^(1/3) sd / (3.5 IQR)) -- a dimensionless count --
    as the bin *width* on [0, 1]-scaled values, which leaves one bin (distance 0) for almost every
    column.  Both agree with this function when every category occurs in both tables and the
    numbers are left out.

    Returns ``avg`` and ``columns`` (a frame: column, kind, hellinger)."""
    schema = resolve_schema(schema, real)
    r, s = prepare(real, synthetic, schema)
    rows = []
    for c in schema.columns:
        if c.kind == "categorical":
            k = len(c.categories) + 2
            p = np.bincount(r.cat[c.name], minlength=k) / r.n
            q = np.bincount(s.cat[c.name], minlength=k) / s.n
        else:
            x, y = r.num[c.name], s.num[c.name]
            x, y = x[~np.isnan(x)], y[~np.isnan(y)]
            if x.size == 0 or y.size == 0:
                rows.append((c.name, "numerical", np.nan))
                continue
            edges = _scott_edges(x, y)
            p = np.histogram(x, edges)[0] / x.size
            q = np.histogram(y, edges)[0] / y.size
        rows.append((c.name, c.kind if c.kind == "categorical" else "numerical", _hellinger(p, q)))
    cols = pd.DataFrame(rows, columns=["column", "kind", "hellinger"])
    return {"avg": float(cols["hellinger"].mean()), "columns": cols}


# ---------------------------------------------------------------------------------------
# propensity mean squared error
# ---------------------------------------------------------------------------------------

def _design(v: ColumnViews, scaled: dict, schema: Schema, encoding: str) -> np.ndarray:
    blocks = []
    for c in schema.columns:
        if c.kind == "categorical":
            codes = v.cat[c.name]
            if encoding == "ordinal":
                blocks.append(codes.astype(float)[:, None])
            else:
                k = len(c.categories) + 2
                oh = np.zeros((v.n, k))
                oh[np.arange(v.n), codes] = 1.0
                blocks.append(oh)
        else:
            x = scaled[c.name]
            na = np.isnan(x)
            blocks.append(np.where(na, 0.0, x)[:, None])
            if c.missing:
                blocks.append(na.astype(float)[:, None])
    return np.concatenate(blocks, axis=1)


def pmse(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, k_folds: int = 5, max_iter: int = 100,
         encoding: str = "ordinal", seed: int = 42) -> dict:
    """SynthEval's ``p_mse`` (propensity mean squared error; Woo et al. 2009, Snoke et al. 2018): a
    logistic-regression discriminator (liblinear) tells real from synthetic rows in ``k_folds``-fold
    stratified cross-validation; on each held-out fold, pMSE = mean over its rows of (predicted
    probability of "synthetic" - share of synthetic rows)^2, averaged over folds.  0 = the
    discriminator learns nothing; 0.25 = it separates the tables perfectly (equal sizes).

    Features as SynthEval builds them: numbers standardised on the pooled rows, categories as
    their ordinal codes (``encoding="onehot"`` gives the discriminator one-hot categories instead).
    Returns ``pmse`` and ``accuracy`` (the discriminator's macro F1 on the held-out folds)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler
    schema = resolve_schema(schema, real)
    k_folds = check_positive_int(k_folds, "k_folds", 2)
    if encoding not in ("ordinal", "onehot"):
        raise ConfigError(f"encoding must be 'ordinal' or 'onehot', got {encoding!r}")
    r, s = prepare(real, synthetic, schema)
    if min(r.n, s.n) < k_folds:  # a fold's training part would lack a table: no discriminator to fit
        raise ConfigError(f"pmse: needs at least k_folds = {k_folds} rows in each table, got {r.n} real and "
                          f"{s.n} synthetic")
    x = np.concatenate([_design(r, _scaled(r, schema), schema, encoding),
                        _design(s, _scaled(s, schema), schema, encoding)])
    num = [i for i, c in enumerate(_design_names(schema, encoding)) if c[1] == "num"]
    if num:
        x[:, num] = StandardScaler().fit_transform(x[:, num])
    y = np.r_[np.ones(r.n), np.zeros(s.n)]  # 1 = real, as SynthEval
    res, acc = [], []
    for tr, te in StratifiedKFold(k_folds, shuffle=True, random_state=seed).split(x, y):
        clf = LogisticRegression(max_iter=max_iter, solver="liblinear", random_state=seed).fit(x[tr], y[tr])
        p_synth = clf.predict_proba(x[te])[:, 0]
        res.append(float(np.mean((p_synth - np.mean(y[te] == 0)) ** 2)))
        acc.append(float(f1_score(y[te], clf.predict(x[te]), average="macro")))
    return {"pmse": float(np.mean(res)), "pmse_se": float(np.std(res, ddof=1) / np.sqrt(len(res))),
            "accuracy": float(np.mean(acc))}


def _design_names(schema: Schema, encoding: str) -> list[tuple[str, str]]:
    out = []
    for c in schema.columns:
        if c.kind == "categorical":
            out += [(c.name, "cat")] * (1 if encoding == "ordinal" else len(c.categories) + 2)
        else:
            out.append((c.name, "num"))
            if c.missing:
                out.append((c.name, "flag"))
    return out


# ---------------------------------------------------------------------------------------
# principal components, confidence intervals, means
# ---------------------------------------------------------------------------------------

def _num_matrix(v: ColumnViews, schema: Schema) -> np.ndarray:
    sc = _scaled(v, schema)
    return np.stack([sc[n] for n in _num_cols(schema)], axis=1) if _num_cols(schema) else np.zeros((v.n, 0))


def _drop_unobserved(a: np.ndarray, b: np.ndarray, schema: Schema, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Leave out numeric columns with no value in either table, with a warning naming them: their
    means and components do not exist (numpy's empty-slice NaN turned the whole metric NaN).
    The loss of the column itself is what the marginal metrics (tvd_1way, wasserstein) show."""
    ok = (~np.isnan(a)).any(0) & (~np.isnan(b)).any(0)
    if not ok.all():
        import warnings
        gone = [n for n, k in zip(_num_cols(schema), ok) if not k]
        warnings.warn(f"{metric}: numeric column(s) {gone} have no value in one of the tables; left out",
                      UserWarning, stacklevel=3)
    return a[:, ok], b[:, ok]


def pca_difference(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> dict:
    """SynthEval's ``pca`` (the PCA metric of ``pcametric``): both tables' numeric columns are
    standardised (each table on its own), a full PCA is fitted to each, and

    * ``eigval_diff`` = d / (2d - 2) * sum |explained-variance ratios (real) - (synthetic)|
      (in [0, 1]);
    * ``angle_diff`` = the angle between the first principal axes, 2 angle / pi (sign-free, [0, 1]).

    Rows with a missing number are left out."""
    from sklearn.decomposition import PCA
    schema = resolve_schema(schema, real)
    r, s = prepare(real, synthetic, schema)
    a, b = _drop_unobserved(_num_matrix(r, schema), _num_matrix(s, schema), schema, "pca_difference")
    d = a.shape[1]
    if d < 2:
        raise ConfigError("pca_difference: needs at least two numeric columns")
    a, b = a[~np.isnan(a).any(1)], b[~np.isnan(b).any(1)]
    if len(a) < d or len(b) < d:  # a full PCA of d components needs d rows
        raise ConfigError(f"pca_difference: needs at least {d} rows without missing numbers in each table (one per "
                          f"numeric column), got {len(a)} real and {len(b)} synthetic")
    # max - min, not the sd: the sd of 60 equal numbers is 7e-16, not 0
    if ((np.ptp(a, 0) > 0) | (np.ptp(b, 0) > 0)).sum() < 2:  # one axis only: both PCAs agree, 0 for any release
        raise ConfigError("pca_difference: needs at least two numeric columns that vary (a constant column has no "
                          "principal axis)")
    for x, role in ((a, "real"), (b, "synthetic")):  # no variance at all: 0/0 ratios, NaN with no reason given
        if not (np.ptp(x, 0) > 0).any():
            raise ConfigError(f"pca_difference: the {role} table's numbers do not vary (every row the same); a PCA "
                              "needs some variance")

    def std(x):  # a constant column stays 0 (its sd of 7e-16 blew its rounding errors up to unit variance)
        sd = x.std(0)
        return (x - x.mean(0)) / np.where(np.ptp(x, 0) > 0, sd, 1.0)
    pa, pb = PCA(n_components=d).fit(std(a)), PCA(n_components=d).fit(std(b))
    factor = d / (d + d - 2)
    eig = factor * float(np.abs(pa.explained_variance_ratio_ - pb.explained_variance_ratio_).sum())
    cos = float(np.clip(abs(pa.components_[0] @ pb.components_[0]), 0, 1))
    return {"eigval_diff": eig, "angle_diff": float(np.arccos(cos) * 2 / np.pi)}


_Z = {80: 1.28, 90: 1.645, 95: 1.96, 98: 2.33, 99: 2.58}


def _sample_sd(x: np.ndarray) -> np.ndarray:
    """Per-column sample sd (ddof 1) ignoring NaN; NaN for a column of fewer than two values, without
    numpy's 'Degrees of freedom <= 0' RuntimeWarning (a 1-row release printed it on the command line)."""
    ok = (~np.isnan(x)).sum(0) > 1
    if len(x) < 2:
        return np.full(x.shape[1], np.nan)
    # the short columns filled with zeros, not sliced out: a slice changes the memory layout, and
    # with it numpy's summation order and the last bit of the sd
    return np.where(ok, np.nanstd(np.where(ok, x, 0.0), 0, ddof=1), np.nan)


def ci_overlap(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, confidence: int = 95) -> dict:
    """SynthEval's ``cio``: per numeric column, the intervals mean +- z sd (sample sd, z for
    ``confidence`` %) of the real and the synthetic values and their overlap
    J = max(0, (top / len_real + top / len_synth) / 2) with top = min(upper) - max(lower).
    Returns ``avg_overlap`` (1 = same interval), ``n_nonoverlap`` and ``frac_nonoverlap``."""
    schema = resolve_schema(schema, real)
    if confidence not in _Z:
        raise ConfigError(f"confidence must be one of {sorted(_Z)}, got {confidence!r}")
    r, s = prepare(real, synthetic, schema)
    a, b = _num_matrix(r, schema), _num_matrix(s, schema)
    if a.shape[1] == 0:
        raise ConfigError("ci_overlap: needs at least one numeric column")
    z = _Z[confidence]
    # a column with no value in a table has no interval there: scored as not overlapping (warned)
    obs = (~np.isnan(a)).any(0) & (~np.isnan(b)).any(0)
    if not obs.all():
        import warnings
        warnings.warn(f"ci_overlap: numeric column(s) {[n for n, k in zip(_num_cols(schema), obs) if not k]} have "
                      "no value in one of the tables; scored as not overlapping", UserWarning, stacklevel=2)
    a, b = np.where(obs, a, 0.0), np.where(obs, b, 0.0)
    ma, mb = np.nanmean(a, 0), np.nanmean(b, 0)
    sa, sb = _sample_sd(a), _sample_sd(b)
    ua, la, ub, lb = ma + z * sa, ma - z * sa, mb + z * sb, mb - z * sb
    top = np.minimum(ua, ub) - np.maximum(la, lb)
    with np.errstate(invalid="ignore", divide="ignore"):
        j = np.maximum(0.0, 0.5 * (top / (ua - la) + top / (ub - lb)))
    j = np.where(np.isnan(j), np.where((ma == mb), 1.0, 0.0), j)  # constant columns: equal or apart
    j = np.where(obs, j, 0.0)
    return {"avg_overlap": float(j.mean()), "n_nonoverlap": int((j == 0).sum()),
            "frac_nonoverlap": float((j == 0).mean()), "columns": pd.Series(j, index=_num_cols(schema))}


def dimensionwise_means(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> float:
    """SynthEval's ``dwm``: the mean over numeric columns of |mean(real) - mean(synthetic)| on
    [0, 1]-scaled values (lower is better)."""
    schema = resolve_schema(schema, real)
    r, s = prepare(real, synthetic, schema)
    a, b = _drop_unobserved(_num_matrix(r, schema), _num_matrix(s, schema), schema, "dimensionwise_means")
    if a.shape[1] == 0:
        raise ConfigError("dimensionwise_means: needs at least one numeric column with values in both tables")
    return float(np.mean(np.abs(np.nanmean(a, 0) - np.nanmean(b, 0))))


# ---------------------------------------------------------------------------------------
# mutual information and mixed correlation
# ---------------------------------------------------------------------------------------

def _labels(v: ColumnViews, schema: Schema) -> list[np.ndarray]:
    """Each column as integer labels: category codes, or a number's distinct values (NaN its own)."""
    out = []
    for c in schema.columns:
        if c.kind == "categorical":
            out.append(v.cat[c.name])
        else:
            x = v.num[c.name]
            key = np.where(np.isnan(x), np.inf, x)
            out.append(np.unique(key, return_inverse=True)[1])
    return out


def _entropy(counts: np.ndarray, n: int) -> float:
    p = counts[counts > 0] / n
    return float(-(p * np.log(p)).sum())


def _nmi(a: np.ndarray, b: np.ndarray) -> float:
    """Normalised mutual information with the arithmetic mean of the entropies (scikit-learn's
    ``normalized_mutual_info_score``), from one contingency count."""
    n = a.size
    ua, ia = np.unique(a, return_inverse=True)
    ub, ib = np.unique(b, return_inverse=True)
    if ua.size == ub.size == 1:
        return 1.0
    # the non-zero joint counts in code order, as bincount would give them without its
    # ua.size * ub.size table (gigabytes for two near-unique numeric columns)
    joint = np.unique(ia * ub.size + ib, return_counts=True)[1]
    ha, hb = _entropy(np.bincount(ia), n), _entropy(np.bincount(ib), n)
    mi = max(ha + hb - _entropy(joint, n), 0.0)
    den = 0.5 * (ha + hb)
    return float(mi / den) if den > 0 else 0.0


def mutual_information_matrix(v: ColumnViews, schema: Schema) -> np.ndarray:
    labs = _labels(v, schema)
    d = len(labs)
    m = np.eye(d)
    for i, j in itertools.combinations(range(d), 2):
        m[i, j] = m[j, i] = _nmi(labs[i], labs[j])
    for i in range(d):
        m[i, i] = _nmi(labs[i], labs[i])
    return m


def mutual_information_difference(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> float:
    """SynthEval's ``mi_diff``: the Frobenius norm of the difference between the real and the
    synthetic matrices of pairwise normalised mutual information (arithmetic normalisation).  As
    in SynthEval every distinct value is a label -- of a number too, so a near-unique numeric
    column has high NMI with everything; 0 = equal matrices."""
    schema = resolve_schema(schema, real)
    check_column_pairs(schema, "mutual_information_difference")
    r, s = prepare(real, synthetic, schema)
    return float(np.linalg.norm(mutual_information_matrix(r, schema) - mutual_information_matrix(s, schema)))


def _cramers_v2(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import chi2_contingency
    ua, ia = np.unique(a, return_inverse=True)
    ub, ib = np.unique(b, return_inverse=True)
    table = np.bincount(ia * ub.size + ib, minlength=ua.size * ub.size).reshape(ua.size, ub.size)
    if min(table.shape) < 2:
        return 0.0
    stat = float(chi2_contingency(table)[0])
    return stat / (table.sum() * (min(table.shape) - 1) + 1e-16)


def _eta2(cat: np.ndarray, x: np.ndarray) -> float:
    ok = ~np.isnan(x)
    cat, x = cat[ok], x[ok]
    if not varies(x):  # a constant number: 0, not rounding noise over 0 (a ZeroDivisionError for 2.718281828)
        return 0.0
    _, inv = np.unique(cat, return_inverse=True)
    counts = np.bincount(inv)
    means = np.bincount(inv, weights=x) / counts
    total = float(np.sum(counts * means) / counts.sum())
    num = float(np.sum(counts * (means - total) ** 2))
    den = float(np.sum((x - total) ** 2))
    return num / den if num > 0 else 0.0


def mixed_correlation(v: ColumnViews, schema: Schema) -> np.ndarray:
    """SynthEval's mixed correlation matrix: Pearson between numbers (pairwise complete), Cramér's
    V^2 = chi^2 / (n (min(r, c) - 1)) between categories (chi^2 of ``scipy.stats.chi2_contingency``,
    with Yates' correction on 2x2 tables) and the squared correlation ratio eta^2 between a category
    and a number; 1 on the diagonal.  (SynthEval reports V^2 and eta^2 under the names V and eta;
    :mod:`synthzoo.metrics.association` has the square roots.)"""
    return pairwise_matrix(v, schema, _cramers_v2, _eta2, _pearson_complete)


def _pearson_complete(x: np.ndarray, y: np.ndarray) -> float:
    ok = ~(np.isnan(x) | np.isnan(y))
    return float(np.corrcoef(x[ok], y[ok])[0, 1]) if varies(x[ok]) and varies(y[ok]) else np.nan


def correlation_difference(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> float:
    """SynthEval's ``corr_diff`` with ``mixed_corr=True``: the Frobenius norm of the difference
    between the real and synthetic mixed correlation matrices (:func:`mixed_correlation`);
    undefined entries (a constant column) are left out.  0 = equal matrices."""
    schema = resolve_schema(schema, real)
    check_column_pairs(schema, "correlation_difference")
    r, s = prepare(real, synthetic, schema)
    diff = mixed_correlation(r, schema) - mixed_correlation(s, schema)
    return float(np.sqrt(np.nansum(diff ** 2)))
