"""Run dpmm's AIM or MST pipeline in dpmm's own environment (never a project dependency): read a
training CSV and the dataset's ``schema.json``, fit, sample, write the synthetic CSV, print one
JSON line.  Called by ``benchmarks/bench_scale.py --peer dpmm``.

    /work/venvs/dpmm/bin/python benchmarks/peers/run_dpmm.py aim TRAIN.csv SCHEMA.json OUT.csv \
        --epsilon 1 --delta 1e-5 [--progress FILE]

The environment (dpmm pins its own jax/numpy, so it gets a venv of its own):

    python3 -m venv /work/venvs/dpmm && /work/venvs/dpmm/bin/pip install dpmm==0.1.9

Same public domain as ours: every categorical column's category list and every numerical
column's bounds come from ``schema.json`` (dpmm's ``domain=`` argument), never from the rows; a
categorical column the schema marks ``missing`` gets a missing category of its own (dpmm would
otherwise fill missing cells with a value sampled from the rows).  Budget as in our presets: a
tenth of epsilon to dpmm's PrivTree binning of numerical columns (``proc_epsilon``), the rest and
all of delta to the mechanism; AIM with the paper's settings (all 2-way marginals, T = 16 d,
1,000 mirror-descent iterations per round, 80 MB model-size cap), ``n_jobs=1`` (one process, so
the CPU seconds are the whole cost).  ``--progress FILE`` appends one JSON line per AIM round
(CPU seconds so far), so a run stopped by the caller's time cap still says how far it got.
"""

import json
import os
import time

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _proc import cpu_s, parser, peak_rss_mb  # noqa: E402  (this folder: the script's own directory)

MISSING = "__missing__"


def public_domain(schema: dict, df: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """dpmm's domain from the schema; missing categorical cells become their own category."""
    domain, df = {}, df.copy()
    for col, spec in schema["columns"].items():
        if spec["type"] == "categorical":
            cats = [str(c) for c in spec["categories"]]
            if spec.get("missing"):
                cats.append(MISSING)
                df[col] = df[col].astype(object).where(df[col].notna(), MISSING)
            df[col] = df[col].astype(str)
            domain[col] = {"categories": cats}
        elif spec["type"] == "numerical":
            if spec.get("missing") and df[col].isna().any():
                raise SystemExit(f"run_dpmm: numerical column {col!r} has missing values; dpmm would fill them "
                                 "from the rows")
            domain[col] = {"lower": spec["lower"], "upper": spec["upper"]}
        else:
            raise SystemExit(f"run_dpmm: column {col!r} of type {spec['type']!r} is not supported")
    return df, domain


def main():
    p = parser()
    a = p.parse_args()
    schema = json.load(open(a.schema))
    df = pd.read_csv(a.train)
    df, domain = public_domain(schema, df)
    n = a.n or len(df)
    c0, t0 = cpu_s(), time.perf_counter()
    if a.method == "aim":
        from dpmm.models.aim import AIM
        from dpmm.pipelines.aim import AIMPipeline as Pipe

        if a.progress:  # one line per round: how far a capped run got
            orig, start = AIM.worst_approximated, [0]

            def traced(self, *args, **kw):
                start[0] += 1
                with open(a.progress, "a") as fh:
                    fh.write(json.dumps({"round": start[0], "cpu_s": round(cpu_s() - c0, 1)}) + "\n")
                return orig(self, *args, **kw)

            AIM.worst_approximated = traced
    else:
        from dpmm.pipelines.mst import MSTPipeline as Pipe
    pipe = Pipe(epsilon=0.9 * a.epsilon, delta=a.delta, proc_epsilon=0.1 * a.epsilon, max_model_size=80, n_jobs=1)
    pipe.fit(df, domain=domain, random_state=np.random.RandomState())
    fit_cpu = cpu_s() - c0
    fit_wall = time.perf_counter() - t0
    fake = pipe.generate(n_records=n)
    for col, spec in schema["columns"].items():
        if spec["type"] == "categorical" and spec.get("missing"):
            fake[col] = fake[col].astype(object).where(fake[col].astype(str) != MISSING, np.nan)
    fake[list(schema["columns"])].to_csv(a.out, index=False)
    import dpmm

    print(json.dumps({"peer": f"dpmm-{a.method}", "version": getattr(dpmm, "__version__", "0.1.9"),
                      "fit_cpu_s": round(fit_cpu, 1), "fit_wall_s": round(fit_wall, 1),
                      "peak_rss_mb": round(peak_rss_mb())}))


if __name__ == "__main__":
    main()
