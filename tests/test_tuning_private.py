"""Accounted tuning that the random-stopping theorem covers: the score's sensitivity holds under
adversarial neighbours whatever the validation size, the per-record split moves no other record,
nothing exact (terms, number of runs, validation size, sensitivity) reaches the storage, every
started run counts, and a Poisson draw of zero runs releases nothing."""

import json
import math
import re
import sqlite3
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest

optuna = pytest.importorskip("optuna")

from synthzoo.cli import main as cli_main
from synthzoo.core.errors import ConfigError
from synthzoo.core.privacy.noise import NoiseSource
from synthzoo.datasets import make_demo, train_test_split
from synthzoo.metrics import query_error_3way, wasserstein_fidelity
from synthzoo.metrics.marginal import make_queries_3way, make_schema_queries_3way, query_answers_3way
from synthzoo.testing import adversarial_records
from tuning import (
    NOTHING_RELEASED,
    canonical_frame,
    objective,
    score_sensitivity,
    split_records,
    stop_coin,
    TuningAborted,
    tune,
    validation_sketch,
)
from tuning.accounting import coin_source
from tuning.storage import STOPPED_ATTR
from tuning.tuner import REPLAYABLE_TUNING

FAST = {"choices": {"preprocess.numeric": ["uniform"], "select_model": ["indif+gum"]},
            "space": {"model.gum.iterations": ("int", 5, 10)}}


@pytest.fixture(scope="module")
def data():
    df, schema = make_demo(n=3000, seed=0)
    return df, schema


# --------------------------------------------------------------------------- the score's sensitivity
def _sketch_hash(row: pd.DataFrame, schema) -> int:
    return int(objective._sketch_hash(objective._content_matrix(canonical_frame(row, schema), schema))[0])


def _adversaries(schema, seed=0) -> dict:
    """The adversarial records, each the smallest-hash one of its kind."""
    out = {}
    for numeric, category in [("lower", "random"), ("upper", "random"), ("upper", "last"), ("out", "random"),
                              ("missing", "random"), ("missing", "missing"), ("upper", "new"), ("lower", "new")]:
        cands = adversarial_records(schema, numeric, category, 400, seed)
        hashes = objective._sketch_hash(objective._content_matrix(canonical_frame(cands, schema), schema))
        out[f"{numeric}/{category}"] = cands.iloc[[int(np.argmin(hashes))]].reset_index(drop=True)
    return out


def _multiset(df: pd.DataFrame, schema) -> Counter:
    return Counter(map(tuple, objective._content_matrix(df, schema).tolist()))


@pytest.mark.parametrize("n_val", [50, 200, 1000])
def test_score_sensitivity_holds_for_adversarial_neighbours(data, n_val):
    """D and D +- one adversarial record, validation sizes 50 to 1,000 around the public sample size
    m = 200 (padded below it, sketched above): every term moves by at most what the accountant uses."""
    df, schema = data
    m = 200
    val = df.iloc[:n_val].reset_index(drop=True)
    realistic, _ = make_demo(n=m, seed=5)
    extreme = adversarial_records(schema, "lower", "random", m, seed=9)  # synthetic mass far from the upper records
    sketch = validation_sketch(val, schema, m)
    # the hash order puts a duplicate of a sampled record, and the first sampled record, in play
    first = val.iloc[[int(np.argmin(objective._sketch_hash(objective._content_matrix(canonical_frame(val, schema),
                                                                                      schema))))]]
    neighbours = {f"add {k}": pd.concat([val, r], ignore_index=True) for k, r in _adversaries(schema).items()}
    neighbours["add duplicate"] = pd.concat([val, first], ignore_index=True)
    neighbours["add in the middle"] = pd.concat([val.iloc[:n_val // 2], _adversaries(schema, 1)["upper/new"],
                                                 val.iloc[n_val // 2:]], ignore_index=True)
    neighbours["remove sampled"] = val.drop(index=first.index).reset_index(drop=True)
    neighbours["remove any"] = val.drop(index=[n_val // 3]).reset_index(drop=True)
    bound = {"fidelity": score_sensitivity((1, 0, 0), m), "query": score_sensitivity((0, 0, 1), m),
             "default": score_sensitivity((0.5, 0, 0.5), m)}
    assert bound == pytest.approx({"fidelity": 2 / m, "query": 1 / m, "default": 1.5 / m})
    worst = {k: 0.0 for k in bound}
    for fake in (realistic, extreme):
        base = objective.accounted_terms(sketch, fake, schema, None, (1, 0, 1))
        for name, other in neighbours.items():
            sk = validation_sketch(other, schema, m)
            assert len(sk) == m
            diff = _multiset(sketch, schema) - _multiset(sk, schema)
            assert sum(diff.values()) <= 1, name  # at most one of the m rows changed
            terms = objective.accounted_terms(sk, fake, schema, None, (1, 0, 1))
            for t in ("fidelity", "query"):
                worst[t] = max(worst[t], abs(terms[t] - base[t]))
            d = abs(objective.clipped_score(terms, (0.5, 0, 0.5)) - objective.clipped_score(base, (0.5, 0, 0.5)))
            worst["default"] = max(worst["default"], d)
    for k in bound:
        assert worst[k] <= bound[k] * (1 + 1e-9), (k, worst[k], bound[k])
    assert worst["fidelity"] > 0.2 * bound["fidelity"]  # the audit does reach near the bound


def test_sketch_is_a_fixed_rule_of_the_records(data):
    df, schema = data
    val = df.iloc[:700]
    a = validation_sketch(val, schema, 300)
    b = validation_sketch(val.sample(frac=1.0, random_state=3), schema, 300)  # order does not matter
    assert _multiset(a, schema) == _multiset(b, schema)
    # an integer column that turns float (a record with a missing value elsewhere) changes nothing else
    as_float = val.astype({"purchases": float, "age": float})
    assert _multiset(validation_sketch(as_float, schema, 300), schema) == _multiset(a, schema)
    # fewer records than m: all of them, padded with the one public dummy row
    small = validation_sketch(val.iloc[:40], schema, 100)
    dummy = objective.dummy_row(schema)
    assert _multiset(small, schema)[next(iter(_multiset(dummy, schema)))] >= 60


def test_schema_queries_do_not_read_rows_and_the_default_is_unchanged(data):
    df, schema = data
    real, fake = df.iloc[:500], df.iloc[500:900]
    q1 = make_schema_queries_3way(schema, 200, seed=4)
    assert q1 == make_schema_queries_3way(schema, 200, seed=4)
    a, _ = query_answers_3way(real, fake, schema, 200, seed=4, queries="schema")
    a2, _ = query_answers_3way(pd.concat([real, df.iloc[:1]]), fake, schema, 200, seed=4, queries="schema")
    assert np.max(np.abs(a - a2)) <= 1 / 500 + 1e-12  # one added record: each fraction moves by <= 1/n
    # the default ("real") queries and the Wasserstein default are as before
    assert query_error_3way(real, fake, schema) == query_error_3way(real, fake, schema, queries="real")
    assert make_queries_3way(real, schema, 50, seed=0) == make_queries_3way(real, schema, 50, seed=0)
    assert wasserstein_fidelity(real, fake, schema, max_rows=None) == wasserstein_fidelity(real, fake, schema)
    with pytest.raises(Exception, match="queries must be one of"):
        query_error_3way(real, fake, schema, queries="rows")


# --------------------------------------------------------------------------- the per-record split
def test_split_adding_one_record_moves_no_other_record(data):
    df, schema = data
    frame = df.iloc[:1500].reset_index(drop=True)
    key = NoiseSource(noise_seed=7).words(4).tobytes()
    side = split_records(frame, schema, key)
    assert 0.17 < side.mean() < 0.23  # Bernoulli(0.2) per record
    rng = np.random.default_rng(0)
    extra = [_adversaries(schema)["missing/random"], _adversaries(schema)["out/random"], frame.iloc[[10]],
             frame.iloc[[10]].assign(age=np.nan)]  # the last makes an integer column float
    for x in extra:
        at = int(rng.integers(len(frame)))
        other = pd.concat([frame.iloc[:at], x, frame.iloc[at:]], ignore_index=True)
        side2 = split_records(other, schema, key)
        kept = np.r_[side2[:at], side2[at + 1:]]
        if x.index[0] == 10 and not x.isna().any(axis=None):
            # a duplicate: identical records are interchangeable, so compare (record, side) multisets
            before = Counter(zip(objective.record_keys(frame, schema), side))
            after = Counter(zip(objective.record_keys(other, schema), side2))
            assert sum((before - after).values()) == 0 and sum((after - before).values()) == 1
        else:
            assert np.array_equal(kept, side), "a record moved between train and validation"
    assert not np.array_equal(side, split_records(frame, schema, NoiseSource(noise_seed=8).words(4).tobytes()))


def test_cli_accounted_without_val_splits_each_run_record_by_record(data, tmp_path, monkeypatch, capsys):
    df, schema = data
    private = df.iloc[:400]
    private.to_csv(tmp_path / "data.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    calls = []
    real_split = objective.split_records

    def spy(frame, schema_, key, share=0.2):
        calls.append((len(frame), key, share))
        return real_split(frame, schema_, key, share)

    monkeypatch.setattr(objective, "split_records", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = cli_main(["tune", str(tmp_path / "data.csv"), "--schema", str(tmp_path / "schema.json"), "--privacy",
                       "accounted", "--trials", "2", "--storage", str(tmp_path / "cli.db"), "--select-model",
                       "indif+gum", "--numeric", "uniform", "--score-rows", "60", "--in-process",
                       "--out", str(tmp_path / "tuned.json")])
    assert rc == 0
    out = capsys.readouterr()
    # every run split the whole private frame with its own secret key; the CLI split nothing itself
    assert calls and all(n == len(private) and share == 0.2 for n, _, share in calls)
    assert len({k for _, k, _ in calls}) == len(calls)
    assert "rows" not in out.err and "holding out" not in out.err
    saved = json.loads((tmp_path / "tuned.json").read_text())
    assert saved["privacy"] == "accounted" and not {"runs", "finished_trials", "best_trial"} & set(saved)


# --------------------------------------------------------------------------- nothing exact is written
class _Spy(optuna.storages.RDBStorage):
    """Records every value written to the storage."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.writes = []

    def set_study_user_attr(self, study_id, key, value):
        self.writes.append(("study user", key, value))
        return super().set_study_user_attr(study_id, key, value)

    def set_study_system_attr(self, study_id, key, value):
        self.writes.append(("study system", key, value))
        return super().set_study_system_attr(study_id, key, value)

    def set_trial_user_attr(self, trial_id, key, value):
        self.writes.append(("trial user", key, value))
        return super().set_trial_user_attr(trial_id, key, value)

    def set_trial_system_attr(self, trial_id, key, value):
        self.writes.append(("trial system", key, value))
        return super().set_trial_system_attr(trial_id, key, value)

    def set_trial_state_values(self, trial_id, state, values=None):
        self.writes.append(("trial values", state.name, values))
        return super().set_trial_state_values(trial_id, state, values)

    def set_trial_intermediate_value(self, trial_id, step, value):
        self.writes.append(("intermediate", step, value))
        return super().set_trial_intermediate_value(trial_id, step, value)


def _numbers(value):
    """Every number inside a written value (JSON-like), strings of model state left out."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _numbers(v)]
    return []


def test_storage_spy_sees_only_the_noisy_score(data, tmp_path, monkeypatch, capsys):
    df, schema = data
    train, val = train_test_split(df.iloc[:800], test_size=173, seed=0)  # n_val = 173, m = 150
    exact = []
    real_terms = objective.accounted_terms

    def record(*a, **kw):
        terms = real_terms(*a, **kw)
        exact.append(terms)
        return terms

    monkeypatch.setattr(objective, "accounted_terms", record)
    url = f"sqlite:///{tmp_path / 'spy.db'}"
    spy = _Spy(url)
    # an enqueued configuration is not a draw from the prior: accounted tuning skips it unread
    pre = optuna.create_study(storage=spy, study_name="spy", direction="minimize")
    pre.enqueue_trial({"model.gum.iterations": 7})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tune("privsyn", train, val, epsilon=1.0, schema=schema, n_trials=4, privacy="accounted", storage=spy,
                   study_name="spy", score_rows=150, isolate=False, noise_seed=2, verbose=True, **FAST)
    assert res.synthesizer is not None
    runs = [t for t in res.study.trials if t.user_attrs.get("run")]
    assert len(exact) == len(runs) >= 1
    enqueued = res.study.trials[0]
    assert enqueued.user_attrs.get("surplus") and "config" not in enqueued.user_attrs
    sens = score_sensitivity((0.5, 0, 0.5), 150)
    sigma = sens / math.sqrt(2 * res.metadata["score_rho"])
    secret = [v for t in exact for v in t.values() if not math.isnan(v)]
    secret += [objective.clipped_score(t, (0.5, 0, 0.5)) for t in exact] + [sens, sigma]
    for where, key, value in spy.writes:
        lowered = str(key).lower()
        assert not any(w in lowered for w in ("runs", "finished", "n_val", "sensitiv", "sigma", "fidelity", "query",
                                              "mla")) or key in ("mean_runs",), (where, key)
        if str(key).startswith("synthzoo:model_state"):
            continue
        for x in _numbers(value):
            assert not any(math.isclose(x, s, rel_tol=1e-9, abs_tol=1e-15) for s in secret), (where, key, x)
            assert not (isinstance(x, int) and x == 173), (where, key)  # the validation size
    meta = res.study.user_attrs["synthzoo"]
    assert not {"runs", "finished_trials", "best_trial", "score_sensitivity"} & set(meta)
    # the values written are the noisy scores: each differs from its exact score
    values = [w[2][0] for w in spy.writes if w[0] == "trial values" and w[2]]
    assert len(values) == len(runs)
    # and the SQLite file itself holds no exact term either
    con = sqlite3.connect(tmp_path / "spy.db")
    dump = "\n".join(con.iterdump())
    con.close()
    for s in secret:
        assert not re.search(r"(?<![\d.])" + re.escape(repr(float(s))) + r"(?!\d)", dump), s
    assert '"runs"' not in dump and "finished_trials" not in dump and "score_sensitivity" not in dump
    # verbose output in accounted mode shows no per-trial value or count
    out = capsys.readouterr()
    assert "value=" not in out.out and "finished with value" not in out.err
    assert "trials finished" not in res.summary()


# --------------------------------------------------------------------------- every run counts; K = 0
def _first_seed(pred):
    return next(s for s in range(1000) if pred(s))


def _coin_runs(noise_seed, mean, shape):
    src, k = coin_source(noise_seed), 0
    while not stop_coin(src, k, mean, shape):
        k += 1
    return k


def test_poisson_zero_runs_releases_nothing_and_a_rerun_does_not_redraw(data, tmp_path):
    df, schema = data
    train, val = train_test_split(df.iloc[:600], test_size=0.3, seed=0)
    seed = _first_seed(lambda s: _coin_runs(s, 1.0, math.inf) == 0)  # the first coin says stop
    args = dict(epsilon=1.0, schema=schema, n_trials=1, privacy="accounted", stopping="poisson",
                storage=str(tmp_path / "k0.db"), study_name="k0", score_rows=100, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tune("privsyn", train, val, noise_seed=seed, **args)
    assert res.synthesizer is None and res.best_params == {} and res.best_value is None
    assert NOTHING_RELEASED in res.summary() and res.metadata["released"] is False
    res.save(tmp_path / "k0.json")
    assert not (tmp_path / "k0.model.json").exists()
    assert not any(t.user_attrs.get("run") for t in res.study.trials)
    assert all("config" not in t.user_attrs for t in res.study.trials)  # no data was read
    n_trials = len(res.study.trials)
    assert res.study._storage.get_study_system_attrs(res.study._study_id)[STOPPED_ATTR] is True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = tune("privsyn", train, val, **args)  # secret coins now: the stopped study stays stopped
    assert again.synthesizer is None and len(again.study.trials) == n_trials


def test_a_run_that_fails_stops_accounted_tuning_and_nothing_is_released(data, tmp_path, misbehave):
    """Whether a run ends in time, or at all, can follow the private rows (fit time, memory), and choosing
    the best of the other runs would release that: accounted tuning takes no time limit, and a run whose
    process dies stops the study with nothing released (it was recorded as pruned and the best of the others
    was released)."""
    df, schema = data
    train, val = train_test_split(df.iloc[:600], test_size=0.3, seed=0)
    seed = _first_seed(lambda s: _coin_runs(s, 3.0, 1.0) >= 3)
    args = dict(epsilon=1.0, schema=schema, n_trials=3, privacy="accounted", score_rows=100, noise_seed=seed, **FAST)
    with pytest.raises(ConfigError, match="accounted' takes no trial_timeout"):
        tune("privsyn", train, val, storage=str(tmp_path / "t.db"), trial_timeout=5.0, **args)
    misbehave("crash", call=2)  # the 2nd fit of each trial process kills it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TuningAborted, match="releases nothing: run 1: .*process died"):
            tune("privsyn", train, val, storage=str(tmp_path / "f.db"), **args)
        # resuming the study (any worker) releases nothing either
        with pytest.raises(TuningAborted, match="run 1"):
            tune("privsyn", train, val, storage=str(tmp_path / "f.db"), **args)
        # nor does a fit that raises (it was a failed trial, and a resume released the best of the others)
        misbehave("raise", call=2)
        with pytest.raises(TuningAborted, match="releases nothing: run 1: MemoryError: planted"):
            tune("privsyn", train, val, storage=str(tmp_path / "r.db"), **args)
        with pytest.raises(TuningAborted, match="run 1"):
            tune("privsyn", train, val, storage=str(tmp_path / "r.db"), **args)


def test_an_accounted_study_resumes_only_with_the_same_settings(data, tmp_path):
    # resumed with another epsilon, it selected among runs at the first budget and reported the second
    df, schema = data
    train, val = train_test_split(df.iloc[:600], test_size=0.3, seed=0)
    args = dict(schema=schema, n_trials=3, privacy="accounted", score_rows=100, noise_seed=0, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tune("privsyn", train, val, epsilon=20.0, storage=str(tmp_path / "t.db"), **args)
        with pytest.raises(ConfigError, match=r"other epsilon \(epsilon=20.0\)"):
            tune("privsyn", train, val, epsilon=0.3, storage=str(tmp_path / "t.db"), **args)
        with pytest.raises(ConfigError, match="other score_rows, weights"):
            tune("privsyn", train, val, epsilon=20.0, storage=str(tmp_path / "t.db"),
                 **{**args, "score_rows": 50}, weights=(1, 0, 0))


@pytest.fixture
def misbehave(monkeypatch, tmp_path):
    from pathlib import Path

    from synthzoo.isolation import WORKER_INIT_ENV

    def setup(mode, call=0):
        monkeypatch.syspath_prepend(str(Path(__file__).parent))
        monkeypatch.setenv(WORKER_INIT_ENV, "test_tuning:misbehave_in_fit")
        monkeypatch.setenv("SYNTHZOO_TEST_FIT_MODE", mode)
        monkeypatch.setenv("SYNTHZOO_TEST_FIT_CALL", str(call))
        monkeypatch.setenv("SYNTHZOO_TEST_SYNC", str(tmp_path))
    return setup


def test_a_run_lost_to_an_interrupted_or_dead_worker_stops_accounted_tuning_on_resume(data, tmp_path, monkeypatch):
    """A run that started and never reported (the tuner was interrupted or killed mid-fit -- by the OOM killer,
    say, or by an operator tired of a slow fit: both can follow the private rows) was silently dropped on
    resume, and the best of the other runs was released.  Like a run that fails, it now releases nothing."""
    import tuning.trials as trials

    df, schema = data
    train, val = train_test_split(df.iloc[:600], test_size=0.3, seed=0)
    seed = _first_seed(lambda s: _coin_runs(s, 3.0, 1.0) >= 2)
    args = dict(epsilon=1.0, schema=schema, n_trials=3, privacy="accounted", score_rows=100, noise_seed=seed,
                isolate=False, storage=str(tmp_path / "k.db"), study_name="k", **FAST)
    real, calls = trials._InProcess.run, []

    def interrupted(self, *a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the second run never reports
        return real(self, *a, **kw)

    monkeypatch.setattr(trials._InProcess, "run", interrupted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(KeyboardInterrupt):
            tune("privsyn", train, val, **args)
        monkeypatch.setattr(trials._InProcess, "run", real)
        with pytest.raises(TuningAborted, match="releases nothing: run 1: "):
            tune("privsyn", train, val, **args)
        with pytest.raises(TuningAborted, match="run 1"):  # and it stays so
            tune("privsyn", train, val, **args)


def test_a_failed_runs_error_text_is_not_written_to_the_storage(data, tmp_path, monkeypatch):
    """A run's fit error can quote private values; the abort reason went whole into the study's user attrs and
    the trial's, which others sharing the storage read.  The storage now holds the error's type only; the local
    exception still says it all.  (A table outside the schema, the error this test first planted, is now refused
    before the study: see the next test.)"""
    from synthzoo.pipeline import Synthesizer

    df, schema = data
    train, val = train_test_split(df.iloc[:600], test_size=0.3, seed=0)

    def fails(self, frame, progress=False):
        raise ValueError("model: cannot fit value 'PRIVATE_VALUE_4711'")

    monkeypatch.setattr(Synthesizer, "fit", fails)
    db = tmp_path / "e.db"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TuningAborted, match="releases nothing: run 0: ValueError") as info:
            tune("privsyn", train, val, epsilon=1.0, schema=schema, n_trials=2, privacy="accounted",
                 score_rows=100, noise_seed=1, isolate=False, storage=str(db), study_name="e", **FAST)
    assert "PRIVATE_VALUE_4711" in str(info.value)  # the operator, who holds the data, is told
    con = sqlite3.connect(db)
    dump = "\n".join(con.iterdump())
    con.close()
    assert "ValueError" in dump and "PRIVATE_VALUE_4711" not in dump


@pytest.mark.parametrize("bad", ["unseen category", "past the bounds", "missing where none may be"])
@pytest.mark.parametrize("with_val", [True, False])
def test_a_private_table_outside_the_schema_is_refused_before_the_study(data, tmp_path, bad, with_val):
    """Neighbouring-table audit: D' = D plus one record outside the schema made run 0 (or, with the per-record
    split, the first run that drew the record to fit) fail, and the shared storage then held a FAIL trial, the
    abort attr and the error's type, where D's storage held completed runs -- a function of the private rows
    without noise that every reader of the storage sees.  The tuner now checks the private table against the
    schema as the fit would, before the study exists: the caller (who holds the data) is told, the storage
    holds nothing."""
    from synthzoo.core.errors import SchemaError

    df, schema = data
    train, val = train_test_split(df.iloc[:600], test_size=0.3, seed=0)
    record = train.iloc[[0]].copy()
    num = next(c for c in schema.columns if c.kind == "numerical" and not c.missing)
    if bad == "unseen category":
        cat = next(c.name for c in schema.columns if c.kind == "categorical")
        record[cat] = "PRIVATE_VALUE_4711"
    elif bad == "past the bounds":
        record[num.name] = num.upper + 1000
    else:
        record[num.name] = np.nan
    neighbour = pd.concat([train, record], ignore_index=True)
    db = tmp_path / "o.db"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SchemaError, match="nothing was written to the storage"):
            tune("privsyn", neighbour, val if with_val else None, epsilon=1.0, schema=schema, n_trials=3,
                 privacy="accounted", score_rows=100, noise_seed=1, isolate=False, storage=str(db),
                 study_name="o", **FAST)
    assert not db.exists() or not optuna.get_all_study_summaries(f"sqlite:///{db}")


def test_a_study_begun_with_replayable_noise_stays_flagged_when_resumed_without_it(data, tmp_path, monkeypatch):
    # a session with the test-only noise_seed, interrupted between runs, then resumed with secret noise: the
    # release was flagged replayable only if its own run was, though the first runs' coins and scores were
    import tuning.tuner as tuner

    df, schema = data
    train, val = train_test_split(df.iloc[:600], test_size=0.3, seed=0)
    seed = _first_seed(lambda s: _coin_runs(s, 3.0, 1.0) >= 2)
    args = dict(epsilon=1.0, schema=schema, n_trials=3, privacy="accounted", score_rows=100, isolate=False,
                storage=str(tmp_path / "r.db"), study_name="r", **FAST)
    real, calls = tuner.stopped, []

    def interrupted(study):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # after the first run, before the second
        return real(study)

    monkeypatch.setattr(tuner, "stopped", interrupted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(KeyboardInterrupt):
            tune("privsyn", train, val, noise_seed=seed, **args)
        monkeypatch.setattr(tuner, "stopped", real)
        res = tune("privsyn", train, val, **args)  # secret noise from here on
    assert res.metadata.get("replayable_noise") == REPLAYABLE_TUNING
    assert REPLAYABLE_TUNING in res.summary()
    if res.synthesizer is not None:
        assert "replayable" in res.synthesizer.privacy_report().lower()
