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
size (``model_size_mb``) next to the selector's ``max_model_size`` (``model_cap_mb``); ``refits`` its
mirror-descent runs per engine (count, wall seconds; ``torch-cuda`` where ``engine="auto"`` put a large
model on the GPU).  Run each in a fresh
process; ``--runs K`` runs
the preset K times, each in a fresh process, and prints the mean and standard deviation (the noise
is secret, so TVD and an adaptive selector's CPU vary from run to run).  ``--cold-cache`` compiles the
numba kernels afresh, as a fresh install's first fit does, and adds ``compile_s`` (the seconds numba
spent compiling, from its ``numba:compile`` events):

    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py adult aim --cold-cache --runs 3

Side by side with the peers (issue 16 item 5), one command, the same split, budget and scorer:

    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py adult mst --peer dpmm --peer smartnoise
    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py adult aim --peer dpmm --peer smartnoise --peer-cap 300

runs our preset here, then each peer's method of the same name (``aim`` or ``mst``) in the peer's own
environment (never a project dependency), each through a script of ``benchmarks/peers/``:

* dpmm 0.1.9 (``run_dpmm.py``; ``--dpmm-venv``, default ``/work/venvs/dpmm``; build it with
  ``python3 -m venv /work/venvs/dpmm && /work/venvs/dpmm/bin/pip install dpmm==0.1.9``);
* smartnoise-synth 1.0.x (``run_snsynth.py``; ``--smartnoise-venv``, default ``/work/venvs/snsynth``;
  build it with ``python3 -m venv /work/venvs/snsynth && /work/venvs/snsynth/bin/pip install
  torch==2.13.0 && /work/venvs/snsynth/bin/pip install smartnoise-synth``).

Each peer gets the schema's public domain where its API takes one (category lists and bounds; see
each script for what it still reads from the rows) and a tenth of epsilon for its binning of
numerical columns, as our presets.  Every side, ours included, is scored by the same code here: fit
CPU seconds (the child's own clock), peak RSS, 2-way TVD against the training rows, 3-way query
error and LightGBM F1 on adult's held-out 20 %; one JSON line per side and one per peer with the
ratios (its CPU / ours, its TVD / ours).  A peer's AIM runs 1,000 mirror-descent iterations in each
of its rounds and can take over 20 CPU minutes on adult: ``--peer-cap`` (CPU seconds, default 700)
stops it there; the line then says so, with the rounds it completed where the peer reports them, and
the CPU ratio is a lower bound.
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

#: each peer's script in benchmarks/peers/ and the option naming its environment
PEERS = {"dpmm": ("run_dpmm.py", "dpmm_venv"), "smartnoise": ("run_snsynth.py", "smartnoise_venv")}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("data", choices=["adult", "wide", "resampled"])
    p.add_argument("preset")
    p.add_argument("--rows", type=int, default=10000)
    p.add_argument("--epochs", type=int, default=None,
                   help="train the record preset this long (its epochs; pate-gan's iterations)")
    p.add_argument("--rounds", type=int, default=None,
                   help="the selector's rounds instead of the preset's (to time a few of gem's 5d rounds)")
    p.add_argument("--runs", type=int, default=1, help="repeat in fresh processes and print the mean")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=None,
                   help="the model's device parameter (torch models; default: the preset's, 'auto')")
    p.add_argument("--noise-seed", type=int, default=None,
                   help="replayable noise (the test-only opt-in, named in the output): runs follow the same rounds")
    p.add_argument("--cold-cache", action="store_true",
                   help="compile every numba kernel afresh (NUMBA_CACHE_DIR an empty folder), as a fresh install's "
                        "first fit does; prints compile_s, the seconds numba spent compiling")
    p.add_argument("--no-cuda-graph", action="store_true",
                   help="the torch PGM engine on CUDA eager, not replaying its evaluation as a CUDA graph")
    p.add_argument("--peer", choices=sorted(PEERS), action="append", default=[],
                   help="also run this peer's method of the same name (repeatable)")
    p.add_argument("--dpmm-venv", default="/work/venvs/dpmm")
    p.add_argument("--smartnoise-venv", default="/work/venvs/snsynth")
    p.add_argument("--peer-cap", type=float, default=700.0, help="CPU seconds the peer may use")
    p.add_argument("--peer-wall", type=float, default=None, help="wall seconds the peer may use (default 2x the cap)")
    a = p.parse_args()
    if a.runs > 1:
        return repeat(a)
    a.peer_wall = a.peer_wall or 2 * a.peer_cap
    if a.cold_cache:  # before numba is imported: it reads its configuration once
        import atexit
        import shutil

        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="synthzoo-cold-numba-")
        atexit.register(shutil.rmtree, os.environ["NUMBA_CACHE_DIR"], True)
    import synthzoo as sz
    from synthzoo._threads import thread_settings
    from synthzoo.datasets import load_shared, make_wide, train_test_split
    from synthzoo.metrics import tvd_2way

    test = None
    if a.data == "adult":
        df, schema = load_shared("adult")
        df, test = train_test_split(df, test_size=0.2, seed=0)
    elif a.data == "wide":
        df, schema = make_wide(a.rows, 100, seed=0)
    else:
        df, schema = load_shared("adult")
        df = df.sample(a.rows, replace=True, random_state=0).reset_index(drop=True)
    if a.peer and (a.data != "adult" or a.preset not in ("aim", "mst")):
        raise SystemExit("--peer runs the peers' aim or mst on adult")
    over = {}
    if a.epochs:
        cfg = sz.presets.preset_config(a.preset)
        m = cfg["model"] if isinstance(cfg["model"], dict) else {"name": cfg["model"]}
        from bench_sample import RECORD  # each record preset's training-length parameter

        over["model"] = {**m, RECORD.get(a.preset, "epochs"): int(a.epochs)}
    if a.device:
        cfg = sz.presets.preset_config(a.preset)
        m = over.get("model") or (cfg["model"] if isinstance(cfg["model"], dict) else {"name": cfg["model"]})
        over["model"] = {**m, "device": a.device}
    if a.rounds:
        sel = sz.presets.preset_config(a.preset)["select"]
        over["select"] = {**({"name": sel} if isinstance(sel, str) else sel), "rounds": int(a.rounds)}
    eps = None if a.preset in ("ctgan", "tvae") else 1.0
    if a.noise_seed is not None:
        over["noise_seed"] = int(a.noise_seed)
    if a.no_cuda_graph:
        from synthzoo.models import _pgm_torch

        _pgm_torch.CUDA_GRAPH = False
    refits = _count_refits()
    compiling = _compile_seconds() if a.cold_cache else None
    c0, t0 = time.process_time(), time.perf_counter()
    s = sz.make(a.preset, epsilon=eps, delta=1e-5, schema=schema, seed=0, **over)
    s.fit(df)
    out = {"data": a.data, "preset": a.preset, "rows": len(df), "cols": df.shape[1],
           "fit_cpu_s": round(time.process_time() - c0, 2), "fit_wall_s": round(time.perf_counter() - t0, 2),
           "frame_mb": round(df.memory_usage(deep=True).sum() / 2 ** 20, 1), "threads": thread_settings()}
    if compiling is not None:
        out["compile_s"] = round(compiling(), 2)
    if a.noise_seed is not None:
        out["replayed_noise_seed"] = int(a.noise_seed)
    if a.no_cuda_graph:
        out["cuda_graph"] = False
    if a.data != "resampled":
        fake = s.sample(len(df))
        out["tvd_2way"] = round(float(tvd_2way(df, fake, schema, bins=10)), 4)
        if a.data == "wide":
            rng = np.random.default_rng(1)
            ind = df.apply(lambda c: c.sample(frac=1.0, random_state=int(rng.integers(1 << 30))).to_numpy())
            out["tvd_2way_independent"] = round(float(tvd_2way(df, ind, schema, bins=10)), 4)
        if a.peer:  # the peers' scorer, applied to ours too
            out.update(utility(df, test, fake, schema))
    from synthzoo.isolation import peak_rss_mb

    if hasattr(s.model, "cliques_"):  # a graphical model: its junction tree against the selector's cap
        from synthzoo.core.graph import model_size_mb

        out["model_mb"] = round(model_size_mb(s.model.domain_, s.model.cliques_), 2)
        cap = getattr(s.select, "max_model_size", None)
        if cap is not None:
            out["model_cap_mb"] = float(cap)
    if refits:
        out["refits"] = {k: [v[0], round(v[1], 2)] for k, v in refits.items()}  # engine: [count, wall s]
    out["peak_rss_mb"] = round(peak_rss_mb())
    if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
        out["gpu_peak_mb"] = round(sys.modules["torch"].cuda.max_memory_allocated() / 2 ** 20)
    out["device"] = _device_used(s)
    print(json.dumps(out), flush=True)
    for name in a.peer:
        peer = run_peer(a, name, df, test, schema)
        print(json.dumps(peer), flush=True)
        ratio = {"ours": a.preset, "peer": peer["peer"], "ours_fit_cpu_s": out["fit_cpu_s"],
                 "peer_fit_cpu_s": peer["fit_cpu_s"]}
        key = "cpu_ratio_at_least" if peer.get("capped") else "cpu_ratio"
        ratio[key] = round(peer["fit_cpu_s"] / max(out["fit_cpu_s"], 1e-9), 1)
        if "tvd_2way" in peer:
            ratio["tvd_ratio"] = round(peer["tvd_2way"] / out["tvd_2way"], 2)
        print(json.dumps(ratio), flush=True)


def _compile_seconds():
    """Record numba's compile events from now on; returns a function giving the seconds spent compiling
    (outermost compilations only: a kernel's callees compile inside it)."""
    from numba.core import event

    rec = event.RecordingListener()
    event.register("numba:compile", rec)

    def total() -> float:
        depth, start, secs = 0, 0.0, 0.0
        for ts, ev in rec.buffer:
            if ev.is_start:
                depth += 1
                start = ts if depth == 1 else start
            elif depth:
                depth -= 1
                secs += ts - start if depth == 0 else 0.0
        return secs

    total.listener = rec  # to unregister (event.unregister("numba:compile", total.listener))
    return total


def _count_refits() -> dict:
    """Count a graphical model's mirror-descent runs and their wall seconds per engine (numpy, torch on
    its device), filled in as the fit runs."""
    from synthzoo.models import pgm_engine

    counts: dict = {}
    inner = pgm_engine.mirror_descent

    def timed(*args, **kw):
        t = time.perf_counter()
        try:
            return inner(*args, **kw)
        finally:
            c = counts.setdefault("numpy" if kw.get("device") is None else f"torch-{kw['device']}", [0, 0.0])
            c[0] += 1
            c[1] += time.perf_counter() - t

    pgm_engine.mirror_descent = timed
    return counts


def _device_used(s) -> str:
    """Where the model ran: its torch device (with the GPU's name), else the CPU; a graphical model's
    estimation engine."""
    dev = getattr(s.model, "device", None)
    if getattr(s.model, "engine_", None):  # the final fit's engine (torch: on CUDA where present)
        where = "cpu"
        if s.model.engine_ == "torch":
            import torch

            if torch.cuda.is_available():
                where = f"cuda ({torch.cuda.get_device_name(0)})"
        return f"{where} (pgm engine {s.model.engine_})"
    if dev is None:
        return "cpu"
    import torch

    if dev in ("auto", "cuda") and torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return "cpu"


def utility(train, test, fake, schema) -> dict:
    """3-way query error and LightGBM F1 (train on the release, test on the held-out rows), as
    ``bench_deep``; a peer's out-of-bounds or fractional values are clipped and rounded first, as a
    user would.  Also the 2-way TVD over the categorical columns' pairs alone, which no decoding of
    numerical bins touches (smartnoise returns a bin's midpoint: capital-gain's first equal-width bin
    comes back as 2,500 where most rows hold 0, which the quantile-binned 2-way TVD counts in full)."""
    import warnings

    import pandas as pd

    from synthzoo.core.schema import Schema
    from synthzoo.metrics import ml_scores, query_error_3way, tvd_2way

    cats = Schema([c for c in schema if c.kind == "categorical"], dict(schema.meta))
    tvd_cat = float(tvd_2way(train[cats.names], fake[cats.names], cats, bins=10))
    fake = fake.reindex(columns=train.columns).copy()
    for c in schema:
        if c.kind == "numerical":
            v = pd.to_numeric(fake[c.name], errors="coerce").clip(c.lower, c.upper)
            fake[c.name] = v.round() if c.integer else v
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml = ml_scores(train, fake, test, schema, evaluators=("gbm",))
    return {"tvd_2way_categorical": round(tvd_cat, 4),
            "query_3way": round(float(query_error_3way(test, fake, schema)), 4),
            "ml_f1": round(float(dict(zip(ml["score"], ml["synthetic"])).get("f1", np.nan)), 4)}


def repeat(a) -> None:
    """``--runs K``: the same command K times, each in a fresh process; then the mean of each figure."""
    argv = [sys.executable, str(Path(__file__).resolve()), a.data, a.preset, "--rows", str(a.rows)]
    if a.epochs:
        argv += ["--epochs", str(a.epochs)]
    if a.rounds:
        argv += ["--rounds", str(a.rounds)]
    if a.device:
        argv += ["--device", a.device]
    if a.cold_cache:
        argv += ["--cold-cache"]
    rows = []
    for _ in range(a.runs):
        line = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        print(line, flush=True)
        rows.append(json.loads(line))
    keys = [k for k in ("fit_cpu_s", "compile_s", "tvd_2way", "peak_rss_mb") if k in rows[0]]
    summary = {"runs": len(rows)}
    for k in keys:
        v = np.array([r[k] for r in rows], dtype=float)
        summary[f"mean_{k}"] = round(float(v.mean()), 4)
        summary[f"sd_{k}"] = round(float(v.std(ddof=1)), 4) if v.size > 1 else None
    print(json.dumps(summary), flush=True)


def run_peer(a, name, df, test, schema) -> dict:
    """A peer's pipeline of the preset's name in its own venv, under a CPU cap; scored as ours."""
    import pandas as pd

    from synthzoo.metrics import tvd_2way

    script, venv_attr = PEERS[name]
    py = Path(getattr(a, venv_attr)) / "bin" / "python"
    if not py.exists():
        raise SystemExit(f"no {name} environment at {py.parent.parent}: see this file's docstring")
    work = Path(tempfile.mkdtemp(prefix=f"bench_{name}_"))
    df.to_csv(work / "train.csv", index=False)
    from synthzoo.datasets import datasets_root

    (work / "schema.json").write_bytes((datasets_root() / "adult" / "schema.json").read_bytes())  # the public domain
    cap = int(a.peer_cap)

    def limit():  # the child's own CPU clock: SIGXCPU at the cap, SIGKILL a second later
        resource.setrlimit(resource.RLIMIT_CPU, (cap, cap + 1))

    cmd = [str(py), str(ROOT / "benchmarks/peers" / script), a.preset, str(work / "train.csv"),
           str(work / "schema.json"), str(work / "out.csv"), "--epsilon", "1.0", "--delta", "1e-5",
           "--progress", str(work / "progress.jsonl")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    try:  # a wall-clock stop too (a loaded machine gives the child less than a core)
        stdout, stderr = proc.communicate(timeout=a.peer_wall)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    out = {"peer": f"{name}-{a.preset}", "fit_cpu_s": round(cpu, 1)}
    if proc.returncode == 0:
        out.update(json.loads(stdout.strip().splitlines()[-1]))
        fake = pd.read_csv(work / "out.csv")
        out["tvd_2way"] = round(float(tvd_2way(df, fake, schema, bins=10)), 4)
        out.update(utility(df, test, fake, schema))
        return out
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        out.update(capped=True, cap_cpu_s=cap, cap_wall_s=a.peer_wall,
                   note="stopped at the CPU or wall cap before finishing; the CPU ratio is a lower bound")
        if (work / "progress.jsonl").exists():  # dpmm's runner logs its AIM rounds; smartnoise's cannot
            out["rounds_completed"] = max(len((work / "progress.jsonl").read_text().splitlines()) - 1, 0)
        return out
    raise SystemExit(f"{name} failed (exit {proc.returncode}):\n{stderr[-3000:]}")


if __name__ == "__main__":
    main()
