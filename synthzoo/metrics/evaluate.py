"""``evaluate``: every metric on one table, each next to its HALF / INDEPENDENT / SELF baselines
(the HTML page around it is :mod:`synthzoo.metrics.html`)."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.schema import Schema
from ._common import check_frames, resolve_schema
from .association import association_difference
from .baselines import BASELINES, baseline_tables
from .marginal import query_error_3way, tvd_1way, tvd_2way
from .mds import CopySynthesizer, IndependentSynthesizer, membership_disclosure
from .ml import DEFAULT_EVALUATORS, ml_scores
from .privacy import privacy_scores
from .wasserstein import wasserstein_fidelity

# name -> (group, better direction, description)
METRICS = {
    "wasserstein": ("fidelity", "lower", "Du & Li Wasserstein fidelity: mean OT distance over 1- and 2-way marginals"),
    "tvd_1way": ("fidelity", "lower", "mean total variation distance over 1-way marginals"),
    "tvd_2way": ("fidelity", "lower", "mean total variation distance over 2-way marginals"),
    "association_diff": ("fidelity", "lower", "mean |difference| of pairwise associations (Pearson / Cramér's V / eta)"),
    "query_error_3way": ("utility", "lower", "mean absolute error of 1,000 random 3-way range/point queries"),
    "ml_f1": ("utility", "higher", "train on synthetic, test on real: macro F1, mean over evaluators"),
    "ml_auc": ("utility", "higher", "train on synthetic, test on real: ROC AUC, mean over evaluators"),
    "ml_rmse": ("utility", "lower", "train on synthetic, test on real: RMSE, mean over evaluators"),
    "ml_r2": ("utility", "higher", "train on synthetic, test on real: R², mean over evaluators"),
    "ml_affinity": ("utility", "lower", "MLA: mean relative gap to the same models trained on real rows"),
    "dcr_risk": ("privacy", "lower", "share of rows closer to training rows than the holdout's 5th percentile (normalised)"),
    "identical_match_risk": ("privacy", "lower", "share of rows identical to a training row (normalised vs holdout)"),
    "nndr_risk": ("privacy", "lower", "nearest-neighbour distance ratio below the holdout's 5th percentile (normalised)"),
    "domias_auc": ("privacy", "lower", "DOMIAS-style density-ratio membership inference, ROC AUC (0.5 = none)"),
    "singling_out_risk": ("privacy", "lower", "singling-out attack, R = (tau_train - tau_control)/(1 - tau_control); "
                          "read on a member sample of the holdout's size, so its ceiling is ~|holdout|/|train|"),
    "linkability_risk": ("privacy", "lower", "linkability attack, normalised risk R"),
    "inference_risk": ("privacy", "lower", "attribute-inference attack on the target column, normalised risk R"),
    "mds": ("privacy", "lower", "membership disclosure score of the synthesizer (shadow models)"),
}
# tvd_1way is available by name but not in the default set: 1-way metrics cannot see
# correlations, and INDEPENDENT (exact 1-way marginals) is not a floor for them
GROUPS = {"fidelity": ["wasserstein", "tvd_2way", "association_diff"],
          "utility": ["query_error_3way", "ml_f1", "ml_auc", "ml_rmse", "ml_r2", "ml_affinity"],
          "privacy": ["dcr_risk", "identical_match_risk", "nndr_risk", "domias_auc", "singling_out_risk",
                      "linkability_risk", "inference_risk"]}
_PRIV_KEY = {"dcr_risk": "dcr", "identical_match_risk": "ims", "nndr_risk": "nndr", "domias_auc": "domias",
             "singling_out_risk": "singling_out", "linkability_risk": "linkability", "inference_risk": "inference"}
_ML = {"ml_f1": "f1", "ml_auc": "auc", "ml_rmse": "rmse", "ml_r2": "r2"}


def _resolve_metrics(metrics, has_test: bool, has_factory: bool, task: str | None) -> list[str]:
    if metrics is None:
        names = GROUPS["fidelity"] + GROUPS["utility"] + (GROUPS["privacy"] if has_test else [])
        if has_factory:
            names.append("mds")
    else:
        if isinstance(metrics, str):
            metrics = [metrics]
        names = []
        for m in metrics:
            if m in GROUPS:
                names += GROUPS[m]
            elif m in METRICS:
                names.append(m)
            else:
                raise ConfigError(f"metrics: unknown metric or group {m!r}; choose from {sorted(GROUPS)} or "
                                  f"{sorted(METRICS)}")
    reg = task is not None and "regress" in task
    drop = {"ml_f1", "ml_auc"} if reg else {"ml_rmse", "ml_r2"}
    if task is None and metrics is None:  # no target in the schema: nothing to predict
        drop |= {m for m in METRICS if m.startswith("ml_")}
    names = [m for m in dict.fromkeys(names) if m not in drop]
    if not has_test:
        needs = [m for m in names if m.startswith("ml_") or METRICS[m][0] == "privacy" and m != "mds"]
        if metrics is not None and needs:
            raise ConfigError(f"metrics {needs} need real held-out rows: pass test=...")
        names = [m for m in names if m not in needs]
    if "mds" in names and not has_factory:
        raise ConfigError("metric 'mds' needs synthesizer_factory=(seed -> synthesizer with fit/sample)")
    return names


def _task_of(schema: Schema) -> str | None:
    if schema.meta.get("target") is None:
        return None
    t = schema.meta.get("task")
    if t:
        return t
    return "classification" if schema[schema.meta["target"]].kind == "categorical" else "regression"


def _score_table(real, synth, test, schema, names, opts, ml_train=None) -> dict:
    """All selected metrics of one (real, synthetic) pair -> {name: (value, ci_low, ci_high)}."""
    out = {}
    for m in names:
        if m == "wasserstein":
            out[m] = (wasserstein_fidelity(real, synth, schema, max_rows=opts["wasserstein_rows"], seed=opts["seed"]),)
        elif m == "tvd_1way":
            out[m] = (tvd_1way(real, synth, schema),)
        elif m == "tvd_2way":
            out[m] = (tvd_2way(real, synth, schema),)
        elif m == "association_diff":
            out[m] = (association_difference(real, synth, schema),)
        elif m == "query_error_3way":
            out[m] = (query_error_3way(real, synth, schema, n_queries=opts["n_queries"], seed=opts["seed"]),)
    ml_names = [m for m in names if m.startswith("ml_")]
    if ml_names:
        df = ml_scores(ml_train if ml_train is not None else real, synth, test, schema,
                       evaluators=opts["evaluators"], seed=opts["seed"])
        for m in ml_names:
            out[m] = (float(df["gap"].mean()),) if m == "ml_affinity" else \
                (float(df.loc[df["score"] == _ML[m], "synthetic"].mean()),)
        out["_ml_detail"] = df
    priv = [m for m in names if m in _PRIV_KEY]
    if priv:
        df = privacy_scores(real, synth, test, schema, metrics=[_PRIV_KEY[m] for m in priv],
                            n_attacks=opts["n_attacks"], seed=opts["seed"])
        for m, row in zip(priv, df.itertuples()):
            out[m] = (row.risk, row.ci_low, row.ci_high)
    return out


_BASELINE_CACHE: dict = {}


def _key(df) -> int:
    return int(pd.util.hash_pandas_object(df.astype(str), index=False).sum()) if df is not None else 0


def evaluate(train: pd.DataFrame, synthetic: pd.DataFrame, test: pd.DataFrame | None = None,
             schema: Schema | None = None, metrics=None, baselines: bool = True, seed: int = 0,
             n_queries: int = 1000, evaluators=DEFAULT_EVALUATORS, wasserstein_rows: int = 2000,
             n_attacks: int = 1000, synthesizer_factory: Callable | None = None, mds_shadow_models: int = 4,
             mds_samples: int = 1, return_details: bool = False):
    """Score a synthetic table: fidelity, utility and privacy risk, each with its baselines.

    ``train``: the real rows the synthesizer was fitted on; ``synthetic``: the release;
    ``test``: real held-out rows (needed by the ML metrics and, as the non-member control,
    by the privacy metrics — skipped without it); ``metrics``: names or groups
    (``"fidelity"``, ``"utility"``, ``"privacy"``; see ``METRICS``), default all that apply;
    ``synthesizer_factory``: ``seed -> synthesizer`` to add the shadow-model ``mds``.

    Returns a tidy frame, one row per metric: ``metric``, ``group``, ``value`` (with
    ``ci_low``/``ci_high`` for the attacks), ``HALF``, ``INDEPENDENT``, ``SELF`` (the baseline
    values, see :mod:`synthzoo.metrics.baselines`), ``better`` (``lower``/``higher``) and
    ``description``.  Baselines are cached per (train, test, options), so scoring several
    synthetic tables against one split computes them once.
    """
    schema = resolve_schema(schema, train)
    frames = check_frames(schema, train=train, synthetic=synthetic, test=test)
    train, synthetic, test = frames["train"], frames["synthetic"], frames.get("test")
    task = _task_of(schema)
    names = _resolve_metrics(metrics, test is not None, synthesizer_factory is not None, task)
    if any(m.startswith("ml_") for m in names) and task is None:
        raise ConfigError("ML metrics need the schema's 'target' (and 'task'); add them to the schema or "
                          "leave ml_* out of metrics")
    opts = dict(seed=seed, n_queries=n_queries, evaluators=tuple(evaluators), wasserstein_rows=wasserstein_rows,
                n_attacks=n_attacks)
    timings = {}
    t0 = time.perf_counter()
    table_names = [m for m in names if m != "mds"]
    main = _score_table(train, synthetic, test, schema, table_names, opts)
    timings["synthetic"] = time.perf_counter() - t0
    base_vals = {b: {} for b in BASELINES}
    if baselines and table_names:
        key = (_key(train), _key(test), tuple(schema.names), tuple(sorted(opts.items())))
        cache = _BASELINE_CACHE.setdefault(key, {b: {} for b in BASELINES})
        tables = None
        for b in BASELINES:
            todo = [m for m in table_names if m not in cache[b]]
            if todo:
                t1 = time.perf_counter()
                tables = tables or baseline_tables(train, seed)
                real_b, rel_b = tables[b]
                got = _score_table(real_b, rel_b, test, schema, todo, opts, ml_train=train)
                got.pop("_ml_detail", None)
                cache[b].update(got)
                timings[b] = time.perf_counter() - t1
            base_vals[b] = cache[b]
    details = {"ml": main.pop("_ml_detail", None), "timings": timings}
    if "mds" in names:
        t1 = time.perf_counter()
        res = membership_disclosure(train, schema, synthesizer_factory, mds_shadow_models, mds_samples, seed=seed)
        main["mds"] = (res["mds"],)
        details["mds"] = res
        if baselines:
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
    return (out, details) if return_details else out


# ---------------------------------------------------------------------------------------
# HTML report
# ---------------------------------------------------------------------------------------
