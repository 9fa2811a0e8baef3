"""Optuna tuner over any synthesizer preset, honest about what the tuning costs in privacy.

Objective (Du & Li, "Systematic Assessment of Tabular Data Synthesis Algorithms", 2024):
``L = a1 * Wasserstein fidelity + a2 * ML affinity (MLA) + a3 * 3-way query error`` of the
trial's synthetic table against a validation split (lower is better), weights 1/3 each by
default; ``multi_objective=True`` returns the Pareto front of the three terms instead.

Privacy modes, stated in every result:

* ``"non-private"`` — trials are fit on the private ``train`` and scored on the private ``val``,
  as SynMeter does.  Each fit is DP, but *choosing* among them reads the private data without
  accounting: the result says plainly that the tuning is NOT covered by the DP guarantee.
* ``"public"`` — trials are fit and scored on a public or proxy table the user supplies; the
  private ``train`` is touched once, by the final fit with the best parameters.
* ``"accounted"`` — random stopping (Papernot & Steinke, ICLR 2022): the number of trials K is
  drawn from a geometric (or Poisson) law with mean ``n_trials``; each trial is a full DP run at
  a per-trial zCDP budget *plus* a Gaussian-noised score, and the best trial is released.  The
  repeat-and-select event is charged to the returned synthesizer's ledger, so its reported
  (epsilon, delta) covers the tuning.  Because the score must have bounded sensitivity, its
  terms are clipped and the default weights drop MLA (whose sensitivity is that of its whole
  range); pruning is off (intermediate scores would be further releases).

Trials: each trial's fit, sample and validation scoring run in a separate process (a fresh
interpreter, reused from trial to trial) that is killed when the trial passes ``trial_timeout``,
so the limit holds even inside a long native call; the process sends back the objective terms and
the fitted synthesizer's JSON state, and the best trial's synthesizer is loaded from it, not
refitted.  Scores, pruning decisions, the accounted mode's score noise and every storage write
stay in the tuner's process.

Storage: an Optuna RDB URL (``sqlite:///file.db`` by default, ``postgresql://...`` for workers
on several machines); studies resume from it, and ``optuna-dashboard <url>`` reads it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from synthzoo.core.errors import ConfigError
from synthzoo.core.privacy.ledger import PrivacyLedger, check_privacy_params, epsilon_of
from synthzoo.core.schema import Schema
from synthzoo.datasets import train_test_split
from synthzoo.metrics import ml_affinity, query_error_3way, wasserstein_fidelity
from synthzoo.pipeline import Synthesizer
from synthzoo.presets import PRESETS, make

from .accounting import SHAPES, draw_runs, per_trial_rho, stopping_event
from .space import MODULE_CHOICES, default_params, suggest_config

MODES = ("non-private", "public", "accounted")
TERMS = ("fidelity", "mla", "query")
DEFAULT_STORAGE = "sqlite:///synthzoo-tune.db"
WASSERSTEIN_ROWS = 2000
# "module:function" called in each trial process before its first trial (tests use it to make a
# fit hang or to record what a fit read; a debugging hook, not an API)
WORKER_INIT_ENV = "SYNTHZOO_TUNING_WORKER_INIT"
WORKER_START_TIMEOUT = 300.0  # seconds for a trial process to import and say it is ready
STATE_ATTR = "synthzoo:model_state"  # trial system attr: the fitted synthesizer (accounted mode)
STATE_CHUNK = 60_000  # characters per stored attr (MySQL's TEXT column holds 64 KiB)

NON_PRIVATE_WARNING = (
    "WARNING: hyperparameters were tuned on the private data (privacy='non-private'); the choice of the "
    "released configuration is NOT covered by the differential privacy guarantee. The (epsilon, delta) "
    "reported for the synthesizer covers its final fit only.")
PUBLIC_NOTE = ("tuned on a public/proxy table supplied by the user (privacy='public'); the private data was "
               "read once, by the final fit, and the reported (epsilon, delta) covers it.")
ACCOUNTED_NOTE = ("tuned privately by random stopping (Papernot & Steinke 2022, privacy='accounted'); the "
                  "reported (epsilon, delta) covers every trial and the selection of the best.")


class TrialTimeout(Exception):
    """A trial ran past ``trial_timeout`` seconds."""


@dataclass
class TuneResult:
    """What :func:`tune` returns: best parameters, the fitted best synthesizer, the Optuna study."""

    best_params: dict
    best_config: dict
    synthesizer: Synthesizer | None
    study: object
    privacy: str
    privacy_statement: str
    best_value: float | None
    metadata: dict = field(default_factory=dict)

    def summary(self) -> str:
        lines = [f"synthzoo tune: preset {self.metadata.get('preset')!r}, privacy mode {self.privacy!r}",
                 f"  {self.privacy_statement}",
                 f"  trials finished: {self.metadata.get('finished_trials')}; best value: {self.best_value}",
                 f"  best parameters: {json.dumps(self.best_params, default=str)}"]
        if self.synthesizer is not None:
            lines.append("  " + self.synthesizer.privacy_report().replace("\n", "\n  "))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def save(self, path: str | Path) -> None:
        """Write the metadata (privacy mode and statement, best parameters, storage) as JSON; with a
        fitted synthesizer also ``<path stem>.model.json`` via :meth:`Synthesizer.save`."""
        path = Path(path)
        path.write_text(json.dumps(self.metadata, indent=2, default=str))
        if self.synthesizer is not None:
            self.synthesizer.save(path.with_suffix(".model.json"))


# --------------------------------------------------------------------------- objective terms
def score_terms(real: pd.DataFrame, fake: pd.DataFrame, schema: Schema, train_for_mla: pd.DataFrame | None,
                weights: tuple, seed: int = 0, report=None) -> dict:
    """The three objective terms of ``fake`` against ``real`` (only those with a positive weight).

    ``report(step, partial)`` is called after each term with the weighted sum so far, cheapest
    term first, so a pruner can stop hopeless trials before the costly Wasserstein term.
    """
    out = {t: float("nan") for t in TERMS}
    partial = 0.0
    step = 0
    order = (("query", 2), ("mla", 1), ("fidelity", 0))
    for term, i in order:
        if weights[i] <= 0:
            continue
        if term == "query":
            out[term] = query_error_3way(real, fake, schema, seed=seed)
        elif term == "mla":
            out[term] = ml_affinity(train_for_mla, fake, real, schema, seed=seed)
        else:
            out[term] = wasserstein_fidelity(real, fake, schema, max_rows=WASSERSTEIN_ROWS, seed=seed)
        partial += weights[i] * out[term]
        if report is not None:
            report(step, partial)
        step += 1
    return out


def _weighted(terms: dict, weights: tuple) -> float:
    return float(sum(w * terms[t] for w, t in zip(weights, TERMS) if w > 0))


def score_sensitivity(weights: tuple, n_val: int) -> float:
    """L2 (= L1, a scalar) sensitivity of the clipped score to replacing one validation record.

    3-way query error: each query's answered fraction moves by at most 1/n.  Wasserstein fidelity:
    every 1-/2-way marginal is computed on at most ``WASSERSTEIN_ROWS`` sampled rows, one of which
    can change, moving mass 1/m over ground costs of at most 2 (two columns, each in [0, 1] on
    public bounds).  MLA depends on models trained and tested on private rows; it is clipped to
    [0, 1] and charged at its full range.
    """
    m = min(WASSERSTEIN_ROWS, n_val)
    return weights[0] * 2.0 / m + weights[1] * 1.0 + weights[2] * 1.0 / n_val


# --------------------------------------------------------------------------- helpers
def _check_frame(df, name: str) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame) or len(df) == 0:
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


@contextlib.contextmanager
def _time_limit(seconds):
    """Raise :class:`TrialTimeout` after ``seconds`` (SIGALRM in the main thread; elsewhere the
    check happens after the fit)."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def _raise(signum, frame):
        raise TrialTimeout(f"trial ran past its time limit of {seconds:g}s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# --------------------------------------------------------------------------- one trial
class _Pruned(Exception):
    """The pruner stopped a trial at an intermediate step."""


def _execute(setup: dict, overrides: dict, should_prune=None, deadline: float | None = None) -> tuple:
    """Fit, sample and score one configuration (in a trial process, or in-process).

    ``setup`` holds what every trial shares (preset, per-trial epsilon, delta, schema, seed, the
    fit and score frames, weights).  ``should_prune(step, partial)`` asks the study's pruner.
    Returns ``("done", terms, seconds, state)`` with the fitted synthesizer's JSON state (what
    :meth:`Synthesizer.save` writes), ``("pruned", reason)`` or ``("timeout", reason)``.
    """
    t0 = time.perf_counter()
    report = None
    if should_prune is not None:
        def report(step, value):
            if should_prune(step, value):
                raise _Pruned(f"pruned at step {step} (partial objective {value:.4g})")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            synth = make(setup["preset"], epsilon=setup["epsilon"], delta=setup["delta"], schema=setup["schema"],
                         seed=setup["seed"], **overrides)
            synth.fit(setup["fit_df"])
            fake = synth.sample(len(setup["score_df"]))
            if deadline is not None and time.perf_counter() > deadline:
                raise TrialTimeout(f"trial ran past its time limit of {setup['timeout']:g}s")
            terms = score_terms(setup["score_df"], fake, setup["schema"], setup["fit_df"], setup["weights"],
                                seed=setup["seed"], report=report)
    except _Pruned as e:
        return ("pruned", str(e))
    except TrialTimeout as e:
        return ("timeout", str(e))
    return ("done", terms, time.perf_counter() - t0, _state_of(synth))


def _state_of(synth: Synthesizer) -> str:
    """The fitted synthesizer as the JSON text :meth:`Synthesizer.save` writes."""
    with tempfile.TemporaryDirectory(prefix="synthzoo-tune-") as d:
        path = Path(d) / "model.json"
        synth.save(path)
        return path.read_text()


def _from_state(state: str) -> Synthesizer:
    with tempfile.TemporaryDirectory(prefix="synthzoo-tune-") as d:
        path = Path(d) / "model.json"
        path.write_text(state)
        return Synthesizer.load(path)


class _InProcess:
    """Trials in this process; ``trial_timeout`` is soft (SIGALRM, and a check after the fit)."""

    def __init__(self, setup: dict):
        self.setup = setup

    def run(self, overrides: dict, should_prune=None) -> tuple:
        timeout = self.setup["timeout"]
        try:
            with _time_limit(timeout):
                return _execute(self.setup, overrides, should_prune,
                                None if timeout is None else time.perf_counter() + timeout)
        except TrialTimeout as e:  # SIGALRM during the fit
            return ("timeout", str(e))

    def close(self) -> None:
        pass


class _ChildTraceback(Exception):
    """The traceback of an error raised in a trial process."""


class _TrialProcess:
    """Trials in a separate Python process that is killed when one runs past ``trial_timeout``.

    The process is a fresh interpreter (``python -c``, like multiprocessing's "spawn": no fork of
    this process's JAX/torch threads, and no re-import of the caller's ``__main__`` either), started
    before the first trial and reused by the next ones; the data is sent to it once.  It talks to
    this process over a socket pair with multiprocessing's :class:`Connection`: the trial's
    intermediate scores come back to ask the study's pruner, and its result is the objective terms
    plus the fitted synthesizer's JSON state.  A trial past its limit is stopped with SIGKILL,
    which interrupts any native call (a long jax/numpy/C kernel); the next trial starts a new
    process.  The time limit counts from the trial's start, not the process's start-up.
    """

    def __init__(self, setup: dict):
        self.setup = setup
        self.proc = None
        self.conn = None

    def _start(self) -> None:
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        code = (f"import json, sys; sys.path[:] = json.loads(sys.argv[3]); from {__name__} import _worker_main; "
                "_worker_main(int(sys.argv[1]), int(sys.argv[2]))")
        with theirs:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", code, str(theirs.fileno()), str(os.getpid()),
                 json.dumps([str(p) for p in sys.path])], pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        self.conn = Connection(ours.detach())
        try:
            self.conn.send(("setup", self.setup))
            if not self.conn.poll(WORKER_START_TIMEOUT):
                raise EOFError
            msg = self.conn.recv()
            assert msg[0] == "ready", msg
        except (EOFError, OSError):
            code = self.kill()
            raise RuntimeError(f"the tuner's trial process did not start (exit code {code}); its error, if any, "
                               "is printed above") from None

    def run(self, overrides: dict, should_prune=None) -> tuple:
        if self.proc is None:
            self._start()
        timeout = self.setup["timeout"]
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self.conn.send(("trial", overrides, should_prune is not None))
            while True:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not self.conn.poll(left):
                    self.kill()
                    return ("timeout", f"trial ran past its time limit of {timeout:g}s; its process was killed")
                msg = self.conn.recv()
                if msg[0] == "report":  # an intermediate score: ask the pruner, answer the process
                    self.conn.send(bool(should_prune(msg[1], msg[2])))
                elif msg[0] == "error":
                    break  # raised below; the process is fine and takes the next trial
                else:
                    return msg
        except (EOFError, OSError):
            code = self.kill()
            return ("crashed", f"the trial's process died without a result (exit code {code})")
        except BaseException:
            self.kill()  # interrupted here (Ctrl-C, a storage error) while the process may be mid-trial
            raise
        raise _child_error(msg)

    def kill(self):
        """Stop the process now; its exit code."""
        if self.proc is None:
            return None
        with contextlib.suppress(OSError):
            self.proc.kill()
        code = self.proc.wait()
        self.conn.close()
        self.proc = self.conn = None
        return code

    def close(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(OSError):
            self.conn.send(("stop",))
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self.kill()


def _child_error(msg) -> BaseException:
    """The exception a trial process raised, with its traceback as the cause."""
    _, payload, tb = msg
    cause = _ChildTraceback("raised in the trial process:\n" + tb)
    try:
        err = pickle.loads(payload) if payload is not None else None
    except Exception:  # noqa: BLE001 - an exception type that does not unpickle here
        err = None
    if not isinstance(err, BaseException):
        err = RuntimeError(tb.strip().splitlines()[-1] if tb.strip() else "error in the trial process")
    err.__cause__ = cause
    return err


def _exit_with_parent(parent_pid: int) -> None:
    """End this trial process when the tuner's process dies (a killed worker leaves no orphan)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG: survives native calls

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(1)

    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=watch, name="synthzoo-parent-watch", daemon=True).start()


def _worker_main(fd: int, parent_pid: int) -> None:
    """Entry point of a trial process: read the setup, then run trials until told to stop."""
    import importlib
    from multiprocessing.connection import Connection

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the tuner, which stops this process
    _exit_with_parent(parent_pid)
    conn = Connection(fd)
    try:
        _, setup = conn.recv()
        hook = os.environ.get(WORKER_INIT_ENV)
        if hook:
            mod, _, func = hook.partition(":")
            getattr(importlib.import_module(mod), func)()
        conn.send(("ready",))
        while True:
            msg = conn.recv()
            if msg[0] != "trial":
                return
            _, overrides, prune = msg

            def ask(step, value):
                conn.send(("report", step, value))
                return conn.recv()

            try:
                out = _execute(setup, overrides, ask if prune else None)
            except Exception as e:  # noqa: BLE001 - sent back and raised in the tuner
                try:
                    payload = pickle.dumps(e)
                except Exception:  # noqa: BLE001
                    payload = None
                out = ("error", payload, traceback.format_exc())
            conn.send(out)
    except (EOFError, OSError):  # the tuner closed the connection or died
        return


# --------------------------------------------------------------------------- storage
def _storage(storage, heartbeat_interval, grace_period):
    import optuna

    url = DEFAULT_STORAGE if storage is None else storage
    if not isinstance(url, str):
        return url  # an optuna storage object
    if not url.startswith(("sqlite:", "postgresql", "mysql")):
        url = f"sqlite:///{Path(url).resolve()}"  # a plain file path
    url = _pg_driver(url)
    kw = {}
    if heartbeat_interval:
        # a worker killed mid-trial leaves a RUNNING trial; the heartbeat lets any later worker mark
        # it failed and re-enqueue its parameters, so the study stays resumable
        kw = dict(heartbeat_interval=int(heartbeat_interval), grace_period=int(grace_period or 3 * heartbeat_interval))
        kw.update(_retry_callback_kw())
    engine = {"pool_pre_ping": True} if url.startswith("postgresql") else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # heartbeat: stable in practice
        return optuna.storages.RDBStorage(url, engine_kwargs=engine, **kw)


def _redact(url: str) -> str:
    """The storage URL without its password (it goes into saved metadata)."""
    import re

    return re.sub(r"(//[^:/@]+):[^@]*@", r"\1:***@", url)


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


def _fail_dead_local_trials(study) -> None:
    """Mark FAIL the running trials of workers on this host whose process is gone (a killed run),
    so a resumed study re-runs them at once instead of waiting for the heartbeat grace period."""
    import optuna

    host = socket.gethostname()
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        w_host, _, pid = str(t.user_attrs.get("worker", "")).rpartition(":")
        if w_host != host or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            study._storage.set_trial_state_values(t._trial_id, state=optuna.trial.TrialState.FAIL)
            # re-enqueued with its parameters, as the heartbeat's retry callback does
            _retry_callback(optuna)[1](study, study._storage.get_trial(t._trial_id))
        except PermissionError:
            pass  # alive, another user's


def _finished_states():
    import optuna

    return (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)


def _retry_callback(optuna):
    """Optuna's callback that re-enqueues a stale trial's parameters (renamed in Optuna 4.9)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "experimental" notice
        if hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback"):
            return "heartbeat_stale_trial_callback", optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=1)
        return "failed_trial_callback", optuna.storages.RetryFailedTrialCallback(max_retry=1)


def _retry_callback_kw() -> dict:
    import optuna

    name, cb = _retry_callback(optuna)
    return {name: cb}


def _pg_driver(url: str) -> str:
    """SQLAlchemy 2.1 reads a bare ``postgresql://`` as psycopg 3; use psycopg2 when only it is installed."""
    if not url.startswith("postgresql://"):
        return url
    import importlib.util

    if importlib.util.find_spec("psycopg") is None and importlib.util.find_spec("psycopg2") is not None:
        return "postgresql+psycopg2://" + url[len("postgresql://"):]
    return url


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


# --------------------------------------------------------------------------- main entry point
def tune(preset: str, train: pd.DataFrame, val: pd.DataFrame | None = None, *, epsilon=1.0, delta=1e-5,
         schema: Schema | None = None, n_trials: int = 20, privacy: str = "non-private",
         public: pd.DataFrame | tuple | None = None, storage=None, study_name: str | None = None,
         weights=None, multi_objective: bool = False, choose_modules: bool = True, space: dict | None = None,
         choices: dict | None = None, seed: int = 0,
         sampler_seed: int | None = None, trial_timeout: float | None = None, prune: bool = True,
         heartbeat_interval: int | None = None, grace_period: int | None = None,
         stopping: str = "geometric", stopping_seed: int | None = None, models_dir: str | Path | None = None,
         refit: bool = True, start_from_defaults: bool = True, isolate: bool = True,
         verbose: bool = False) -> TuneResult:
    """Tune the preset ``preset`` with Optuna and return the best parameters, synthesizer and study.

    Parameters
    ----------
    train : the private training frame.
    val : validation frame the trials are scored on (``"non-private"`` and ``"accounted"``).
    epsilon, delta : the privacy request of the release (``epsilon=None`` is a non-private run).
    schema : public :class:`Schema` (required: inferring it would read the private data).
    n_trials : trials to finish in this study (``"accounted"``: the *mean* of the random number of
        trials).  A resumed study counts the trials it already finished.
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
    seed : synthesizer and metric seed (same seed, same trial outcome for the same parameters).
    sampler_seed : TPE sampler seed (default ``seed``; give each worker its own).
    trial_timeout : seconds per trial (its fit, sample and validation scoring); a trial past it is
        stopped and recorded as pruned with the reason in its ``pruned_reason`` user attr, and the
        study goes on.  A hard limit: the trial's process is killed, whatever native call (a long
        jax/numpy kernel) it is in.  With ``isolate=False`` it is soft (SIGALRM in the main thread,
        which cannot interrupt one long native call, and a check after the fit).
    prune : prune hopeless trials (median rule on the partial objective); off in accounted mode.
    heartbeat_interval, grace_period : Optuna heartbeat (seconds) so trials of a killed worker are
        failed and retried by the others (default 30 s, grace 90 s).  A killed worker's trial on this
        host is failed at once when the study is resumed.
    stopping : ``"geometric"`` or ``"poisson"`` law of the random number of trials (accounted).
    models_dir : accounted mode also saves every trial's synthesizer here as a model file.  Not
        needed to release the best trial from another worker or after a resume: in accounted mode a
        trial that beats every trial finished before it keeps its synthesizer in the storage (trial
        system attrs), so the best trial's is always there.  Like the storage, keep it private.
    start_from_defaults : enqueue the preset's default parameters as the first trial.
    refit : in non-private mode, refit the best configuration on ``train`` when the best trial ran
        in another process (another worker, or before a resume).
    isolate : run each trial in a separate process (default), which makes ``trial_timeout`` a hard
        limit and keeps a crashing fit (segfault, out of memory) from ending the study: such a
        trial is recorded as pruned with the reason.  ``False``: in this process (for debugging).

    The best synthesizer is *not* refitted: each trial process sends back its fitted synthesizer's
    JSON state (:meth:`Synthesizer.save`), and the best trial's is loaded.  A refit would be a
    further private fit, not covered in accounted mode; in non-private mode a best trial that ran in
    another process is refitted (``refit``), and in public mode the final fit on ``train`` is the
    only one that reads the private data.  Same seed, same trial outcome for the same parameters,
    in a trial process or not.
    """
    import optuna

    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; available: {sorted(PRESETS)}")
    if privacy not in MODES:
        raise ConfigError(f"privacy must be one of {MODES}, got {privacy!r}")
    if not isinstance(schema, Schema):
        raise ConfigError("schema: tuning needs the public Schema (inferring one would read the private data)")
    if isinstance(n_trials, bool) or not isinstance(n_trials, (int, np.integer)) or n_trials < 1:
        raise ConfigError(f"n_trials must be a positive integer, got {n_trials!r}")
    if trial_timeout is not None and not (float(trial_timeout) > 0):
        raise ConfigError(f"trial_timeout must be a positive number of seconds, got {trial_timeout!r}")
    if stopping not in SHAPES:
        raise ConfigError(f"stopping must be one of {sorted(SHAPES)}, got {stopping!r}")
    for key, vals in (choices or {}).items():
        if key not in MODULE_CHOICES or not vals or not set(vals) <= set(MODULE_CHOICES[key]):
            raise ConfigError(f"choices: {key!r} must be one of {sorted(MODULE_CHOICES)} with options from "
                              f"{MODULE_CHOICES.get(key)}, got {vals!r}")
    epsilon, delta = check_privacy_params(epsilon, delta)
    weights = _weights(weights, privacy)
    train = _check_frame(train, "train")
    if privacy == "public":
        if public is None:
            raise ConfigError("privacy='public' needs public=<public or proxy frame> (or a (train, val) pair)")
        fit_df, score_df = (public if isinstance(public, tuple)
                            else train_test_split(_check_frame(public, "public"), test_size=0.2, seed=seed))
        fit_df, score_df = _check_frame(fit_df, "public[0]"), _check_frame(score_df, "public[1]")
    else:
        fit_df, score_df = train, _check_frame(val, "val")
    if privacy == "accounted":
        if epsilon is None:
            raise ConfigError("privacy='accounted' needs a finite epsilon; use 'non-private' for epsilon=None")
        if multi_objective:
            raise ConfigError("multi_objective is not available with privacy='accounted' (random stopping "
                              "releases one best trial)")
        prune = False
    prune = prune and not multi_objective  # Optuna prunes single-objective studies only
    if isolate and os.name != "posix":
        warnings.warn("trial processes need a POSIX system; trials run in this process and trial_timeout is soft",
                      RuntimeWarning, stacklevel=2)
        isolate = False
    if heartbeat_interval is None:
        heartbeat_interval = 30
    rdb = _storage(storage, heartbeat_interval, grace_period)
    study_name = study_name or f"synthzoo-{preset}-{privacy}"
    pruner = (optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=0) if prune and not multi_objective
              else optuna.pruners.NopPruner())
    kw = dict(directions=["minimize"] * 3) if multi_objective else dict(direction="minimize")
    study = optuna.create_study(storage=rdb, study_name=study_name, pruner=pruner, load_if_exists=True, **kw)
    # seeded, and offset by the trials already stored, so a resumed study does not redraw its first points
    base = seed if sampler_seed is None else sampler_seed
    study.sampler = optuna.samplers.TPESampler(seed=base + len(study.get_trials(deepcopy=False)),
                                               n_startup_trials=min(10, max(3, n_trials // 3)))
    statement = {"non-private": NON_PRIVATE_WARNING, "public": PUBLIC_NOTE, "accounted": ACCOUNTED_NOTE}[privacy]
    prior = study.user_attrs.get("synthzoo")
    if prior is not None and (prior.get("preset"), prior.get("privacy")) != (preset, privacy):
        raise ConfigError(f"study {study_name!r} in this storage was run for preset {prior.get('preset')!r} with "
                          f"privacy={prior.get('privacy')!r}; give another study_name")

    # accounted mode: per-trial budget and the random number of runs, fixed once per study
    trial_eps, trial_rho, rho_score, runs = epsilon, None, 0.0, None
    shape = SHAPES[stopping]
    if privacy == "accounted":
        trial_rho = per_trial_rho(epsilon, delta, float(n_trials), shape)
        rho_score = 0.1 * trial_rho  # a tenth of each trial's budget for its noisy score
        trial_eps = epsilon_of([_zcdp(trial_rho - rho_score)], delta)
        prior = study.user_attrs.get("synthzoo")  # again, just before the draw: a worker may have drawn meanwhile
        if prior is not None and "runs" in prior:
            if int(prior.get("mean_runs", n_trials)) != int(n_trials) or prior.get("stopping", stopping) != stopping:
                raise ConfigError(f"study {study_name!r} was started with n_trials={prior.get('mean_runs')} and "
                                  f"stopping={prior.get('stopping')!r}; resume it with the same values")
            runs = int(prior["runs"])
        else:
            rng = np.random.default_rng(stopping_seed)  # fresh OS entropy unless a seed is given
            runs = draw_runs(float(n_trials), shape, rng)
        if runs < 1:
            raise ConfigError("random stopping drew 0 runs (Poisson law); nothing is released — run again "
                              "with a new study_name")
    meta = {"preset": preset, "privacy": privacy, "privacy_statement": statement, "epsilon": epsilon,
            "delta": delta, "weights": list(weights), "multi_objective": bool(multi_objective),
            "choose_modules": bool(choose_modules), "seed": int(seed), "study_name": study_name,
            "storage": _redact(storage) if isinstance(storage, str) else DEFAULT_STORAGE if storage is None
            else type(storage).__name__}
    if privacy == "accounted":
        meta.update({"runs": runs, "mean_runs": int(n_trials), "stopping": stopping, "per_trial_rho": trial_rho,
                     "score_rho": rho_score, "score_sensitivity": score_sensitivity(weights, len(score_df)),
                     "note": "the number of runs is secret: keep this storage private"})
    study.set_user_attr("synthzoo", meta)
    # also as plain strings: optuna-dashboard shows them whole (it cuts other values at 1,024 characters)
    study.set_user_attr("privacy", privacy)
    study.set_user_attr("privacy_statement", statement)
    if start_from_defaults and not study.get_trials(deepcopy=False):
        # the untuned preset is the first point, so the best found is never worse on val than it
        study.enqueue_trial(_within(default_params(preset, choose_modules), space, choices), skip_if_exists=True)

    # trial number -> fitted synthesizer's JSON state, and its value, in this process (single objective:
    # the best one only)
    states, state_values = {}, {}

    def target() -> int:
        """Trials the study must finish.  Accounted: the number of runs *in the storage*, read each time —
        two workers that start on a new study at the same moment may both draw one, and the last
        write wins for all of them (before any trial has finished, so no worker has run past it)."""
        nonlocal runs
        if privacy != "accounted":
            return int(n_trials)
        runs = int((study.user_attrs.get("synthzoo") or {}).get("runs", runs))
        meta["runs"] = runs
        return runs

    noise_rng = np.random.default_rng()  # score noise: fresh randomness, never reproducible
    setup = {"preset": preset, "epsilon": trial_eps, "delta": delta, "schema": schema, "seed": seed,
             "fit_df": fit_df, "score_df": score_df, "weights": weights,
             "timeout": None if trial_timeout is None else float(trial_timeout)}
    runner = _TrialProcess(setup) if isolate else _InProcess(setup)

    def objective(trial):
        # exactly `target` finished trials per study, whatever the number of workers.  A trial first
        # claims a slot (committed), then counts the finished trials and every other live claim: of
        # two trials racing for the last slot the later reader always sees the earlier claim, so the
        # study never overshoots (a trial that loses is recorded as surplus and reads no data).
        trial.set_user_attr("claim", True)
        if _slots_taken(study, exclude=trial.number) >= target():
            trial.set_user_attr("surplus", True)
            raise optuna.TrialPruned("the study already has its trials; no data read")
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
        overrides = suggest_config(trial, preset, choose_modules=choose_modules, ranges=space, choices=choices)
        trial.set_user_attr("config", json.loads(json.dumps(overrides, default=str)))

        should_prune = None
        if prune:
            def should_prune(step, value):
                trial.report(value, step)
                return trial.should_prune()
        out = runner.run(overrides, should_prune)
        if out[0] != "done":  # pruned, past its time limit, or its process died
            trial.set_user_attr("pruned_reason", out[1])
            raise optuna.TrialPruned(out[1])
        _, terms, seconds, state = out
        trial.set_user_attr("fit_seconds", seconds)
        for t in TERMS:
            trial.set_user_attr(t, terms[t])
        if multi_objective:
            states[trial.number] = state
            return [terms[t] if w > 0 else 0.0 for t, w in zip(TERMS, weights)]
        value = _weighted(terms, weights)
        if privacy == "accounted":
            # the released score is clipped (bounded sensitivity) and Gaussian-noised
            clipped = {t: min(max(terms[t], 0.0), 1.0) for t in TERMS if not math.isnan(terms[t])}
            sigma = score_sensitivity(weights, len(score_df)) / math.sqrt(2 * rho_score)
            value = _weighted({**{t: 0.0 for t in TERMS}, **clipped}, weights) + float(noise_rng.normal(0, sigma))
            trial.set_user_attr("score_sigma", sigma)
            for t in TERMS:  # exact terms are not released in accounted mode
                trial.set_user_attr(t, None)
            if models_dir is not None:
                Path(models_dir).mkdir(parents=True, exist_ok=True)
                (Path(models_dir) / f"{study_name}-trial{trial.number}.json").write_text(state)
            # the best trial beats every trial finished before it, so storing the synthesizer of each
            # trial that does (written before the trial is marked complete) keeps the best one
            # releasable by whichever worker ends the study, or after a resume
            if value <= _best_complete_value(study):
                _store_state(study, trial, state)
        if not states or value < min(state_values.values()):
            states.clear()  # keep only the best fitted synthesizer of this process in memory
            state_values.clear()
            states[trial.number], state_values[trial.number] = state, value
        return value

    _fail_dead_local_trials(study)
    try:
        while True:
            if len(_finished(study)) >= target():
                break
            if _slots_taken(study) >= target():
                # the last trials are running in other workers: wait for them, so that every worker
                # selects from all the trials (accounted: the best of all the runs).  A dead worker's
                # trial is failed (same host: at once; elsewhere: after the heartbeat grace period)
                # and re-enqueued, and then a waiting worker runs it.
                time.sleep(0.5)
                _fail_dead_local_trials(study)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    optuna.storages.fail_stale_trials(study)
                continue
            study.optimize(objective, n_trials=1, catch=(), gc_after_trial=False, show_progress_bar=False)
            if verbose:
                last = study.trials[-1]
                print(f"  trial {last.number}: {last.state.name} value={last.values}"
                      + (f" ({last.user_attrs['pruned_reason']})" if "pruned_reason" in last.user_attrs else ""),
                      flush=True)
    finally:
        runner.close()

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
    if state is None and privacy == "accounted":  # the best trial ran in another worker or process
        state = _stored_state(best)
        path = None if models_dir is None else Path(models_dir) / f"{study_name}-trial{best.number}.json"
        if state is None and path is not None and path.exists():
            state = path.read_text()
    synth = None if state is None or privacy == "public" else _from_state(state)
    if privacy == "public":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            synth = make(preset, epsilon=epsilon, delta=delta, schema=schema, seed=seed, **config).fit(train)
    elif privacy == "accounted":
        if synth is None:
            raise ConfigError(f"the synthesizer of the best trial ({best.number}) is neither in this process nor "
                              "in the storage; it cannot be released without another private fit")
        if synth.privacy_spent().epsilon > trial_eps * (1 + 1e-9):  # the trial's own saved account
            raise RuntimeError(f"trial {best.number} spent {synth.privacy_spent()}, more than its budget "
                               f"epsilon={trial_eps:.6g}")
        _charge_tuning(synth, epsilon, delta, trial_rho, n_trials, shape, runs)
    elif synth is None and refit:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            synth = make(preset, epsilon=epsilon, delta=delta, schema=schema, seed=seed, **config).fit(train)
    meta.update({"best_trial": best.number, "best_params": best.params, "best_config": config,
                 "best_value": None if multi_objective else best.value})
    if synth is not None:
        meta["synthesizer_privacy"] = synth.privacy_report()
    study.set_user_attr("synthzoo", meta)
    if privacy == "non-private":
        warnings.warn(NON_PRIVATE_WARNING, UserWarning, stacklevel=2)
    return TuneResult(best.params, config, synth, study, privacy, statement,
                      None if multi_objective else best.value, meta)


def _zcdp(rho):
    import dp_accounting as dpa

    return dpa.ZCDpEvent(rho)


def _charge_tuning(synth: Synthesizer, epsilon, delta, trial_rho, mean, shape, runs) -> None:
    """Replace the best trial's ledger by one charge: the random-stopping selection over all runs.

    The trial's own charges (its fit at the per-trial budget) are inside that event; they are
    kept as a note so the report still shows how a run spent its budget.
    """
    # a loaded synthesizer has no live ledger, only the saved account: read the rows from either
    detail = "; ".join(f"{r['module']} rho={r['rho']:.4g}" for r in synth.privacy_breakdown().to_dict("records"))
    ledger = PrivacyLedger(epsilon, delta)
    ledger.charge("tuning", "random stopping (Papernot-Steinke) over DP trials", stopping_event(trial_rho, mean, shape),
                  ledger.total_rho, note=f"{runs} runs drawn (mean {mean}); each run rho={trial_rho:.5g} "
                                          f"incl. 10% for its noisy score; best run: {detail}")
    synth.ledger_ = ledger
