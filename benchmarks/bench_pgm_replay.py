"""AIM's PGM estimates replayed: one run's sequence of noisy measurements refitted by this tree's PGM
(and by a baseline checkout's), so that two versions of the estimator do exactly the same work.  Two
end-to-end AIM runs cannot show that: the rounds' choices follow the estimates, so the runs part ways.

    python benchmarks/bench_pgm_replay.py record --rows 300000 --out aim300k.json
    python benchmarks/bench_pgm_replay.py replay aim300k.json --baseline ../base   # git worktree add ../base main

``record``: the ``aim`` preset (``--preset privmrf`` for PrivMRF's refits) at epsilon 1, delta 1e-5, fitted on
adult drawn with replacement to
``--rows`` rows (random_state 0), its noise replayed from ``--noise-seed`` (the test-only opt-in, so
that the file is the same for every version of the code); every PGM estimate is logged (how many
measurements, tolerance, iteration limit, iterations taken, CPU s) and the JSON file holds the noisy
measurements, the domain and the calls -- noisy statistics of a public table, nothing else.
``replay``: a fresh PGM with the run's parameters refits the calls in order and prints one JSON line:
calls, iterations, CPU s (process time, one thread), the final estimate's loss over every measurement;
with ``--baseline`` the same from that checkout (in its own process, back to back with this one) and
the largest difference between the two final estimates over the measured cliques, as a share of the
rows.  Needs ``../shared/datasets/adult`` for ``record`` only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")
os.environ.setdefault("JAX_ENABLE_X64", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def record(a) -> None:
    sys.path.insert(0, str(ROOT))
    import synthzoo as sz
    from synthzoo._threads import thread_settings
    from synthzoo.datasets import load_shared
    from synthzoo.models.pgm import PGM

    df, schema = load_shared("adult")
    df = df.sample(n=a.rows, replace=True, random_state=0).reset_index(drop=True)
    calls = []
    estimate = PGM._estimate

    def logged(self, domain, measurements, iters, engine, tol, **kw):
        t = time.process_time()
        estimate(self, domain, measurements, iters, engine, tol, **kw)
        calls.append({"measurements": len(measurements), "tol": tol, "iters": iters, "taken": int(self.iters_),
                      "cpu_s": round(time.process_time() - t, 3)})

    PGM._estimate = logged
    synth = sz.make(a.preset, epsilon=1.0, delta=1e-5, schema=schema, seed=0, noise_seed=a.noise_seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        synth.fit(df)
        cpu = time.process_time() - t
    model = synth.model
    out = {"preset": a.preset, "rows": a.rows, "noise_seed": a.noise_seed, "fit_cpu_s": round(cpu, 2),
           "threads": thread_settings(), "params": model.get_params(), "domain": {"attrs": list(model.domain_.attrs),
                                                    "shape": [int(x) for x in model.domain_.shape]},
           "measurements": [m.to_state() for m in model.measurements_], "calls": calls}
    Path(a.out).write_text(json.dumps(out))
    print(json.dumps({k: out[k] for k in ("preset", "rows", "noise_seed", "fit_cpu_s", "threads")}
                     | {"calls": len(calls), "iterations": sum(c["taken"] for c in calls),
                        "estimate_cpu_s": round(sum(c["cpu_s"] for c in calls), 2)}))


def replay_here(path: str, answers: str | None) -> dict:
    """Replay the file's calls with the PGM of the checkout this process imports."""
    from synthzoo._threads import thread_settings
    from synthzoo.core.domain import Domain, Measurement
    from synthzoo.models.pgm import PGM

    run = json.loads(Path(path).read_text())
    dom = Domain(run["domain"]["attrs"], run["domain"]["shape"])
    meas = [Measurement.from_state(m) for m in run["measurements"]]
    model = PGM(**run["params"])
    cpu, iters = 0.0, 0
    for c in run["calls"]:
        t = time.process_time()
        model._estimate(dom, meas[:c["measurements"]], c["iters"], "numpy", c["tol"])
        cpu += time.process_time() - t
        iters += int(model.iters_)
    cliques = list(dict.fromkeys(m.clique for m in meas))
    loss = sum(float(((model.project(m.clique) - m.noisy) ** 2).sum()) / max(m.sigma, 1e-12) ** 2 for m in meas) / 2
    if answers:
        Path(answers).write_text(json.dumps({"|".join(c): model.project(c).ravel().tolist() for c in cliques}))
    recorded = sum(c["taken"] for c in run["calls"])
    return {"calls": len(run["calls"]), "iterations": iters, "recorded_iterations": recorded,
            "cpu_s": round(cpu, 2), "final_loss": round(loss, 2), "total": round(float(model.total_), 1),
            "threads": thread_settings()}


def replay(a) -> None:
    trees = {"this": ROOT} | ({"baseline": Path(a.baseline).resolve()} if a.baseline else {})
    answers = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, tree in trees.items():
            ans = os.path.join(tmp, f"{name}.json")
            env = dict(os.environ, PYTHONPATH=str(tree))
            out = subprocess.run([sys.executable, __file__, "_worker", a.file, ans], env=env, cwd=str(tree),
                                 capture_output=True, text=True, check=True).stdout
            res = json.loads(out.strip().splitlines()[-1])
            print(json.dumps({"tree": name, "path": str(tree)} | res), flush=True)
            answers[name] = (json.loads(Path(ans).read_text()), res["total"])
    if "baseline" in answers:
        (x, total), (y, _) = answers["this"], answers["baseline"]
        diff = max(float(np.abs(np.array(x[k]) - np.array(y[k])).max()) for k in x) / total
        print(json.dumps({"max_cell_diff_over_rows": diff}))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":  # a replay in the checkout PYTHONPATH names
        sys.path.insert(0, os.environ.get("PYTHONPATH", str(ROOT)))
        print(json.dumps(replay_here(sys.argv[2], sys.argv[3])))
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--rows", type=int, default=300_000)
    r.add_argument("--preset", choices=("aim", "privmrf"), default="aim")
    r.add_argument("--noise-seed", type=int, default=0)
    r.add_argument("--out", required=True)
    q = sub.add_parser("replay")
    q.add_argument("file")
    q.add_argument("--baseline", help="another checkout of synthzoo to replay with, back to back")
    a = p.parse_args()
    (record if a.cmd == "record" else replay)(a)


if __name__ == "__main__":
    main()
