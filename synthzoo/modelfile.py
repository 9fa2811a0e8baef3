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

What no check of a file's content can catch is a consistent rewrite (weights trained without DP under
a genuine account).  A release can therefore be signed: :func:`generate_key` makes an Ed25519 key
pair, :meth:`Synthesizer.save(path, sign_with=key) <synthzoo.Synthesizer.save>` signs the document,
and :meth:`Synthesizer.load(path, trusted_keys=[key.pub]) <synthzoo.Synthesizer.load>` refuses a file
that is unsigned, signed by another key, or changed after signing (:func:`verify_document`).  The
signature says who saved the file and that nobody changed it since; the privacy claim is still that
holder's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
from pathlib import Path

from .core.errors import ConfigError
from .core.statecheck import check_text

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
_OPTIONAL = {"warning": str, "signature": dict, "tuning": str}
TUNING_CHARS = 2000  # the "tuning" statement (how a tuner selected the configuration) is a sentence or two
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


def _release(version: str) -> tuple[int, int, int] | None:
    m = re.fullmatch(r"(\d{1,6})\.(\d{1,6})\.(\d{1,6})([.+-][0-9A-Za-z.+-]{0,64})?", version)
    return None if m is None else (int(m[1]), int(m[2]), int(m[3]))


def _check_version(version: str) -> None:
    """The synthzoo version that wrote the file: a release number; a later one than this is read as far as
    this version understands the file (every field is still checked), with a warning."""
    import warnings

    from ._version import __version__

    written = _release(version)
    if written is None:
        raise ConfigError(f"model file: version: must be a synthzoo release such as {__version__!r}, got "
                          f"{version[:40]!r}")
    if written > _release(__version__):
        warnings.warn(f"model file: written by synthzoo {version[:40]}, newer than this {__version__}: read as far as "
                      f"this version understands it; install synthzoo>={version[:40]} to read it as written",
                      UserWarning, stacklevel=4)


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
    _check_version(doc["version"])
    if "signature" in doc:
        check_signature_field(doc["signature"])
    if "tuning" in doc:  # shown first in privacy_report()
        check_text(doc["tuning"], "model file: tuning", TUNING_CHARS)
    cfg = doc["config"]
    _keys(cfg, _CONFIG, "config")
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


# ------------------------------------------------------------------------------------------- signing
SIGNATURE_ALGORITHM = "ed25519"


def canonical_bytes(doc: dict) -> bytes:
    """The bytes a signature covers: the document without its ``signature``, as canonical JSON (sorted
    keys, no spaces, ASCII), so that re-parsing and re-writing the file does not change them."""
    body = {k: v for k, v in doc.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})
_SPLIT_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def check_plain_json(doc) -> None:
    """ConfigError unless ``doc`` holds only what ``json.loads`` makes of a file: objects with string keys,
    lists, strings, numbers, true/false/null.  :func:`canonical_bytes` is one-to-one on those only: it writes a
    tuple as a list, a key 1 as "1", a surrogate pair held as two characters as the one character it encodes
    -- a document :meth:`Synthesizer.from_json` is handed could load as another model than the one signed."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            bad = next((k for k in node if type(k) is not str), None)
            if bad is not None:
                raise ConfigError(f"model file: an object key {bad!r:.40} is not a string (not JSON data)")
            strings = [k for k in node if not k.isascii()]
            node = node.values()
        else:
            strings = []
        kinds = set(map(type, node))  # C speed over long lists of numbers
        if not kinds <= _PLAIN:
            bad = sorted(t.__name__ for t in kinds - _PLAIN)
            raise ConfigError(f"model file: holds {bad} values, which are not JSON data")
        if str in kinds:
            strings += [v for v in node if type(v) is str and not v.isascii()]
        if any(_SPLIT_PAIR.search(v) for v in strings):  # json.loads joins an escaped pair into one character
            raise ConfigError("model file: a string holds a surrogate pair as two characters (not JSON text)")
        if dict in kinds or list in kinds:
            stack.extend(v for v in node if type(v) is dict or type(v) is list)


def _crypto():
    try:
        from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:  # pragma: no cover - a dependency; a broken install says so
        raise ConfigError("signing model files needs the 'cryptography' package (pip install cryptography)") from None
    return ed25519, serialization, InvalidSignature, UnsupportedAlgorithm


def key_id(public_key) -> str:
    """A public key's fingerprint: the first 16 hex digits of SHA-256 over its 32 raw bytes."""
    _, serialization, _, _ = _crypto()
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def generate_key(path: str | Path) -> tuple[Path, Path]:
    """Write a new Ed25519 private key to ``path`` (PEM, readable by its owner only) and its public
    key to ``path + ".pub"`` (PEM); returns both paths.  Refuses to overwrite either."""
    ed25519, serialization, _, _ = _crypto()
    path = Path(path)
    if not path.name:  # "", "." or "/": with_name raised ValueError
        raise ConfigError(f"{str(path)!r}: not a file name for the key (e.g. keys/release)")
    pub = path.with_name(path.name + ".pub")
    for p in (path, pub):
        if p.exists() or p.is_symlink():
            raise ConfigError(f"{p}: exists; not overwritten (a lost private key cannot be recovered)")
    key = ed25519.Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    written = []
    try:  # O_EXCL: never through a link another user left at either path
        for p, data, mode in ((path, pem, 0o600), (pub, public, 0o644)):
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
            written.append(p)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
    except OSError as e:
        for p in written:
            p.unlink(missing_ok=True)
        raise ConfigError(f"{e.filename}: cannot write the key ({e.strerror})") from None
    return path, pub


def _read_key(path, private: bool):
    ed25519, serialization, _, UnsupportedAlgorithm = _crypto()
    what = "private" if private else "public"
    if not isinstance(path, (str, bytes, os.PathLike)):  # open() reads an int as a file descriptor: 0 is stdin
        raise ConfigError(f"the {what} key: a key file's path is expected, got {type(path).__name__} {path!r:.60}")
    try:
        with open(path, "rb") as f:  # at most 64 KiB, whatever the path is (a device, a pipe)
            data = f.read(1 << 16)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the {what} key ({e.strerror})") from None
    except ValueError as e:  # a NUL in the path
        raise ConfigError(f"{path!r:.80}: cannot read the {what} key ({e})") from None
    try:
        key = (serialization.load_pem_private_key(data, password=None) if private
               else serialization.load_pem_public_key(data))
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{path}: not a PEM {what} key ({e})") from None
    except UnsupportedAlgorithm:  # not a ValueError: a key on a curve cryptography does not load (secp112r1)
        raise ConfigError(f"{path}: not an Ed25519 {what} key (synthzoo keygen makes one)") from None
    want = ed25519.Ed25519PrivateKey if private else ed25519.Ed25519PublicKey
    if not isinstance(key, want):
        raise ConfigError(f"{path}: not an Ed25519 {what} key (synthzoo keygen makes one)")
    return key


def check_not_the_key(out: str | Path, key_path: str | Path) -> None:
    """ConfigError when writing ``out`` would replace the key file ``key_path`` (``save(k, sign_with=k)``): a
    lost private key cannot be recovered."""
    try:
        same = os.path.samefile(out, key_path)
    except (OSError, ValueError, TypeError):  # either missing (or not a path): nothing to replace
        return
    if same:
        raise ConfigError(f"{out}: is the signing key sign_with; writing the model file there would replace the "
                          "key: name another file")


def sign_document(doc: dict, key_path: str | Path) -> dict:
    """``doc`` with a ``signature`` by the Ed25519 private key at ``key_path`` over
    :func:`canonical_bytes`."""
    key = _read_key(key_path, private=True)
    value = key.sign(canonical_bytes(doc))
    return {**doc, "signature": {"algorithm": SIGNATURE_ALGORITHM, "key": key_id(key.public_key()),
                                 "value": base64.b64encode(value).decode("ascii")}}


def check_signature_field(sig) -> None:
    """The ``signature`` object's structure (whether it verifies is :func:`verify_document`'s)."""
    if set(sig) != {"algorithm", "key", "value"} or not all(isinstance(v, str) for v in sig.values()):
        raise ConfigError("model file: signature: must be an object with the strings algorithm, key and value")
    if sig["algorithm"] != SIGNATURE_ALGORITHM:
        raise ConfigError(f"model file: signature.algorithm: {sig['algorithm'][:40]!r} is not supported "
                          f"(only {SIGNATURE_ALGORITHM!r})")
    if len(sig["key"]) != 16 or any(ch not in "0123456789abcdef" for ch in sig["key"]):
        raise ConfigError("model file: signature.key: must be a key fingerprint of 16 hex digits")
    if len(sig["value"]) > 200:
        raise ConfigError("model file: signature.value: too long")


def verify_document(doc: dict, trusted_keys) -> str:
    """Check ``doc``'s signature against the public key files ``trusted_keys``; return the signing
    key's fingerprint.  ConfigError when the file is unsigned, signed by a key not among them, or
    changed after it was signed."""
    _, _, InvalidSignature, _ = _crypto()
    if isinstance(trusted_keys, (str, bytes, os.PathLike)):  # one key file, not its characters (or bytes' ints)
        trusted_keys = [trusted_keys]
    try:
        trusted_keys = list(trusted_keys)
    except TypeError:
        raise ConfigError(f"trusted_keys: a public key file or a list of them is expected, got "
                          f"{type(trusted_keys).__name__} {trusted_keys!r:.60}") from None
    keys = {}
    for p in trusted_keys:
        k = _read_key(p, private=False)
        keys[key_id(k)] = k
    if not keys:
        raise ConfigError("trusted_keys: no public key given")
    sig = doc.get("signature")
    if sig is None:
        raise ConfigError(f"model file: not signed, but only files signed by {sorted(keys)} are trusted")
    check_signature_field(sig)
    check_plain_json(doc)
    key = keys.get(sig["key"])
    if key is None:
        raise ConfigError(f"model file: signed by key {sig['key']!r}, which is not a trusted key ({sorted(keys)})")
    try:
        raw = base64.b64decode(sig["value"], validate=True)
        if base64.b64encode(raw).decode("ascii") != sig["value"]:  # b64decode ignores the bits padding leaves over:
            raise ValueError("not canonical base64")  # 16 spellings of one signature, each a different file
        key.verify(raw, canonical_bytes(doc))
    except (InvalidSignature, ValueError):
        raise ConfigError(f"model file: the signature by key {sig['key']!r} does not match the document: the file "
                          "was changed after it was signed") from None
    return sig["key"]
