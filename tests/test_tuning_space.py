import synthzoo as sz
from synthzoo.core.base import REGISTRY
from tuning import pipeline_space


def test_privsyn_space_is_composed_from_its_modules():
    space = pipeline_space(sz.make("privsyn"))
    assert "preprocess.privtree.max_depth" in space
    assert space["budget_split.preprocess"][0] == "float"
    for key, spec in space.items():
        assert spec[0] in ("int", "float", "log", "cat"), key


def test_every_registered_module_declares_a_valid_space():
    for role, table in REGISTRY.items():
        for name, cls in table.items():
            params = cls().get_params()
            for param, spec in cls.hyperparameter_space().items():
                assert param in params, (role, name, param)
                if spec[0] == "cat":
                    assert len(spec[1]) >= 2
                else:
                    assert spec[0] in ("int", "float", "log") and spec[1] < spec[2], (role, name, param)


def test_record_model_presets_expose_their_models_space():
    for preset, model in (("ctgan", "ctgan"), ("dp-tvae", "tvae"), ("pate-gan", "pategan")):
        space = pipeline_space(sz.make(preset))
        assert any(k.startswith(f"model.{model}.") for k in space), (preset, sorted(space))


def test_tune_a_record_model_over_its_space(tmp_path):
    """The tuner runs a record-model preset (DP-TVAE, accounted) on its model's own space, here
    narrowed to one or two epochs."""
    import warnings

    import tuning
    from synthzoo.datasets import make_demo, train_test_split

    df, schema = make_demo(n=400, seed=0)
    train, val = train_test_split(df, test_size=0.25, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tuning.tune("dp-tvae", train, val, epsilon=1.0, schema=schema, n_trials=2, privacy="accounted",
                          storage=f"sqlite:///{tmp_path / 's.db'}", isolate=False, score_rows=100,
                          space={"model.tvae.epochs": ("int", 1, 2), "model.tvae.embedding_dim": ("cat", [64, 128])},
                          noise_seed=3)
    assert res.synthesizer is not None
    assert res.best_params["model.tvae.epochs"] in (1, 2) and res.best_params["model.tvae.embedding_dim"] in (64, 128)
    assert res.synthesizer.privacy_spent().epsilon <= 1.0 * (1 + 1e-9)
    assert len(res.synthesizer.sample(20)) == 20
