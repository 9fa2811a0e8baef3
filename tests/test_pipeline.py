"""Pipeline behaviour: construction-time errors, save/load safety, dtypes, reproducibility."""

import json

import warnings

import numpy as np
import pandas as pd
import pytest

import synthzoo as sz
from synthzoo.core.errors import ConfigError, NotFittedError, SchemaError
from synthzoo.core.schema import READ_FROM_ROWS
from synthzoo.datasets import make_demo


@pytest.fixture(scope="module")
def demo():
    return make_demo(n=2000, seed=1)


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": 0}, "epsilon must be > 0"),
    ({"epsilon": -1}, "epsilon must be > 0"),
    ({"delta": 0}, "pure DP .delta=0. is not offered"),
    ({"delta": 1.5}, r"delta must be a number in \(0, 0.1\)"),
    ({"epsilon": 1e-4}, "below the smallest epsilon the RDP accountant can certify"),
    ({"model": "nope"}, "unknown model module 'nope'"),
    ({"select": "nope"}, "unknown select module 'nope'"),
    ({"preprocess": ["nope"]}, "unknown preprocess module 'nope'"),
    ({"preprocess": ["uniform", "privtree"]}, "both handle"),
    ({"select": None}, "give a selector"),
    ({"budget_split": {"preprocess": 0.5, "select": 0.7}}, "sum to at most 1"),
    ({"budget_split": {"preprocess": 0.0, "select": 1.0}, "preprocess": ["privtree"]}, "spend budget"),
    ({"budget_split": {"foo": 1.0}}, "unknown stage"),
    ({"seed": -3}, "seed"),
    ({"schema": "schema.json"}, "Schema.from_json"),
])
def test_impossible_configurations_fail_at_construction(kwargs, match):
    base = {"preprocess": ["uniform"], "select": "indif", "model": "gum"}
    with pytest.raises(ConfigError, match=match):
        sz.Synthesizer(**{**base, **kwargs})


def test_unknown_preset():
    with pytest.raises(ConfigError, match="unknown preset 'nope'"):
        sz.make("nope")


def test_module_params_in_dict_and_instances_are_cloned(demo):
    df, schema = demo
    sel = sz.select.InDif()
    s1 = sz.Synthesizer(preprocess=[{"name": "uniform", "bins": 8}], select=sel, model="gum", schema=schema)
    assert s1.preprocess[0].bins == 8
    assert s1.select is not sel and s1.select.get_params() == sel.get_params()


@pytest.mark.parametrize("mutate, match", [
    (lambda d, s: d.iloc[:0], "empty"),
    (lambda d, s: d.assign(**{_cat(s): "not-a-category"}), "not among the schema's categories"),
    (lambda d, s: d.assign(**{_num(s): "abc"}), "non-numeric"),
    (lambda d, s: d.drop(columns=[d.columns[0]]), "lacks schema column"),
])
def test_bad_input_errors(demo, mutate, match):
    df, schema = demo
    s = sz.make("privsyn", schema=schema)
    with pytest.raises(SchemaError, match=match):
        s.fit(mutate(df, schema))


def _cat(schema):
    return next(c.name for c in schema if c.kind == "categorical")


def _num(schema):
    return next(c.name for c in schema if c.kind == "numerical")


def test_sample_before_fit(demo):
    with pytest.raises(NotFittedError):
        sz.make("privsyn", schema=demo[1]).sample(5)


def test_saved_file_is_plain_json_without_private_rows(demo, tmp_path):
    df, schema = demo
    s = sz.make("privsyn", epsilon=1.0, schema=schema, seed=0).fit(df)
    s.save(tmp_path / "m.json")
    text = (tmp_path / "m.json").read_text()
    doc = json.loads(text)
    assert doc["format"] == "synthzoo-model"
    # no training row is stored: check a distinctive full row's float values do not appear
    num = [c.name for c in schema if c.kind == "numerical" and not c.integer]
    for v in df[num[0]].dropna().head(50):
        assert repr(float(v)) not in text


def test_load_refuses_non_model_files(tmp_path):
    (tmp_path / "x.json").write_text('{"hello": 1}')
    with pytest.raises(ConfigError, match="not a synthzoo model file"):
        sz.Synthesizer.load(tmp_path / "x.json")
    (tmp_path / "y.bin").write_bytes(b"\x80\x04\x95 pickle")
    with pytest.raises(ConfigError, match="not a synthzoo model file"):
        sz.Synthesizer.load(tmp_path / "y.bin")


def test_dtypes_kept_for_int_categories_and_datetimes():
    schema = sz.Schema.from_dict({"columns": {
        "flag": {"type": "categorical", "categories": ["0", "1"]},
        "when": {"type": "datetime", "lower": "2020-01-01", "upper": "2020-12-31"},
        "n": {"type": "numerical", "lower": 0, "upper": 9, "integer": True},
    }})
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"flag": rng.integers(0, 2, 500), "when": pd.Timestamp("2020-01-01") +
                       pd.to_timedelta(rng.integers(0, 300, 500), unit="D"), "n": rng.integers(0, 10, 500)})
    fake = sz.Synthesizer(preprocess=["uniform"], select="indif", model="gum", schema=schema, seed=0).fit(df).sample(50)
    assert fake.dtypes.to_dict() == {"flag": np.dtype("int64"), "when": np.dtype("datetime64[ns]"),
                                     "n": np.dtype("int64")}  # from the schema: integer categories -> int
    assert set(fake["flag"]) <= {0, 1}
    schema.validate(fake)


def test_privacy_report_lists_every_module(demo):
    df, schema = demo
    s = sz.make("privsyn", epsilon=1.0, schema=schema, seed=0).fit(df)
    rep = s.privacy_report()
    for mod in ("privtree", "rare_merge"):
        assert mod in rep
    b = s.privacy_breakdown()
    assert b["rho"].sum() <= s.ledger_.total_rho * (1 + 1e-9)
    assert s.privacy_spent().epsilon <= 1.0


def test_a_release_on_a_schema_read_from_the_rows_says_its_epsilon_does_not_cover_the_schema(demo, tmp_path):
    # without schema= a private fit read every bound and category from the rows (one added record with age 97
    # and a new country moved the saved bounds and categories), and the report claimed the full (epsilon, delta)
    df, _ = demo
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = sz.make("mst", epsilon=1.0, delta=1e-5, seed=0).fit(df)
        assert sz.make("mst", epsilon=1.0, delta=1e-5, seed=0,
                       schema=sz.Schema.infer(df)).fit(df).schema_covered is False
    assert synth.schema_covered is False
    assert synth.privacy_report().startswith("NOT COVERED BY DP: the schema")
    synth.save(tmp_path / "m.szm")
    again = sz.Synthesizer.load(tmp_path / "m.szm")
    assert again.schema_covered is False and again.privacy_report().startswith("NOT COVERED BY DP")
    # a public schema, and a schema measured by dp_schema, are covered
    public = make_demo(n=300, seed=0)[1]
    assert sz.make("mst", epsilon=1.0, schema=public, seed=0).fit(df).schema_covered
    with pytest.raises(SchemaError, match="read_from_rows.*must be a text"):
        sz.Schema.from_dict({**public.to_dict(), "read_from_rows": 5})


def test_a_schema_built_from_inferred_columns_stays_marked_as_read_from_the_rows(demo):
    """Taking a subset of an inferred schema's columns, or rebuilding it with other meta, once dropped the
    mark, and a release on it claimed to cover bounds and categories read from the rows."""
    import dataclasses

    df, _ = demo
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inferred = sz.Schema.infer(df)
    for rebuilt in (sz.Schema(list(inferred.columns), {}), sz.Schema([inferred["age"], inferred["region"]]),
                    sz.Schema([sz.Schema.from_dict(inferred.to_dict())["age"]])):
        assert READ_FROM_ROWS in rebuilt.meta, rebuilt.meta
    assert "column(s) 'age', 'region'" in sz.Schema([inferred["age"], inferred["region"]]).meta[READ_FROM_ROWS]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = sz.make("mst", epsilon=1.0, schema=sz.Schema(list(inferred.columns), {}), seed=0).fit(df)
    assert synth.schema_covered is False and synth.privacy_report().startswith("NOT COVERED BY DP")
    # declared public column by column: not marked; the mark is not part of a column's description
    public = sz.Schema([dataclasses.replace(c, read_from_rows=False) for c in inferred.columns])
    assert READ_FROM_ROWS not in public.meta and public.columns == inferred.columns
    assert "read_from_rows" not in json.dumps(public.to_dict())


def test_dp_schema_cost_is_inside_the_synthesizers_account(demo):
    df, public = demo
    kinds = {c.name: c.kind for c in public}
    schema, led = sz.dp_schema(df, kinds=kinds, epsilon=0.3, delta=1e-6, noise_seed=0)
    with pytest.warns(UserWarning):  # conform clips values outside the DP bounds
        private_df = sz.conform(df, schema)
    s = sz.make("privsyn", epsilon=1.0, delta=1e-5, schema=schema, seed=0, schema_ledger=led).fit(private_df)
    eps, delta = s.privacy_spent()
    assert 0.9 < eps <= 1.0 and delta == 1e-5
    b = s.privacy_breakdown()
    assert b["module"].str.startswith("schema:").any()
    schema.validate(s.sample(200))


def test_a_dp_schema_carries_its_cost_into_any_release_that_uses_it(demo, tmp_path):
    # without schema_ledger, and after the schema went through JSON, the release still reports the
    # schema's cost: the schema carries its measurement's account, replayed as a model file's is
    df, public = demo
    schema, led = sz.dp_schema(df, kinds={c.name: c.kind for c in public}, epsilon=0.3, delta=1e-6, noise_seed=0)
    with pytest.warns(UserWarning):
        private_df = sz.conform(df, schema)
    schema.to_json(tmp_path / "s.json")
    spent = []
    for kw in ({"schema": schema, "schema_ledger": led}, {"schema": schema},
               {"schema": sz.Schema.from_json(tmp_path / "s.json")}):
        s = sz.make("mst", epsilon=1.0, delta=1e-5, seed=0, **kw).fit(private_df)
        b = s.privacy_breakdown()
        spent.append(b.loc[b["module"].str.startswith("schema:"), "rho"].sum())
        s.save(tmp_path / "m.szm")
        assert sz.Synthesizer.load(tmp_path / "m.szm").privacy_spent() == s.privacy_spent()
    assert spent[0] > 0 and spent[0] == pytest.approx(spent[1]) == pytest.approx(spent[2])
    assert spent[0] == pytest.approx(sum(c.rho for c in led.charges))


def test_a_dp_schema_on_a_shared_ledger_needs_that_ledger_to_fit(demo, tmp_path):
    from synthzoo.core.privacy.ledger import PrivacyLedger

    df, public = demo
    num = [c.name for c in public if c.kind == "numerical"]
    shared = PrivacyLedger(1.0, 1e-5)
    with pytest.warns(UserWarning):
        schema, _ = sz.dp_schema(df[num], kinds={c: "numerical" for c in num}, ledger=shared, share=0.3)
    assert schema.meta["dp_schema"]["account"] is None  # its charges are in the shared ledger
    with pytest.raises(ConfigError, match="measured by dp_schema on a shared ledger"):
        sz.make("mst", epsilon=1.0, schema=schema).fit(df[num])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # conform says what it clipped, if anything
        private_df = sz.conform(df[num], schema)
    s = sz.make("mst", epsilon=1.0, schema=schema, schema_ledger=shared).fit(private_df)
    s.save(tmp_path / "m.szm")
    assert sz.Synthesizer.load(tmp_path / "m.szm").privacy_spent() == s.privacy_spent()  # loads without it


def test_a_schema_read_without_privacy_cannot_carry_a_private_release(demo):
    df, public = demo
    with pytest.warns(UserWarning):
        schema, _ = sz.dp_schema(df, kinds={c.name: c.kind for c in public}, epsilon=None)
    with pytest.raises(ConfigError, match="read from the data WITHOUT privacy"):
        sz.make("mst", epsilon=1.0, schema=schema)


def test_schema_ledger_over_the_request_is_refused(demo):
    df, public = demo
    schema, led = sz.dp_schema(df, kinds={c.name: c.kind for c in public}, epsilon=2.0, delta=1e-6, noise_seed=0)
    s = sz.make("privsyn", epsilon=1.0, delta=1e-5, schema=schema, seed=0, schema_ledger=led)
    with pytest.warns(UserWarning):
        private_df = sz.conform(df, schema)
    # the refusal said "schema:schema: histogram would bring the total to epsilon=1.07548 ... charge refused"
    with pytest.raises(sz.BudgetExceededError, match=r"the schema's DP measurement \(schema_ledger\) alone comes to "
                                                      r"epsilon=\d\.\d+ at this fit's delta=1e-05, past its epsilon=1"):
        s.fit(private_df)


def test_a_schema_that_spent_the_whole_request_is_refused_before_the_fit(demo):
    # dp_schema(epsilon=1) then fit(epsilon=1): the rare-category merge said "give preprocessing a share"
    df, public = demo
    schema, led = sz.dp_schema(df, kinds={c.name: c.kind for c in public}, epsilon=1.0, delta=1e-5, noise_seed=0)
    with pytest.warns(UserWarning):
        private_df = sz.conform(df, schema)
    s = sz.make("mst", epsilon=1.0, delta=1e-5, schema=schema, seed=0)
    with pytest.raises(sz.BudgetExceededError, match=r"spent all of this fit's epsilon=1, so nothing is left"):
        s.fit(private_df)
    assert not hasattr(s, "ledger_")  # refused as the ledger is made, before any stage runs


@pytest.mark.parametrize("kwargs, match", [
    ({"preprocess": [{"name": "privtree", "max_depth": -1}]}, "max_depth"),
    ({"preprocess": [{"name": "uniform", "bins": 0}]}, "bins"),
    ({"preprocess": [{"name": "rare_merge", "theta": 2.0}]}, "theta"),
    ({"select": {"name": "indif", "select_share": 1.5}}, "select_share"),
    ({"preprocess": [{"name": "uniform", "nbins": 3}]}, "nbins"),
])
def test_bad_module_parameters_fail_at_construction(kwargs, match):
    base = {"preprocess": ["uniform"], "select": "indif", "model": "gum"}
    with pytest.raises(ConfigError, match=match):
        sz.Synthesizer(**{**base, **kwargs})


# every preset's budget and seed checks: tests/test_presets.py


def test_a_parameter_the_schema_rules_out_is_refused_before_any_budget(demo):
    # AIM with rounds=3 on an 11-column schema was built, and refused at fit after PrivTree had charged the ledger
    df, schema = demo
    with pytest.raises(ConfigError, match=r"rounds=3: must be at least the number of attributes \(11\)"):
        sz.Synthesizer(preprocess=["privtree"], select={"name": "aim", "rounds": 3}, model="pgm", schema=schema)
    synth = sz.Synthesizer(preprocess=["privtree"], select={"name": "aim", "rounds": 3}, model="pgm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConfigError, match="rounds=3"):
            synth.fit(df)  # a schema inferred at fit: checked before the ledger exists
    assert getattr(synth, "ledger_", None) is None
    sz.Synthesizer(select={"name": "aim", "rounds": 3}, model="pgm", schema=schema, epsilon=None)  # non-private: fine


@pytest.mark.parametrize("seed", [2 ** 63, 10 ** 20, True])
def test_a_seed_a_model_file_cannot_hold_is_refused_at_construction(seed):
    # seed=10**20 fitted and saved a model file that Synthesizer.load refused ("config.seed: must be a whole
    # number in [0, 2^63)"): the budget was spent on a release that could not be read back
    with pytest.raises(ConfigError, match="seed must be a non-negative integer below 2\\^63"):
        sz.make("mst", epsilon=1.0, seed=seed)
