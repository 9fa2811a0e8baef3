"""Scaling runs of one preset (one run per call; CPU seconds, peak RSS, 2-way TVD), issue 16.

    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py adult aim          # 80 % split, seed 0
    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py wide mst --rows 10000   # make_wide, 100 columns
    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py wide ctgan --rows 10000 --epochs 5
    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py resampled aim --rows 300000   # adult resampled

epsilon 1, delta 1e-5 (``ctgan``/``tvae``: non-private), synthesizer seed 0, secret noise.  ``adult``:
fit on the 80 % split (seed 0), TVD against the training rows.  ``wide``: ``make_wide(rows, 100,
seed=0)``, TVD against it, next to its columns shuffled independently.  ``resampled``: adult drawn
with replacement to ``--rows`` rows (random_state 0); fit only.  Fit CPU seconds cover ``make`` and
``fit`` in this process; peak RSS is the process's.  Run each in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("data", choices=["adult", "wide", "resampled"])
    p.add_argument("preset")
    p.add_argument("--rows", type=int, default=10000)
    p.add_argument("--epochs", type=int, default=None)
    a = p.parse_args()
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
           "fit_cpu_s": round(time.process_time() - c0, 1), "fit_wall_s": round(time.perf_counter() - t0, 1),
           "frame_mb": round(df.memory_usage(deep=True).sum() / 2 ** 20, 1), "threads": thread_settings()}
    if a.data != "resampled":
        out["tvd_2way"] = round(float(tvd_2way(df, s.sample(len(df)), schema, bins=10)), 4)
        if a.data == "wide":
            rng = np.random.default_rng(1)
            ind = df.apply(lambda c: c.sample(frac=1.0, random_state=int(rng.integers(1 << 30))).to_numpy())
            out["tvd_2way_independent"] = round(float(tvd_2way(df, ind, schema, bins=10)), 4)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
