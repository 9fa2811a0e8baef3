"""The ablation grid at the size of issue 16: 3 datasets x 5 selectors x 5 models x 3 epsilons, run by
several worker processes through the shared-study engine (synthzoo.bench.distributed), one worker
killed with SIGKILL in the middle of a cell; then a check that every cell is in the result exactly
once and that the killed worker's cell was re-run once by another worker.

    OMP_NUM_THREADS=1 python benchmarks/bench_grid.py                   # SQLite in a temporary folder
    OMP_NUM_THREADS=1 python benchmarks/bench_grid.py --rows 1000 --workers 3 --kill-at 0.3 \\
        --storage postgresql://user@host/db                             # or a shared PostgreSQL study

Each dataset (adult, hmeq, housing from ``../shared/datasets``) is drawn down to ``--rows`` rows
(seed 0) so the 225 cells fit a laptop; every cell is fitted and scored (2-way TVD, 3-way query
error; ``--ml`` adds LightGBM) in its own process, as ``synthzoo bench --storage`` does.  The
workers are plain ``synthzoo bench-worker`` processes, as other machines would start; when
``--kill-at`` of the cells are done, the first worker is killed while it runs a cell.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SELECTORS = ["aim", "indif", "mst", "privmrf", "rap++"]
MODELS = ["pgm", "gum", "rp", "gsd", "gn"]


def small_datasets(folder: Path, names, rows: int) -> None:
    """``folder/<name>/<name>.csv`` and ``schema.json``: each shared dataset drawn down to ``rows``."""
    import synthzoo as sz

    for name in names:
        df, schema = sz.datasets.load_shared(name)
        (folder / name).mkdir(parents=True, exist_ok=True)
        df.sample(min(rows, len(df)), random_state=0).to_csv(folder / name / f"{name}.csv", index=False)
        (folder / name / "schema.json").write_text(json.dumps(schema.to_dict()))


def cpu_of_children() -> float:
    r = os.times()
    return r.children_user + r.children_system


def print_tables(res) -> None:
    """Mean 2-way TVD and CPU seconds per selector x model over the successful cells; a mean that lacks
    failed cells says so (``n=k/N``, and a warning), a selector x model without one reads ``-``."""
    import pandas as pd

    from synthzoo.bench import summary_table

    with pd.option_context("display.width", 200):
        print("\n# mean 2-way TVD over datasets and epsilons, selector x model")
        print(summary_table(res, "tvd_2way"))
        print("\n# mean CPU s per cell, selector x model")
        print(summary_table(res, "cpu_s", digits=1, warn=False))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="adult,hmeq,housing")
    ap.add_argument("--selectors", default=",".join(SELECTORS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--epsilon", default="0.2,1,5")
    ap.add_argument("--rows", type=int, default=1000, help="rows drawn from each dataset (seed 0)")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--kill-at", type=float, default=0.3,
                    help="kill the first worker once this share of the cells is done (0: never)")
    ap.add_argument("--storage", help="Optuna storage URL (default: SQLite in a temporary folder)")
    ap.add_argument("--cell-timeout", type=float, default=900)
    ap.add_argument("--ml", action="store_true", help="also the LightGBM score of every cell")
    ap.add_argument("--out", help="CSV of the grid's rows")
    a = ap.parse_args(argv)

    import optuna

    from synthzoo._threads import thread_settings
    from synthzoo.bench import distributed

    work = Path(tempfile.mkdtemp(prefix="bench_grid_"))
    names = [d for d in a.data.split(",") if d]
    small_datasets(work / "data", names, a.rows)
    storage = a.storage or f"sqlite:///{work / 'grid.db'}"
    study = f"bench-grid-{uuid.uuid4().hex[:8]}"
    n = distributed.create_grid_study(storage, study, names, a.selectors.split(","), a.models.split(","),
                                      [float(e) for e in a.epsilon.split(",")], [0], ml=a.ml,
                                      cell_timeout=a.cell_timeout, root=str(work / "data"))
    print(f"# {study}: {n} rows ({len(names)} datasets x 2 references + cells) in {storage}; {a.workers} workers; "
          f"{a.rows:,} rows per dataset; {thread_settings()}", flush=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    logs = [open(work / f"worker{i}.log", "w") for i in range(a.workers)]
    t0, c0 = time.perf_counter(), cpu_of_children()
    procs = [subprocess.Popen([sys.executable, "-m", "synthzoo.cli", "bench-worker", "--storage", storage,
                               "--study", study, "--heartbeat", "5"], env=env, stdout=logs[i],
                              stderr=subprocess.STDOUT) for i in range(a.workers)]
    killed = None
    s = optuna.load_study(study_name=study, storage=storage)
    while any(p.poll() is None for p in procs):
        time.sleep(5)
        if killed is None and a.kill_at > 0:
            done = len(s.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
            running = [t for t in s.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
                       if str(t.user_attrs.get("worker", "")).endswith(f":{procs[0].pid}")]
            if done >= a.kill_at * n and running:  # mid-cell: it holds a running trial
                os.kill(procs[0].pid, signal.SIGKILL)
                killed = (procs[0].pid, running[0].params.get("cell"), done)
                print(f"# killed worker pid {procs[0].pid} in cell {killed[1]} after {done} of {n} rows were done "
                      f"({time.perf_counter() - t0:.0f} s)", flush=True)
    wall = time.perf_counter() - t0
    for p in procs:
        p.wait()
    cpu = cpu_of_children() - c0
    res = distributed.grid_result(storage, study)
    s = optuna.load_study(study_name=study, storage=storage)
    complete = s.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    failed = s.get_trials(deepcopy=False, states=(optuna.trial.TrialState.FAIL,))
    per_cell = {}
    for t in complete:
        per_cell[t.params["cell"]] = per_cell.get(t.params["cell"], 0) + 1
    once = sorted(per_cell) == list(range(n)) and set(per_cell.values()) == {1}
    cells = res[res["kind"] == "cell"]
    print(f"\n# {len(res)} rows in the result for {n} cells; every cell completed exactly once: {once}")
    print(f"# status: {cells['status'].value_counts().to_dict()}; references: "
          f"{res[res['kind'] != 'cell']['status'].value_counts().to_dict()}")
    print(f"# failed trials: {len(failed)} (cells {[t.params.get('cell') for t in failed]}); re-runs of a failed "
          f"trial: {sum(1 for t in complete if 'failed_trial' in t.system_attrs)}")
    print(f"# cells per worker: {res['worker'].value_counts().to_dict()}")
    print(f"# wall {wall:.0f} s; CPU of the workers and their cells {cpu:.0f} s; budget kept in every cell: "
          f"{bool((cells['eps_spent'].fillna(0) <= cells['epsilon'] * (1 + 1e-9)).all())}")
    print_tables(res)
    if a.out:
        res.to_csv(a.out, index=False)
    return 0 if once and killed is not None or (once and a.kill_at <= 0) else 1


if __name__ == "__main__":
    sys.exit(main())
