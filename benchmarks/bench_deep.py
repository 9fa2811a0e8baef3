"""Record models side by side with their peer libraries, on adult (80/20 split, seed 0) or another
shared table (``--dataset hmeq``).

    OMP_NUM_THREADS=1 python benchmarks/bench_deep.py --epochs 50
    OMP_NUM_THREADS=1 python benchmarks/bench_deep.py --methods dp-ctgan,snsynth-dpctgan --epsilon 1
    OMP_NUM_THREADS=1 python benchmarks/bench_deep.py --dataset housing --methods dp-tvae,dp-tvae:prior_share=0 --epochs 0

A method of ours may carry model parameters after its preset, ``PRESET:NAME=VALUE[:NAME=VALUE]``
(values read as JSON), so that an ablation runs beside the preset in one command.

Ours (any preset: `ctgan`, `dp-ctgan`, `tabddpm`, `aim`, `privsyn`, ...) run in a worker process each
(synthzoo.isolation: CPU seconds and peak memory of the fit); the peers run in the benchmark's own
environment, never a project dependency.  Create it once:

    python3 -m venv .bench-venv
    .bench-venv/bin/pip install torch==2.13.0        # the CPU build on disk; an open range pulls CUDA
    .bench-venv/bin/pip install ctgan smartnoise-synth

(`--venv` points elsewhere).  Every synthetic table has as many rows as the training split and is
scored by the project's metrics against the held-out 20 %: 2-way TVD (10 quantile bins),
Wasserstein fidelity (Du & Li; 1,000-row transport), 3-way query error, and the macro F1 of
LightGBM trained on it; HALF (half of the training rows) and INDEPENDENT (columns resampled alone)
are the reference rows.  ``--risk`` adds DCR, identical-match share and DOMIAS against the training
rows, and the singling-out risk (held-out rows as the control); ``--mds K`` the membership
disclosure score of our methods (K shadow fits each); ``--runs K`` repeats every fit with seeds
0..K-1 and prints each score's mean and standard deviation.  Thread settings and the machine are printed
with the table.
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

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
PEERS = {"sdv-ctgan", "sdv-tvae", "snsynth-dpctgan", "snsynth-pategan", "rtf-realtabformer"}
#: Our presets named after a non-private method run once, without privacy; every other preset of ours
#: (``sz.available_presets()``: dp-*, pate-gan, the marginal presets, ...) runs at each ``--epsilon``.
NON_PRIVATE = {"ctgan", "tvae", "tabddpm", "tldm", "realtabformer"}


def method_spec(method: str) -> tuple[str, dict]:
    """``"dp-tvae:prior_share=0"`` as ``("dp-tvae", {"prior_share": 0})``: a preset and model parameters."""
    preset, *pairs = method.split(":")
    over = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"{method!r}: model parameters go as PRESET:NAME=VALUE, got {pair!r}")
        try:
            over[key] = json.loads(value)
        except json.JSONDecodeError:
            over[key] = value
    return preset, over


def make_ours(method: str, schema, epsilon, epochs, seed: int):
    import synthzoo as sz

    preset, params_over = method_spec(method)
    cfg = sz.presets.preset_config(preset)
    model = cfg["model"] if isinstance(cfg["model"], dict) else {"name": cfg["model"]}
    params = sz.core.base.REGISTRY["model"][model["name"]]().get_params()
    # TLDM trains in two stages: --epochs sets both
    keys = [k for k in ("epochs", "vae_epochs", "diffusion_epochs") if k in params]
    model = {**model, **({k: int(epochs) for k in keys} if epochs else {}), **params_over}
    return sz.make(preset, epsilon=epsilon, schema=schema, seed=seed, model=model)


def mds_ours(preset: str, train: pd.DataFrame, schema_dict: dict, epsilon, epochs, n_shadow: int) -> float:
    """In a worker: the membership disclosure score of one of our presets (Du & Li's shadow models on
    halves of the training rows; DS scored on 2,000 records)."""
    import warnings

    import synthzoo as sz
    from synthzoo.metrics import membership_disclosure_score

    warnings.simplefilter("ignore")
    schema = sz.Schema.from_dict(schema_dict)
    return membership_disclosure_score(train, schema, lambda s: make_ours(preset, schema, epsilon, epochs, s),
                                       n_shadow=n_shadow, max_records=2000)


def fit_ours(preset: str, train: pd.DataFrame, schema_dict: dict, epsilon, epochs, n: int, seed: int = 0) -> dict:
    """In a worker: fit one of our presets and sample ``n`` rows (module-level for the worker)."""
    import warnings

    import synthzoo as sz

    warnings.simplefilter("ignore")
    synth = make_ours(preset, sz.Schema.from_dict(schema_dict), epsilon, epochs, seed=seed)
    t0 = time.perf_counter()
    synth.fit(train)
    t1, c1 = time.perf_counter(), time.process_time()
    fake = synth.sample(n)
    return {"fake": fake, "fit_wall_s": t1 - t0, "sample_wall_s": time.perf_counter() - t1,
            "sample_cpu_s": time.process_time() - c1, "spent": list(synth.privacy_spent())}


def run_peer(method, train, schema, epsilon, epochs, venv: Path, seed: int = 0) -> tuple[pd.DataFrame | None, dict]:
    py = venv / "bin" / "python"
    if not py.exists():
        return None, {"status": f"no benchmark environment at {venv} (see this file's docstring)"}
    discrete = [c.name for c in schema if c.kind == "categorical"]
    with tempfile.TemporaryDirectory() as d:
        tr, out = Path(d) / "train.csv", Path(d) / "fake.csv"
        train.to_csv(tr, index=False)
        cmd = [str(py), str(ROOT / "benchmarks/peers/run_peer.py"), method, str(tr), str(out),
               "--epochs", str(epochs), "--discrete", json.dumps(discrete), "--seed", str(seed)]
        if epsilon is not None:
            cmd += ["--epsilon", str(epsilon)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            return None, {"status": "error: " + (r.stderr.strip().splitlines() or ["?"])[-1][:200]}
        info = json.loads(r.stdout.strip().splitlines()[-1])
        fake = pd.read_csv(out)
    return fake, {"status": "ok", "fit_cpu_s": info["fit_cpu_s"], "fit_wall_s": info["fit_wall_s"]}


def score(train, test, fake, schema, risk: bool) -> dict:
    import warnings

    from synthzoo.metrics import ml_scores, query_error_3way, tvd_1way, tvd_2way, wasserstein_fidelity

    warnings.simplefilter("ignore")
    fake = fake.reindex(columns=train.columns).copy()
    for c in schema:  # peers may return floats in integer columns or values past the bounds: as a user would
        if c.kind == "numerical":
            v = pd.to_numeric(fake[c.name], errors="coerce").clip(c.lower, c.upper)
            fake[c.name] = v.round() if c.integer else v
    out = {"tvd_1way": float(np.mean(tvd_1way(test, fake, schema))), "tvd_2way": tvd_2way(test, fake, schema), "wasserstein": wasserstein_fidelity(test, fake, schema, max_rows=1000),
           "query_3way": query_error_3way(test, fake, schema)}
    ml = ml_scores(train, fake, test, schema, evaluators=("gbm",))
    got = dict(zip(ml["score"], ml["synthetic"]))
    if "r2" in got:  # a regression target (housing): R^2 in place of F1
        out["ml_r2"] = float(got["r2"])
    else:
        out["ml_f1"] = float(got.get("f1", np.nan))
    if risk:
        from synthzoo.metrics import dcr_risk, domias_auc, identical_match_share

        out["dcr_risk"] = dcr_risk(train, fake, test, schema)
        out["identical_match"] = identical_match_share(train, fake, schema)
        out["domias_auc"] = domias_auc(train, fake, test, schema)
        from synthzoo.metrics import singling_out_risk

        out["singling_out"] = singling_out_risk(train, fake, test, schema)["risk"]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--methods", default="ctgan,sdv-ctgan,tvae,sdv-tvae",
                   help="comma-separated: our presets (PRESET:NAME=VALUE sets a model parameter) and peers")
    p.add_argument("--dataset", default="adult", choices=("adult", "hmeq", "housing"),
                   help="a table of ../shared/datasets")
    p.add_argument("--epsilon", default="1", help="comma-separated epsilons for the DP methods")
    p.add_argument("--epochs", type=int, default=50,
                   help="epochs for every model that has them (ours and the peers' alike; both of TLDM's stages); "
                        "0 keeps each preset's own")
    p.add_argument("--venv", default=str(ROOT / ".bench-venv"))
    p.add_argument("--risk", action="store_true")
    p.add_argument("--mds", type=int, default=0, metavar="K",
                   help="also the membership disclosure score of our methods with K shadow models (K fits each)")
    p.add_argument("--no-references", action="store_true")
    p.add_argument("--train-rows", type=int, default=0, metavar="K",
                   help="fit on K rows drawn from the training split (seed 0): overfitting runs at many epochs")
    p.add_argument("--runs", type=int, default=1, metavar="K",
                   help="fit every method K times (seeds 0..K-1, ours and the peers' alike) and print the mean "
                        "and standard deviation of each score: GAN runs vary by a few hundredths")
    p.add_argument("--out", help="CSV of the table")
    a = p.parse_args(argv)
    import synthzoo as sz
    from synthzoo._threads import thread_settings
    from synthzoo.isolation import run_isolated
    from synthzoo.metrics import half_split, independent_sample

    df, schema = sz.datasets.load_shared(a.dataset)
    train, test = sz.datasets.train_test_split(df, test_size=0.2, seed=0)
    if a.train_rows:
        train = train.sample(a.train_rows, random_state=0)
    print(f"# {a.dataset}: {len(train):,} train / {len(test):,} test rows; {thread_settings()}; "
          f"python {sys.version.split()[0]}", flush=True)
    rows = []
    if not a.no_references:
        h, _ = half_split(train, 0)
        for label, fake in (("HALF", h), ("INDEPENDENT", independent_sample(train, seed=0))):
            rows.append({"method": label, "epsilon": "-", **score(train, test, fake, schema, a.risk)})
            print(rows[-1], flush=True)
    epsilons = [float(e) for e in a.epsilon.split(",") if e]
    ours = set(sz.available_presets())
    runs = [(m, eps, seed) for m in [x for x in a.methods.split(",") if x]
            for eps in (epsilons if method_spec(m)[0] not in NON_PRIVATE and not m.startswith(("sdv-", "rtf-")) else [None])
            for seed in range(a.runs)]
    for m, eps, seed in runs:
        row = {"method": m, "epsilon": "-" if eps is None else eps, "seed": seed}
        if method_spec(m)[0] in ours:
            r = run_isolated(f"{__name__}:fit_ours" if __name__ != "__main__" else "bench_deep:fit_ours",
                             (m, train, schema.to_dict(), eps, a.epochs, len(train), seed))
            if r.status != "ok":
                row["status"] = f"{r.status}: {r.reason}"
                fake = None
            else:
                fake = r.value["fake"]
                # the worker's CPU seconds less its sampling's (peers time their fit alone too)
                row.update(status="ok", fit_cpu_s=r.cpu_s - r.value["sample_cpu_s"], fit_wall_s=r.value["fit_wall_s"],
                           peak_rss_mb=r.peak_rss_mb, eps_spent=r.value["spent"][0],
                           sample_cpu_s=r.value["sample_cpu_s"])
        elif m in PEERS:
            fake, info = run_peer(m, train, schema, eps, a.epochs, Path(a.venv), seed)
            row.update(info)
        else:
            raise SystemExit(f"unknown method {m!r}; ours: {sorted(ours)}, peers: {sorted(PEERS)}")
        if fake is not None:
            row.update(score(train, test, fake, schema, a.risk))
        if a.mds and method_spec(m)[0] in ours:
            r = run_isolated(f"{__name__}:mds_ours" if __name__ != "__main__" else "bench_deep:mds_ours",
                             (m, train, schema.to_dict(), eps, a.epochs, a.mds))
            row["mds"] = r.value if r.status == "ok" else f"{r.status}: {r.reason}"
        rows.append(row)
        print(row, flush=True)
    res = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(res.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    if a.runs > 1:
        cols = [c for c in ("tvd_1way", "tvd_2way", "wasserstein", "query_3way", "ml_f1", "ml_r2", "dcr_risk", "identical_match",
                            "domias_auc", "singling_out", "fit_cpu_s") if c in res]
        g = res.assign(epsilon=res["epsilon"].astype(str)).groupby(["method", "epsilon"], sort=False)[cols]
        mean, sd = g.mean(), g.std()
        summary = mean.map(lambda x: f"{x:.4f}") + " ± " + sd.map(lambda x: f"{x:.4f}")
        print(f"\n# mean ± sd over {a.runs} runs (seeds 0..{a.runs - 1})")
        with pd.option_context("display.width", 250, "display.max_columns", 30):
            print(summary.to_string())
    if a.out:
        res.to_csv(a.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
