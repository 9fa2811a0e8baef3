"""The record models on continuous features (tvae, ctgan, pategan): private fits charge what they
must before training and stay within the request; each DP design's invariants hold."""

import math

import numpy as np
import pytest

import synthzoo as sz
from helpers import schema_features
from synthzoo.datasets import make_demo
from synthzoo.models import CTGAN, PATEGAN, TVAE, TabDDPM
from synthzoo.models.torch_features import Conditions
from synthzoo.models.torch_features import Head

QUICK = {"tvae": dict(TVAE._test_params), "ctgan": dict(CTGAN._test_params), "pategan": dict(PATEGAN._test_params),
         "tabddpm": dict(TabDDPM._test_params)}


@pytest.fixture(scope="module")
def demo():
    return make_demo(n=800, seed=0)


@pytest.mark.parametrize("name", ["tvae", "ctgan", "pategan", "tabddpm"])
def test_private_fit_charges_everything_before_training_and_within_the_request(name, demo):
    df, schema = demo
    s = sz.Synthesizer(preprocess=["mode_features"], model={"name": name, **QUICK[name]}, epsilon=1.0, schema=schema,
                       seed=0).fit(df)
    mech = [c.mechanism for c in s.ledger_.charges]
    # the record count (tabddpm conditions on the demo's target: its label counts sum to the count)
    assert mech[:2] == ["privtree", "mode_histogram"] and ("label_counts" if name == "tabddpm" else
                                                           "discrete_gaussian") in mech
    assert ("dp_sgd" in mech) != (name == "pategan") and ("pate_votes" in mech) == (name == "pategan")
    assert s.privacy_spent().epsilon <= 1.0 * (1 + 1e-9) and s.privacy_spent().epsilon > 0.99
    assert math.isfinite(s.n_estimate_) and len(s.sample()) == round(s.n_estimate_)


def test_dp_ctgan_conditions_a_real_row_on_its_own_category(demo):
    df, schema = demo
    data = schema_features(df, schema)
    head = Head(data.table, "cpu")
    cond = Conditions(data.table, head, [np.ones(w) for col, s, w in head.blocks
                                          if schema[col].kind == "categorical"])
    rng = np.random.default_rng(0)
    blk = rng.integers(len(cond.blocks), size=200)
    cats = cond.of_rows(data.x[:200], blk)
    for i in range(200):  # the condition reads row i alone: its category in the chosen column
        col, start, width = cond.blocks[blk[i]]
        assert data.x[i, start + cats[i]] == 1.0


def test_record_models_refuse_codes_and_selectors(demo):
    df, schema = demo
    with pytest.raises(sz.ConfigError, match="fits features"):
        sz.Synthesizer(preprocess=["uniform"], model="tvae", epsilon=1.0, schema=schema)
    with pytest.raises(sz.ConfigError, match="no selector"):
        sz.Synthesizer(preprocess=["features"], select="mst", model="ctgan", epsilon=1.0, schema=schema)
    with pytest.raises(sz.ConfigError, match="batch_size"):
        CTGAN(batch_size=505, pac=10)


def test_non_private_tvae_learns_more_than_independent_columns(demo):
    from synthzoo.metrics import independent_sample, tvd_2way

    df, schema = make_demo(n=3000, seed=1)
    s = sz.make("tvae", epsilon=None, schema=schema, seed=0, model={"name": "tvae", "epochs": 150}).fit(df)
    fake = s.sample(3000)
    assert tvd_2way(df, fake, schema) < tvd_2way(df, independent_sample(df, seed=0), schema) + 0.02


def test_tvae_loss_history_without_privacy_only(demo):
    df, schema = demo
    model = {"name": "tvae", **QUICK["tvae"], "epochs": 6}
    s = sz.Synthesizer(preprocess=["mode_features"], model=model, epsilon=None, schema=schema, seed=0).fit(df)
    hist = s.model.loss_history_
    assert len(hist) == 6 and np.isfinite(hist).all()
    p = sz.Synthesizer(preprocess=["mode_features"], model=model, epsilon=1.0, schema=schema, seed=0).fit(df)
    assert p.model.loss_history_ is None
