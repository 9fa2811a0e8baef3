"""Tuning benchmark: does tuning the privsyn pipeline (module choice included) beat its defaults?

Adult at epsilon=1: train/val/test split 64/16/20.  The defaults are fitted on train; the tuner
runs ``--trials`` trials (scored on val) and its best synthesizer is compared with the defaults
on the held-out *test* split — never the validation split — with Du & Li's objective
L = (Wasserstein fidelity + MLA + 3-way query error) / 3 (lower is better).

    OMP_NUM_THREADS=1 python benchmarks/bench_tuning.py --trials 20 --privacy non-private
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import optuna  # noqa: E402

import synthzoo as sz  # noqa: E402
from synthzoo.datasets import load_shared, train_test_split  # noqa: E402
from tuning import score_terms, tune  # noqa: E402

W = (1 / 3, 1 / 3, 1 / 3)


def test_objective(synth, train, test, schema, seeds) -> dict:
    """Mean over ``seeds`` samples of the objective terms against the test split."""
    rows = []
    for s in seeds:
        fake = synth.sample(len(test), seed=s)
        rows.append(score_terms(test, fake, schema, train, W, seed=0))
    out = {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
    out["L"] = sum(w * out[k] for w, k in zip(W, ("fidelity", "mla", "query")))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="adult")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--privacy", default="non-private", choices=["non-private", "accounted"])
    p.add_argument("--storage", default="sqlite:////tmp/synthzoo-bench-tuning.db")
    p.add_argument("--timeout", type=float, default=240.0, help="seconds per trial (hard: its process is killed)")
    p.add_argument("--sample-seeds", type=int, default=3)
    p.add_argument("--study-name", help="resume this study (e.g. after an interruption) instead of a new one")
    p.add_argument("--out", help="write the results as JSON")
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    df, schema = load_shared(a.data)
    rest, test = train_test_split(df, test_size=0.2, seed=0)
    train, val = train_test_split(rest, test_size=0.2, seed=0)
    print(f"{a.data}: train {len(train):,}, val {len(val):,}, test {len(test):,}; epsilon={a.epsilon}", flush=True)
    seeds = range(100, 100 + a.sample_seeds)

    t0 = time.perf_counter()
    default = sz.make("privsyn", epsilon=a.epsilon, schema=schema, seed=0).fit(train)
    d = test_objective(default, train, test, schema, seeds)
    print(f"defaults: fit+score {time.perf_counter() - t0:.0f}s; test {d}", flush=True)

    t0 = time.perf_counter()
    res = tune("privsyn", train, val, epsilon=a.epsilon, schema=schema, n_trials=a.trials, privacy=a.privacy,
               storage=a.storage, study_name=a.study_name or f"bench-{a.data}-{a.privacy}-{int(time.time())}",
               trial_timeout=a.timeout, verbose=True)
    tune_s = time.perf_counter() - t0
    t = test_objective(res.synthesizer, train, test, schema, seeds)
    print(res.summary())
    print(f"tuning: {tune_s:.0f}s for {res.metadata['finished_trials']} trials")
    print(f"test objective L (lower is better): defaults {d['L']:.4f} -> tuned {t['L']:.4f} "
          f"({100 * (d['L'] - t['L']) / d['L']:+.1f}% better)")
    for k in ("fidelity", "mla", "query"):
        print(f"  {k:<9} defaults {d[k]:.4f}  tuned {t[k]:.4f}")
    if a.out:
        Path(a.out).write_text(json.dumps({"defaults": d, "tuned": t, "tune_seconds": tune_s,
                                           "metadata": res.metadata}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
