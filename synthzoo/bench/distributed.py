"""The ablation grid across processes and machines, on an Optuna study in a shared RDB storage
(SQLite on one machine, PostgreSQL or MySQL across machines): the storage the tuner already uses
(:mod:`synthzoo.optuna_storage`), so no new service or dependency.

* :func:`create_grid_study` writes the grid's specification into the study (its user attributes)
  and enqueues one trial per cell (reference rows included), with the cell's index as its one
  fixed parameter.
* :func:`grid_worker` -- any number of them, on any machine that reaches the storage and the data
  -- pops enqueued trials and runs each cell in a process of its own (:func:`.grid.cell_row`),
  storing the row in the trial.  Optuna pops a waiting trial atomically (a conditional state
  change in the database), so two workers never run the same trial.  Optuna's ``GridSampler``
  is not used: it hands out its cells by trial number and then at random among the unfinished
  ones, so concurrent workers may run a cell twice (its documentation says so).
* A worker that dies leaves its trial RUNNING.  Trials carry heartbeats: the next worker to look
  marks a dead worker's trial failed -- at once when it ran on the same host (its process id is
  gone), after ``grace_period`` seconds elsewhere -- and Optuna's retry callback enqueues the cell
  again (``max_retry=1``), so a killed worker's cell is re-run once by another worker.  A cell
  whose worker dies twice is reported as ``"crashed"``.
* :func:`grid_result` reads the rows back: every cell exactly once, in the grid's order.

The rows are those of :func:`synthzoo.bench.grid` (same columns, same scoring).
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
import warnings
from datetime import datetime
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from .._version import code_version

SPEC_ATTR = "synthzoo_grid"  # study user attribute: the grid's specification
ROW_ATTR = "row"  # trial user attribute: the cell's result row (JSON)


def _optuna():
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _open(storage, heartbeat_interval: int = 10, grace_period: int | None = None):
    from ..optuna_storage import rdb_storage

    return rdb_storage(storage, heartbeat_interval, grace_period or 3 * heartbeat_interval, retry=True)


def grid_cells(spec: dict) -> list[dict]:
    """The cells of a grid specification, in :func:`synthzoo.bench.grid`'s order: per dataset its
    reference rows, then selector x model x epsilon x seed."""
    from .grid import model_labels, module_labels

    cells = []
    labels, sel_labels = model_labels(spec["models"]), module_labels(spec["selectors"], "selector")
    for data in spec["data"]:
        if spec.get("references", True):
            cells += [{"data": data, "reference": label} for label in ("TRAIN", "INDEPENDENT")]
        for sel, sel_label in zip(spec["selectors"], sel_labels):
            for mod, label in zip(spec["models"], labels):
                for eps in spec["epsilons"]:
                    for seed in spec["seeds"]:
                        cells.append({"data": data, "selector": sel, "selector_label": sel_label, "model": mod,
                                      "label": label, "epsilon": eps, "seed": seed})
    return cells


def create_grid_study(storage: str, study_name: str, data: Iterable[str] | str = ("adult",),
                      selectors: Iterable[str] = ("indif", "mst", "aim"), models: Iterable = ("gum", "pgm"),
                      epsilons: Iterable = (0.2, 1.0, 5.0), seeds: Iterable[int] = (0,), delta: float = 1e-5,
                      schema: str | None = None, base: str = "privsyn", preprocess=None,
                      cell_timeout: float | None = None, ml: bool = True, references: bool = True,
                      root: str | None = None, spec_wait: float = 30.0) -> int:
    """Create the study ``study_name`` in ``storage`` holding the grid and one enqueued trial per cell;
    returns the number of cells.  An existing study of that name with the same grid is joined as it
    is (nothing enqueued twice); one with another grid is an error, and so is one that holds no grid
    ``spec_wait`` seconds after it is found (its creator writes the grid right after creating it).  The
    arguments are those of :func:`synthzoo.bench.grid`; ``data`` names shared datasets (or CSV paths, then
    with ``schema``, a JSON path) that every worker's machine can read."""
    from ..core.errors import ConfigError

    optuna = _optuna()
    names = [data] if isinstance(data, str) else list(data)
    epsilons, seeds = list(epsilons), list(seeds)
    from .grid import check_grid_values, model_labels, module_labels, spec_differences

    check_grid_values(names, epsilons, seeds, delta)
    model_labels(list(models))  # two entries of one module: refused before a study exists
    module_labels(list(selectors), "selector")
    spec = {"data": names, "selectors": list(selectors), "models": list(models),
            "epsilons": [float(e) for e in epsilons], "seeds": [int(s) for s in seeds], "delta": float(delta),
            "schema": schema, "base": base, "preprocess": None if preprocess is None else list(preprocess),
            "cell_timeout": cell_timeout, "ml": bool(ml), "references": bool(references), "root": root,
            "code": code_version()}
    if not spec["selectors"] or not spec["models"]:
        raise ConfigError("grid needs at least one dataset, selector, model, epsilon and seed")
    if cell_timeout is not None and not cell_timeout > 0:
        raise ConfigError(f"cell_timeout must be a positive number of seconds, got {cell_timeout!r}")
    spec = json.loads(json.dumps(spec))
    loader = _Data(spec)
    # every dataset read here before the study exists (a typo burns no study name), and its content pinned:
    # a worker whose copy differs (another machine's file, a file replaced between sessions) refuses to start
    spec["fingerprints"] = {name: loader.fingerprint(name) for name in names}
    rdb = _open(storage)
    # Study names are unique in the storage, so creating the study is the compare-and-set that decides
    # which creator's grid it holds: only the one whose creation succeeded writes its spec, the others wait
    # for it and compare.  (Reading the spec, then writing it, let two creators of different grids that
    # both read none each write theirs and both believe they had won.)
    try:
        study = optuna.create_study(storage=rdb, study_name=study_name, direction="minimize")
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(storage=rdb, study_name=study_name)
        have = _spec_of(study, study_name, spec_wait)
    else:
        study.set_user_attr(SPEC_ATTR, spec)
        have = spec
    cells = grid_cells(spec)
    _check_code(have, study_name)
    if have != spec:
        raise ConfigError(f"study {study_name!r} already holds another grid (it differs in "
                          f"{spec_differences(have, spec)}); choose another --study name")
    # also completes a grid whose creator stopped while enqueuing; a racing creator's duplicates are dropped
    _enqueue_missing(study, len(cells))
    # read again: this version writes a spec only into a study it created, but the storage is shared with
    # any process (an older creator read, then wrote); the grid the workers run is the one checked here
    have = study.user_attrs.get(SPEC_ATTR)
    if have != spec:
        raise ConfigError(f"study {study_name!r} was created at the same time with another grid (it differs in "
                          f"{spec_differences(have, spec)}); choose another --study name")
    return len(cells)


def _check_code(spec: dict, study_name: str) -> None:
    """A grid's cells all run on the code it was created with (a worker of another synthzoo joined and
    mixed its results into the table without a word); a grid created before the code was recorded passes."""
    from ..core.errors import ConfigError

    here = code_version()
    if spec.get("code", here) != here:
        raise ConfigError(f"study {study_name!r} is a grid of synthzoo {spec['code']}, and this is synthzoo {here} "
                          "(the version + a digest of its source files): its rows would mix results of two versions "
                          "of the code. Run every creator and worker on the same synthzoo, or create another study")


def _spec_of(study, study_name: str, wait: float):
    """The grid spec of a study another creator made: written right after the study's creation, so a
    creator that lost the race polls for it up to ``wait`` seconds."""
    from ..core.errors import ConfigError

    deadline = time.monotonic() + wait
    while True:
        have = study.user_attrs.get(SPEC_ATTR)
        if have is not None:
            return have
        if study.get_trials(deepcopy=False):  # a grid's spec is written before its first trial
            # ... so it is there now, unless this is no grid: the creator may have written it and enqueued
            # between the two reads above (a race that failed CI once, 2026-11-27)
            have = study.user_attrs.get(SPEC_ATTR)
            if have is not None:
                return have
            raise ConfigError(f"study {study_name!r} exists and is not a synthzoo grid")
        if time.monotonic() >= deadline:
            raise ConfigError(f"study {study_name!r} exists but holds no grid {wait:g} s after it was found: "
                              "not a synthzoo grid, or its creator stopped before writing one; delete it "
                              "(optuna delete-study) or choose another --study name")
        time.sleep(0.05)


def _enqueue_missing(study, n_cells: int) -> int:
    """Enqueue a trial for every cell that has no result and none queued, running or used up: a cell a
    creator never enqueued, or whose worker stopped on an interrupt or an error outside the cell before
    this version recorded it.  Returns how many were enqueued."""
    done, crashed, live, _ = _cell_state(study, n_cells)
    missing = [i for i in range(n_cells) if i not in done and i not in crashed and i not in live]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enqueue_trial is "experimental" in some Optuna versions
        for i in missing:
            study.enqueue_trial({"cell": i}, skip_if_exists=False)
    _drop_surplus(study)
    return len(missing)


def _cell_of(t):
    """The grid cell of trial ``t`` (its enqueued parameter), or None for a trial that is not a cell."""
    return t.params.get("cell", t.system_attrs.get("fixed_params", {}).get("cell"))


def _drop_surplus(study) -> int:
    """Prune every queued trial of a cell that has a result or a lower-numbered queued or running trial,
    so that one trial per cell remains; returns how many were pruned.

    Two creators (or workers) enqueuing at once each saw the other's cells missing and queued them again.
    Each enqueuer calls this after its own enqueues, so the last one to finish sees every trial; the rule
    (the lowest number wins) is the one :func:`_claimed_elsewhere` applies to a trial a worker popped, so
    the trial kept here is never the one a worker yields.  A trial is claimed the way a worker pops one
    (WAITING to RUNNING, refused if another process took it first) before it is pruned, so a trial a
    worker is running is never pruned from under it."""
    optuna = _optuna()
    S = optuna.trial.TrialState
    keep, queued = {}, []
    for t in study.get_trials(deepcopy=False):
        cell = _cell_of(t)
        if cell is None:
            continue
        if t.state == S.COMPLETE and ROW_ATTR in t.user_attrs:
            keep[cell] = -1  # a result: every queued trial of the cell is surplus
        elif t.state in (S.RUNNING, S.WAITING):
            keep[cell] = min(keep.get(cell, t.number), t.number)
            if t.state == S.WAITING:
                queued.append((cell, t))
    pruned = 0
    storage = study._storage
    for cell, t in queued:
        if t.number == keep[cell]:
            continue
        try:  # marked first: surplus whoever runs it, and the claimed trial is pruned at once
            storage.set_trial_user_attr(t._trial_id, "surplus", True)
            if not storage.set_trial_state_values(t._trial_id, state=S.RUNNING):
                continue  # a worker popped it first (and yields it to the lower-numbered trial)
        except optuna.exceptions.UpdateFinishedTrialError:
            continue  # another enqueuer pruned it first
        storage.set_trial_state_values(t._trial_id, state=S.PRUNED)
        pruned += 1
    return pruned


def _cell_name(cell: dict) -> str:
    """A cell as its row names it (a CSV by its file's name): ``adult indif x gum(iterations=5) eps=1 seed=0``."""
    data = cell["data"]
    data = os.path.splitext(os.path.basename(data))[0] if data.lower().endswith(".csv") else data
    if "reference" in cell:
        return f"{data} {cell['reference']}"
    return f"{data} {cell['selector_label']} x {cell['label']} eps={cell['epsilon']:g} seed={cell['seed']}"


def status_row(cell: dict, status: str, reason: str) -> dict:
    """The row of a cell without a score: ``status`` (error, crashed, pending) and why."""
    return {"dataset": cell["data"], "kind": "reference" if "reference" in cell else "cell",
            "selector": cell.get("selector_label", "-"), "model": cell.get("reference") or cell.get("label"),
            "epsilon": cell.get("epsilon", np.nan), "seed": cell.get("seed", 0), "status": status, "reason": reason}


def _json_row(row: dict) -> str:
    def clean(v):
        if isinstance(v, (np.floating, float)):
            return None if not math.isfinite(float(v)) else float(v)
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, np.bool_):
            return bool(v)
        return v

    return json.dumps({k: clean(v) for k, v in row.items()})


class _Data:
    """Each dataset loaded and split once per worker (80/20, seed 0, as :func:`.grid.grid`)."""

    def __init__(self, spec: dict):
        self.spec, self.cache = spec, {}

    def __call__(self, name: str):
        if name not in self.cache:
            from ..datasets import train_test_split
            from .grid import _load

            label, df, sch = _load(name, self.spec.get("schema"), self.spec.get("root"))
            train, test = train_test_split(df, test_size=0.2, seed=0)
            self.cache[name] = (label, train, test, sch)
        return self.cache[name]

    def fingerprint(self, name: str) -> str:
        """:func:`.grid.data_fingerprint` of a dataset: equal on every machine that reads the same data."""
        from .grid import data_fingerprint

        _, train, test, sch = self(name)
        return data_fingerprint(train, test, sch)


def run_cell(spec: dict, cell: dict, data: Callable) -> dict:
    """The result row of one cell of ``spec`` (fitted in a process of its own)."""
    from .grid import cell_row, reference_row

    label, train, test, sch = data(cell["data"])
    if "reference" in cell:
        return reference_row(label, train, test, sch, cell["reference"], spec["ml"])
    return cell_row(label, train, test, sch, cell["selector"], cell["model"], cell["epsilon"], cell["seed"],
                    delta=spec["delta"], base=spec["base"], preprocess=spec["preprocess"], isolate=True,
                    cell_timeout=spec["cell_timeout"], ml=spec["ml"], label=cell.get("label"),
                    selector_label=cell.get("selector_label"))


def _cell_state(study, n_cells: int) -> tuple[set, set, set, bool]:
    """(cells with a result, cells whose retries are used up, cells queued or running, any trial waiting)."""
    optuna = _optuna()
    S = optuna.trial.TrialState
    done, failed, live, waiting = set(), {}, set(), False
    for t in study.get_trials(deepcopy=False):
        cell = _cell_of(t)
        if cell is None:
            continue
        if t.state == S.COMPLETE and ROW_ATTR in t.user_attrs:
            done.add(cell)
        elif t.state == S.FAIL:
            failed[cell] = failed.get(cell, 0) + 1
        elif t.state in (S.RUNNING, S.WAITING):
            live.add(cell)
            waiting |= t.state == S.WAITING
    crashed = {c for c, n in failed.items() if n >= 2 and c not in done and c not in live}
    return done, crashed, live, waiting


def _claimed_elsewhere(study, number: int, cell: int) -> int | None:
    """The number of another trial that owns ``cell`` -- one with its result, or a queued or running one
    numbered before trial ``number`` -- else None.  Two creators racing on a fresh study can both enqueue
    every cell (neither saw the other's trials when it looked): the lower number always wins, so of two
    such trials exactly one runs, whichever worker looks first."""
    optuna = _optuna()
    S = optuna.trial.TrialState
    for t in study.get_trials(deepcopy=False):
        if t.number == number or _cell_of(t) != cell:
            continue
        if (t.state == S.COMPLETE and ROW_ATTR in t.user_attrs) or (t.state in (S.RUNNING, S.WAITING)
                                                                    and t.number < number):
            return t.number
    return None


def grid_worker(storage: str, study_name: str, heartbeat_interval: int = 10, grace_period: int | None = None,
                poll: float = 2.0, max_cells: int | None = None, log: Callable[[str], None] = print) -> int:
    """Run cells of the grid study until every cell has a result (or its worker died twice); returns
    how many cells this worker ran.  Safe to start any number of times, on any machine."""
    from ..core.errors import ConfigError
    from ..optuna_storage import fail_dead_local_trials
    from .grid import _cell_txt

    optuna = _optuna()
    rdb = _open(storage, heartbeat_interval, grace_period)
    try:
        study = optuna.load_study(study_name=study_name, storage=rdb)
    except KeyError:
        raise ConfigError(f"no study {study_name!r} in the storage: create the grid first "
                          "(synthzoo bench --storage ... --study ... --select ... --model ...)") from None
    spec = study.user_attrs.get(SPEC_ATTR)
    if spec is None:
        raise ConfigError(f"study {study_name!r} is not a synthzoo grid")
    _check_code(spec, study_name)
    cells = grid_cells(spec)
    data = _Data(spec)
    for name, want in spec.get("fingerprints", {}).items():
        if data.fingerprint(name) != want:
            raise ConfigError(f"dataset {name!r} here is not the one the grid was created on (its rows or schema "
                              "differ): give every worker the same data, or create another study")
    me = f"{socket.gethostname()}:{os.getpid()}"
    ran = 0

    def objective(trial):
        nonlocal ran
        fixed = study._storage.get_trial_system_attrs(trial._trial_id).get("fixed_params", {})
        if "cell" not in fixed:  # a trial the sampler made because no cell was waiting: not a cell
            trial.set_user_attr("surplus", True)
            raise optuna.TrialPruned("no cell was waiting")
        i = trial.suggest_int("cell", 0, len(cells) - 1)  # the enqueued value
        owner = _claimed_elsewhere(study, trial.number, i)
        if owner is not None:  # a second trial for the cell (two creators raced): it runs once, as the other
            trial.set_user_attr("surplus", True)
            raise optuna.TrialPruned(f"cell {i} is trial {owner}'s")
        trial.set_user_attr("worker", me)  # a dead worker on this host is seen at once
        retry = study._storage.get_trial_system_attrs(trial._trial_id).get("failed_trial")
        try:
            row = run_cell(spec, cells[i], data)
        except Exception as e:  # outside the cell's own process (loading, scoring): the cell's result, once
            row = status_row(cells[i], "error", f"{type(e).__name__}: {e}")
        except BaseException:  # Ctrl-C, exit: this worker stops, and its cell goes back to the queue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                study.enqueue_trial({"cell": i}, skip_if_exists=False)
            raise
        row["worker"] = me
        trial.set_user_attr(ROW_ATTR, _json_row(row))
        ran += 1
        head = f"[cell {i + 1}/{len(cells)}{' (re-run of a dead worker)' if retry is not None else ''}]"
        log(f"{head} {_cell_txt(row) if row.get('kind') == 'cell' else row['dataset'] + ' ' + row['model']}")
        v = row.get("tvd_2way")
        return float(v) if isinstance(v, float) and math.isfinite(v) else 0.0

    while max_cells is None or ran < max_cells:
        fail_dead_local_trials(study, retry=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)
        done, crashed, live, waiting = _cell_state(study, len(cells))
        if len(done | crashed) >= len(cells):
            break
        if not waiting and not live and _enqueue_missing(study, len(cells)):
            continue  # cells no one will run (an older worker's interrupt): back in the queue
        if not waiting:  # the rest is running elsewhere: wait (its worker may die and its cell return)
            time.sleep(poll)
            continue
        try:
            study.optimize(objective, n_trials=1, catch=())
        except optuna.exceptions.UpdateFinishedTrialError:
            # another worker, with a shorter heartbeat grace, judged this one dead and re-ran the cell
            log("[a cell this worker ran was re-run by another worker that judged it dead: give every worker "
                "the same --heartbeat]")
    return ran


def grid_result(storage: str, study_name: str) -> pd.DataFrame:
    """The grid's rows (columns of :data:`synthzoo.bench.GRID_COLUMNS` plus ``worker``): one per cell,
    in the grid's order; a cell without a result says ``"crashed"`` (its worker died twice) or
    ``"pending"``."""
    from .grid import GRID_COLUMNS

    optuna = _optuna()
    study = optuna.load_study(study_name=study_name, storage=_open(storage))
    spec = study.user_attrs[SPEC_ATTR]
    cells = grid_cells(spec)
    found: dict[int, list] = {}
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        if ROW_ATTR in t.user_attrs and "cell" in t.params:
            found.setdefault(int(t.params["cell"]), []).append(t)
    # a cell run twice (a worker judged dead that finished after all, or trials of racing creators run by
    # workers of an older version): its earliest completed successful row, else its earliest, and a warning
    rows = {}
    for i, ts in found.items():
        t = min(ts, key=lambda t: (json.loads(t.user_attrs[ROW_ATTR]).get("status") != "ok",
                                   t.datetime_complete or datetime.max, t.number))
        rows[i] = json.loads(t.user_attrs[ROW_ATTR])
    twice = {i: len(ts) for i, ts in found.items() if len(ts) > 1}
    if twice:
        warnings.warn(f"grid {study_name!r}: {len(twice)} cell(s) have more than one result, the earliest "
                      "successful one kept: " + "; ".join(f"cell {i} {_cell_name(cells[i])} ({n} results)"
                                                           for i, n in sorted(twice.items())[:10]),
                      RuntimeWarning, stacklevel=2)
    _, crashed, _, _ = _cell_state(study, len(cells))
    out = []
    for i, cell in enumerate(cells):
        if i in rows:
            out.append(rows[i])
        elif i in crashed:
            out.append(status_row(cell, "crashed", "the worker process running this cell died twice"))
        else:
            out.append(status_row(cell, "pending", ""))
    res = pd.DataFrame(out).reindex(columns=GRID_COLUMNS + ["worker"])
    res.attrs["cells"] = len(cells)
    return res
