"""The 'accounted' tuning mode charges exactly the closed form of Papernot & Steinke (ICLR 2022)."""

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("optuna")

from synthzoo.core.privacy.ledger import _ORDERS, PrivacyLedger  # noqa: E402
from synthzoo.datasets import make_demo, train_test_split  # noqa: E402
from tuning import per_trial_rho, stopping_event, tune, tuning_epsilon  # noqa: E402
from tuning.accounting import draw_runs  # noqa: E402

FAST = dict(choices={"preprocess.numeric": ["uniform"], "select_model": ["indif+gum"]},
            space={"model.gum.iterations": ("int", 5, 10)})


def closed_form_epsilon(rho: float, mean: float, delta: float) -> float:
    """Theorem 2 of Papernot & Steinke with a geometric number of runs (shape eta=1, gamma=1/mean)
    for a rho-zCDP run (RDP epsilon(lambda) = rho*lambda), minimised over the same orders, then
    RDP -> (epsilon, delta) by Canonne, Kamath & Steinke (2020), Prop. 12."""
    lam = np.asarray(_ORDERS, dtype=float)
    eta, gamma = 1.0, 1.0 / mean
    # epsilon-hat term: (1+eta) * min over lambda-hat of (1 - 1/lh)*rho*lh + log(1/gamma)/lh
    c = (1 + eta) * np.min(rho * (lam - 1) + math.log(1 / gamma) / lam)
    rdp = np.where(lam > 1, rho * lam + math.log(mean) / (lam - 1) + c, np.inf)
    rdp = np.array([rdp[lam >= a].min() for a in lam])  # RDP is monotone in the order
    eps = rdp + np.log1p(-1 / lam) - np.log(delta * lam) / (lam - 1)
    return float(max(0.0, eps[lam > 1.01].min()))


@pytest.mark.parametrize("epsilon,mean", [(1.0, 20), (0.5, 5), (4.0, 50)])
def test_random_stopping_total_matches_closed_form(epsilon, mean):
    delta = 1e-5
    rho = per_trial_rho(epsilon, delta, mean, shape=1.0)
    total = tuning_epsilon(rho, mean, 1.0, delta)
    assert total == pytest.approx(closed_form_epsilon(rho, mean, delta), rel=1e-9)
    assert total <= epsilon * (1 + 1e-9) and total > 0.999 * epsilon  # the whole request, no more
    # the continuous optimum over lambda-hat is a lower bound of the grid's: 2*sqrt(rho*log mean) - rho
    assert 2 * (2 * math.sqrt(rho * math.log(mean)) - rho) <= 2 * np.min(
        rho * (np.asarray(_ORDERS) - 1) + math.log(mean) / np.asarray(_ORDERS)) + 1e-12
    # tuning costs: each trial gets far less than a single untuned run would
    assert rho < PrivacyLedger(epsilon, delta).total_rho / 2


def test_ledger_charge_of_the_event_reports_the_closed_form():
    rho = per_trial_rho(1.0, 1e-5, 20, 1.0)
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("tuning", "random stopping", stopping_event(rho, 20, 1.0), ledger.total_rho)
    assert ledger.spent().epsilon == pytest.approx(closed_form_epsilon(rho, 20, 1e-5), rel=1e-9)


def test_geometric_runs_have_the_requested_mean():
    rng = np.random.default_rng(0)
    draws = [draw_runs(8.0, 1.0, rng) for _ in range(4000)]
    assert min(draws) >= 1 and abs(np.mean(draws) - 8.0) < 0.4


def test_accounted_tune_releases_best_trial_with_the_tuning_in_its_ledger(tmp_path):
    df, schema = make_demo(n=600, seed=0)
    train, val = train_test_split(df, test_size=0.3, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tune("privsyn", train, val, epsilon=1.0, delta=1e-5, schema=schema, n_trials=3, privacy="accounted",
                   storage=str(tmp_path / "s.db"), stopping_seed=3, **FAST)
    meta = res.metadata
    runs = meta["runs"]
    assert runs == draw_runs(3.0, 1.0, np.random.default_rng(3))
    assert meta["finished_trials"] == runs
    spent = res.synthesizer.privacy_spent()
    assert spent.epsilon == pytest.approx(closed_form_epsilon(meta["per_trial_rho"], 3, 1e-5), rel=1e-9)
    assert spent.epsilon <= 1.0 * (1 + 1e-9)
    rows = res.synthesizer.privacy_breakdown()
    assert list(rows["module"]) == ["tuning"]
    assert "covers every trial" in res.summary()
    # each trial really ran at the per-trial budget: its fit's epsilon alone is far below the request
    assert meta["per_trial_rho"] < PrivacyLedger(1.0, 1e-5).total_rho / 2
    assert len(res.synthesizer.sample(50)) == 50


def test_accounted_best_trial_is_released_from_the_storage_by_another_process(tmp_path):
    """The best trial may have run in another worker (or before a resume): its synthesizer is in the
    storage, not refitted (a further private fit would not be covered)."""
    import optuna

    from tuning.tuner import STATE_ATTR

    df, schema = make_demo(n=600, seed=0)
    train, val = train_test_split(df, test_size=0.3, seed=0)
    args = dict(epsilon=1.0, delta=1e-5, schema=schema, n_trials=3, privacy="accounted", storage=str(tmp_path / "s.db"),
                study_name="acc", stopping_seed=0, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = tune("privsyn", train, val, **args)
        again = tune("privsyn", train, val, **args)  # every run is done: no trial runs in this call
    assert first.metadata["runs"] == 3 and len(again.study.trials) == 3
    best = again.metadata["best_trial"]
    assert best == first.metadata["best_trial"]
    assert again.synthesizer.sample(40, seed=1).equals(first.synthesizer.sample(40, seed=1))
    assert again.synthesizer.privacy_spent() == first.synthesizer.privacy_spent()
    assert list(again.synthesizer.privacy_breakdown()["module"]) == ["tuning"]
    # stored: exactly the trials that beat every trial finished before them (the best among them)
    complete = again.study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    records = [t.number for i, t in enumerate(complete) if all(t.value <= u.value for u in complete[:i])]
    assert [t.number for t in complete if STATE_ATTR in t.system_attrs] == records and best in records
