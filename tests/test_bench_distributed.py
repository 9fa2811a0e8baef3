"""The ablation grid as a shared Optuna study (synthzoo.bench.distributed): several worker processes
share one grid, one is killed in the middle of a cell, and every cell is in the result exactly once
(the killed worker's cell re-run once by another worker).  SQLite here; PostgreSQL too where
``SYNTHZOO_TEST_PG_URL`` is set (``.ci/run`` starts a server), as in tests/test_tuning_pg.py."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import process_alive

optuna = pytest.importorskip("optuna")

from synthzoo.bench import GRID_COLUMNS, distributed  # noqa: E402
from synthzoo.datasets import make_demo  # noqa: E402
from synthzoo.optuna_storage import pg_driver  # noqa: E402

HANG_ENV = "SYNTHZOO_TEST_HANG_DIR"


def hang_in_cell():
    """Worker-init hook (runs in the cell's process): say where it is, then never return."""
    folder = Path(os.environ[HANG_ENV])
    (folder / "hanging").write_text(str(os.getpid()))
    while True:
        time.sleep(1)


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("griddata")
    df, schema = make_demo(n=400, seed=0)
    df.to_csv(d / "demo.csv", index=False)
    (d / "schema.json").write_text(json.dumps(schema.to_dict()))
    return str(d / "demo.csv"), str(d / "schema.json")


@pytest.fixture(params=["sqlite", "postgresql"])
def storage(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'grid.db'}"
    url = os.environ.get("SYNTHZOO_TEST_PG_URL")
    if not url:
        pytest.skip("SYNTHZOO_TEST_PG_URL is not set (.ci/run starts a local PostgreSQL server and sets it)")
    pytest.importorskip("psycopg2", reason="psycopg2 is needed for a PostgreSQL storage")
    return pg_driver(url)


def _worker(storage, study, hang_dir=None):
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(Path.cwd()), str(Path(__file__).parent)])}
    if hang_dir is not None:
        env.update({"SYNTHZOO_WORKER_INIT": "test_bench_distributed:hang_in_cell", HANG_ENV: str(hang_dir)})
    return subprocess.Popen([sys.executable, "-m", "synthzoo.cli", "bench-worker", "--storage", storage, "--study",
                             study, "--heartbeat", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def test_workers_share_the_grid_and_a_killed_workers_cell_runs_once_more(demo_files, storage, tmp_path):
    csv, schema = demo_files
    study = f"pytest-grid-{uuid.uuid4().hex[:8]}"
    n = distributed.create_grid_study(storage, study, [csv], ["indif", "mst"], ["gum"], [0.5, 1.0], [0],
                                      schema=schema, ml=False, cell_timeout=120)
    assert n == 2 + 4  # two reference rows and 2 selectors x 1 model x 2 epsilons
    # joining again with the same grid enqueues nothing; another grid under that name is refused
    assert distributed.create_grid_study(storage, study, [csv], ["indif", "mst"], ["gum"], [0.5, 1.0], [0],
                                         schema=schema, ml=False, cell_timeout=120) == n
    with pytest.raises(Exception, match="another grid"):
        distributed.create_grid_study(storage, study, [csv], ["indif"], ["gum"], [1.0], [0], schema=schema)

    doomed = _worker(storage, study, hang_dir=tmp_path)  # its first cell's process never returns
    deadline = time.time() + 180
    while not (tmp_path / "hanging").exists():
        assert doomed.poll() is None, doomed.communicate()[0]
        assert time.time() < deadline, "the worker never started a cell"
        time.sleep(0.1)
    cell_pid = int((tmp_path / "hanging").read_text())
    others = [_worker(storage, study) for _ in range(2)]
    time.sleep(1.0)
    os.kill(doomed.pid, signal.SIGKILL)  # mid-cell
    doomed.communicate()
    deadline = time.time() + 10
    while process_alive(cell_pid):  # the cell's process ends with its worker
        assert time.time() < deadline, "the killed worker's cell process is still running"
        time.sleep(0.1)
    outs = []
    for p in others:
        out, _ = p.communicate(timeout=400)
        assert p.returncode == 0, out
        outs.append(out)

    res = distributed.grid_result(storage, study)
    assert list(res.columns) == GRID_COLUMNS + ["worker"]
    assert len(res) == n and (res["status"] == "ok").all(), res[["selector", "epsilon", "status", "reason"]]
    cells = res[res["kind"] == "cell"]
    assert sorted(zip(cells["selector"], cells["epsilon"])) == [("indif", 0.5), ("indif", 1.0), ("mst", 0.5),
                                                                 ("mst", 1.0)]
    assert (cells["eps_spent"] <= cells["epsilon"] * (1 + 1e-9)).all()
    s = optuna.load_study(study_name=study, storage=storage)
    failed = s.get_trials(states=(optuna.trial.TrialState.FAIL,))
    assert len(failed) == 1  # the killed worker's cell, failed once ...
    complete = [t for t in s.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) == n and len({t.params["cell"] for t in complete}) == n  # ... every cell once
    rerun = [t for t in complete if t.system_attrs.get("failed_trial") == failed[0].number]
    assert len(rerun) == 1 and rerun[0].params == failed[0].params  # ... and re-run once by another worker
    dead = f":{doomed.pid}"
    assert failed[0].user_attrs["worker"].endswith(dead) and not rerun[0].user_attrs["worker"].endswith(dead)
    assert "re-run of a dead worker" in "".join(outs)
    optuna.delete_study(study_name=study, storage=storage)


def test_grid_result_and_worker_refuse_a_missing_or_foreign_study(tmp_path):
    from synthzoo.core.errors import ConfigError

    url = f"sqlite:///{tmp_path / 'g.db'}"
    with pytest.raises(ConfigError, match="no study"):
        distributed.grid_worker(url, "nothing-here", log=lambda s: None)
    optuna.create_study(storage=url, study_name="tuning-study")
    with pytest.raises(ConfigError, match="not a synthzoo grid"):
        distributed.grid_worker(url, "tuning-study", log=lambda s: None)
    cells = distributed.grid_cells({"data": ["a", "b"], "selectors": ["x"], "models": ["m", "k"], "epsilons": [1.0],
                                    "seeds": [0, 1], "references": True})
    assert len(cells) == 2 * (2 + 4) and cells[0] == {"data": "a", "reference": "TRAIN"}


def _pop_all(url, name, q):
    """In a process: pop enqueued trials until none waits; send the trial ids."""
    import warnings

    warnings.simplefilter("ignore")
    from synthzoo.optuna_storage import rdb_storage

    study = optuna.load_study(study_name=name, storage=rdb_storage(url, 5, 15))
    got = []
    while (tid := study._pop_waiting_trial_id()) is not None:
        got.append(tid)
    q.put(got)


def test_sqlite_workers_never_pop_the_same_trial(tmp_path):
    """SQLite ignores optuna's SELECT ... FOR UPDATE and pysqlite begins its transaction at the write:
    without BEGIN IMMEDIATE, four processes popped 19-23 of 200 enqueued trials twice (a grid cell run
    by two workers; the second's tell failed with "Cannot tell a COMPLETE trial")."""
    import multiprocessing as mp

    from synthzoo.optuna_storage import rdb_storage

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    url = f"sqlite:///{tmp_path / 'race.db'}"
    study = optuna.create_study(storage=rdb_storage(url, 5, 15), study_name="race")
    for i in range(200):
        study.enqueue_trial({"x": i}, skip_if_exists=False)
    q = mp.get_context("fork").Queue()
    procs = [mp.get_context("fork").Process(target=_pop_all, args=(url, "race", q)) for _ in range(4)]
    for p in procs:
        p.start()
    popped = [q.get(timeout=300) for _ in procs]
    for p in procs:
        p.join()
    ids = sum(popped, [])
    assert len(ids) == 200 and len(set(ids)) == 200
