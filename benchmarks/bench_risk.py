"""Risk insertion on adult (Plasencia et al.): every privacy metric's response to the leaky, overfit
and DP risk models, the canaries' exposure, and the metrics' rank-correlation matrix.

    OMP_NUM_THREADS=1 python benchmarks/bench_risk.py --models leaky overfit dp --max-rows 15000

* leaky: f = 0, 0.2, ..., 1 (a fraction f of the release copied from the training rows);
* overfit: non-private TVAE (Xu et al. 2019) trained f_o = 1, 1.25, ..., 2 times its converged
  length.  The converged length is measured on the members (canaries included): a probe fit of
  ``--probe-epochs`` records its per-epoch training loss (``TVAE.loss_history_``) and
  ``synthzoo.metrics.converged_epochs`` reads off where it settles (10-epoch windows, 1 %);
* dp: the same TVAE under DP-SGD (the dp-tvae preset: its DP batch and epochs) and AIM at
  epsilon = 1, 5, 10, 50, 100.

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
from synthzoo.metrics.risk import LEVELS, correlation_matrix, level_correlation, risk_response  # noqa: E402

DATA = Path(os.environ.get("SYNTHZOO_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


class ConvergedOverfit:
    """The overfit risk model: ``model`` (non-private) trained ``fo`` times its converged length on
    the rows it is fitted on.  The converged length comes from one probe fit of ``probe_epochs``
    (its loss curve, :func:`synthzoo.metrics.converged_epochs`), shared through ``cache`` by every
    level of a sweep, which fits the same rows; ``base_epochs`` fixes it instead."""

    def __init__(self, schema, model: str, fo: float, seed: int, probe_epochs: int, cache: dict,
                 base_epochs: int | None = None, log=print, rtol: float = 0.01):
        self.schema, self.model, self.fo, self.seed = schema, model, float(fo), seed
        self.probe_epochs, self.cache, self.base_epochs, self.log = probe_epochs, cache, base_epochs, log
        self.rtol = rtol

    def _make(self, epochs: int):
        return sz.make(self.model, epsilon=None, schema=self.schema, seed=self.seed,
                       model={**_model(self.model), "epochs": int(epochs)})

    def converged(self, rows) -> int:
        if self.base_epochs:
            return int(self.base_epochs)
        if "epochs" not in self.cache:
            from synthzoo.metrics import converged_epochs
            probe = self._make(self.probe_epochs)
            t = time.process_time()
            probe.fit(rows)
            hist = getattr(probe.model, "loss_history_", None)
            if hist is None:
                raise SystemExit(f"{self.model}: the model records no loss curve; give --base-epochs")
            e = converged_epochs(hist, rtol=self.rtol)
            if e is None:
                raise SystemExit(f"{self.model}: the loss has not converged in {self.probe_epochs} epochs "
                                 f"(last {hist[-3:]}); raise --probe-epochs")
            self.cache.update(epochs=e, history=hist)
            self.log(f"overfit probe: {self.model} converges at epoch {e} of {self.probe_epochs} (loss "
                     f"{hist[0]:.3f} -> {hist[e - 1]:.3f}, {hist[-1]:.3f} at the end; {time.process_time() - t:.0f} CPU s)")
        return self.cache["epochs"]

    def fit(self, rows):
        self.synth = self._make(max(1, round(self.fo * self.converged(rows))))
        self.synth.fit(rows)
        return self

    def sample(self, n):
        return self.synth.sample(n)


def overfit_factory(schema, model: str = "tvae", probe_epochs: int = 600, base_epochs: int | None = None,
                    log=print, rtol: float = 0.01):
    cache = {}
    return lambda fo, seed: ConvergedOverfit(schema, model, fo, seed, probe_epochs, cache, base_epochs, log, rtol)


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
    ap.add_argument("--probe-epochs", type=int, default=600,
                    help="overfit: the probe fit whose loss curve gives the converged length")
    ap.add_argument("--base-epochs", type=int, help="overfit: a fixed converged length instead of the probe's")
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
        run("overfit", overfit_factory(schema, args.overfit_model, args.probe_epochs, args.base_epochs, log),
            LEVELS["overfit"],
            f"overfit-{args.overfit_model}")
    if "dp" in args.models:
        for preset in args.dp_presets:
            run("dp", dp_factory(schema, preset), LEVELS["dp"], f"dp-{preset}" if not preset.startswith("dp-")
                else preset)
    joined = pd.concat(tables, axis=1)
    print("\n# every privacy metric x risk level")
    print(joined.round(3).to_string())
    print("\n# Spearman correlation of each metric with the level, within each risk model")
    print(level_correlation(joined).round(2).to_string())
    print("\n# Spearman correlation of the metrics over all releases")
    print(correlation_matrix(joined).round(2).to_string())
    joined.to_csv(args.out)


if __name__ == "__main__":
    main()
