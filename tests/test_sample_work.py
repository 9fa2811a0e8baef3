"""The work a model file can make ``sample`` do is bounded as a whole, not only parameter by parameter.

Each per-parameter limit (diffusion steps, GUM's iterations, ...) bounds one factor; the work per record is
their product with a network whose size only the file's bytes bound.  :meth:`Model.sample_work` estimates it
from the restored state, and a file asking for more than :data:`~synthzoo.core.base.MAX_SAMPLE_WORK` is refused
naming what drives it; a file's default sample (``sample()`` without ``n``) is bounded as well.
"""

import copy
import json
import warnings

import numpy as np
import pytest

import synthzoo as sz
from synthzoo.cli import main
from synthzoo.core import base
from synthzoo.core.errors import ConfigError
from synthzoo.datasets import make_demo
from synthzoo.presets import PRESETS


def _data(n=200):
    df, schema = make_demo(n=n, seed=1)
    cols = ["age", "education", "income", "churn"]
    return df[cols], sz.Schema([schema[c] for c in cols])


def _fit(preset, n=200, epsilon=None, **model):
    df, schema = _data(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sz.make(preset, epsilon=epsilon, delta=1e-5, schema=schema, seed=0, model=model).fit(df)


def _load(doc):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sz.Synthesizer.from_json(copy.deepcopy(doc))


def _edited(doc, **params):
    """``doc`` with model parameters edited, as anyone may edit a file (both where the file states them)."""
    d = copy.deepcopy(doc)
    d["config"]["model"].update(params)
    d["model_state"]["params"].update(params)
    return d


# one file per diffusion model with its steps edited to the per-parameter limit (10,000) and a network of 1-3
# million weights (a file of 20-60 MB): each passes every per-parameter check; the product asks for more than 2e10
@pytest.mark.parametrize("preset, model, edit, drivers", [
    ("tabddpm", dict(steps=10, hidden=(1500, 1500), embedding_dim=8, epochs=1, batch_size=100), dict(steps=10_000),
     r"steps=10000 x a denoiser of [\d.]+e\+06 weights"),
    ("tablediffusion", dict(steps=2, hidden=(1500, 1500), epochs=1, batch_size=100), dict(steps=10_000),
     r"steps=10000 x a denoiser of [\d.]+e\+06 weights"),
    ("tldm", dict(sampling_steps=5, width=400, d_token=2, n_layers=1, factor=2, vae_epochs=1, diffusion_epochs=1,
                  vae_batch_size=100, diffusion_batch_size=100), dict(sampling_steps=10_000),
     r"sampling_steps=10000 \(x2, Heun\) x a denoiser of [\d.]+e\+06 weights"),
])
def test_a_file_at_every_parameter_limit_whose_product_is_too_much_is_refused(preset, model, edit, drivers):
    synth = _fit(preset, **model)
    _load(synth.to_json())  # as fitted: loads
    doc = _edited(synth.to_json(), **edit)
    name = synth.model.name
    with pytest.raises(ConfigError, match=rf"model file: model_state: model '{name}': sampling would take ~\S+ "
                                          rf"operations \(multiply-adds\) per record \({drivers}.*\), more than a "
                                          r"model file may ask \(2e\+10, about \d+ s per 1,000 records"):
        _load(doc)


def test_save_refuses_a_file_that_load_would_refuse_and_a_model_built_by_hand_still_samples(tmp_path):
    synth = _fit("tabddpm", steps=10_000, hidden=(1500, 1500), embedding_dim=8, epochs=1, batch_size=100)
    with pytest.raises(ConfigError, match=r"cannot save: model 'tabddpm': sampling would take ~[\d.]+e\+10"):
        synth.save(tmp_path / "m.szm")
    assert not (tmp_path / "m.szm").exists()
    assert len(synth.model.sample(1, np.random.default_rng(0))) == 1


@pytest.mark.parametrize("kind, model, drivers", [
    ("privsyn", dict(name="gum", iterations=10_000), r"iterations=10000 x \d+ marginals of \S+ cells"),
    ("mst", dict(name="pgm", iters=20), r"a junction tree of \d+ cliques and \S+ cells"),
    ("gem", dict(name="gn", hidden=(16,), iters=5, batch=32, draws_per_z=1),
     r"a network of \S+ weights / draws_per_z=1"),
])
def test_measurement_models_name_what_drives_their_work(kind, model, drivers, monkeypatch):
    # their work stays far below the budget on any file of sensible size (GUM's rounds over 2e8 cells would
    # not): checked here under a budget lowered below what they ask
    synth = _fit(kind, epsilon=1.0, **model)
    doc = synth.to_json()
    work = synth.model.sample_work()
    assert 0 < work < base.MAX_SAMPLE_WORK
    _load(doc)
    monkeypatch.setattr(base, "MAX_SAMPLE_WORK", work / 2)
    with pytest.raises(ConfigError, match=rf"model '{synth.model.name}': sampling would take ~\S+ operations "
                                          rf"\(multiply-adds\) per record \({drivers}\)"):
        _load(doc)


# a quick configuration of every preset (its architecture as the preset sets it; fewer epochs and rounds)
QUICK = {"ctgan": {"epochs": 1}, "dp-ctgan": {"epochs": 1}, "tvae": {"epochs": 1}, "dp-tvae": {"epochs": 1},
         "tabddpm": {"epochs": 1}, "dp-tabddpm": {"epochs": 1}, "tablediffusion": {"epochs": 1},
         "pate-gan": {"iterations": 2, "n_teachers": 10}, "realtabformer": {"epochs": 1},
         "dp-transformer": {"epochs": 1},
         "tldm": {"vae_epochs": 1, "diffusion_epochs": 1}, "dp-tldm": {"vae_epochs": 1, "diffusion_epochs": 1},
         "gem": {"iters": 5}, "dpmerf": {"iters": 5}, "mst": {"iters": 20}, "aim": {"iters": 20, "round_iters": 20},
         "privmrf": {"iters": 20}, "privsyn": {"iterations": 5}, "rap++": {"iters": 20}, "gsd": {"generations": 5}}
SELECT = {"rap++": {"rounds": 2}, "gsd": {"rounds": 2}, "gem": {"rounds": 2}, "aim": {"max_model_size": 1.0}}


@pytest.fixture(scope="module")
def preset_models():
    df, schema = _data(300)
    out = {}
    for name in PRESETS:
        private = PRESETS[name]["model"] in ("gum", "pgm", "rp", "gsd", "gn") or isinstance(
            PRESETS[name]["model"], dict) and PRESETS[name]["model"]["name"] in ("gum", "pgm", "rp", "gsd", "gn")
        kw = {"select": SELECT[name]} if name in SELECT else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = sz.make(name, epsilon=1.0 if private else None, schema=schema, seed=0, model=QUICK.get(name, {}),
                        **kw).fit(df)
        out[name] = s
    return out


def test_every_presets_file_loads_and_declares_its_work(preset_models):
    for name, synth in preset_models.items():
        loaded = _load(synth.to_json())
        work = loaded.model.sample_work()
        assert 0 < work <= base.MAX_SAMPLE_WORK / 100, (name, work)  # a preset's own sizes: far inside
        assert work == synth.model.sample_work(), name   # from the restored state alone


# paper sizes (the presets scale some down for a CPU): the budget holds them with room to spare
PAPER = {"tabddpm": dict(steps=1000, hidden=(256, 1024, 1024, 1024, 1024, 256)),  # the reference's adult denoiser
         "tabddpm ": dict(steps=1000, hidden=(1024,) * 8),                         # the widest of its tuning range
         "realtabformer": dict(size="paper"),                                       # GPT-2, 6 x 768
         "tldm": dict(width=1024),                                                  # TabSyn's denoiser
         "tablediffusion": {}, "ctgan": {}, "tvae": {}, "pate-gan": {}, "gem": {}, "dpmerf": {}}


@pytest.mark.parametrize("name", list(PAPER))
def test_the_budget_holds_every_preset_at_its_papers_size(preset_models, name):
    fitted = preset_models[name.strip()].model
    model = type(fitted)(**{**fitted.get_params(), **PAPER[name]})
    model.domain_ = fitted.domain_  # the work needs the table's layout only, not a fit at paper size
    if not PAPER[name]:
        model = fitted
    assert 0 < model.sample_work() * 2.5 <= base.MAX_SAMPLE_WORK, (name, model.sample_work())


class _PluginModel(base.Model):
    """A third-party model written before sample_work: uniform codes, its state one number."""

    def sample(self, n, rng):
        return rng.integers(0, self.domain_.shape, size=(n, len(self.domain_)))

    def _get_state(self):
        return {"total": 10.0}

    def _set_state(self, state, domain):
        self._fitted(domain)


def test_a_model_that_declares_no_work_still_loads():
    # the default declares nothing and limits nothing beyond the model's own _load_limits
    from synthzoo.core.domain import Domain

    dom = Domain(["a", "b"], [3, 4])
    m = _PluginModel()
    m.set_state({"params": {}, "domain": dom.to_dict(), "total": 10.0}, dom)
    assert m.sample_work() == 0.0 and m.sample(3, np.random.default_rng(0)).shape == (3, 2)


# --------------------------------------------------------------------------------- the default sample size
@pytest.fixture(scope="module")
def heavy_doc():
    # 1.2e10 multiply-adds per record (within the budget) and 2,000 training rows: the default sample, 2,000
    # records, would take 2.4e13, more than 1,000 records at the limit
    synth = _fit("tabddpm", n=2000, steps=10_000, hidden=(1000, 1000), embedding_dim=8, epochs=1, batch_size=500)
    return synth, synth.to_json()


def test_a_files_default_sample_is_bounded_and_an_explicit_n_is_not(heavy_doc, tmp_path):
    synth, doc = heavy_doc
    (tmp_path / "m.szm").write_text(json.dumps(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = sz.Synthesizer.load(tmp_path / "m.szm")
    assert loaded.n_estimate_ == 2000 and loaded.model.sample_work() < base.MAX_SAMPLE_WORK
    for call in (lambda: loaded.sample(), lambda: loaded.sample_to_csv(tmp_path / "f.csv"),
                 lambda: loaded.sample_chunks()):
        with pytest.raises(ConfigError, match=r"model file: the default sample size, 2,000 rows \(the file's estimate "
                                              r"of the training rows\), would take ~[\d.]+e\+13 operations with model "
                                              r"'tabddpm' \(~[\d.]+e\+10 per record: steps=10000 x a denoiser of .*\), "
                                              r"about \d+ CPU minutes; pass n"):
            call()
    assert not (tmp_path / "f.csv").exists()
    assert len(loaded.sample(2, seed=0)) == 2  # asked for: drawn
    assert synth.model.sample_work() * synth.n_estimate_ > base.MAX_DEFAULT_SAMPLE_WORK
    assert synth._sample_size(None) == 2000  # fitted here, by its user: the default is theirs
    assert _load(doc)._sample_size(None) == 2000  # rebuilt in this process (the tuner's runs): not a file's


def test_the_command_line_says_to_pass_n(heavy_doc, tmp_path, capsys):
    _, doc = heavy_doc
    (tmp_path / "m.szm").write_text(json.dumps(doc))
    assert main(["sample", str(tmp_path / "m.szm"), "--out", str(tmp_path / "f.csv")]) == 2
    err = capsys.readouterr().err
    assert "the default sample size, 2,000 rows" in err and "-n on the command line" in err
    assert "Traceback" not in err and not (tmp_path / "f.csv").exists()


def test_fit_on_the_command_line_refuses_a_model_past_the_budget_before_fitting(tmp_path, capsys):
    df, schema = _data()
    df.to_csv(tmp_path / "data.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    assert main(["fit", str(tmp_path / "data.csv"), "--schema", str(tmp_path / "schema.json"), "--synth", "tabddpm",
                 "--epsilon", "1", "--set", "model.steps=10000", "--set", "model.hidden=[2048,2048]",
                 "--out", str(tmp_path / "m.szm")]) == 2
    err = capsys.readouterr().err
    assert "model 'tabddpm': sampling would take" in err and "steps=10000 x a denoiser of" in err
    assert "privacy spent" not in err and not (tmp_path / "m.szm").exists()


# a cheap model's default sample: its model work is a few operations a record, but every row is decoded, and
# sample() holds the whole frame -- a file claiming 1e9 training rows of an mst model must not start either
def _mst_file(tmp_path, monkeypatch, n_estimate):
    synth = _fit("mst", epsilon=1.0)
    doc, f = synth.to_json(), n_estimate / synth.n_estimate_
    # edited consistently, as an attacker would: the noisy counts and the model's total scaled with the claim
    for m in doc["model_state"]["measurements"]:
        m["noisy"] = (np.asarray(m["noisy"]) * f).tolist()
    doc["model_state"]["total"] *= f
    doc["n_estimate"] = n_estimate
    (tmp_path / "m.szm").write_text(json.dumps(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = sz.Synthesizer.load(tmp_path / "m.szm")

    def drawn(*a, **k):
        raise AssertionError("the default sample was drawn")
    monkeypatch.setattr(loaded.model, "sampler", drawn)
    return loaded


def test_a_cheap_models_default_sample_is_bounded_by_its_rows(tmp_path, monkeypatch):
    loaded = _mst_file(tmp_path, monkeypatch, 1e9)
    assert loaded.model.sample_work() * 1e9 < base.MAX_DEFAULT_SAMPLE_WORK  # the model's work alone passes
    for call in (lambda: loaded.sample(), lambda: loaded.sample_to_csv(tmp_path / "f.csv"),
                 lambda: loaded.sample_chunks()):
        with pytest.raises(ConfigError, match=r"the default sample size, 1,000,000,000 rows .* with model 'pgm' "
                                              r"\(~\d+ per record: .*; ~9e\+04 more to decode it\), about \d+ CPU "
                                              r"minutes; pass n"):
            call()
    assert not (tmp_path / "f.csv").exists()


def test_a_files_default_in_memory_sample_is_bounded_by_its_frame_and_streaming_is_not(tmp_path, monkeypatch):
    loaded = _mst_file(tmp_path, monkeypatch, 1e8)  # within the work bound (~3 CPU minutes), ~10 GB as one frame
    assert loaded._sample_size(None) == 100_000_000
    with pytest.raises(ConfigError, match=r"the default sample size, 100,000,000 rows \(the file's estimate of the "
                                          r"training rows\), would take ~\d+\.\d GB in memory, more than sample\(\) "
                                          r"draws unasked \(4 GB\); pass n, or write the rows in chunks"):
        loaded.sample()
    monkeypatch.undo()
    assert len(loaded.sample(5, seed=0)) == 5  # asked for: drawn
    first = next(iter(loaded.sample_chunks(chunk=10, seed=0)))  # streamed: a block at a time
    assert len(first) == 10


def test_the_frame_estimate_covers_what_a_sample_takes():
    synth = _fit("mst", n=2000, epsilon=1.0)
    frame = synth.sample(20_000, seed=0)
    held = frame.memory_usage(deep=False).sum() / len(frame)  # the frame's cells (text by reference)
    assert synth._frame_bytes() >= 2 * held
