"""Tests of synthzoo.metrics: marginal metrics, input checking, baselines, report."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from synthzoo.core import ConfigError, Schema, SchemaError
from synthzoo.metrics import (
    BootstrapSynthesizer,
    CopySynthesizer,
    IndependentSynthesizer,
    OutOfSchemaWarning,
    association_difference,
    dcr_risk,
    domias_auc,
    evaluate,
    evaluate_files,
    identical_match_share,
    inference_risk,
    leaky_risk_table,
    linkability_risk,
    membership_disclosure,
    membership_disclosure_score,
    ml_affinity,
    ml_scores,
    nndr_risk,
    normalised_risk,
    privacy_scores,
    query_error_3way,
    singling_out_risk,
    tvd_1way,
    tvd_2way,
    tvd_2way_matrix,
    wasserstein_fidelity,
    wasserstein_marginals,
    write_html_report,
)
from synthzoo.metrics.leaky import is_monotone


def toy(n=400, seed=0):
    """A small mixed table with a strong correlation between x and c and some missing values."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    c = np.where(x + 0.3 * rng.normal(size=n) > 0, "hi", "lo")
    y = np.where(rng.random(n) < 0.1, np.nan, np.round(rng.uniform(0, 10, n)))
    g = rng.choice(["a", "b", "c"], size=n)
    df = pd.DataFrame({"x": np.clip(x, -4, 4), "c": c, "y": y, "g": g})
    schema = Schema.from_dict({"columns": {
        "x": {"type": "numerical", "lower": -4, "upper": 4},
        "c": {"type": "categorical", "categories": ["hi", "lo"]},
        "y": {"type": "numerical", "lower": 0, "upper": 10, "integer": True, "missing": True},
        "g": {"type": "categorical", "categories": ["a", "b", "c"]}}})
    return df, schema


def independent(df, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: df[c].to_numpy()[rng.integers(len(df), size=len(df))] for c in df.columns})


def test_identical_tables_score_zero():
    df, schema = toy()
    assert tvd_2way(df, df, schema) == 0.0
    assert tvd_1way(df, df, schema) == 0.0
    assert query_error_3way(df, df, schema, n_queries=200) == 0.0


def test_marginal_metrics_see_correlation():
    df, schema = toy(2000)
    a, b = df.iloc[:1000], df.iloc[1000:]
    ind = independent(df)
    assert tvd_2way(a, b, schema) < tvd_2way(df, ind, schema)
    assert query_error_3way(a, b, schema) < query_error_3way(df, ind, schema)


def test_tvd_hand_computed():
    schema = Schema.from_dict({"columns": {"a": {"type": "categorical", "categories": ["0", "1"]},
                                           "b": {"type": "categorical", "categories": ["0", "1"]}}})
    real = pd.DataFrame({"a": ["0", "0", "1", "1"], "b": ["0", "0", "1", "1"]})
    fake = pd.DataFrame({"a": ["0", "1", "0", "1"], "b": ["0", "0", "1", "1"]})
    # real joint: (0,0)=.5 (1,1)=.5; fake: (0,0)=.25 (1,0)=.25 (0,1)=.25 (1,1)=.25 -> TVD 0.5
    assert tvd_2way(real, fake, schema) == pytest.approx(0.5)
    assert tvd_2way_matrix(real, fake, schema).loc["a", "b"] == pytest.approx(0.5)
    assert tvd_1way(real, fake, schema) == 0.0


def test_query_error_is_seeded():
    df, schema = toy()
    ind = independent(df)
    assert query_error_3way(df, ind, schema, seed=3) == query_error_3way(df, ind, schema, seed=3)
    assert query_error_3way(df, ind, schema, seed=3) != query_error_3way(df, ind, schema, seed=4)


@pytest.mark.datasets
def test_adult_reference_values(adult):
    df, schema = adult
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(df))
    h = len(df) // 2
    half = tvd_2way(df.iloc[idx[:h]], df.iloc[idx[h:]], schema)
    ind = tvd_2way(df, independent(df), schema)
    assert 0.015 < half < 0.03
    assert 0.06 < ind < 0.09


def test_bad_input_clear_errors():
    df, schema = toy()
    with pytest.raises(SchemaError, match="lacks schema column"):
        tvd_2way(df, df.drop(columns="g"), schema)
    with pytest.raises(SchemaError, match="does not describe"):
        tvd_2way(df, df.assign(z=1), schema)
    with pytest.raises(SchemaError, match="empty"):
        query_error_3way(df, df.iloc[:0], schema)
    bad = df.copy()
    bad.loc[0, "x"] = np.nan
    with pytest.raises(SchemaError, match="'x'.*missing"):
        tvd_2way(df, bad, schema)


def test_out_of_schema_value_is_a_mismatch_with_warning():
    df, schema = toy()
    fake = df.copy()
    fake["g"] = "zzz"
    with pytest.warns(OutOfSchemaWarning, match="'g'"):
        v = tvd_1way(df, fake, schema)
    assert v == pytest.approx(0.25)  # g contributes TVD 1, the other three 0
    fake = df.copy()
    fake["x"] = 100.0
    with pytest.warns(OutOfSchemaWarning, match="bounds"):
        assert tvd_1way(df, fake, schema) > 0


def test_wasserstein_zero_on_identical_and_sees_correlation():
    df, schema = toy(1200)
    assert wasserstein_fidelity(df, df, schema, max_rows=500) == pytest.approx(0.0, abs=1e-12)
    a, b = df.iloc[:600], df.iloc[600:]
    assert wasserstein_fidelity(a, b, schema) < wasserstein_fidelity(a, independent(b), schema)


def test_wasserstein_hand_computed():
    schema = Schema.from_dict({"columns": {"x": {"type": "numerical", "lower": 0, "upper": 10},
                                           "c": {"type": "categorical", "categories": ["a", "b"]}}})
    real = pd.DataFrame({"x": [0.0, 10.0], "c": ["a", "b"]})
    fake = pd.DataFrame({"x": [5.0, 10.0], "c": ["b", "b"]})
    m = wasserstein_marginals(real, fake, schema).set_index("attrs")["distance"]
    assert m["x"] == pytest.approx(0.25)        # half the mass moves 0.5 of the range
    assert m["c"] == pytest.approx(0.5)         # TVD
    # pair: (0,a)->(5,b) costs 0.5 + 1, (10,b)->(10,b) costs 0; each half the mass
    assert m["x|c"] == pytest.approx(0.75)


def test_wasserstein_missing_values_cost_one():
    schema = Schema.from_dict({"columns": {"x": {"type": "numerical", "lower": 0, "upper": 1, "missing": True},
                                           "c": {"type": "categorical", "categories": ["a"]}}})
    real = pd.DataFrame({"x": [0.5, np.nan], "c": ["a", "a"]})
    fake = pd.DataFrame({"x": [0.5, 0.5], "c": ["a", "a"]})
    m = wasserstein_marginals(real, fake, schema).set_index("attrs")["distance"]
    assert m["x"] == pytest.approx(0.5)


def test_association_difference_sees_broken_correlation():
    df, schema = toy(1000)
    assert association_difference(df, df, schema) == 0.0
    a, b = df.iloc[:500], df.iloc[500:]
    assert association_difference(a, b, schema) < association_difference(a, independent(b), schema)


def test_ml_scores_classification_and_affinity():
    df, schema = toy(1500)
    schema.meta.update(target="c", task="binary classification")
    train, test = df.iloc[:1000], df.iloc[1000:]
    res = ml_scores(train, train, test, schema, evaluators=("linear", "gbm"))
    assert set(res["score"]) == {"f1", "auc"} and set(res["evaluator"]) == {"linear", "gbm"}
    assert np.allclose(res["gap"], 0.0)
    assert (res["real"] > 0.8).all()
    assert ml_affinity(train, independent(train), test, schema, evaluators=("linear",)) > 0.2


def test_ml_single_class_synthetic_warns_not_crashes():
    df, schema = toy(600)
    schema.meta.update(target="c", task="binary classification")
    fake = df.iloc[:300].assign(c="hi")
    # the table it names is the release ("training table" read as the real rows)
    with pytest.warns(UserWarning, match="^synthetic table holds a single target class; the evaluators"):
        res = ml_scores(df.iloc[:300], fake, df.iloc[300:], schema, evaluators=("linear",))
    assert (res.loc[res.score == "auc", "synthetic"] == 0.5).all()


def test_ml_regression():
    df, schema = toy(1200)
    schema.meta.update(target="x", task="regression")
    res = ml_scores(df.iloc[:800], df.iloc[:800], df.iloc[800:], schema, evaluators=("linear", "mlp"))
    assert set(res["score"]) == {"rmse", "r2"}
    assert (res.loc[res.score == "r2", "real"] > 0.3).all()


def test_ml_unknown_evaluator():
    df, schema = toy(300)
    schema.meta.update(target="c")
    with pytest.raises(ConfigError, match="evaluator"):
        ml_scores(df, df, df, schema, evaluators=("nope",))


def _split3(n=1500, seed=0):
    df, schema = toy(n, seed)
    k = n // 3
    return df.iloc[:k].reset_index(drop=True), df.iloc[k:2 * k].reset_index(drop=True), \
        df.iloc[2 * k:].reset_index(drop=True), schema


def test_self_release_is_maximal_risk_and_nonmember_release_is_not():
    train, holdout, other, schema = _split3()
    self_ = privacy_scores(train, train, holdout, schema, n_attacks=300).set_index("metric")["risk"]
    assert self_["dcr_risk"] == 1 and self_["identical_match_risk"] == 1 and self_["nndr_risk"] == 1
    assert self_["domias_auc"] > 0.95
    for m in ("singling_out_risk", "linkability_risk", "inference_risk"):
        assert self_[m] > 0.9, m
    other_ = privacy_scores(train, other, holdout, schema, n_attacks=300).set_index("metric")["risk"]
    for m in ("dcr_risk", "identical_match_risk", "nndr_risk", "singling_out_risk", "linkability_risk"):
        assert abs(other_[m]) < 0.15, (m, other_[m])
    assert abs(other_["domias_auc"] - 0.5) < 0.1


def test_single_privacy_functions_agree_with_privacy_scores():
    train, holdout, other, schema = _split3(900)
    assert dcr_risk(train, train, holdout, schema) == 1.0
    assert nndr_risk(train, train, holdout, schema) == 1.0
    assert identical_match_share(train, train, schema) == 1.0
    assert identical_match_share(train, other, schema) == 0.0
    assert domias_auc(train, train, holdout, schema) > 0.95
    r = inference_risk(train, train, holdout, schema, secret="g", n_attacks=200)
    assert r["ci_low"] <= r["risk"] <= r["ci_high"] and r["risk"] > 0.9
    assert linkability_risk(train, train, holdout, schema, n_attacks=200)["risk"] > 0.9
    assert singling_out_risk(train, train, holdout, schema, n_attacks=100)["risk"] > 0.5


def test_normalised_risk_formula():
    r = normalised_risk(80, 100, 50, 100)
    assert r["risk"] == pytest.approx((0.8 - 0.5) / 0.5)
    assert r["ci_low"] < r["risk"] < r["ci_high"]
    assert normalised_risk(10, 100, 10, 100)["risk"] == 0.0


def test_privacy_needs_holdout():
    train, holdout, other, schema = _split3(300)
    with pytest.raises(ConfigError, match="holdout"):
        privacy_scores(train, other, None, schema)


def test_leaky_risk_model_monotone_small_table():
    df, schema = toy(1800, seed=1)
    table = leaky_risk_table(df, schema, n_attacks=300, mds_shadow_models=10)
    for metric, row in table.iterrows():
        if metric == "singling_out_risk":
            # Anonymeter's tail predicates respond to which member rows a release holds, not only to
            # how many: on 600-row parts one release at f = 0.6 scores below f = 0.4 whatever the
            # number of predicates. The trend and both ends still hold.
            from scipy.stats import spearmanr
            assert spearmanr(row.index, row.to_numpy())[0] >= 0.7, row.round(3).tolist()
            assert abs(row[0.0]) < 0.1 and row[1.0] == 1.0, row.round(3).tolist()
            continue
        assert is_monotone(row.to_numpy(), tol=0.06), (metric, row.round(3).tolist())
    for m in ("dcr_risk", "identical_match_risk", "nndr_risk", "domias_auc", "linkability_risk", "inference_risk"):
        assert table.loc[m, 1.0] > 0.95, m  # the defined maximum at f = 1
    assert table.loc["identical_match_risk", 0.0] == 0.0


@pytest.mark.slow
def test_leaky_risk_model_monotone_adult(adult):
    df, schema = adult
    table = leaky_risk_table(df, schema, n_attacks=1000, mds_shadow_models=10)
    for metric, row in table.iterrows():
        assert is_monotone(row.to_numpy(), tol=0.03), (metric, row.round(3).tolist())
    for m in ("dcr_risk", "identical_match_risk", "nndr_risk", "domias_auc", "linkability_risk", "inference_risk",
              "singling_out_risk"):
        assert table.loc[m, 1.0] > 0.95, m


def test_mds_copy_beats_independent_and_bootstrap_leaks():
    df, schema = toy(600)
    copy = membership_disclosure_score(df, schema, CopySynthesizer, n_shadow=4)
    boot = membership_disclosure_score(df, schema, BootstrapSynthesizer, n_shadow=4)
    ind = membership_disclosure_score(df, schema, IndependentSynthesizer, n_shadow=4)
    assert copy > ind and boot > ind
    res = membership_disclosure(df, schema, CopySynthesizer, n_shadow=2, max_records=50)
    assert len(res["ds"]) == 50 and np.all(res["d_in"] == 0)
    with pytest.raises(ConfigError, match="even"):
        membership_disclosure(df, schema, CopySynthesizer, n_shadow=3)


@pytest.fixture(scope="module")
def toy_eval():
    df, schema = toy(1600, seed=2)
    schema.meta.update(target="c", task="binary classification")
    train, test = df.iloc[:1200].reset_index(drop=True), df.iloc[1200:].reset_index(drop=True)
    fake = independent(train, seed=9)
    table = evaluate(train, fake, test=test, schema=schema, evaluators=("linear", "gbm"), n_attacks=200)
    return train, test, fake, schema, table


def test_evaluate_table_shape_and_baselines(toy_eval):
    train, test, fake, schema, table = toy_eval
    assert list(table.columns) == ["metric", "group", "value", "ci_low", "ci_high", "HALF", "INDEPENDENT", "SELF",
                                   "better", "description"]
    t = table.set_index("metric")
    assert {"wasserstein", "tvd_2way", "query_error_3way", "ml_f1", "ml_auc", "ml_affinity", "dcr_risk",
            "domias_auc", "inference_risk"} <= set(t.index)
    for m, row in t[t.group != "privacy"].iterrows():
        if row.better == "lower":
            assert row.HALF < row.INDEPENDENT, m
        else:
            assert row.HALF > row.INDEPENDENT, m
    priv = t[t.group == "privacy"]
    assert (priv.SELF >= priv[["HALF", "INDEPENDENT"]].max(axis=1)).all()
    assert (t.loc[["dcr_risk", "identical_match_risk", "nndr_risk"], "SELF"] == 1).all()


def test_evaluate_metric_selection_and_errors(toy_eval):
    train, test, fake, schema, _ = toy_eval
    t = evaluate(train, fake, schema=schema, metrics=["tvd_2way", "query_error_3way"], baselines=False)
    assert list(t.metric) == ["tvd_2way", "query_error_3way"] and t.HALF.isna().all()
    t = evaluate(train, fake, schema=schema, metrics="fidelity", baselines=False)
    assert set(t.group) == {"fidelity"}
    with pytest.raises(ConfigError, match="test"):
        evaluate(train, fake, schema=schema, metrics=["dcr_risk"])
    with pytest.raises(ConfigError, match="unknown metric"):
        evaluate(train, fake, test=test, schema=schema, metrics=["nope"])
    with pytest.raises(ConfigError, match="synthesizer_factory"):
        evaluate(train, fake, test=test, schema=schema, metrics=["mds"])
    with pytest.raises(SchemaError, match="empty"):
        evaluate(train, fake.iloc[:0], test=test, schema=schema)
    with pytest.raises(SchemaError, match="lacks"):
        evaluate(train, fake.drop(columns="x"), test=test, schema=schema)
    with pytest.raises(ConfigError, match="schema"):
        evaluate(train, fake)


def test_evaluate_out_of_schema_synthetic_value_warns(toy_eval):
    train, test, fake, schema, _ = toy_eval
    bad = fake.copy()
    bad.loc[:10, "g"] = "unheard-of"
    with pytest.warns(OutOfSchemaWarning, match="'g'"):
        t = evaluate(train, bad, test=test, schema=schema, baselines=False, evaluators=("linear",), n_attacks=100)
    assert t["value"].notna().all()


def test_evaluate_with_mds(toy_eval):
    train, test, fake, schema, _ = toy_eval
    t = evaluate(train, fake, test=test, schema=schema, metrics=["mds"], synthesizer_factory=BootstrapSynthesizer,
                 mds_shadow_models=4).set_index("metric")
    # a bootstrap can even exceed SELF (its releases hold fewer distinct rows, so non-members
    # sit further away); both copy records and stand far above the independent columns
    assert min(t.loc["mds", "SELF"], t.loc["mds", "value"]) > t.loc["mds", "INDEPENDENT"]


def test_html_report_and_files(toy_eval, tmp_path):
    train, test, fake, schema, table = toy_eval
    out = write_html_report(tmp_path / "r.html", table, train, fake, schema)
    text = out.read_text()
    assert text.count("data:image/png;base64,") == len(schema) + 1
    assert "INDEPENDENT" in text and "wasserstein" in text
    # it shows the real rows' count, histograms and attack results: it says it is not covered by DP
    assert text.index("Not for publication") < text.index("wasserstein") and "no differential privacy" in text
    train.to_csv(tmp_path / "real.csv", index=False)
    fake.to_csv(tmp_path / "fake.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    t = evaluate_files(tmp_path / "real.csv", tmp_path / "fake.csv", test=tmp_path / "test.csv",
                       schema=tmp_path / "schema.json", out=tmp_path / "rep.html", metrics=["tvd_2way", "ml_f1"],
                       evaluators=("linear",))
    assert (tmp_path / "rep.html").exists() and set(t.metric) == {"tvd_2way", "ml_f1"}
    with pytest.raises(ConfigError, match="not found"):
        evaluate_files(tmp_path / "nope.csv", tmp_path / "fake.csv", out=tmp_path / "x.html")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["adult", "hmeq", "housing"])
def test_half_beats_independent_on_datasets(name, request):
    df, schema = request.getfixturevalue(name)
    idx = np.random.default_rng(0).permutation(len(df))
    n = int(0.8 * len(df))
    train, test = df.iloc[idx[:n]].reset_index(drop=True), df.iloc[idx[n:]].reset_index(drop=True)
    t = evaluate(train, train.iloc[:100], test=test, schema=schema, metrics=["fidelity", "utility"]).set_index("metric")
    for m, row in t.iterrows():
        if row.better == "lower":
            assert row.HALF < row.INDEPENDENT, (m, row.HALF, row.INDEPENDENT)
        else:
            assert row.HALF > row.INDEPENDENT, (m, row.HALF, row.INDEPENDENT)


def test_ml_multiclass_target():
    df, schema = toy(900)
    schema.meta.update(target="g", task="multiclass classification")
    res = ml_scores(df.iloc[:600], df.iloc[:600], df.iloc[600:], schema, evaluators=("linear", "rf"))
    auc = res.loc[res.score == "auc", "real"]
    assert auc.between(0.3, 0.7).all()  # g is independent of everything: chance level


@pytest.mark.slow
def test_mds_privsyn_preset_on_adult(adult):
    """MDS of the privsyn preset (4 shadow models) sits far below a copying synthesizer's."""
    import synthzoo as sz
    df, schema = adult
    data = df.sample(6000, random_state=0).reset_index(drop=True)
    priv = membership_disclosure_score(
        data, schema, lambda s: sz.make("privsyn", epsilon=1.0, delta=1e-5, schema=schema, seed=s), n_shadow=4)
    copy = membership_disclosure_score(data, schema, CopySynthesizer, n_shadow=4)
    assert priv < 0.5 * copy


def test_evaluate_without_target_skips_ml_by_default():
    df, schema = toy(900)
    t = evaluate(df.iloc[:600], independent(df.iloc[:600]), test=df.iloc[600:], schema=schema, baselines=False,
                 n_attacks=100)
    assert not any(m.startswith("ml_") for m in t.metric) and "dcr_risk" in set(t.metric)
    with pytest.raises(ConfigError, match="target"):
        evaluate(df.iloc[:600], df.iloc[:600], test=df.iloc[600:], schema=schema, metrics=["ml_f1"])


def test_datetime_columns_are_scored():
    rng = np.random.default_rng(0)
    n = 300
    days = rng.integers(0, 365, n)
    df = pd.DataFrame({"when": pd.Timestamp("2020-01-01") + pd.to_timedelta(days, unit="D"),
                       "late": np.where(days > 180, "yes", "no")})
    schema = Schema.from_dict({"columns": {
        "when": {"type": "datetime", "lower": "2020-01-01", "upper": "2020-12-31"},
        "late": {"type": "categorical", "categories": ["no", "yes"]}}})
    a, b = df.iloc[:150], df.iloc[150:]
    shuffled = b.assign(late=rng.permutation(b["late"].to_numpy()))
    assert tvd_2way(a, b, schema) < tvd_2way(a, shuffled, schema)
    assert wasserstein_fidelity(a, b, schema) < wasserstein_fidelity(a, shuffled, schema)
    assert identical_match_share(df, df, schema) == 1.0
    # CSV round trip: datetimes come back as strings and are parsed by the schema
    as_text = df.assign(when=df["when"].astype(str))
    assert tvd_2way(df, as_text, schema) == 0.0


def test_cli_eval_entry_point(tmp_path, capsys):
    from synthzoo.cli import main

    df, schema = toy(600)
    df.iloc[:300].to_csv(tmp_path / "real.csv", index=False)
    independent(df.iloc[:300]).to_csv(tmp_path / "fake.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    assert main(["eval", str(tmp_path / "real.csv"), str(tmp_path / "fake.csv"), "--schema",
                 str(tmp_path / "schema.json"), "--out", str(tmp_path / "r.html"),
                 "--metrics", "tvd_2way,query_error_3way"]) == 0
    assert (tmp_path / "r.html").exists() and "tvd_2way" in capsys.readouterr().out


def test_html_privacy_table_explains_rows_without_an_interval():
    # the 95 % CI column was left blank for the distance metrics and DOMIAS, unexplained
    from synthzoo.metrics.html import _table

    sub = pd.DataFrame([
        {"metric": "dcr_risk", "group": "privacy", "value": -0.01, "ci_low": np.nan, "ci_high": np.nan,
         "HALF": 0.0, "INDEPENDENT": -0.05, "SELF": 1.0, "better": "lower", "description": "d"},
        {"metric": "singling_out_risk", "group": "privacy", "value": 0.1, "ci_low": 0.05, "ci_high": 0.15,
         "HALF": 0.1, "INDEPENDENT": 0.0, "SELF": 1.0, "better": "lower", "description": "s"}])
    text = "".join(_table(sub))
    assert "&mdash;" in text and "have none" in text and "[0.05, 0.15]" in text
    assert "have none" not in "".join(_table(sub.iloc[1:]))  # every row has one: nothing to explain


def test_a_metric_named_that_does_not_apply_is_said_not_dropped_silently():
    # metrics=["ml_rmse"] on a classification target returned an empty frame; ["tvd_2way", "ml_r2"] just tvd_2way
    from synthzoo.metrics.evaluate import _resolve_metrics

    with pytest.raises(ConfigError, match=r"metrics \['ml_rmse'\] do not apply here: the schema's task is "
                                          r"'binary classification'"):
        _resolve_metrics(["ml_rmse"], True, False, "binary classification")
    with pytest.warns(UserWarning, match=r"\['ml_r2'\] do not apply here.*left out"):
        assert _resolve_metrics(["tvd_2way", "ml_r2"], True, False, "binary classification") == ["tvd_2way"]
    with pytest.raises(ConfigError, match="empty list names no metric"):
        _resolve_metrics([], True, False, None)
    assert "ml_rmse" not in _resolve_metrics(["utility"], True, False, "binary classification")  # a group: quiet


@pytest.mark.parametrize("given", ["", "  "])
def test_evaluate_empty_metric_string_is_an_error_naming_the_field_and_the_metrics(given):
    # metrics="" read as the one name '' ("unknown metric or set ''"); it names no metric, as [] does
    from synthzoo.datasets import make_demo

    tr, s = make_demo(60, seed=0)
    with pytest.raises(ConfigError, match=r"^metrics: an empty string names no metric; choose from .*tvd_2way"):
        evaluate(tr, tr, schema=s, metrics=given)


def test_html_reading_follows_the_better_direction_and_copies():
    """The report's "reading" column: a value better than both references (INDEPENDENT above HALF
    for a higher-is-better metric) read "no better than independent columns", and 100 verbatim rows
    of 1,500 (identical-match .067, HALF 0, SELF 1) read "like a non-member release"."""
    from synthzoo.metrics.html import _verdict
    rows = [dict(metric="identical_match_risk", group="privacy", value=0.0667, HALF=0.0, INDEPENDENT=0.0, SELF=1.0,
                 better="lower"),
            dict(metric="dcr_risk", group="privacy", value=0.0772, HALF=0.0161, INDEPENDENT=-0.05, SELF=1.0,
                 better="lower"),
            dict(metric="ml_f1", group="utility", value=0.1497, HALF=0.1227, INDEPENDENT=0.1364, SELF=0.1262,
                 better="higher"),
            dict(metric="ml_affinity", group="utility", value=-0.1112, HALF=0.0106, INDEPENDENT=-0.0233, SELF=0.0,
                 better="lower")]
    got = [_verdict(r) for r in rows]
    assert got[0].startswith("some leakage") and got[1].startswith("some leakage"), got
    assert "no better than independent" not in got[2] and "no better than independent" not in got[3], got
    assert got[2].startswith("at least as good as both")
    # higher-is-better with separated references: the position is measured the right way round
    r = dict(metric="ml_f1", group="utility", value=0.80, HALF=0.81, INDEPENDENT=0.50, SELF=0.81, better="higher")
    assert _verdict(r) == "near the real-data floor"
    assert _verdict({**r, "value": 0.52}) == "no better than independent columns"
    # a risk whose CI holds the HALF value reads as a non-member release
    r = dict(metric="inference_risk", group="privacy", value=0.03, ci_low=-0.02, ci_high=0.08, HALF=0.0, SELF=1.0,
             better="lower")
    assert _verdict(r) == "like a non-member release"
    assert _verdict({**r, "ci_low": 0.01}).startswith("some leakage")


def test_ml_cross_validated_is_unbiased_for_a_fresh_sample_of_the_generator():
    """The real rows were bootstrapped before the folds, so held-out folds held copies of training
    rows: a fresh sample of the true generator scored rf diff -.46 on make_demo's region target
    (0 = as useful as the real rows).  Now the real rows are folded as they are."""
    from synthzoo.datasets import make_demo
    from synthzoo.metrics.ml import ml_cross_validated
    tr, schema = make_demo(600, seed=0)
    syn, _ = make_demo(600, seed=2)
    s = Schema([schema[c] for c in schema.names], {**schema.meta, "target": "region", "task": "classification"})
    d = ml_cross_validated(tr, syn, s, evaluators=("rf",), seed=0).set_index("evaluator")
    assert abs(d.loc["rf", "diff"]) < 0.08, d
    # a release that copies the training rows still shows its leak into the held-out folds
    assert ml_cross_validated(tr, tr, s, evaluators=("rf",), seed=0)["diff"].iloc[0] > 0.2


def test_nnaa_interval_has_the_rows_sampling_width():
    """With tables of sizes within 2x, nnaa ran one exact pass and reported a standard error of 0
    (a zero-width CI for nnaa_privacy_loss).  The error is now the rows' sampling error: over 12
    independent draws of 600-row tables the loss's spread was .022, the mean reported SE .020."""
    from synthzoo.datasets import make_demo
    from synthzoo.metrics.disclosure import nnaa
    tr, s = make_demo(400, seed=0)
    r = nnaa(tr, make_demo(400, seed=2)[0], s, holdout=make_demo(400, seed=1)[0])
    assert 0.01 < r["privacy_loss_se"] < 0.06 and r["nnaa_se"] > 0.005, r
    out = evaluate(tr, make_demo(400, seed=2)[0], test=make_demo(400, seed=1)[0], schema=s,
                   metrics=["nnaa_privacy_loss"], baselines=False).iloc[0]
    assert out["ci_high"] - out["ci_low"] > 0.04, out


def test_holdout_equal_to_the_training_rows_warns():
    """test == train made every privacy risk compare the release with its own training rows, in
    silence (a verbatim copy scored dcr_risk 0).  Now a HoldoutWarning says so, as it does for a
    holdout mostly made of training rows and for one under 40 rows; a NaN value is named."""
    from synthzoo.datasets import make_demo
    from synthzoo.metrics import HoldoutWarning
    tr, s = make_demo(400, seed=0)
    syn, te = make_demo(400, seed=2)[0], make_demo(200, seed=1)[0]
    m = dict(schema=s, metrics=["dcr_risk", "mia_tpr_1pct"], baselines=False, n_jobs=1)
    for test in (tr, tr.sample(frac=1, random_state=0), pd.concat([tr.iloc[:150], te.iloc[:50]])):
        with pytest.warns(HoldoutWarning, match="training rows"):
            evaluate(tr, syn, test=test, **m)
    with warnings.catch_warnings():
        warnings.simplefilter("error", HoldoutWarning)
        evaluate(tr, syn, test=te, **m)  # real unseen rows: no warning
    with pytest.warns(HoldoutWarning, match="only 15 holdout"), pytest.warns(UserWarning, match="mia_tpr_1pct"):
        evaluate(tr, syn, test=te.iloc[:15], **m)


def test_a_small_holdout_keeps_singling_outs_scale():
    """Both sides of singling out are compared at the holdout's size, and R was read against 1: at 1:4 a
    verbatim copy scored about 0.13 (hmeq, README's crosscheck; a HoldoutWarning then named that ceiling).
    R is now read against what a copy reaches at that size, so a copy reads 1 at any ratio, with no
    warning; the interval says what the smaller holdout costs."""
    from synthzoo.datasets import make_demo
    tr, s = make_demo(400, seed=0)
    te = make_demo(100, seed=1)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = evaluate(tr, tr, test=te, schema=s, metrics=["singling_out_risk"], baselines=False, n_jobs=1)
    assert r.iloc[0]["value"] == pytest.approx(1.0)
    small = singling_out_risk(tr, tr, te, s, seed=0)
    assert small["tau_copy"] == pytest.approx(0.25) and small["tau_train"] == pytest.approx(0.25)
    assert small["risk"] == pytest.approx(1.0) and small["ci_low"] > 0.5
    full = singling_out_risk(tr, tr, make_demo(400, seed=1)[0], s, seed=0)
    assert full["tau_copy"] == 1.0 and full["risk"] > 0.9


def test_degenerate_releases_give_values_with_warnings_or_clear_errors():
    """An all-missing column in the release raised sklearn's "Found array with 0 sample(s)" from
    attribute disclosure and made dwm / pca NaN in silence; a 5-row release raised sklearn's and
    scipy's errors (MLP early-stopping split, singular KDE covariance, PCA components)."""
    from synthzoo.datasets import make_demo
    tr, s = make_demo(300, seed=0)
    te, syn = make_demo(120, seed=1)[0], make_demo(300, seed=2)[0]
    gone = syn.assign(income=np.nan)
    with pytest.warns(UserWarning, match="income"):
        r = evaluate(tr, gone, test=te, schema=s, metrics=["attr_disclosure", "dwm", "pca_eigval_diff", "ci_overlap"],
                     baselines=False, n_jobs=1, attr_trees=10)
    assert r["value"].notna().all(), r
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = evaluate(tr, syn.iloc[:5], test=te, schema=s, metrics=["ml_f1", "mia_max_auc", "pca_eigval_diff"],
                     baselines=False, n_jobs=1, evaluators=("mlp", "linear")).set_index("metric")
    assert np.isfinite(r.loc["ml_f1", "value"]) and np.isfinite(r.loc["mia_max_auc", "value"])
    with pytest.warns(UserWarning, match="pca_difference: needs at least"):
        evaluate(tr, syn.iloc[:5], test=te, schema=s, metrics=["pca_eigval_diff"], baselines=False, n_jobs=1)
    with pytest.warns(UserWarning, match="at least 3 rows"):  # NaN with its reason, as a tiny holdout
        r = evaluate(tr, syn.iloc[:2], test=te, schema=s, metrics=["mia_max_auc"], baselines=False, n_jobs=1)
    assert r["value"].isna().all()


def test_a_set_without_test_warns_about_what_it_drops():
    from synthzoo.datasets import make_demo
    tr, s = make_demo(200, seed=0)
    with pytest.warns(UserWarning, match="need real held-out rows.*test="):
        r = evaluate(tr, make_demo(200, seed=2)[0], schema=s, metrics="privacy", baselines=False, n_jobs=1)
    assert set(r["metric"]) == {"hitting_rate", "eps_identifiability"}


def test_a_set_without_a_target_warns_about_what_it_drops():
    # metrics="full" on a schema without "target" (what Schema.infer and `synthzoo eval` without --schema
    # give) left its seven ML metrics out in silence; without test, the same set says what it drops
    from synthzoo.metrics.evaluate import _resolve_metrics
    with pytest.warns(UserWarning, match=r"\['ml_f1', .*'auroc_diff'\] of \['full'\] predict a target column and "
                                         r"the schema names no \"target\": they are left out"):
        names = _resolve_metrics("full", True, False, None)
    assert not any(m.startswith("ml_") or m == "auroc_diff" for m in names)


def test_the_training_rows_as_holdout_are_seen_through_another_dtype():
    # the training rows passed as the holdout with an integer column as floats (a CSV with a gap reads
    # them so) matched 11 % of the rows by their dtype-bound hashes: no HoldoutWarning, and a verbatim
    # copy scored dcr_risk 0 in silence
    from synthzoo.metrics import HoldoutWarning
    rng = np.random.default_rng(0)
    tr = pd.DataFrame({"x": rng.normal(size=150).clip(-4, 4), "k": rng.integers(0, 10, 150),
                       "g": rng.choice(["a", "b", "c"], 150)})
    schema = Schema.from_dict({"columns": {"x": {"type": "numerical", "lower": -4, "upper": 4},
                                           "k": {"type": "numerical", "lower": 0, "upper": 9, "integer": True},
                                           "g": {"type": "categorical", "categories": ["a", "b", "c"]}}})
    test = tr.assign(k=tr["k"].astype(float), g=tr["g"].astype("category"))
    with pytest.warns(HoldoutWarning, match="holds the same rows as the training table"):
        evaluate(tr, tr, test=test, schema=schema, metrics=["dcr_risk"], baselines=False, n_jobs=1)


@pytest.mark.parametrize("given, hint", [("TVD_2WAY", "tvd_2way"), ("dcr", "dcr_risk"), ("Full", "full")])
def test_an_unknown_metric_name_gets_a_hint_in_any_letter_case_and_from_its_start(given, hint):
    # 'TVD_2WAY' and 'dcr' got no "did you mean" (difflib compares letter case; 'dcr' is far from 'dcr_risk')
    from synthzoo.metrics.evaluate import _resolve_metrics
    with pytest.raises(ConfigError, match=f"unknown metric or set '{given}' \\(did you mean '{hint}'\\?\\)"):
        _resolve_metrics([given], True, False, None)


def test_a_constant_column_has_no_association_whatever_its_value():
    # a release whose x is constant: its sd is rounding noise (1.4e-17 for 0.1), not 0, and the correlations
    # of that noise made association_diff .59 for x = 0.1 against .19 for x = 0.5; for x = 2.718281828
    # corr_diff ended with Python's ZeroDivisionError (eta^2's numerator noise over a zero denominator)
    from synthzoo.metrics.statistical import correlation_difference
    df, schema = toy(300)
    real, fake = df.iloc[:150].reset_index(drop=True), df.iloc[150:].reset_index(drop=True)
    releases = {v: fake.assign(x=v) for v in (0.5, 0.1, 1 / 3, 2.718281828)}
    got = {v: (association_difference(real, f, schema), correlation_difference(real, f, schema))
           for v, f in releases.items()}
    assert all(g == pytest.approx(got[0.5], abs=1e-12) for g in got.values()), got
