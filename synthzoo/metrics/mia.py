"""Membership-inference attacks on released synthetic tables, as DP-TLDM runs them (Zhu, Tang,
Pérez, van Dijk, Chen, "DP-TLDM: Differentially Private Tabular Latent Diffusion Model", 2024):
every attack gives each target record a score (higher = "was in the training rows"), and is
summarised by ROC AUC (0.5 = no signal) and the true-positive rate at 1 % and 0.1 % false
positives (the low-FPR regime of Carlini et al., "Membership inference attacks from first
principles", S&P 2022); the suite reports the maximum over attacks against the 0.5 baseline.

No-box attacks (one release, an attacker holding reference rows from the population):

* ``dcr_hamming`` / ``dcr_l2`` -- closest-distance attacks: minus the distance from the target to
  its closest synthetic record, Hamming on discretised records (numbers in 20 equal bins of the
  public range) or Euclidean on the schema's feature encoding (scaled numbers, one-hot categories);
* ``kde`` -- the density of the release at the target (Gaussian KDE);
* ``domias`` -- DOMIAS (van Breugel, Sun, Qian, van der Schaar, "Membership inference attacks
  against synthetic data through overfitting detection", AISTATS 2023): the density ratio
  p_synthetic(x) / p_reference(x), both Gaussian KDEs as in the paper;
* ``domias_1nn`` -- the same ratio with 1-nearest-neighbour densities under Gower distance.

The KDEs run on the first principal components (default 10) of the feature encoding, fitted on the
reference rows: a full-covariance KDE of one-hot columns is singular.

Shadow-model attacks (:func:`groundhog_attack`; any ``synthesizer_factory``, as the membership
disclosure score of :mod:`synthzoo.metrics.mds`): Groundhog (Stadler, Oprisanu, Troncoso,
"Synthetic Data -- Anonymisation Groundhog Day", USENIX Security 2022) trains, per target, a
random forest on features of synthetic tables released with and without the target -- ``naive``
(per-column mean, median, variance and category shares), ``hist`` (per-column histograms) and
``corr`` (pairwise correlations of the feature encoding) -- and the no-box scores are read on the
same shadow releases, so every attack is scored under one protocol.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.schema import Schema
from ._common import check_bool, check_frame, check_positive_int, resolve_schema, views
from .ml import encode_features
from .privacy import _Tables

NO_BOX_ATTACKS = ("dcr_hamming", "dcr_l2", "kde", "domias", "domias_1nn")
GROUNDHOG_FEATURES = ("naive", "hist", "corr")


def roc_summary(y: np.ndarray, score: np.ndarray, fprs=(0.01, 0.001)) -> dict:
    """AUC and the TPR at each false-positive rate in ``fprs`` (the largest TPR whose FPR does not
    exceed it; with fewer than 1/fpr negatives that FPR is not resolved and the value is NaN), plus
    the ROC curve (``fpr``, ``tpr``) for plots."""
    from sklearn.metrics import roc_auc_score, roc_curve
    y = np.asarray(y, dtype=bool)
    score = np.nan_to_num(np.asarray(score, dtype=float), nan=-np.inf, posinf=1e300, neginf=-1e300)
    if y.all() or not y.any():
        raise ConfigError("roc_summary: needs both members and non-members")
    fpr, tpr, _ = roc_curve(y, score)
    out = {"auc": float(roc_auc_score(y, score)), "fpr": fpr, "tpr": tpr}
    n_neg = int((~y).sum())
    for f in fprs:
        out[f"tpr@{f:g}"] = float(tpr[fpr <= f + 1e-12].max()) if n_neg * f >= 1 else float("nan")
    return out


# ---------------------------------------------------------------------------------------
# no-box scores
# ---------------------------------------------------------------------------------------

def _discrete(df: pd.DataFrame, schema: Schema, role: str, bins: int = 20) -> np.ndarray:
    v = views(df, schema, role)
    cols = []
    for c in schema.columns:
        if c.kind == "categorical":
            cols.append(v.cat[c.name])
        else:
            span = (c.upper - c.lower) or 1.0
            x = np.floor(np.clip((v.num[c.name] - c.lower) / span, 0, 1 - 1e-12) * bins)
            cols.append(np.where(np.isnan(x), bins, x).astype(np.int64))
    return np.stack(cols, axis=1)


def _min_hamming(q: np.ndarray, ref: np.ndarray, block: int = 512) -> np.ndarray:
    """Smallest Hamming distance from each row of ``q`` to the rows of ``ref`` (integer codes):
    columns minus the most matches, the matches counted by one product of one-hot blocks (exact:
    small integers in float32)."""
    d = q.shape[1]
    size = np.maximum(q.max(0, initial=0), ref.max(0, initial=0)) + 1
    off = np.r_[0, np.cumsum(size)[:-1]]

    def onehot(x):
        o = np.zeros((len(x), int(size.sum())), dtype=np.float32)
        o[np.arange(len(x))[:, None], x + off] = 1.0
        return o
    qo, ro = onehot(q), onehot(ref)
    out = np.empty(len(q))
    for s in range(0, len(q), block):
        out[s:s + block] = d - (qo[s:s + block] @ ro.T).max(1)
    return out


def _min_l2(q: np.ndarray, ref: np.ndarray) -> np.ndarray:
    from sklearn.neighbors import NearestNeighbors
    return NearestNeighbors(n_neighbors=1, algorithm="brute").fit(ref).kneighbors(q)[0][:, 0]


class _KDE:
    """Gaussian KDE (Scott's bandwidth, full covariance) on principal components fitted elsewhere."""

    def __init__(self, z: np.ndarray):
        from scipy.stats import gaussian_kde
        # a full covariance needs more rows than dimensions: a tiny table keeps its leading components
        self.k = min(z.shape[1], len(z) - 2)
        if self.k < 1:
            raise ConfigError(f"KDE membership attack: needs at least 3 rows to estimate a density on, got {len(z)}")
        try:
            self.kde = gaussian_kde(z[:, :self.k].T)
        except (ValueError, np.linalg.LinAlgError) as e:  # e.g. rows that coincide: singular covariance
            raise ConfigError(f"KDE membership attack: cannot fit a density to {len(z)} rows ({e})") from None

    def logpdf(self, z: np.ndarray) -> np.ndarray:
        return self.kde.logpdf(z[:, :self.k].T)


def _pca(reference: np.ndarray, k: int):
    from sklearn.decomposition import PCA
    k = max(1, min(k, reference.shape[1], len(reference) - 1))
    return PCA(n_components=k, random_state=0).fit(reference)


def no_box_scores(targets: pd.DataFrame, synthetic: pd.DataFrame, reference: pd.DataFrame, schema: Schema,
                  attacks=NO_BOX_ATTACKS, kde_components: int = 10, cache: dict | None = None) -> dict:
    """``{attack: scores}`` for each target row (higher = more likely a member).  ``reference``:
    real rows from the population the attacker holds (DOMIAS' reference set, the PCA basis)."""
    out = {}
    feats = None
    cache = {} if cache is None else cache
    for a in attacks:
        if a == "dcr_hamming":
            out[a] = -_min_hamming(_discrete(targets, schema, "targets"), _discrete(synthetic, schema, "synthetic"))
        elif a == "dcr_l2":
            out[a] = -_min_l2(encode_features(targets, schema, role="targets"),
                              encode_features(synthetic, schema, role="synthetic"))
        elif a in ("kde", "domias"):
            if feats is None:
                ref = encode_features(reference, schema, role="reference")
                pca = _pca(ref, kde_components)
                feats = (pca.transform(encode_features(targets, schema, role="targets")),
                         pca.transform(encode_features(synthetic, schema, role="synthetic")), pca.transform(ref))
                # a constant component (no spread in the release) makes the KDE singular: jitter it
                feats = tuple(f + 1e-9 * np.random.default_rng(0).standard_normal(f.shape) for f in feats)
            zt, zs, zr = feats
            if "p_s" not in cache:
                cache["p_s"] = _KDE(zs).logpdf(zt)
            if a == "kde":
                out[a] = cache["p_s"]
            else:
                if "p_r" not in cache:
                    cache["p_r"] = _KDE(zr).logpdf(zt)
                out[a] = cache["p_s"] - cache["p_r"]
        elif a == "domias_1nn":
            # named as the other attacks name them: the targets (half holdout rows) are no "train table"
            t = _Tables(targets, synthetic, reference, schema, labels={"train": "targets", "holdout": "reference"})
            d_s = t.nn("train", "synthetic", 1)[0][:, 0]
            d_r = t.nn("train", "holdout", 1)[0][:, 0]
            out[a] = np.log(d_r + 1e-6) - np.log(d_s + 1e-6)
        else:
            raise ConfigError(f"attacks: unknown no-box attack {a!r}; choose from {NO_BOX_ATTACKS}")
    return out


def membership_attacks(train: pd.DataFrame, synthetic: pd.DataFrame, holdout: pd.DataFrame, schema: Schema,
                       attacks=NO_BOX_ATTACKS, n_targets: int = 1000, seed: int = 0, kde_components: int = 10,
                       return_scores: bool = False):
    """The no-box attacks against one release: ``n_targets`` training rows (members) and as many
    holdout rows (non-members) are scored; the other half of the holdout is the attacker's
    reference sample.  Returns a frame, one row per attack -- ``attack``, ``auc``, ``tpr@0.01``,
    ``tpr@0.001`` -- plus a last row ``max`` (the maximum of each column over attacks; the 0.5 /
    0.01 / 0.001 of a blind guess is the baseline).  ``return_scores`` also returns
    ``{"y", "scores", "roc"}`` for plots."""
    schema = resolve_schema(schema, train)
    train = check_frame(train, schema, "train")
    synthetic = check_frame(synthetic, schema, "synthetic")
    holdout = check_frame(holdout, schema, "holdout")
    n_targets = check_positive_int(n_targets, "n_targets")
    return_scores = check_bool(return_scores, "return_scores")  # "no" is truthy: a tuple, not the frame
    rng = np.random.default_rng(seed)
    h = rng.permutation(len(holdout))
    half = len(h) // 2
    if half < 5:
        raise ConfigError("membership_attacks: the holdout needs at least 10 rows (reference and targets)")
    if len(train) < 10:  # the members are training rows: an AUC over one member is 0, 0.5 or 1, not a risk
        raise ConfigError(f"membership_attacks: the training table needs at least 10 rows (as the holdout), got "
                          f"{len(train)}")
    m = min(n_targets, half, len(train))
    ref = holdout.iloc[h[:half]].reset_index(drop=True)
    targets = pd.concat([train.iloc[rng.choice(len(train), m, replace=False)], holdout.iloc[h[half:half + m]]],
                        ignore_index=True)
    y = np.r_[np.ones(m, bool), np.zeros(m, bool)]
    scores = no_box_scores(targets, synthetic, ref, schema, attacks, kde_components)
    return _summarise(y, scores, return_scores)


def _summarise(y, scores: dict, return_scores: bool):
    rows, rocs = [], {}
    for a, s in scores.items():
        r = roc_summary(y, s)
        rocs[a] = (r["fpr"], r["tpr"])
        rows.append({"attack": a, "auc": r["auc"], "tpr@0.01": r["tpr@0.01"], "tpr@0.001": r["tpr@0.001"]})
    table = pd.DataFrame(rows)
    best = table.loc[table["auc"].idxmax(), "attack"]
    table = pd.concat([table, pd.DataFrame([{"attack": f"max ({best})", "auc": table["auc"].max(),
                                             "tpr@0.01": table["tpr@0.01"].max(),
                                             "tpr@0.001": table["tpr@0.001"].max()}])], ignore_index=True)
    return (table, {"y": y, "scores": scores, "roc": rocs}) if return_scores else table


# ---------------------------------------------------------------------------------------
# Groundhog: shadow releases with and without each target
# ---------------------------------------------------------------------------------------

def groundhog_features(df: pd.DataFrame, schema: Schema, kind: str, bins: int = 10) -> np.ndarray:
    """Stadler et al.'s feature sets of one synthetic table (a fixed-length vector)."""
    v = views(df, schema, "synthetic")
    out = []
    if kind in ("naive", "hist"):
        for c in schema.columns:
            if c.kind == "categorical":
                out.append(np.bincount(v.cat[c.name], minlength=len(c.categories) + 2) / v.n)
                continue
            span = (c.upper - c.lower) or 1.0
            x = (v.num[c.name] - c.lower) / span
            ok = x[~np.isnan(x)]
            if kind == "naive":
                out.append(np.array([ok.mean(), np.median(ok), ok.var()]) if ok.size else np.zeros(3))
                out.append(np.array([np.isnan(x).mean()]))
            else:
                out.append(np.histogram(np.clip(ok, 0, 1), bins=bins, range=(0, 1))[0] / v.n)
                out.append(np.array([np.isnan(x).mean()]))
        return np.concatenate(out)
    if kind == "corr":
        f = encode_features(df, schema, role="synthetic").astype(np.float64)
        sd = f.std(0)
        f = (f - f.mean(0)) / np.where(sd > 0, sd, 1.0)
        c = (f.T @ f) / len(f)
        return c[np.triu_indices(len(c), 1)]
    raise ConfigError(f"features: unknown Groundhog feature set {kind!r}; choose from {GROUNDHOG_FEATURES}")


def select_targets(data: pd.DataFrame, schema: Schema, n: int, how: str = "outliers", seed: int = 0) -> np.ndarray:
    """Row positions of ``n`` targets: ``"outliers"`` -- the rows farthest (mean Gower distance to
    their 5 nearest neighbours) from the rest, Stadler et al.'s vulnerable records; ``"random"``."""
    rng = np.random.default_rng(seed)
    if how == "random":
        return rng.choice(len(data), n, replace=False)
    if how != "outliers":
        raise ConfigError(f"how must be 'outliers' or 'random', got {how!r}")
    t = _Tables(data, data, None, schema)
    d, _ = t.nn("train", "train", 6)
    return np.argsort(-d[:, 1:].mean(1), kind="stable")[:n]


def groundhog_attack(population: pd.DataFrame, schema: Schema, synthesizer_factory: Callable, n_targets: int = 5,
                     n_shadow: int = 40, train_size: int = 1000, sample_size: int | None = None,
                     features=GROUNDHOG_FEATURES, no_box=NO_BOX_ATTACKS, eval_share: float = 0.5,
                     targets: str = "outliers", seed: int = 0, return_scores: bool = False, log=None):
    """The shadow-model experiment of Stadler et al. (and of TAPAS / DP-TLDM): ``n_shadow``
    training sets of ``train_size`` rows are drawn from ``population`` without the targets; each
    target is added to exactly half of them (so every shadow release serves every target), a
    synthesizer from ``synthesizer_factory(seed)`` is fitted on each and samples ``sample_size``
    rows (default ``train_size``).  The first ``1 - eval_share`` of the releases train one
    Groundhog random forest per target and feature set; on the rest every attack scores "target
    in the training set" -- Groundhog by its forest's probability, the no-box attacks by their
    score of the target against the release (reference rows: the population rows no shadow
    trains on).  Scores are pooled over targets.

    Returns the same table as :func:`membership_attacks` (attacks ``groundhog_naive`` ... and the
    no-box ones).  The cost is ``n_shadow`` fits of the synthesizer."""
    from sklearn.ensemble import RandomForestClassifier
    schema = resolve_schema(schema, population)
    pop = check_frame(population, schema, "population").reset_index(drop=True)
    n_shadow = check_positive_int(n_shadow, "n_shadow", 4)
    n_targets = check_positive_int(n_targets, "n_targets")
    train_size = check_positive_int(train_size, "train_size", 10)
    return_scores = check_bool(return_scores, "return_scores")
    if not callable(synthesizer_factory):
        raise ConfigError("synthesizer_factory must be a callable seed -> synthesizer with fit(df) and sample(n)")
    for f in features:
        if f not in GROUNDHOG_FEATURES:
            raise ConfigError(f"features: unknown Groundhog feature set {f!r}; choose from {GROUNDHOG_FEATURES}")
    rng = np.random.default_rng(seed)
    tgt = select_targets(pop, schema, n_targets, targets, seed)
    rest = np.setdiff1d(np.arange(len(pop)), tgt)
    if len(rest) < train_size + 10:
        raise ConfigError(f"groundhog_attack: the population needs more than train_size + targets rows "
                          f"({train_size} + {n_targets} + 10)")
    rng.shuffle(rest)
    n_ref = min(2000, (len(rest) - train_size) // 2)  # the attacker's reference rows, never in a shadow set
    reference = pop.iloc[rest[:n_ref]].reset_index(drop=True)
    base_pool = rest[n_ref:]
    n_eval = max(2, int(round(eval_share * n_shadow)))
    # each target in half of the training releases and in half of the evaluation releases: with one
    # balance over all releases, a target seen more often in training is seen less often in
    # evaluation, and a forest that predicts its training prior scores below 0.5 once pooled
    inside = np.concatenate([np.argsort(rng.random((k, n_targets)), axis=0) < k // 2
                             for k in (n_shadow - n_eval, n_eval)])
    feats = {f: [] for f in features}
    nobox = {a: np.zeros((n_shadow, n_targets)) for a in no_box}
    target_rows = pop.iloc[tgt].reset_index(drop=True)
    for k in range(n_shadow):
        rows = rng.choice(base_pool, train_size - int(inside[k].sum()), replace=False)
        train = pd.concat([pop.iloc[rows], pop.iloc[tgt[inside[k]]]], ignore_index=True)
        synth = synthesizer_factory(seed * 1000 + k)
        synth.fit(train)
        fake = check_frame(synth.sample(sample_size or train_size), schema, "shadow synthetic")
        for f in features:
            feats[f].append(groundhog_features(fake, schema, f))
        if k >= n_shadow - n_eval and no_box:
            sc = no_box_scores(target_rows, fake, reference, schema, no_box)
            for a in no_box:
                nobox[a][k] = sc[a]
        if log:
            log(f"shadow {k + 1}/{n_shadow} fitted")
    tr, ev = slice(0, n_shadow - n_eval), slice(n_shadow - n_eval, n_shadow)
    y = inside[ev].T.ravel()  # target-major
    scores = {}
    for f in features:
        x = np.asarray(feats[f])
        s = np.zeros((n_targets, n_eval))
        for j in range(n_targets):
            lab = inside[tr, j]
            if lab.all() or not lab.any():
                s[j] = 0.5
                continue
            clf = RandomForestClassifier(n_estimators=100, random_state=seed + j, n_jobs=1).fit(x[tr], lab)
            s[j] = clf.predict_proba(x[ev])[:, 1]
        scores[f"groundhog_{f}"] = s.ravel()
    for a in no_box:
        scores[a] = nobox[a][ev].T.ravel()
    res = _summarise(y, scores, return_scores)
    return res
