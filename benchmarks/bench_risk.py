"""Risk insertion on adult (Plasencia et al.): every privacy metric's response to the leaky, overfit
and DP risk models, the canaries' exposure, and the metrics' rank-correlation matrix.

    OMP_NUM_THREADS=1 python benchmarks/bench_risk.py --models leaky overfit dp --max-rows 15000

* leaky: f = 0, 0.2, ..., 1 (a fraction f of the release copied from the training rows);
* overfit: non-private TVAE (Xu et al. 2019) trained f_o = 1 ... 2 times its converged length --
  the preset's 300 epochs, the paper's setting (the model does not expose its loss curve, so the
  converged length is the published one, not one measured here);
* dp: the same TVAE under DP-SGD (the dp-tvae preset) and AIM at epsilon = 1, 5, 10, 50, 100.

Members, control and pool are equal thirds of the (subsampled) table; 100 canaries are added to
the members before every fit.  ``--out`` writes the joined table as CSV (``synthzoo eval --risk``
and the HTML report read it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import synthzoo as sz  # noqa: E402
from synthzoo.core import Schema  # noqa: E402
from synthzoo.metrics.risk import LEVELS, correlation_matrix, risk_response  # noqa: E402

DATA = Path(os.environ.get("SYNTHZOO_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


def overfit_factory(schema, base_epochs: int, model: str = "tvae"):
    return lambda fo, seed: sz.make(model, epsilon=None, schema=schema, seed=seed,
                                    model={**_model(model), "epochs": int(round(fo * base_epochs))})


def dp_factory(schema, preset: str):
    return lambda eps, seed: sz.make(preset, epsilon=float(eps), delta=1e-5, schema=schema, seed=seed)


def _model(preset):
    from synthzoo.presets import preset_config
    m = preset_config(preset)["model"]
    return {"name": m} if isinstance(m, str) else dict(m)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="adult")
    ap.add_argument("--models", nargs="+", default=["leaky", "overfit", "dp"])
    ap.add_argument("--max-rows", type=int, default=15000)
    ap.add_argument("--overfit-model", default="tvae")
    ap.add_argument("--base-epochs", type=int, default=300)
    ap.add_argument("--dp-presets", nargs="+", default=["dp-tvae", "aim"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="risk_response.csv")
    args = ap.parse_args()
    df = pd.read_csv(DATA / args.data / f"{args.data}.csv")
    schema = Schema.from_json(DATA / args.data / "schema.json")
    pd.set_option("display.width", 250)
    tables = []

    def log(s):
        print(f"[{time.strftime('%H:%M:%S')}] {s}", flush=True)

    def run(name, factory, levels, risk_model):
        t = time.process_time()
        tab = risk_response(df, schema, factory, levels, risk_model=risk_model, seed=args.seed,
                            max_rows=args.max_rows, log=log)
        log(f"{risk_model}: {time.process_time() - t:.0f} CPU s (this process)")
        tables.append(tab)
        pd.concat(tables, axis=1).to_csv(args.out)
        print(tab.round(3).to_string(), flush=True)

    if "leaky" in args.models:
        run("leaky", None, LEVELS["leaky"], "leaky")
    if "overfit" in args.models:
        run("overfit", overfit_factory(schema, args.base_epochs, args.overfit_model), LEVELS["overfit"],
            f"overfit-{args.overfit_model}")
    if "dp" in args.models:
        for preset in args.dp_presets:
            run("dp", dp_factory(schema, preset), LEVELS["dp"], f"dp-{preset}" if not preset.startswith("dp-")
                else preset)
    joined = pd.concat(tables, axis=1)
    print("\n# every privacy metric x risk level")
    print(joined.round(3).to_string())
    print("\n# Spearman correlation of the metrics over all releases")
    print(correlation_matrix(joined).round(2).to_string())
    joined.to_csv(args.out)


if __name__ == "__main__":
    main()
