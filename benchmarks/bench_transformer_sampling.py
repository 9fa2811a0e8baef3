"""Sampling speed of the `transformer` model at the `realtabformer` preset's size, on adult's schema:
30,000 rows, KV-cached and batched (8,192 rows at a time), every row valid by construction.

    OMP_NUM_THREADS=1 python benchmarks/bench_transformer_sampling.py [--rows 30000]

The network is trained for one epoch on 2,000 rows (sampling costs the same whatever the weights);
CPU and wall seconds of `sample` are printed with the thread settings.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=30_000)
    p.add_argument("--preset", default="realtabformer")
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    import synthzoo as sz
    from synthzoo._threads import thread_settings

    df, schema = sz.datasets.load_shared("adult")
    cfg = sz.presets.preset_config(a.preset)
    synth = sz.make(a.preset, epsilon=None, schema=schema, seed=0, model={**cfg["model"], "epochs": 1})
    synth.fit(df.sample(2000, random_state=0))
    t0, c0 = time.perf_counter(), time.process_time()
    fake = synth.sample(a.rows, seed=0)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    schema.validate(fake)
    L = synth.encoder_.n_positions
    print(f"{a.preset}: sampled {len(fake):,} rows ({L} tokens each, all valid) in {cpu:.1f} CPU s, {wall:.1f} s wall; "
          f"{thread_settings()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
