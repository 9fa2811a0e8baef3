"""Time ``synthzoo.evaluate`` on adult (80/20 split, seed 0: 26,048 training rows, 6,513 held out),
baselines (HALF / INDEPENDENT / SELF) included, and print where the time goes.

    OMP_NUM_THREADS=1 python3 benchmarks/bench_eval.py                    # default metric set
    OMP_NUM_THREADS=1 python3 benchmarks/bench_eval.py --set full         # the "full" set, one call
    OMP_NUM_THREADS=1 python3 benchmarks/bench_eval.py --set full --cli   # `synthzoo eval --metrics full`
    OMP_NUM_THREADS=1 python3 benchmarks/bench_eval.py --profile out.prof # cProfile (n_jobs=1)

The release is a ``privsyn`` sample (epsilon=1, delta=1e-5, seed 0) of as many rows as the training
split, fitted once and kept as a CSV under ``--cache`` (default ``/tmp/synthzoo_bench_eval``) so
repeated runs time the evaluation only; ``--release half`` scores the second half of the training
rows instead (no fit).  The baseline cache starts empty in every run (one process per run), so
every figure includes the baselines.

Printed: the seconds each table (release, HALF, INDEPENDENT, SELF) spent on each metric -- ML
metrics and the privacy attacks are fitted and searched together and appear as one entry each;
``evaluate`` runs all of them as units side by side on ``n_jobs`` threads, so the seconds (wall
time of a table's units, summed, waits for shared results included) add up to more than the
total -- then the total wall time and the process CPU time (all threads).  ``--cli`` runs the command
line in a child process on CSV files written to the cache folder and reports its wall and CPU time
(user + system, from the child's resource usage).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from synthzoo.core import Schema  # noqa: E402

DATA = Path(os.environ.get("SYNTHZOO_DATASETS", ROOT.parent / "shared" / "datasets"))


def load_split(name: str = "adult", seed: int = 0):
    df = pd.read_csv(DATA / name / f"{name}.csv")
    schema = Schema.from_json(DATA / name / "schema.json")
    idx = np.random.default_rng(seed).permutation(len(df))
    n = int(0.8 * len(df))
    return df.iloc[idx[:n]].reset_index(drop=True), df.iloc[idx[n:]].reset_index(drop=True), schema


def release(kind: str, train: pd.DataFrame, schema: Schema, seed: int, cache: Path) -> pd.DataFrame:
    if kind == "half":
        from synthzoo.metrics import half_split
        return half_split(train, seed)[1]
    path = cache / f"adult_privsyn_eps1_seed{seed}.csv"
    if path.exists():
        print(f"# release: {path} (privsyn eps=1, cached)")
        return pd.read_csv(path)
    import synthzoo as sz
    t = time.perf_counter()
    m = sz.make("privsyn", epsilon=1.0, delta=1e-5, schema=schema, seed=seed)
    m.fit(train)
    fake = m.sample(len(train))
    cache.mkdir(parents=True, exist_ok=True)
    fake.to_csv(path, index=False)
    print(f"# release: privsyn eps=1 fitted and sampled in {time.perf_counter() - t:.1f} s -> {path}")
    return fake


def _threads() -> str:
    return " ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                                                     "OPENBLAS_NUM_THREADS"))


def run_python(args, train, test, fake, schema) -> None:
    from synthzoo.metrics import evaluate
    metrics = None if args.set == "default" else args.set
    prof = None
    if args.profile:
        import cProfile
        prof = cProfile.Profile(time.process_time)  # CPU seconds: comparable on a busy machine
    w0, c0 = time.perf_counter(), time.process_time()
    if prof:
        prof.enable()
    table, det = evaluate(train, fake, test=test, schema=schema, metrics=metrics, seed=args.seed,
                          n_jobs=args.n_jobs, return_details=True)
    if prof:
        prof.disable()
        prof.dump_stats(args.profile)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    pd.set_option("display.width", 220)
    print(table.drop(columns="description").to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    per = det.get("metric_timings", {})
    if per:
        frame = pd.DataFrame(per).fillna(0.0)
        frame.loc["total"] = frame.sum()
        print("\nseconds per metric (wall time of each table's units, summed; units run side by side on n_jobs "
              "threads):")
        print(frame.to_string(float_format=lambda x: f"{x:7.1f}"))
    if args.csv:
        table.to_csv(args.csv, index=False, float_format="%.17g")
    for k, v in det.get("timings", {}).items():
        print(f"  table {k:<12} {v:7.1f} s")
    print(f"\nTOTAL evaluate(metrics={metrics!r}, n_jobs={args.n_jobs}) on adult ({len(train)} train / "
          f"{len(test)} test / {len(fake)} release rows): wall {wall:.1f} s, CPU {cpu:.1f} s  [{_threads()}]")


def run_cli(args, train, test, fake) -> None:
    d = args.cache
    d.mkdir(parents=True, exist_ok=True)
    paths = {k: d / f"{k}.csv" for k in ("train", "test", "release")}
    for k, df in (("train", train), ("test", test), ("release", fake)):
        df.to_csv(paths[k], index=False)
    cmd = [sys.executable, "-m", "synthzoo.cli", "eval", str(paths["train"]), str(paths["release"]),
           "--test", str(paths["test"]), "--schema", str(DATA / "adult" / "schema.json"),
           "--out", str(d / "report.html"), "--seed", str(args.seed)]
    if args.set != "default":
        cmd += ["--metrics", args.set]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    print("# " + " ".join(cmd))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"\nTOTAL synthzoo eval --metrics {args.set} (report included): wall {wall:.1f} s, CPU {cpu:.1f} s  "
          f"[{_threads()}]")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--set", default="default", help="metric set: default (evaluate's), fast, full, privacy, ...")
    p.add_argument("--release", choices=("privsyn", "half"), default="privsyn")
    p.add_argument("--cli", action="store_true", help="time `synthzoo eval` in a child process instead")
    p.add_argument("--n-jobs", type=int, default=2, help="evaluate's n_jobs (default 2, its default)")
    p.add_argument("--profile", help="write a cProfile dump (CPU seconds) here (use with --n-jobs 1: cProfile sees "
                   "one thread)")
    p.add_argument("--csv", help="write the metric table here (all digits), to compare runs")
    p.add_argument("--cache", type=Path, default=Path("/tmp/synthzoo_bench_eval"))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not (DATA / "adult" / "schema.json").exists():
        sys.exit(f"datasets not found under {DATA} (set SYNTHZOO_DATASETS)")
    train, test, schema = load_split("adult", args.seed)
    fake = release(args.release, train, schema, args.seed, args.cache)
    if args.cli:
        run_cli(args, train, test, fake)
    else:
        run_python(args, train, test, fake, schema)


if __name__ == "__main__":
    main()
