"""Tuning benchmark: does tuning the privsyn pipeline (module choice included) beat its defaults?
And, for ``--privacy accounted``, what does the release and its storage hold?

Train/val/test split 64/16/20.  The defaults are fitted on train; the tuner runs ``--trials``
trials (scored on val) and its best synthesizer is compared with the defaults on the held-out
*test* split — never the validation split — with Du & Li's objective
L = (Wasserstein fidelity + MLA + 3-way query error) / 3 (lower is better).

    OMP_NUM_THREADS=1 python benchmarks/bench_tuning.py --trials 20 --privacy non-private

``--privacy accounted``: random search with random stopping (``--trials`` is the mean number of
runs); the tuner gets train+val as one private frame and each run splits it record by record with
secret randomness, as the CLI does without ``--val``.  The script then reports what the saved
metadata, the released model file and the Optuna storage (the SQLite file) contain.

    OMP_NUM_THREADS=1 python benchmarks/bench_tuning.py --data hmeq --trials 10 --privacy accounted --timeout 120

``--audit``: the accounted score's sensitivity under adversarial neighbours (records at the
bounds, far outside them, all missing, new categories, a duplicate, removals; each picked to
enter the validation sample) for validation sizes 50 to 1,000, against the bound the accountant
uses; the old score (queries drawn from the validation rows, a random Wasserstein subsample,
sensitivity claimed as 1/n) is measured the same way for comparison; and how many records one
added record moves between train and validation, for the old seeded split and the per-record one.

    OMP_NUM_THREADS=1 python benchmarks/bench_tuning.py --data hmeq --audit
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import optuna  # noqa: E402

import synthzoo as sz  # noqa: E402
from synthzoo.core.privacy.noise import NoiseSource  # noqa: E402
from synthzoo.datasets import load_shared, train_test_split  # noqa: E402
from synthzoo.testing import adversarial_records  # noqa: E402
from tuning import (  # noqa: E402
    objective,
    score_sensitivity,
    score_terms,
    split_records,
    tune,
)

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


# --------------------------------------------------------------------------- audit
def _adversaries(df: pd.DataFrame, schema, val: pd.DataFrame, rng) -> dict:
    """Adversarial records, each the smallest-hash variant of its kind (so it enters the sample)."""
    kinds = [("lower", "random"), ("upper", "random"), ("upper", "last"), ("out", "random"), ("missing", "random"),
             ("missing", "missing"), ("upper", "new")]
    out = {}
    for numeric, category in kinds:
        cands = adversarial_records(schema, numeric, category, 400, int(rng.integers(2 ** 31)))
        h = objective._sketch_hash(objective._content_matrix(objective.canonical_frame(cands, schema), schema))
        out[f"add {numeric}/{category}"] = cands.iloc[[int(np.argmin(h))]]
    h = objective._sketch_hash(objective._content_matrix(objective.canonical_frame(val, schema), schema))
    out["add duplicate"] = val.iloc[[int(np.argmin(h))]]
    out["_first"] = val.index[int(np.argmin(h))]
    return out


def _neighbours(val, adv):
    out = {k: pd.concat([val, r], ignore_index=True) for k, r in adv.items() if not k.startswith("_")}
    out["remove sampled"] = val.drop(index=adv["_first"])
    out["remove first"] = val.iloc[1:]
    return out


def audit(df, schema, n_vals, rows, seed=0) -> list[dict]:
    rng = np.random.default_rng(seed)
    warnings.simplefilter("ignore")
    train, pool = train_test_split(df, test_size=0.5, seed=seed)
    fit = sz.make("privsyn", epsilon=1.0, schema=schema, seed=0).fit(train)
    weights = (0.5, 0.0, 0.5)
    out = []
    for n in n_vals:
        val = pool.iloc[rng.permutation(len(pool))[:n]].reset_index(drop=True)
        adv = _adversaries(df, schema, val, rng)
        nb = _neighbours(val, adv)
        # new: the accounted score (fixed-size sample, schema queries, all rows), bound from the public m
        fake = fit.sample(rows, seed=1)
        sketch = objective.validation_sketch(val, schema, rows)
        base = objective.accounted_terms(sketch, fake, schema, None, weights)
        new = {"fidelity": 0.0, "query": 0.0, "score": 0.0}
        for other in nb.values():
            t = objective.accounted_terms(objective.validation_sketch(other, schema, rows), fake, schema, None, weights)
            for k in ("fidelity", "query"):
                new[k] = max(new[k], abs(t[k] - base[k]))
            new["score"] = max(new["score"], abs(objective.clipped_score(t, weights)
                                                 - objective.clipped_score(base, weights)))
        bound = score_sensitivity(weights, rows)
        # old: queries drawn from the validation rows, random 2,000-row Wasserstein subsample, claimed 1/n
        fake_old = fit.sample(n, seed=1)
        old = {"fidelity": 0.0, "query": 0.0, "score": 0.0}
        ob = score_terms(val, fake_old, schema, None, weights)
        in_bounds = 0.0  # the old score's largest move without the out-of-bounds record
        for name, other in nb.items():
            try:
                t = score_terms(other, fake_old, schema, None, weights)
            except Exception:  # noqa: BLE001 - the old score refuses a new category / missing where none allowed
                continue
            for k in ("fidelity", "query"):
                old[k] = max(old[k], abs(min(t[k], 1) - min(ob[k], 1)))
            d = abs(objective.clipped_score(t, weights) - objective.clipped_score(ob, weights))
            old["score"] = max(old["score"], d)
            if "out/" not in name:
                in_bounds = max(in_bounds, d)
        m_old = min(2000, n)
        old_bound = {"fidelity": 2.0 / m_old, "query": 1.0 / n, "score": 0.5 * 2.0 / m_old + 0.5 / n}
        row = {"n_val": n, "m": rows, "neighbours": len(nb),
               "new_max_dscore": new["score"], "new_bound": bound, "new_ratio": new["score"] / bound,
               "new_fid_ratio": new["fidelity"] / (2.0 / rows), "new_query_ratio": new["query"] / (1.0 / rows),
               "old_max_dscore": old["score"], "old_bound": old_bound["score"],
               "old_ratio": old["score"] / old_bound["score"], "old_ratio_in_bounds": in_bounds / old_bound["score"],
               "old_fid_ratio": old["fidelity"] / old_bound["fidelity"],
               "old_query_ratio": old["query"] / old_bound["query"]}
        out.append(row)
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    return out


def split_audit(df, schema, seed=0) -> dict:
    """Records moved between train and validation when one record is added (old seeded split vs
    the per-record split of accounted tuning)."""
    extra = df.iloc[[17]].assign(**{schema.names[1]: schema.columns[1].upper if schema.columns[1].is_numeric
                                    else None})
    bigger = pd.concat([df, extra], ignore_index=True)
    _, v0 = train_test_split(df, test_size=0.2, seed=seed)
    _, v1 = train_test_split(bigger, test_size=0.2, seed=seed)
    c0, c1 = (Counter(objective.record_keys(v, schema)) for v in (v0, v1))
    extra_in_val = objective.record_keys(extra, schema)[0] in c1
    # records of D that changed sides: validation -> training, and training -> validation
    old_moved = sum((c0 - c1).values()) + sum((c1 - c0).values()) - int(extra_in_val)
    k = NoiseSource().words(4).tobytes()
    s0, s1 = split_records(df, schema, k), split_records(bigger, schema, k)
    new_moved = int((s0 != s1[:len(df)]).sum())
    return {"records": len(df), "old_val_size": len(v0), "old_moved": old_moved,
            "new_val_size": int(s0.sum()), "new_moved": new_moved}


# --------------------------------------------------------------------------- storage report
def storage_report(db: Path, study_name: str, n_val_guess: int | None = None) -> dict:
    """What the SQLite storage holds: attribute keys, and whether any forbidden key appears."""
    con = sqlite3.connect(db)
    q = lambda sql: con.execute(sql).fetchall()  # noqa: E731
    study_id = q(f"select study_id from studies where study_name = '{study_name}'")[0][0]
    trials = [r[0] for r in q(f"select trial_id from trials where study_id = {study_id}")]
    ids = ",".join(map(str, trials)) or "-1"
    rep = {"study_user_keys": sorted(r[0] for r in q(f"select key from study_user_attributes where study_id={study_id}")),
           "study_system_keys": sorted(r[0] for r in q(f"select key from study_system_attributes "
                                                      f"where study_id={study_id}")),
           "trial_user_keys": sorted({r[0] for r in q(f"select key from trial_user_attributes where trial_id in ({ids})")}),
           "trial_system_keys": sorted({re.sub(r":\d+$", ":<chunk>", r[0])
                                        for r in q(f"select key from trial_system_attributes where trial_id in ({ids})")}),
           "trial_values": len(q(f"select * from trial_values where trial_id in ({ids})")),
           "intermediate_values": len(q(f"select * from trial_intermediate_values where trial_id in ({ids})"))}
    meta = json.loads(q(f"select value_json from study_user_attributes where study_id={study_id} "
                        "and key='synthzoo'")[0][0])
    rep["metadata_keys"] = sorted(meta)
    dump = "\n".join(con.iterdump())
    con.close()
    forbidden = ["\"runs\"", "finished_trials", "score_sensitivity", "score_sigma", "\"fidelity\"", "\"query\"",
                 "\"mla\"", "n_val"]
    rep["forbidden_found"] = [f for f in forbidden if f in dump]
    if n_val_guess is not None:
        rep["n_val_as_value"] = bool(re.search(rf"[:,\[ ]{n_val_guess}[,\]\}} ]", dump))
    return rep


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="adult")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--privacy", default="non-private", choices=["non-private", "accounted"])
    p.add_argument("--storage", default="sqlite:////tmp/synthzoo-bench-tuning.db")
    p.add_argument("--timeout", type=float, default=240.0, help="seconds per trial (hard: its process is killed)")
    p.add_argument("--score-rows", type=int, default=1000, help="accounted: public validation sample size m")
    p.add_argument("--sample-seeds", type=int, default=3)
    p.add_argument("--study-name", help="resume this study (e.g. after an interruption) instead of a new one")
    p.add_argument("--audit", action="store_true", help="sensitivity and split audit instead of a tuning run")
    p.add_argument("--n-vals", default="50,100,200,500,1000,2500")
    p.add_argument("--out", help="write the results as JSON")
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    df, schema = load_shared(a.data)
    if a.audit:
        t0 = time.perf_counter()
        rows = audit(df, schema, [int(x) for x in a.n_vals.split(",")], a.score_rows)
        split = split_audit(df, schema)
        print(f"split: {split}")
        print(f"audit took {time.perf_counter() - t0:.0f}s")
        if a.out:
            Path(a.out).write_text(json.dumps({"audit": rows, "split": split}, indent=2))
        return 0
    rest, test = train_test_split(df, test_size=0.2, seed=0)
    train, val = train_test_split(rest, test_size=0.2, seed=0)
    print(f"{a.data}: train {len(train):,}, val {len(val):,}, test {len(test):,}; epsilon={a.epsilon}", flush=True)
    seeds = range(100, 100 + a.sample_seeds)

    t0 = time.perf_counter()
    default = sz.make("privsyn", epsilon=a.epsilon, schema=schema, seed=0).fit(train)
    d = test_objective(default, train, test, schema, seeds)
    print(f"defaults: fit+score {time.perf_counter() - t0:.0f}s; test {d}", flush=True)

    t0 = time.perf_counter()
    study_name = a.study_name or f"bench-{a.data}-{a.privacy}-{int(time.time())}"
    if a.privacy == "accounted":  # one private frame; each run splits it record by record (secret draws)
        res = tune("privsyn", rest, None, epsilon=a.epsilon, schema=schema, n_trials=a.trials, privacy="accounted",
                   storage=a.storage, study_name=study_name, trial_timeout=a.timeout, score_rows=a.score_rows,
                   verbose=True)
    else:
        res = tune("privsyn", train, val, epsilon=a.epsilon, schema=schema, n_trials=a.trials, privacy=a.privacy,
                   storage=a.storage, study_name=study_name, trial_timeout=a.timeout, verbose=True)
    tune_s = time.perf_counter() - t0
    print(res.summary())
    print(f"tuning: {tune_s:.0f}s" + ("" if a.privacy == "accounted" else f" for {res.metadata['finished_trials']} trials"))
    out = {"defaults": d, "tune_seconds": tune_s, "metadata": res.metadata}
    if res.synthesizer is not None:
        t = test_objective(res.synthesizer, rest if a.privacy == "accounted" else train, test, schema, seeds)
        out["tuned"] = t
        print(f"test objective L (lower is better): defaults {d['L']:.4f} -> tuned {t['L']:.4f} "
              f"({abs(100 * (d['L'] - t['L']) / d['L']):.1f}% {'better' if t['L'] <= d['L'] else 'worse'})")
        for k in ("fidelity", "mla", "query"):
            print(f"  {k:<9} defaults {d[k]:.4f}  tuned {t[k]:.4f}")
    if a.privacy == "accounted":
        saved = Path(f"/tmp/{study_name}.json")
        res.save(saved)
        print(f"released: {res.synthesizer is not None}; saved metadata keys: {sorted(json.loads(saved.read_text()))}")
        model = saved.with_suffix(".model.json")
        if model.exists():
            text = model.read_text()
            print(f"model file: {len(text):,} characters; mentions runs/finished/sensitivity: "
                  f"{[w for w in ('runs drawn', 'finished', 'sensitivity', 'n_val') if w in text]}")
        if a.storage.startswith("sqlite:///"):
            rep = storage_report(Path(a.storage[len("sqlite:///"):]), study_name)
            out["storage"] = rep
            for k, v in rep.items():
                print(f"storage {k}: {v}")
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
