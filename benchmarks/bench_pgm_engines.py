"""PGM estimation engines side by side (issue 16, "GPU when present"): the numba engine, the same
iteration in torch (``torch``: on CUDA when present) and the jitted jax one (mbi's mirror descent), on one set of noisy marginals of adult with a large junction tree --
the 1-way marginals and ``K`` chained 4-way marginals of its widest attributes (mst's domain) -- each
fitted to the model's default tolerance; wall seconds, steps, and how far apart the estimates are.

    python benchmarks/bench_pgm_engines.py 10 1000 jax numpy   # sets OMP_NUM_THREADS=1, JAX_ENABLE_X64=1
    python benchmarks/bench_pgm_engines.py 10 1000 numpy torch

``K`` 10 gives about 3 million cells (23-27 MB; the domain is mst's DP binning, so it varies).  A
benchmark of the estimator, not a release: the marginals' noise is a fixed-seed Gaussian (sigma 10).
The first engine named is the reference for the ``max_abs_diff`` column (as a share of the rows).  On
a machine without a GPU the jax engine runs on the CPU and pays its compile without the GPU's speed."""
import json
import os
import sys
import time
import warnings

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")
os.environ.setdefault("JAX_ENABLE_X64", "1")

import numpy as np  # noqa: E402


def setup(k: int) -> tuple:
    """adult's domain under mst's DP binning, its 1-way and ``k`` chained 4-way cliques, their noisy
    marginals (a fixed-seed Gaussian, sigma 10) and the row count."""
    import synthzoo as sz
    from synthzoo.core.domain import EncodedData, Measurement
    from synthzoo.datasets import load_shared

    df, schema = load_shared("adult")
    enc = sz.make("mst", epsilon=1.0, schema=schema, seed=0)
    enc.fit(df)  # for its domain (mst's DP bins) and encoder only
    dom = enc.encoder_.domain
    data = EncodedData(enc.encoder_.transform(df), dom)
    rng = np.random.default_rng(0)
    widest = sorted(dom.attrs, key=lambda a: -dom.project([a]).shape[0])
    cliques = [(a,) for a in dom.attrs] + [tuple(widest[i:i + 4]) for i in range(k)]
    meas = [Measurement(c, data.project(c) + rng.normal(0, 10.0, dom.project(c).shape), 10.0) for c in cliques]
    return dom, cliques, meas, len(df)


def main(k: int, iters: int, engines: list[str]) -> None:
    from synthzoo._threads import thread_settings
    from synthzoo.core.graph import model_size_mb
    from synthzoo.models.pgm import PGM, _cuda, _gpu

    warnings.simplefilter("ignore")
    dom, cliques, meas, rows = setup(k)
    first = None
    for eng in engines:
        m = PGM(iters=iters, engine=eng, warm_start=False, max_model_size=1000.0)
        t = time.perf_counter()
        m.fit(dom, meas, np.random.default_rng(0))
        wall = time.perf_counter() - t
        ans = {c: m.project(c) for c in cliques}
        out = {"engine": m.engine_, "jax_gpu": _gpu(), "cuda": _cuda(), "iters": iters, "wall_s": round(wall, 2), "steps": int(m.iters_),
               "converged": bool(m.converged_), "measured": len(cliques),
               "model_mb": round(model_size_mb(dom, m.cliques_), 2),
               "cells": int(sum(np.prod(dom.project(c).shape) for c in m.cliques_)), "threads": thread_settings()}
        if first is not None:
            out["max_abs_diff_vs_first_over_rows"] = float(max(np.abs(first[c] - ans[c]).max() for c in cliques)
                                                           / rows)
        first = ans if first is None else first
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:] or ["jax", "numpy"])
