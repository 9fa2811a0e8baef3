"""``evaluate``: every metric on one table, each next to its HALF / INDEPENDENT / SELF baselines
(the HTML page around it is :mod:`synthzoo.metrics.html`)."""

from __future__ import annotations

import difflib
import json
import threading
import time
import warnings
from collections import Counter
from typing import Callable

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.params import check_seed
from ..core.schema import Schema
from ._common import (HoldoutWarning, OutOfSchemaWarning, check_bool, check_frames, check_positive_int, count,
                      holdout_overlap, join_parts, out_of_schema, resolve_schema)
from .association import association_difference
from .baselines import BASELINES, baseline_tables
from .marginal import query_error_3way, tvd_1way, tvd_2way
from .mds import CopySynthesizer, IndependentSynthesizer, check_options as check_mds_options, membership_disclosure
from .ml import DEFAULT_EVALUATORS, EVALUATORS, ml_scores, task_kind
from .mia import membership_attacks
from .privacy import privacy_scores
from .wasserstein import fidelity_of_parts, wasserstein_fidelity, wasserstein_marginals

# name -> (group, better direction, description)
METRICS = {
    "wasserstein": ("fidelity", "lower", "Du & Li Wasserstein fidelity: mean OT distance over 1- and 2-way marginals"),
    "tvd_1way": ("fidelity", "lower", "mean total variation distance over 1-way marginals"),
    "tvd_2way": ("fidelity", "lower", "mean total variation distance over 2-way marginals"),
    "association_diff": ("fidelity", "lower", "mean |difference| of pairwise associations (Pearson / Cramér's V / eta)"),
    # SynthEval's statistical metrics (synthzoo.metrics.statistical)
    "ks_distance": ("fidelity", "lower", "SynthEval: mean Kolmogorov-Smirnov distance (numbers) / total variation "
                    "(categories) per column"),
    "ks_significant": ("fidelity", "lower", "SynthEval: number of columns whose KS / permutation test rejects equal "
                       "distributions at 5 %"),
    "hellinger": ("fidelity", "lower", "SynthEval: mean Hellinger distance of the per-column distributions "
                  "(Scott-rule bins for numbers)"),
    "pmse": ("fidelity", "lower", "SynthEval: propensity mean squared error of a logistic real-vs-synthetic "
             "discriminator (0 = indistinguishable, 0.25 = separable)"),
    "pca_eigval_diff": ("fidelity", "lower", "SynthEval: difference of the PCA explained-variance ratios of the numbers"),
    "pca_angle_diff": ("fidelity", "lower", "SynthEval: angle between the first principal axes (0 = same, 1 = orthogonal)"),
    "ci_overlap": ("fidelity", "higher", "SynthEval: mean overlap of the mean +- 1.96 sd intervals of the numbers"),
    "mi_diff": ("fidelity", "lower", "SynthEval: Frobenius norm of the pairwise normalised mutual information difference"),
    "dwm": ("fidelity", "lower", "SynthEval: mean |difference of column means| of the scaled numbers"),
    "corr_diff": ("fidelity", "lower", "SynthEval: Frobenius norm of the mixed correlation matrix difference "
                  "(Pearson, Cramér's V^2, eta^2)"),
    "query_error_3way": ("utility", "lower", "mean absolute error of 1,000 random 3-way range/point queries"),
    "ml_f1": ("utility", "higher", "train on synthetic, test on real: macro F1, mean over evaluators"),
    "ml_auc": ("utility", "higher", "train on synthetic, test on real: ROC AUC, mean over evaluators"),
    "ml_rmse": ("utility", "lower", "train on synthetic, test on real: RMSE, mean over evaluators"),
    "ml_r2": ("utility", "higher", "train on synthetic, test on real: R², mean over evaluators"),
    "ml_affinity": ("utility", "lower", "MLA: mean relative gap to the same models trained on real rows"),
    "ml_cv_f1_diff": ("utility", "higher", "SynthEval cls_acc: 5-fold CV weighted F1, train-on-synthetic minus "
                      "train-on-real (0 = as useful), mean over rf, gbm, linear, xgboost"),
    "auroc_diff": ("utility", "higher", "SynthEval: held-out ROC AUC of a logistic model trained on synthetic minus "
                   "trained on real (0 = as useful)"),
    "dcr_risk": ("privacy", "lower", "share of rows at most the holdout's 5th-percentile distance to a training row, "
                 "normalised by the holdout's own share (0 = like unseen rows, 1 = a copy)"),
    "identical_match_risk": ("privacy", "lower", "share of rows identical to a training row (normalised vs holdout)"),
    "nndr_risk": ("privacy", "lower", "nearest-neighbour distance ratio at most the holdout's 5th percentile "
                  "(normalised like DCR)"),
    "domias_auc": ("privacy", "lower", "DOMIAS-style 1-NN density-ratio membership inference, ROC AUC (0.5 = none)"),
    "singling_out_risk": ("privacy", "lower", "Anonymeter singling out (multivariate, one-sided tail predicates): "
                          "R = (tau_train - tau_control)/(tau_copy - tau_control), tau_copy the rate a copy of the "
                          "training rows reaches (1 unless the holdout is smaller)"),
    "linkability_risk": ("privacy", "lower", "Anonymeter linkability attack, normalised risk R"),
    "inference_risk": ("privacy", "lower", "attribute-inference attack on the target column (the last column "
                       "where the schema names no target), normalised risk R"),
    "mia_max_auc": ("privacy", "lower", "DP-TLDM's no-box membership attacks (closest distance Hamming/L2, KDE, "
                    "DOMIAS KDE and 1-NN): the largest ROC AUC (0.5 = none)"),
    "mia_tpr_1pct": ("privacy", "lower", "the same attacks: the largest true-positive rate at 1 % false positives "
                     "(0.01 = none)"),
    "nnaa_privacy_loss": ("privacy", "lower", "SynthEval: NN adversarial accuracy of holdout minus training rows "
                          "(0 = no closer to training rows)"),
    "hitting_rate": ("privacy", "lower", "SynthEval: share of training rows with a synthetic row within 1/30 of the "
                     "range on every number and equal categories"),
    "eps_identifiability": ("privacy", "lower", "SynthEval: share of training rows closer to a synthetic row than "
                            "to another training row (entropy-weighted Gower)"),
    "mia_classifier_f1": ("privacy", "lower", "SynthEval: classifier membership attack, macro F1 (0.5 = none)"),
    "attr_disclosure": ("privacy", "lower", "SynthEval: attribute disclosure over every column, mean accuracy of "
                        "forests trained on the release"),
    "mds": ("privacy", "lower", "membership disclosure score of the synthesizer (shadow models)"),
}
# tvd_1way is available by name but not in the default set: 1-way metrics cannot see
# correlations, and INDEPENDENT (exact 1-way marginals) is not a floor for them
#: the default run's metrics by group.  "privacy" is also a set (PRESETS, the larger one): as a
#: ``metrics=`` name it means the set; the group's metrics are the default run's privacy part
GROUPS = {"fidelity": ["wasserstein", "tvd_2way", "association_diff"],
          "utility": ["query_error_3way", "ml_f1", "ml_auc", "ml_rmse", "ml_r2", "ml_affinity"],
          "privacy": ["dcr_risk", "identical_match_risk", "nndr_risk", "domias_auc", "singling_out_risk",
                      "linkability_risk", "inference_risk"]}
#: named metric sets, as SynthEval's presets (fast_eval / full_eval / privacy)
PRESETS = {
    "fast": ["tvd_2way", "ks_distance", "hellinger", "dwm", "ci_overlap", "pca_eigval_diff", "query_error_3way",
             "auroc_diff", "dcr_risk", "identical_match_risk", "hitting_rate", "domias_auc"],
    # SynthEval's full_eval and ours; Wasserstein (exact transport, minutes on numeric-heavy tables)
    # is in the default set and can be added by name
    "full": ["tvd_2way", "association_diff", "ks_distance", "ks_significant", "hellinger", "pmse",
             "pca_eigval_diff", "pca_angle_diff", "ci_overlap", "mi_diff", "dwm", "corr_diff", "query_error_3way",
             "ml_f1", "ml_auc", "ml_rmse", "ml_r2", "ml_affinity", "ml_cv_f1_diff", "auroc_diff", "dcr_risk",
             "identical_match_risk", "nndr_risk", "domias_auc", "singling_out_risk", "linkability_risk",
             "inference_risk", "mia_max_auc", "mia_tpr_1pct", "nnaa_privacy_loss", "hitting_rate",
             "eps_identifiability", "mia_classifier_f1", "attr_disclosure"],
    "privacy": ["dcr_risk", "identical_match_risk", "nndr_risk", "domias_auc", "singling_out_risk", "linkability_risk",
                "inference_risk", "mia_max_auc", "mia_tpr_1pct", "nnaa_privacy_loss", "hitting_rate",
                "eps_identifiability", "mia_classifier_f1", "attr_disclosure"],
}
_PRIV_KEY = {"dcr_risk": "dcr", "identical_match_risk": "ims", "nndr_risk": "nndr", "domias_auc": "domias",
             "singling_out_risk": "singling_out", "linkability_risk": "linkability", "inference_risk": "inference"}
_ML = {"ml_f1": "f1", "ml_auc": "auc", "ml_rmse": "rmse", "ml_r2": "r2"}
#: metrics that need real held-out rows
_NEEDS_TEST = {m for m in METRICS if m.startswith("ml_") or METRICS[m][0] == "privacy" and m not in
               ("mds", "hitting_rate", "eps_identifiability")} | {"auroc_diff"}
_NEEDS_CLASSIFICATION = {"ml_cv_f1_diff", "auroc_diff"}
_ZERO_FOR_IDENTICAL = {"wasserstein", "tvd_1way", "tvd_2way", "association_diff", "query_error_3way", "ks_distance",
                       "ks_significant", "hellinger", "pca_eigval_diff", "pca_angle_diff", "mi_diff", "dwm",
                       "corr_diff"}


def metric_names(field: str = "metrics") -> str:
    """The metric names and sets ``metrics=`` accepts, for help texts; for the command line's ``--metrics``
    (``field``) without ``mds``, which needs a synthesizer factory that `synthzoo eval` cannot take."""
    names = [m for m in METRICS if not (m == "mds" and field.startswith("--"))]
    return (f"sets: {', '.join(PRESETS)}; groups: {', '.join(g for g in GROUPS if g not in PRESETS)} "
            f"('privacy' names the set, a superset of the privacy group); metrics: {', '.join(names)}")


def _resolve_metrics(metrics, has_test: bool, has_factory: bool, task: str | None,
                     field: str = "metrics") -> list[str]:
    """The metric names ``metrics`` asks for (``None``: the default run), checked against the tables.

    Parameters
    ----------
    metrics : str, list of str or None
        Names, groups or sets, as :func:`evaluate` takes them.
    has_test, has_factory : bool
        Whether held-out rows / a synthesizer factory are given.
    task : str or None
        The schema's task (``None``: no target).
    field : str
        The option the errors name: ``"metrics"`` for :func:`evaluate`, ``"--metrics"`` for the CLI.

    Returns
    -------
    list of str
        The metrics to run, in order, without repeats.
    """
    if metrics is None:
        names = GROUPS["fidelity"] + GROUPS["utility"] + (GROUPS["privacy"] if has_test else [])
        if has_factory:
            names.append("mds")
    else:
        if isinstance(metrics, str):
            if not metrics.strip():  # "" is no name, not an unknown one: say so as for []
                raise ConfigError(f"{field}: an empty string names no metric; choose from {metric_names(field)}")
            metrics = [metrics]
        try:  # a number or a nested list is no name: said as such, not as Python's TypeError
            metrics = list(metrics)
        except TypeError:
            raise ConfigError(f"{field}: expected a metric name or a list of names, got {metrics!r}; choose from "
                              f"{metric_names(field)}") from None
        if not len(metrics):
            raise ConfigError(f"{field}: an empty list names no metric; choose from {metric_names(field)}")
        names = []
        for m in metrics:
            if not isinstance(m, str):
                raise ConfigError(f"{field}: unknown metric or set {m!r} (not a name); choose from "
                                  f"{metric_names(field)}")
            if m in PRESETS:
                names += PRESETS[m]
            elif m in GROUPS:
                names += GROUPS[m]
            elif m in METRICS:
                names.append(m)
            else:
                # in any letter case, and a name's start ('TVD_2WAY', 'dcr' got no hint)
                known = [*PRESETS, *GROUPS, *METRICS]
                close = (difflib.get_close_matches(m.strip().lower(), known, n=1)
                         or [k for k in known if m.strip() and k.startswith(m.strip().lower())][:1])
                raise ConfigError(f"{field}: unknown metric or set {m!r}"
                                  + (f" (did you mean {close[0]!r}?)" if close else "")
                                  + f"; choose from {metric_names(field)}")
    explicit = metrics is not None and not any(m in PRESETS for m in metrics)
    if task is None and metrics is not None:  # asked for (by name, or in a group without a set), and nothing
        # names what to predict: an error before any work, naming where the target goes
        ml = {m for m in METRICS if m.startswith("ml_")} | _NEEDS_CLASSIFICATION
        asked = [m for m in dict.fromkeys(names) if m in ml and (explicit or m in metrics)]
        if asked:
            raise ConfigError(f"metrics {asked} predict a target column, but the schema names no \"target\"; "
                              + ("give --target COLUMN, or add \"target\" (and \"task\") to the schema file (--schema)"
                                 if field == "--metrics" else "add \"target\" (and \"task\") to the schema")
                              + f", or leave them out of {field}")
    # by the task's kind, as the ML metrics read it: "Regression" (any letter case is the same task) held
    # no "regress" and was scored as classification, ml_f1 / ml_auc NaN for a wrong reason
    reg = task is not None and task_kind(task) == "regression"
    drop = {"ml_f1", "ml_auc"} | _NEEDS_CLASSIFICATION if reg else {"ml_rmse", "ml_r2"}
    if task is None and (metrics is None or not explicit):  # no target in the schema: nothing to predict
        drop |= {m for m in METRICS if m.startswith("ml_")} | _NEEDS_CLASSIFICATION
    named = [m for m in (metrics or []) if m in METRICS and m in drop]  # asked for by name, not via a group
    why = (f"the schema's task is {task!r}" if task is not None else "the schema names no \"target\"")
    if task is None and metrics is not None and not explicit:  # a named set, as without test: never in silence
        gone = [m for m in dict.fromkeys(names) if m in drop and m not in named]
        if gone:
            warnings.warn(f"metrics {gone} of {list(metrics)} predict a target column and {why}: they are left out "
                          "(add \"target\" and \"task\" to the schema to score them)", UserWarning, stacklevel=3)
    names = [m for m in dict.fromkeys(names) if m not in drop]
    if named:
        msg = (f"metrics {named} do not apply here: {why} (ml_f1, ml_auc: classification; ml_rmse, ml_r2: "
               "regression)")
        if not names:
            raise ConfigError(msg)
        warnings.warn(msg + "; they are left out", UserWarning, stacklevel=3)
    if not has_test:
        needs = [m for m in names if m in _NEEDS_TEST]
        if explicit and needs:
            raise ConfigError(f"metrics {needs} need real held-out rows: pass test=...")
        rest = [m for m in names if m not in needs]
        if needs and metrics is not None:  # a named set or group: never drop its metrics in silence
            msg = (f"metrics {needs} of {list(metrics)} need real held-out rows the synthesizer never saw: "
                   "pass test=...")
            if not rest:
                raise ConfigError(msg)
            warnings.warn(msg + f"; they are left out and only {rest} are scored", UserWarning, stacklevel=3)
        names = rest
    if "mds" in names and not has_factory:
        raise ConfigError("metric 'mds' refits the synthesizer on neighbouring tables, so it needs "
                          "synthesizer_factory=(seed -> synthesizer with fit/sample); it is available from Python "
                          "(synthzoo.evaluate), not from `synthzoo eval`, which only sees the synthetic rows")
    return names


def default_left_out(names: list[str], has_test: bool, task: str | None, cli: bool = False) -> list[str]:
    """What the default run (``metrics=None``) leaves out of ``names`` (as :func:`_resolve_metrics` gave
    them) and why: one message for the metrics that need held-out rows, one for those that need a target.
    ``cli``: worded for ``synthzoo eval`` (its options), else for :func:`evaluate` (its arguments)."""
    every = _resolve_metrics(None, True, False, task or "binary classification")
    skipped = [m for m in every if m not in names]
    no_test = [m for m in skipped if not has_test and m in _NEEDS_TEST]
    no_target = [m for m in skipped if m not in no_test]
    out = []
    if no_test:
        out.append(f"without {'--test' if cli else 'test='}, skipped {', '.join(no_test)} (they need real held-out "
                   "rows the synthesizer never saw; " + ("`synthzoo split` makes them)" if cli else
                                                         "synthzoo.datasets.train_test_split makes them)"))
    if no_target:
        out.append(f"the schema names no \"target\", so nothing to predict: skipped {', '.join(no_target)} ("
                   + ("give --target COLUMN, or add \"target\" and \"task\" to the schema file (--schema)," if cli else
                      "add \"target\" and \"task\" to the schema") + " to score them)")
    return out


def _task_of(schema: Schema) -> str | None:
    """The schema's task text (checked: an unknown one fails here, before any metric runs), or
    ``None`` without a target."""
    if schema.meta.get("target") is None:
        return None
    if schema.meta["target"] not in schema:  # built or changed in Python (from_dict checks it): a KeyError below
        raise ConfigError(f"the schema's \"target\" {str(schema.meta['target'])[:80]!r} is not one of its columns "
                          f"{schema.names[:20]}")
    t = schema.meta.get("task")
    if t is not None:
        task_kind(t, "the schema's \"task\"")
        return t
    return "classification" if schema[schema.meta["target"]].kind == "categorical" else "regression"


class _Stopped(Exception):
    """A unit of work given up because another one failed (or the caller was interrupted)."""


def _check_stop(stop) -> None:
    if stop is not None and stop.is_set():
        raise _Stopped


def _score_table(real, synth, test, schema, names, opts, ml_train=None, shared=None, tokens=None, part=None,
                 stop=None) -> dict:
    """All selected metrics of one (real, synthetic) pair -> {name: (value, ci_low, ci_high)}; with
    ``part=(i, n)`` and one metric of ``_PARTS``, that part of its work only, under ``"_part"`` as
    ``(metric, part, partial result)`` (:func:`_combine` puts the parts together).  ``stop``: a
    ``threading.Event``; once it is set, :class:`_Stopped` is raised before the next metric starts.

    The nearest-neighbour searches are shared: one :class:`~synthzoo.metrics.privacy._Tables` holds
    the encodings and searches every distance-based metric of this pair uses, and with ``shared``
    and ``tokens`` (see ``_Tables``) the other pairs of the same evaluation reuse those of their
    frames in common."""
    from . import disclosure as D
    from . import statistical as S
    from .ml import auroc_difference, ml_cross_validated
    from .privacy import _Tables
    out = {}
    why = {}  # metric -> why it is NaN here (_or_nan), for the report
    tables = None

    def t():
        nonlocal tables
        if tables is None:
            tables = _Tables(real, synth, test, schema, shared=shared, tokens=tokens)
        return tables
    cache = {}

    def once(key, fn):
        if key not in cache:
            cache[key] = fn()
        return cache[key]
    same = synth is real  # the SELF baseline: a table against itself
    times = {}  # wall seconds per metric, for the timing report
    for m in names:
        _check_stop(stop)  # an error elsewhere ends the evaluation: no metric starts after it
        t0 = time.perf_counter()
        if same and m in _ZERO_FOR_IDENTICAL:  # distances between a table and itself, 0 by definition
            out[m] = (0.0,)
        elif same and m == "ci_overlap":
            out[m] = (1.0,)
        elif m == "wasserstein" and part is not None:
            out["_part"] = (m, part, wasserstein_marginals(real, synth, schema, max_rows=opts["wasserstein_rows"],
                                                           seed=opts["seed"], part=part))
        elif m == "wasserstein":
            out[m] = (wasserstein_fidelity(real, synth, schema, max_rows=opts["wasserstein_rows"], seed=opts["seed"]),)
        elif m == "tvd_1way":
            out[m] = (tvd_1way(real, synth, schema),)
        elif m == "tvd_2way":
            out[m] = (tvd_2way(real, synth, schema),)
        elif m == "association_diff":  # one column: no pair, NaN with that reason (its 0 read as perfect)
            out[m] = (_or_nan(lambda: {"v": association_difference(real, synth, schema)}, why, m).get("v", np.nan),)
        elif m == "query_error_3way":
            out[m] = (query_error_3way(real, synth, schema, n_queries=opts["n_queries"], seed=opts["seed"]),)
        elif m in ("ks_distance", "ks_significant"):
            r = once("ks", lambda: S.ks_test(real, synth, schema, seed=opts["seed"]))
            out[m] = (float(r["avg_stat"] if m == "ks_distance" else r["n_significant"]),)
        elif m == "hellinger":
            out[m] = (S.hellinger_distance(real, synth, schema)["avg"],)
        elif m == "pmse":
            out[m] = (_or_nan(lambda: S.pmse(real, synth, schema), why, m).get("pmse", np.nan),)
        elif m in ("pca_eigval_diff", "pca_angle_diff"):
            r = once("pca", lambda: _or_nan(lambda: S.pca_difference(real, synth, schema), why, "pca_eigval_diff",
                                                "pca_angle_diff"))
            out[m] = (r.get("eigval_diff" if m == "pca_eigval_diff" else "angle_diff", np.nan),)
        elif m == "ci_overlap":
            out[m] = (_or_nan(lambda: S.ci_overlap(real, synth, schema), why, m).get("avg_overlap", np.nan),)
        elif m == "mi_diff":
            out[m] = (_or_nan(lambda: {"v": S.mutual_information_difference(real, synth, schema)}, why, m).get("v",
                                                                                                           np.nan),)
        elif m == "dwm":
            out[m] = (_or_nan(lambda: {"v": S.dimensionwise_means(real, synth, schema)}, why, m).get("v", np.nan),)
        elif m == "corr_diff":
            out[m] = (_or_nan(lambda: {"v": S.correlation_difference(real, synth, schema)}, why, m).get("v", np.nan),)
        elif m == "ml_cv_f1_diff":
            # a part: some of the evaluators (each evaluator's folds are the same whichever others run)
            evs = opts["cv_evaluators"] if part is None else opts["cv_evaluators"][part[0]::part[1]]
            # cross-validated on the table's own real rows: HALF's release B is part of the whole
            # training table, so folds of that table would hold B's rows (a leak, not utility)
            df = _or_nan(lambda: ml_cross_validated(real, synth, schema, evaluators=evs, seed=opts["seed"]), why, m)
            if isinstance(df, dict):  # too few rows of a class for the folds: NaN, with the reason warned
                df = pd.DataFrame({"evaluator": list(evs), "diff": np.nan})
            if part is None:
                out[m] = (float(df["diff"].mean()),)
                out["_cv_detail"] = df
            else:
                out["_part"] = (m, part, df)
        elif m == "auroc_diff":
            out[m] = (_or_nan(lambda: auroc_difference(ml_train if ml_train is not None else real, synth, test,
                                                        schema, seed=opts["seed"]), why, m).get("auroc_diff", np.nan),)
        elif m in ("mia_max_auc", "mia_tpr_1pct"):
            # a holdout too small for the attacks (under 10 rows) is a NaN with its reason, as
            # evaluate's docstring and HoldoutWarning promise, not an error that ends the evaluation
            r = once("mia", lambda: _or_nan(lambda: membership_attacks(
                real, synth, test, schema, n_targets=opts["n_attacks"], seed=opts["seed"], return_scores=True),
                why, "mia_max_auc", "mia_tpr_1pct"))
            if r:
                row = r[0].iloc[-1]
                out[m] = (float(row["auc"] if m == "mia_max_auc" else row["tpr@0.01"]),)
                out["_mia_detail"] = r
            else:
                out[m] = (np.nan,)
        elif m == "nnaa_privacy_loss":
            r = _or_nan(lambda: D.nnaa(t(), None, schema, n_resample=opts["nnaa_resamples"], seed=opts["seed"]), why, m)
            out[m] = (r["privacy_loss"], r["privacy_loss"] - 1.96 * r["privacy_loss_se"],
                      r["privacy_loss"] + 1.96 * r["privacy_loss_se"]) if r else (np.nan,)
        elif m == "hitting_rate":
            out[m] = (D.hitting_rate(t(), None, schema),)
        elif m == "eps_identifiability":
            out[m] = (_or_nan(lambda: D.epsilon_identifiability(t(), None, schema), why, m).get("eps_risk", np.nan),)
        elif m == "mia_classifier_f1":
            out[m] = (_or_nan(lambda: D.mia_classifier(t(), None, None, schema, seed=opts["seed"]), why, m).get("f1",
                                                                                                         np.nan),)
        elif m == "attr_disclosure":
            # a part: some of the columns (one forest each, on the same rows whichever others run)
            cols = None if part is None else schema.names[part[0]::part[1]]
            r = _or_nan(lambda: D.attribute_disclosure(t(), None, schema, columns=cols, n_estimators=opts["attr_trees"],
                                                       max_rows=opts["attr_rows"], seed=opts["seed"]), why, m)
            if part is None:
                out[m] = (r.get("accuracy", np.nan),)
            else:  # no columns from a part that could not run: the joined mean is NaN
                out["_part"] = (m, part, r.get("columns", pd.DataFrame(columns=["column", "accuracy"])))
        if m in out or "_part" in out:
            times[m] = time.perf_counter() - t0
    ml_names = [m for m in names if m in _ML or m == "ml_affinity"]
    if ml_names:
        _check_stop(stop)
        t0 = time.perf_counter()
        # a table these models cannot learn from (a regression target with missing values the schema
        # allows) is NaN with its reason, as for the other metrics: it ended the whole evaluation
        df = _or_nan(lambda: ml_scores(ml_train if ml_train is not None else real, synth, test, schema,
                                       evaluators=opts["evaluators"], seed=opts["seed"]), why, *ml_names)
        if isinstance(df, dict):
            out.update(dict.fromkeys(ml_names, (np.nan,)))
        else:
            for m in ml_names:
                out[m] = (float(df["gap"].mean()),) if m == "ml_affinity" else \
                    (float(df.loc[df["score"] == _ML[m], "synthetic"].mean()),)
            out["_ml_detail"] = df
        times["ml (" + ", ".join(ml_names) + ")"] = time.perf_counter() - t0
    priv = [m for m in names if m in _PRIV_KEY]
    if priv:
        t0 = time.perf_counter()
        for m in priv:  # one by one (the searches stay shared in t()): one that needs more holdout rows
            # (domias_auc: 10) is NaN with its reason, and the others are still scored
            _check_stop(stop)
            df = _or_nan(lambda: privacy_scores(t(), None, None, schema, metrics=[_PRIV_KEY[m]],
                                                n_attacks=opts["n_attacks"], seed=opts["seed"]), why, m)
            out[m] = (np.nan,) if isinstance(df, dict) else (df["risk"].iloc[0], df["ci_low"].iloc[0],
                                                              df["ci_high"].iloc[0])
            if not isinstance(df, dict) and np.isnan(df["risk"].iloc[0]) and df["detail"].iloc[0].get("why"):
                why[m] = df["detail"].iloc[0]["why"]  # a NaN an attack explains in its result (singling out)
        times["privacy attacks (" + ", ".join(priv) + ")"] = time.perf_counter() - t0
    out["_times"] = times
    if why:
        out["_nan_reasons"] = why
    return out


def _or_nan(fn, why: dict | None = None, *metrics: str) -> dict:
    """A metric that does not apply to this table (too few numeric columns) scores NaN, not an error;
    the reason is warned and, with ``why``, kept under each of ``metrics`` (the HTML report shows it)."""
    try:
        return fn()
    except ConfigError as e:  # said, not swallowed: the value is NaN for a stated reason
        warnings.warn(f"{e}; reported as NaN", UserWarning, stacklevel=2)
        if why is not None:
            why.update(dict.fromkeys(metrics, str(e)))
        return {}


_BASELINE_CACHE: dict = {}

#: why a metric may come out NaN (the evaluation warns with these)
_NAN_REASONS = {
    "mia_tpr_1pct": "the TPR at 1 % FPR needs at least 100 holdout rows as non-members",
    # ml.py's _scores: the one way an ROC AUC of a model is undefined
    "ml_auc": "the held-out (test) rows hold a single target class, and a ROC AUC needs two",
}  # the others' reasons come from their ConfigError, warned where it is caught (_or_nan)

#: fewer holdout rows than this and the attacks' rates rest on a handful of rows
MIN_HOLDOUT_ROWS = 40
#: at least this share of training rows duplicated within the training rows and a copy cannot be told from a fresh row
#: (adult: 0.1 %, the binned adult of private-pgm: 2.7 %)
COARSE_SHARE = 0.5
#: fewer training rows than this and the metrics rest on a handful of real rows: each is over 2.5 % of
#: the membership rates and AUCs (the training rows are the members), the fidelity and utility metrics
#: compare the release with the marginals of those few rows, and HALF's halves hold under 20 each
MIN_TRAIN_ROWS = 40


def _table_caveats(train: pd.DataFrame, test: pd.DataFrame | None, names: list[str],
                   schema: Schema) -> list[tuple[str, type]]:
    """``(message, warning class)`` for each way the tables cannot support the metrics ``names``:
    the holdout (privacy metrics only, :class:`HoldoutWarning`) is the training rows (all privacy
    risks then compare the release with its own training rows and read ~0 for a verbatim copy),
    shares far more rows with them than a coarse table's chance duplicates explain, is too small
    for the attacks' rates, or is a few records repeated (far fewer distinct rows than as many
    training rows hold), or the table is so coarse that most training rows are duplicated (a copy then reads
    as a fresh draw); the training table is too small for any metric to mean much (one training
    row scored every membership AUC 0.5 or 1, with no word about it)."""
    out = []
    privacy = any(METRICS[m][0] == "privacy" for m in names)
    if test is not None and privacy:
        overlap, chance, distinct, alike = holdout_overlap(train, test, schema)
        if overlap >= 0.999 and len(test) == len(train):
            out.append(("evaluate: the holdout (test) holds the same rows as the training table: every privacy risk "
                        "compares the release with its own training rows and is meaningless; pass real rows the "
                        "synthesizer never saw as test", HoldoutWarning))
        elif overlap > max(0.5, chance + 0.25):
            out.append((f"evaluate: {overlap:.0%} of the holdout (test) rows are training rows (chance duplicates "
                        f"explain about {chance:.0%}): the privacy risks understate leakage; the holdout must be real "
                        "rows the synthesizer never saw", HoldoutWarning))
        if len(test) >= MIN_HOLDOUT_ROWS and distinct < MIN_HOLDOUT_ROWS and distinct < 0.5 * alike:
            # a handful of records repeated: singling out read .84-.89 for a release that copies nothing
            out.append((f"evaluate: the holdout (test) holds only {count(distinct, 'distinct row')} in "
                        f"{len(test):,}, where as many training rows hold {alike:,}: the privacy risks compare the "
                        "release with those few records and their intervals are too wide to read; pass real rows "
                        "drawn as the training rows were", HoldoutWarning))
        if chance >= COARSE_SHARE:
            # the holdout then holds the same rows as the training table, so every attack scores a verbatim copy
            # as it scores a fresh draw (a table of 3 binary columns: both read 0 risk, hitting rate 1)
            out.append((f"evaluate: {chance:.0%} of the training rows have an exact duplicate among the training "
                        "rows (a coarse table): a release that copies training rows scores as a fresh draw on every "
                        "privacy risk, as the holdout holds the same rows; the risks speak only for the rows that "
                        "are unique", UserWarning))
        if len(test) < MIN_HOLDOUT_ROWS:
            out.append((f"evaluate: only {count(len(test), 'holdout (test) row')} (fewer than {MIN_HOLDOUT_ROWS}): "
                        "the privacy risks and membership AUCs rest on a handful of rows and their intervals are too "
                        "wide to read", HoldoutWarning))
    if len(train) < MIN_TRAIN_ROWS and names:
        n = len(train)
        why = [f"each is {100 / n:.3g} % of every membership rate and AUC"] if privacy else []
        if any(METRICS[m][0] != "privacy" for m in names):
            why.append(f"the fidelity and utility metrics compare the release with the marginals of {count(n, 'row')}")
        out.append((f"evaluate: only {count(n, 'training row')} (fewer than {MIN_TRAIN_ROWS}): {' and '.join(why)}; "
                    "the values are mostly noise, with no meaning to read into them", UserWarning))
    return out


#: metrics computed together (one call serves them all)
_TOGETHER = ({"ks_distance", "ks_significant"}, {"pca_eigval_diff", "pca_angle_diff"}, {"mia_max_auc", "mia_tpr_1pct"},
             set(_ML) | {"ml_affinity"}, set(_PRIV_KEY))
#: rough CPU seconds of a metric on adult's release (26k rows), to start the longest units first
#: (``_CV_COST``: ml_cv_f1_diff's share per evaluator)
_COST = {"attr_disclosure": 13.0, "wasserstein": 5.0, "ml_f1": 8.0, "ml_auc": 8.0, "ml_rmse": 8.0, "ml_r2": 8.0,
         "ml_affinity": 8.0, "dcr_risk": 5.0, "eps_identifiability": 3.0, "nnaa_privacy_loss": 3.0, "mia_max_auc": 2.5,
         "mia_classifier_f1": 1.0, "pmse": 0.5, "mi_diff": 0.7, "association_diff": 0.5, "corr_diff": 0.5}
_CV_COST = {"rf": 5.0, "xgboost": 4.0, "catboost": 4.0, "mlp": 3.0, "gbm": 1.5, "linear": 0.5}


#: metrics whose work on one table is split into parts that run side by side, and how many: the
#: Wasserstein marginals, attribute disclosure's columns (a forest each) and the cross-validated
#: utility's evaluators; the parts are put back together exactly (:func:`_combine`)
_PARTS = {"wasserstein": 3, "attr_disclosure": 3, "ml_cv_f1_diff": 4}


def _units(names: list[str], opts: dict) -> list[tuple[list[str], tuple | None]]:
    """One table's metrics as units of work that can run side by side, ``(metrics, part)``: each
    metric alone, except those one call computes together (``_TOGETHER``), and those of ``_PARTS``
    in parts."""
    n_parts = dict(_PARTS, ml_cv_f1_diff=min(_PARTS["ml_cv_f1_diff"], len(opts["cv_evaluators"])))
    units, seen = [], set()
    for m in names:
        if m in seen:
            continue
        if n_parts.get(m, 1) > 1:
            units += [([m], (i, n_parts[m])) for i in range(n_parts[m])]
            seen.add(m)
            continue
        group = next((g for g in _TOGETHER if m in g), {m})
        unit = [x for x in names if x in group]
        units.append((unit, None))
        seen.update(unit)
    return units


def _combine(metric: str, parts: list) -> dict:
    """A metric's value from all its parts' results (``(part, result)`` pairs, any order), equal to
    the one-call value to the last digit: the pieces are put back in the one-call order before the
    mean is taken.  Returns the entries ``_score_table`` gives for the whole metric."""
    if metric == "wasserstein":
        return {metric: (fidelity_of_parts(parts),)}
    whole = join_parts(parts)  # attribute disclosure's columns, or the cross-validation's evaluators
    if metric == "attr_disclosure":
        return {metric: (float(whole["accuracy"].mean()),)}
    return {metric: (float(whole["diff"].mean()),), "_cv_detail": whole}


def _unit_cost(unit: list[str], part, real, rel, same: bool, opts: dict) -> float:
    """A unit's rough cost (``_COST``), for the order in which the units start."""
    if same and all(m in _ZERO_FOR_IDENTICAL or m == "ci_overlap" for m in unit):
        return 0.0
    if same and (unit[0] in _ML or unit[0] == "ml_affinity"):
        return 0.1  # SELF's models are the release's real-row ones: last, when they are fitted
    if unit[0] == "ml_cv_f1_diff":
        evs = opts["cv_evaluators"] if part is None else opts["cv_evaluators"][part[0]::part[1]]
        base = sum(_CV_COST.get(e, 3.0) for e in evs)
    else:
        base = max(_COST.get(m, _COST["dcr_risk"] if m in _PRIV_KEY else 0.2) for m in unit)
        if part is not None:
            base /= part[1]
    return base * (0.4 + 0.6 * (len(real) + len(rel)) / 52_000)  # the half-size baselines cost less


def _run_tables(jobs, test, schema, opts, n_jobs: int, progress: Callable | None = None) -> dict:
    """``{name: (scores, seconds)}`` for each (name, real, release, ml_train, metrics, tokens) job.

    Every job's metrics are split into units (:func:`_units`) and all units of all jobs run
    ``n_jobs`` at a time, the most expensive first, so that the cores stay busy to the end.  The
    units share one memo of encodings and neighbour searches (``tokens`` name each job's frames, see
    ``_Tables``) and the fitted models (the ML cache); a unit that waits for a result another one is
    computing lets a further unit run meanwhile (:class:`~synthzoo.metrics._common.WorkSlots`).  A
    unit's values do not depend on what else runs or in which order.  ``seconds`` is the sum of a
    job's unit times (units of one job run side by side, so it can exceed the wall time).
    ``progress`` (see :func:`evaluate`) is called after each unit.  The first error of a unit or of
    ``progress``, or an interrupt (Ctrl-C) while the caller waits, ends the run: no unit starts
    after it, and the units running then stop before their next metric.  Warning filters are
    process-wide, so they are restored as they were once every unit is done."""
    import warnings
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    from ._common import OnceCache, WorkSlots, import_lazy_dependencies
    shared = OnceCache()
    n_jobs = check_positive_int(n_jobs, "n_jobs")
    # lazy imports inside worker threads can deadlock: import them all here, before any thread
    import_lazy_dependencies(extra=tuple(e for e in (*opts.get("evaluators", ()), *opts.get("cv_evaluators", ()))
                                         if e in ("xgboost", "catboost")))
    work = []
    for order, (name, real, rel, ml_train, metrics, tokens) in enumerate(jobs):
        for unit, part in _units(metrics, opts):
            cost = _unit_cost(unit, part, real, rel, rel is real, opts)
            work.append((-cost, order, len(work), name, real, rel, ml_train, unit, part, tokens))
    work.sort(key=lambda w: w[:3])
    remaining = Counter(m for w in work for m in w[7])  # units left per metric, over all tables
    lock = threading.Lock()
    done = [0]

    slots = WorkSlots(n_jobs)
    errors = []  # the first error ends the evaluation: no unit starts after it
    # set with the first error (or an interrupt of the waiting caller): the units running then stop
    # before their next metric, not only those not yet started
    stop = threading.Event()

    def one(w):
        name, real, rel, ml_train, unit, part, tokens = w[3:]
        with slots.run():
            if stop.is_set():  # taken by a thread before the error, waiting for a slot since
                return None
            t = time.perf_counter()
            try:
                got = _score_table(real, rel, test, schema, unit, opts, ml_train=ml_train, shared=shared,
                                   tokens=tokens, part=part, stop=stop)
            except _Stopped:
                return None
            except BaseException as e:
                with lock:  # said while the slot is held: the thread that takes it sees the error
                    errors.append(e)
                    stop.set()
                raise
            dt = time.perf_counter() - t
        with lock:
            done[0] += 1
            remaining.subtract(unit)
            if progress is not None:
                try:
                    progress(list(unit), name, dt, [m for m in unit if remaining[m] == 0], done[0], len(work))
                except BaseException as e:  # at once, as a metric's: no unit starts after it
                    errors.append(e)
                    stop.set()
                    raise
        return name, got, dt

    saved = list(warnings.filters)
    try:
        # evaluate said these once per table and column (out_of_schema); every metric would say them again
        warnings.filterwarnings("ignore", category=OutOfSchemaWarning)
        if n_jobs == 1 or len(work) <= 1:
            finished = [one(w) for w in work]
        else:  # two threads more than slots: they take over while a unit waits for a shared result
            with ThreadPoolExecutor(max_workers=min(n_jobs + 2, len(work))) as pool:
                futures = [pool.submit(one, w) for w in work]
                # the first error as it happens, not once the units queued before it are done (as
                # pool.map gave it); the units running then stop before their next metric, those not
                # started are dropped
                try:
                    wait(futures, return_when=FIRST_EXCEPTION)
                except BaseException:  # Ctrl-C while waiting: leaving the pool waited for every queued unit
                    stop.set()
                    pool.shutdown(wait=False, cancel_futures=True)
                    raise
                # a metric's error, else one outside the metrics (the progress callback's)
                error = errors[0] if errors else next(
                    (f.exception() for f in futures if f.done() and f.exception() is not None), None)
                if error is not None:
                    errors.append(error)
                    stop.set()
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise error
                finished = [f.result() for f in futures]
    finally:
        warnings.filters[:] = saved
        warnings._filters_mutated()
    out = {name: ({"_times": {}}, 0.0) for name, *_ in jobs}
    parts = {}
    for name, got, dt in finished:
        scores, seconds = out[name]
        for k, v in got.pop("_times", {}).items():
            scores["_times"][k] = scores["_times"].get(k, 0.0) + v
        if "_part" in got:
            metric, part, result = got.pop("_part")
            parts.setdefault((name, metric), []).append((part, result))
        scores.setdefault("_nan_reasons", {}).update(got.pop("_nan_reasons", {}))
        scores.update(got)
        out[name] = (scores, seconds + dt)
    for (name, metric), got in parts.items():
        out[name][0].update(_combine(metric, got))
    return out


def _check_evaluators(value, name: str) -> tuple[str, ...]:
    """``value`` as a tuple of evaluator names, or ``ConfigError``: an empty list left the ML metrics NaN
    without a reason (``cv_evaluators=[]`` failed with pandas' ``KeyError: 'diff'``), and a single name as
    a string is one name, not its letters."""
    names = (value,) if isinstance(value, str) else value
    try:
        names = tuple(names)
    except TypeError:
        raise ConfigError(f"{name}: expected a list of evaluator names from {EVALUATORS}, got {value!r}") from None
    if not names:
        raise ConfigError(f"{name}: an empty list names no evaluator; choose from {EVALUATORS}")
    bad = [e for e in names if not isinstance(e, str) or e not in EVALUATORS]
    if bad:
        raise ConfigError(f"{name}: unknown evaluator {bad[0]!r}; choose from {EVALUATORS}")
    return names


def _key(df) -> bytes:
    """A digest of a frame's values in row order (the baselines split rows by position)."""
    import hashlib
    if df is None:
        return b""
    h = hashlib.blake2b(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes(), digest_size=16)
    h.update(repr(list(df.columns)).encode())
    return h.digest()


def evaluate(train: pd.DataFrame, synthetic: pd.DataFrame, test: pd.DataFrame | None = None,
             schema: Schema | None = None, metrics=None, baselines: bool = True, seed: int = 0,
             n_queries: int = 1000, evaluators=DEFAULT_EVALUATORS, wasserstein_rows: int = 2000,
             n_attacks: int = 1000, synthesizer_factory: Callable | None = None, mds_shadow_models: int = 4,
             mds_samples: int = 1, cv_evaluators=("rf", "gbm", "linear", "xgboost"), nnaa_resamples: int = 5,
             attr_trees: int = 30, attr_rows: int | None = 10_000, n_jobs: int = 2, return_details: bool = False,
             progress: Callable | None = None):
    """Score a synthetic table: fidelity, utility and privacy risk, each with its baselines.

    ``train``: the real rows the synthesizer was fitted on; ``synthetic``: the release;
    ``test``: real held-out rows (needed by the ML metrics and, as the non-member control,
    by the privacy metrics — skipped without it); ``metrics``: names, groups (``"fidelity"``,
    ``"utility"``, ``"privacy"``) or SynthEval-style sets (``"fast"``, ``"full"``, ``"privacy"``; see
    ``PRESETS`` and ``METRICS``), default the fidelity, utility and privacy groups;
    ``synthesizer_factory``: ``seed -> synthesizer`` to add the shadow-model ``mds``.
    ``cv_evaluators``, ``nnaa_resamples``, ``attr_trees`` and ``attr_rows`` set the cost of
    ``ml_cv_f1_diff``, ``nnaa_privacy_loss`` and ``attr_disclosure`` (SynthEval: 30 resamples,
    100 trees on every synthetic row; the defaults here keep ``"full"`` on adult within minutes).
    ``n_jobs`` threads score the release and the three baselines side by side, metric by metric,
    the longest first (the heavy parts -- neighbour searches, transport problems, tree fits -- run
    outside Python's lock).  ``progress(metrics, table, seconds, complete, done, total)``, if given,
    is called after each unit of work (one metric, or the metrics one call computes together, on
    one table): ``complete`` lists the metrics now finished on every table, ``done``/``total``
    count the units.

    Returns a tidy frame, one row per metric: ``metric``, ``group``, ``value`` (with
    ``ci_low``/``ci_high`` for the attacks), ``HALF``, ``INDEPENDENT``, ``SELF`` (the baseline
    values, see :mod:`synthzoo.metrics.baselines`), ``better`` (``lower``/``higher``) and
    ``description``.  Baselines are cached per (train, test, options), so scoring several
    synthetic tables against one split computes them once.  Within one call the release and the
    baselines share what they have in common, with the numbers each table gets when scored alone
    (``tests/metrics/test_eval_shortcuts.py``): models fitted on the real rows (and a SELF release's
    own models, which are those), neighbour searches between the same frames (SELF's against the
    holdout are the release's), both directions of a search from one pass, a table against itself
    from half its distances, and SELF's fidelity (0 by definition).  ``details["metric_timings"]``
    gives each table's seconds per metric; ``benchmarks/bench_eval.py`` prints them for adult.
    A metric these tables cannot support (a holdout or table too small for it, one target class) is
    NaN, with a warning saying why; ``details["nan_reasons"]`` maps each NaN metric to that reason
    (the HTML report prints it).  Tables that support a metric only in name -- fewer than
    ``MIN_TRAIN_ROWS`` (40) training rows, a holdout of fewer than ``MIN_HOLDOUT_ROWS`` (40) rows or
    one that holds training rows -- are warned about, and ``details["caveats"]`` lists those
    warnings (the HTML report prints them above the tables), as it lists what the default run
    (``metrics=None``) left out and why: the ML metrics without a "target" in the schema, the attacks
    without ``test``.  ML metrics named in ``metrics`` without a target are a ConfigError.
    """
    schema = resolve_schema(schema, train)
    frames = check_frames(schema, train=train, synthetic=synthetic, test=test)
    train, synthetic, test = frames["train"], frames["synthetic"], frames.get("test")
    check_seed(seed)
    baselines, return_details = check_bool(baselines, "baselines"), check_bool(return_details, "return_details")
    evaluators, cv_evaluators = _check_evaluators(evaluators, "evaluators"), _check_evaluators(cv_evaluators,
                                                                                               "cv_evaluators")
    # checked here, under evaluate's own names: the metrics check them under theirs ('max_rows',
    # 'n_resample'), and only once the units before them have run
    n_queries, n_attacks, nnaa_resamples, attr_trees = (check_positive_int(v, k) for v, k in (
        (n_queries, "n_queries"), (n_attacks, "n_attacks"), (nnaa_resamples, "nnaa_resamples"),
        (attr_trees, "attr_trees")))
    if wasserstein_rows is not None:
        wasserstein_rows = check_positive_int(wasserstein_rows, "wasserstein_rows", 10)
    if attr_rows is not None:
        attr_rows = check_positive_int(attr_rows, "attr_rows")
    if synthesizer_factory is not None:  # an odd shadow count failed only once every other metric had run
        mds_shadow_models, mds_samples = check_mds_options(synthesizer_factory, mds_shadow_models, mds_samples,
                                                           ("mds_shadow_models", "mds_samples"))
    task = _task_of(schema)
    names = _resolve_metrics(metrics, test is not None, synthesizer_factory is not None, task)
    # the default run adapts to the tables: never in silence, and said in the report too (details["caveats"],
    # which the HTML report shows), not only as a warning
    left_out = [("evaluate: " + msg, UserWarning) for msg in default_left_out(names, test is not None, task)] \
        if metrics is None else []
    # values beyond the schema, said once per table and column here (the metrics' own warnings are silenced
    # while they run: each reads the columns again, and one such column was said some 90 times)
    outside = [(msg, OutOfSchemaWarning) for msg in out_of_schema(schema, train=train, synthetic=synthetic, test=test)]
    caveats = left_out + _table_caveats(train, test, names, schema) + outside
    for msg, category in caveats:
        warnings.warn(msg, category, stacklevel=2)
    opts = dict(seed=seed, n_queries=n_queries, evaluators=tuple(evaluators), wasserstein_rows=wasserstein_rows,
                n_attacks=n_attacks, cv_evaluators=tuple(cv_evaluators), nnaa_resamples=nnaa_resamples,
                attr_trees=attr_trees, attr_rows=attr_rows)
    if baselines and len(train) < 2:  # HALF's halves would be empty ("synthetic table is empty" before)
        warnings.warn(f"evaluate: the baselines need at least 2 training rows (HALF scores one half against the "
                      f"other), got {len(train)}; HALF, INDEPENDENT and SELF are reported as NaN", UserWarning,
                      stacklevel=2)
        baselines = False
    timings = {}
    table_names = [m for m in names if m != "mds"]
    base_vals = {b: {} for b in BASELINES}
    # one frame object for the training rows: the SELF baseline is this frame scored against itself,
    # and its searches against the holdout are the release's (tokens below)
    train = train.reset_index(drop=True)
    tokens = {"synthetic": {"train": "train", "synthetic": "release", "holdout": "test"},
              "SELF": {"train": "train", "synthetic": "train", "holdout": "test"},
              "HALF": {"train": "A", "synthetic": "B", "holdout": "test"},
              "INDEPENDENT": {"train": "A", "synthetic": "B-independent", "holdout": "test"}}
    jobs = [("synthetic", train, synthetic, None, table_names, tokens["synthetic"])]
    if baselines and table_names:
        # the whole schema (target, task, bounds, categories), not only its column names: the
        # baselines' ML, inference and distance metrics all read it
        key = (_key(train), _key(test), json.dumps(schema.to_dict(), sort_keys=True, default=str),
               tuple(sorted(opts.items())))
        cache = _BASELINE_CACHE.setdefault(key, {b: {} for b in BASELINES})
        todo = {b: [m for m in table_names if m not in cache[b]] for b in BASELINES}
        if any(todo.values()):
            tables = baseline_tables(train, seed)
            tables["SELF"] = (train, train)
            # SELF reuses the release's real-row models and holdout searches, INDEPENDENT HALF's
            jobs += [(b, tables[b][0], tables[b][1], train, todo[b], tokens[b]) for b in ("HALF", "SELF", "INDEPENDENT")
                     if todo[b]]
    results = _run_tables(jobs, test, schema, opts, n_jobs, progress)
    main = results["synthetic"][0]
    timings["synthetic"] = results["synthetic"][1]
    metric_timings = {name: res[0].pop("_times", {}) for name, res in results.items()}
    if baselines and table_names:
        for b in BASELINES:
            if b in results:
                got, t_b = results[b]
                cache[b].update({k: v for k, v in got.items() if not k.startswith("_")})
                timings[b] = t_b
            base_vals[b] = cache[b]
    reasons = main.pop("_nan_reasons", {})
    details = {"ml": main.pop("_ml_detail", None), "ml_cv": main.pop("_cv_detail", None),
               "mia": main.pop("_mia_detail", None), "timings": timings, "metric_timings": metric_timings,
               "caveats": [msg for msg, _ in caveats]}
    if "mds" in names:
        t1 = time.perf_counter()
        # too few distinct training records for the shadow splits: NaN with the reason, as for the other metrics
        res = _or_nan(lambda: membership_disclosure(train, schema, synthesizer_factory, mds_shadow_models,
                                                    mds_samples, seed=seed), reasons, "mds")
        main["mds"] = (res.get("mds", np.nan),)
        if res:
            details["mds"] = res
        if baselines and res:
            for b, fac in (("INDEPENDENT", IndependentSynthesizer), ("SELF", CopySynthesizer)):
                base_vals[b]["mds"] = (membership_disclosure(train, schema, fac, mds_shadow_models, 1, seed=seed)["mds"],)
        timings["mds"] = time.perf_counter() - t1
    rows = []
    for m in names:
        v = main[m]
        rows.append({"metric": m, "group": METRICS[m][0], "value": v[0],
                     "ci_low": v[1] if len(v) > 1 else np.nan, "ci_high": v[2] if len(v) > 2 else np.nan,
                     **{b: base_vals[b].get(m, (np.nan,))[0] for b in BASELINES},
                     "better": METRICS[m][1], "description": METRICS[m][2]})
    out = pd.DataFrame(rows, columns=["metric", "group", "value", "ci_low", "ci_high", *BASELINES, "better",
                                      "description"])
    nan = out.loc[out["value"].isna(), "metric"].tolist()
    # each NaN's reason: the one its metric gave here, else the known one
    details["nan_reasons"] = {m: reasons.get(m) or _NAN_REASONS.get(m, "") for m in nan}
    if nan:  # never a silent NaN: say which, and why where the reason is known -- here, from this thread:
        # a worker thread's own warning is lost if code elsewhere holds warnings.catch_warnings meanwhile
        # (see core.errors.quiet_library_warnings), so this summary repeats each reason
        why = [f"{m} ({details['nan_reasons'][m]})" if details["nan_reasons"][m] else m for m in nan]
        warnings.warn("evaluate: not defined for these tables, reported as NaN: " + "; ".join(why),
                      UserWarning, stacklevel=2)
    return (out, details) if return_details else out


# ---------------------------------------------------------------------------------------
# HTML report
# ---------------------------------------------------------------------------------------
