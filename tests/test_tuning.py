"""The Optuna tuner: privacy modes stated in every result, resume, pruning/time limit, CLI."""

import io
import json
import os
import re
import signal
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

from conftest import process_alive

optuna = pytest.importorskip("optuna")

import synthzoo as sz
from synthzoo.cli import main as cli_main
from synthzoo.core.errors import ConfigError
from synthzoo.datasets import make_demo, train_test_split
from tuning import NON_PRIVATE_WARNING, suggest_config, tune
from tuning.space import MODULE_CHOICES
from tuning.tuner import WORKER_INIT_ENV

FAST = {"choices": {"preprocess.numeric": ["uniform"], "select_model": ["indif+gum"]},
            "space": {"model.gum.iterations": ("int", 5, 10)}, "weights": (0, 0, 1)}


def misbehave_in_fit():
    """Trial-process hook (``SYNTHZOO_WORKER_INIT=test_tuning:misbehave_in_fit``; monkeypatching
    in the test would not reach the trial's process).  ``SYNTHZOO_TEST_FIT_MODE``:

    * ``hang``: fit number ``SYNTHZOO_TEST_FIT_CALL`` of the process blocks as a long native call
      does (signals held off, never returns) after writing its pid to ``<SYNTHZOO_TEST_SYNC>/hanging``;
    * ``crash``: that fit kills its own process (as a segfault or the OOM killer would);
    * ``raise``: that fit raises MemoryError (as numpy does when an allocation fails);
    * ``record``: every fit appends a hash of the frame it reads to ``<SYNTHZOO_TEST_SYNC>/fits``.
    """
    import pandas as pd

    mode, sync = os.environ["SYNTHZOO_TEST_FIT_MODE"], Path(os.environ["SYNTHZOO_TEST_SYNC"])
    at, calls, fit = int(os.environ.get("SYNTHZOO_TEST_FIT_CALL", "0")), [0], sz.Synthesizer.fit

    def patched(self, df, progress=False):
        calls[0] += 1
        if mode == "record":
            with open(sync / "fits", "a") as f:
                f.write(f"{int(pd.util.hash_pandas_object(df).sum())}\n")
        elif calls[0] == at and mode == "hang":
            (sync / "hanging").write_text(str(os.getpid()))
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGINT, signal.SIGTERM})
            time.sleep(600)
        elif calls[0] == at and mode == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        elif calls[0] == at and mode == "raise":
            raise MemoryError("planted")
        return fit(self, df, progress)

    sz.Synthesizer.fit = patched


@pytest.fixture
def misbehave(monkeypatch, tmp_path):
    """Sets the hook up: ``misbehave(mode, call)``; the trial process imports this module."""
    def setup(mode, call=0):
        monkeypatch.syspath_prepend(str(Path(__file__).parent))  # the trial process gets this sys.path
        monkeypatch.setenv(WORKER_INIT_ENV, "test_tuning:misbehave_in_fit")
        monkeypatch.setenv("SYNTHZOO_TEST_FIT_MODE", mode)
        monkeypatch.setenv("SYNTHZOO_TEST_FIT_CALL", str(call))
        monkeypatch.setenv("SYNTHZOO_TEST_SYNC", str(tmp_path))
    return setup


@pytest.fixture(scope="module")
def demo():
    df, schema = make_demo(n=600, seed=0)
    train, val = train_test_split(df, test_size=0.3, seed=0)
    return train, val, schema


def _tune(demo, tmp_path, **kw):
    train, val, schema = demo
    args = dict(epsilon=1.0, delta=1e-5, schema=schema, n_trials=2, storage=str(tmp_path / "study.db"), **FAST)
    args.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tune("privsyn", train, val, **args)


def test_non_private_result_warns_in_summary_metadata_and_storage(demo, tmp_path):
    train, val, schema = demo
    with pytest.warns(UserWarning, match="NOT covered by the differential privacy"):
        res = tune("privsyn", train, val, epsilon=1.0, schema=schema, n_trials=2, storage=str(tmp_path / "s.db"),
                   privacy="non-private", **FAST)
    assert NON_PRIVATE_WARNING in res.summary()
    res.save(tmp_path / "tuned.json")
    saved = json.loads((tmp_path / "tuned.json").read_text())
    assert saved["privacy"] == "non-private" and saved["privacy_statement"] == NON_PRIVATE_WARNING
    assert (tmp_path / "tuned.model.json").exists()
    # the storage (what optuna-dashboard shows) carries it too
    stored = optuna.load_study(study_name=res.study.study_name, storage=f"sqlite:///{tmp_path / 's.db'}")
    assert stored.user_attrs["synthzoo"]["privacy_statement"] == NON_PRIVATE_WARNING
    assert set(res.best_params) >= {"budget_split.preprocess", "model.gum.iterations"}
    assert res.synthesizer.privacy_spent().epsilon <= 1.0 + 1e-9


def test_public_mode_reads_the_private_table_once(demo, tmp_path, monkeypatch, misbehave):
    train, _val, _schema = demo
    public, _ = train_test_split(make_demo(n=500, seed=7)[0], test_size=0.1, seed=1)
    public_fit, _ = train_test_split(public, test_size=0.2, seed=0)  # the tuner's split of the public table
    seen = []
    orig = sz.Synthesizer.fit

    def spy(self, df, progress=False):
        seen.append(df is train)
        return orig(self, df, progress)

    monkeypatch.setattr(sz.Synthesizer, "fit", spy)  # this process: the final fit
    misbehave("record")  # the trial process: every trial's fit
    res = _tune(demo, tmp_path, privacy="public", public=public, n_trials=3)
    assert seen == [True]  # one final private fit here
    trial_fits = (tmp_path / "fits").read_text().split()
    public_hash = str(int(pd.util.hash_pandas_object(public_fit).sum()))
    assert trial_fits == [public_hash] * 3  # the trials fit the public table only
    assert "public/proxy" in res.summary()
    assert res.synthesizer.privacy_spent().epsilon <= 1.0 + 1e-9


def test_resume_counts_finished_trials(demo, tmp_path):
    first = _tune(demo, tmp_path, n_trials=2, study_name="resume").study.trials  # a snapshot
    assert len(first) == 2
    again = _tune(demo, tmp_path, n_trials=3, study_name="resume")
    states = [t.state for t in again.study.trials]
    assert len(states) == 3 and all(s == optuna.trial.TrialState.COMPLETE for s in states)
    assert [t.params for t in again.study.trials[:2]] == [t.params for t in first]
    assert again.study.trials[2].params != first[0].params  # the resumed sampler draws new points


@pytest.mark.parametrize("kw, named", [
    ({"weights": (1, 0, 0)}, "weights"),  # picked the best of values scored under two objectives, silently
    ({"epsilon": 2.0}, "epsilon"),  # ... of fits at two budgets
    ({"choices": {"preprocess.numeric": ["privtree"], "select_model": ["indif+gum"]}}, "choices"),  # a traceback
    ({"multi_objective": True}, "multi_objective"),  # failed every trial, fitting on the private rows, forever
])
def test_a_study_resumes_only_with_the_settings_it_started_with(demo, tmp_path, kw, named):
    _tune(demo, tmp_path, n_trials=1, study_name="same", isolate=False)
    with pytest.raises(ConfigError, match=rf"study 'same' was started with other {named} ") as info:
        _tune(demo, tmp_path, n_trials=2, study_name="same", isolate=False, **kw)
    assert list(info.value.differences) == [named]
    study = optuna.load_study(study_name="same", storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert len(study.trials) == 1  # refused before any trial
    assert _tune(demo, tmp_path, n_trials=2, study_name="same", isolate=False).metadata["finished_trials"] == 2


def test_cli_tune_names_the_options_a_resumed_study_differs_in(demo, tmp_path, capsys):
    train, val, schema = demo
    train.to_csv(tmp_path / "train.csv", index=False)
    val.to_csv(tmp_path / "val.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    args = ["tune", str(tmp_path / "train.csv"), "--val", str(tmp_path / "val.csv"), "--schema",
            str(tmp_path / "schema.json"), "--trials", "1", "--storage", str(tmp_path / "cli.db"), "--numeric",
            "uniform", "--in-process"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli_main(args + ["--weights", "0,0,1", "--select-model", "indif+gum"]) == 0
        capsys.readouterr()
        assert cli_main(args + ["--weights", "1,0,0", "--select-model", "indif+gum,mst+pgm",
                                "--fixed-modules"]) == 2
    err = capsys.readouterr().err
    assert ("was started with other settings: --numeric uniform --select-model indif+gum (now --numeric uniform "
            "--select-model indif+gum,mst+pgm); "
            "without --fixed-modules (now with); --weights 0,0,1 (now 1,0,0).") in err
    assert "another --study-name" in err and "Traceback" not in err


def test_a_study_of_another_program_is_refused_untouched(demo, tmp_path):
    # tune --study-name synthzoo-grid on a bench grid's storage wrote its settings into the grid's study, took
    # the grid's cells for tuning trials and died with KeyError: 'config'
    url = f"sqlite:///{tmp_path / 'study.db'}"
    grid = optuna.create_study(storage=url, study_name="synthzoo-grid")
    grid.set_user_attr("synthzoo_grid", {"data": ["adult"]})
    grid.enqueue_trial({"cell": 0})
    with pytest.raises(ConfigError, match=r"study 'synthzoo-grid' in this storage is not a synthzoo tuning study "
                                          r"\(a synthzoo bench grid\): it holds 1 trial\(s\)"):
        _tune(demo, tmp_path, n_trials=1, study_name="synthzoo-grid", isolate=False)
    after = optuna.load_study(study_name="synthzoo-grid", storage=url)
    assert list(after.user_attrs) == ["synthzoo_grid"] and len(after.trials) == 1
    other = optuna.create_study(storage=url, study_name="other")
    other.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=1)
    with pytest.raises(ConfigError, match=r"study 'other' in this storage is not a synthzoo tuning study: it holds 1"):
        _tune(demo, tmp_path, n_trials=1, study_name="other", isolate=False)
    # configurations a user enqueued into a new study before tuning are not another program's
    optuna.create_study(storage=url, study_name="mine").enqueue_trial({"model.gum.iterations": 7})
    assert _tune(demo, tmp_path, n_trials=1, study_name="mine", isolate=False).best_params["model.gum.iterations"] == 7


def test_same_seed_same_trials(demo, tmp_path):
    # the DP noise is secret by default; the test-only noise_seed opt-in makes it replay
    a = _tune(demo, tmp_path, storage=str(tmp_path / "a.db"), noise_seed=11)
    b = _tune(demo, tmp_path, storage=str(tmp_path / "b.db"), noise_seed=11)
    assert [t.params for t in a.study.trials] == [t.params for t in b.study.trials]
    assert [t.value for t in a.study.trials] == [t.value for t in b.study.trials]
    assert "replayable noise (test only)" in a.summary() and a.metadata["replayable_noise"].startswith("replayable")
    assert all(r.synthesizer.replayable_noise for r in (a, b))
    stored = optuna.load_study(study_name=a.study.study_name, storage=f"sqlite:///{tmp_path / 'a.db'}")
    assert "noise_seed" not in stored.user_attrs["synthzoo"]  # the seed itself is never stored
    assert 11 not in stored.user_attrs["synthzoo"].values()


def test_without_noise_seed_the_noise_is_secret(demo, tmp_path):
    # same seed, same parameters, but fresh noise: the trials' values differ
    a = _tune(demo, tmp_path, storage=str(tmp_path / "a.db"), n_trials=1)
    b = _tune(demo, tmp_path, storage=str(tmp_path / "b.db"), n_trials=1)
    assert a.study.trials[0].params == b.study.trials[0].params
    assert a.study.trials[0].value != b.study.trials[0].value
    assert "replayable" not in a.summary() and "replayable_noise" not in a.metadata


@pytest.mark.parametrize("isolate", [True, False])
def test_trial_time_limit_prunes_with_the_reason(demo, tmp_path, isolate):
    with pytest.raises(ConfigError, match="no trial completed"):
        _tune(demo, tmp_path, trial_timeout=1e-4, isolate=isolate)
    study = optuna.load_study(study_name="synthzoo-privsyn-non-private", storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert all(t.state == optuna.trial.TrialState.PRUNED for t in study.trials)
    assert "time limit" in study.trials[0].user_attrs["pruned_reason"]


def test_time_limit_is_hard_a_trial_stuck_in_a_native_call_is_killed(demo, tmp_path, misbehave):
    # the 2nd fit of the trial process blocks with signals held off (SIGALRM could not stop it)
    misbehave("hang", call=2)
    limit = 8.0  # far above a normal trial here (< 1 s), also on a loaded machine
    res = _tune(demo, tmp_path, n_trials=3, trial_timeout=limit)
    done, stuck, after = res.study.trials
    assert (done.state, stuck.state, after.state) == (optuna.trial.TrialState.COMPLETE,
                                                       optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.COMPLETE)
    assert stuck.user_attrs["pruned_reason"] == "trial ran past its time limit of 8s; its process was killed"
    assert (stuck.datetime_complete - stuck.datetime_start).total_seconds() < limit + 4
    assert not process_alive(int((tmp_path / "hanging").read_text()))  # the stuck process is gone
    # the study went on in a new process and counts the stopped trial as finished
    assert res.metadata["finished_trials"] == 3 and "fit_seconds" in after.user_attrs
    assert res.metadata["best_trial"] in (0, 2) and len(res.synthesizer.sample(20)) == 20


def test_a_trial_whose_process_dies_is_pruned_and_the_study_goes_on(demo, tmp_path, misbehave):
    misbehave("crash", call=2)  # the 2nd fit of each trial process kills it
    res = _tune(demo, tmp_path, n_trials=3)
    assert [t.state.name for t in res.study.trials] == ["COMPLETE", "PRUNED", "COMPLETE"]
    assert "process died without a result (exit code -9)" in res.study.trials[1].user_attrs["pruned_reason"]


def test_an_error_in_the_trial_process_is_raised_with_its_type(demo, tmp_path, monkeypatch):
    # a ConfigError raised by make() in the trial process (a parameter value the model refuses; the tuner
    # refuses such a space up front, so that check is off here to reach the trial process)
    monkeypatch.setattr("tuning.tuner.check_space", lambda *a, **k: None)
    with pytest.raises(ConfigError, match="iterations=-3") as info:
        _tune(demo, tmp_path, n_trials=1, space={"model.gum.iterations": ("int", -3, -3)}, start_from_defaults=False)
    assert "raised in the worker process" in str(info.value.__cause__)


def test_in_process_and_trial_process_give_the_same_trials(demo, tmp_path):
    a = _tune(demo, tmp_path, storage=str(tmp_path / "a.db"), isolate=False, noise_seed=5)
    b = _tune(demo, tmp_path, storage=str(tmp_path / "b.db"), noise_seed=5)
    assert [t.params for t in a.study.trials] == [t.params for t in b.study.trials]
    assert [t.value for t in a.study.trials] == [t.value for t in b.study.trials]
    # the returned synthesizer is the best trial's, loaded from its state, not refitted
    assert a.synthesizer.sample(30, seed=5).equals(b.synthesizer.sample(30, seed=5))


def test_multi_objective_returns_the_pareto_front(demo, tmp_path):
    res = _tune(demo, tmp_path, multi_objective=True, weights=(0.5, 0, 0.5), n_trials=2)
    front = res.metadata["pareto_front"]
    assert 1 <= len(front) <= 2 and all(len(p["values"]) == 3 for p in front)


def test_module_choice_is_part_of_the_space():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    picks = set()
    for _ in range(12):
        trial = study.ask()
        cfg = suggest_config(trial, "privsyn")
        sz.make("privsyn", **cfg)  # every drawn combination is one the pipeline accepts
        picks.add((trial.params["preprocess.numeric"], trial.params["select_model"]))
        study.tell(trial, 0.0)
    assert len({p[0] for p in picks}) == 2 and len({p[1] for p in picks}) >= 3
    assert all(m in MODULE_CHOICES["select_model"] for _, m in picks)


@pytest.mark.parametrize("kw,match", [
    ({"privacy": "secret"}, "privacy must be one of"),
    ({"privacy": "public"}, "needs public="),
    ({"n_trials": 0}, "n_trials"),
    ({"weights": (1, -1, 0)}, "weights"),
    ({"choices": {"select_model": ["aim+gum"]}}, r"choices: 'select_model' takes a non-empty list from \["),
    ({"choices": {"model": ["gum"]}}, r"choices: unknown key 'model'; the tuner chooses \['preprocess.numeric', "),
    ({"schema": None}, "schema"),
    ({"privacy": "accounted", "epsilon": None}, "finite epsilon"),
])
def test_bad_input_is_refused(demo, tmp_path, kw, match):
    with pytest.raises(ConfigError, match=match):
        _tune(demo, tmp_path, **kw)


def test_cli_tune_writes_metadata_with_the_privacy_statement(demo, tmp_path, capsys):
    train, val, schema = demo
    train.to_csv(tmp_path / "train.csv", index=False)
    val.to_csv(tmp_path / "val.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = cli_main(["tune", str(tmp_path / "train.csv"), "--val", str(tmp_path / "val.csv"), "--schema",
                       str(tmp_path / "schema.json"), "--trials", "2", "--storage", str(tmp_path / "cli.db"),
                       "--select-model", "indif+gum", "--numeric", "uniform", "--weights", "0,0,1",
                       "--out", str(tmp_path / "tuned.json")])
    assert rc == 0
    out = capsys.readouterr().out
    assert "NOT covered by the differential privacy guarantee" in out
    # each trial's value to 4 digits, as the summary's (it was "value=[0.0764488421552747]")
    line = next(x for x in out.splitlines() if x.strip().startswith("trial 0:"))
    assert re.fullmatch(r"  trial 0: COMPLETE value=0\.\d{1,5}(e-\d+)?", line), line
    saved = json.loads((tmp_path / "tuned.json").read_text())
    assert saved["privacy"] == "non-private" and "NOT covered" in saved["privacy_statement"]
    assert sz.Synthesizer.load(tmp_path / "tuned.model.json").sample(10).shape[0] == 10


@pytest.mark.parametrize("args, said", [
    # the tuner's argument names reached the command line: score_rows, privacy='accounted', trial_timeout,
    # weights, multi_objective, "choices: 'select_model'"
    (["--privacy", "accounted", "--score-rows", "0"], "--score-rows must be a positive whole number, got 0"),
    (["--privacy", "accounted", "--timeout", "5"], "--privacy accounted takes no --timeout:"),
    (["--privacy", "accounted", "--epsilon", "none"], "--privacy accounted needs a finite --epsilon; use --privacy "
                                                      "non-private for --epsilon none"),
    (["--weights", "1,2"], "--weights must be three non-negative numbers, not all zero, got [1.0, 2.0]"),
    # argparse took '-1,1,1' for an option: "argument --weights: expected one argument"
    (["--weights", "-1,1,1"], "--weights must be three non-negative numbers, not all zero, got [-1.0, 1.0, 1.0]"),
    (["--privacy", "accounted", "--multi-objective"], "--multi-objective is not available with --privacy accounted"),
    (["--numeric", "foo"], "--numeric takes names from ['privtree', 'uniform'], got ['foo']"),
    (["--select-model", "indif+foo"], "--select-model takes names from ['indif+gum', "),
    # options of another mode were read and ignored without a word
    (["--stopping", "poisson"], "--stopping applies to --privacy accounted only; this is --privacy non-private"),
    (["--score-rows", "100"], "--score-rows applies to --privacy accounted only"),
    (["--models-dir", "m"], "--models-dir applies to --privacy accounted only"),
    (["--public", "PUBLIC"], "--public applies to --privacy public only; this is --privacy non-private"),
    (["--privacy", "accounted", "--sampler-seed", "3"], "--sampler-seed is not used with --privacy accounted"),
    (["--privacy", "public", "--public", "PUBLIC", "--val", "VAL"], "--val is not read with --privacy public"),
])
def test_cli_tune_says_its_option_words_and_refuses_options_it_would_ignore(demo, tmp_path, capsys, args, said):
    train, val, schema = demo
    train.to_csv(tmp_path / "train.csv", index=False)
    val.to_csv(tmp_path / "val.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    files = {"PUBLIC": str(tmp_path / "val.csv"), "VAL": str(tmp_path / "val.csv")}
    assert cli_main(["tune", str(tmp_path / "train.csv"), "--schema", str(tmp_path / "schema.json"), "--trials", "1",
                     "--storage", str(tmp_path / "o.db"), *[files.get(x, x) for x in args]]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert not (tmp_path / "o.db").exists() or not optuna.get_all_study_names(f"sqlite:///{tmp_path / 'o.db'}")


def test_tuned_model_file_is_signed_with_sign_with_and_tune_sign(demo, tmp_path, capsys):
    from synthzoo.modelfile import generate_key

    train, val, schema = demo
    generate_key(tmp_path / "owner")
    generate_key(tmp_path / "other")
    res = _tune(demo, tmp_path, n_trials=1)
    res.save(tmp_path / "api.json", sign_with=tmp_path / "owner")
    synth = sz.Synthesizer.load(tmp_path / "api.model.json", trusted_keys=[tmp_path / "owner.pub"])
    assert "signed" in synth.privacy_report()
    with pytest.raises(ConfigError, match="not a trusted key"):
        sz.Synthesizer.load(tmp_path / "api.model.json", trusted_keys=[tmp_path / "other.pub"])
    with pytest.raises(ConfigError, match="cannot read the private key"):  # nothing written
        res.save(tmp_path / "nokey.json", sign_with=tmp_path / "missing")
    assert not (tmp_path / "nokey.json").exists() and not (tmp_path / "nokey.model.json").exists()

    train.to_csv(tmp_path / "train.csv", index=False)
    val.to_csv(tmp_path / "val.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    args = ["tune", str(tmp_path / "train.csv"), "--val", str(tmp_path / "val.csv"), "--schema",
            str(tmp_path / "schema.json"), "--trials", "1", "--storage", str(tmp_path / "cli.db"),
            "--select-model", "indif+gum", "--numeric", "uniform", "--weights", "0,0,1"]
    assert cli_main([*args, "--sign", str(tmp_path / "missing"), "--out", str(tmp_path / "t.json")]) == 2
    assert "cannot read the private key" in capsys.readouterr().err and not (tmp_path / "cli.db").exists()
    assert cli_main([*args, "--sign", str(tmp_path / "owner")]) == 2
    assert "pass --out" in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli_main([*args, "--sign", str(tmp_path / "owner"), "--out", str(tmp_path / "t.json")]) == 0
    capsys.readouterr()
    assert cli_main(["sample", str(tmp_path / "t.model.json"), "-n", "5", "--out", str(tmp_path / "f.csv"),
                     "--trust", str(tmp_path / "owner.pub")]) == 0
    assert "verified against your trusted key" in capsys.readouterr().out


def _dashboard_get(app, path: str, query: str = ""):
    """GET ``path`` from the dashboard's WSGI app in this process (no server): (status, JSON, raw body)."""
    status = []
    env = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": query, "SERVER_NAME": "t",
           "SERVER_PORT": "80", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(), "wsgi.errors": io.StringIO()}
    raw = b"".join(app(env, lambda s, headers, exc_info=None: status.append(s)))
    return status[0], json.loads(raw), raw


@pytest.mark.parametrize("privacy", ["non-private", "accounted"])
def test_storage_is_readable_by_optuna_dashboard(demo, tmp_path, privacy):
    dashboard = pytest.importorskip("optuna_dashboard", reason="optuna-dashboard (the 'tune' extra) is not installed")
    # accounted: replayable stopping coins (test only), and the storage keeps run synthesizers
    res = _tune(demo, tmp_path, study_name="dash", privacy=privacy, n_trials=3, noise_seed=0,
                **({"score_rows": 100} if privacy == "accounted" else {}))
    app = dashboard.wsgi(f"sqlite:///{tmp_path / 'study.db'}")

    status, payload, _ = _dashboard_get(app, "/api/studies")
    assert status.startswith("200")
    studies = {s["study_name"]: s for s in payload["study_summaries"]}
    assert studies["dash"]["study_id"] == res.study._study_id
    attrs = {a["key"]: a["value"] for a in studies["dash"]["user_attrs"]}
    assert attrs["privacy"] == privacy and attrs["privacy_statement"] == res.privacy_statement  # shown whole
    assert f'"privacy": "{privacy}"' in attrs["synthzoo"]  # the metadata (the dashboard cuts it at 1,024 chars)

    status, detail, raw = _dashboard_get(app, f"/api/studies/{res.study._study_id}", "after=0")
    assert status.startswith("200")
    trials = detail["trials"]
    assert [t["number"] for t in trials] == [t.number for t in res.study.trials]
    ran = [t for t in res.study.trials if privacy != "accounted" or t.user_attrs.get("run")]
    shown_runs = [t for t in trials if t["number"] in {r.number for r in ran}]
    assert len(shown_runs) == len(ran) >= 1 and (privacy == "accounted" or len(ran) == 3)
    assert all(t["state"] == "Complete" for t in shown_runs)
    for shown, trial in zip(shown_runs, ran):
        user = {a["key"]: a["value"] for a in shown["user_attrs"]}
        assert {"config", "worker"} <= set(user)
        # accounted: a run's fit time follows the private rows (a side channel DP does not cover): not stored
        assert ("fit_seconds" in user) == (privacy != "accounted")
        assert json.dumps(trial.user_attrs["config"]).startswith(user["config"])
        assert {p["name"] for p in shown["params"]} == set(trial.params)
        # accounted: exact terms are never written, not even as null; non-private: they are shown
        assert ("query" in user) == (privacy != "accounted")
    assert detail["best_trials"][0]["number"] == res.best_trial
    if privacy == "accounted":  # the stored synthesizers are not listed
        assert "best_trial" not in res.metadata and "finished_trials" not in res.metadata
        assert any("synthzoo:model_state" in t.system_attrs for t in res.study.trials)
        assert b"model_state" not in raw


def test_summary_shows_scores_to_four_digits():
    # "best run's noisy score: 0.06542841615682661" (the metadata keeps the exact value)
    from tuning.result import TuneResult

    res = TuneResult(best_params={}, best_config={}, best_value=0.06542841615682661, privacy="non-private",
                     privacy_statement="s", synthesizer=None, study=None, metadata={"finished_trials": 3})
    assert "best value: 0.06543" in res.summary()
    res.best_value = [0.12345678, 0.5, None]
    assert "best value: [0.1235, 0.5, None]" in res.summary()
