"""SynthEval's privacy metrics (Lautrup et al., "SynthEval: a framework for detailed utility and
privacy evaluation of tabular synthetic data", 2024; reference implementation ``syntheval`` 1.7):
nearest-neighbour adversarial accuracy, hitting rate, epsilon-identifiability, the classifier
membership-inference attack and attribute disclosure over every column.

Roles as in :mod:`synthzoo.metrics.privacy`: ``train`` (the rows the synthesizer saw),
``synthetic`` (the release) and, where a metric uses it, ``holdout`` (real rows it never saw).
Numbers are scaled with the schema's public bounds, categories are the schema's codes and
distances are Gower distances (:mod:`synthzoo.metrics.distance`), which SynthEval uses too;
missing values are handled (SynthEval needs frames without them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.schema import Schema
from ._common import check_positive_int, import_lazy_dependencies, views
from .distance import GowerSpace, take_rows
from .ml import encode_features
from .privacy import _Tables


def _tables(train, synthetic, holdout, schema) -> _Tables:
    return train if isinstance(train, _Tables) else _Tables(train, synthetic, holdout, schema)


def _need_two_rows(t: _Tables, metric: str, roles) -> None:
    """``ConfigError`` unless each table in ``roles`` holds two rows: a row's nearest *other* row in
    its own table is where these metrics start (one row has none: numpy's IndexError before)."""
    for role in roles:
        frame = getattr(t, role)
        if frame is not None and len(frame) < 2:
            raise ConfigError(f"{metric}: needs at least 2 rows in the {role} table (a row's nearest other row), "
                              f"got {len(frame)}")


# ---------------------------------------------------------------------------------------
# nearest-neighbour adversarial accuracy
# ---------------------------------------------------------------------------------------

def _aa(t: _Tables, real: str, synth: str = "synthetic", rows_r=None, rows_s=None) -> float:
    """AA = (mean[d(real -> synth) > d(real -> real)] + mean[d(synth -> real) > d(synth -> synth)]) / 2,
    self-distances left out (Yale et al., "Generation and evaluation of privacy preserving synthetic
    health data", Neurocomputing 2020)."""
    if rows_r is None:
        (d_rs, _), (d_sr, _) = t.nn_both(real, synth)
        d_rs, d_sr = d_rs[:, 0], d_sr[:, 0]
        d_rr = t.nn(real, real, 2)[0][:, 1]
        d_ss = t.nn(synth, synth, 2)[0][:, 1]
    else:  # a resample: fresh searches within the drawn rows
        sp = t.space
        er, es = take_rows(t.enc(real), rows_r), take_rows(t.enc(synth), rows_s)
        d_rs = sp.nearest(er, es, 1)[0][:, 0]
        d_rr = sp.nearest(er, er, 2)[0][:, 1]
        d_sr = sp.nearest(es, er, 1)[0][:, 0]
        d_ss = sp.nearest(es, es, 2)[0][:, 1]
    a, b = d_rs > d_rr, d_sr > d_ss
    return 0.5 * (float(a.mean()) + float(b.mean())), _aa_se(a, b)


def _aa_se(a: np.ndarray, b: np.ndarray) -> float:
    """Standard error of AA = (mean a + mean b) / 2 from its per-row indicators' variances (the
    rows' sampling uncertainty; neighbour sharing between rows is ignored), smoothed by +0.5/+1 so
    that an all-0 or all-1 side still has one."""
    var = 0.0
    for x in (a, b):
        p = (x.sum() + 0.5) / (len(x) + 1)
        var += p * (1 - p) / len(x)
    return 0.5 * float(np.sqrt(var))



def _aa_resampled(t: _Tables, real: str, n_resample: int, rng) -> tuple[float, float]:
    """SynthEval's protocol: when one table is at least twice the other's size, the larger one is
    subsampled to the smaller's size ``n_resample`` times and AA averaged; else one exact pass.

    The standard error is the rows' sampling error at the compared size (:func:`_aa_se`, its
    variance averaged over the resamples).  It used to be the spread of the resampled means alone:
    0 for one exact pass, so ``nnaa_privacy_loss`` reported a zero-width interval whenever the
    tables' sizes were within 2x, and shrinking towards 0 with more resamples of the same rows."""
    nr, ns = t.enc(real)["n"], t.enc("synthetic")["n"]
    if nr / ns < 2 and ns / nr < 2:
        return _aa(t, real)
    m = min(nr, ns)
    got = [_aa(t, real, rows_r=rng.choice(nr, m, replace=False) if nr > m else np.arange(nr),
               rows_s=rng.choice(ns, m, replace=False) if ns > m else np.arange(ns)) for _ in range(n_resample)]
    return float(np.mean([g[0] for g in got])), float(np.sqrt(np.mean([g[1] ** 2 for g in got])))


def nnaa(train, synthetic, schema: Schema, holdout=None, n_resample: int = 30, seed: int = 0) -> dict:
    """SynthEval's ``nnaa``: nearest-neighbour adversarial accuracy of the training rows against the
    release (0.5 = a release indistinguishable by nearest neighbours; 1 = far from the real rows;
    0 = the rows themselves) and, with ``holdout``, the privacy loss AA(holdout) - AA(train) (~0
    when the release is no closer to its training rows than to unseen rows).  ``nnaa_se`` and
    ``privacy_loss_se`` are the rows' sampling errors (the latter treats the two AAs as
    independent, which overstates it: they share the synthetic rows)."""
    t = _tables(train, synthetic, holdout, schema)
    n_resample = check_positive_int(n_resample, "n_resample")
    _need_two_rows(t, "nnaa", ("train", "synthetic", "holdout"))
    rng = np.random.default_rng(seed)
    avg, err = _aa_resampled(t, "train", n_resample, rng)
    out = {"nnaa": avg, "nnaa_se": err}
    if t.holdout is not None:
        h, herr = _aa_resampled(t, "holdout", n_resample, rng)
        out.update(nnaa_holdout=h, privacy_loss=h - avg, privacy_loss_se=float(np.hypot(err, herr)))
    return out


# ---------------------------------------------------------------------------------------
# hitting rate
# ---------------------------------------------------------------------------------------

def _hit_matrix(df: pd.DataFrame, schema: Schema, width: dict, role: str) -> np.ndarray:
    """Coordinates where "within the threshold on every number and equal on every category" is a
    Chebyshev distance <= 1: numbers in units of their threshold width, categories spaced 3 apart,
    a missing value far below every present one (so it only matches a missing value)."""
    v = views(df, schema, role)
    cols = []
    for c in schema.columns:
        if c.kind == "categorical":
            cols.append(3.0 * v.cat[c.name])
        else:
            x = (v.num[c.name] - c.lower) / width[c.name]
            span = (c.upper - c.lower) / width[c.name]
            cols.append(np.where(np.isnan(x), -10.0 - 2 * abs(span), x))
    return np.stack(cols, axis=1)


def hitting_rate(train, synthetic, schema: Schema, threshold: float = 1 / 30, scale: str = "observed") -> float:
    """SynthEval's ``hit_rate``: the share of training rows with a synthetic row that equals it on
    every category and lies within ``threshold`` x the column's range on every number (lower is
    better).  ``scale="observed"``: the range the training rows show, as SynthEval; ``"bounds"``:
    the schema's public range.  Exact, via a Chebyshev-distance k-d tree."""
    from scipy.spatial import cKDTree
    t = _tables(train, synthetic, None, schema)
    if not 0 < threshold < 1:
        raise ConfigError(f"threshold must lie in (0, 1), got {threshold!r}")
    if scale not in ("observed", "bounds"):
        raise ConfigError(f"scale must be 'observed' or 'bounds', got {scale!r}")
    v = views(t.train, t.schema, "train")
    width = {}
    for c in t.schema.columns:
        if c.kind != "categorical":
            x = v.num[c.name][~np.isnan(v.num[c.name])]
            span = (x.max() - x.min()) if scale == "observed" and x.size else (c.upper - c.lower)
            width[c.name] = threshold * span if span > 0 else 1e-12  # a constant column: equality
    a = _hit_matrix(t.train, t.schema, width, "train")
    b = _hit_matrix(t.synthetic, t.schema, width, "synthetic")
    d, _ = cKDTree(b).query(a, k=1, p=np.inf, distance_upper_bound=1.0 + 1e-9)
    return float(np.mean(np.isfinite(d)))


# ---------------------------------------------------------------------------------------
# epsilon-identifiability
# ---------------------------------------------------------------------------------------

def _entropy_weights(df: pd.DataFrame, schema: Schema) -> np.ndarray:
    """1 / H(column), with H the entropy (nats) of the category codes or of the rounded [0, 1]-scaled
    numbers, as SynthEval computes it (missing values left out)."""
    v = views(df, schema, "train")
    w = []
    for c in schema.columns:
        if c.kind == "categorical":
            x = v.cat[c.name]
        else:
            span = (c.upper - c.lower) or 1.0
            x = np.round((v.num[c.name] - c.lower) / span)
            x = x[~np.isnan(x)]
        _, counts = np.unique(x, return_counts=True)
        p = counts / counts.sum() if counts.size else np.ones(1)
        w.append(1.0 / (float(-(p * np.log(p)).sum()) + 1e-16))
    return np.asarray(w)


def epsilon_identifiability(train, synthetic, schema: Schema, holdout=None) -> dict:
    """SynthEval's ``eps_risk`` (Yoon, Drumright, van der Schaar, "Anonymization through data
    synthesis using generative adversarial networks (ADS-GAN)", IEEE JBHI 2020): the share of
    training rows whose nearest synthetic row is closer than their nearest other training row,
    under the Gower distance weighted by 1 / entropy of each column (rare-valued columns count
    more).  With ``holdout``, ``privacy_loss`` = eps(train) - eps(holdout), the holdout's share
    computed the same way (SynthEval divides the holdout's count by the number of *training*
    rows; here each share has its own denominator).  A verbatim copy of the training rows scores 1
    here, as the definition says; SynthEval 1.7 scores it 0, because its ``_knn_distance`` skips the
    first neighbour whenever the two arrays are equal (``np.array_equal``), so the synthetic rows'
    distances become the training rows' leave-one-out distances."""
    t = _tables(train, synthetic, holdout, schema)
    _need_two_rows(t, "epsilon_identifiability", ("train", "holdout"))
    space = GowerSpace(t.schema, weights=_entropy_weights(t.train, t.schema))

    # encodings and searches memoised on the tables (the weights are the training rows'), so a
    # release equal to the training rows searches the training rows once
    def enc(role: str) -> dict:
        return t.memo(("eps-encoding", "train", role), lambda: space.encode(getattr(t, role), role))

    def nearest(query: str, ref: str):
        if t._same(query, ref):  # a table against itself: the upper triangle of its distances
            return t.memo(("eps-self", "train", query), lambda: space.nearest_self(enc(query)))[0]
        return t.memo(("eps-nearest", "train", query, ref), lambda: space.nearest(enc(query), enc(ref), 2))[0]

    def eps(role: str) -> float:
        d_in = nearest(role, role)[:, 1]
        d_ext = nearest(role, "synthetic")[:, 0]
        return float(np.mean(d_ext < d_in))
    out = {"eps_risk": eps("train")}
    if t.holdout is not None:
        out["eps_risk_holdout"] = eps("holdout")
        out["privacy_loss"] = out["eps_risk"] - out["eps_risk_holdout"]
    return out


# ---------------------------------------------------------------------------------------
# SynthEval's classifier membership-inference attack
# ---------------------------------------------------------------------------------------

def _classifier(model: str, seed: int, n_jobs: int = 1):
    if model == "lgbm":
        import lightgbm as lgb
        return lgb.LGBMClassifier(verbosity=-1, n_jobs=n_jobs, random_state=seed)
    if model == "rf":
        from sklearn.ensemble import RandomForestClassifier
        return RandomForestClassifier(n_estimators=100, n_jobs=n_jobs, random_state=seed)
    raise ConfigError(f"model must be 'lgbm' or 'rf', got {model!r}")


def mia_classifier(train, synthetic, holdout, schema: Schema, n_iter: int = 5, model: str = "lgbm",
                   seed: int = 0) -> dict:
    """SynthEval's ``mia``: a classifier learns to tell synthetic rows (label 1) from three quarters
    of the holdout (label 0) and is then asked which of an equal number of training rows and the
    remaining holdout rows are "synthetic-like"; precision, recall and macro F1 of calling training
    rows members, averaged over ``n_iter`` draws.  A release that leaks nothing gives macro F1 ~0.5.

    ``model="lgbm"`` (LightGBM with its defaults) is what ``syntheval`` 1.7 runs; ``"rf"`` is the
    random forest of the SynthEval paper.  Features are the schema encoding of
    :func:`synthzoo.metrics.ml.encode_features` (SynthEval: one-hot with the first level dropped,
    the same information for a tree model)."""
    from sklearn.metrics import f1_score, precision_score, recall_score
    t = _tables(train, synthetic, holdout, schema)
    t.need_holdout("mia_classifier")
    n_iter = check_positive_int(n_iter, "n_iter")
    rng = np.random.default_rng(seed)
    xs = encode_features(t.synthetic, t.schema, role="synthetic")
    xh = encode_features(t.holdout, t.schema, role="holdout")
    xr = encode_features(t.train, t.schema, role="train")
    if len(xh) < 8:
        raise ConfigError("mia_classifier: needs at least 8 holdout rows")
    if len(xr) < 8:  # the members it is asked about are training rows: as many as the holdout needs
        raise ConfigError(f"mia_classifier: needs at least 8 training rows, got {len(xr)}")
    prec, rec, f1 = [], [], []
    for it in range(n_iter):
        perm = rng.permutation(len(xh))
        n_test = int(np.ceil(0.25 * len(xh)))
        h_test, h_train = xh[perm[:n_test]], xh[perm[n_test:]]
        s = xs[rng.choice(len(xs), len(h_train), replace=len(xs) < len(h_train))]
        x = np.concatenate([s, h_train])
        y = np.r_[np.ones(len(s)), np.zeros(len(h_train))]
        clf = _classifier(model, seed + it).fit(x, y)
        if len(xr) < len(h_test):
            r, h = xr, h_test[rng.choice(len(h_test), len(xr), replace=False)]
        else:
            r, h = xr[rng.choice(len(xr), len(h_test), replace=False)], h_test
        yt = np.r_[np.ones(len(r)), np.zeros(len(h))]
        pred = clf.predict(np.concatenate([r, h]))
        prec.append(precision_score(yt, pred, zero_division=0))
        rec.append(recall_score(yt, pred, zero_division=0))
        f1.append(f1_score(yt, pred, average="macro", zero_division=0))
    return {"precision": float(np.mean(prec)), "recall": float(np.mean(rec)), "f1": float(np.mean(f1)),
            "f1_se": float(np.std(f1, ddof=1) / np.sqrt(n_iter)) if n_iter > 1 else float("nan")}


# ---------------------------------------------------------------------------------------
# attribute disclosure over every column
# ---------------------------------------------------------------------------------------

def _ordinal_matrix(df: pd.DataFrame, schema: Schema, role: str) -> np.ndarray:
    """Category codes and [0, 1]-scaled numbers (NaN kept), one column each, as SynthEval feeds its
    random forests."""
    v = views(df, schema, role)
    cols = []
    for c in schema.columns:
        if c.kind == "categorical":
            cols.append(v.cat[c.name].astype(float))
        else:
            span = (c.upper - c.lower) or 1.0
            cols.append((v.num[c.name] - c.lower) / span)
    return np.stack(cols, axis=1)


def attribute_disclosure(train, synthetic, schema: Schema, holdout=None, columns=None, threshold: float = 1 / 30,
                         n_estimators: int = 100, max_rows: int | None = None, seed: int = 0, n_jobs: int = 1) -> dict:
    """SynthEval's ``att_discl`` over every column (or ``columns``): for each sensitive column a
    random forest trained on the release predicts it from the other columns of the real rows
    (training and holdout rows together, as SynthEval does); a category counts as disclosed when
    predicted exactly, a number when within ``threshold`` x its public range.  Returns the mean
    over columns of ``accuracy`` and of macro ``precision``/``recall``/``f1`` (each computed as
    SynthEval does: for a number, of the "disclosed" indicator against all-ones), and ``columns``
    (a frame per column).  ``max_rows`` caps the synthetic rows a forest trains on; ``n_jobs``
    threads fit and apply each forest (scikit-learn's ``n_jobs``)."""
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    from sklearn.metrics import f1_score, precision_score, recall_score
    t = _tables(train, synthetic, holdout, schema)
    schema = t.schema
    if len(schema.columns) < 2:  # each column is predicted from the others (scikit-learn: "0 feature(s)")
        raise ConfigError("attribute_disclosure: needs at least two columns (each is predicted from the others)")
    cols = list(schema.names) if columns is None else list(columns)
    bad = [c for c in cols if c not in schema]
    if bad:
        raise ConfigError(f"columns: {bad} are not schema columns")
    n_estimators = check_positive_int(n_estimators, "n_estimators")
    if n_jobs not in (None, 1):  # the forests' worker threads must not be the first to import a library
        import_lazy_dependencies()
    rng = np.random.default_rng(seed)
    xs = _ordinal_matrix(t.synthetic, schema, "synthetic")
    if max_rows is not None and len(xs) > max_rows:
        xs = xs[rng.choice(len(xs), check_positive_int(max_rows, "max_rows"), replace=False)]
    real = [_ordinal_matrix(t.train, schema, "train")]
    if t.holdout is not None:
        real.append(_ordinal_matrix(t.holdout, schema, "holdout"))
    xr = np.concatenate(real)
    rows = []
    for name in cols:
        j = schema.names.index(name)
        keep = [i for i in range(xs.shape[1]) if i != j]
        ys, yr = xs[:, j], xr[:, j]
        if schema[name].kind == "categorical":
            clf = RandomForestClassifier(n_estimators=n_estimators, random_state=seed, n_jobs=n_jobs)
            clf.fit(xs[:, keep], ys)
            pred = clf.predict(xr[:, keep])
            truth = yr
        else:
            ok_s, ok_r = ~np.isnan(ys), ~np.isnan(yr)
            pred = np.zeros(len(yr))
            if ok_s.any() and ok_r.any():
                reg = RandomForestRegressor(n_estimators=n_estimators, random_state=seed, n_jobs=n_jobs)
                reg.fit(xs[ok_s][:, keep], ys[ok_s])
                pred[ok_r] = (np.abs(reg.predict(xr[ok_r][:, keep]) - yr[ok_r]) <= threshold).astype(float)
            elif not ok_s.any():  # a release without a value of the column discloses none of it
                import warnings
                warnings.warn(f"attribute_disclosure: column {name!r} has no value in the synthetic table; "
                              "nothing of it can be disclosed (scored as never disclosed)", UserWarning, stacklevel=2)
            truth = np.ones(len(yr))
        rows.append((name, float(np.mean(pred == truth)),
                     float(precision_score(truth, pred, average="macro", zero_division=0)),
                     float(recall_score(truth, pred, average="macro", zero_division=0)),
                     float(f1_score(truth, pred, average="macro", zero_division=0))))
    per = pd.DataFrame(rows, columns=["column", "accuracy", "precision", "recall", "f1"])
    return {"accuracy": float(per["accuracy"].mean()), "precision": float(per["precision"].mean()),
            "recall": float(per["recall"].mean()), "f1": float(per["f1"].mean()), "columns": per}
