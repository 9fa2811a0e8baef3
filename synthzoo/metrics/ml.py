"""Machine-learning efficiency and affinity: train on synthetic rows, test on real held-out rows.

* **ML efficiency** (Xu et al., CTGAN; used by Du & Li and Chen et al.): a model trained on the
  synthetic table is scored on real held-out rows — macro F1 and ROC AUC for classification,
  RMSE and R² for regression.
* **ML affinity** (MLA, Du & Li, "Systematic assessment of tabular data synthesis"): the relative
  gap between that score and the score of the *same* model trained on the real training rows,
  ``(real - synthetic) / |real|`` for higher-is-better scores and ``(synthetic - real) / real``
  for RMSE, averaged over evaluators (0 = as useful as the real data; lower is better).

Evaluators have fixed, sensible hyperparameters (no tuning on the test rows): ``linear``
(logistic / ridge regression), ``rf`` (random forest), ``gbm`` (LightGBM), ``mlp`` (multilayer
perceptron), ``xgboost`` (XGBoost, from the ``xgboost-cpu`` wheel) and ``catboost`` (CatBoost,
optional: ``pip install synthzoo[catboost]``).  Features are encoded from the *schema* alone — numeric columns min-max scaled by
their public bounds with a missing indicator, categorical columns one-hot over the schema's
categories (+ missing) — so the encoding never depends on which table is being scored.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..core.errors import ConfigError, quiet_library_warnings
from ..core.schema import TASKS, Schema, task_mismatch
from ..core.schema import task_kind as _task_kind
from ._common import OnceCache, check_frames, count, resolve_schema, views

EVALUATORS = ("linear", "rf", "gbm", "mlp", "xgboost", "catboost")
DEFAULT_EVALUATORS = ("linear", "rf", "gbm", "mlp")


def task_kind(task, name: str = "task") -> str:
    """``"classification"`` or ``"regression"`` for one of :data:`~synthzoo.core.schema.TASKS` (any
    letter case), else ``ConfigError`` naming ``name`` (a schema built in Python skips the check its
    JSON reader makes)."""
    kind = _task_kind(task)
    if kind is None:
        raise ConfigError(f"{name}: unknown task {task!r}; choose from {sorted(TASKS)}")
    return kind


def _task(schema: Schema, target: str | None, task: str | None) -> tuple[str, str]:
    target = target or schema.meta.get("target")
    if target is None:
        raise ConfigError("target: the schema names no prediction target; pass target=<column>")
    if target not in schema:
        raise ConfigError(f"target: {target!r} is not a schema column")
    col = schema[target]
    if len(schema.columns) < 2:  # no feature: numpy's "need at least one array to concatenate" said it
        raise ConfigError(f"target {target!r}: the schema has no other column to predict it from")
    if task is not None:
        task = task_kind(task)
    elif schema.meta.get("task") is not None:
        task = task_kind(schema.meta["task"], "the schema's \"task\"")
    else:
        task = "classification" if col.kind == "categorical" else "regression"
    why = task_mismatch(task, col)
    if why:
        raise ConfigError(f"target {target!r} is {col.kind}: {why}")
    return target, task


def encode_features(df: pd.DataFrame, schema: Schema, exclude: str | None = None, role: str = "table") -> np.ndarray:
    """Schema-derived feature matrix (float32): scaled numerics (+ missing indicator, missing
    imputed at 0) and one-hot categoricals (+ a missing slot; a value outside the schema is
    all-zero)."""
    v = views(df, schema, role)
    blocks = []
    for col in schema.columns:
        if col.name == exclude:
            continue
        if col.kind == "categorical":
            k = len(col.categories) + (1 if col.missing else 0)
            codes = v.cat[col.name]
            oh = np.zeros((v.n, k), dtype=np.float32)
            ok = codes < k
            oh[np.nonzero(ok)[0], codes[ok]] = 1.0
            blocks.append(oh)
        else:
            x = v.num[col.name]
            span = col.upper - col.lower
            z = (x - col.lower) / span if span > 0 else np.zeros_like(x)
            na = np.isnan(z)
            blocks.append(np.where(na, 0.0, z).astype(np.float32)[:, None])
            if col.missing:
                blocks.append(na.astype(np.float32)[:, None])
    return np.concatenate(blocks, axis=1)


def _target(df: pd.DataFrame, schema: Schema, target: str, task: str, role: str) -> np.ndarray:
    """The target's class codes (a missing class is a class of its own) or its numbers (NaN where missing)."""
    v = views(df[[target]], Schema([schema[target]]), role)
    return v.cat[target] if task == "classification" else v.num[target]


def _scored_rows(df: pd.DataFrame, schema: Schema, target: str, task: str, role: str):
    """``(X, y)`` of one table for :func:`ml_scores`.  A regression model can neither learn from nor be
    scored on a target that is not there: rows lacking it are left out, and a warning names the table
    and how many (a table where every row lacks it is an error)."""
    x, y = encode_features(df, schema, target, role), _target(df, schema, target, task, role)
    if task == "regression":
        na = np.isnan(y)
        if na.all():
            raise ConfigError(f"{role} table: every row lacks the regression target {target!r}")
        if na.any():
            warnings.warn(f"{role} table: {int(na.sum()):,} of its {count(len(y), 'row')} lack the regression target "
                          f"{target!r}; the ML scores leave them out", UserWarning, stacklevel=3)
            x, y = x[~na], y[~na]
    return x, y


def _make_model(name: str, task: str, seed: int, n_rows: int | None = None):
    clf = task == "classification"
    if name == "linear":
        from sklearn.linear_model import LogisticRegression, Ridge
        return LogisticRegression(max_iter=300, C=1.0) if clf else Ridge(alpha=1.0)
    if name == "rf":
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
        # one thread: with several, a forest sums its trees' probabilities in the order they finish, so
        # under load the last digits of the scores varied between runs (evaluate runs fits side by side)
        kw = dict(n_estimators=50, max_depth=14, min_samples_leaf=2, max_features="sqrt", n_jobs=1, random_state=seed)
        return RandomForestClassifier(**kw) if clf else RandomForestRegressor(**kw)
    if name == "gbm":
        import lightgbm as lgb
        kw = dict(n_estimators=200, learning_rate=0.05, num_leaves=31, min_child_samples=20, subsample=0.8,
                  subsample_freq=1, colsample_bytree=0.8, n_jobs=1, random_state=seed, verbose=-1)
        return lgb.LGBMClassifier(**kw) if clf else lgb.LGBMRegressor(**kw)
    if name == "mlp":
        from sklearn.neural_network import MLPClassifier, MLPRegressor
        # early stopping holds out 10 % of the rows, stratified: a table of a few dozen rows has no
        # such split (sklearn: "test_size = 1 should be greater or equal to the number of classes")
        kw = dict(hidden_layer_sizes=(64, 32), alpha=1e-4, batch_size=256, learning_rate_init=1e-3, max_iter=30,
                  early_stopping=n_rows is None or n_rows >= 50, n_iter_no_change=4, random_state=seed)
        return MLPClassifier(**kw) if clf else MLPRegressor(**kw)
    if name == "xgboost":
        try:
            import xgboost as xgb
        except ImportError:  # pragma: no cover - xgboost-cpu is a dependency
            raise ConfigError("evaluator 'xgboost' needs the xgboost-cpu package (pip install xgboost-cpu)") from None
        kw = dict(n_estimators=200, learning_rate=0.1, max_depth=6, subsample=0.8, colsample_bytree=0.8,
                  tree_method="hist", n_jobs=1, random_state=seed, verbosity=0)
        return xgb.XGBClassifier(**kw) if clf else xgb.XGBRegressor(**kw)
    if name == "catboost":
        try:
            import catboost
        except ImportError:
            raise ConfigError("evaluator 'catboost' needs the catboost package (pip install 'synthzoo[catboost]')") \
                from None
        kw = dict(iterations=300, learning_rate=0.1, depth=6, thread_count=1, random_seed=seed, verbose=False,
                  allow_writing_files=False)
        return catboost.CatBoostClassifier(**kw) if clf else catboost.CatBoostRegressor(**kw)
    raise ConfigError(f"evaluators: unknown evaluator {name!r}; choose from {EVALUATORS}")


def _scores(model, X, y, task: str, n_classes: int, classes_seen: np.ndarray | None, y_scale: float) -> dict:
    from sklearn.metrics import f1_score, mean_squared_error, r2_score, roc_auc_score
    if task == "regression":
        pred = model.predict(X) * y_scale
        return {"rmse": float(np.sqrt(mean_squared_error(y, pred))), "r2": float(r2_score(y, pred))}
    proba_seen = model.predict_proba(X)
    proba = np.zeros((len(X), n_classes))
    proba[:, classes_seen] = proba_seen
    pred = proba.argmax(1)
    present = np.unique(y)
    f1 = float(f1_score(y, pred, average="macro", labels=present))
    # AUC over the classes the test rows hold, probabilities renormalised over them (a
    # model may put mass on classes the test rows lack, or none on some they hold)
    p = proba[:, present]
    tot = p.sum(1, keepdims=True)
    p = np.where(tot > 0, p / np.where(tot > 0, tot, 1), 1.0 / present.size)
    if present.size < 2:
        auc = float("nan")
    elif present.size == 2:
        auc = float(roc_auc_score(y == present[1], p[:, 1]))
    else:
        auc = float(roc_auc_score(np.searchsorted(present, y), p, multi_class="ovr", average="macro"))
    return {"f1": f1, "auc": auc}


class _Constant:
    """Predicts the one class a degenerate synthetic table holds (or the mean target)."""

    def __init__(self, value, task):
        self.value, self.task = value, task

    def predict(self, X):
        return np.full(len(X), self.value, dtype=float)

    def predict_proba(self, X):
        return np.ones((len(X), 1))


def _fit_score(name, task, X, y, Xt, yt, n_classes, seed) -> dict:
    y_scale = 1.0
    if task == "classification":
        classes = np.unique(y)
        if classes.size < 2:  # said by ml_scores, naming the table
            return _scores(_Constant(classes[0], task), Xt, yt, task, n_classes, classes, 1.0)
        ymap = np.searchsorted(classes, y)
        model = _make_model(name, task, seed, len(y))
        with quiet_library_warnings():  # convergence chatter from fixed iteration budgets
            model.fit(X, ymap)
        return _scores(model, Xt, yt, task, n_classes, classes, 1.0)
    y_scale = float(np.std(y)) or 1.0  # scale the target so MLP/ridge see O(1) values
    model = _make_model(name, task, seed, len(y))
    with quiet_library_warnings():
        model.fit(X, y / y_scale)
    return _scores(model, Xt, yt, task, n_classes, None, y_scale)


#: scores of fitted models by what they saw: (training features, labels, test features, labels,
#: evaluator, task, seed).  The evaluators are deterministic given their seed, so the same inputs
#: give the same scores: the models trained on the real rows are fitted once per split, and a
#: release equal to the training rows (the SELF baseline) reuses them instead of refitting.
_FIT_CACHE = OnceCache(max_items=1024)


def _digest(*arrays) -> bytes:
    import hashlib
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.data)
    return h.digest()


def _fit_score_cached(name, task, X, y, Xt, yt, n_classes, seed, test_key: bytes) -> dict:
    key = (_digest(X, y), test_key, name, task, n_classes, seed)
    return _FIT_CACHE.get(key, lambda: _fit_score(name, task, X, y, Xt, yt, n_classes, seed))


def ml_scores(train: pd.DataFrame, synthetic: pd.DataFrame, test: pd.DataFrame, schema: Schema,
              evaluators=DEFAULT_EVALUATORS, target: str | None = None, task: str | None = None,
              seed: int = 0, max_train_rows: int | None = 50_000) -> pd.DataFrame:
    """ML efficiency and affinity per evaluator and score.

    Returns a frame with columns ``evaluator``, ``score`` (f1/auc or rmse/r2), ``synthetic``
    (trained on ``synthetic``), ``real`` (trained on ``train``), ``gap`` (relative gap, MLA).
    Rows lacking a regression target are left out of their table, with a warning saying how many.
    Scores are cached for the process by the exact rows a model saw (see ``_FIT_CACHE``), so
    scoring several synthetic tables (or the baselines) against one split trains the real-row
    models once, and a release identical to the training rows costs no fit.
    """
    schema = resolve_schema(schema, train)
    frames = check_frames(schema, train=train, synthetic=synthetic, test=test)
    target, task = _task(schema, target, task)
    evaluators = tuple(evaluators)
    for e in evaluators:
        if e not in EVALUATORS:
            raise ConfigError(f"evaluators: unknown evaluator {e!r}; choose from {EVALUATORS}")
    # class codes: categories 0..k-1, missing k, out-of-schema k+1 (see category_codes)
    n_classes = len(schema[target].categories) + 2 if task == "classification" else 0
    rng = np.random.default_rng(seed)

    def cap(df):
        if max_train_rows is not None and len(df) > max_train_rows:
            return df.iloc[np.sort(rng.choice(len(df), max_train_rows, replace=False))]
        return df

    tr, sy, te = cap(frames["train"]), cap(frames["synthetic"]), frames["test"]
    Xt, yt = _scored_rows(te, schema, target, task, "test")
    Xs, ys = _scored_rows(sy, schema, target, task, "synthetic")
    Xr, yr = _scored_rows(tr, schema, target, task, "train")
    test_key = _digest(Xt, yt)
    # said here, naming the table, not in the cached fit: "training table" read as the real rows when it
    # was the release, and a fit served from the cache said nothing
    for role, y in (("synthetic", ys), ("train", yr)):
        if task == "classification" and np.unique(y).size < 2:
            warnings.warn(f"{role} table holds a single target class; the evaluators trained on it predict it always",
                          UserWarning, stacklevel=2)
    # the release's models first, then the real rows': jobs scoring several releases side by side
    # reach the shared real-row models after their own, at different times, and one fits each while
    # the others are still busy with theirs (instead of waiting for it)
    syn = {name: _fit_score_cached(name, task, Xs, ys, Xt, yt, n_classes, seed, test_key) for name in evaluators}
    rows = []
    for name in evaluators:
        syn_sc = syn[name]
        real_sc = _fit_score_cached(name, task, Xr, yr, Xt, yt, n_classes, seed, test_key)
        for score, rv in real_sc.items():
            sv = syn_sc[score]
            if score == "rmse":
                gap = (sv - rv) / rv if rv > 0 else 0.0
            else:
                gap = (rv - sv) / abs(rv) if rv != 0 else 0.0
            rows.append((name, score, sv, rv, gap))
    return pd.DataFrame(rows, columns=["evaluator", "score", "synthetic", "real", "gap"])


def ml_efficiency(train, synthetic, test, schema, evaluators=DEFAULT_EVALUATORS, score: str | None = None,
                  **kw) -> float:
    """Mean over evaluators of one train-on-synthetic, test-on-real score (``f1``/``auc`` for
    classification, default ``f1``; ``rmse``/``r2`` for regression, default ``r2``)."""
    df = ml_scores(train, synthetic, test, schema, evaluators, **kw)
    score = score or ("f1" if "f1" in set(df["score"]) else "r2")
    if score not in set(df["score"]):
        raise ConfigError(f"score: {score!r} is not computed for this task; choose from {sorted(set(df['score']))}")
    return float(df.loc[df["score"] == score, "synthetic"].mean())


def ml_affinity(train, synthetic, test, schema, evaluators=DEFAULT_EVALUATORS, **kw) -> float:
    """MLA (Du & Li): mean relative gap to the same models trained on the real rows (lower is better)."""
    df = ml_scores(train, synthetic, test, schema, evaluators, **kw)
    return float(df["gap"].mean())


# ---------------------------------------------------------------------------------------
# SynthEval's cross-validated utility and AUROC difference
# ---------------------------------------------------------------------------------------

def ml_cross_validated(train: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, test: pd.DataFrame | None = None,
                       evaluators=("rf", "gbm", "linear", "xgboost"), k_folds: int = 5, average: str = "weighted",
                       target: str | None = None, seed: int = 42, max_rows: int | None = 20_000) -> pd.DataFrame:
    """Cross-validated train-on-real / train-on-synthetic F1, as SynthEval's ``cls_acc`` runs it
    (Lautrup et al. 2024): the real rows (at most ``max_rows``, drawn without replacement) and a
    stratified draw of as many synthetic rows (without replacement unless the release is smaller)
    are split into ``k_folds`` stratified folds; in each fold one model is trained on the real
    training part, one on the synthetic training part, and both are scored on the real held-out
    part (``average`` F1, SynthEval's default ``"weighted"``).  Unlike SynthEval, the real rows are
    not resampled with replacement, which would put copies of training rows in the held-out folds
    and bias ``diff`` downwards.  With ``test``, both are also trained on the whole tables and
    scored on it.

    Returns one row per evaluator: ``trtr`` and ``tstr`` (mean F1 over folds), their standard
    errors, ``diff`` = tstr - trtr (SynthEval's sign; 0 = as useful as the real rows) and, with
    ``test``, ``trtr_test``, ``tstr_test``, ``diff_test``."""
    from sklearn.metrics import f1_score
    from sklearn.model_selection import StratifiedKFold
    schema = resolve_schema(schema, train)
    frames = check_frames(schema, train=train, synthetic=synthetic, test=test)
    target, task = _task(schema, target, None)
    if task != "classification":
        raise ConfigError("ml_cross_validated: SynthEval's cross-validated F1 needs a classification target")
    rng = np.random.default_rng(seed)
    xr = encode_features(frames["train"], schema, target, "train")
    yr = _target(frames["train"], schema, target, task, "train")
    xs = encode_features(frames["synthetic"], schema, target, "synthetic")
    ys = _target(frames["synthetic"], schema, target, task, "synthetic")
    n = len(yr) if max_rows is None else min(len(yr), int(max_rows))

    def resample(x, y, replace):  # stratified (sklearn.utils.resample)
        from sklearn.utils import resample as rs
        return rs(x, y, n_samples=n, replace=replace, stratify=y if np.unique(y).size > 1 else None,
                  random_state=int(rng.integers(2**31)))
    # the real rows are never bootstrapped: a copy of a training-fold row in the held-out fold
    # inflates train-on-real (a forest recalls it), so a fresh sample of the generator itself
    # scored diff -.1 to -.3 where it should score ~0.  The synthetic rows are drawn to the real
    # count (with replacement only when fewer): both models train on as many rows, and a synthetic
    # duplicate never reaches the real held-out fold.
    xr2, yr2 = (xr, yr) if n == len(yr) else resample(xr, yr, False)
    xs2, ys2 = resample(xs, ys, len(ys) < n)
    for role, y_ in (("real", yr2), ("synthetic", ys2)):  # sklearn's ValueError named neither table nor target
        sizes = np.unique(y_, return_counts=True)[1]
        if sizes.max() < k_folds:
            raise ConfigError(f"ml_cross_validated: {k_folds}-fold stratified cross-validation needs at least "
                              f"{k_folds} {role} rows of one class of {target!r}; of the "
                              f"{count(len(y_), role + ' row')} scored, at most {sizes.max()} share a class")
        if sizes.min() < k_folds:  # said here, naming the table and target (sklearn's own warning named neither)
            warnings.warn(f"ml_cross_validated: a class of {target!r} has only "
                          f"{count(int(sizes.min()), role + ' row')}, fewer than the {k_folds} folds: some folds hold "
                          "none of it", UserWarning, stacklevel=2)
    kf = StratifiedKFold(k_folds, shuffle=True, random_state=seed)
    with quiet_library_warnings():
        folds = list(zip(kf.split(xr2, yr2), kf.split(xs2, ys2)))
    # every synthetic fold first, the real ones after (cached and shared between releases; see ml_scores)
    tstr = {(name, f): _fit_f1(name, xs2[tr_s], ys2[tr_s], xr2[te_r], yr2[te_r], average, seed)
            for name in evaluators for f, ((_, te_r), (tr_s, _)) in enumerate(folds)}
    rows = []
    for name in evaluators:
        res = np.asarray([[_fit_f1(name, xr2[tr_r], yr2[tr_r], xr2[te_r], yr2[te_r], average, seed), tstr[name, f]]
                          for f, ((tr_r, te_r), _) in enumerate(folds)])
        se = res.std(0, ddof=1) / np.sqrt(len(res)) if len(res) > 1 else np.zeros(2)
        row = {"evaluator": name, "trtr": res[:, 0].mean(), "trtr_se": se[0], "tstr": res[:, 1].mean(),
               "tstr_se": se[1], "diff": res[:, 1].mean() - res[:, 0].mean()}
        if "test" in frames:
            xt = encode_features(frames["test"], schema, target, "test")
            yt = _target(frames["test"], schema, target, task, "test")
            row["trtr_test"] = _fit_f1(name, xr, yr, xt, yt, average, seed)
            row["tstr_test"] = _fit_f1(name, xs, ys, xt, yt, average, seed)
            row["diff_test"] = row["tstr_test"] - row["trtr_test"]
        rows.append(row)
    return pd.DataFrame(rows)


def _fit_f1(name, x, y, xt, yt, average, seed) -> float:
    """F1 on (xt, yt) of evaluator ``name`` trained on (x, y); cached like :func:`ml_scores`' fits, so
    the train-on-real folds are fitted once for a release and all its baselines."""
    key = ("f1", _digest(x, y), _digest(xt, yt), name, average, seed)
    return _FIT_CACHE.get(key, lambda: _fit_f1_uncached(name, x, y, xt, yt, average, seed))


def _fit_f1_uncached(name, x, y, xt, yt, average, seed) -> float:
    from sklearn.metrics import f1_score
    classes = np.unique(y)
    if classes.size < 2:
        pred = np.full(len(yt), classes[0])
    else:
        model = _make_model(name, "classification", seed, len(y))
        with quiet_library_warnings():
            model.fit(x, np.searchsorted(classes, y))
        pred = classes[np.asarray(model.predict(xt)).astype(int).ravel()]
    return float(f1_score(yt, pred, average=average, zero_division=0))


def _ordinal_features(df: pd.DataFrame, schema: Schema, exclude: str, role: str) -> np.ndarray:
    """SynthEval's model input: category codes as numbers and [0, 1]-scaled numbers (missing: 0 and
    a flag column where the schema allows missing values).  Numbers are scaled with sklearn
    ``MinMaxScaler``'s arithmetic, ``x * s + (-lower * s)`` with ``s = 1 / (upper - lower)``: SynthEval's
    100-iteration logistic regression does not converge on adult, and there a last-bit difference
    of the inputs (``(x - lower) / span`` rounds differently) moved the AUC by up to .003."""
    v = views(df, schema, role)
    cols = []
    for c in schema.columns:
        if c.name == exclude:
            continue
        if c.kind == "categorical":
            cols.append(v.cat[c.name].astype(float))
        else:
            scale = 1.0 / ((c.upper - c.lower) or 1.0)
            x = v.num[c.name] * scale + (-c.lower * scale)
            cols.append(np.where(np.isnan(x), 0.0, x))
            if c.missing:
                cols.append(np.isnan(x).astype(float))
    return np.stack(cols, axis=1)


def auroc_difference(train: pd.DataFrame, synthetic: pd.DataFrame, test: pd.DataFrame, schema: Schema,
                     model: str = "linear", target: str | None = None, encoding: str = "ordinal",
                     seed: int = 42, max_iter: int = 100) -> dict:
    """SynthEval's ``auroc_diff``: ROC AUC on the held-out rows of a model trained on the synthetic
    rows minus that of the same model trained on the real training rows (0 = as useful; negative =
    worse), for a binary target.

    Parameters
    ----------
    train, synthetic, test : DataFrame
        Real training rows, the release, real held-out rows (the AUCs are taken on ``test``).
    schema : Schema
        Public schema; it fixes the features' encoding.
    model : str
        ``"linear"`` (SynthEval's logistic regression: lbfgs, ``max_iter`` iterations) or any other
        evaluator of :data:`EVALUATORS`.
    target : str, optional
        Binary categorical column to predict (default the schema's target).
    encoding : {"ordinal", "onehot"}
        ``"ordinal"`` feeds category codes and [0, 1]-scaled numbers, as SynthEval does;
        ``"onehot"`` the schema encoding of the other ML metrics.
    seed : int
        The model's ``random_state``.
    max_iter : int
        Iterations of the linear model; SynthEval's 100 by default.

    Returns
    -------
    dict
        ``auroc_diff``, ``auroc_real`` and ``auroc_synthetic``.

    Notes
    -----
    SynthEval integrates the ROC curve interpolated on a grid as long as the real model's curve;
    here the exact AUC (they differ by 1e-5 on adult's 6,032 held-out rows, up to .0008 on hmeq's
    652).  A category's code is its rank among the *schema's* categories, so the
    features do not depend on the release being scored; SynthEval's ``OrdinalEncoder`` ranks the
    categories *present* in the real, synthetic and held-out tables together.  The two codings are
    the same when every schema category occurs in the tables.  When one does not, the codes after it
    shift by one, and SynthEval's 100-iteration logistic regression, which on adult stops at its
    cap before converging (codes up to 40 next to [0, 1] numbers), lands on a different point.  On
    adult (5,000 complete training rows; ``workclass``'s ``Never-worked`` occurs in none of the
    tables) the INDEPENDENT release (columns resampled alone, so the synthetic model fits noise)
    scores -.220 here (synthetic AUC .608) and -.272 in syntheval 1.7.3 (.555); with the schema's
    categories cut to those present (``crosscheck.schema_for(..., categories="observed")``) ours
    gives syntheval's -.272 (to 1e-5), and converged fits (``max_iter=10_000``) give -.207 and -.206
    with the two codings.  The other releases move by less than .002.  Pass a large ``max_iter``
    for a value that depends neither on the coding nor on where the solver stops.
    """
    from sklearn.metrics import roc_auc_score
    schema = resolve_schema(schema, train)
    frames = check_frames(schema, train=train, synthetic=synthetic, test=test)
    target, task = _task(schema, target, None)
    if task != "classification":
        raise ConfigError("auroc_difference: needs a classification target")
    if encoding not in ("ordinal", "onehot"):
        raise ConfigError(f"encoding must be 'ordinal' or 'onehot', got {encoding!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ConfigError(f"max_iter must be a positive integer, got {max_iter!r}")
    enc = _ordinal_features if encoding == "ordinal" else encode_features
    xt = enc(frames["test"], schema, target, "test")
    yt = _target(frames["test"], schema, target, task, "test")
    present = np.unique(yt)
    if present.size != 2:
        raise ConfigError(f"auroc_difference: the held-out rows hold {count(present.size, 'target class')}; needs 2")
    out = {}

    def fit_auc(x, y, role) -> float:
        classes = np.unique(y)
        if classes.size < 2:  # said, as ml_scores says it: an AUC of 0.5 by construction, not a fit's
            warnings.warn(f"auroc_difference: the {role} table holds a single target class; its model predicts "
                          "it always (AUC 0.5)", UserWarning, stacklevel=3)
            return 0.5
        if model == "linear":
            from sklearn.linear_model import LogisticRegression
            m = LogisticRegression(max_iter=int(max_iter), random_state=seed)
        else:
            m = _make_model(model, task, seed, len(y))
        with quiet_library_warnings():
            m.fit(x, np.searchsorted(classes, y))
        proba = np.zeros((len(xt), int(max(classes.max(), present.max())) + 1))
        proba[:, classes] = m.predict_proba(xt)
        return float(roc_auc_score(yt == present[1], proba[:, present[1]]))
    test_key = _digest(xt, yt)
    iters = int(max_iter) if model == "linear" else None
    for role in ("train", "synthetic"):
        x = enc(frames[role], schema, target, role)
        y = _target(frames[role], schema, target, task, role)
        # cached like ml_scores' fits: the real-row model is fitted once for a release and its baselines
        out[role] = _FIT_CACHE.get(("auroc", _digest(x, y), test_key, model, seed, iters), lambda: fit_auc(x, y, role))
    return {"auroc_diff": out["synthetic"] - out["train"], "auroc_real": out["train"], "auroc_synthetic": out["synthetic"]}
