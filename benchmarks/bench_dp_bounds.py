"""How often ``dp_bounds`` clips more than 2 % of a column, on made-up columns that put mass at 0 or on
the other side of 0 from the bulk (sentinels, zeros of a float count), over many replayed draws.

    OMP_NUM_THREADS=1 python benchmarks/bench_dp_bounds.py [--draws 100] [--rho 2e-4] [--rows 3000]
    OMP_NUM_THREADS=1 python benchmarks/bench_dp_bounds.py --adult ../shared/datasets/adult [--draws 200]

``--adult`` runs ``dp_schema`` on adult instead (epsilon 1, delta 1e-6, the public schema's types and
category lists, ``noise_seed`` 5000 + draw) and counts, per non-negative numerical column, the draws whose
lower bound fell below 0 and below -2 (the other sign's rings answering to noise).

Each draw replays its noise from ``noise_seed`` = draw (the test-only opt-in), so that two versions of
the code compare on the same draws: run it once more with ``PYTHONPATH=<another checkout>`` to measure
that checkout's ``dp_bounds`` (its signature has not changed).  Printed per case: the draws that clip
over 2 %, those that measured no range (a SchemaError), and the median and range of the bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import numpy as np  # noqa: E402


def cases(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "float count, 16 % zeros": (np.where(rng.random(n) < 0.16, 0.0, rng.integers(1, 5, n).astype(float)), False),
        "0-99 score, 12 % -1 sentinel": (np.where(rng.random(n) < 0.12, -1, rng.integers(0, 100, n)).astype(float),
                                         True),
        "negative data, 12 % +1": (np.where(rng.random(n) < 0.12, 1, -rng.integers(1, 100, n)).astype(float), True),
        "100-999, 5 % -9999 sentinel": (np.where(rng.random(n) < 0.05, -9999, rng.integers(100, 1000, n))
                                        .astype(float), True),
        "count 0-20, 60 % zeros": (np.where(rng.random(n) < 0.6, 0, rng.geometric(0.3, n)).astype(float), True),
        "small positive floats": (rng.uniform(0.001, 0.01, n), False),
        "integers 18-89": (rng.integers(18, 90, n).astype(float), True),
        "integers 0-99, no zeros cell of their own": (rng.integers(0, 100, n).astype(float), True),
        "floats 0-50, uniform": (rng.uniform(0.0, 50.0, n), False),
        "integers 1-40, geometric": (np.minimum(rng.geometric(0.12, n), 40).astype(float), True),
    }


def adult(folder: str, draws: int) -> dict:
    """Per non-negative column of adult: draws with a lower bound below 0 and below -2, and the lowest."""
    import pandas as pd

    from synthzoo.core.dpschema import dp_schema

    df = pd.read_csv(os.path.join(folder, "adult.csv"))
    with open(os.path.join(folder, "schema.json")) as f:
        public = json.load(f)["columns"]
    kinds = {c: ({"type": "numerical", "integer": True} if p.get("type") == "numerical"
                 else {"type": "categorical", "categories": p["categories"]}) for c, p in public.items()}
    lows: dict[str, list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # every draw warns that its noise is replayable
        for i in range(draws):
            schema, _ = dp_schema(df, kinds, epsilon=1.0, delta=1e-6, noise_seed=5000 + i)
            for col in schema:
                if col.kind == "numerical" and df[col.name].min() >= 0:
                    lows.setdefault(col.name, []).append(float(col.lower))
    out = {c: {"below_0": int(np.sum(np.array(v) < 0)), "below_-2": int(np.sum(np.array(v) < -2)),
               "lowest": min(v)} for c, v in lows.items()}
    out["all columns"] = {k: sum(c[k] for c in out.values()) for k in ("below_0", "below_-2")}
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--rho", type=float, default=2e-4, help="zCDP budget of one column's bounds")
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--adult", metavar="FOLDER", help="adult's folder (adult.csv, schema.json): dp_schema there")
    a = ap.parse_args(argv)

    import synthzoo
    from synthzoo._threads import thread_settings
    from synthzoo.core.dpschema import dp_bounds
    from synthzoo.core.errors import SchemaError
    from synthzoo.core.privacy.ledger import PrivacyLedger

    out = {"code": os.path.dirname(synthzoo.__file__), "rows": a.rows, "rho": a.rho, "draws": a.draws,
           "threads": thread_settings(), "cases": {}}
    cpu = time.process_time()
    if a.adult:
        out.update(rows=None, rho=None, epsilon=1.0, delta=1e-6, adult=adult(a.adult, a.draws))
        del out["cases"]
        out["cpu_s"] = round(time.process_time() - cpu, 2)
        print(json.dumps(out, indent=1))
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # every draw warns that its noise is replayable
        for name, (v, integer) in cases(a.rows).items():
            over, none, lows, highs = 0, 0, [], []
            for i in range(a.draws):
                budget = PrivacyLedger(1.0, 1e-6, noise_seed=i).stage("bounds", 1.0)
                try:
                    lo, hi = dp_bounds(v, budget, a.rho, integer=integer, name=name)
                except SchemaError:  # no bucket above the threshold: the documented error
                    none += 1
                    continue
                over += bool(np.mean((v < lo) | (v > hi)) > 0.02)
                lows.append(lo)
                highs.append(hi)
            out["cases"][name] = {"draws_over_2pct": over, "draws_without_a_range": none,
                                  "lower_median": float(np.median(lows)) if lows else None,
                                  "lower_range": [float(min(lows)), float(max(lows))] if lows else None,
                                  "upper_median": float(np.median(highs)) if highs else None,
                                  "upper_max": float(max(highs)) if highs else None,
                                  # the price of not clipping: the range over the data's, log2, mean over draws
                                  "log2_width": round(float(np.mean(np.log2((np.array(highs) - np.array(lows))
                                                                            / np.ptp(v)))), 3) if lows else None}
    out["cpu_s"] = round(time.process_time() - cpu, 2)
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
