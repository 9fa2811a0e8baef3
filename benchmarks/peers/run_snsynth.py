"""Run smartnoise-synth's MST or AIM in its own environment (never a project dependency): read a
training CSV and the dataset's ``schema.json``, fit, sample, write the synthetic CSV, print one JSON
line.  Called by ``benchmarks/bench_scale.py --peer smartnoise``.

    /work/venvs/snsynth/bin/python benchmarks/peers/run_snsynth.py mst TRAIN.csv SCHEMA.json OUT.csv \
        --epsilon 1 --delta 1e-5

The environment (smartnoise-synth pins its own pandas and opacus; 1.0.8 imports the new private-pgm
API, which the registry's ``mbi`` 1.1.0 provides):

    python3 -m venv /work/venvs/snsynth && /work/venvs/snsynth/bin/pip install torch==2.13.0
    /work/venvs/snsynth/bin/pip install smartnoise-synth==1.0.8 mbi==1.1.0

The public domain, as ours gets it: the table transformer is fitted on a frame built from
``schema.json`` alone (every category of each categorical column, each numerical column's bounds),
never on the rows, so smartnoise reads neither categories nor bounds from them.  Numerical columns
are cut into ``--bins`` equal-width bins between the public bounds (smartnoise's ``BinTransformer``;
data-independent, so no preprocessing budget) and all of epsilon and delta go to the mechanism.
Sampled bins come back as values inside them (smartnoise's inverse transform).
"""

import json
import os
import time

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _proc import cpu_s, parser, peak_rss_mb  # noqa: E402  (this folder: the script's own directory)


def public_transformer(schema: dict, bins: int):
    """A smartnoise ``TableTransformer`` fitted on a frame of public values only."""
    from snsynth.transform import BinTransformer, LabelTransformer, TableTransformer

    cols, parts = list(schema["columns"]), []
    longest = max(len(s.get("categories", [])) for s in schema["columns"].values()) + 1
    frame = {}
    for col, spec in schema["columns"].items():
        nullable = bool(spec.get("missing"))
        if spec["type"] == "categorical":
            cats = [str(c) for c in spec["categories"]] + ([None] if nullable else [])
            frame[col] = (cats * longest)[:longest]
            parts.append(LabelTransformer(nullable=nullable))
        elif spec["type"] == "numerical":
            lo, hi = float(spec["lower"]), float(spec["upper"])
            frame[col] = list(np.linspace(lo, hi, longest))
            parts.append(BinTransformer(bins=bins, lower=lo, upper=hi, nullable=nullable))
        else:
            raise SystemExit(f"run_snsynth: column {col!r} of type {spec['type']!r} is not supported")
    tt = TableTransformer(parts)
    tt.fit(pd.DataFrame(frame)[cols])
    return tt


def main():
    p = parser()
    p.add_argument("--bins", type=int, default=20)
    a = p.parse_args()
    schema = json.load(open(a.schema))
    cols = list(schema["columns"])
    df = pd.read_csv(a.train)[cols]
    for col, spec in schema["columns"].items():  # the categories as the schema spells them
        if spec["type"] == "categorical":
            df[col] = df[col].astype(object).where(df[col].isna(), df[col].astype(str))
    n = a.n or len(df)
    from snsynth import Synthesizer

    c0, t0 = cpu_s(), time.perf_counter()
    tt = public_transformer(schema, a.bins)
    synth = Synthesizer.create(a.method, epsilon=a.epsilon, delta=a.delta)
    synth.fit(df, transformer=tt, preprocessor_eps=0.0)
    fit_cpu, fit_wall = cpu_s() - c0, time.perf_counter() - t0
    fake = synth.sample(n)
    fake = pd.DataFrame(fake, columns=cols) if not isinstance(fake, pd.DataFrame) else fake
    fake[cols].to_csv(a.out, index=False)
    from importlib.metadata import version

    print(json.dumps({"peer": f"smartnoise-{a.method}", "version": version("smartnoise-synth"),
                      "fit_cpu_s": round(fit_cpu, 1), "fit_wall_s": round(fit_wall, 1),
                      "peak_rss_mb": round(peak_rss_mb())}))


if __name__ == "__main__":
    main()
