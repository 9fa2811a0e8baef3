"""Sampling speed and memory of the presets: rows per CPU second and peak RSS at large n.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        python benchmarks/bench_sample.py [--presets privsyn,mst,ctgan,ctgan:bfloat16,...] [--rows 1e6,1e7] \
        [--slow-rows 2e4] [--modes codes,frame,csv] [--chunk 500000] [--models DIR] [--baseline CHECKOUT] \
        [--out bench_sample.csv]

Each marginal preset is fitted once on adult (all 32,561 rows of ../shared/datasets/adult, epsilon
1, delta 1e-5, seed 0) and saved in ``--models`` (a model file found there is reused).  With
``--train-iters K`` the generator models (``gem``'s ``gn``, ``dpmerf``) train K steps (per round)
instead of their presets' 500 / 1000: their network, hence their sampling cost, is the same, and
``gem``'s 75 rounds of 500 steps of a 512-512 network take about 27 CPU minutes.

The record presets (``ctgan``, ``tvae``, ``pate-gan``, the diffusion models, ``realtabformer``,
their DP variants) are fitted small, since only their sampling is timed: on ``--record-rows``
rows of adult (3,000 by default, a fixed random subset) for ``--record-epochs`` epochs (1;
``pate-gan``: 5 rounds after 5 warm-up steps), epsilon 1.  The networks are the presets' (the
same layers and widths, so the same work per sampled row); only their weights are less trained.
The presets whose every row costs many network passes (:data:`SLOW`: diffusion's reverse steps,
the transformer's token-by-token decoding) are timed at ``--slow-rows`` rows (20,000) instead of
``--rows``, and ``mst`` is timed at those sizes too, so that ``x mst`` compares equal sizes.

A preset written ``ctgan:bfloat16`` (likewise ``dp-ctgan``, ``pate-gan``, ``tablediffusion``: the presets
whose model has ``sample_precision``) samples the same model file with ``sample_precision="bfloat16"``: the
network's forward pass in bf16; another preset so written fails as ``synthzoo sample --precision`` does.

Then every (preset, rows, mode) runs in a fresh Python process, which loads the model file, draws
1,000 rows (so lazy imports and first-call costs fall outside the timing), and then times one
sample:

* ``codes``: the model's encoded records only (``model.sampler`` block by block, as the pipeline
  draws them), no decoding;
* ``frame``: ``Synthesizer.sample_chunks(n, chunk)``: records decoded into typed data frames,
  each dropped after it is made (what any consumer of the chunks pays);
* ``csv``: ``Synthesizer.sample_to_csv(path, n, chunk)``: the same rows written to a CSV file
  (what ``synthzoo sample model.szm -n N --out fake.csv --chunk C`` does; the file is deleted).

Reported per run: CPU seconds of the process during the sample (user + system), wall seconds,
rows per CPU second, the peak resident memory of the process (Linux's VmHWM: a worker's own, where ``ru_maxrss`` would
carry over the peak of the parent that fitted the models) and its resident
memory before the timed sample; ``x mst`` is the preset's CPU seconds per row over ``mst``'s in the
same mode, size and tree.  With ``--baseline CHECKOUT`` every sample is also timed by that checkout's
worker (its own code on the same model files), the two back to back in alternating order, so that a
before/after comparison sees the same machine load.  The thread variables are printed with the
table (one thread by default: OpenMP spin-waiting made torch 20-80x slower on the 2-core machine
these figures come from).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")
os.environ.setdefault("JAX_ENABLE_X64", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("SYNTHZOO_DATASETS", ROOT.parent / "shared" / "datasets"))
PRESETS = ["privsyn", "mst", "aim", "privmrf", "rap++", "gsd", "gem", "dpmerf"]
#: Record presets, fitted small (``--record-rows``, ``--record-epochs``): what each trains for.
RECORD = {"ctgan": "epochs", "dp-ctgan": "epochs", "tvae": "epochs", "dp-tvae": "epochs", "pate-gan": "iterations",
          "tabddpm": "epochs", "dp-tabddpm": "epochs", "tablediffusion": "epochs", "tldm": "epochs",
          "dp-tldm": "epochs", "realtabformer": "epochs", "dp-transformer": "epochs"}
#: Presets whose every row costs many network passes: timed at ``--slow-rows``.
SLOW = {"tabddpm", "dp-tabddpm", "tldm", "dp-tldm", "realtabformer", "dp-transformer"}


def _rss_mb() -> float:
    """Current resident memory of this process (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def worker(model_path: str, n: int, chunk: int, mode: str, precision: str = "-") -> dict:
    """One timed sample in this (fresh) process (``precision``: the model's ``sample_precision``, "-" as saved)."""
    import resource

    import numpy as np
    import synthzoo as sz
    from synthzoo import pipeline
    from synthzoo.isolation import peak_rss_mb

    synth = sz.Synthesizer.load(model_path)
    if precision != "-":  # as `sample --precision`: an error for a model without the choice (mst:bfloat16)
        from synthzoo.cli import _set_sample_precision

        _set_sample_precision(synth, precision)
    synth.sample(1000, seed=1)  # warm-up: lazy imports (torch, jax), first-call costs
    rss_before = _rss_mb()
    c0, t0 = _cpu(), time.perf_counter()
    if mode == "codes":
        block = pipeline.SAMPLE_BLOCK
        draw = synth.model.sampler(n, np.random.default_rng(0))
        for k, start in enumerate(range(0, n, block)):
            draw(start, min(block, n - start), np.random.default_rng([0, k]))
    elif mode == "frame":
        for _ in synth.sample_chunks(n, chunk=chunk, seed=0):
            pass
    elif mode == "csv":
        with tempfile.TemporaryDirectory() as d:
            synth.sample_to_csv(Path(d) / "fake.csv", n, chunk=chunk, seed=0, progress=False)
            size_mb = (Path(d) / "fake.csv").stat().st_size / 2 ** 20
    else:
        raise ValueError(mode)
    cpu, wall = _cpu() - c0, time.perf_counter() - t0
    out = {"cpu_s": cpu, "wall_s": wall, "rows_per_cpu_s": n / cpu if cpu > 0 else float("nan"),
           "peak_rss_mb": peak_rss_mb(), "rss_before_mb": rss_before}
    if mode == "csv":
        out["file_mb"] = size_mb
    try:
        import torch
        out["torch_threads"] = torch.get_num_threads()
    except ImportError:  # pragma: no cover
        pass
    return out


def fit_models(presets, models: Path, train_iters: int | None = None, record_rows: int = 3000,
               record_epochs: int = 1) -> None:
    import pandas as pd
    import synthzoo as sz

    models.mkdir(parents=True, exist_ok=True)
    schema = sz.Schema.from_json(DATA / "adult" / "schema.json")
    df = None
    for p in presets:
        path = models / f"{p}.szm"
        if path.exists():
            continue
        if df is None:
            df = pd.read_csv(DATA / "adult" / "adult.csv")
        c0, t0 = _cpu(), time.perf_counter()
        synth = sz.make(p, epsilon=1.0, delta=1e-5, schema=schema, seed=0)
        note, data = "", df
        if train_iters is not None and synth.model.name in ("gn", "dpmerf"):
            synth.model.iters = int(train_iters)
            note = f" (training cut to {train_iters} steps{' per round' if synth.model.name == 'gn' else ''})"
        if p in RECORD:  # only the sampling is timed: the preset's network, briefly trained
            data = df.sample(min(record_rows, len(df)), random_state=0)
            m = synth.model
            if m.name == "tldm":
                m.vae_epochs = m.diffusion_epochs = int(record_epochs)
            elif m.name == "pategan":
                m.iterations, m.warmup_steps = 5, 5
            else:
                m.epochs = int(record_epochs)
            note = (f" (on {len(data):,} rows, " + ("5 rounds" if m.name == "pategan" else
                                                     f"{record_epochs} epoch(s)") + ")")
        synth.fit(data).save(path)
        print(f"# fitted {p}{note} in {time.perf_counter() - t0:.0f} s wall, {_cpu() - c0:.0f} CPU s -> {path}",
              flush=True)


def _count(s: str) -> int:
    return int(float(s))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--rows", default="1e6,1e7", help="comma-separated sample sizes")
    ap.add_argument("--slow-rows", default="2e4", help="comma-separated sample sizes of the presets in SLOW")
    ap.add_argument("--record-rows", type=_count, default=3000, help="rows of adult the record presets fit on")
    ap.add_argument("--record-epochs", type=int, default=1, help="epochs the record presets train")
    ap.add_argument("--modes", default="codes,frame,csv")
    ap.add_argument("--chunk", type=_count, default=500_000, help="rows per chunk (frame and csv modes)")
    ap.add_argument("--models", default=str(Path(tempfile.gettempdir()) / "synthzoo_bench_sample"),
                    help="folder of fitted model files (<preset>.szm), reused when present")
    ap.add_argument("--train-iters", type=int, help="training steps of the generator models (gn per round, "
                                                     "dpmerf); their sampling cost does not depend on it")
    ap.add_argument("--baseline", help="a checkout of another version (e.g. `git worktree add ../base main`): each "
                                       "sample is also timed there, back to back with this tree's (x mst per tree)")
    ap.add_argument("--out", help="also write the table as CSV")
    # MODEL N CHUNK MODE [PRECISION] (an older --baseline checkout's worker takes the first four)
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        w = a.worker
        print(json.dumps(worker(w[0], int(w[1]), int(w[2]), w[3], *w[4:5])))
        return 0

    from synthzoo._threads import thread_settings

    if not (DATA / "adult" / "schema.json").exists():
        print(f"adult not found under {DATA} (set SYNTHZOO_DATASETS)", file=sys.stderr)
        return 2
    runs = [p for p in a.presets.split(",") if p]  # "ctgan:bfloat16": ctgan's model file, sampled in bfloat16
    presets = list(dict.fromkeys(p.split(":")[0] for p in runs))
    rows = [_count(x) for x in a.rows.split(",") if x]
    slow_rows = [_count(x) for x in a.slow_rows.split(",") if x]
    modes = [m for m in a.modes.split(",") if m]
    models = Path(a.models)
    fit_models(presets, models, a.train_iters, a.record_rows, a.record_epochs)
    sizes = {p: slow_rows if p.split(":")[0] in SLOW else rows for p in runs}
    if any(p in SLOW for p in presets) and "mst" in presets:
        sizes["mst"] = sorted(set(rows) | set(slow_rows))  # the reference at every size measured
    trees = {"this": Path(__file__)}
    if a.baseline:  # another checkout's worker, run back to back with this one's: both see the same load
        trees["baseline"] = Path(a.baseline).resolve() / "benchmarks" / "bench_sample.py"
        if not trees["baseline"].exists():
            print(f"--baseline {a.baseline}: no benchmarks/bench_sample.py there", file=sys.stderr)
            return 2
    results = []
    for n in sorted({n for v in sizes.values() for n in v}):
        for mode in modes:
            for p in (p for p in runs if n in sizes[p]):
                order = list(trees.items())
                if len(results) % 2:  # alternate which tree goes first
                    order.reverse()
                for tree, script in order:
                    base, _, precision = p.partition(":")
                    cmd = [sys.executable, str(script), "--worker", str(models / f"{base}.szm"), str(n), str(a.chunk),
                           mode, *([precision] if precision else [])]
                    proc = subprocess.run(cmd, capture_output=True, text=True)
                    if proc.returncode != 0:
                        print(f"# {p} {mode} {n:,} ({tree}): failed\n{proc.stderr[-2000:]}", file=sys.stderr)
                        continue
                    r = {"preset": p, "rows": n, "mode": mode, "tree": tree,
                         **json.loads(proc.stdout.strip().splitlines()[-1])}
                    results.append(r)
                    print(f"# {p:<8} {mode:<6} {n:>11,} rows{' (' + tree + ')' if a.baseline else ''}: "
                          f"{r['cpu_s']:8.1f} CPU s  {r['wall_s']:8.1f} s wall  "
                          f"{r['rows_per_cpu_s']:>10,.0f} rows/CPU s  peak RSS {r['peak_rss_mb']:6.0f} MB "
                          f"(before {r['rss_before_mb']:.0f})", flush=True)
    import pandas as pd

    res = pd.DataFrame(results)
    if res.empty:
        return 1
    ref = res[res["preset"] == "mst"].set_index(["tree", "rows", "mode"])["cpu_s"]
    res["x_mst"] = [r.cpu_s / ref.get((r.tree, r.rows, r.mode), float("nan")) for r in res.itertuples()]
    print(f"\n# threads: {thread_settings()}; torch threads {res.get('torch_threads', pd.Series([None])).max()}; "
          f"chunk {a.chunk:,}; models fitted on adult, epsilon 1, delta 1e-5, seed 0 (record presets: "
          f"{a.record_rows:,} rows, {a.record_epochs} epoch(s))")
    print("| preset | tree | rows | mode | CPU s | wall s | rows / CPU s | CPU us / row | x mst (CPU per row) "
          "| peak RSS MB | RSS before MB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in res.itertuples():
        print(f"| {r.preset} | {r.tree} | {r.rows:,} | {r.mode} | {r.cpu_s:.1f} | {r.wall_s:.1f} | "
              f"{r.rows_per_cpu_s:,.0f} | {1e6 * r.cpu_s / r.rows:,.1f} | {r.x_mst:.2f} | {r.peak_rss_mb:.0f} | "
              f"{r.rss_before_mb:.0f} |")
    if a.out:
        res.to_csv(a.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
