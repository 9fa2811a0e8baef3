"""Optuna tuner over any synthesizer preset, honest about what the tuning costs in privacy.

Objective (Du & Li, "Systematic Assessment of Tabular Data Synthesis Algorithms", 2024):
``L = a1 * Wasserstein fidelity + a2 * ML affinity (MLA) + a3 * 3-way query error`` of the
trial's synthetic table against validation records (lower is better), weights 1/3 each by
default; ``multi_objective=True`` returns the Pareto front of the three terms instead
(:mod:`tuning.objective`).

Privacy modes, stated in every result:

* ``"non-private"`` — trials are fit on the private ``train`` and scored on the private ``val``,
  as SynMeter does (TPE sampler, pruning).  Each fit is DP, but *choosing* among them reads the
  private data without accounting: the result says plainly that the tuning is NOT covered by the
  DP guarantee.
* ``"public"`` — trials are fit and scored on a public or proxy table the user supplies; the
  private ``train`` is touched once, by the final fit with the best parameters.
* ``"accounted"`` — random stopping (Papernot & Steinke, "Hyperparameter Tuning with Renyi
  Differential Privacy", ICLR 2022): the best of K runs is released, K geometric (or Poisson)
  with mean ``n_trials``, and the repeat-and-select event is charged to the released
  synthesizer's ledger, so its reported (epsilon, delta) covers the tuning.  Their theorem holds
  for K independent runs of *one fixed randomised procedure*, so in this mode:

  - each run draws its configuration from a fixed prior -- **random search**
    (``optuna.samplers.RandomSampler`` seeded with 128 secret bits), never TPE, whose next
    trial depends on earlier noisy scores; no default configuration is enqueued, enqueued
    trials are skipped, a dead worker's trial is not retried with its parameters, and pruning is
    off (intermediate scores would be further releases);
  - a run is a fit at the per-trial budget plus a Gaussian-noised score whose sensitivity is
    true under adding or removing one record, whatever the private validation size
    (:mod:`tuning.objective`: a fixed-size validation sample, queries from the schema, no
    random subsample); without ``val``, each run splits the private frame record by record
    with secret randomness (:func:`tuning.objective.split_records`), so all runs -- in any
    worker, before or after a resume -- are independent draws of the same procedure;
  - K is never drawn as a number: before each run a secret coin stops with the law's hazard
    (:mod:`tuning.accounting`); every started run counts, whether it completes, times out,
    crashes or fails; a run that fails, or whose worker is interrupted or dies before it reports, stops
    the study with nothing released, now and on resume; a stopped study only holds a "stopped" flag;
  - nothing exact is written by the tuner: the exact terms travel from the trial process in memory
    and only the clipped, noised score becomes the trial's value; the saved metadata, the
    summary and the released synthesizer's ledger carry neither the number of runs nor finished
    trials, nor the validation size, nor the score's sensitivity; optuna's per-trial log lines
    are silenced.  The storage still holds every run's synthesizer, configuration and noisy
    score, and Optuna's start and end time of every trial (none of which the theorem covers):
    keep it private.

Trials run in separate processes (:mod:`tuning.trials`); studies live in an Optuna RDB storage
(``sqlite:///file.db`` by default, ``postgresql://...`` for workers on several machines;
:mod:`tuning.storage`); studies resume from it, and ``optuna-dashboard <url>`` reads it.

The file is one thing, the :func:`tune` driver: check the arguments, set the study up for the
privacy mode, ask Optuna for runs, run them, tell the results, release.  What each step calls
lives elsewhere (objective, trials, storage, accounting, result); ``tune`` stays one function of
about 340 lines (67 of them its docstring) because the three privacy modes share one loop whose
differences are a few branches, and splitting it would pass a dozen locals between the pieces.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import socket
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from synthzoo.core.dpschema import measured_under_dp
from synthzoo.core.errors import ConfigError, SchemaError
from synthzoo.core.params import check_seed
from synthzoo.core.privacy.ledger import check_privacy_params, epsilon_of
from synthzoo.core.privacy.noise import NoiseSource
from synthzoo.core.schema import Schema
from synthzoo.datasets import train_test_split
from synthzoo.isolation import WORKER_INIT_ENV
from synthzoo.optuna_storage import storage_errors
from synthzoo.pipeline import schema_cost
from synthzoo.presets import PRESETS, make, preset_config

from .accounting import SHAPES, TRIAL, TUNER, coin_source, derived_seed, per_trial_rho
from .objective import (SCORE_ROWS, TERMS, VAL_SHARE, WASSERSTEIN_ROWS, clipped_score, score_sensitivity,
                        score_terms, validation_sketch, weighted)
from .result import (ABORTED, ACCOUNTED_NOTE, NON_PRIVATE_WARNING, NOTHING_RELEASED, PUBLIC_NOTE, REPLAYABLE_TUNING,
                     StudySettingsError, TuneResult, TuningAborted, _release_accounted, _shown, _zcdp, abort_lost_runs,
                     aborted_message, tuning_statement)
from .space import MODULE_CHOICES, check_space, default_params, suggest_config
from .storage import (DEFAULT_STORAGE, STATE_ATTR, STATE_CHUNK, STOPPED_ATTR, _best_complete_value,
                      _fail_dead_local_trials, _fail_stale, _finished, _pg_driver, _redact, _slots_taken, _storage,
                      _store_state, _within, decide_run, runs, stopped)
from .trials import TrialTimeout, _from_state, _InProcess, _TrialProcess

__all__ = ["ACCOUNTED_NOTE", "DEFAULT_STORAGE", "MODES", "NON_PRIVATE_WARNING", "NOTHING_RELEASED", "PUBLIC_NOTE",
           "REPLAYABLE_TUNING", "SCORE_ROWS", "STATE_ATTR", "STATE_CHUNK", "STOPPED_ATTR", "TERMS", "WASSERSTEIN_ROWS",
           "WORKER_INIT_ENV", "TrialTimeout", "TuneResult", "_pg_driver", "score_sensitivity", "score_terms", "tune"]

MODES = ("non-private", "public", "accounted")
#: The most trials a study may ask for: far beyond any tuning that ends (a trial takes seconds to minutes), and
#: a count above it is a typo, not a plan (accounted mode would also split the budget over that many runs).
MAX_TRIALS = 100_000
SPLIT, FINAL = 4, 5  # derived_seed labels: a run's split key, public mode's final fit (test-only replay)


# --------------------------------------------------------------------------- helpers
def _check_frame(df, name: str, allow_empty: bool = False) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame) or (len(df) == 0 and not allow_empty):
        raise ConfigError(f"{name} must be a non-empty pandas DataFrame")
    return df


def _weights(weights, privacy: str) -> tuple:
    if weights is None:
        return (0.5, 0.0, 0.5) if privacy == "accounted" else (1 / 3, 1 / 3, 1 / 3)
    try:
        w = tuple(float(x) for x in weights)
    except (TypeError, ValueError):
        raise ConfigError(f"weights must be three numbers (fidelity, mla, query), got {weights!r}") from None
    if len(w) != 3 or any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
        raise ConfigError(f"weights must be three non-negative numbers, not all zero, got {weights!r}")
    return w


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _schema_digest(schema: Schema) -> str:
    """A short fingerprint of the public schema (its bounds, categories and any DP measurement record): an
    accounted study resumes only on the schema it started with (its per-run budget and clipping follow it).  A row
    count in the schema's meta is left out, as a release leaves it out (no DP covers it)."""
    doc = {k: v for k, v in schema.to_dict().items() if k != "rows"}
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _sampler_seed_words(material: int) -> list[int]:
    """128 secret bits as the four 32-bit words numpy's RandomState (Optuna's RandomSampler) takes."""
    return [(material >> (32 * i)) & 0xFFFFFFFF for i in range(4)]


@contextlib.contextmanager
def _quiet_optuna(on: bool):
    """Optuna's per-trial log lines (values, parameters, pruning reasons) off while ``on``."""
    import optuna

    if not on:
        yield
        return
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


# --------------------------------------------------------------------------- main entry point
def tune(preset: str, train: pd.DataFrame, val: pd.DataFrame | None = None, *, epsilon=1.0, delta=1e-5,
         schema: Schema | None = None, n_trials: int = 20, privacy: str = "non-private",
         public: pd.DataFrame | tuple | None = None, storage=None, study_name: str | None = None,
         weights=None, multi_objective: bool = False, choose_modules: bool = True, space: dict | None = None,
         choices: dict | None = None, seed: int = 0,
         sampler_seed: int | None = None, trial_timeout: float | None = None, prune: bool = True,
         heartbeat_interval: int | None = None, grace_period: int | None = None,
         stopping: str = "geometric", models_dir: str | Path | None = None,
         refit: bool = True, start_from_defaults: bool = True, isolate: bool = True,
         verbose: bool = False, score_rows: int = SCORE_ROWS, val_share: float = VAL_SHARE,
         noise_seed: int | None = None) -> TuneResult:
    """Tune the preset ``preset`` with Optuna and return the best parameters, synthesizer and study.

    Parameters
    ----------
    train : the private training frame (accounted mode without ``val``: the whole private frame,
        which each run splits anew, see ``val_share``).
    val : validation frame the trials are scored on (``"non-private"`` and ``"accounted"``).
        Accounted mode scores on a sample of exactly ``score_rows`` of its records and may go
        without it.
    epsilon, delta : the privacy request of the release (``epsilon=None`` is a non-private run).
    schema : public :class:`Schema` (required: inferring it would read the private data).
    n_trials : trials to finish in this study (``"accounted"``: the *mean* of the random number of
        runs).  A resumed study counts the trials it already finished.
    privacy : ``"non-private"`` | ``"public"`` | ``"accounted"`` (see the module docstring).
    public : ``"public"`` mode's public/proxy table: a frame (split 80/20 for fit/score) or a
        ``(public_train, public_val)`` pair.
    storage : Optuna storage URL or file path; default ``sqlite:///synthzoo-tune.db``.  A PostgreSQL
        URL lets workers on several machines share one study (same ``study_name``).
    weights : (a1, a2, a3) for (fidelity, MLA, query error); default 1/3 each (accounted: 1/2, 0, 1/2).
    multi_objective : return the Pareto front over the three terms (``study.best_trials``).
    choose_modules : include numeric binning and the (selector, model) pair in the search.
    space, choices : narrow the search: ``{"model.gum.iterations": ("int", 20, 60)}`` and
        ``{"select_model": ["indif+gum"]}`` (see :func:`tuning.space.suggest_config`).
    seed : synthesizer and metric seed (same seed, same post-processing and sampling for the same
        parameters; the DP noise is secret and differs from run to run unless ``noise_seed``).
    sampler_seed : TPE sampler seed (default ``seed``; give each worker its own).  Not used in
        accounted mode, whose random search is seeded with secret bits.
    trial_timeout : seconds per trial (its fit, sample and validation scoring); a trial past it is
        stopped and recorded as pruned with the reason in its ``pruned_reason`` user attr, and the
        study goes on.  Not in accounted mode (ConfigError): whether a run ends in time follows the
        private rows, and there a run whose process dies stops the study with
        :class:`~tuning.result.TuningAborted`, releasing nothing, for the same reason.  A hard
        limit: the trial's process is killed, whatever native call (a long jax/numpy kernel) it is
        in.  With ``isolate=False``
        it is soft (SIGALRM in the main thread, which cannot interrupt one long native call, and a
        check after the fit).
    prune : prune hopeless trials (median rule on the partial objective); off in accounted mode.
    heartbeat_interval, grace_period : Optuna heartbeat (seconds) so trials of a killed worker are
        failed (and, except in accounted mode, retried) by the others (default 30 s, grace 90 s).
        A killed worker's trial on this host is failed at once when the study is resumed.
    stopping : ``"geometric"`` (K >= 1) or ``"poisson"`` (K >= 0) law of the random number of runs
        (accounted).
    models_dir : accounted mode also saves every run's synthesizer here as a model file.  Not
        needed to release the best run from another worker or after a resume: in accounted mode a
        run that beats every run finished before it keeps its synthesizer in the storage (trial
        system attrs), so the best run's is always there.  Like the storage, keep it private.
    start_from_defaults : enqueue the preset's default parameters as the first trial (not in
        accounted mode: its runs must all be draws from the prior).
    refit : in non-private mode, refit the best configuration on ``train`` when the best trial ran
        in another process (another worker, or before a resume).
    isolate : run each trial in a separate process (default), which makes ``trial_timeout`` a hard
        limit and keeps a crashing fit (segfault, out of memory) from ending the study: such a
        trial is recorded as pruned with the reason.  ``False``: in this process (for debugging).
    score_rows : accounted mode: the *public* number ``m`` of validation rows a run is scored on
        (the records with the smallest content hash, padded with a fixed public row when there
        are fewer; choose it from public knowledge, at most the validation size you expect).  The
        score's sensitivity is ``a1 * 2/m + a2 + a3/m``.
    val_share : accounted mode without ``val``: each record's chance to be a validation record in
        a run (independent secret draws per record and run).
    noise_seed : TEST ONLY.  Makes every trial's DP noise (fit: derived from ``noise_seed`` and the
        trial number) and, in accounted mode, the stopping coins, the random search, the splits and
        the score noise replayable.  Never stored; the summary and metadata say "replayable noise
        (test only)".

    The best synthesizer is *not* refitted: each trial process sends back its fitted synthesizer's
    JSON state (:meth:`Synthesizer.save`), and the best trial's is loaded.  A refit would be a
    further private fit, not covered in accounted mode; in non-private mode a best trial that ran in
    another process is refitted (``refit``), and in public mode the final fit on ``train`` is the
    only one that reads the private data.
    """
    import optuna

    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; available: {sorted(PRESETS)}")
    if privacy not in MODES:
        raise ConfigError(f"privacy must be one of {MODES}, got {privacy!r}")
    if not isinstance(schema, Schema):
        raise ConfigError("schema: tuning needs the public Schema (inferring one would read the private data)")
    if isinstance(n_trials, bool) or not isinstance(n_trials, (int, np.integer)) or not 1 <= n_trials <= MAX_TRIALS:
        raise ConfigError(f"n_trials must be a whole number from 1 to {MAX_TRIALS:,}, got {n_trials!r}")
    if trial_timeout is not None and not (float(trial_timeout) > 0):
        raise ConfigError(f"trial_timeout must be a positive number of seconds, got {trial_timeout!r}")
    if trial_timeout is not None and privacy == "accounted":
        # random stopping needs every run to be a DP mechanism; "ran past its time limit" is not one (the fit
        # time follows the private rows: AIM picks larger marginals on more of them), and the runs left to
        # select from would follow it
        raise ConfigError("privacy='accounted' takes no trial_timeout: whether a run ends in time depends on its "
                          "fit time, which follows the private rows and which DP does not cover, so the runs the "
                          "best is chosen from would too; bound a run's work with the preset's parameters instead")
    if stopping not in SHAPES:
        raise ConfigError(f"stopping must be one of {sorted(SHAPES)}, got {stopping!r}")
    if noise_seed is not None and (isinstance(noise_seed, bool) or not isinstance(noise_seed, (int, np.integer))
                                   or noise_seed < 0):
        raise ConfigError(f"noise_seed must be None or a non-negative integer, got {noise_seed!r}")
    score_rows = _positive_int(score_rows, "score_rows")
    for name, value in (("seed", seed), ("sampler_seed", sampler_seed)):
        if value is not None:
            check_seed(value, name)
    for key, vals in (choices or {}).items():
        if key not in MODULE_CHOICES:
            raise ConfigError(f"choices: unknown key {key!r}; the tuner chooses {sorted(MODULE_CHOICES)} "
                              f"(e.g. choices={{'select_model': ['indif+gum', 'aim+pgm']}})")
        if not vals or not set(vals) <= set(MODULE_CHOICES[key]):
            raise ConfigError(f"choices: {key!r} takes a non-empty list from {MODULE_CHOICES[key]}, got {vals!r}")
    # the whole search space before any trial (and, accounted, before any budget is spent)
    check_space(preset, space, choose_modules=choose_modules, choices=choices)
    epsilon, delta = check_privacy_params(epsilon, delta)
    weights = _weights(weights, privacy)
    if weights[1] > 0 and schema.meta.get("target") is None:
        # checked before any trial: the MLA term trains models to predict the schema's target
        raise ConfigError(f"weights: the MLA term (weight {weights[1]:g}) scores models trained to predict the "
                          "schema's target, and the schema names none; add \"target\": \"<column>\" at the top "
                          "level of the schema (file), or give the MLA term weight 0 (weights=(a, 0, b); on the "
                          "command line --weights a,0,b)")
    accounted = privacy == "accounted"
    schema_ledger = None  # accounted mode on a schema dp_schema measured: that measurement's account
    train = _check_frame(train, "train")
    split_share = None
    if privacy == "public":
        if public is None:
            raise ConfigError("privacy='public' needs public=<public or proxy frame> (or a (train, val) pair)")
        fit_df, score_df = (public if isinstance(public, tuple)
                            else train_test_split(_check_frame(public, "public"), test_size=0.2, seed=seed))
        fit_df, score_df = _check_frame(fit_df, "public[0]"), _check_frame(score_df, "public[1]")
    elif accounted:
        if epsilon is None:
            raise ConfigError("privacy='accounted' needs a finite epsilon; use 'non-private' for epsilon=None")
        if measured_under_dp(schema):
            # the schema was released once, before tuning: its events compose with the random-stopping
            # event (each run reads the schema as public and spends only its own share)
            schema_ledger, elsewhere = schema_cost(schema, epsilon)
            if elsewhere:
                raise ConfigError("privacy='accounted': the schema was measured by dp_schema on a shared ledger, "
                                  "whose charges are not in the schema; measure it with its own epsilon to tune on it")
        if multi_objective:
            raise ConfigError("multi_objective is not available with privacy='accounted' (random stopping "
                              "releases one best trial)")
        fit_df = train
        if val is None:  # each run splits the private frame record by record, with secret randomness
            if not (0.0 < float(val_share) < 1.0):
                raise ConfigError(f"val_share must lie in (0, 1), got {val_share!r}")
            score_df, split_share = None, float(val_share)
        else:  # only the fixed-size sample leaves this process
            score_df = validation_sketch(_check_frame(val, "val", allow_empty=True), schema, score_rows)
        prune = False
    else:
        fit_df, score_df = train, _check_frame(val, "val")
    prune = prune and not multi_objective  # Optuna prunes single-objective studies only
    # every table's columns against the schema before the study: a misspelt column failed each trial in turn,
    # with Optuna's traceback (accounted: the first run, aborting the study)
    tables = {"train": train, **({"public": fit_df, "public validation": score_df} if privacy == "public" else {}),
              **({"val": val} if isinstance(val, pd.DataFrame) and privacy != "public" else {})}
    for what, frame in tables.items():
        schema.check_columns(frame, f"the {what} table")
    if accounted:
        # a record outside the schema (an unseen category, a value past the public bounds, a missing value where
        # none may be) failed the fit of every run that drew it, and the shared storage then held the failed run,
        # the abort and the error's type: a function of the private rows without noise.  Checked here as the fit
        # checks it, before the study exists: the caller, who holds the data, is told; the storage holds nothing
        try:
            schema.validate(train, out_of_bounds=preset_config(preset).get("out_of_bounds", "raise"))
        except SchemaError as e:
            raise SchemaError(f"privacy='accounted': the private table does not fit the schema (checked before the "
                              f"study; nothing was written to the storage): {e}") from None
    if isolate and os.name != "posix":
        warnings.warn("trial processes need a POSIX system; trials run in this process and trial_timeout is soft",
                      RuntimeWarning, stacklevel=2)
        isolate = False
    if heartbeat_interval is None:
        heartbeat_interval = 30
    rdb = _storage(storage, heartbeat_interval, grace_period, retry=not accounted)
    study_name = study_name or f"synthzoo-{preset}-{privacy}"
    pruner = (optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=0) if prune and not multi_objective
              else optuna.pruners.NopPruner())
    kw = {"directions": ["minimize"] * 3} if multi_objective else {"direction": "minimize"}
    with _quiet_optuna(accounted or verbose), storage_errors(getattr(rdb, "url", None) or str(storage)):
        # verbose: our own one line a trial says it, Optuna's would repeat it
        study = optuna.create_study(storage=rdb, study_name=study_name, pruner=pruner, load_if_exists=True, **kw)
    # secret randomness of this process: random search, score noise (and the stopping coins, below)
    tuner_noise = NoiseSource() if noise_seed is None else NoiseSource(derived_seed(noise_seed, TUNER))
    if accounted:  # random search from the fixed prior: every run an independent draw
        study.sampler = optuna.samplers.RandomSampler(seed=_sampler_seed_words(tuner_noise.seed_material()))
    else:
        # seeded, and offset by the trials already stored, so a resumed study does not redraw its first points
        base = seed if sampler_seed is None else sampler_seed
        study.sampler = optuna.samplers.TPESampler(seed=(base + len(study.get_trials(deepcopy=False))) % 2 ** 32,
                                                   n_startup_trials=min(10, max(3, n_trials // 3)))
    statement = {"non-private": NON_PRIVATE_WARNING, "public": PUBLIC_NOTE, "accounted": ACCOUNTED_NOTE}[privacy]
    prior = study.user_attrs.get("synthzoo")
    was_replayable = bool(isinstance(prior, dict) and prior.get("replayable_noise"))
    ran = [t for t in study.get_trials(deepcopy=False) if t.state != optuna.trial.TrialState.WAITING]
    if prior is None and ("synthzoo_grid" in study.user_attrs or ran):
        # another program's study (a bench grid's, say): the tuner wrote its settings into it, took its trials
        # for tuning trials and died with KeyError: 'config'.  (Configurations a user enqueued into a new study
        # before tuning are welcome.)
        held = len(study.get_trials(deepcopy=False))
        kind = " (a synthzoo bench grid)" if "synthzoo_grid" in study.user_attrs else ""
        raise ConfigError(f"study {study_name!r} in this storage is not a synthzoo tuning study{kind}: it holds {held} "
                          "trial(s) and no tuning settings; give another study_name")
    # a study resumes only with the settings it started with: its trials' values are compared to pick the best,
    # and values scored under two objectives (weights), budgets or spaces do not compare (a new space also
    # made Optuna raise mid-trial, and a switch to multi_objective failed every trial forever)
    mechanism = json.loads(json.dumps({"epsilon": epsilon, "delta": delta, "weights": list(weights),
                                       **({"score_rows": score_rows, "schema": _schema_digest(schema),
                                           "validation": "given" if split_share is None else split_share}
                                          if accounted else {}),
                                       "choose_modules": bool(choose_modules), "space": space, "choices": choices,
                                       **({} if accounted else {"multi_objective": bool(multi_objective)})},
                                      default=str))
    now = {"preset": preset, "privacy": privacy, **mechanism}
    before = {}
    if prior is not None:
        before.update({k: prior[k] for k in ("preset", "privacy") if k in prior})
        before.update(prior.get("mechanism", {}))
        if accounted and "mean_runs" in prior:
            before.update({"n_trials": int(prior["mean_runs"]), "stopping": prior.get("stopping")})
            now.update({"n_trials": int(n_trials), "stopping": stopping})
    if len(study.directions) != len(kw.get("directions", [None])):  # a study of another Optuna objective count
        before.setdefault("multi_objective", len(study.directions) > 1)
        now["multi_objective"] = bool(multi_objective)
    changed = {k: (before[k], now.get(k)) for k in before if k in now and before[k] != now[k]}
    if changed:
        raise StudySettingsError(study_name, changed)

    # accounted mode: the per-trial budget (public: from epsilon, delta and the mean number of runs)
    trial_eps, trial_rho, rho_score, sigma = epsilon, None, 0.0, None
    shape = SHAPES[stopping]
    if accounted:
        prior = tuple(c.event for c in schema_ledger.charges) if schema_ledger is not None else ()
        prior_delta = schema_ledger.extra_delta if schema_ledger is not None else 0.0
        trial_rho = per_trial_rho(epsilon, delta, float(n_trials), shape, prior, prior_delta)
        rho_score = 0.1 * trial_rho  # a tenth of each trial's budget for its noisy score
        # a run's request covers the schema's cost (its ledger absorbs it) plus its own fit, so that the
        # stages share exactly rho_trial - rho_score
        trial_eps = epsilon_of([*prior, _zcdp(trial_rho - rho_score)], delta - prior_delta)
        sigma = score_sensitivity(weights, score_rows) / math.sqrt(2 * rho_score)  # kept in memory only
        begun = study.user_attrs.get("synthzoo")
        if isinstance(begun, dict) and begun.get("per_trial_rho") not in (None, trial_rho):
            # a study begun before the schema was a setting: its runs spent another per-run budget (the schema's
            # DP cost differs), which the release's random-stopping charge would not state
            raise StudySettingsError(study_name, {"schema": (f"one leaving each run rho={begun['per_trial_rho']:.6g}",
                                                             f"one leaving rho={trial_rho:.6g}")})
    meta = {"preset": preset, "privacy": privacy, "privacy_statement": statement, "epsilon": epsilon,
            "delta": delta, "weights": list(weights), "multi_objective": bool(multi_objective), "mechanism": mechanism,
            "choose_modules": bool(choose_modules), "seed": int(seed), "study_name": study_name,
            "storage": _redact(storage) if isinstance(storage, str) else DEFAULT_STORAGE if storage is None
            else type(storage).__name__}
    # a study that any session ran with the test-only noise_seed stays flagged: its earlier runs' coins and noisy
    # scores were replayable, whichever run a later session (with secret noise) releases
    replayable = noise_seed is not None or was_replayable
    if replayable:
        meta["replayable_noise"] = REPLAYABLE_TUNING
    if accounted:
        meta.update({"search": "random search from a fixed prior (secret randomness)", "mean_runs": int(n_trials),
                     "stopping": stopping, "per_trial_rho": trial_rho, "score_rho": rho_score,
                     "score_rows": score_rows,
                     "validation": ("given: scored on a sample of score_rows of its records" if split_share is None
                                    else f"each run splits the records with secret per-record draws "
                                         f"(share {split_share:g})"),
                     "note": "the storage holds every run's synthesizer, configuration and noisy score, which the "
                             "DP guarantee does not cover: keep it private"})
    study.set_user_attr("synthzoo", meta)
    # also as plain strings: optuna-dashboard shows them whole (it cuts other values at 1,024 characters)
    study.set_user_attr("privacy", privacy)
    study.set_user_attr("privacy_statement", statement)
    if start_from_defaults and not accounted and not study.get_trials(deepcopy=False):
        # the untuned preset is the first point, so the best found is never worse on val than it
        study.enqueue_trial(_within(default_params(preset, choose_modules), space, choices), skip_if_exists=True)

    # trial number -> fitted synthesizer's JSON state, and its value, in this process (single objective:
    # the best one only)
    states, state_values = {}, {}
    coins = coin_source(noise_seed) if accounted else None
    setup = {"preset": preset, "epsilon": trial_eps, "delta": delta, "schema": schema, "seed": seed,
             "fit_df": fit_df, "score_df": score_df, "weights": weights,
             "timeout": None if trial_timeout is None else float(trial_timeout),
             "score_rows": score_rows if accounted else None, "val_share": split_share}
    runner = _TrialProcess(setup) if isolate else _InProcess(setup)
    worker = f"{socket.gethostname()}:{os.getpid()}"

    def extra_for(number: int) -> dict:
        """What this trial alone gets, in memory: its replayable noise seed (test only), its split key."""
        extra = {"noise_seed": None if noise_seed is None else derived_seed(noise_seed, TRIAL, number)}
        if split_share is not None:
            src = NoiseSource() if noise_seed is None else NoiseSource(derived_seed(noise_seed, SPLIT, number))
            extra["split_key"] = src.words(4).tobytes()
        return extra

    def objective(trial):
        if accounted:
            # a run or surplus, decided in trial-number order by the secret stopping coins
            trial.set_user_attr("worker", worker)
            if not decide_run(study, trial, coins, float(n_trials), shape):
                raise optuna.TrialPruned("random stopping: no further run (or an enqueued trial); no data read")
        else:
            # exactly n_trials finished trials per study, whatever the number of workers.  A trial first
            # claims a slot (committed), then counts the finished trials and every other live claim: of
            # two trials racing for the last slot the later reader always sees the earlier claim, so the
            # study never overshoots (a trial that loses is recorded as surplus and reads no data).
            trial.set_user_attr("claim", True)
            if _slots_taken(study, exclude=trial.number) >= int(n_trials):
                trial.set_user_attr("surplus", True)
                raise optuna.TrialPruned("the study already has its trials; no data read")
            trial.set_user_attr("worker", worker)
        overrides = suggest_config(trial, preset, choose_modules=choose_modules, ranges=space, choices=choices)
        trial.set_user_attr("config", json.loads(json.dumps(overrides, default=str)))

        should_prune = None
        if prune:
            def should_prune(step, value):
                trial.report(value, step)
                return trial.should_prune()
        try:
            out = runner.run(overrides, should_prune, extra_for(trial.number))
        except (KeyboardInterrupt, TuningAborted):
            raise
        except Exception as e:  # noqa: BLE001 - an error in the fit is a run without output too
            if not accounted:
                raise
            # the storage (which others may read) gets the error's type only: its text can quote private
            # values ("value(s) [...] not among the schema's categories"); the operator is told it all
            out = ("error", f"{type(e).__name__} (its message is not stored: it may quote private values)",
                   f"{type(e).__name__}: {e}")
        if out[0] != "done" and accounted:
            # a run without output (its process died: out of memory, say) may have failed because of the
            # private rows, and selecting among the others would release that: the study releases nothing
            trial.set_user_attr("pruned_reason", out[1])
            study.set_user_attr(ABORTED, f"run {trial.number}: {out[1]}")
            raise TuningAborted(aborted_message(f"run {trial.number}: {out[-1]}"))
        if out[0] != "done":  # pruned, past its time limit, or its process died
            trial.set_user_attr("pruned_reason", out[1])
            raise optuna.TrialPruned(out[1])
        _, terms, seconds, state = out
        if not accounted:
            # not in accounted mode: a run's fit time follows the private rows (AIM picks larger marginals
            # on more of them), a side channel the DP guarantee does not cover; like the exact terms, it
            # stays in this process
            trial.set_user_attr("fit_seconds", seconds)
        if accounted:
            # the only value that leaves this process: the clipped score plus Gaussian noise calibrated to
            # its data-independent sensitivity; the exact terms are never written anywhere
            value = clipped_score(terms, weights) + float(tuner_noise.normal(sigma))
            del terms
            if models_dir is not None:
                Path(models_dir).mkdir(parents=True, exist_ok=True)
                (Path(models_dir) / f"{study_name}-trial{trial.number}.json").write_text(state)
            # the best run beats every run finished before it, so storing the synthesizer of each run that
            # does (written before the trial is marked complete) keeps the best one releasable by
            # whichever worker ends the study, or after a resume
            if value <= _best_complete_value(study):
                _store_state(study, trial, state)
        else:
            for t in TERMS:
                trial.set_user_attr(t, terms[t])
            if multi_objective:
                states[trial.number] = state
                return [terms[t] if w > 0 else 0.0 for t, w in zip(TERMS, weights)]
            value = weighted(terms, weights)
        if not states or value < min(state_values.values()):
            states.clear()  # keep only the best fitted synthesizer of this process in memory
            state_values.clear()
            states[trial.number], state_values[trial.number] = state, value
        return value

    def wait_for_others() -> None:
        time.sleep(0.5)
        _fail_stale(study, retry=not accounted)

    _fail_dead_local_trials(study, retry=not accounted)
    if verbose and accounted:
        print("  accounted tuning: random search with random stopping; per-trial values are not shown", flush=True)
    try:
        quiet = _quiet_optuna(accounted or verbose)
        quiet.__enter__()
        # the storage stopping mid-study (a server restarted, a file removed) is a ConfigError naming it
        with storage_errors(getattr(rdb, "url", None) or str(storage), during=True):
            while True:
                if accounted:
                    abort_lost_runs(study)  # a run interrupted or killed mid-fit, here or in another worker
                    if ABORTED in study.user_attrs:  # a run ended without output, here or in another worker
                        break
                    if stopped(study):
                        # every worker selects from all the runs: wait for those still running elsewhere (a dead
                        # worker's run is failed: same host at once, elsewhere after the heartbeat grace period)
                        if not runs(study, states=(optuna.trial.TrialState.RUNNING,)):
                            break
                        wait_for_others()
                        continue
                else:
                    if len(_finished(study)) >= int(n_trials):
                        break
                    if _slots_taken(study) >= int(n_trials):
                        # the last trials are running in other workers: wait for them, so that every worker
                        # selects from all the trials.  A dead worker's trial is failed (same host: at once;
                        # elsewhere: after the heartbeat grace period) and re-enqueued, and then a waiting
                        # worker runs it.
                        wait_for_others()
                        continue
                mine: list = []  # this process's trial (study.trials[-1] may be another worker's)
                study.optimize(objective, n_trials=1, catch=(), gc_after_trial=False, show_progress_bar=False,
                               callbacks=[lambda _study, frozen: mine.append(frozen)])
                if verbose and not accounted and mine:
                    last = mine[-1]
                    shown = (f" value={_shown(last.values if len(last.values) > 1 else last.values[0])}"
                             if last.state == optuna.trial.TrialState.COMPLETE else "")
                    print(f"  trial {last.number}: {last.state.name}{shown}"
                          + (f" ({last.user_attrs['pruned_reason']})" if "pruned_reason" in last.user_attrs else ""),
                          flush=True)
    finally:
        runner.close()
        quiet.__exit__(None, None, None)

    if accounted:
        return _release_accounted(study, meta, statement, states, weights, epsilon, delta, trial_eps, trial_rho,
                                  n_trials, shape, models_dir, study_name, replayable, verbose,
                                  schema_ledger)

    finished = _finished(study)
    meta["finished_trials"] = len(finished)
    complete = [t for t in finished if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        raise ConfigError("no trial completed (all pruned or timed out); raise trial_timeout or n_trials")
    if multi_objective:
        front = study.best_trials
        meta["pareto_front"] = [{"number": t.number, "values": t.values, "params": t.params} for t in front]
        best = min(front, key=lambda t: sum(w * v for w, v in zip(weights, t.values)))
    else:
        best = min(complete, key=lambda t: t.value)
    config = best.user_attrs["config"]
    state = states.get(best.number)
    synth = None if state is None or privacy == "public" else _from_state(state)
    if privacy == "public" or (synth is None and refit):
        # the final fit (public mode) or a refit of the best trial that ran elsewhere: fresh secret noise,
        # or with the test-only noise_seed that trial's own replayable noise
        final_noise = None if noise_seed is None else derived_seed(noise_seed, FINAL if privacy == "public" else TRIAL,
                                                                   *(() if privacy == "public" else (best.number,)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            synth = make(preset, epsilon=epsilon, delta=delta, schema=schema, seed=seed, noise_seed=final_noise,
                         **config).fit(train)
    meta.update({"best_trial": best.number, "best_params": best.params, "best_config": config,
                 "best_value": None if multi_objective else best.value})
    if synth is not None:
        # the released synthesizer (and its model file) says it was selected by tuning, and a non-private
        # tuning's reads of the private rows are not covered by its (epsilon, delta)
        synth.tuning_ = tuning_statement(privacy, len(finished))
        meta["synthesizer_privacy"] = synth.privacy_report()
    study.set_user_attr("synthzoo", meta)
    if privacy == "non-private":
        warnings.warn(NON_PRIVATE_WARNING, UserWarning, stacklevel=2)
    return TuneResult(best.params, config, synth, study, privacy, statement,
                      None if multi_objective else best.value, meta, best.number)
