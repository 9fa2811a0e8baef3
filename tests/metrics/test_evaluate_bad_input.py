"""``evaluate`` on odd and bad input: a clear synthzoo error naming the option or column, or a NaN
with its reason -- never a pandas / numpy / scikit-learn exception.  Tiny tables: each test runs in
about a second."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from synthzoo.core import ConfigError, Schema, SchemaError
from synthzoo.metrics import evaluate, ml_scores
from synthzoo.metrics._common import HoldoutWarning


def tiny(n=120, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n).clip(-3, 3)
    df = pd.DataFrame({"x": x, "z": rng.uniform(0, 5, n), "g": rng.choice(["a", "b", "c"], n),
                       "c": np.where(x + rng.normal(size=n) > 0, "hi", "lo")})
    schema = Schema.from_dict({"target": "c", "task": "binary classification", "columns": {
        "x": {"type": "numerical", "lower": -3, "upper": 3},
        "z": {"type": "numerical", "lower": 0, "upper": 5},
        "g": {"type": "categorical", "categories": ["a", "b", "c"]},
        "c": {"type": "categorical", "categories": ["hi", "lo"]}}})
    return df, schema


@pytest.fixture(scope="module")
def tables():
    df, schema = tiny(360)
    return df.iloc[:120].reset_index(drop=True), df.iloc[120:240].reset_index(drop=True), \
        df.iloc[240:].reset_index(drop=True), schema


@pytest.mark.parametrize("options, match", [
    (dict(cv_evaluators=[]), "cv_evaluators: an empty list"),
    (dict(evaluators=[]), "evaluators: an empty list"),
    (dict(evaluators="rff"), "unknown evaluator 'rff'"),
    (dict(seed=-1), "seed must be"),
    (dict(seed=1.5), "seed must be"),
    (dict(nnaa_resamples=0), "nnaa_resamples must be"),
    (dict(attr_trees=0), "attr_trees must be"),
    (dict(attr_rows=0), "attr_rows must be"),
    (dict(wasserstein_rows=0), "wasserstein_rows must be"),
    (dict(n_attacks=0), "n_attacks must be"),
])
def test_bad_options_fail_at_once_under_their_own_names(tables, options, match):
    # before: cv_evaluators=[] -> pandas KeyError 'diff'; evaluators=[] -> ML metrics NaN with no
    # reason; seed=-1 -> numpy ValueError; nnaa_resamples / attr_* / wasserstein_rows errors named
    # 'n_resample', 'n_estimators', 'max_rows'; n_attacks=0 failed only after the other metrics ran
    train, fake, test, schema = tables
    metrics = ["ml_cv_f1_diff", "ml_f1", "nnaa_privacy_loss", "attr_disclosure", "wasserstein", "tvd_2way",
               "dcr_risk"]
    with pytest.raises(ConfigError, match=match):
        evaluate(train, fake, test=test, schema=schema, metrics=metrics, baselines=False, **options)


def test_single_evaluator_name_as_a_string(tables):
    train, fake, test, schema = tables
    t = evaluate(train, fake, test=test, schema=schema, metrics=["ml_f1"], baselines=False, evaluators="linear")
    assert t["value"].notna().all()


@pytest.mark.parametrize("metrics", [5, [["tvd_2way"]], ["tvd_2way", None], [1.0]])
def test_metrics_that_are_not_names(tables, metrics):
    # before: metrics=5 -> TypeError "object of type 'int' has no len()"; [["tvd_2way"]] -> TypeError
    # "unhashable type: 'list'"
    train, fake, test, schema = tables
    with pytest.raises(ConfigError, match="metrics: "):
        evaluate(train, fake, test=test, schema=schema, metrics=metrics, baselines=False)


def test_tiny_holdout_gives_nan_with_reason_not_an_error(tables):
    # before: a 5-row holdout ended the whole evaluation with domias_auc's (and the attacks',
    # mia_classifier's) "needs at least 10 rows" ConfigError, though HoldoutWarning and the README
    # promise the metrics such a holdout cannot support are reported as NaN
    train, fake, test, schema = tables
    metrics = ["tvd_2way", "dcr_risk", "domias_auc", "linkability_risk", "mia_max_auc", "mia_classifier_f1"]
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        t = evaluate(train, fake, test=test.iloc[:5], schema=schema, metrics=metrics, baselines=False,
                     n_attacks=50).set_index("metric")["value"]
    assert t[["domias_auc", "mia_max_auc", "mia_classifier_f1"]].isna().all()
    assert t[["tvd_2way", "dcr_risk", "linkability_risk"]].notna().all()  # the others are still scored
    said = " ".join(str(w.message) for w in got)
    assert "domias_auc: the holdout needs at least 10 rows" in said
    assert "membership_attacks: the holdout needs at least 10 rows" in said
    assert "mia_classifier: needs at least 8 holdout rows" in said


def test_single_class_holdout_says_why_ml_auc_is_nan(tables):
    # before: "evaluate: not defined for these tables, reported as NaN: ml_auc", no reason given
    train, fake, test, schema = tables
    one = test[test["c"] == "hi"]
    with pytest.warns(UserWarning, match=r"ml_auc \(the held-out \(test\) rows hold a single target class"):
        t = evaluate(train, fake, test=one, schema=schema, metrics=["ml_auc", "ml_f1"], baselines=False,
                     evaluators=("linear",)).set_index("metric")["value"]
    assert np.isnan(t["ml_auc"]) and np.isfinite(t["ml_f1"])


def test_report_with_an_all_missing_column_warns_nothing_from_matplotlib(tables, tmp_path):
    # before: matplotlib's "No artists with labels found to put in legend" escaped from the column
    # plots (on the command line: 'synthzoo: warning: No artists with labels found ...')
    from synthzoo.metrics import write_html_report
    train, fake, test, schema = tables
    d = schema.to_dict()
    d["columns"]["z"]["missing"] = True
    schema = Schema.from_dict(d)
    train, fake = train.assign(z=np.nan), fake.assign(z=np.nan)
    table = evaluate(train, fake, schema=schema, metrics=["tvd_2way"], baselines=False)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        write_html_report(tmp_path / "r.html", table, train, fake, schema)
    assert not [str(w.message) for w in got if "legend" in str(w.message)]
    assert "z" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_one_row_release_raises_no_numpy_warning(tables):
    # before: numpy's RuntimeWarning "Degrees of freedom <= 0 for slice." escaped from ci_overlap
    train, fake, test, schema = tables
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        t = evaluate(train, fake.iloc[:1], schema=schema, metrics=["ci_overlap", "dwm"], baselines=False)
    assert not [str(w.message) for w in got if issubclass(w.category, RuntimeWarning)]
    assert t["value"].notna().all()


@pytest.mark.parametrize("role", ["train", "synthetic", "test"])
def test_one_row_table_gives_nan_with_reason_not_an_index_error(tables, role):
    # before: nndr_risk, nnaa_privacy_loss and eps_identifiability raised numpy's IndexError "index 1
    # is out of bounds for axis 1 with size 1" (no second row to be a nearest other row), pmse
    # scikit-learn's liblinear ValueError about multiclass classification
    train, fake, test, schema = tables
    frames = {"train": train, "synthetic": fake, "test": test}
    frames[role] = frames[role].iloc[:1]
    metrics = ["nndr_risk", "nnaa_privacy_loss", "eps_identifiability", "pmse", "tvd_2way"]
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        t = evaluate(frames["train"], frames["synthetic"], test=frames["test"], schema=schema, metrics=metrics,
                     baselines=False, nnaa_resamples=2).set_index("metric")["value"]
    said = " ".join(str(w.message) for w in got)
    assert np.isfinite(t["tvd_2way"])
    for m in t.index[t.isna()]:
        assert m in said.split("reported as NaN:")[-1]
    assert "needs at least" in said


def test_one_row_training_table_skips_the_baselines_with_a_reason(tables):
    # before: SchemaError "synthetic table is empty (0 rows)" -- HALF's empty half, not the release
    train, fake, test, schema = tables
    with pytest.warns(UserWarning, match="baselines need at least 2 training rows"):
        t = evaluate(train.iloc[:1], fake, schema=schema, metrics=["tvd_2way"])
    assert np.isfinite(t["value"]).all() and t["HALF"].isna().all()


def test_cross_validation_with_too_few_rows_of_a_class(tables):
    # before: scikit-learn's ValueError "n_splits=5 cannot be greater than the number of members in
    # each class" (5 training rows, 4 of one class and 1 of the other)
    train, fake, test, schema = tables
    few = pd.concat([train[train["c"] == "hi"].iloc[:4], train[train["c"] == "lo"].iloc[:1]], ignore_index=True)
    with pytest.warns(UserWarning, match="ml_cross_validated: 5-fold stratified cross-validation needs at least 5"):
        t = evaluate(few, fake, test=test, schema=schema, metrics=["ml_cv_f1_diff", "tvd_2way"], baselines=False,
                     cv_evaluators=("linear",)).set_index("metric")["value"]
    assert np.isnan(t["ml_cv_f1_diff"]) and np.isfinite(t["tvd_2way"])


@pytest.mark.parametrize("role", ["train", "synthetic"])
def test_auroc_diff_says_when_a_table_holds_one_target_class(tables, role):
    # before: a single-class training or synthetic table scored AUC 0.5 in silence (auroc_diff
    # -0.4 for a one-class release, with no word why), where ml_f1 / ml_auc warn for the same table
    from synthzoo.metrics.ml import _FIT_CACHE
    _FIT_CACHE.clear()
    train, fake, test, schema = tables
    frames = {"train": train, "synthetic": fake}
    frames[role] = frames[role].assign(c="hi")
    with pytest.warns(UserWarning, match=f"auroc_difference: the {role} table holds a single target class"):
        evaluate(frames["train"], frames["synthetic"], test=test, schema=schema, metrics=["auroc_diff"],
                 baselines=False)


def test_report_names_a_table_that_is_not_evaluates(tables, tmp_path):
    # before: pandas' KeyError 'group' (a frame without it, or the (table, details) tuple's KeyError
    # / AttributeError)
    from synthzoo.metrics import write_html_report
    train, fake, test, schema = tables
    table, details = evaluate(train, fake, schema=schema, metrics=["tvd_2way"], baselines=False,
                              return_details=True)
    for bad, match in [(table[["metric", "value"]], r"lacks column\(s\) \['group'"),
                       ((table, details), "got a tuple"), ({"metric": 1}, "got dict")]:
        with pytest.raises(ConfigError, match=match):
            write_html_report(tmp_path / "r.html", bad, train, fake, schema)


def test_evaluate_files_reads_csv_files_as_the_command_line_does(tmp_path):
    # before: evaluate_files read with pandas' defaults, so a listed category "NA" became a missing
    # value (SchemaError "column 'region': ... missing value(s) (NaN) but the schema declares none")
    # and "02139" the number 2139 (scored as outside the schema), where `synthzoo eval` reads both
    from synthzoo.metrics import evaluate_files
    rng = np.random.default_rng(0)
    schema = Schema.from_dict({"columns": {
        "x": {"type": "numerical", "lower": -3, "upper": 3},
        "region": {"type": "categorical", "categories": ["NA", "EU", "AS"]},
        "zip": {"type": "categorical", "categories": ["02139", "10001", "94103"]}}})
    paths = []
    for name in ("real", "fake"):
        df = pd.DataFrame({"x": rng.normal(size=80).clip(-3, 3), "region": rng.choice(["NA", "EU", "AS"], 80),
                           "zip": rng.choice(["02139", "10001", "94103"], 80)})
        df.to_csv(tmp_path / f"{name}.csv", index=False)
        paths.append(tmp_path / f"{name}.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no OutOfSchemaWarning: every value is a listed category
        t = evaluate_files(*paths, schema=schema, out=tmp_path / "r.html", metrics=["tvd_2way"], baselines=False)
    assert np.isfinite(t["value"]).all()


def test_out_of_schema_warning_points_out_near_misses(tables):
    # before: "... outside the schema's categories (e.g. [' a', ' b', ' c']); scored as mismatches",
    # with no word that they are the listed categories but for a space (Schema's own error says it)
    from synthzoo.metrics import OutOfSchemaWarning
    train, fake, test, schema = tables
    with pytest.warns(OutOfSchemaWarning, match=r"' a' is 'a' but for spaces around it"):
        evaluate(train, fake.assign(g=" " + fake["g"]), schema=schema, metrics=["tvd_2way"], baselines=False)
    with pytest.warns(OutOfSchemaWarning, match=r"'HI' is 'hi' but for letter case"):
        evaluate(train, fake.assign(c=fake["c"].str.upper()), schema=schema, metrics=["tvd_2way"], baselines=False)


def test_report_says_why_a_value_is_nan(tables, tmp_path):
    # before: a NaN value read '–' in the report with an empty reading; its reason was only in a
    # warning on the console
    from synthzoo.metrics import write_html_report
    train, fake, test, schema = tables
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table, details = evaluate(train, fake, test=test.iloc[:5], schema=schema, metrics=["domias_auc", "dcr_risk"],
                                  baselines=False, return_details=True)
    assert details["nan_reasons"] == {"domias_auc": "domias_auc: the holdout needs at least 10 rows (half "
                                                    "reference, half candidates)"}
    write_html_report(tmp_path / "r.html", table, train, fake, schema, details=details)
    assert "not computed: domias_auc: the holdout needs at least 10 rows" in (tmp_path / "r.html").read_text("utf-8")


def test_the_summary_warning_gives_every_nan_reason(tables):
    # before: "reported as NaN: domias_auc" -- the reason only in the worker thread's own warning,
    # which another thread's warnings.catch_warnings (core's datetime parsing) can swallow
    train, fake, test, schema = tables
    with pytest.warns(UserWarning, match=r"reported as NaN: domias_auc \(domias_auc: the holdout needs at least 10"):
        evaluate(train, fake, test=test.iloc[:5], schema=schema, metrics=["domias_auc"], baselines=False)


@pytest.mark.parametrize("option, value", [("baselines", "no"), ("baselines", "false"), ("baselines", 0.5),
                                           ("baselines", None), ("return_details", "no"), ("return_details", 1)])
def test_yes_no_options_take_only_a_bool(tables, option, value):
    # before: baselines="no" (or "false", 0.5) is truthy and ran the baselines; return_details=1 returned a tuple
    train, fake, test, schema = tables
    with pytest.raises(ConfigError, match=f"{option} must be True or False, got {value!r}"):
        evaluate(train, fake, schema=schema, metrics=["tvd_2way"], **{"baselines": False, option: value})


def test_the_attacks_return_scores_takes_only_a_bool(tables):
    # before: membership_attacks(return_scores="no") returned a (table, scores) tuple, not the table
    from synthzoo.metrics import membership_attacks
    train, fake, test, schema = tables
    with pytest.raises(ConfigError, match="return_scores must be True or False, got 'no'"):
        membership_attacks(train, fake, test, schema, n_targets=20, return_scores="no")


def test_numpy_bools_are_bools(tables):
    train, fake, test, schema = tables
    t, details = evaluate(train, fake, schema=schema, metrics=["tvd_2way"], baselines=np.False_,
                          return_details=np.True_)
    assert t["HALF"].isna().all() and "nan_reasons" in details


def test_unknown_task_fails_before_any_metric_runs(tables):
    # before: any task text without "regress" was scored as classification ("regresion", "clustering":
    # ml_f1 0.77 in silence), and ml_scores(task="clustering") likewise
    from synthzoo.metrics import ml_scores
    train, fake, test, schema = tables
    d = schema.to_dict()
    d["task"] = "regresion"
    with pytest.raises(SchemaError, match=r"\"task\" \(top level\): unknown task 'regresion'"):
        Schema.from_dict(d)  # read from JSON: refused where the schema is read
    typo = Schema.from_dict(schema.to_dict())
    typo.meta["task"] = "regresion"  # built in Python: evaluate checks it
    ran = []
    with pytest.raises(ConfigError, match=r"the schema's \"task\": unknown task 'regresion'; choose from "
                                          r"\['binary classification', 'classification', 'multiclass"):
        evaluate(train, fake, test=test, schema=typo, metrics=["tvd_2way", "ml_f1"], baselines=False,
                 progress=lambda *a: ran.append(a))
    assert not ran
    with pytest.raises(ConfigError, match=r"task: unknown task 'clustering'; choose from \["):
        ml_scores(train, fake, test, schema, evaluators=("linear",), task="clustering")
    d["task"] = "Binary  Classification"  # letter case and spacing are no typo
    assert np.isfinite(ml_scores(train, fake, test, Schema.from_dict(d), evaluators=("linear",))["synthetic"]).all()


def test_a_task_that_cannot_predict_its_target_names_both(tables):
    # the rule has one home (core.schema.task_mismatch); the CLI's --task check words it the same way
    from synthzoo.metrics import ml_scores
    train, fake, test, schema = tables
    target = schema.meta["target"]
    with pytest.raises(ConfigError, match=rf"target '{target}' is categorical: a categorical target is classified"):
        ml_scores(train, fake, test, schema, evaluators=("linear",), task="regression")
    number = next(c.name for c in schema if c.kind == "numerical")
    with pytest.raises(ConfigError, match=rf"target '{number}' is numerical: a classification target must be "
                                          r"categorical"):
        ml_scores(train, fake, test, schema, evaluators=("linear",), target=number, task="classification")


def test_task_in_any_letter_case_picks_the_metrics_of_its_kind(tables):
    # before: "Regression" (accepted: any letter case and spacing) held no "regress", so the utility set
    # kept ml_f1 / ml_auc (NaN, "a single target class") for a numeric target and left out ml_rmse / ml_r2
    train, fake, test, schema = tables
    d = schema.to_dict()
    d.update(target="z", task="Regression")
    t = evaluate(train, fake, test=test, schema=Schema.from_dict(d), metrics="utility", baselines=False,
                 evaluators=("linear",))
    assert list(t["metric"]) == ["query_error_3way", "ml_rmse", "ml_r2", "ml_affinity"]
    assert np.isfinite(t["value"]).all()


def test_counts_in_messages_are_pluralised(tables):
    # before: "auroc_difference: the held-out rows hold 1 target classes; needs 2" and "evaluate: only 1
    # holdout (test) rows (fewer than 40)"
    train, fake, test, schema = tables
    one = test[test["c"] == "hi"]
    with pytest.warns(UserWarning, match=r"the held-out rows hold 1 target class; needs 2"):
        evaluate(train, fake, test=one, schema=schema, metrics=["auroc_diff"], baselines=False)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        evaluate(train, fake, test=test.iloc[:1], schema=schema, metrics=["dcr_risk"], baselines=False)
    assert "evaluate: only 1 holdout (test) row (fewer than 40)" in " ".join(str(w.message) for w in got)
    from synthzoo.metrics._common import count
    assert [count(n, w) for n, w in [(1, "row"), (2, "row"), (0, "target class"), (1_000, "row")]] == \
        ["1 row", "2 rows", "0 target classes", "1,000 rows"]


def test_counts_in_the_table_checks_are_pluralised(tables):
    # before: "1 value(s) outside the schema's categories" and "1 missing value(s) (NaN)"
    train, fake, test, schema = tables
    odd = fake.copy()
    odd.loc[0, "g"], odd.loc[1, "x"] = "zz", 9.0
    with pytest.warns(UserWarning, match="column 'g': 1 value outside the schema's categories") as got:
        evaluate(train, odd, schema=schema, metrics=["tvd_2way"], baselines=False)
    assert any("column 'x': 1 value outside the public bounds" in str(w.message) for w in got)
    odd.loc[:2, "z"] = np.nan
    with pytest.raises(SchemaError, match=r"column 'z': 3 missing values \(NaN\)"):
        evaluate(train, odd, schema=schema, metrics=["tvd_2way"], baselines=False)
    odd.loc[1:2, "z"] = 1.0
    with pytest.raises(SchemaError, match=r"column 'z': 1 missing value \(NaN\) but"):
        evaluate(train, odd, schema=schema, metrics=["tvd_2way"], baselines=False)


def test_an_error_in_one_metric_stops_the_units_not_yet_started(tables, monkeypatch):
    # before: the pool reported a unit's error only once every unit before it in its queue was done, and
    # meanwhile the other threads went on starting units (here: all 7 slow ones, for an error that
    # came in the first instant); now the units not yet started are cancelled and the error raised as
    # soon as the one unit already running is done
    import importlib
    import threading
    import time

    from synthzoo.metrics import statistical
    ev = importlib.import_module("synthzoo.metrics.evaluate")  # the module, not the function of that name
    train, fake, test, schema = tables
    started, lock = [], threading.Lock()

    def slow(*args, seconds=0.3, **kw):
        with lock:
            started.append(1)
        time.sleep(seconds)
        return 0.0

    def broken(*args, **kw):
        raise RuntimeError("metric failed")
    # the first two units (the costliest, see ev._COST): a long one, and one that fails at once
    monkeypatch.setattr(ev, "association_difference", lambda *a, **k: slow(seconds=1.0))
    monkeypatch.setattr(statistical, "correlation_difference", broken)
    for name in ("tvd_1way", "tvd_2way", "query_error_3way"):
        monkeypatch.setattr(ev, name, slow)
    monkeypatch.setattr(statistical, "dimensionwise_means", slow)
    monkeypatch.setattr(statistical, "hellinger_distance", lambda *a, **k: {"avg": slow()})
    monkeypatch.setattr(statistical, "ks_test", lambda *a, **k: slow() or {"avg_stat": 0.0, "n_significant": 0})
    metrics = ["association_diff", "corr_diff", "tvd_1way", "tvd_2way", "hellinger", "dwm", "query_error_3way",
               "ks_distance"]
    with pytest.raises(RuntimeError, match="metric failed"):
        evaluate(train, fake, schema=schema, metrics=metrics, baselines=False, n_jobs=2)
    assert len(started) <= 2  # the long unit (and, should a slow unit win the race for a slot, that one)


def test_an_interrupt_while_waiting_stops_the_units_not_yet_started(tables, monkeypatch):
    # before: Ctrl-C (KeyboardInterrupt) in the thread waiting for the pool left the pool's `with`
    # block, which waited for every queued unit to run (here all 8, for an interrupt at 0.2 s): the
    # command line ignored Ctrl-C for the rest of the evaluation; now no unit starts after it
    import concurrent.futures
    import importlib
    import threading
    import time

    from synthzoo.metrics import statistical
    ev = importlib.import_module("synthzoo.metrics.evaluate")
    train, fake, test, schema = tables
    started, lock = [], threading.Lock()

    def slow(*args, **kw):
        with lock:
            started.append(1)
        time.sleep(0.3)
        return 0.0
    real_wait = concurrent.futures.wait

    def interrupted(futures, return_when=None):  # Ctrl-C 0.2 s into the wait
        real_wait(futures, timeout=0.2)
        raise KeyboardInterrupt
    monkeypatch.setattr(concurrent.futures, "wait", interrupted)
    for name in ("tvd_1way", "tvd_2way", "query_error_3way", "association_difference"):
        monkeypatch.setattr(ev, name, slow)
    for name in ("dimensionwise_means", "correlation_difference", "mutual_information_difference"):
        monkeypatch.setattr(statistical, name, slow)
    monkeypatch.setattr(statistical, "hellinger_distance", lambda *a, **k: {"avg": slow()})
    metrics = ["association_diff", "corr_diff", "mi_diff", "tvd_1way", "tvd_2way", "hellinger", "dwm",
               "query_error_3way"]
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        evaluate(train, fake, schema=schema, metrics=metrics, baselines=False, n_jobs=2)
    assert len(started) <= 3 and time.perf_counter() - t0 < 1.0, len(started)


def test_an_error_in_the_progress_callback_ends_the_evaluation(tables):
    # the callback runs on the pool's threads: its error too stops the units not yet started
    train, fake, test, schema = tables
    calls = []

    def progress(*args):
        calls.append(args)
        raise KeyError("progress failed")
    with pytest.raises(KeyError, match="progress failed"):
        evaluate(train, fake, schema=schema, metrics=["tvd_2way", "tvd_1way", "association_diff", "hellinger",
                                                      "dwm", "ks_distance"], baselines=False, n_jobs=2,
                 progress=progress)
    assert len(calls) <= 4


def test_a_small_training_table_is_flagged_with_the_threshold_and_why(tables, tmp_path):
    # before: 20 training rows were scored without a word (domias_auc needs 10, so it gave a number whose
    # every member moves it by 5 points), while a holdout under 40 rows was warned about
    from synthzoo.metrics import write_html_report
    train, fake, test, schema = tables
    small = train.iloc[:20]
    with pytest.warns(UserWarning, match=r"evaluate: only 20 training rows \(fewer than 40\): each is 5 % of every "
                                         r"membership rate and AUC and the fidelity and utility metrics compare"):
        t, details = evaluate(small, fake, test=test, schema=schema, metrics=["domias_auc", "tvd_2way"],
                              baselines=False, n_attacks=50, return_details=True)
    assert len(details["caveats"]) == 1 and details["caveats"][0].startswith("evaluate: only 20 training rows")
    page = write_html_report(tmp_path / "r.html", t, small, fake, schema, details=details).read_text()
    # on the page as a sentence of it, without the warning's "evaluate:" prefix
    assert "Read with care.</b> Only 20 training rows (fewer than 40)" in page
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 120 training rows: no caveat
        assert evaluate(train, fake, schema=schema, metrics=["tvd_2way"], baselines=False,
                        return_details=True)[1]["caveats"] == []


def test_tiny_training_table_gives_nan_with_reason(tables):
    # before: a one-row training table copied into the release scored domias_auc 1.0 (an AUC over one
    # member is 0, 0.5 or 1), and mia_max_auc and mia_classifier_f1 likewise, with no word about it
    train, fake, test, schema = tables
    one = train.iloc[:1]
    metrics = ["domias_auc", "mia_max_auc", "mia_classifier_f1", "dcr_risk"]
    with pytest.warns(UserWarning, match="domias_auc: the training table needs at least 10 rows"):
        t, details = evaluate(one, pd.concat([one, fake], ignore_index=True), test=test, schema=schema,
                              metrics=metrics, baselines=False, n_attacks=50, return_details=True)
    t = t.set_index("metric")["value"]
    assert t[["domias_auc", "mia_max_auc", "mia_classifier_f1"]].isna().all() and np.isfinite(t["dcr_risk"])
    assert details["nan_reasons"] == {
        "domias_auc": "domias_auc: the training table needs at least 10 rows (as the holdout), got 1",
        "mia_max_auc": "membership_attacks: the training table needs at least 10 rows (as the holdout), got 1",
        "mia_classifier_f1": "mia_classifier: needs at least 8 training rows, got 1"}


def test_regression_target_with_missing_values_scores_the_rows_that_have_it(tables):
    # first: a regression target the schema lets be missing, missing in some synthetic rows, ended the whole
    # evaluation with ml_scores' ConfigError; then NaN with that reason.  A model can neither learn from nor be
    # scored on a value that is not there: those rows are left out of their table, and the warning says how many
    train, fake, test, schema = tables
    d = schema.to_dict()
    d["target"], d["task"] = "z", "regression"
    d["columns"]["z"]["missing"] = True
    schema = Schema.from_dict(d)
    fake = fake.assign(z=fake["z"].where(fake.index >= 10))
    test = test.assign(z=test["z"].where(test.index >= 3))
    with pytest.warns(UserWarning) as seen:
        t, details = evaluate(train, fake, test=test, schema=schema, metrics=["ml_rmse", "ml_r2", "tvd_2way"],
                              baselines=False, evaluators=("linear",), return_details=True)
    said = {str(w.message) for w in seen}
    assert f"synthetic table: 10 of its {len(fake):,} rows lack the regression target 'z'; the ML scores leave them " \
           "out" in said
    assert f"test table: 3 of its {len(test):,} rows lack the regression target 'z'; the ML scores leave them out" \
           in said
    t = t.set_index("metric")["value"]
    assert np.isfinite(t[["ml_rmse", "ml_r2", "tvd_2way"]]).all() and not details["nan_reasons"]
    # the same scores as on the tables without those rows
    clean = ml_scores(train, fake[fake.index >= 10], test[test.index >= 3], schema, evaluators=("linear",))
    assert clean.set_index("score").loc["r2", "synthetic"] == pytest.approx(t["ml_r2"])
    # a table where no row has it: NaN with the reason, the other metrics scored
    with pytest.warns(UserWarning, match=r"ml_r2 \(synthetic table: every row lacks the regression target 'z'"):
        t, details = evaluate(train, fake.assign(z=np.nan), test=test, schema=schema, metrics=["ml_r2", "tvd_2way"],
                              baselines=False, evaluators=("linear",), return_details=True)
    t = t.set_index("metric")["value"]
    assert np.isnan(t["ml_r2"]) and np.isfinite(t["tvd_2way"]) and set(details["nan_reasons"]) == {"ml_r2"}


def test_a_target_with_no_other_column_gives_nan_with_reason(tables):
    # before: a schema of the target alone ended the evaluation with numpy's ValueError "need at least
    # one array to concatenate" from the feature encoding
    train, fake, test, schema = tables
    one = Schema.from_dict({"target": "c", "columns": {"c": schema.to_dict()["columns"]["c"]}})
    metrics = ["ml_f1", "ml_cv_f1_diff", "auroc_diff", "tvd_2way"]
    with pytest.warns(UserWarning, match="target 'c': the schema has no other column to predict it from"):
        t, details = evaluate(train[["c"]], fake[["c"]], test=test[["c"]], schema=one, metrics=metrics,
                              baselines=False, evaluators=("linear",), cv_evaluators=("linear",),
                              return_details=True)
    t = t.set_index("metric")["value"]
    assert t[["ml_f1", "ml_cv_f1_diff", "auroc_diff"]].isna().all() and np.isfinite(t["tvd_2way"])
    assert set(details["nan_reasons"]) == {"ml_f1", "ml_cv_f1_diff", "auroc_diff"}


def test_attribute_disclosure_on_one_column_gives_nan_with_reason(tables):
    # before: a one-column table ended metrics="full" with scikit-learn's ValueError "Found array with
    # 0 feature(s)": attribute disclosure predicts each column from the others, and there are none
    train, fake, test, schema = tables
    one = Schema.from_dict({"columns": {"x": schema.to_dict()["columns"]["x"]}})
    with pytest.warns(UserWarning, match=r"attr_disclosure \(attribute_disclosure: needs at least two columns"):
        t = evaluate(train[["x"]], fake[["x"]], test=test[["x"]], schema=one, metrics=["attr_disclosure", "dcr_risk"],
                     attr_trees=5).set_index("metric")
    assert np.isnan(t.loc["attr_disclosure", "value"]) and np.isfinite(t.loc["dcr_risk", "value"])
    assert np.isnan(t.loc["attr_disclosure", "HALF"])  # the baselines, in parts, say the same


def test_pairwise_metrics_on_one_column_are_nan_not_a_perfect_zero(tables, tmp_path):
    # before: a one-column table has no pair of columns, yet association_diff, mi_diff and corr_diff
    # scored 0, which the report read as "at least as good as both references", and its heatmap was
    # an empty frame that leaked matplotlib's "identical low and high xlims" warnings
    from synthzoo.metrics import write_html_report
    train, fake, test, schema = tables
    one = Schema.from_dict({"columns": {"x": schema.to_dict()["columns"]["x"]}})
    pairwise = ["association_diff", "mi_diff", "corr_diff"]
    with pytest.warns(UserWarning, match=r"mi_diff \(mutual_information_difference: needs at least two columns"):
        t, details = evaluate(train[["x"]], fake[["x"]], schema=one, metrics=[*pairwise, "tvd_2way"],
                              baselines=False, return_details=True)
    assert t.set_index("metric")["value"][pairwise].isna().all() and set(details["nan_reasons"]) == set(pairwise)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        page = write_html_report(tmp_path / "r.html", t, train[["x"]], fake[["x"]], one,
                                 details=details).read_text(encoding="utf-8")
    assert "association difference heatmap" not in page and "no pair of columns to compare" in page


def test_cross_validation_with_a_rare_class_names_it_not_scikit_learn(tables):
    # before: scikit-learn's "The least populated class in y has only 3 members, which is less than
    # n_splits=5." reached the user, naming neither the table nor the target
    from synthzoo.metrics import ml_cross_validated
    train, fake, test, schema = tables
    rare = pd.concat([train[train["c"] == "hi"].iloc[:30], train[train["c"] == "lo"].iloc[:3]], ignore_index=True)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        ml_cross_validated(rare, fake, schema, evaluators=("linear",))
    said = [str(w.message) for w in got]
    assert "ml_cross_validated: a class of 'c' has only 3 real rows, fewer than the 5 folds: some folds hold none " \
           "of it" in said
    assert not [s for s in said if "least populated" in s]


def test_pca_with_one_varying_number_is_nan_not_a_perfect_zero(tables):
    # before: beside a constant column (lower == upper, which the schema allows) a single varying number
    # gave both tables one principal axis, the same one: pca_eigval_diff and pca_angle_diff scored 0 for
    # any release, read as "at least as good as the real-data floor"
    train, fake, test, schema = tables
    d = schema.to_dict()
    d["columns"]["z"].update(lower=2, upper=2)
    schema = Schema.from_dict(d)
    train, fake = train.assign(z=2.0), fake.assign(z=2.0, x=-fake["x"] * 3)  # x: another distribution
    with pytest.warns(UserWarning, match="pca_difference: needs at least two numeric columns that vary"):
        t, details = evaluate(train, fake, schema=schema, metrics=["pca_eigval_diff", "pca_angle_diff"],
                              baselines=False, return_details=True)
    assert t["value"].isna().all() and set(details["nan_reasons"]) == {"pca_eigval_diff", "pca_angle_diff"}


def test_mds_on_too_few_records_is_nan_with_reason_and_its_options_fail_at_once(tables):
    # before: three distinct training records ended the evaluation with membership_disclosure's
    # ConfigError once every other metric had run, and so did an odd mds_shadow_models
    from synthzoo.metrics import IndependentSynthesizer
    train, fake, test, schema = tables
    few = pd.concat([train.iloc[:3]] * 4, ignore_index=True)
    with pytest.warns(UserWarning, match=r"mds \(membership_disclosure: needs at least 4 distinct records\)"):
        t = evaluate(few, fake, schema=schema, metrics=["tvd_2way", "mds"], synthesizer_factory=IndependentSynthesizer)
    t = t.set_index("metric")
    assert np.isnan(t.loc["mds", "value"]) and np.isfinite(t.loc["tvd_2way", "value"])
    with pytest.raises(ConfigError, match="mds_shadow_models must be even"):
        evaluate(train, fake, schema=schema, metrics=["tvd_2way", "mds"], synthesizer_factory=IndependentSynthesizer,
                 mds_shadow_models=3, progress=lambda *a: pytest.fail("a metric ran before the option was checked"))


def test_out_of_schema_holdout_values_are_not_said_of_the_training_table(tables):
    # before: a holdout with a category outside the schema also warned "train table, column 'g': ... outside
    # the schema's categories" (the DOMIAS 1-NN attack's targets, half of them holdout rows, in the train
    # role), sending the user to look for the value in a training table that did not hold it
    from synthzoo.metrics import OutOfSchemaWarning, membership_attacks
    train, fake, test, schema = tables
    test = test.assign(g=np.where(test.index < 6, "zz", test["g"]))
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        membership_attacks(train, fake, test, schema, attacks=("domias_1nn",), n_targets=50)
    said = [str(w.message) for w in got if issubclass(w.category, OutOfSchemaWarning)]
    assert said and not [s for s in said if s.startswith("train table")], said


@pytest.mark.parametrize("column", ["g", "x"])
def test_a_list_in_a_cell_is_a_schema_error_naming_table_and_column(tables, column):
    # before: a release holding lists (a JSON field read as is) ended the evaluation with pandas'
    # TypeError "unhashable type: 'list'", naming neither the table nor the column
    train, fake, test, schema = tables
    fake = fake.assign(**{column: [[v] for v in fake[column]]})
    with pytest.raises(SchemaError, match=f"synthetic table: column '{column}': holds list values"):
        evaluate(train, fake, test=test, schema=schema, metrics=["tvd_2way"], baselines=False)


def test_pca_of_a_table_whose_rows_are_all_alike_says_why_it_is_nan(tables):
    # before: a release of one row repeated gave pca_eigval_diff NaN with no reason (numpy's "invalid value
    # encountered in divide" from 0/0 variance ratios) and pca_angle_diff an arbitrary 0.5: the sd of equal
    # numbers is 7e-16, not 0, so the check for a constant column let it through
    train, fake, test, schema = tables
    same = pd.concat([fake.iloc[:1]] * 60, ignore_index=True)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        t, details = evaluate(train, same, schema=schema, metrics=["pca_eigval_diff", "pca_angle_diff"],
                              baselines=False, return_details=True)
    assert t["value"].isna().all() and not [w for w in got if issubclass(w.category, RuntimeWarning)]
    assert details["nan_reasons"]["pca_angle_diff"].startswith("pca_difference: the synthetic table's numbers do "
                                                                "not vary")


def test_singling_out_that_cannot_be_read_gives_its_reason():
    # before: a holdout of one distinct row made singling_out_risk NaN with an empty reason in
    # details["nan_reasons"] (and the report), its RuntimeWarning the only word about it
    rng = np.random.default_rng(3)
    x = rng.normal(size=300).clip(-3, 3)
    df = pd.DataFrame({"x": x, "k": rng.integers(0, 10, 300), "g": rng.choice(["a", "b", "c"], 300),
                       "c": np.where(x + rng.normal(size=300) > 0, "hi", "lo")})
    schema = Schema.from_dict({"columns": {"x": {"type": "numerical", "lower": -3, "upper": 3},
                                           "k": {"type": "numerical", "lower": 0, "upper": 9, "integer": True},
                                           "g": {"type": "categorical", "categories": ["a", "b", "c"]},
                                           "c": {"type": "categorical", "categories": ["hi", "lo"]}}})
    same = pd.concat([df.iloc[200:201]] * 60, ignore_index=True)
    with pytest.warns(RuntimeWarning, match="singling_out_risk: a holdout of 1 row"):
        t, details = evaluate(df.iloc[:100], df.iloc[100:200], test=same, schema=schema, metrics=["singling_out_risk"],
                              baselines=False, n_attacks=200, return_details=True)
    assert np.isnan(t["value"].iloc[0])
    assert details["nan_reasons"]["singling_out_risk"].startswith("singling_out_risk: a holdout of 1 row isolates")


def test_a_holdout_of_a_few_records_repeated_is_warned_about():
    # 60 copies of 3 rows passed the row count, and singling out read .84-.89 for a release that copies nothing
    rng = np.random.default_rng(3)
    x = rng.normal(size=300).clip(-3, 3)
    df = pd.DataFrame({"x": x, "g": rng.choice(["a", "b", "c"], 300)})
    schema = Schema.from_dict({"columns": {"x": {"type": "numerical", "lower": -3, "upper": 3},
                                           "g": {"type": "categorical", "categories": ["a", "b", "c"]}}})
    few = pd.concat([df.iloc[200:203]] * 20, ignore_index=True)
    with pytest.warns(HoldoutWarning, match=r"the holdout \(test\) holds only 3 distinct rows in 60, where as many "
                                            r"training rows hold 60: the privacy risks compare"):
        evaluate(df.iloc[:100], df.iloc[100:200], test=few, schema=schema, metrics=["dcr_risk"], baselines=False)
    with warnings.catch_warnings():  # a coarse table's holdout, as repetitive as its training rows: no such warning
        warnings.simplefilter("error", HoldoutWarning)
        coarse = df.assign(x=np.round(df["x"].clip(-1, 1)))
        with pytest.warns(UserWarning, match="a coarse table"):
            evaluate(coarse.iloc[:100], coarse.iloc[100:200], test=coarse.iloc[200:], schema=schema,
                     metrics=["dcr_risk"], baselines=False)


def test_a_coarse_table_says_a_copy_reads_as_a_fresh_draw():
    # 3 binary columns and a binary target: a verbatim copy of the training rows and a fresh draw scored the same
    # on every privacy risk (0 risk, hitting rate 1), with no word that the attacks cannot see a copy here
    rng = np.random.default_rng(1)

    def draw(n):
        return pd.DataFrame({c: rng.choice(["a", "b"], n) for c in "xyzt"})
    train, test, fresh = draw(400), draw(400), draw(400)
    schema = Schema.from_dict({"columns": {c: {"type": "categorical", "categories": ["a", "b"]} for c in "xyzt"}})
    scores = []
    for fake in (train.copy(), fresh):
        with pytest.warns(UserWarning, match=r"evaluate: 100% of the training rows have an exact duplicate among the "
                                             r"training rows \(a coarse table\): a release that copies training "
                                             r"rows scores as a fresh draw on every privacy risk") as rec:
            r = evaluate(train, fake, test=test, schema=schema, metrics=["dcr_risk", "identical_match_risk"],
                         baselines=False)
        assert not [w for w in rec if issubclass(w.category, HoldoutWarning)]
        scores.append(r.set_index("metric")["value"].to_dict())
    assert scores[0] == scores[1] == {"dcr_risk": 0.0, "identical_match_risk": 0.0}
    with warnings.catch_warnings():  # adult-like rows, with a continuous column: not coarse, no such warning
        warnings.simplefilter("error")
        wide = train.assign(w=rng.normal(size=400).clip(-3, 3))
        wide_schema = Schema.from_dict({"columns": schema.to_dict()["columns"]
                                        | {"w": {"type": "numerical", "lower": -3, "upper": 3}}})
        evaluate(wide, wide.sample(frac=1, random_state=0), test=test.assign(w=rng.normal(size=400).clip(-3, 3)),
                 schema=wide_schema, metrics=["dcr_risk"], baselines=False)


@pytest.mark.parametrize("task", [None, "binary classification"])
def test_a_target_that_is_no_column_fails_before_any_metric_runs(tables, task):
    # a target set or misspelt in Python (schema.meta["target"] = ...; from_dict checks it) failed with a bare
    # KeyError 'income ' from the schema, or, with a task, only when the ML metrics came to run
    train, fake, test, schema = tables
    typo = Schema.from_dict(schema.to_dict())
    typo.meta.update(target="income ", task=task)
    ran = []
    with pytest.raises(ConfigError, match=r"the schema's \"target\" 'income ' is not one of its columns \['x', 'z'"):
        evaluate(train, fake, test=test, schema=typo, metrics=["tvd_2way", "ml_f1"], baselines=False,
                 progress=lambda *a: ran.append(a))
    assert not ran


def test_the_default_run_says_what_it_leaves_out_and_why(tables):
    # sz.evaluate(train, fake, schema=...) without a target or a holdout left the ML metrics and the attacks out
    # in silence (only `synthzoo eval` printed it); the default run now warns as the command line prints
    train, fake, test, schema = tables
    no_target = Schema.from_dict(schema.to_dict())
    no_target.meta.pop("target", None)
    no_target.meta.pop("task", None)
    for holdout, sch, said_first in ((None, schema, "evaluate: without test=, skipped "),
                                     (test, no_target, 'evaluate: the schema names no "target", so nothing to '
                                                       "predict: skipped ml_")):
        with pytest.warns(UserWarning) as rec:
            table = evaluate(train, fake, test=holdout, schema=sch, baselines=False, wasserstein_rows=50,
                             n_attacks=20, nnaa_resamples=1, attr_trees=2, cv_evaluators=("linear",))
        said = [str(w.message) for w in rec if "skipped" in str(w.message)]
        assert len(said) == 1 and said[0].startswith(said_first), said
        assert (holdout is None) == ("synthzoo.datasets.train_test_split makes them" in said[0])
        assert (holdout is None) != ('add "target" and "task" to the schema' in said[0])
        assert not any(m in said[0] for m in table["metric"])  # what was scored is not said to be skipped
    with warnings.catch_warnings(record=True) as rec:  # metrics named: nothing left out by default, nothing said
        warnings.simplefilter("always")
        evaluate(train, fake, schema=no_target, metrics=["tvd_1way"], baselines=False)
    assert not [w for w in rec if "skipped" in str(w.message)]


def test_what_the_default_run_leaves_out_is_in_the_report_and_a_named_ml_metric_without_target_is_an_error(tables):
    # without a target the ML metrics were left out with a warning only: the report (details["caveats"], which the
    # HTML page prints) did not say so; and ["tvd_2way", "ml_f1"] dropped ml_f1 with a warning, not an error
    train, fake, test, schema = tables
    no_target = Schema.from_dict(schema.to_dict())
    no_target.meta.pop("target", None)
    no_target.meta.pop("task", None)
    with pytest.warns(UserWarning, match='names no "target"'):
        table, details = evaluate(train, fake, test=test, schema=no_target, baselines=False, wasserstein_rows=50,
                                  n_attacks=20, nnaa_resamples=1, attr_trees=2, return_details=True)
    said = [c for c in details["caveats"] if 'names no "target"' in c]
    assert len(said) == 1 and "skipped ml_f1" in said[0] and not table["metric"].str.startswith("ml_").any()
    ran = []
    with pytest.raises(ConfigError, match=r"metrics \['ml_f1'\] predict a target column, but the schema names no "
                                          r"\"target\"; add \"target\" \(and \"task\"\) to the schema, or leave them "
                                          r"out of metrics"):
        evaluate(train, fake, test=test, schema=no_target, metrics=["tvd_2way", "ml_f1"], baselines=False,
                 progress=lambda *a: ran.append(a))
    assert not ran


def test_values_beyond_the_schema_are_said_once_per_table_and_column(tables):
    # before: one column beyond its bounds in the three tables was said in 90 warnings (every metric read
    # it again, on subsamples and the baselines' halves too, with counts of their own: '64 values', '68
    # values', ...); now once per table and column, with the whole table's count, and in details["caveats"]
    from synthzoo.metrics import OutOfSchemaWarning
    train, fake, test, schema = tables
    narrow = Schema.from_dict({**schema.to_dict(), "columns": {**schema.to_dict()["columns"],
                                                              "x": {"type": "numerical", "lower": -1, "upper": 1}}})
    fake = fake.assign(g=np.where(fake.index < 3, "zz", fake["g"]))
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        _, details = evaluate(train, fake, test, schema=narrow, n_attacks=40, return_details=True)
    said = sorted(str(w.message) for w in got if issubclass(w.category, OutOfSchemaWarning))
    n = {role: int(((t["x"] < -1) | (t["x"] > 1)).sum()) for role, t in (("train", train), ("synthetic", fake),
                                                                          ("test", test))}
    assert [s.split(":")[0] for s in said] == ["synthetic table, column 'g'", "synthetic table, column 'x'",
                                               "test table, column 'x'", "train table, column 'x'"], said
    assert all(f"{n[s.split()[0]]} values outside the public bounds" in s for s in said if "'x'" in s), (said, n)
    assert "3 values outside the schema's categories" in said[0]
    assert set(said) <= set(details["caveats"])
