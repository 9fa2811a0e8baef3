"""Compose a whole pipeline's search space from each module's ``hyperparameter_space()``.

Modules declare their own ranges next to their code (as synthcity plugins do); the tuner
reads them through this one function, prefixed by role so names never collide, plus the
budget split between stages.
"""

from __future__ import annotations

from synthzoo.core.errors import ConfigError
from synthzoo.pipeline import Synthesizer


def pipeline_space(synth: Synthesizer, tune_split: bool = True) -> dict:
    """``{"<role>.<module>.<param>": spec}`` for every module of ``synth``; specs are
    ``(kind, low, high)`` with kind ``"int"``, ``"float"`` or ``"log"``, or ``("cat", choices)``."""
    space: dict = {}
    mods = [("preprocess", p) for p in synth.preprocess] + [("model", synth.model)]
    if synth.select is not None:
        mods.append(("select", synth.select))
    for role, mod in mods:
        for param, spec in mod.hyperparameter_space().items():
            if param not in mod.get_params():
                raise ValueError(f"{mod.name}: hyperparameter_space names {param!r}, which is not a parameter")
            space[f"{role}.{mod.name}.{param}"] = spec
    if tune_split and synth.budget_split.get("preprocess", 0) > 0:
        space["budget_split.preprocess"] = ("float", 0.02, 0.3)
    return space


# Modules the tuner may swap within a preset family: numeric binning, and the (selector, model)
# pairs the pipeline accepts (non-adaptive selectors feed either measurement model; AIM is left
# out of the choice because its adaptive rounds make one trial cost minutes on adult).
MODULE_CHOICES: dict[str, list[str]] = {
    "preprocess.numeric": ["privtree", "uniform"],
    "select_model": ["indif+gum", "indif+pgm", "mst+gum", "mst+pgm", "aim+pgm"],
}

# Ranges that narrow a module's declared space for a preset.  Where the seed papers give a tuning
# range we use it: Du & Li's SynMeter tunes PrivSyn's GUM update iterations in [10, 100] and its
# number of bins in [10, 50] (``synthesizer/privsyn.py`` of their code).  The rest are ours, chosen
# to keep trials near each paper's regime (a small InDif selection share; private-pgm's
# iteration counts) and a trial on adult within a minute or two.
PRESET_RANGES: dict[str, dict] = {
    "privsyn": {"select.indif.select_share": ("float", 0.05, 0.3), "model.gum.iterations": ("int", 10, 100),
                "preprocess.uniform.bins": ("int", 10, 50), "model.pgm.iters": ("int", 200, 1000)},
    "mst": {"model.pgm.iters": ("int", 200, 2500)},
    "aim": {"model.pgm.iters": ("int", 200, 2500)},
}


def _suggest(trial, key: str, spec):
    kind = spec[0]
    if kind == "cat":
        return trial.suggest_categorical(key, list(spec[1]))
    if kind == "int":
        return trial.suggest_int(key, int(spec[1]), int(spec[2]))
    if kind == "float":
        return trial.suggest_float(key, float(spec[1]), float(spec[2]))
    if kind == "log":
        return trial.suggest_float(key, float(spec[1]), float(spec[2]), log=True)
    raise ValueError(f"{key}: unknown search-space kind {kind!r}")


def _module_dict(entry) -> dict:
    return dict(entry) if isinstance(entry, dict) else {"name": entry}


def suggest_config(trial, preset: str, choose_modules: bool = True, tune_split: bool = True,
                   ranges: dict | None = None, choices: dict | None = None) -> dict:
    """Draw one pipeline configuration for ``preset`` from an Optuna ``trial``.

    With ``choose_modules`` the numeric binning and the (selector, model) pair are part of the
    search (``MODULE_CHOICES``); the parameters of the chosen modules are then drawn from the
    space :func:`pipeline_space` composes (narrowed by ``PRESET_RANGES``), including the budget
    split.  ``ranges`` overrides specs by key (``{"model.gum.iterations": ("int", 20, 40)}``) and
    ``choices`` the module choices (keys of ``MODULE_CHOICES``).  Returns keyword overrides for
    :func:`synthzoo.make`.
    """
    opts = {**MODULE_CHOICES, **(choices or {})}
    for key, vals in opts.items():
        if key not in MODULE_CHOICES or not vals:
            raise ConfigError(f"choices: {key!r} must be one of {sorted(MODULE_CHOICES)} with at least one option")
    from synthzoo.presets import preset_config

    cfg = preset_config(preset)
    pre = [_module_dict(p) for p in cfg.get("preprocess") or []]
    select = None if cfg.get("select") is None else _module_dict(cfg["select"])
    model = _module_dict(cfg["model"])
    if choose_modules and select is not None:
        numeric = _suggest(trial, "preprocess.numeric", ("cat", opts["preprocess.numeric"]))
        pre = [p for p in pre if p["name"] not in MODULE_CHOICES["preprocess.numeric"]] + [{"name": numeric}]
        sel_name, model_name = _suggest(trial, "select_model", ("cat", opts["select_model"])).split("+")
        if sel_name != select["name"]:
            select = {"name": sel_name}
        if model_name != model["name"]:
            model = {"name": model_name}
    # instantiate once (parameters only) to read the composed space of exactly these modules
    probe = Synthesizer(preprocess=pre, select=select, model=model, epsilon=1.0)
    space = pipeline_space(probe, tune_split=tune_split)
    space.update({k: v for k, v in {**PRESET_RANGES.get(preset, {}), **(ranges or {})}.items() if k in space})
    values = {key: _suggest(trial, key, spec) for key, spec in sorted(space.items())}
    by_role: dict = {}
    for key, val in values.items():
        if key.startswith("budget_split."):
            continue
        role, name, param = key.split(".", 2)
        by_role.setdefault((role, name), {})[param] = val
    pre = [{**p, **by_role.get(("preprocess", p["name"]), {})} for p in pre]
    out = {"preprocess": pre, "model": {**model, **by_role.get(("model", model["name"]), {})}}
    if select is not None:
        out["select"] = {**select, **by_role.get(("select", select["name"]), {})}
    if "budget_split.preprocess" in values:
        main = "select" if probe.model.get_tags()["fits"] == "measurements" else "model"
        share = values["budget_split.preprocess"]
        out["budget_split"] = {"preprocess": share, main: 1.0 - share}
    elif "budget_split" in cfg and not any(p.get_tags()["spends_budget"] for p in probe.preprocess):
        out["budget_split"] = None  # a split for a spender that was swapped out: use the default
    return out


def default_params(preset: str, choose_modules: bool = True, tune_split: bool = True) -> dict:
    """The trial parameters that reproduce ``preset`` with its default settings, so a study can
    start from the defaults (the tuner enqueues them as its first trial) and never end worse on
    the validation split than the untuned pipeline."""
    from synthzoo.presets import make

    synth = make(preset, epsilon=1.0)
    params: dict = {}
    if choose_modules and synth.select is not None:
        nums = [p.name for p in synth.preprocess if p.name in MODULE_CHOICES["preprocess.numeric"]]
        params["preprocess.numeric"] = nums[0] if nums else "uniform"
        params["select_model"] = f"{synth.select.name}+{synth.model.name}"
    mods = [("preprocess", p) for p in synth.preprocess] + [("model", synth.model)]
    if synth.select is not None:
        mods.append(("select", synth.select))
    for role, mod in mods:
        values = mod.get_params()
        for param in mod.hyperparameter_space():
            params[f"{role}.{mod.name}.{param}"] = values[param]
    if tune_split and synth.budget_split.get("preprocess", 0) > 0:
        params["budget_split.preprocess"] = synth.budget_split["preprocess"]
    return params
