"""Agreement of our metrics with the reference implementations they are named after:
Anonymeter's singling-out / linkability / inference risks and SynthEval's metric library, on the
HALF / INDEPENDENT / COPIED50 / COPY / privsyn releases of adult and hmeq (80/20 split, seed 0;
complete rows only -- both references fail on or mishandle missing values).

    OMP_NUM_THREADS=1 python benchmarks/bench_crosscheck.py --anonymeter --data adult hmeq
    OMP_NUM_THREADS=1 python benchmarks/bench_crosscheck.py --syntheval --data adult hmeq
    OMP_NUM_THREADS=1 python benchmarks/bench_crosscheck.py --auroc --data adult hmeq

``--auroc`` prints SynthEval's AUROC difference next to ours with the schema's category codes (as
``evaluate`` computes it), with the codes SynthEval's encoder gives (categories cut to those the
tables hold), and both codings with converged logistic regressions (``max_iter=10_000``).

The reference packages: ``pip install 'synthzoo[crosscheck]'`` (syntheval installs next to our
pins; anonymeter 1.1 pins numpy<1.27 but runs with numpy 2 -- ``pip install --no-deps anonymeter``
plus ``numba polars polars-runtime-32 'pyarrow<22'`` (polars 2's compiled part), as /work/venvs/xcheck was built:
``python -m venv --system-site-packages /work/venvs/xcheck`` and those two pip commands).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from synthzoo.core import Schema  # noqa: E402
from synthzoo.metrics import crosscheck as X  # noqa: E402

DATA = Path(os.environ.get("SYNTHZOO_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


def load(name: str, seed: int = 0, max_rows: int | None = None):
    df = pd.read_csv(DATA / name / f"{name}.csv")
    schema = Schema.from_json(DATA / name / "schema.json")
    idx = np.random.default_rng(seed).permutation(len(df))
    n = int(0.8 * len(df))
    train, test = df.iloc[idx[:n]].reset_index(drop=True), df.iloc[idx[n:]].reset_index(drop=True)
    import synthzoo as sz
    synth = sz.make("privsyn", epsilon=1.0, delta=1e-5, schema=schema, seed=seed)
    synth.fit(train)
    fake = synth.sample(len(train))
    train, test, fake = X.complete_rows(train, test, fake)
    if max_rows:
        train, fake = train.iloc[:max_rows], fake.iloc[:max_rows]
    return train, test, fake, schema


def anonymeter_table(name: str, seeds: int, args) -> pd.DataFrame:
    train, test, fake, schema = load(name, max_rows=args.max_rows)
    rows = []
    for rel, (members, release) in X.releases(train, privsyn=fake).items():
        sch = X.schema_for([members, release, test], schema)
        rng = np.random.default_rng(0)
        perm = list(rng.permutation(schema.names))
        aux = (perm[: len(perm) // 2], perm[len(perm) // 2:])
        for s in range(seeds):
            t = time.process_time()
            ref = X.anonymeter_risks(members, release, test, sch, aux_cols=aux, seed=s,
                                     singling_out_attempts=args.attempts)
            t_ref = time.process_time() - t
            t = time.process_time()
            ours = X.our_anonymeter_risks(members, release, test, sch, aux_cols=aux, seed=s,
                                          max_attempts=args.attempts)
            ours_fit = X.our_anonymeter_risks(members, release, test, sch, aux_cols=aux, seed=s,
                                              size_correction="fit", max_attempts=args.attempts)
            t_ours = time.process_time() - t
            for m in ("singling_out", "linkability", "inference"):
                rows.append({"data": name, "release": rel, "seed": s, "metric": m,
                             "anonymeter": ref[m]["risk"], "anon_ci": f"[{ref[m]['ci_low']:.3f}, {ref[m]['ci_high']:.3f}]",
                             "ours": ours[m]["risk"], "ours_ci": f"[{ours[m]['ci_low']:.3f}, {ours[m]['ci_high']:.3f}]",
                             "ours_fit": ours_fit[m]["risk"] if m == "singling_out" else np.nan,
                             "tau_train": f"{ref[m]['tau_train']:.3f}/{ours[m]['tau_train']:.3f}",
                             "tau_control": f"{ref[m]['tau_control']:.3f}/{ours[m]['tau_control']:.3f}",
                             "cpu_ref": t_ref, "cpu_ours": t_ours})
            print(pd.DataFrame(rows[-3:]).to_string(index=False, float_format=lambda x: f"{x:.3f}"), flush=True)
    return pd.DataFrame(rows)


def syntheval_table(name: str, args) -> pd.DataFrame:
    train, test, fake, schema = load(name, max_rows=args.max_rows)
    rows = []
    for rel, (members, release) in X.releases(train, privsyn=fake).items():
        sch = X.schema_for([members, release, test], schema)
        t = time.process_time()
        ref = X.syntheval_reference(members, release, sch, holdout=test)
        t_ref = time.process_time() - t
        t = time.process_time()
        ours = X.our_syntheval_metrics(members, release, sch, holdout=test)
        t_ours = time.process_time() - t
        for m in X.SYNTHEVAL_METRICS:
            rows.append({"data": name, "release": rel, "metric": m, "syntheval": ref[m], "ours": ours[m],
                         "diff": ours[m] - ref[m]})
        rows.append({"data": name, "release": rel, "metric": "(cpu s)", "syntheval": t_ref, "ours": t_ours,
                     "diff": np.nan})
        print(pd.DataFrame(rows[-len(X.SYNTHEVAL_METRICS) - 1:]).to_string(index=False,
                                                                              float_format=lambda x: f"{x:.4f}"),
              flush=True)
    return pd.DataFrame(rows)


def auroc_table(name: str, args) -> pd.DataFrame:
    from synthzoo.metrics.ml import auroc_difference
    train, test, fake, schema = load(name, max_rows=args.max_rows)
    rows = []
    for rel, (members, release) in X.releases(train, privsyn=fake).items():
        frames = [members, release, test]
        sch = X.schema_for(frames, schema)
        obs = X.schema_for(frames, schema, categories="observed")
        ref = X.syntheval_reference(members, release, sch, holdout=test, metrics=["auroc_diff"])
        row = {"data": name, "release": rel, "syntheval": ref["auroc_diff"]}
        for label, s in (("schema", sch), ("observed", obs)):
            for it in (100, 10_000):
                r = auroc_difference(members, release, test, s, max_iter=it)
                row[f"{label}_{it}"] = r["auroc_diff"]
                row[f"{label}_{it}_real/syn"] = f"{r['auroc_real']:.4f}/{r['auroc_synthetic']:.4f}"
        row["unused categories"] = ", ".join(f"{c.name}: {sorted(set(c.categories) - set(obs[c.name].categories))}"
                                             for c in schema.columns if c.kind == "categorical"
                                             and len(obs[c.name].categories) < len(c.categories))
        rows.append(row)
        print(pd.DataFrame(rows[-1:]).to_string(index=False, float_format=lambda x: f"{x:.4f}"), flush=True)
    return pd.DataFrame(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--anonymeter", action="store_true")
    ap.add_argument("--syntheval", action="store_true")
    ap.add_argument("--auroc", action="store_true", help="AUROC difference: category codings and convergence")
    ap.add_argument("--data", nargs="+", default=["adult", "hmeq"])
    ap.add_argument("--seeds", type=int, default=3, help="anonymeter: seeds per release")
    ap.add_argument("--attempts", type=int, default=1_000_000, help="singling-out candidate predicates, at most")
    ap.add_argument("--max-rows", type=int, help="cap the training and synthetic rows (quick checks)")
    ap.add_argument("--out", help="CSV of the tables")
    args = ap.parse_args()
    pd.set_option("display.width", 250)
    tables = []
    for name in args.data:
        if args.anonymeter:
            tables.append(anonymeter_table(name, args.seeds, args))
        if args.syntheval:
            tables.append(syntheval_table(name, args))
        if args.auroc:
            tables.append(auroc_table(name, args))
    if args.out and tables:
        pd.concat(tables).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
