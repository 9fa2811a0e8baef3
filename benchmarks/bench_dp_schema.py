"""What ``dp_schema`` clips and merges, over many secret-noise draws, on the COMPAS-like table.

    OMP_NUM_THREADS=1 python benchmarks/bench_dp_schema.py [--draws 2000] [--first-seed 1000] \
        [--epsilon 0.1] [--delta 1e-6] [--no-categories] [--rows 7214]

``make_compas_like(rows)`` (no files needed) is described by what a data dictionary publishes
(``public_kinds``: types, integer-ness, date resolution, and the category lists unless
``--no-categories``); ``dp_schema`` then measures every bound (and, without lists, the categories)
at ``--epsilon``.  Each draw replays the noise from ``noise_seed`` = first-seed + i -- the
test-only opt-in, so that two versions of the code can be compared on the same draws.  Printed: the
draws in which each column lost more than 2 % of its values (clipped or merged,
``clipped_shares``), the worst and mean share per column, the draws in which any column did, and
the mean log2 of each bounded column's range over the data's own range (the price of not clipping);
then the other side of declaring ``missing`` on evidence (``--missing-z`` standard deviations): the
draws in which a column's missing values, hidden by the noise, were more than 2 % of its rows
(``filled_shares``: ``conform`` fills them), and the draws that declared missing values for a column
that has none (the release may then invent some).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--epsilon", type=float, default=0.1)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--rows", type=int, default=7214)
    ap.add_argument("--no-categories", action="store_true", help="publish no category lists")
    ap.add_argument("--limit", type=float, default=0.02, help="share of a column counted as damage")
    ap.add_argument("--missing-z", type=float, default=2.0,
                    help="dp_schema's missing_z: standard deviations of evidence that declare missing values")
    a = ap.parse_args(argv)

    from synthzoo._threads import thread_settings
    from synthzoo.core.dpschema import clipped_shares, dp_schema, filled_shares, public_kinds
    from synthzoo.core.schema import numeric_values
    from synthzoo.datasets import make_compas_like

    df, public = make_compas_like(a.rows)
    kinds = public_kinds(public, categories=not a.no_categories)
    lost, filled, declared, width = [], [], [], {}
    has_missing = {c for c in df.columns if df[c].isna().any()}
    cpu = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # every draw warns that its noise is replayable
        for i in range(a.draws):
            schema, _ = dp_schema(df, kinds, epsilon=a.epsilon, delta=a.delta, noise_seed=a.first_seed + i,
                                  missing_z=a.missing_z)
            lost.append(clipped_shares(df, schema))
            filled.append(filled_shares(df, schema))
            declared.append({c.name: c.missing for c in schema if c.name not in has_missing})
            for col in schema:
                if col.kind != "categorical":
                    v = numeric_values(df[col.name], col)
                    v = v[~np.isnan(v)]
                    width.setdefault(col.name, []).append(np.log2((col.upper - col.lower) / max(v.max() - v.min(), 1.0)))
    cpu = time.process_time() - cpu
    r = pd.DataFrame(lost) * 100
    over = (r > 100 * a.limit)
    f = pd.DataFrame(filled) * 100
    f_over = f > 100 * a.limit
    false_na = pd.DataFrame(declared)
    out = {"rows": a.rows, "draws": a.draws, "noise_seeds": [a.first_seed, a.first_seed + a.draws - 1],
           "epsilon": a.epsilon, "delta": a.delta, "category_lists": not a.no_categories, "missing_z": a.missing_z,
           "cpu_s_per_draw": round(cpu / max(a.draws, 1), 4), "threads": thread_settings(),
           "draws_over_limit_per_column": {k: int(v) for k, v in over.sum().items() if v},
           "draws_with_any_column_over_limit": int(over.any(axis=1).sum()),
           "worst_pct": {k: round(float(v), 2) for k, v in r.max().items() if v > 0},
           "mean_pct": {k: round(float(v), 3) for k, v in r.mean().items() if v > 0},
           # the other damage: missing values the noise hid, which conform fills (share of all rows), and
           # columns without missing values declared with them (the release may invent some)
           "draws_filling_over_limit_per_column": {k: int(v) for k, v in f_over.sum().items() if v},
           "draws_filling_or_clipping_over_limit": int((over | f_over).any(axis=1).sum()),
           "columns_with_missing_values": sorted(has_missing),
           "draws_declaring_missing_without_any": int(false_na.any(axis=1).sum()) if len(false_na.columns) else 0,
           "false_missing_declarations_per_column": {k: int(v) for k, v in false_na.sum().items() if v},
           "mean_log2_range_over_data_range": {k: round(float(np.mean(v)), 2) for k, v in width.items()}}
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
