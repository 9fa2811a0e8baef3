"""What a tuning run releases: :class:`TuneResult`, the privacy statements of each mode, and the
accounted release (the best run's synthesizer with the random-stopping charge in its ledger)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from synthzoo.core.errors import ConfigError, SynthzooError
from synthzoo.core.privacy.ledger import PrivacyLedger, matched_rho
from synthzoo.pipeline import Synthesizer

from .accounting import stopping_event
from .storage import _stored_state, runs

NON_PRIVATE_WARNING = (
    "WARNING: hyperparameters were tuned on the private data (privacy='non-private'); the choice of the "
    "released configuration is NOT covered by the differential privacy guarantee. The (epsilon, delta) "
    "reported for the synthesizer covers its final fit only.")
PUBLIC_NOTE = ("tuned on a public/proxy table supplied by the user (privacy='public'); the private data was "
               "read once, by the final fit, and the reported (epsilon, delta) covers it.")
ACCOUNTED_NOTE = ("tuned privately by random search with random stopping (Papernot & Steinke 2022, "
                  "privacy='accounted'); the reported (epsilon, delta) covers every trial and the selection of "
                  "the best.")
NOTHING_RELEASED = ("nothing is released: no run completed (random stopping may draw no run at all, and a run "
                    "that fails or passes its time limit releases nothing)")
def tuning_statement(privacy: str, trials: int | None = None) -> str:
    """What a released synthesizer says about the tuning that selected its configuration (its
    ``tuning_``: first in its privacy report, and the model file's ``"tuning"`` field).  Accounted
    mode states no number of runs (it would tell the random stopping's draw)."""
    if privacy == "non-private":
        return (f"NOT COVERED BY DP: this configuration was selected by tuning over {trials} trials "
                "(privacy='non-private') that were fit and scored on the private data; that selection read the "
                "private rows outside the ledger. The (epsilon, delta) below covers this synthesizer's fit only, "
                "not the tuning.")
    if privacy == "public":
        return (f"tuned on a public/proxy table over {trials} trials (privacy='public'): the selection read no "
                "private data; the private data was read once, by this fit, which the (epsilon, delta) below covers.")
    return ("tuned privately (privacy='accounted'): selected by random search with random stopping (Papernot & "
            "Steinke 2022); the 'tuning' charge below covers every run and the selection.")


REPLAYABLE_TUNING = ("replayable noise (test only): noise_seed was set, so the trials' noise, the stopping coins "
                     "and the score noise replay; the result is private only while that seed stays secret")


def _shown(value) -> str:
    """A score as a person reads it, to 4 significant digits ("0.06543", not 0.06542841615682661); a
    multi-objective study's values each so; the saved metadata keeps them exact."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


@dataclass
class TuneResult:
    """What :func:`tune` returns: best parameters, the fitted best synthesizer, the Optuna study.

    ``metadata`` is what :meth:`save` writes.  In accounted mode it holds no number of runs or
    finished trials, no validation size, no score sensitivity and no per-trial value;
    ``best_trial`` (the best run's trial number, which bounds the number of runs) is kept here
    in memory only.  ``synthesizer`` is None when nothing is released.
    """

    best_params: dict
    best_config: dict
    synthesizer: Synthesizer | None
    study: object
    privacy: str
    privacy_statement: str
    best_value: float | None
    metadata: dict = field(default_factory=dict)
    best_trial: int | None = None

    def summary(self) -> str:
        lines = [f"synthzoo tune: preset {self.metadata.get('preset')!r}, privacy mode {self.privacy!r}",
                 f"  {self.privacy_statement}"]
        if self.metadata.get("replayable_noise"):
            lines.append(f"  {self.metadata['replayable_noise']}")
        if self.privacy == "accounted":
            if self.synthesizer is None:
                lines.append(f"  {NOTHING_RELEASED}")
            else:
                lines.append(f"  {self.metadata.get('search', 'random search')}; best run's noisy score: "
                             f"{_shown(self.best_value)}")
        else:
            lines.append(f"  trials finished: {self.metadata.get('finished_trials')}; best value: "
                         f"{_shown(self.best_value)}")
        if self.best_params:
            lines.append(f"  best parameters: {json.dumps(self.best_params, default=str)}")
        if self.synthesizer is not None:
            lines.append("  " + self.synthesizer.privacy_report().replace("\n", "\n  "))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def save(self, path: str | Path, sign_with: str | Path | None = None) -> None:
        """Write the metadata (privacy mode and statement, best parameters, storage) as JSON; with a
        fitted synthesizer also ``<path stem>.model.json`` via :meth:`Synthesizer.save`, signed with
        the Ed25519 private key file ``sign_with`` where given (``synthzoo keygen``; see the README's
        "Signed releases").  The model file is written first, so a key that cannot sign writes nothing."""
        path = Path(path)
        if sign_with is not None:
            from synthzoo.modelfile import check_not_the_key

            check_not_the_key(path, sign_with)  # the metadata written over the private key lost it
        if self.synthesizer is not None:
            self.synthesizer.save(path.with_suffix(".model.json"), sign_with=sign_with)
        path.write_text(json.dumps(self.metadata, indent=2, default=str))


#: Study user attribute set when an accounted run ended without output: the study then releases nothing.
ABORTED = "synthzoo_aborted"


class TuningAborted(SynthzooError, RuntimeError):
    """Accounted tuning stopped without a release: a run ended without output."""


class StudySettingsError(ConfigError):
    """A study resumed with other settings than it started with: ``differences`` maps each setting
    (``tune``'s argument name) to its (started-with, now) values."""

    def __init__(self, study_name: str, differences: dict):
        self.study_name, self.differences = study_name, dict(sorted(differences.items()))
        was = ", ".join(f"{k}={v[0]!r}" for k, v in self.differences.items())
        super().__init__(f"study {study_name!r} was started with other {', '.join(self.differences)} ({was}); a "
                         "study resumes only with the settings it started with (its trials' scores are compared "
                         "with each other), or give another study_name")


def abort_lost_runs(study) -> None:
    """Accounted mode: a run that started and ended without a value -- its tuner interrupted or killed
    mid-fit (out of memory, say), or its worker failed by the heartbeat -- stops the study as a run that
    fails does (:data:`ABORTED`); selecting among the other runs would release whether it ended."""
    import optuna

    if ABORTED in study.user_attrs:
        return
    lost = runs(study, states=(optuna.trial.TrialState.FAIL, optuna.trial.TrialState.PRUNED))
    if lost:
        study.set_user_attr(ABORTED, f"run {lost[0].number}: it started and ended without output (its worker was "
                                     "interrupted or died)")


def aborted_message(reason: str) -> str:
    return (f"accounted tuning stopped and releases nothing: {reason}. Random stopping needs every run to be a DP "
            "mechanism; a run that fails may have failed because of the private rows, and choosing the best of the "
            "others would release that. Remove the cause (memory, say) and start a new study")


def _release_accounted(study, meta, statement, states, weights, epsilon, delta, trial_eps, trial_rho, n_trials,
                       shape, models_dir, study_name, replayable, verbose, schema_ledger=None) -> TuneResult:
    """The best complete run's synthesizer with the random-stopping charge, or nothing; a study one of
    whose runs ended without output (:data:`ABORTED`) raises :class:`TuningAborted`."""
    import optuna

    abort_lost_runs(study)
    if ABORTED in study.user_attrs:  # in whichever worker ends the study
        raise TuningAborted(aborted_message(study.user_attrs[ABORTED]))

    complete = runs(study, states=(optuna.trial.TrialState.COMPLETE,))
    if not complete:  # K = 0 (Poisson): the output is "nothing"
        meta.update({"released": False, "outcome": NOTHING_RELEASED, "best_params": None, "best_config": None,
                     "best_value": None})
        study.set_user_attr("synthzoo", meta)
        if verbose:
            print(f"  {NOTHING_RELEASED}", flush=True)
        return TuneResult({}, {}, None, study, "accounted", statement, None, meta, None)
    best = min(complete, key=lambda t: t.value)
    config = best.user_attrs["config"]
    state = states.get(best.number)
    if state is None:  # the best run ran in another worker or process
        state = _stored_state(best)
        path = None if models_dir is None else Path(models_dir) / f"{study_name}-trial{best.number}.json"
        if state is None and path is not None and path.exists():
            state = path.read_text()
    if state is None:
        raise ConfigError("the synthesizer of the best run is neither in this process nor in the storage; it "
                          "cannot be released without another private fit")
    synth = _charge_tuning(state, epsilon, delta, trial_eps, trial_rho, n_trials, shape, replayable, schema_ledger)
    synth.tuning_ = tuning_statement("accounted")
    meta.update({"released": True, "best_params": best.params, "best_config": config, "best_value": best.value,
                 "synthesizer_privacy": synth.privacy_report()})
    study.set_user_attr("synthzoo", meta)
    if verbose:
        print("  accounted tuning done: the best run's synthesizer is released", flush=True)
    return TuneResult(best.params, config, synth, study, "accounted", statement, best.value, meta, best.number)


def _zcdp(rho):
    import dp_accounting as dpa

    return dpa.ZCDpEvent(rho)


def _charge_tuning(state: str, epsilon, delta, trial_eps, trial_rho, mean, shape, replayable: bool,
                   schema_ledger: PrivacyLedger | None = None) -> Synthesizer:
    """The best run's synthesizer with one tuning charge in its ledger: the random-stopping selection
    over all runs, after the charges of the schema's DP measurement (``schema_ledger``, released once
    before tuning) where there was one.  The run's own charges (its fit at the per-trial budget) are
    inside that event; the note keeps how the run spent its budget, and nothing about how many runs
    there were."""
    doc = json.loads(state)
    run = Synthesizer.from_json(doc)  # the run's own saved account
    if run.privacy_spent().epsilon > trial_eps * (1 + 1e-9):
        raise RuntimeError(f"the best run spent {run.privacy_spent()}, more than its budget epsilon={trial_eps:.6g}")
    detail = "; ".join(f"{r['module']} rho={r['rho']:.4g}" for r in run.privacy_breakdown().to_dict("records")
                       if not r["module"].startswith("schema:"))
    law = "geometric" if shape == 1.0 else "Poisson"
    if schema_ledger is None:
        ledger = PrivacyLedger(epsilon, delta)
    else:
        ledger = PrivacyLedger(epsilon, delta, reserved_delta=schema_ledger.extra_delta)
        ledger.absorb(schema_ledger, "schema:")
    event = stopping_event(trial_rho, mean, shape)
    ledger.charge("tuning", "random stopping (Papernot-Steinke) over DP runs of random search",
                  event, matched_rho(ledger, event, ledger.rho_remaining),
                  note=f"{law} number of runs with mean {mean:g}; each run rho={trial_rho:.5g} incl. 10% for its "
                       f"noisy score; best run: {detail}")
    if replayable or run.replayable_noise:
        ledger._replayed_charges = True  # the report flags the replayable noise (test-only opt-in)
    return Synthesizer.from_json(doc, account=ledger)
