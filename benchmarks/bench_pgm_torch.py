"""The PGM engine's torch iteration on a GPU: eager against the evaluation replayed as a CUDA graph, on
bench_pgm_engines.py's model (adult under mst's DP binning, its 1-way and ``K`` chained 4-way noisy
marginals), and where an eager iteration's time goes.

    python benchmarks/bench_pgm_torch.py 3 300              # K=3: 3.3 million cells
    python benchmarks/bench_pgm_torch.py 3 300 --profile 20  # also torch.profiler over 20 iterations

Each variant runs ``ITERS`` iterations (``tol=0``) after a short warm-up fit (CUDA's start), and prints
wall seconds, milliseconds an iteration and the largest difference of its estimate from the eager one's
(as a share of the rows).  ``--profile N`` prints the operations that take the most device time and the
most host time over N eager iterations, and the device's busy time an iteration beside the wall time:
an iteration whose kernels are busy far less than its wall time is bound by launching them.  Needs a
CUDA device (without one: a dry run on the CPU); one CPU thread (``OMP_NUM_THREADS=1``)."""
import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")
os.environ.setdefault("JAX_ENABLE_X64", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402


def fit(dom, meas, iters: int, graph: bool):
    import torch

    from synthzoo.models import _pgm_torch
    from synthzoo.models.pgm import PGM

    _pgm_torch.CUDA_GRAPH = graph
    m = PGM(iters=iters, tol=0.0, engine="torch", warm_start=False, max_model_size=1000.0)
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    t = time.perf_counter()
    m.fit(dom, meas, np.random.default_rng(0))
    sync()
    return m, time.perf_counter() - t


def main() -> None:
    import torch
    from bench_pgm_engines import setup

    from synthzoo._threads import thread_settings

    ap = argparse.ArgumentParser()
    ap.add_argument("k", type=int)
    ap.add_argument("iters", type=int)
    ap.add_argument("--profile", type=int, default=0)
    a = ap.parse_args()
    if not torch.cuda.is_available():  # a dry run: torch on the CPU, both variants eager
        print("no CUDA device: the torch engine runs on the CPU and never captures a graph", flush=True)
    warnings.simplefilter("ignore")
    dom, cliques, meas, rows = setup(a.k)
    fit(dom, meas, 5, False)  # CUDA's start, outside the timings
    fit(dom, meas, 5, True)
    ref = None
    for graph in (False, True):
        m, wall = fit(dom, meas, a.iters, graph)
        ans = {c: m.project(c) for c in cliques}
        out = {"variant": "graph" if graph else "eager", "wall_s": round(wall, 3), "steps": int(m.iters_),
               "ms_per_step": round(1e3 * wall / max(m.iters_, 1), 3), "cells": int(sum(np.prod(dom.project(c).shape) for c in m.cliques_)),
               "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
               "torch": torch.__version__, "threads": thread_settings()}
        if ref is not None:
            out["max_abs_diff_vs_eager_over_rows"] = float(max(np.abs(ref[c] - ans[c]).max() for c in cliques) / rows)
        ref = ans if ref is None else ref
        print(json.dumps(out), flush=True)
    if a.profile:
        from torch.profiler import ProfilerActivity, profile

        for graph in (False, True):
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                m, wall = fit(dom, meas, a.profile, graph)
            ev = prof.key_averages()
            dev = sum(getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0)) for e in ev)
            print(json.dumps({"profile": "graph" if graph else "eager", "iterations": int(m.iters_),
                              "wall_ms_per_step": round(1e3 * wall / m.iters_, 3),
                              "device_busy_ms_per_step": round(dev / 1e3 / m.iters_, 3)}), flush=True)
            for key in ("self_cuda_time_total", "self_cpu_time_total"):
                try:
                    print(ev.table(sort_by=key, row_limit=18, max_name_column_width=60))
                except Exception as e:  # noqa: BLE001 - the sort key's name differs between torch versions
                    print(key, "unavailable:", e)
                if graph:
                    break


if __name__ == "__main__":
    main()
