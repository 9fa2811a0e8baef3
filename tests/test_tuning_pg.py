"""Workers in separate processes share one Optuna study (a real PostgreSQL server; the kill/resume
test also runs on a SQLite file).

The PostgreSQL cases need ``SYNTHZOO_TEST_PG_URL`` (``.ci/run`` installs and starts a server on 127.0.0.1 and sets it);
skips with the reason otherwise.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from conftest import process_alive

optuna = pytest.importorskip("optuna")

from tuning.tuner import _pg_driver

N = 6
WORKER = textwrap.dedent("""
    import json, os, sys, time, warnings
    from pathlib import Path
    import optuna
    import pandas as pd
    from synthzoo.datasets import make_demo, train_test_split
    from tuning import tune

    url, name, n, seed, sync, hang_at, extra = sys.argv[1:8]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    df, schema = make_demo(n=500, seed=0)
    train, val = train_test_split(df, test_size=0.3, seed=0)
    if int(hang_at) > 0:  # simulate a worker that dies mid-trial: the n-th fit of its trial process never
        # returns (the fits run in that process, so the hook patches them there; see test_tuning.py)
        os.environ.update({"SYNTHZOO_WORKER_INIT": "test_tuning:misbehave_in_fit",
                           "SYNTHZOO_TEST_FIT_MODE": "hang", "SYNTHZOO_TEST_FIT_CALL": hang_at,
                           "SYNTHZOO_TEST_SYNC": sync})
    Path(sync, f"ready-{seed}").touch()  # start together, so both workers really share the study
    while len(list(Path(sync).glob("ready-*"))) < int(os.environ.get("N_WORKERS", "1")):
        time.sleep(0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tune("privsyn", train, val, epsilon=1.0, schema=schema, n_trials=int(n), storage=url, study_name=name,
                   sampler_seed=int(seed), heartbeat_interval=1, grace_period=2, weights=(0, 0, 1), prune=False,
                   choices={"preprocess.numeric": ["uniform"], "select_model": ["indif+gum"]},
                   space={"model.gum.iterations": ("int", 5, 10)}, **json.loads(extra))
    fake = res.synthesizer.sample(30, seed=1)
    print("RESULT " + json.dumps({"best_trial": res.best_trial,
                                  "sample": int(pd.util.hash_pandas_object(fake).sum()),
                                  "epsilon": res.synthesizer.privacy_spent().epsilon}))
""")


@pytest.fixture(scope="module")
def pg_url():
    url = os.environ.get("SYNTHZOO_TEST_PG_URL")
    if not url:
        pytest.skip("SYNTHZOO_TEST_PG_URL is not set (.ci/run starts a local PostgreSQL server and sets it)")
    pytest.importorskip("psycopg2", reason="psycopg2 is needed for a PostgreSQL storage")
    try:
        import sqlalchemy

        sqlalchemy.create_engine(_pg_driver(url)).connect().close()
    except Exception as e:  # noqa: BLE001 - any connection failure means: no server to test against
        pytest.skip(f"PostgreSQL at SYNTHZOO_TEST_PG_URL is not reachable: {e}")
    return _pg_driver(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def shared(request, tmp_path):
    """(storage URL, study name): a SQLite file on this machine, or the PostgreSQL server."""
    url = f"sqlite:///{tmp_path / 'shared.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    name = f"pytest-{uuid.uuid4().hex[:10]}"
    optuna.create_study(storage=url, study_name=name, direction="minimize")
    yield url, name
    optuna.delete_study(study_name=name, storage=url)


@pytest.fixture
def study_name(pg_url):
    name = f"pytest-{uuid.uuid4().hex[:10]}"
    # created up front, as the first machine would, so workers do not race to create the tables
    optuna.create_study(storage=pg_url, study_name=name, direction="minimize")
    yield name
    if not os.environ.get("KEEP_STUDY"):
        optuna.delete_study(study_name=name, storage=pg_url)


def _worker(pg_url, name, n, seed, sync, hang_at=0, n_workers=1, **extra):
    env = {**os.environ, "N_WORKERS": str(n_workers), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(Path.cwd()), str(Path(__file__).parent)])}  # + the test hook
    return subprocess.Popen([sys.executable, "-c", WORKER, pg_url, name, str(n), str(seed), str(sync), str(hang_at),
                             json.dumps(extra)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _result(out: str) -> dict:
    return json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[len("RESULT "):])


def _finished(study):
    done = study.get_trials(states=(optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED))
    return [t for t in done if not t.user_attrs.get("surplus")]


def test_two_workers_finish_n_trials_none_lost_or_duplicated(pg_url, study_name, tmp_path):
    # noise_seed (test only): the worker that refits the other's best trial replays that trial's noise
    procs = [_worker(pg_url, study_name, N, seed, tmp_path, n_workers=2, noise_seed=0) for seed in (1, 2)]
    results = []
    for p in procs:
        out, _ = p.communicate(timeout=240)
        assert p.returncode == 0, out
        results.append(_result(out))
    # each worker waits for the other's last trials and selects from all N: the same best synthesizer
    # (loaded by the worker that ran it, refitted with the same seed and noise seed by the other)
    assert results[0] == results[1]
    study = optuna.load_study(study_name=study_name, storage=pg_url)
    finished = _finished(study)
    assert len(finished) == N  # none lost, none extra
    assert len({t.number for t in finished}) == N
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in finished)
    assert len({t.user_attrs["worker"] for t in finished}) == 2  # both workers did trials
    surplus = [t for t in study.trials if t.user_attrs.get("surplus")]
    assert all("config" not in t.user_attrs for t in surplus)  # a surplus trial read no data


def test_killed_worker_leaves_the_study_resumable(shared, tmp_path):
    pg_url, study_name = shared
    a = _worker(pg_url, study_name, N, 1, tmp_path, hang_at=3)  # finishes 2 trials, hangs in its 3rd
    deadline = time.time() + 180
    while not (tmp_path / "hanging").exists():
        assert a.poll() is None, a.communicate()[0]
        assert time.time() < deadline, "worker never reached its third trial"
        time.sleep(0.1)
    before = {t.number: t.value for t in _finished(optuna.load_study(study_name=study_name, storage=pg_url))}
    assert len(before) == 2
    trial_pid = int((tmp_path / "hanging").read_text())  # the worker's trial process, stuck in its fit
    os.kill(a.pid, signal.SIGKILL)  # mid-trial
    a.communicate()
    deadline = time.time() + 10
    while process_alive(trial_pid):  # the trial process ends with its worker: no orphan left running
        assert time.time() < deadline, "the killed worker's trial process is still running"
        time.sleep(0.1)
    # the next worker (same host) sees the dead pid and fails + re-enqueues that trial at once; a worker
    # on another machine would do so after the heartbeat grace period (2 s here)
    b = _worker(pg_url, study_name, N, 2, tmp_path)
    out, _ = b.communicate(timeout=240)
    assert b.returncode == 0, out
    study = optuna.load_study(study_name=study_name, storage=pg_url)
    finished = _finished(study)
    assert len(finished) == N
    assert {n: v for n, v in ((t.number, t.value) for t in finished) if n in before} == before  # intact
    failed = study.get_trials(states=(optuna.trial.TrialState.FAIL,))
    assert len(failed) == 1 and failed[0].number == 2  # the killed trial, marked failed by the heartbeat
    retried = [t for t in finished if t.system_attrs.get("failed_trial") == 2]
    assert len(retried) == 1 and retried[0].params == failed[0].params  # and re-run with its parameters


def test_two_accounted_workers_share_the_stopping_and_release_the_same_best_trial(pg_url, study_name, tmp_path):
    """Random stopping with two workers: they start together and flip their own secret stopping coins, one
    trial at a time in trial-number order; the study holds no number of runs, only the stopped flag, every
    run finishes, no run starts after the coin that stopped, and both workers release the one best run's
    synthesizer -- one of them from the storage, as the best ran in the other."""
    procs = [_worker(pg_url, study_name, 3, seed, tmp_path, n_workers=2, privacy="accounted", score_rows=100)
             for seed in (1, 2)]
    results = []
    for p in procs:
        out, _ = p.communicate(timeout=240)
        assert p.returncode == 0, out
        results.append(_result(out))
    study = optuna.load_study(study_name=study_name, storage=pg_url)
    meta = study.user_attrs["synthzoo"]
    assert not {"runs", "finished_trials", "best_trial"} & set(meta)
    assert study._storage.get_study_system_attrs(study._study_id)["synthzoo:stopped"] is True
    runs = [t for t in study.trials if t.user_attrs.get("run")]
    surplus = [t for t in study.trials if t.user_attrs.get("surplus")]
    assert runs and all(t.state == optuna.trial.TrialState.COMPLETE for t in runs)
    assert len(runs) + len(surplus) == len(study.trials)
    assert max(t.number for t in runs) < min(t.number for t in surplus)  # nothing ran after the stop
    assert all("config" not in t.user_attrs for t in surplus)
    best = min(runs, key=lambda t: t.value)
    assert [r["best_trial"] for r in results] == [best.number, best.number]
    assert results[0]["sample"] == results[1]["sample"] and results[0]["epsilon"] == results[1]["epsilon"] <= 1.0


OPEN = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    url, sync, me = sys.argv[1:4]
    import optuna
    from tuning.storage import _storage
    Path(sync, f"go-{me}").touch()  # start together
    while len(list(Path(sync).glob("go-*"))) < 2:
        time.sleep(0.005)
    optuna.create_study(storage=_storage(url, 30, None), study_name="race", load_if_exists=True)
    print("opened")
""")


def test_two_workers_creating_fresh_tables_at_once_both_open_them(pg_url, tmp_path):
    """Fresh tables on PostgreSQL (a new schema each round): two workers creating them at once raced on
    ``pg_type`` (a duplicate key; 2 of 6 rounds before the retry), and both must now open the study."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(pg_url)
    for r in range(4):
        schema = f"race_{uuid.uuid4().hex[:10]}"
        with engine.begin() as c:
            c.exec_driver_sql(f"CREATE SCHEMA {schema}")
        url = f"{pg_url}?options=-csearch_path%3D{schema}"
        sync = tmp_path / f"round{r}"
        sync.mkdir()
        try:
            procs = [subprocess.Popen([sys.executable, "-c", OPEN, url, str(sync), str(i)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for i in range(2)]
            outs = [p.communicate(timeout=120) for p in procs]
            for p, (out, err) in zip(procs, outs):
                assert p.returncode == 0 and "opened" in out, err[-2000:]
        finally:
            with engine.begin() as c:
                c.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
    engine.dispose()
