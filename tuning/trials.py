"""Trial runners: one trial's fit, sample and validation scoring, in this process or in a
separate process that is killed when the trial passes its time limit.

Each trial's fit, sample and validation scoring run in a :class:`synthzoo.isolation.Worker` (a
fresh interpreter, reused from trial to trial) that is killed when the trial passes
``trial_timeout``, so the limit holds even inside a long native call; the worker sends back the
objective terms and the fitted synthesizer's JSON document (memory only: the exact terms are never
written anywhere), and the best trial's synthesizer is rebuilt from it, not refitted.

Per trial, the tuner also sends what must differ from run to run and never be stored: the
test-only replayable noise seed of the trial's fit, and in accounted mode without a validation
frame the secret key of the run's per-record train/validation split.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
import warnings

from synthzoo.isolation import Worker, setup
from synthzoo.pipeline import Synthesizer
from synthzoo.presets import make

from . import objective


class TrialTimeout(Exception):
    """A trial ran past ``trial_timeout`` seconds."""


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


def _execute(setup: dict, overrides: dict, should_prune=None, deadline: float | None = None,
             extra: dict | None = None) -> tuple:
    """Fit, sample and score one configuration (in a trial process, or in-process).

    ``setup`` holds what every trial shares (preset, per-trial epsilon, delta, schema, seed, the
    fit and score frames, weights; accounted mode: ``score_rows`` and, without a validation frame,
    ``val_share``).  ``extra`` holds this trial's own ``noise_seed`` (test-only opt-in, else None)
    and, for a per-run split, its secret ``split_key``.  ``should_prune(step, partial)`` asks the
    study's pruner.  Returns ``("done", terms, seconds, state)`` with the fitted synthesizer's
    JSON state (what :meth:`Synthesizer.save` writes), ``("pruned", reason)`` or
    ``("timeout", reason)``.
    """
    extra = extra or {}
    t0 = time.perf_counter()
    report = None
    if should_prune is not None:
        def report(step, value):
            if should_prune(step, value):
                raise _Pruned(f"pruned at step {step} (partial objective {value:.4g})")
    schema = setup["schema"]
    accounted = setup.get("score_rows") is not None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_df, score_df = setup["fit_df"], setup["score_df"]
            if setup.get("val_share") is not None:  # accounted, no validation frame: this run's own split
                to_val = objective.split_records(fit_df, schema, extra["split_key"], setup["val_share"])
                fit_df, score_df = fit_df[~to_val], objective.validation_sketch(fit_df[to_val], schema,
                                                                               setup["score_rows"])
            synth = make(setup["preset"], epsilon=setup["epsilon"], delta=setup["delta"], schema=schema,
                         seed=setup["seed"], noise_seed=extra.get("noise_seed"), **overrides)
            synth.fit(fit_df)
            fake = synth.sample(setup["score_rows"] if accounted else len(score_df))
            if deadline is not None and time.perf_counter() > deadline:
                raise TrialTimeout(f"trial ran past its time limit of {setup['timeout']:g}s")
            if accounted:
                terms = objective.accounted_terms(score_df, fake, schema, fit_df, setup["weights"], seed=setup["seed"])
            else:
                terms = objective.score_terms(score_df, fake, schema, fit_df, setup["weights"], seed=setup["seed"],
                                              report=report)
    except _Pruned as e:
        return ("pruned", str(e))
    except TrialTimeout as e:
        return ("timeout", str(e))
    return ("done", terms, time.perf_counter() - t0, _state_of(synth))


def _state_of(synth: Synthesizer) -> str:
    """The fitted synthesizer as the JSON text :meth:`Synthesizer.save` writes (in memory)."""
    return json.dumps(synth.to_json())


def _from_state(state: str) -> Synthesizer:
    return Synthesizer.from_json(json.loads(state))


class _InProcess:
    """Trials in this process; ``trial_timeout`` is soft (SIGALRM, and a check after the fit)."""

    def __init__(self, setup: dict):
        self.setup = setup

    def run(self, overrides: dict, should_prune=None, extra: dict | None = None) -> tuple:
        timeout = self.setup["timeout"]
        try:
            with _time_limit(timeout):
                return _execute(self.setup, overrides, should_prune,
                                None if timeout is None else time.perf_counter() + timeout, extra)
        except TrialTimeout as e:  # SIGALRM during the fit
            return ("timeout", str(e))

    def close(self) -> None:
        pass


class _TrialProcess:
    """Trials in a :class:`synthzoo.isolation.Worker`: a separate interpreter, started before the
    first trial and reused by the next ones, that holds the shared data (sent once) and is killed
    when a trial runs past ``trial_timeout`` -- whatever native call it is in; the next trial starts
    a new one.  The trial's intermediate scores come back through the worker's ``ask`` channel to
    consult the study's pruner; its result is the objective terms and the fitted synthesizer's JSON
    state, in memory."""

    def __init__(self, setup: dict):
        self.timeout = setup["timeout"]
        self.worker = Worker(setup)

    def run(self, overrides: dict, should_prune=None, extra: dict | None = None) -> tuple:
        answer = None if should_prune is None else (lambda msg: bool(should_prune(*msg)))
        out = self.worker.call(f"{__name__}:_trial_in_worker", (overrides, should_prune is not None, extra or {}),
                               timeout=self.timeout, on_message=answer)
        if out.status == "ok":
            return out.value
        if out.status == "timeout":
            return ("timeout", f"trial ran past its time limit of {self.timeout:g}s; its process was killed")
        if out.status == "crashed":
            return ("crashed", out.reason.replace("the worker process", "the trial's process"))
        out.raise_error()  # an error in the fit: raised here, as in-process

    def close(self) -> None:
        self.worker.close()


def _trial_in_worker(overrides: dict, prune: bool, extra: dict, ask=None) -> tuple:
    """In the worker: one trial on the setup the tuner sent once."""
    should_prune = (lambda step, value: ask((step, value))) if prune else None
    return _execute(setup(), overrides, should_prune, extra=extra)
