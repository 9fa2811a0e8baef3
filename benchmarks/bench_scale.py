"""Scaling runs of one preset (one run per call; CPU seconds, peak RSS, 2-way TVD), issue 16.

    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py adult aim          # 80 % split, seed 0
    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py wide mst --rows 10000   # make_wide, 100 columns
    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py wide ctgan --rows 10000 --epochs 5
    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py resampled aim --rows 300000   # adult resampled

epsilon 1, delta 1e-5 (``ctgan``/``tvae``: non-private), synthesizer seed 0, secret noise.  ``adult``:
fit on the 80 % split (seed 0), TVD against the training rows.  ``wide``: ``make_wide(rows, 100,
seed=0)``, TVD against it, next to its columns shuffled independently.  ``resampled``: adult drawn
with replacement to ``--rows`` rows (random_state 0); fit only.  Fit CPU seconds cover ``make`` and
``fit`` in this process; peak RSS is the process's; ``model_mb`` is a graphical model's junction-tree
size (``model_size_mb``) next to the selector's ``max_model_size`` (``model_cap_mb``).  Run each in a fresh process; ``--runs K`` runs
the preset K times, each in a fresh process, and prints the mean and standard deviation (the noise
is secret, so TVD and an adaptive selector's CPU vary from run to run).

Side by side with a peer (issue 16 item 5), one command, the same split, budget and scorer:

    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py adult aim --peer dpmm [--peer-cap 700]

runs our preset here, then dpmm's pipeline of the same name (``aim`` or ``mst``) in dpmm's own
environment (``--peer-venv``, default ``/work/venvs/dpmm``; build it with ``python3 -m venv
/work/venvs/dpmm && /work/venvs/dpmm/bin/pip install dpmm==0.1.9``, the version measured) through
``benchmarks/peers/run_dpmm.py``, which gives dpmm the schema's public domain (category lists and
bounds; missing categorical cells as a category of their own) and a tenth of epsilon for its binning,
as our presets.  It prints one JSON line per side (fit CPU s, peak RSS, 2-way TVD against the
training rows) and one with the CPU ratio.  dpmm's AIM runs 1,000 mirror-descent iterations in each
of its rounds and can take over 20 CPU minutes on adult: ``--peer-cap`` (CPU seconds, default 700)
stops it there; the line then says so, with the rounds it completed, and the ratio is a lower bound.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("data", choices=["adult", "wide", "resampled"])
    p.add_argument("preset")
    p.add_argument("--rows", type=int, default=10000)
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--runs", type=int, default=1, help="repeat in fresh processes and print the mean")
    p.add_argument("--peer", choices=["dpmm"], default=None, help="also run this peer's method of the same name")
    p.add_argument("--peer-venv", default="/work/venvs/dpmm")
    p.add_argument("--peer-cap", type=float, default=700.0, help="CPU seconds the peer may use")
    p.add_argument("--peer-wall", type=float, default=None, help="wall seconds the peer may use (default 2x the cap)")
    a = p.parse_args()
    if a.runs > 1:
        return repeat(a)
    a.peer_wall = a.peer_wall or 2 * a.peer_cap
    import synthzoo as sz
    from synthzoo._threads import thread_settings
    from synthzoo.datasets import load_shared, make_wide, train_test_split
    from synthzoo.metrics import tvd_2way

    if a.data == "adult":
        df, schema = load_shared("adult")
        df, _ = train_test_split(df, test_size=0.2, seed=0)
    elif a.data == "wide":
        df, schema = make_wide(a.rows, 100, seed=0)
    else:
        df, schema = load_shared("adult")
        df = df.sample(a.rows, replace=True, random_state=0).reset_index(drop=True)
    over = {}
    if a.epochs:
        cfg = sz.presets.preset_config(a.preset)
        m = cfg["model"] if isinstance(cfg["model"], dict) else {"name": cfg["model"]}
        over["model"] = {**m, "epochs": int(a.epochs)}
    eps = None if a.preset in ("ctgan", "tvae") else 1.0
    c0, t0 = time.process_time(), time.perf_counter()
    s = sz.make(a.preset, epsilon=eps, delta=1e-5, schema=schema, seed=0, **over)
    s.fit(df)
    out = {"data": a.data, "preset": a.preset, "rows": len(df), "cols": df.shape[1],
           "fit_cpu_s": round(time.process_time() - c0, 2), "fit_wall_s": round(time.perf_counter() - t0, 2),
           "frame_mb": round(df.memory_usage(deep=True).sum() / 2 ** 20, 1), "threads": thread_settings()}
    if a.data != "resampled":
        out["tvd_2way"] = round(float(tvd_2way(df, s.sample(len(df)), schema, bins=10)), 4)
        if a.data == "wide":
            rng = np.random.default_rng(1)
            ind = df.apply(lambda c: c.sample(frac=1.0, random_state=int(rng.integers(1 << 30))).to_numpy())
            out["tvd_2way_independent"] = round(float(tvd_2way(df, ind, schema, bins=10)), 4)
    from synthzoo.isolation import peak_rss_mb

    if hasattr(s.model, "cliques_"):  # a graphical model: its junction tree against the selector's cap
        from synthzoo.core.graph import model_size_mb

        out["model_mb"] = round(model_size_mb(s.model.domain_, s.model.cliques_), 2)
        cap = getattr(s.select, "max_model_size", None)
        if cap is not None:
            out["model_cap_mb"] = float(cap)
    out["peak_rss_mb"] = round(peak_rss_mb())
    print(json.dumps(out), flush=True)
    if a.peer:
        if a.data != "adult" or a.preset not in ("aim", "mst"):
            raise SystemExit("--peer dpmm runs dpmm's aim or mst on adult")
        peer = run_dpmm(a, df, schema)
        print(json.dumps(peer), flush=True)
        ratio = {"ours": a.preset, "peer": peer["peer"], "ours_fit_cpu_s": out["fit_cpu_s"],
                 "peer_fit_cpu_s": peer["fit_cpu_s"], "ours_tvd_2way": out["tvd_2way"],
                 "peer_tvd_2way": peer.get("tvd_2way")}
        key = "cpu_ratio_at_least" if peer.get("capped") else "cpu_ratio"
        ratio[key] = round(peer["fit_cpu_s"] / max(out["fit_cpu_s"], 1e-9), 1)
        print(json.dumps(ratio), flush=True)


def repeat(a) -> None:
    """``--runs K``: the same command K times, each in a fresh process; then the mean of each figure."""
    argv = [sys.executable, str(Path(__file__).resolve()), a.data, a.preset, "--rows", str(a.rows)]
    if a.epochs:
        argv += ["--epochs", str(a.epochs)]
    rows = []
    for _ in range(a.runs):
        line = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        print(line, flush=True)
        rows.append(json.loads(line))
    keys = [k for k in ("fit_cpu_s", "tvd_2way", "peak_rss_mb") if k in rows[0]]
    summary = {"runs": len(rows)}
    for k in keys:
        v = np.array([r[k] for r in rows], dtype=float)
        summary[f"mean_{k}"] = round(float(v.mean()), 4)
        summary[f"sd_{k}"] = round(float(v.std(ddof=1)), 4) if v.size > 1 else None
    print(json.dumps(summary), flush=True)


def run_dpmm(a, df, schema) -> dict:
    """dpmm's pipeline of the preset's name in its own venv, under a CPU cap; scored as ours."""
    import pandas as pd

    from synthzoo.metrics import tvd_2way

    py = Path(a.peer_venv) / "bin" / "python"
    if not py.exists():
        raise SystemExit(f"no dpmm environment at {a.peer_venv}: see this file's docstring")
    work = Path(tempfile.mkdtemp(prefix="bench_dpmm_"))
    df.to_csv(work / "train.csv", index=False)
    from synthzoo.datasets import datasets_root

    (work / "schema.json").write_bytes((datasets_root() / "adult" / "schema.json").read_bytes())  # the public domain
    cap = int(a.peer_cap)

    def limit():  # the child's own CPU clock: SIGXCPU at the cap, SIGKILL a second later
        resource.setrlimit(resource.RLIMIT_CPU, (cap, cap + 1))

    cmd = [str(py), str(ROOT / "benchmarks/peers/run_dpmm.py"), a.preset, str(work / "train.csv"),
           str(work / "schema.json"), str(work / "out.csv"), "--epsilon", "1.0", "--delta", "1e-5",
           "--progress", str(work / "progress.jsonl")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    try:  # a wall-clock stop too (a loaded machine gives the child less than a core)
        stdout, stderr = proc.communicate(timeout=a.peer_wall)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    proc.stdout, proc.stderr = stdout, stderr
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    out = {"peer": f"dpmm-{a.preset}", "fit_cpu_s": round(cpu, 1)}
    if proc.returncode == 0:
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        out.update(info)
        fake = pd.read_csv(work / "out.csv")
        out["tvd_2way"] = round(float(tvd_2way(df, fake, schema, bins=10)), 4)
        return out
    rounds = (work / "progress.jsonl").read_text().splitlines() if (work / "progress.jsonl").exists() else []
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        out.update(capped=True, cap_cpu_s=cap, cap_wall_s=a.peer_wall, rounds_completed=max(len(rounds) - 1, 0),
                   note="stopped at the CPU or wall cap before finishing; the ratio is a lower bound")
        return out
    raise SystemExit(f"dpmm failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


if __name__ == "__main__":
    main()
