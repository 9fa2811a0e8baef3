"""The model file format, checked as untrusted input before anything is built.

A saved synthesizer (:meth:`synthzoo.Synthesizer.save`) is a JSON document; whoever hands one over
may have edited it.  :func:`check_document` validates the whole document against the format --
every key present and of its type, no unknown key, columns consistent between the schema, the
column order and the encoders, nesting and sizes bounded -- and raises :class:`ConfigError` naming
the field (``model file: config.seed: ...``).  The parts with their own rules are checked where
they are built, each also raising ConfigError: the schema (:meth:`Schema.from_dict`), the encoders
(bin edges within the schema's bounds), the model state (``Model.set_state``: parameters, shapes,
:attr:`~synthzoo.core.base.Model._load_limits`) and the privacy account, whose claim is recomputed
from its recorded events (:class:`~synthzoo.core.privacy.ledger.SavedAccount`).
"""

from __future__ import annotations

import math

from .core.errors import ConfigError

FORMAT = "synthzoo-model"
#: Deepest nesting of objects and lists a model file may have (a real one needs fewer than 8).
MAX_DEPTH = 32
#: Largest model file :meth:`Synthesizer.load` reads by default (bytes; ``max_bytes`` raises it): parsed
#: JSON numbers take several times their text's size in memory.
MAX_BYTES = 2 ** 29
#: Largest DP row estimate a file may state (``sample()`` without ``n`` draws that many rows).
MAX_ROWS = 1e9

_TOP = {"format": str, "version": str, "saved": str, "config": dict, "schema": dict, "columns": list,
        "encoding": str, "encoder": dict, "model_state": dict, "n_estimate": (int, float, type(None)),
        "privacy": dict}
_OPTIONAL = {"warning": str}
_CONFIG = {"preprocess": list, "select": (dict, type(None)), "model": dict, "epsilon": (int, float, type(None)),
           "delta": (int, float), "seed": int, "budget_split": dict, "out_of_bounds": str,
           "name": (str, type(None))}


def _kind(t) -> str:
    names = {str: "a string", dict: "an object", list: "a list", int: "an integer", float: "a number",
             type(None): "null", bool: "true/false"}
    ts = t if isinstance(t, tuple) else (t,)
    if set(ts) >= {int, float}:
        ts = tuple(x for x in ts if x is not int)
    return " or ".join(names.get(x, x.__name__) for x in ts)


def _typed(value, t) -> bool:
    ts = t if isinstance(t, tuple) else (t,)
    if isinstance(value, bool) and bool not in ts:
        return False
    return isinstance(value, ts)


def check_depth(doc, limit: int = MAX_DEPTH) -> None:
    """ConfigError if objects/lists nest deeper than ``limit`` (checked without recursion)."""
    stack = [(doc, 1, "")]
    while stack:
        node, depth, path = stack.pop()
        if depth > limit:
            raise ConfigError(f"model file: {path.lstrip('.') or 'document'}: nested deeper than {limit} levels")
        if isinstance(node, dict):
            stack.extend((v, depth + 1, f"{path}.{k}") for k, v in node.items() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1, f"{path}[{i}]") for i, v in enumerate(node) if isinstance(v, (dict, list)))


def _keys(obj: dict, spec: dict, where: str, optional: dict | None = None) -> None:
    optional = optional or {}
    at = f"{where}: " if where else "the document: "
    missing = [k for k in spec if k not in obj]
    if missing:
        raise ConfigError(f"model file: {at}missing key(s) {missing}")
    unknown = sorted(str(k) for k in obj if k not in spec and k not in optional)
    if unknown:
        raise ConfigError(f"model file: {at}unknown key(s) {unknown}")
    for k, t in {**spec, **optional}.items():
        if k in obj and not _typed(obj[k], t):
            raise ConfigError(f"model file: {where}{'.' if where else ''}{k}: must be {_kind(t)}, got "
                              f"{type(obj[k]).__name__} {str(obj[k])[:60]!r}")


def _module(spec, where: str) -> None:
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise ConfigError(f"model file: {where}: must be an object with a 'name' string")
    bad = [k for k in spec if not isinstance(k, str) or k.startswith("_")]
    if bad:
        raise ConfigError(f"model file: {where}: parameter name(s) {bad} are not parameters")


def check_document(doc) -> None:
    """Validate a model document's structure; raise :class:`ConfigError` naming the first bad field."""
    if not isinstance(doc, dict):
        raise ConfigError("model file: not a synthzoo model document (a JSON object is expected)")
    if doc.get("format") != FORMAT:
        got = doc.get("format")
        shown = repr(got)[:60] if isinstance(got, (str, int, float, type(None))) else f"a {type(got).__name__}"
        raise ConfigError(f"model file: not a synthzoo model document ('format' is {shown}, expected {FORMAT!r})")
    check_depth(doc)
    _keys(doc, _TOP, "", _OPTIONAL)
    cfg = doc["config"]
    _keys(cfg, _CONFIG, "config.")
    if len(cfg["preprocess"]) > 16:
        raise ConfigError("model file: config.preprocess: more than 16 preprocessors")
    for i, p in enumerate(cfg["preprocess"]):
        _module(p, f"config.preprocess[{i}]")
    if cfg["select"] is not None:
        _module(cfg["select"], "config.select")
    _module(cfg["model"], "config.model")
    if not 0 <= cfg["seed"] < 2 ** 63:
        raise ConfigError(f"model file: config.seed: must be a whole number in [0, 2^63), got {cfg['seed']!r}")
    for k, v in cfg["budget_split"].items():
        if not _typed(v, (int, float)) or not (0 <= v <= 1):
            raise ConfigError(f"model file: config.budget_split.{k}: must be a share in [0, 1], got {v!r}")
    if doc["encoding"] not in ("codes", "features", "tokens"):
        raise ConfigError(f"model file: encoding: must be 'codes', 'features' or 'tokens', got {doc['encoding']!r}")
    cols = doc["columns"]
    if not all(isinstance(c, str) for c in cols) or len(set(cols)) != len(cols):
        raise ConfigError("model file: columns: must be a list of distinct column names")
    specs = doc["schema"].get("columns")
    if not isinstance(specs, dict):
        raise ConfigError("model file: schema.columns: must be an object mapping names to column descriptions")
    unknown = [c for c in cols if c not in specs]
    if unknown:
        raise ConfigError(f"model file: columns: unknown column(s) {unknown} (not in the schema)")
    lacking = [c for c in specs if c not in cols]
    if lacking:
        raise ConfigError(f"model file: columns: the schema's column(s) {lacking} are missing")
    unknown = [c for c in doc["encoder"] if c not in specs]
    if unknown:
        raise ConfigError(f"model file: encoder: unknown column(s) {unknown} (not in the schema)")
    lacking = [c for c in specs if c not in doc["encoder"]]
    if lacking:
        raise ConfigError(f"model file: encoder: no encoder for column(s) {lacking}")
    est = doc["n_estimate"]
    if est is not None and not (0 <= est <= MAX_ROWS and math.isfinite(est)):  # an int past float's range compares
        raise ConfigError(f"model file: n_estimate: must be a number of rows in [0, {MAX_ROWS:g}], got {est!r}")
