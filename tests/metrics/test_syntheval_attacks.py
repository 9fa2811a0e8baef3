"""SynthEval's metric library, the membership-inference suite, risk insertion with canaries, the
metric presets and the report's new sections (the reference agreement is in test_crosscheck.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthzoo.core import ConfigError
from synthzoo.metrics import disclosure as D
from synthzoo.metrics import statistical as S
from synthzoo.metrics.baselines import independent_sample
from synthzoo.metrics.evaluate import METRICS, PRESETS, evaluate
from synthzoo.metrics.mia import groundhog_attack, membership_attacks, roc_summary
from synthzoo.metrics.mds import CopySynthesizer, IndependentSynthesizer
from synthzoo.metrics.ml import auroc_difference, ml_cross_validated, ml_scores
from synthzoo.metrics.risk import (canaries, canary_exposure, converged_epochs, correlation_matrix,
                                  level_correlation, risk_response)
from test_crosscheck import mixed_table


@pytest.fixture(scope="module")
def parts():
    df, schema = mixed_table(1800, seed=1)
    return df.iloc[:600].reset_index(drop=True), df.iloc[600:1200].reset_index(drop=True), \
        df.iloc[1200:].reset_index(drop=True), schema


def test_statistical_metrics_identical_and_independent(parts):
    a, b, c, schema = parts
    ind = independent_sample(a, seed=3)
    ks = S.ks_test(a, a, schema)
    assert ks["avg_stat"] == 0 and ks["n_significant"] == 0
    ks_i = S.ks_test(a, ind, schema)
    assert 0 <= ks_i["avg_stat"] < 0.2 and set(ks_i["columns"]["kind"]) == {"numerical", "categorical"}
    assert S.hellinger_distance(a, a, schema)["avg"] == 0
    assert S.dimensionwise_means(a, a, schema) == 0
    assert S.ci_overlap(a, a, schema)["avg_overlap"] == pytest.approx(1.0)
    assert S.pca_difference(a, a, schema) == pytest.approx({"eigval_diff": 0.0, "angle_diff": 0.0}, abs=1e-6)
    assert S.mutual_information_difference(a, a, schema) == 0
    assert S.correlation_difference(a, a, schema) == 0
    # broken correlations show in the correlation and mutual-information differences, not in the means
    assert S.correlation_difference(a, ind, schema) > S.correlation_difference(a, b, schema)
    assert S.pmse(a, ind, schema)["pmse"] >= 0
    # a shifted column is found by KS
    shifted = b.assign(age=np.clip(b["age"] + 15, 18, 90))
    cols = S.ks_test(a, shifted, schema)["columns"].set_index("column")
    assert cols.loc["age", "p_value"] < 0.001 and cols.loc["region", "p_value"] > 0.001


def test_ks_permutation_p_value_is_calibrated():
    """Under the null (two samples of one distribution) the permutation p-value is ~uniform."""
    from synthzoo.core import Schema
    schema = Schema.from_dict({"columns": {"g": {"type": "categorical", "categories": list("abcd")}}})
    rng = np.random.default_rng(0)
    ps = []
    for s in range(60):
        x = pd.DataFrame({"g": rng.choice(list("abcd"), 300, p=[.4, .3, .2, .1])})
        y = pd.DataFrame({"g": rng.choice(list("abcd"), 300, p=[.4, .3, .2, .1])})
        ps.append(S.ks_test(x, y, schema, n_perms=200, seed=s)["columns"]["p_value"].iloc[0])
    ps = np.array(ps)
    assert 0.05 <= np.mean(ps < 0.25) <= 0.45 and np.mean(ps < 0.05) <= 0.15


def test_disclosure_metrics_copy_versus_fresh(parts):
    a, b, c, schema = parts
    assert D.hitting_rate(a, a, schema) == 1.0
    assert D.hitting_rate(a, b, schema) < 0.5
    assert D.nnaa(a, a, schema)["nnaa"] == 0.0
    fresh = D.nnaa(a, b, schema, holdout=c)
    assert 0.35 < fresh["nnaa"] < 0.65 and abs(fresh["privacy_loss"]) < 0.1
    assert D.epsilon_identifiability(a, a, schema)["eps_risk"] > 0.95
    assert D.epsilon_identifiability(a, b, schema, holdout=c)["eps_risk"] < 0.7
    copy = D.mia_classifier(a, a, c, schema, n_iter=3)
    fresh_mia = D.mia_classifier(a, b, c, schema, n_iter=3)
    assert copy["f1"] > fresh_mia["f1"] - 0.02
    ad = D.attribute_disclosure(a, a, schema, holdout=c, n_estimators=20)
    assert set(ad["columns"]["column"]) == set(schema.names) and 0 <= ad["accuracy"] <= 1
    with pytest.raises(ConfigError, match="threshold"):
        D.hitting_rate(a, b, schema, threshold=2)


def test_ml_extensions(parts):
    a, b, c, schema = parts
    res = ml_scores(a, b, c, schema, evaluators=("xgboost",))
    assert set(res["score"]) == {"f1", "auc"} and (res["synthetic"] > 0.5).all()
    cv = ml_cross_validated(a, b, schema, evaluators=("linear", "xgboost"), k_folds=3, test=c)
    assert list(cv["evaluator"]) == ["linear", "xgboost"] and cv["diff"].abs().max() < 0.2
    assert {"trtr_test", "tstr_test"} <= set(cv.columns)
    same = auroc_difference(a, a, c, schema)
    assert same["auroc_diff"] == 0.0 and same["auroc_real"] > 0.6
    assert auroc_difference(a, independent_sample(a, seed=2), c, schema)["auroc_diff"] < -0.1


def test_roc_summary_low_fpr():
    y = np.r_[np.ones(1000, bool), np.zeros(1000, bool)]
    s = np.r_[np.arange(1000) + 1000.0, np.arange(1000.0)]  # perfectly separated
    r = roc_summary(y, s)
    assert r["auc"] == 1.0 and r["tpr@0.01"] == 1.0 and r["tpr@0.001"] == 1.0
    r = roc_summary(y[::10], s[::10])  # 100 negatives: 0.1 % FPR is not resolved
    assert np.isnan(r["tpr@0.001"]) and r["tpr@0.01"] == 1.0
    with pytest.raises(ConfigError):
        roc_summary(np.ones(5, bool), np.ones(5))


def test_membership_attacks_copy_and_fresh(parts):
    a, b, c, schema = parts
    copy = membership_attacks(a, a, c, schema, n_targets=250).set_index("attack")
    fresh = membership_attacks(a, b, c, schema, n_targets=250).set_index("attack")
    assert copy.loc["dcr_l2", "auc"] > 0.95 and copy.loc["dcr_hamming", "auc"] > 0.8  # binned: coarser
    assert copy.loc["domias_1nn", "auc"] > 0.95
    assert copy.filter(like="max", axis=0)["auc"].iloc[0] > 0.95
    assert (fresh["auc"].drop(fresh.index[-1]) - 0.5).abs().max() < 0.1
    table, det = membership_attacks(a, b, c, schema, n_targets=100, return_scores=True)
    assert set(det["roc"]) == {"dcr_hamming", "dcr_l2", "kde", "domias", "domias_1nn"}


def test_groundhog_shadow_protocol(parts):
    a, b, c, schema = parts
    pop = pd.concat([a, b, c], ignore_index=True)
    leak = groundhog_attack(pop, schema, CopySynthesizer, n_targets=3, n_shadow=12, train_size=200,
                            no_box=("dcr_l2",)).set_index("attack")
    assert {"groundhog_naive", "groundhog_hist", "groundhog_corr", "dcr_l2"} <= set(leak.index)
    assert leak.loc["dcr_l2", "auc"] > 0.95
    blind = groundhog_attack(pop, schema, IndependentSynthesizer, n_targets=3, n_shadow=12, train_size=200,
                             features=("naive",), no_box=()).set_index("attack")
    assert abs(blind.loc["groundhog_naive", "auc"] - 0.5) < 0.3
    with pytest.raises(ConfigError, match="feature"):
        groundhog_attack(pop, schema, IndependentSynthesizer, features=("nope",))


def test_canary_exposure_and_risk_response(parts):
    a, b, c, schema = parts
    cans, cand = canaries(schema, n_canaries=20, n_candidates=50, seed=1)
    assert len(cans) == 20 and len(cand) == 1000
    assert canary_exposure(pd.concat([a, cans]), cand, schema, n_candidates=50)["top1"] == 1.0
    low = canary_exposure(b, cand, schema, n_candidates=50)
    assert low["mean"] < 3.0  # ranks ~uniform: ~1.4 bits expected
    pop = pd.concat([a, b, c], ignore_index=True)
    tab = risk_response(pop, schema, None, (0.0, 1.0), n_canaries=30,
                        metrics=["dcr_risk", "hitting_rate", "mia_max_auc"])
    assert tab.loc["dcr_risk", ("leaky", 1.0)] > 0.9 > tab.loc["dcr_risk", ("leaky", 0.0)] + 0.5
    assert tab.loc["canary_exposure", ("leaky", 1.0)] > tab.loc["canary_exposure", ("leaky", 0.0)] + 2
    corr = correlation_matrix(tab)
    assert corr.loc["dcr_risk", "hitting_rate"] == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="synthesizer_factory"):
        risk_response(pop, schema, None, (1.0,), risk_model="overfit")


def test_presets_and_names(parts):
    a, b, c, schema = parts
    for name, ms in PRESETS.items():
        assert all(m in METRICS for m in ms), name
    t = evaluate(a, b, test=c, schema=schema, metrics="fast", baselines=False)
    assert list(t["metric"]) == PRESETS["fast"]
    assert t["value"].notna().all()
    with pytest.raises(ConfigError, match="fast, full, privacy"):
        evaluate(a, b, test=c, schema=schema, metrics="nope")


def test_full_preset_runs_with_baselines(parts):
    schema = parts[3]
    a, b, c = (p.iloc[:300].reset_index(drop=True) for p in parts[:3])
    t, det = evaluate(a, b, test=c, schema=schema, metrics="full", evaluators=("linear",), cv_evaluators=("linear",),
                      nnaa_resamples=2, attr_trees=10, return_details=True)
    assert list(t["metric"]) == [m for m in PRESETS["full"] if m not in ("ml_rmse", "ml_r2")]  # a classifier
    t = t.set_index("metric")
    assert t["value"].notna().all(), t["value"][t["value"].isna()]
    assert t.loc["hitting_rate", "SELF"] == 1.0 and t.loc["ks_distance", "SELF"] == 0.0
    assert t.loc["mia_max_auc", "SELF"] > 0.95 and abs(t.loc["mia_max_auc", "HALF"] - 0.5) < 0.1
    assert det["mia"] is not None and det["ml_cv"] is not None
    # the threads restore the process's warning filters
    import warnings
    before = list(warnings.filters)
    evaluate(a, b, test=c, schema=schema, metrics=["dcr_risk"], n_jobs=2)
    assert warnings.filters == before


def test_converged_epochs_reads_where_the_loss_settles():
    e = np.arange(400)
    loss = 5.0 * np.exp(-e / 30.0) - 2.0 - 1e-4 * e     # settles near epoch 150, then a slow memorising decline
    at = converged_epochs(loss)
    assert 100 <= at <= 200
    assert converged_epochs(loss * 7.0 - 3.0) == at          # scale- and shift-free (negative losses too)
    assert converged_epochs(np.linspace(10, 0, 100)) is None  # still falling steadily: not converged
    with pytest.raises(ConfigError, match="losses"):
        converged_epochs([1.0, 2.0])
    with pytest.raises(ConfigError, match="rtol"):
        converged_epochs(loss, rtol=2)


def test_level_correlation_per_risk_model():
    cols = pd.MultiIndex.from_tuples([("leaky", 0.0), ("leaky", 0.5), ("leaky", 1.0), ("dp", 1.0), ("dp", 10.0),
                                      ("dp", 100.0)], names=["risk_model", "level"])
    tab = pd.DataFrame([[0.0, 0.4, 0.9, 0.3, 0.2, 0.1], [0.5, 0.5, 0.5, 0.1, 0.2, 0.9]], index=["a", "b"], columns=cols)
    r = level_correlation(tab)
    assert list(r.columns) == ["leaky", "dp"]
    assert r.loc["a", "leaky"] == pytest.approx(1.0) and r.loc["a", "dp"] == pytest.approx(-1.0)
    assert np.isnan(r.loc["b", "leaky"]) and r.loc["b", "dp"] == pytest.approx(1.0)   # a flat metric: blank
