"""Optuna storage helpers: the RDB storage with heartbeats, the claim/slot logic that makes
several workers finish exactly the trials a study needs, and the synthesizers kept in trial
system attributes.

Accounted mode (random stopping) keeps no number of runs anywhere.  A trial becomes a *run*
(user attr ``run``) or *surplus* (user attr ``surplus``; it read no data) in the order of trial
numbers: it first waits until every earlier trial that is still running has decided, then, unless
the study is stopped or the trial is an enqueued one (fixed parameters are not a draw from the
prior), flips the secret stopping coin for the runs started so far (:func:`decide_run`).  A coin
that says stop sets the study's ``synthzoo:stopped`` system attribute -- the only trace of the
stopping -- before the trial records itself as surplus, so every later trial sees it.
"""

from __future__ import annotations

import base64
import math
import time
import warnings
import zlib

from synthzoo.optuna_storage import fail_dead_local_trials as _fail_dead_local_trials
from synthzoo.optuna_storage import finished_states as _finished_states
from synthzoo.optuna_storage import pg_driver as _pg_driver
from synthzoo.optuna_storage import rdb_storage
from synthzoo.optuna_storage import redact as _redact

from .accounting import stop_coin

DEFAULT_STORAGE = "sqlite:///synthzoo-tune.db"
STATE_ATTR = "synthzoo:model_state"  # trial system attr: the fitted synthesizer (accounted mode)
STATE_CHUNK = 60_000  # characters per stored attr (MySQL's TEXT column holds 64 KiB)
STOPPED_ATTR = "synthzoo:stopped"  # study system attr (accounted mode): a stopping coin said stop


def _storage(storage, heartbeat_interval, grace_period, retry: bool = True):
    """The tuner's storage: :func:`synthzoo.optuna_storage.rdb_storage` (default: a SQLite file)."""
    return rdb_storage(DEFAULT_STORAGE if storage is None else storage, heartbeat_interval, grace_period, retry)


def _within(params: dict, space: dict | None, choices: dict | None) -> dict:
    """``params`` less the values a user-narrowed space or module choice excludes."""
    out = {}
    for key, val in params.items():
        if choices and key in choices and val not in choices[key]:
            continue
        spec = (space or {}).get(key)
        if spec is not None and (val not in spec[1] if spec[0] == "cat" else not spec[1] <= val <= spec[2]):
            continue
        out[key] = val
    return out


def _slots_taken(study, exclude: int | None = None) -> int:
    """Finished trials plus the live claims of running ones (``exclude``: the caller's own trial)."""
    import optuna

    n = 0
    for t in study.get_trials(deepcopy=False):
        if t.user_attrs.get("surplus") or t.number == exclude:
            continue
        if t.state in _finished_states() or (t.state == optuna.trial.TrialState.RUNNING and t.user_attrs.get("claim")):
            n += 1
    return n


def _finished(study, exclude_surplus: bool = True) -> list:
    return [t for t in study.get_trials(deepcopy=False, states=_finished_states())
            if not (exclude_surplus and t.user_attrs.get("surplus"))]


def _store_state(study, trial, state: str) -> None:
    """Keep a trial's fitted synthesizer in the storage (trial system attrs, which optuna-dashboard
    does not list): zlib + base64 in chunks, the chunk count written last so a reader never sees
    a partial state."""
    blob = base64.b64encode(zlib.compress(state.encode(), 6)).decode("ascii")
    parts = [blob[i:i + STATE_CHUNK] for i in range(0, len(blob), STATE_CHUNK)]
    for i, part in enumerate(parts):
        study._storage.set_trial_system_attr(trial._trial_id, f"{STATE_ATTR}:{i}", part)
    study._storage.set_trial_system_attr(trial._trial_id, STATE_ATTR, len(parts))


def _stored_state(frozen) -> str | None:
    n = frozen.system_attrs.get(STATE_ATTR)
    if n is None:
        return None
    blob = "".join(frozen.system_attrs[f"{STATE_ATTR}:{i}"] for i in range(int(n)))
    return zlib.decompress(base64.b64decode(blob)).decode()


def _best_complete_value(study) -> float:
    import optuna

    vals = [t.value for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
            if t.value is not None]
    return min(vals, default=math.inf)


def _fail_stale(study, retry: bool = True) -> None:
    """Fail this host's dead workers' trials at once, and any worker's after the heartbeat grace."""
    import optuna

    _fail_dead_local_trials(study, retry)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


# --------------------------------------------------------------------------- accounted mode
def stopped(study) -> bool:
    """Whether a stopping coin of this (accounted) study has said stop."""
    return bool(study._storage.get_study_system_attrs(study._study_id).get(STOPPED_ATTR))


def runs(study, states=None) -> list:
    """The trials that are runs (started and read data; counted by random stopping, whatever
    their end: complete, pruned after a time limit or crash, or failed)."""
    return [t for t in study.get_trials(deepcopy=False, states=states) if t.user_attrs.get("run")]


def _decided(t) -> bool:
    return bool(t.user_attrs.get("run") or t.user_attrs.get("surplus"))


def decide_run(study, trial, coins, mean: float, shape: float, poll: float = 0.2) -> bool:
    """Make ``trial`` a run (True) or surplus (False, nothing read) in trial-number order.

    Waits until every lower-numbered trial that is still running has decided (a dead worker's
    trial is failed meanwhile: same host at once, elsewhere after the heartbeat grace period), so
    runs start one coin at a time whatever the number of workers.  Then: surplus if the study is
    stopped or the trial carries fixed (enqueued) parameters; else the secret coin for the runs
    started so far, and a coin that says stop stops the study.
    """
    import optuna

    running = optuna.trial.TrialState.RUNNING
    while True:
        trials = study.get_trials(deepcopy=False)
        if not any(t.number < trial.number and t.state == running and not _decided(t) for t in trials):
            break
        time.sleep(poll)
        _fail_stale(study, retry=False)
    fixed = "fixed_params" in study._storage.get_trial_system_attrs(trial._trial_id)
    if fixed or stopped(study):
        trial.set_user_attr("surplus", True)
        return False
    started = sum(1 for t in trials if t.user_attrs.get("run"))
    if stop_coin(coins, started, mean, shape):
        study._storage.set_study_system_attr(study._study_id, STOPPED_ATTR, True)  # before the decision
        trial.set_user_attr("surplus", True)
        return False
    trial.set_user_attr("run", True)
    return True
