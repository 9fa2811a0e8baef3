"""Compose a whole pipeline's search space from each module's ``hyperparameter_space()``.

Modules declare their own ranges next to their code (as synthcity plugins do); the tuner
reads them through this one function, prefixed by role so names never collide, plus the
budget split between stages.
"""

from __future__ import annotations

import difflib
import math
import numbers

from synthzoo.core.errors import ConfigError
from synthzoo.pipeline import Synthesizer

KINDS = ("int", "float", "log", "cat")


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


def _modules(cfg: dict, numeric: str | None, select_model: str | None) -> tuple:
    """The (preprocess, select, model) specs of ``cfg`` (a preset's configuration) with the numeric
    binning and the ``"<selector>+<model>"`` pair swapped in where given."""
    pre = [_module_dict(p) for p in cfg.get("preprocess") or []]
    select = None if cfg.get("select") is None else _module_dict(cfg["select"])
    model = _module_dict(cfg["model"])
    if numeric is not None:
        pre = [p for p in pre if p["name"] not in MODULE_CHOICES["preprocess.numeric"]] + [{"name": numeric}]
    if select_model is not None:
        sel_name, model_name = select_model.split("+")
        if sel_name != select["name"]:
            select = {"name": sel_name}
        if model_name != model["name"]:
            model = {"name": model_name}
    return pre, select, model


def _module_params(synth: Synthesizer) -> set:
    """``"<role>.<module>.<param>"`` for every constructor parameter of ``synth``'s modules (a user's
    ``space`` may range over any of them; the default search covers their ``hyperparameter_space()``)."""
    mods = [("preprocess", p) for p in synth.preprocess] + [("model", synth.model)]
    if synth.select is not None:
        mods.append(("select", synth.select))
    return {f"{role}.{mod.name}.{param}" for role, mod in mods for param in mod.get_params()}


def _bad(key: str, problem: str) -> ConfigError:
    return ConfigError(f"space: {key!r}: {problem}")


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v))


def _check_spec(key: str, spec) -> list:
    """The values ``spec`` can take at its ends (or all of a ``"cat"`` spec's), after checking its shape."""
    shape = "a tuple (kind, low, high) with kind 'int', 'float' or 'log', or ('cat', [choices])"
    if not isinstance(spec, (tuple, list)) or not spec or not isinstance(spec[0], str):
        raise _bad(key, f"must be {shape}, got {spec!r}")
    kind = spec[0]
    if kind not in KINDS:
        close = difflib.get_close_matches(kind, KINDS, n=1)
        raise _bad(key, f"unknown kind {kind!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                   + f"; {shape}")
    if kind == "cat":
        if len(spec) != 2 or not isinstance(spec[1], (tuple, list)) or not spec[1]:
            raise _bad(key, f"a 'cat' spec is ('cat', [choices]) with at least one choice, got {spec!r}")
        for v in spec[1]:
            if v is not None and not isinstance(v, (str, bool, int, float)):
                raise _bad(key, f"a choice must be None, a bool, a number or a text, got {v!r}")
        return list(spec[1])
    if len(spec) != 3:
        raise _bad(key, f"an {kind!r} spec is ({kind!r}, low, high), got {spec!r}")
    low, high = spec[1], spec[2]
    if not (_is_number(low) and _is_number(high)):
        raise _bad(key, f"low and high must be finite numbers, got {low!r} and {high!r}")
    if kind == "int" and (float(low) != int(low) or float(high) != int(high)):
        raise _bad(key, f"an 'int' range takes whole numbers, got {low!r} and {high!r}")
    if low > high:
        raise _bad(key, f"low {low!r} is greater than high {high!r}")
    if kind == "log" and low <= 0:
        raise _bad(key, f"a 'log' range needs low > 0, got {low!r}")
    return [int(low), int(high)] if kind == "int" else [float(low), float(high)]


def search_modules(preset: str, choose_modules: bool = True, choices: dict | None = None) -> list:
    """Every module set a trial of ``preset`` can fit: ``[(preprocess, select, model)]`` specs, one
    per combination of the module choices (``MODULE_CHOICES`` narrowed by ``choices``)."""
    from synthzoo.presets import preset_config

    cfg = preset_config(preset)
    if not (choose_modules and cfg.get("select") is not None):
        return [_modules(cfg, None, None)]
    opts = {**MODULE_CHOICES, **(choices or {})}
    return [_modules(cfg, n, sm) for n in opts["preprocess.numeric"] for sm in opts["select_model"]]


def _unknown_why(key: str, known: dict, used: set, preset: str, choices: dict | None) -> str:
    """Why ``key`` names nothing a trial of this search tunes, with the closest key that does."""
    from synthzoo.core.base import REGISTRY, load_plugins

    load_plugins()
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    search = f"preset {preset!r}" + (f" with choices {choices}" if choices else "")
    if key in MODULE_CHOICES:
        return f"it is a module choice: pass it as choices={{{key!r}: [...]}}"
    parts = key.split(".", 2)
    if len(parts) != 3 or parts[0] not in REGISTRY:
        return f"keys are '<role>.<module>.<parameter>' with role one of {sorted(REGISTRY)}, or " \
               f"'budget_split.preprocess'{hint}"
    role, name, param = parts
    if name not in REGISTRY[role]:
        near = difflib.get_close_matches(name, sorted(REGISTRY[role]), n=1)
        return f"there is no {role} module {name!r}" + (f" (did you mean {near[0]!r}?)" if near and not close else "") \
            + hint
    here = sorted(n for r, n in used if r == role)
    if (role, name) not in used:
        return f"no trial of this search ({search}) uses the {role} module {name!r}; its {role} modules are " \
               f"{here}{hint}"
    own = sorted(k.split(".", 2)[2] for k in known if k.startswith(f"{role}.{name}."))
    return f"{name} has no parameter {param!r} (its parameters: {own}){hint}"


def check_space(preset: str, space, choose_modules: bool = True, choices: dict | None = None,
                tune_split: bool = True) -> None:
    """Check a user's ``space`` (see :func:`suggest_config`) whole, before any trial: every key must
    name a parameter of a module some trial of this search fits (``"<role>.<module>.<param>"``: one
    its ``hyperparameter_space()`` declares, or another of its parameters, or ``"budget_split.preprocess"``), and every spec must be well formed with ends the parameter
    accepts.  Raises :class:`ConfigError` naming the key and the problem (with the closest key for
    a typo); ``choices`` must already be valid."""
    from synthzoo.core.base import create

    if space is None:
        return
    if not isinstance(space, dict):
        raise ConfigError(f"space must be a dict {{'<role>.<module>.<param>': spec}}, got a {type(space).__name__}")
    known: dict = {}  # key -> (role, module name, parameter)
    used: set = set()  # (role, module name) of every module some trial fits
    for pre, select, model in search_modules(preset, choose_modules, choices):
        probe = Synthesizer(preprocess=pre, select=select, model=model, epsilon=1.0)
        used |= {("preprocess", p.name) for p in probe.preprocess} | {("model", probe.model.name)}
        used |= set() if probe.select is None else {("select", probe.select.name)}
        for key in [*pipeline_space(probe, tune_split=tune_split), *_module_params(probe)]:
            known[key] = tuple(key.split(".", 2)) if not key.startswith("budget_split.") else None
    for key, spec in space.items():
        if not isinstance(key, str):
            raise ConfigError(f"space: keys are texts '<role>.<module>.<param>', got {key!r}")
        if key not in known:
            raise ConfigError(f"space: unknown key {key!r}: {_unknown_why(key, known, used, preset, choices)}")
        values = _check_spec(key, spec)
        if known[key] is None:  # budget_split.preprocess: the preprocessing share of the budget
            if spec[0] == "cat" and not all(_is_number(v) for v in values):
                raise _bad(key, f"budget shares must be numbers, got {list(values)!r}")
            if not all(0 < float(v) < 1 for v in values):
                raise _bad(key, f"a budget share lies strictly between 0 and 1, got {list(values)!r}")
            continue
        role, name, param = known[key]
        for v in values:
            try:
                create(role, {"name": name, param: v})
            except ConfigError as e:
                raise _bad(key, f"{v!r} is not a value {name}.{param} takes ({e})") from None


def suggest_config(trial, preset: str, choose_modules: bool = True, tune_split: bool = True,
                   ranges: dict | None = None, choices: dict | None = None) -> dict:
    """Draw one pipeline configuration for ``preset`` from an Optuna ``trial``.

    With ``choose_modules`` the numeric binning and the (selector, model) pair are part of the
    search (``MODULE_CHOICES``); the parameters of the chosen modules are then drawn from the
    space :func:`pipeline_space` composes (narrowed by ``PRESET_RANGES``), including the budget
    split.  ``ranges`` overrides specs by key (``{"model.gum.iterations": ("int", 20, 40)}``), or adds
    a range for another parameter of a chosen module (:func:`check_space` checks them first), and
    ``choices`` the module choices (keys of ``MODULE_CHOICES``).  Returns keyword overrides for
    :func:`synthzoo.make`.
    """
    opts = {**MODULE_CHOICES, **(choices or {})}
    for key, vals in opts.items():
        if key not in MODULE_CHOICES or not vals:
            raise ConfigError(f"choices: {key!r} must be one of {sorted(MODULE_CHOICES)} with at least one option")
    from synthzoo.presets import preset_config

    cfg = preset_config(preset)
    numeric = select_model = None
    if choose_modules and cfg.get("select") is not None:
        numeric = _suggest(trial, "preprocess.numeric", ("cat", opts["preprocess.numeric"]))
        select_model = _suggest(trial, "select_model", ("cat", opts["select_model"]))
    pre, select, model = _modules(cfg, numeric, select_model)
    # instantiate once (parameters only) to read the composed space of exactly these modules
    probe = Synthesizer(preprocess=pre, select=select, model=model, epsilon=1.0)
    space = pipeline_space(probe, tune_split=tune_split)
    params = _module_params(probe)  # a user's range may also name a parameter a module does not declare tunable
    space.update({k: v for k, v in {**PRESET_RANGES.get(preset, {}), **(ranges or {})}.items()
                  if k in space or (ranges and k in ranges and k in params)})
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
