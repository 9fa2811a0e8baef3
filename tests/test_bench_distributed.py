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
from synthzoo.core.errors import ConfigError  # noqa: E402
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


def _small_grid(url, demo_files, name="g", **kw):
    csv, schema = demo_files
    return distributed.create_grid_study(url, name, [csv], ["indif"], ["gum"], kw.pop("epsilons", [1.0]), [0],
                                         schema=schema, ml=False, references=kw.pop("references", False), **kw)


def test_an_error_in_the_worker_is_the_cells_row_and_an_interrupt_requeues_it(demo_files, tmp_path, monkeypatch):
    # errors outside the cell's process (loading, scoring) left the trial FAIL with no retry: every worker
    # then waited for the cell for ever
    url = f"sqlite:///{tmp_path / 'g.db'}"
    assert _small_grid(url, demo_files, epsilons=[1.0, 5.0]) == 2
    real = distributed.run_cell
    calls = []

    def flaky(spec, cell, data):
        calls.append(cell["epsilon"])
        if cell["epsilon"] == 1.0:
            raise RuntimeError("scoring broke")
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(spec, cell, data)

    monkeypatch.setattr(distributed, "run_cell", flaky)
    with pytest.raises(KeyboardInterrupt):
        distributed.grid_worker(url, "g", heartbeat_interval=1, poll=0.1, log=lambda s: None)
    assert distributed.grid_worker(url, "g", heartbeat_interval=1, poll=0.1, log=lambda s: None) == 1
    res = distributed.grid_result(url, "g").set_index("epsilon")
    assert res.loc[1.0, "status"] == "error" and "RuntimeError: scoring broke" in res.loc[1.0, "reason"]
    assert res.loc[5.0, "status"] == "ok" and calls == [1.0, 5.0, 5.0]


def test_a_grid_whose_cells_were_not_all_enqueued_is_completed_on_join(demo_files, tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    monkeypatch.setattr(distributed, "_enqueue_missing", lambda study, n: 0)  # a creator stopped mid-way
    _small_grid(url, demo_files, epsilons=[1.0, 5.0])
    monkeypatch.undo()
    assert not optuna.load_study(study_name="g", storage=url).trials
    assert _small_grid(url, demo_files, epsilons=[1.0, 5.0]) == 2  # the same command again
    assert len(optuna.load_study(study_name="g", storage=url).trials) == 2


@pytest.mark.parametrize("kw, match", [
    (dict(epsilons=[0.0]), r"epsilon 0.0"), (dict(epsilons=[True]), r"epsilon True"),
    (dict(epsilons=[1.0, 1.0]), "listed twice"), (dict(data=[]), "datasets must be"),
    (dict(data=["/no/such/file.csv"]), "not found"),
])
def test_bad_grid_input_is_refused_before_a_study_exists(demo_files, tmp_path, kw, match):
    from synthzoo.core.errors import ConfigError

    csv, schema = demo_files
    url = f"sqlite:///{tmp_path / 'g.db'}"
    args = dict(data=[csv], epsilons=[1.0])
    args.update(kw)
    with pytest.raises((ConfigError, FileNotFoundError), match=match):
        distributed.create_grid_study(url, "g", args["data"], ["indif"], ["gum"], args["epsilons"], [0],
                                      schema=schema, ml=False)
    assert not (tmp_path / "g.db").exists() or not optuna.get_all_study_summaries(url)


def test_joining_with_another_grid_names_what_differs(demo_files, tmp_path):
    from synthzoo.core.errors import ConfigError

    url = f"sqlite:///{tmp_path / 'g.db'}"
    _small_grid(url, demo_files)
    with pytest.raises(ConfigError, match=r"differs in \['epsilons'\]"):
        _small_grid(url, demo_files, epsilons=[2.0])


def test_a_worker_whose_data_differ_from_the_grids_refuses_to_start(demo_files, tmp_path):
    import shutil

    from synthzoo.core.errors import ConfigError

    csv, schema = demo_files
    mine = tmp_path / "demo.csv"
    shutil.copy(csv, mine)
    url = f"sqlite:///{tmp_path / 'g.db'}"
    distributed.create_grid_study(url, "g", [str(mine)], ["indif"], ["gum"], [1.0], [0], schema=schema, ml=False,
                                  references=False)
    rows = mine.read_text().splitlines()
    mine.write_text("\n".join(rows[:-50]) + "\n")  # replaced between sessions
    with pytest.raises(ConfigError, match="is not the one the grid was created on"):
        distributed.grid_worker(url, "g", heartbeat_interval=1, poll=0.1, log=lambda s: None)
    assert optuna.load_study(study_name="g", storage=url).trials[0].state == optuna.trial.TrialState.WAITING


def test_cells_enqueued_twice_by_racing_creators_run_once(demo_files, tmp_path, monkeypatch):
    # two creators on a fresh study both saw no trials and both enqueued every cell, interleaved: a worker
    # ran each cell as often as it was queued
    url = f"sqlite:///{tmp_path / 'g.db'}"
    monkeypatch.setattr(distributed, "_enqueue_missing", lambda study, n: 0)
    n = _small_grid(url, demo_files, epsilons=[1.0, 5.0])
    monkeypatch.undo()
    study = optuna.load_study(study_name="g", storage=url)
    for i in (0, 0, 1, 1):
        study.enqueue_trial({"cell": i}, skip_if_exists=False)
    assert distributed.grid_worker(url, "g", heartbeat_interval=1, poll=0.1, log=lambda s: None) == n
    trials = optuna.load_study(study_name="g", storage=url).trials
    complete = [t.params["cell"] for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert sorted(complete) == [0, 1]
    pruned = [t for t in trials if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned and all(t.user_attrs.get("surplus") for t in pruned)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cell with two results
        res = distributed.grid_result(url, "g")
    assert len(res) == n and (res["status"] == "ok").all()


def test_a_cell_with_two_results_keeps_the_successful_one_and_says_so(demo_files, tmp_path):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    n = _small_grid(url, demo_files, epsilons=[1.0, 5.0])
    distributed.grid_worker(url, "g", heartbeat_interval=1, poll=0.1, log=lambda s: None)
    study = optuna.load_study(study_name="g", storage=url)
    cell = distributed.grid_cells(study.user_attrs[distributed.SPEC_ATTR])[0]
    bad = distributed.status_row(cell, "error", "a late duplicate")
    for _ in range(2):  # recorded before and after the good one: the good one is kept either way
        study.add_trial(optuna.trial.create_trial(
            params={"cell": 0}, distributions={"cell": optuna.distributions.IntDistribution(0, n - 1)}, value=0.0,
            user_attrs={distributed.ROW_ATTR: json.dumps(bad)}))
    with pytest.warns(RuntimeWarning, match=r"1 cell\(s\) have more than one result.*cell 0 .* \(3 results\)"):
        res = distributed.grid_result(url, "g")
    assert len(res) == n and res.loc[0, "status"] == "ok"


def test_a_cell_with_two_successful_results_keeps_the_earliest_completed_and_names_it(demo_files, tmp_path):
    # the first by trial number was kept, whichever finished first, and the warning said "cell 0" only
    from datetime import datetime

    url = f"sqlite:///{tmp_path / 'g.db'}"
    n = _small_grid(url, demo_files, epsilons=[1.0, 5.0])
    distributed.grid_worker(url, "g", heartbeat_interval=1, poll=0.1, log=lambda s: None)
    study = optuna.load_study(study_name="g", storage=url)
    first = distributed.grid_result(url, "g").loc[1].to_dict()
    early = {k: v for k, v in first.items() if isinstance(v, str) or v == v}  # a row as JSON holds it
    early["tvd_2way"] = 0.5
    late = optuna.trial.create_trial(  # numbered after the worker's trial, but completed before it
        params={"cell": 1}, distributions={"cell": optuna.distributions.IntDistribution(0, n - 1)}, value=0.5,
        user_attrs={distributed.ROW_ATTR: json.dumps(early)})
    late.datetime_start, late.datetime_complete = datetime(2026, 1, 1), datetime(2026, 1, 1, 0, 1)
    study.add_trial(late)
    with pytest.warns(RuntimeWarning) as caught:
        res = distributed.grid_result(url, "g")
    assert res.loc[1, "tvd_2way"] == 0.5 and res.loc[0, "tvd_2way"] != 0.5
    assert "cell 1 demo indif x gum eps=5 seed=0 (2 results)" in str(caught[0].message)


def test_distributed_grid_labels_model_variants_as_the_local_grid(demo_files, tmp_path):
    from synthzoo.core.errors import ConfigError

    csv, schema = demo_files
    url = f"sqlite:///{tmp_path / 'g.db'}"
    models = [{"name": "gum", "iterations": 5}, {"name": "gum", "iterations": 20}]
    assert distributed.create_grid_study(url, "v", [csv], ["indif"], models, [1.0], [0], schema=schema, ml=False,
                                         references=False) == 2
    res = distributed.grid_result(url, "v")  # nothing run yet: pending rows name the cell's model too
    assert res["model"].tolist() == ["gum(iterations=5)", "gum(iterations=20)"]
    assert (res["status"] == "pending").all()
    with pytest.raises(ConfigError, match="are the same model"):
        distributed.create_grid_study(url, "w", [csv], ["indif"], ["gum", "gum"], [1.0], [0], schema=schema)
    assert "w" not in optuna.get_all_study_names(url)  # refused before a study existed



def _create_after(barrier, url, demo_files, q):
    """In a process: create three grid studies, opening each the moment the other creator does; send the
    numbers of cells or the error."""
    import warnings

    warnings.simplefilter("ignore")
    csv, schema = demo_files
    real = distributed._open

    def in_step(*a, **k):  # the datasets are read; both creators reach the study together
        rdb = real(*a, **k)
        barrier.wait(timeout=120)
        return rdb

    def enqueue(self, *a, real_enqueue=optuna.study.Study.enqueue_trial, **k):
        real_enqueue(self, *a, **k)
        time.sleep(0.005)  # a database over the network: SQLite's lock would hold the other creator back

    distributed._open = in_step  # in this forked process only
    optuna.study.Study.enqueue_trial = enqueue
    try:
        q.put([distributed.create_grid_study(url, f"race{i}", [csv], ["indif", "mst"], ["gum"], [1.0, 5.0],
                                             list(range(10)), schema=schema, ml=False) for i in range(3)])
    except Exception as e:  # noqa: BLE001 - reported to the test
        q.put(f"{type(e).__name__}: {e}")


def test_two_creators_of_one_grid_at_once_leave_each_cell_queued_once(demo_files, tmp_path):
    # both saw no trials (or part of the other's) and both enqueued: cells queued twice; or the second
    # refused the study as "not a synthzoo grid", the first having enqueued after the second read no spec
    import multiprocessing as mp

    from synthzoo.optuna_storage import rdb_storage

    url = f"sqlite:///{tmp_path / 'race.db'}"
    rdb_storage(url)  # the tables exist: both creators go straight to the study
    ctx = mp.get_context("fork")
    barrier, q = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_create_after, args=(barrier, url, demo_files, q)) for _ in range(2)]
    for p in procs:
        p.start()
    got = [q.get(timeout=300) for _ in procs]
    for p in procs:
        p.join()
    assert got == [[42] * 3] * 2  # 2 references + 2 selectors x 1 model x 2 epsilons x 10 seeds
    S = optuna.trial.TrialState
    for i in range(3):
        live = [distributed._cell_of(t) for t in optuna.load_study(study_name=f"race{i}", storage=url).trials
                if t.state in (S.WAITING, S.RUNNING, S.COMPLETE)]
        assert sorted(live) == list(range(42)), f"race {i}: {len(live)} queued trials for 42 cells"


def test_distributed_grid_labels_selector_variants_as_the_local_grid(demo_files, tmp_path):
    from synthzoo.core.errors import ConfigError

    csv, schema = demo_files
    url = f"sqlite:///{tmp_path / 'g.db'}"
    sels = [{"name": "indif", "select_share": 0.1}, {"name": "indif", "select_share": 0.3}]
    assert distributed.create_grid_study(url, "v", [csv], sels, ["gum"], [1.0], [0], schema=schema, ml=False,
                                         references=False) == 2
    assert distributed.grid_result(url, "v")["selector"].tolist() == ["indif(select_share=0.1)",
                                                                      "indif(select_share=0.3)"]
    distributed.grid_worker(url, "v", heartbeat_interval=1, poll=0.1, log=lambda s: None)
    res = distributed.grid_result(url, "v")
    assert res["selector"].tolist() == ["indif(select_share=0.1)", "indif(select_share=0.3)"]
    assert (res["status"] == "ok").all(), res["reason"].tolist()
    with pytest.raises(ConfigError, match="are the same selector"):
        distributed.create_grid_study(url, "w", [csv], ["indif", "indif"], ["gum"], [1.0], [0], schema=schema)
    assert "w" not in optuna.get_all_study_names(url)


def test_a_creator_whose_grid_another_wrote_over_while_it_enqueued_is_refused(demo_files, tmp_path, monkeypatch):
    """Creators of two grids on one fresh study name both saw no grid and both wrote theirs; the spec
    was read back once, before enqueueing, so the creator written over during its enqueueing queued its
    cells under the other's grid and returned as if its own grid were there."""
    from synthzoo.core.errors import ConfigError

    url = f"sqlite:///{tmp_path / 'g.db'}"
    real = distributed._enqueue_missing

    def other_creator_writes(study, n):  # the other creator's write lands after our read-back
        study.set_user_attr(distributed.SPEC_ATTR, {**study.user_attrs[distributed.SPEC_ATTR], "epsilons": [2.0]})
        return real(study, n)

    monkeypatch.setattr(distributed, "_enqueue_missing", other_creator_writes)
    with pytest.raises(ConfigError, match=r"created at the same time with another grid \(it differs in \['epsilons'\]"):
        _small_grid(url, demo_files)


def test_two_creators_of_different_grids_on_one_fresh_study_do_not_both_win(demo_files, tmp_path, monkeypatch):
    """The creator read the study's spec (none, no trials), then wrote its own: another grid's creator that
    ran whole in between returned its grid as created, then the first wrote over it and returned too; both
    believed they had won.  Creating the study is now the compare-and-set: the other creator finds a study
    it did not create and no grid in it yet (here the first is held just before writing its grid)."""
    from synthzoo.core.errors import ConfigError

    url = f"sqlite:///{tmp_path / 'g.db'}"
    real = optuna.study.Study.set_user_attr
    outcome = {}

    def other_creator_runs_whole_first(self, key, value):
        if key == distributed.SPEC_ATTR and "other" not in outcome:
            outcome["other"] = None
            try:
                outcome["other"] = _small_grid(url, demo_files, epsilons=[2.0], spec_wait=0.5)
            except ConfigError as e:
                outcome["other"] = e
        return real(self, key, value)

    monkeypatch.setattr(optuna.study.Study, "set_user_attr", other_creator_runs_whole_first)
    try:
        outcome["first"] = _small_grid(url, demo_files, epsilons=[1.0])
    except ConfigError as e:
        outcome["first"] = e
    monkeypatch.undo()
    assert isinstance(outcome["other"], ConfigError), outcome
    assert "'g' exists but holds no grid 0.5 s after it was found" in str(outcome["other"])
    assert outcome["first"] == 1
    spec = optuna.load_study(study_name="g", storage=url).user_attrs[distributed.SPEC_ATTR]
    assert spec["epsilons"] == [1.0]


def test_a_creator_that_lost_the_race_waits_for_the_winners_grid(demo_files, tmp_path):
    from synthzoo.core.errors import ConfigError

    url = f"sqlite:///{tmp_path / 'g.db'}"
    spec_writer = optuna.create_study(study_name="g", storage=url)  # the winner, before it writes its grid
    import threading

    def winner_writes():
        time.sleep(0.5)
        _small_grid(url, demo_files, name="other", epsilons=[1.0])  # the same grid's spec, made elsewhere
        spec_writer.set_user_attr(distributed.SPEC_ATTR,
                                  optuna.load_study(study_name="other", storage=url).user_attrs[distributed.SPEC_ATTR])

    th = threading.Thread(target=winner_writes)
    th.start()
    with pytest.raises(ConfigError, match=r"'g' already holds another grid \(it differs in \['epsilons'\]"):
        _small_grid(url, demo_files, epsilons=[5.0], spec_wait=30)
    th.join()
    assert _small_grid(url, demo_files, epsilons=[1.0], spec_wait=0) == 1  # the same grid: joined


def test_a_study_that_holds_no_grid_is_refused_by_name(demo_files, tmp_path):
    from synthzoo.core.errors import ConfigError

    url = f"sqlite:///{tmp_path / 'g.db'}"
    optuna.create_study(study_name="empty", storage=url)
    with pytest.raises(ConfigError, match=r"'empty' exists but holds no grid 0.2 s after it was found"):
        _small_grid(url, demo_files, name="empty", spec_wait=0.2)
    tuned = optuna.create_study(study_name="tuned", storage=url)
    tuned.add_trial(optuna.trial.create_trial(value=1.0))
    with pytest.raises(ConfigError, match=r"'tuned' exists and is not a synthzoo grid"):
        _small_grid(url, demo_files, name="tuned", spec_wait=30)


def test_a_worker_or_creator_running_other_code_refuses_the_grid(demo_files, tmp_path, monkeypatch):
    # a worker of another synthzoo joined a grid and mixed its results into the table without a word (with
    # code mid-change, a cell's process even failed with 'too many values to unpack')
    from synthzoo.core.errors import ConfigError

    url = f"sqlite:///{tmp_path / 'g.db'}"
    _small_grid(url, demo_files)
    assert distributed.grid_cells(optuna.load_study(study_name="g", storage=url).user_attrs["synthzoo_grid"])
    monkeypatch.setattr(distributed, "code_version", lambda: "0.1.0+otherdigest0")
    said = r"study 'g' is a grid of synthzoo 0\.1\.0\+[0-9a-f]{12}, and this is synthzoo 0\.1\.0\+otherdigest0"
    with pytest.raises(ConfigError, match=said):
        distributed.grid_worker(url, "g", heartbeat_interval=1, poll=0.1, log=lambda s: None)
    with pytest.raises(ConfigError, match=said):
        _small_grid(url, demo_files)  # the creator's command again, on the other code
    assert [t.state for t in optuna.load_study(study_name="g", storage=url).trials] == [optuna.trial.TrialState.WAITING]


def test_the_shared_grids_last_line_counts_skipped_and_failed_cells(demo_files, tmp_path, capsys):
    # it said '0 of 2 cells ran; 0 without a result' for a grid whose cells were skipped or timed out; the
    # local grid's line said what happened to them
    from synthzoo.cli import main

    csv, schema = demo_files
    url = f"sqlite:///{tmp_path / 'g.db'}"
    assert main(["bench", "--storage", url, "--study", "s", "--data", csv, "--schema", schema, "--select",
                 "indif,no_such", "--model", "gum", "--epsilon", "1", "--no-ml", "--cell-timeout", "0.01",
                 "--out", str(tmp_path / "g.csv")]) == 0
    assert "# 0 of 2 cells ran; 1 skipped, 1 failed (error/timeout/crashed)\n" in capsys.readouterr().out


def test_a_spec_written_between_reading_the_attributes_and_the_trials_is_found():
    # the losing creator read no spec, then the winner wrote it and enqueued, then the loser saw trials: it
    # called the study "not a synthzoo grid" (CI, 2026-11-27); the spec precedes the trials, so it reads again
    class Study:
        def __init__(self, specs):
            self.specs = iter(specs)

        @property
        def user_attrs(self):
            spec = next(self.specs)
            return {} if spec is None else {distributed.SPEC_ATTR: spec}

        def get_trials(self, deepcopy=False):
            return [object()]

    assert distributed._spec_of(Study([None, {"grid": 1}]), "s", 1.0) == {"grid": 1}
    with pytest.raises(ConfigError, match="exists and is not a synthzoo grid"):
        distributed._spec_of(Study([None, None]), "s", 1.0)
