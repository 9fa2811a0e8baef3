"""What sampling in bfloat16 changes in the rows: a generator trained on adult, sampled in float32 and
in bfloat16, each sample's 2-way and 1-way TVD against another sample and against the training rows.

    OMP_NUM_THREADS=1 python benchmarks/bench_precision.py [--preset ctgan] [--epochs 150] [--rows 100000]

``--preset`` (``ctgan``, ``pate-gan`` or ``tablediffusion``) is trained without privacy for ``--epochs`` epochs
(``pate-gan``: rounds) on adult's 80 % split (seed 0; ``../shared/datasets`` or
``$SYNTHZOO_DATASETS``).  Printed: the distance between two float32 samples of ``--rows`` rows with
different seeds (what sampling alone moves), between a float32 and a bfloat16 sample with different
seeds and with the same seed, the share of identical cells with the same seed, and each precision's
2-way TVD against the training rows (30,000 rows), with the CPU seconds of each sample and the
thread settings.  Speed per row beside ``mst``: ``bench_sample.py --presets mst,ctgan,ctgan:bfloat16``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")


def identical_share(a, b) -> float:
    """Share of cells equal in the two frames, a cell missing in both counted as equal (NaN != NaN)."""
    return float(((a.values == b.values) | (a.isna().values & b.isna().values)).mean())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", choices=["ctgan", "pate-gan", "tablediffusion"], default="ctgan")
    p.add_argument("--epochs", type=int, default=150, help="epochs (pate-gan: rounds)")
    p.add_argument("--rows", type=int, default=100_000)
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    import synthzoo as sz
    from synthzoo._threads import thread_settings
    from synthzoo.datasets import load_shared, train_test_split
    from synthzoo.metrics import tvd_1way, tvd_2way

    df, schema = load_shared("adult")
    train, _ = train_test_split(df, 0.2, seed=0)
    key = "iterations" if a.preset == "pate-gan" else "epochs"
    synth = sz.make(a.preset, epsilon=None, schema=schema, seed=0, model={key: a.epochs})
    c0 = time.process_time()
    synth.fit(train)
    print(f"{a.preset}: {a.epochs} {key} on {len(train):,} rows in {time.process_time() - c0:.0f} CPU s; "
          f"{thread_settings()}")

    def sample(precision, seed, n):
        synth.model.sample_precision = precision
        c = time.process_time()
        out = synth.sample(n, seed=seed)
        return out, time.process_time() - c

    (f2, t32), (f3, _) = sample("float32", 2, a.rows), sample("float32", 3, a.rows)
    (b2, t16), (b3, _) = sample("bfloat16", 2, a.rows), sample("bfloat16", 3, a.rows)

    def dist(x, y):
        return f"2-way TVD {tvd_2way(x, y, schema):.4f}, 1-way at 50 bins {tvd_1way(x, y, schema, bins=50):.4f}"

    print(f"float32 seed 2 vs float32 seed 3:   {dist(f2, f3)}")
    print(f"float32 seed 2 vs bfloat16 seed 3:  {dist(f2, b3)}")
    print(f"float32 seed 2 vs bfloat16 seed 2:  {dist(f2, b2)}; identical cells {identical_share(f2, b2):.3f}")
    n = min(30_000, a.rows)
    print(f"against the training rows ({n:,} synthetic rows): float32 2-way TVD "
          f"{tvd_2way(train, f2.head(n), schema):.4f}, bfloat16 {tvd_2way(train, b2.head(n), schema):.4f}")
    print(f"sample of {a.rows:,} rows: float32 {t32:.2f} CPU s ({1e6 * t32 / a.rows:.1f} us/row), bfloat16 {t16:.2f} "
          f"CPU s ({1e6 * t16 / a.rows:.1f} us/row)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
