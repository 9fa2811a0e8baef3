"""DP-TLDM's membership-inference suite against our record models, without and with DP.

    OMP_NUM_THREADS=1 python benchmarks/bench_attacks.py --presets tabddpm dp-tabddpm tldm dp-tldm ctgan dp-ctgan
    OMP_NUM_THREADS=1 python benchmarks/bench_attacks.py --members 500 --epochs 2000   # overfitting regime
    OMP_NUM_THREADS=1 python benchmarks/bench_attacks.py --groundhog tvae dp-tvae --shadows 20

No-box attacks (closest distance Hamming / L2, KDE density, DOMIAS with KDE and with 1-NN): each
preset is fitted on ``--members`` rows of adult (seed 0; DP presets at ``--epsilon``, delta 1e-5,
their preset epochs unless ``--dp-epochs``; ``--epochs`` sets the non-private presets' epochs, both
of TLDM's stages), samples as many rows, and up to 1,000 members and as many held-out rows are scored;
AUC and TPR at 1 % / 0.1 % FPR per attack and the maximum over attacks (0.5 / 0.01 / 0.001 =
blind guess).  ``--groundhog`` runs the shadow-model protocol of Stadler et al. on the given presets
(``--shadows`` fits on ``--shadow-rows``-row training sets, five outlier targets): Groundhog with
naive / histogram / correlation features and the no-box attacks on the same shadow releases.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_deep.make_ours
import synthzoo as sz  # noqa: E402
from synthzoo.core import Schema  # noqa: E402
from synthzoo.metrics.mia import groundhog_attack, membership_attacks  # noqa: E402

DATA = Path(os.environ.get("SYNTHZOO_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


def make(preset, schema, epsilon, seed, epochs=None):
    """``preset`` at ``epsilon`` (DP presets, named ``dp-*``) or without privacy; ``epochs`` overrides
    every epoch count the model has (both of TLDM's stages), as ``bench_deep.py --epochs`` does."""
    from bench_deep import make_ours
    return make_ours(preset, schema, epsilon if preset.startswith("dp-") else None, epochs, seed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="adult")
    ap.add_argument("--presets", nargs="*", default=["tabddpm", "dp-tabddpm", "tldm", "dp-tldm", "ctgan", "dp-ctgan"])
    ap.add_argument("--members", type=int, default=10000)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--epochs", type=int, help="the non-private presets' epochs (both of TLDM's stages)")
    ap.add_argument("--dp-epochs", type=int, help="the DP presets' epochs (default: each preset's own)")
    ap.add_argument("--groundhog", nargs="*", default=[])
    ap.add_argument("--shadows", type=int, default=20)
    ap.add_argument("--shadow-rows", type=int, default=1000)
    ap.add_argument("--shadow-epochs", type=int, help="epochs of the shadow fits (default the preset's)")
    ap.add_argument("--out", help="CSV of the tables")
    args = ap.parse_args()
    df = pd.read_csv(DATA / args.data / f"{args.data}.csv")
    schema = Schema.from_json(DATA / args.data / "schema.json")
    idx = np.random.default_rng(0).permutation(len(df))
    members = df.iloc[idx[: args.members]].reset_index(drop=True)
    holdout = df.iloc[idx[args.members: args.members + 5000]].reset_index(drop=True)
    pd.set_option("display.width", 200)
    from synthzoo._threads import thread_settings
    print(f"# {args.data}: {len(members):,} members / {len(holdout):,} holdout rows; {thread_settings()}", flush=True)
    presets = list(args.presets)
    rows = []
    for p in presets:
        if p not in sz.available_presets():
            print(f"# {p}: no such preset, skipped", flush=True)
            continue
        t = time.process_time()
        synth = make(p, schema, args.epsilon, 0, args.dp_epochs if p.startswith("dp-") else args.epochs)
        synth.fit(members)
        fake = synth.sample(len(members))
        t_fit = time.process_time() - t
        t = time.process_time()
        tab = membership_attacks(members, fake, holdout, schema, n_targets=1000, seed=0)
        t_att = time.process_time() - t
        tab.insert(0, "preset", p)
        tab["epsilon"] = args.epsilon if p.startswith("dp-") else np.inf
        tab["fit_cpu_s"], tab["attack_cpu_s"] = t_fit, t_att
        rows.append(tab)
        print(tab.to_string(index=False, float_format=lambda x: f"{x:.3f}"), flush=True)
    for p in args.groundhog:
        t = time.process_time()
        tab = groundhog_attack(df, schema, lambda s, p=p: make(p, schema, args.epsilon, s, args.shadow_epochs),
                               n_targets=5, n_shadow=args.shadows, train_size=args.shadow_rows, seed=0,
                               log=lambda s: print(f"  {p}: {s}", flush=True))
        tab.insert(0, "preset", f"{p} (shadow)")
        tab["epsilon"] = args.epsilon if p.startswith("dp-") else np.inf
        tab["fit_cpu_s"], tab["attack_cpu_s"] = time.process_time() - t, np.nan
        rows.append(tab)
        print(tab.to_string(index=False, float_format=lambda x: f"{x:.3f}"), flush=True)
    if rows:
        out = pd.concat(rows, ignore_index=True)
        summary = out[out["attack"].str.startswith("max")][["preset", "epsilon", "attack", "auc", "tpr@0.01",
                                                            "tpr@0.001"]]
        print("\n# maximum over attacks (blind guess: AUC 0.5, TPR 0.01 / 0.001)")
        print(summary.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        if args.out:
            out.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
