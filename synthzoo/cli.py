"""Command line: ``synthzoo fit | sample | split | eval | tune | bench | bench-worker | demo | list``."""

from __future__ import annotations

import argparse
import codecs
import contextlib
import difflib
import io
import json
import math
import os
import re
import sys
import time
import warnings
from pathlib import Path

from ._threads import single_thread_defaults
from ._version import __version__


#: What the grid's table is: read from the real rows (its scores, references and exact row counts).
GRID_NOTE = ("# the scores read the real rows (n_train/n_test are their exact counts): not covered by DP, "
             "not for publication")


def _floats(s: str, option: str = "--epsilon") -> list[float]:
    from .core.errors import ConfigError

    try:
        values = [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{option} {s!r}: give comma-separated numbers, e.g. 0.2,1,5") from None
    if not values:  # '' or ',' meant no budget at all: bench then ran its reference rows only, without a word
        raise ConfigError(f"{option} {s!r} gives no number; give comma-separated numbers, e.g. 0.2,1,5")
    return values


def _budgets(s: str) -> list[float]:
    """bench's ``--epsilon``: comma-separated positive budgets (it takes no 'none')."""
    import math

    from .core.errors import ConfigError

    values = _floats(s, "--epsilon")
    bad = [v for v in values if not (math.isfinite(v) and v > 0)]
    if bad:
        raise ConfigError(f"--epsilon {s!r}: each privacy budget must be a positive number, got {bad[0]:g}")
    return values


def _positive(convert, what: str, least: str):
    """An argparse type: ``convert(s)`` (float or int) that must be a finite number above 0 (``what`` names
    the kind of value, ``least`` says the smallest allowed, in the messages)."""
    import math

    def parse(s: str):
        try:
            v = convert(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{s!r} is not {what}") from None
        if not (math.isfinite(v) and v > 0):
            raise argparse.ArgumentTypeError(f"must be {least}, got {s}")
        return v

    return parse


_positive_seconds = _positive(float, "a number of seconds", "a positive number of seconds")
_positive_int = _positive(int, "a whole number", "at least 1")


def _names(s: str | None) -> list[str] | None:
    return None if s is None else [x for x in s.split(",") if x]


def _data_names(s: str | None, default: str) -> list[str]:
    """bench's ``--data``: dataset names or a CSV path (default ``default``); '' names none (it meant the
    default without a word)."""
    from .core.errors import ConfigError

    if s is None:
        return _names(default)
    names = [x.strip() for x in s.split(",") if x.strip()]
    if not names:
        raise ConfigError(f"--data {s!r} names no dataset; give e.g. adult,hmeq or a CSV file with --schema")
    return names


def _preprocessors(s: str) -> list[str]:
    """``--preprocess``: comma-separated preprocessors, or ``none`` for none (fit said 'none' was an unknown
    module where bench took it, and took '' or ',,' as none without a word)."""
    from .core.errors import ConfigError

    if s.strip().lower() == "none":
        return []
    names = [x.strip() for x in s.split(",") if x.strip()]
    if not names:
        raise ConfigError(f"--preprocess {s!r} names no preprocessor; give e.g. privtree,rare_merge, or none")
    return names


def _module_params(items: list[str]) -> dict[str, dict]:
    """``--set model.epochs=20`` -> ``{"model": {"epochs": 20}}`` (a value is JSON where it parses)."""
    from .core.errors import ConfigError

    out: dict[str, dict] = {}
    for item in items:
        key, eq, value = item.partition("=")
        role, dot, param = key.partition(".")
        if not (eq and dot and param) or role not in ("model", "select"):
            raise ConfigError(f"--set {item!r}: expected model.PARAM=VALUE or select.PARAM=VALUE, e.g. "
                              "--set model.epochs=20")
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        out.setdefault(role, {})[param] = parsed
    return out


def _epsilon(s: str):
    if s.lower() in ("none", "inf", "nonprivate", "non-private"):
        return None
    try:
        eps = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"epsilon must be a positive number (or 'none' for a non-private run), "
                                         f"got {s!r}") from None
    from .core.privacy.ledger import EPSILON_MAX
    if eps > EPSILON_MAX and eps != float("inf"):  # said here, before a demo table is built or a file read
        raise argparse.ArgumentTypeError(f"{s} is past {EPSILON_MAX:g}, the largest epsilon synthzoo accounts for "
                                         "(a model file may state at most that cost); for a run without privacy "
                                         "say --epsilon none")
    return eps


#: Python-API wording in library errors, said the command line's way.
_CLI_WORDS = (("pass out_of_bounds='clip'", "pass --clip"), ("out_of_bounds='clip'", "--clip"),
              ("pass test=...", "pass --test FILE (held-out real rows; `synthzoo split` makes them)"),
              ("measure them with synthzoo.core.dpschema.dp_schema, which charges the budget",
               "measure them with --dp-schema EPS, which charges the budget"),
              ("privacy='public' needs public=<public or proxy frame> (or a (train, val) pair)",
               "--privacy public needs --public FILE (a public or proxy table)"),
              ("(or None for a non-private run)", "(or 'none' for a non-private run)"),
              ("delta must be a number in (0, ", "--delta must be a number in (0, "),
              ("delta must be > 0 (and below", "--delta must be > 0 (and below"), ("(delta=0)", "(--delta 0)"),
              ("Set SYNTHZOO_DATASETS or pass root= to point", "Set SYNTHZOO_DATASETS or pass --root to point"),
              ("; use select=None", "; pass --select none"),
              ("give a selector, e.g. select='indif'", "give a selector, e.g. --select indif"),
              ("trial_timeout must be", "--timeout must be"),
              ("no tuning settings; give another study_name", "no tuning settings; give another --study-name"),
              ("score_rows must be a positive integer", "--score-rows must be a positive whole number"),
              ("privacy='accounted' takes no trial_timeout", "--privacy accounted takes no --timeout"),
              ("privacy='accounted' needs a finite epsilon; use 'non-private' for epsilon=None",
               "--privacy accounted needs a finite --epsilon; use --privacy non-private for --epsilon none"),
              ("weights must be three numbers (fidelity, mla, query)", "--weights must be three numbers "
               "(fidelity,MLA,query)"),
              ("weights must be three non-negative numbers", "--weights must be three non-negative numbers"),
              ("multi_objective is not available with privacy='accounted'",
               "--multi-objective is not available with --privacy accounted"),
              ("choices: 'preprocess.numeric' takes a non-empty list from", "--numeric takes names from"),
              ("choices: 'select_model' takes a non-empty list from", "--select-model takes names from"),
              ("noise_seed must be None or a non-negative integer", "--noise-seed must be a non-negative integer"),
              ("sampler_seed must be", "--sampler-seed must be"),
              ("number of records; pass n", "number of records; pass -n ROWS"),
              ("count); pass n", "count); pass -n ROWS"),
              ("epsilon=None: this is a NON-PRIVATE run", "--epsilon none: this is a NON-PRIVATE run"),
              ("Use a public schema (Schema.from_json) or measure them through the privacy ledger with "
               "synthzoo.dp_schema(df, kinds, epsilon=..., delta=...).",
               "Give a public schema (--schema FILE) or measure it under DP with --dp-schema EPS."),
              ("Use a public schema (Schema.from_json) or measure it with sz.dp_schema.",
               "Give a public schema (--schema FILE) or measure it under DP with --dp-schema EPS."),
              ("read the file with decimal=',' (the command line's --decimal ',')", "pass --decimal ','"),
              ("read the file with thousands=',' (the command line's --thousands ',')", "pass --thousands ','"),
              ("read the file with decimal=',' and thousands='.' (the command line's --decimal ',' --thousands '.')",
               "pass --decimal ',' --thousands '.'"),
              ("(more than max_categories=", "(more than "),
              ("or let dp_schema choose them", "or measure them under DP with --dp-schema EPS"),
              ("declare it in kinds ({'type': 'numerical', 'integer': True}) or integers=[...] for integral "
               "synthetic values", "give it \"integer\": true in the --schema file for integral synthetic values"),
              ("list the column's public categories in kinds, or declare it {'type': 'numerical', 'integer': True} "
               "to measure its bounds", "list the column's public \"categories\" in the --schema file, or give it "
               "\"type\": \"numerical\", \"integer\": true to measure its bounds"),
              ("list the column's public categories in kinds", "list the column's public \"categories\" in the "
               "--schema file"),
              ("list the public categories in kinds to keep them",
               "list the public \"categories\" in the --schema file to keep them"),
              ("give dp_schema more budget", "give --dp-schema a larger EPS"))


#: Python code in library advice that names the column (so no fixed text to replace), said the command line's way.
_CLI_PATTERNS = ((re.compile(r"describe it as categorical \(categories True and False\), or convert it first, e\.g\. "
                             r"df\[.*\]\.astype\(int\)", re.S),
                  'give it "type": "categorical", "categories": ["False", "True"] in the --schema file, or write it '
                  "as 0 and 1 in the CSV"),
                 (re.compile(r"Declare it in kinds \(e\.g\. \{.*: \{'type': 'datetime', 'resolution': 'day'\}\} "
                             r"for dates\)", re.S),
                  'Give it a "resolution" in the --schema file (e.g. "resolution": "day" for dates)'))


def _cli_words(msg: str) -> str:
    """A library message in the command line's words (its options, not Python arguments)."""
    for api, cli in _CLI_WORDS:
        msg = msg.replace(api, cli)
    for api, cli in _CLI_PATTERNS:
        msg = api.sub(lambda _: cli, msg)
    return msg


#: Each command's input files, by the name argparse gives them, that its --out must not replace.
_INPUTS = {"fit": ("data", "schema", "sign"), "sample": ("model", "trust"),
           "eval": ("real", "fake", "test", "schema", "risk"), "tune": ("data", "val", "public", "schema", "sign")}


def _check_out_is_not_an_input(args) -> None:
    """``fit data.csv --out data.csv`` replaced the private rows with the model file (and ``sample m.szm --out
    m.szm`` the model with its sample): --out naming one of the command's own input files is an error."""
    from .core.errors import ConfigError

    out = Path(args.out)
    if not out.exists():
        return
    for dest in _INPUTS.get(getattr(args, "cmd", None), ()):
        given = getattr(args, dest, None)
        for one in given if isinstance(given, list) else [given]:  # --trust is repeatable
            if isinstance(one, str) and one and Path(one).exists() and os.path.samefile(out, one):  # "" is "."
                role = dest.upper() if dest in ("data", "model", "real", "fake") else f"--{dest}"
                raise ConfigError(f"--out {str(args.out)!r} is the input file given as {role}; writing it would "
                                  "replace that file: name another output file")


def _check_encoding(encoding) -> None:
    from .core.errors import ConfigError

    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise ConfigError(f"--encoding: unknown text encoding {encoding!r} (e.g. utf-8, latin-1, cp1252)") from None


def _count(s: str) -> int:
    """A row count as people write it: 1000000, 1_000_000 or 1e6."""
    try:
        v = float(s.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of rows: {s!r}") from None
    if not v.is_integer() or v < 1:
        raise argparse.ArgumentTypeError(f"a number of rows must be a whole number >= 1, got {s!r}")
    if v > 2 ** 53:  # pipeline.MAX_SAMPLE_ROWS; a float counts whole numbers exactly up to there
        raise argparse.ArgumentTypeError(f"a number of rows must be at most 2^53 (about 9e15), got {s!r}")
    return int(v)


def _seed(s: str) -> int:
    """A seed: a whole number in [0, 2^63), the library's one rule (a negative one ended in numpy's ValueError
    traceback; one of 2^63 or more was refused only by the synthesizer, as 'seed', after the data was read)."""
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a seed is a whole number in [0, 2^63), got {s!r}") from None
    from .core.params import SEED_LIMIT

    if not 0 <= v < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"a seed is a whole number in [0, 2^63), got {s!r}")
    return v


MAX_TRIALS = 100_000  # tuning.tuner.MAX_TRIALS (the command line parses before it imports the tuner)


def _trials(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of trials is a whole number from 1 to {MAX_TRIALS:,}, "
                                         f"got {s!r}") from None
    if not 1 <= v <= MAX_TRIALS:
        raise argparse.ArgumentTypeError(f"a number of trials is a whole number from 1 to {MAX_TRIALS:,}, got {s!r}")
    return v


def _sep(s: str) -> str:
    import argparse

    sep = {"tab": "\t", "\\t": "\t", "semicolon": ";", "comma": ",", "pipe": "|"}.get(s.lower(), s)
    if len(sep) != 1:  # pandas read an empty one as a traceback and a longer one as a regular expression
        raise argparse.ArgumentTypeError(f"a separator is one character (e.g. ';', '|') or 'tab', got {s!r}")
    return sep


def _thousands(s: str) -> str:
    import argparse

    mark = {"space": " ", "apostrophe": "'"}.get(s.lower(), s)
    if len(mark) != 1 or mark.isalnum() or mark in "-+":
        raise argparse.ArgumentTypeError(f"a thousands separator is one character (',', '.', \"'\", or 'space'), "
                                         f"got {s!r}")
    return mark


def _decimal(s: str) -> str:
    import argparse

    if len(s) != 1:
        raise argparse.ArgumentTypeError(f"a decimal mark is one character ('.' or ','), got {s!r}")
    return s


def read_csv(path, *args, **kw):
    """:func:`synthzoo.core.csvfile.read_csv` (one reader for every command and for
    ``synthzoo.metrics.evaluate_files``), imported when a command reads a file."""
    from .core.csvfile import read_csv as read

    return read(path, *args, **kw)


@contextlib.contextmanager
def plain_warnings():
    """Warnings as one line each (``synthzoo: warning: ...``), without the source file and line
    Python prints by default: on the command line the message is for the user, not a developer.
    A warning raised again with the same text (eval's metrics each read the same column) is printed once."""
    old = warnings.showwarning
    seen = set()

    def show(message, category, filename, lineno, file=None, line=None):
        kind = "" if issubclass(category, UserWarning) else f" ({category.__name__})"
        text = f"synthzoo: warning{kind}: {_cli_words(str(message))}"
        if text in seen:
            return
        seen.add(text)
        print(text, file=file or sys.stderr, flush=True)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = old


def _existing(path, role: str) -> str:
    if not Path(path).exists():
        from .core.errors import ConfigError
        raise ConfigError(f"{role}: file {str(path)!r} not found")
    return path


def _schema(path):
    import synthzoo as sz

    if path is None:
        return None
    if not Path(path).exists():
        from .core.errors import ConfigError
        raise ConfigError(f"schema: file {str(path)!r} not found")
    return sz.Schema.from_json(path)


def _check_sign_key(path) -> None:
    """Read ``--sign``'s private key before any private work (a fit, a study's trials): a key that cannot sign,
    found only at the end, would lose a release whose budget is spent."""
    if path is not None:
        from synthzoo.modelfile import _read_key

        _read_key(path, private=True)


def cmd_fit(a) -> int:
    import synthzoo as sz

    module_params = _module_params(a.params)  # a typo is said before any measurement
    pre = None if a.preprocess is None else _preprocessors(a.preprocess)
    _check_sign_key(a.sign)
    over = _fit_overrides(a, pre, module_params)
    schema_ledger = None
    if a.dp_schema is not None:
        partial = None if not a.schema else _read_schema_doc(a.schema)  # read once: what is checked is what is used
        df = read_csv(a.data, a.sep, a.encoding, decimal=a.decimal, thousands=a.thousands,
                      categories=_listed_categories(partial),
                      numerical=_listed_categories(partial, numbers=True))
        with warnings.catch_warnings():  # a misspelt preset, module or parameter is said before the schema's charge
            warnings.simplefilter("ignore")
            _check_model_limits(sz.make(a.synth, epsilon=a.epsilon, delta=a.delta, seed=a.seed,
                                        noise_seed=a.noise_seed, **over))
        schema, schema_ledger = _measure_schema(a, df, partial)
        df = sz.conform(df, schema)  # warns with what it changed (exact counts: for your eyes only)
    else:
        schema = _schema(a.schema)
        df = read_csv(a.data, a.sep, a.encoding, decimal=a.decimal, thousands=a.thousands, schema=schema)
    if schema_ledger is not None:
        over["schema_ledger"] = schema_ledger
    synth = sz.make(a.synth, epsilon=a.epsilon, delta=a.delta, schema=schema, seed=a.seed,
                    out_of_bounds="clip" if a.clip else "raise", noise_seed=a.noise_seed, **over)
    print(f"fitting {synth!r} on {a.data} ({len(df):,} rows x {df.shape[1]} columns)", file=sys.stderr)
    t0 = time.perf_counter()
    _check_model_limits(synth)
    synth.fit(df, progress=True)
    synth.save(a.out, sign_with=a.sign)
    print(f"fitted in {time.perf_counter() - t0:.1f}s; saved to {a.out}", file=sys.stderr)
    print(_cli_words(synth.privacy_report()))
    return 0


def _check_model_limits(synth) -> None:
    """The model file must be loadable: a parameter past its limits is said before any budget is spent."""
    synth.model._check_load_limits(f"model {synth.model.name!r}")
    synth.model._check_sample_work(f"model {synth.model.name!r}")  # what the parameters alone imply: a lower bound


def _fit_overrides(a, pre, module_params) -> dict:
    """``sz.make`` keywords for fit's --preprocess/--select/--model/--set."""
    from synthzoo.core.errors import ConfigError

    over = {}
    if pre is not None:
        over["preprocess"] = pre
    if a.select is not None:
        over["select"] = None if a.select == "none" else a.select
    if a.model is not None:
        over["model"] = a.model
    for role, params in module_params.items():
        if role in over and over[role] is None:
            raise ConfigError(f"--set {role}.*: --{role} none has no parameters")
        over[role] = {**({"name": over[role]} if isinstance(over.get(role), str) else {}), **params}
    return over


def _read_schema_doc(path):
    from synthzoo.core.schema import read_json_file

    return read_json_file(path, "schema")


def _listed_categories(doc, numbers: bool = False) -> dict:
    """Column -> categories a partial --schema document lists (for reading the CSV; the document is checked
    later); with ``numbers``, the columns it types as numerical or datetime instead."""
    cols = doc.get("columns") if isinstance(doc, dict) else None
    if not isinstance(cols, dict):
        return {}
    if numbers:
        kinds = {k: v.get("type", v.get("kind")) if isinstance(v, dict) else v for k, v in cols.items()}
        return {k: t for k, t in kinds.items() if t in ("numerical", "datetime")}
    return {k: v["categories"] for k, v in cols.items() if isinstance(v, dict) and "categories" in v}


def _measure_schema(a, df, doc):
    """``fit --dp-schema EPS``: measure the schema under DP with EPS of the --epsilon budget (and a tenth of
    --delta); a --schema file may then be partial (types, integer, resolution, known categories...), and
    what it lacks is measured (``doc``: that file's document, or None).  Prints what was measured and why."""
    import synthzoo as sz
    from synthzoo.core.dpschema import dp_schema_report
    from synthzoo.core.errors import ConfigError

    if a.epsilon is None:
        raise ConfigError("--dp-schema needs a private run (--epsilon a number): a non-private run without "
                          "--schema reads the schema from the data itself")
    if not 0 < a.dp_schema < a.epsilon:
        raise ConfigError(f"--dp-schema {a.dp_schema:g} must be a part of --epsilon {a.epsilon:g}")
    kinds, meta = {}, {}
    if doc is not None:
        if not isinstance(doc, dict) or not isinstance(doc.get("columns"), dict):
            raise ConfigError(f"{a.schema}: a schema file needs a 'columns' object")
        kinds = doc["columns"]
        meta = {k: v for k, v in doc.items() if k != "columns"}
        unknown = [c for c in kinds if c not in df.columns]
        if unknown:
            raise ConfigError(f"{a.schema}: describes column(s) {unknown} that {a.data} lacks")
    untyped = [c for c in df.columns if not (isinstance(kinds.get(c), str)
                                             or (isinstance(kinds.get(c), dict) and "type" in kinds[c]))]
    if untyped:  # said in the file's terms; dp_schema would refuse them too, before any charge
        from synthzoo.core.dpschema import kind_hint

        # the guesses for up to 40 columns, so that a usual table's whole file can be copied (hmeq's 13 columns
        # were cut to 8, and the file they made was refused for the other 5)
        hints = {c: kind_hint(df[c]) for c in untyped[:40]}
        hint = json.dumps({"columns": {c: h[0] for c, h in hints.items()}})
        notes = "".join(f"; column {c!r}: {h[1]}" for c, h in hints.items() if h[1])
        which = (f"all {len(untyped)}" if len(untyped) <= 40 else f"the first 40 of {len(untyped)}") \
            if len(untyped) > 1 else "it"
        raise ConfigError(f"--dp-schema: no \"type\" for column(s) {untyped[:8]}"
                          f"{f' ... ({len(untyped)} columns)' if len(untyped) > 8 else ''}{notes} in "
                          f"{a.schema or 'a --schema file'}: a private run reads no type from the CSV, whose "
                          "reader decides types from the values (one record of text makes a numeric column text), "
                          f"so the type itself would leak. Give each a type in a --schema file; what the reader "
                          f"guessed, for {which}, to check against your data dictionary: {hint}")
    # a CSV holds dates as text, whatever its values: they come back as text (in the column's format)
    kinds = {c: ({**k, "dtype": "string"} if isinstance(k, dict) and k.get("type") == "datetime" and "dtype" not in k
                 else k) for c, k in kinds.items()}
    schema, ledger = sz.dp_schema(df, kinds, epsilon=a.dp_schema, delta=a.delta / 10, noise_seed=a.noise_seed)
    schema.meta = {**meta, **schema.meta}
    print(_cli_words(dp_schema_report(schema)), file=sys.stderr)  # the report's advice names kinds too
    return schema, ledger


def cmd_sample(a) -> int:
    import synthzoo as sz

    synth = sz.Synthesizer.load(a.model, trusted_keys=a.trust or None)
    if a.precision is not None:
        _set_sample_precision(synth, a.precision)
    t0 = time.perf_counter()
    # n None: the model's DP estimate of the training rows; written chunk by chunk, so memory does not
    # grow with n (the rows are those synth.sample(n, seed) returns, whatever the chunk size)
    to_stdout = a.out == "-"  # the rows on standard output (a pipe), everything else on standard error
    out = a.out
    if to_stdout:
        out = io.TextIOWrapper(sys.stdout.buffer, encoding=a.encoding or "utf-8", newline="", write_through=True) \
            if a.encoding and hasattr(sys.stdout, "buffer") else sys.stdout
    try:
        rows = synth.sample_to_csv(out, a.n, chunk=a.chunk, seed=a.seed, progress=None, sep=a.sep,
                                   encoding=a.encoding, decimal=a.decimal)
    except BrokenPipeError:
        if not to_stdout:
            raise
        # the reader took what it wanted (`| head`): stop, as other tools do, without a traceback, and point
        # standard output at nothing so that Python's flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print("synthzoo: standard output was closed by its reader; sampling stopped", file=sys.stderr)
        return 0
    if to_stdout and out is not sys.stdout:
        out.detach()  # leave sys.stdout's buffer open
    print(f"sampled {rows:,} row{'s' if rows != 1 else ''} in {time.perf_counter() - t0:.1f}s -> "
          f"{'standard output' if to_stdout else a.out}", file=sys.stderr)
    print(_cli_words(synth.privacy_report()), file=sys.stderr if to_stdout else sys.stdout)
    return 0


def _set_sample_precision(synth, precision: str) -> None:
    """``sample --precision``: the model's ``sample_precision``, for the models whose sampling is a
    network's forward pass that can run in bfloat16."""
    from synthzoo.core.errors import ConfigError

    model = synth.model
    if "sample_precision" not in model.get_params():
        what = f"{synth.name!r} (model {model.name!r})" if synth.name and synth.name != model.name else \
            f"model {model.name!r}"
        raise ConfigError(f"--precision {precision}: {what} has no choice of sampling precision (only "
                          "the models whose sampling is a few network passes do: ctgan, dp-ctgan, pate-gan, "
                          "tablediffusion)")
    model.sample_precision = precision
    model.check_params()


def cmd_keygen(a) -> int:
    from synthzoo.modelfile import generate_key, key_id, _read_key

    key, pub = generate_key(a.key)
    print(f"wrote the private key to {key} (keep it secret: it signs releases as you) and the public key to "
          f"{pub} (hand it to whoever loads your files: synthzoo sample MODEL --trust {pub}); key "
          f"{key_id(_read_key(pub, private=False))}", file=sys.stderr)
    return 0


def cmd_split(a) -> int:
    from synthzoo.datasets import train_test_split
    from synthzoo.metrics._common import count

    from .core.errors import ConfigError

    # rows are copied, not read: as typed values, "NA" (North America) and "None" were written back empty, "3" as
    # "3.0" in a column with a gap, "4.000" as "4.0"
    df = read_csv(a.data, a.sep, a.encoding, text=True)
    test_size = a.test_size
    if not test_size > 0 or (test_size >= 1 and not float(test_size).is_integer()):
        raise ConfigError(f"--test-size is a fraction in (0, 1) or a whole number of rows, got {test_size:g}")
    if len(df) < 2:  # said here in the command line's words: train_test_split's name a Python argument
        raise ConfigError(f"{a.data!r} has {count(len(df), 'row')}; a split needs at least 2")
    if test_size >= 1:
        test_size = int(test_size)
        if test_size > len(df) - 1:
            raise ConfigError(f"--test-size {test_size:,} rows: {a.data!r} has {len(df):,} rows, so hold out 1 to "
                              f"{len(df) - 1:,} of them (or a fraction in (0, 1))")
    if a.stratify is not None and a.stratify not in df.columns:
        close = difflib.get_close_matches(a.stratify, [str(c) for c in df.columns], n=1)
        raise ConfigError(f"--stratify {a.stratify!r}: {a.data!r} has no such column"
                          + (f"; did you mean {close[0]!r}?" if close else f"; its columns are {list(df.columns)}"))
    train, test = train_test_split(df, test_size=test_size, seed=a.seed, stratify=a.stratify)
    stem = Path(a.data)
    packed = stem.suffix if stem.suffix.lower() in (".gz", ".bz2", ".xz", ".zip", ".zst") else ""
    if packed:  # data.csv.gz -> data.train.csv.gz, compressed as its input (to_csv compresses by the name)
        stem = stem.with_suffix("")
    out_train = Path(a.train) if a.train else stem.with_name(stem.stem + ".train.csv" + packed)
    out_test = Path(a.test) if a.test else stem.with_name(stem.stem + ".test.csv" + packed)
    if out_train.resolve() == out_test.resolve():  # the held-out rows were written over the training rows
        raise ConfigError(f"--train and --test both name {str(out_test)!r}; the test rows would replace the "
                          "training rows: name two files")
    for path, option in ((out_train, "--train"), (out_test, "--test")):
        if path.resolve() == Path(a.data).resolve():  # --force too: it overwrites outputs, not the input
            raise ConfigError(f"{option} {str(path)!r} is the input file DATA; writing it would replace the rows "
                              "being split: name another file")
    for path in (out_train, out_test):
        if path.exists() and not a.force:
            raise ConfigError(f"{str(path)!r} exists; pass --force to overwrite it, or name other files with "
                              "--train / --test")
    kw = {"sep": a.sep, "index": False, "encoding": a.encoding}
    train.to_csv(out_train, **kw)
    test.to_csv(out_test, **kw)
    print(f"wrote {out_train} ({count(len(train), 'row')}: fit on these) and {out_test} "
          f"({count(len(test), 'row')}: hold them out, for `synthzoo eval ... --test {out_test}`); seed {a.seed}",
          file=sys.stderr)
    return 0


def cmd_demo(a) -> int:
    import synthzoo as sz
    from synthzoo.metrics import independent_sample
    from synthzoo.datasets import make_demo, train_test_split
    from synthzoo.metrics import query_error_3way, tvd_2way
    from synthzoo.core.errors import ConfigError

    if a.n < 2:  # train_test_split's own message names a Python function
        raise ConfigError(f"demo: a table of --n {a.n:,} row is too small to split into training and test rows; "
                          "give --n 1000 or more")
    df, schema = make_demo(n=a.n, seed=a.seed)
    train, test = train_test_split(df, test_size=0.2, seed=a.seed)
    print(f"1. built-in demo table: {len(df):,} rows, columns {list(df.columns)}")
    print(f"   public schema: {sum(c.kind == 'numerical' for c in schema)} numerical, "
          f"{sum(c.kind == 'categorical' for c in schema)} categorical, {sum(c.kind == 'datetime' for c in schema)} "
          f"datetime; {len(train):,} training rows")
    synth = sz.make(a.synth, epsilon=a.epsilon, delta=a.delta, schema=schema, seed=a.seed)
    print(f"2. fitting {synth!r}")
    t0 = time.perf_counter()
    synth.fit(train, progress=True)
    t1 = time.perf_counter()
    try:
        synth._sample_size(None)
    except ConfigError as e:  # the library's advice, "pass n", is no option of demo's
        raise ConfigError(f"demo: a table of --n {a.n:,} rows is too small to sample from: {str(e).split(';')[0]}; "
                          "give --n 1000 or more") from None
    fake = synth.sample()  # as many rows as the DP estimate of the training rows
    t2 = time.perf_counter()
    print(f"3. fitted in {t1 - t0:.1f}s, sampled {len(fake):,} rows in {t2 - t1:.1f}s; first rows:")
    print(fake.head(5).to_string(max_colwidth=14))
    print("4. " + synth.privacy_report().replace("\n", "\n   "))
    ind = independent_sample(train, seed=a.seed)
    print("5. quality against the training rows (lower is better):")
    print(f"   {'':<22}{'2-way TVD':>10}{'3-way query err':>17}")
    for label, f in ((a.synth, fake), ("independent columns", ind)):
        print(f"   {label:<22}{tvd_2way(train, f, schema):>10.4f}{query_error_3way(train, f, schema):>17.4f}")
    if a.out:
        fake.to_csv(a.out, index=False)
        print(f"6. wrote {a.out}")
    return 0


def cmd_bench(a) -> int:
    from synthzoo import bench

    grid_mode = (a.select is not None or a.model is not None or a.schema is not None or a.cell_timeout is not None
                 or a.preprocess is not None or a.storage is not None
                 or (a.data is not None and os.path.isfile(a.data)))
    if grid_mode:
        return _bench_grid(a, bench)
    if a.no_ml or a.in_process or a.plot or a.resume or a.force:
        print("synthzoo: error: --no-ml, --in-process, --plot, --resume and --force belong to the grid mode (give "
              "--select/--model)", file=sys.stderr)
        return 2
    res = bench.run(datasets=_data_names(a.data, "adult,hmeq,housing"), epsilons=_budgets(a.epsilon), synth=a.synth,
                    seeds=range(a.seeds), delta=a.delta, root=a.root)
    print()
    cols = ["dataset", "method", "epsilon", "seed", "tvd_2way", "query_3way", "fit_s", "sample_s"]
    print(res[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"# threads: {res.attrs['threads']}; peak RSS {res.attrs['peak_rss_mb']:.0f} MB")
    if a.out:
        res.to_csv(a.out, index=False)
        print(f"# wrote {a.out}")
    return 0


def _bench_grid(a, bench) -> int:
    """`synthzoo bench --select ... --model ...`: every selector x model cell (the preset --synth
    gives the preprocessing, the budget split and whichever of selector/model is not given)."""
    from synthzoo.presets import preset_config

    base = preset_config(a.synth)
    sel = _names(a.select) if a.select is not None else [base["select"] or "none"]
    mod = _names(a.model) if a.model is not None else [base["model"] if isinstance(base["model"], str)
                                                       else base["model"]["name"]]
    pre = None
    if a.preprocess is not None:
        pre = _preprocessors(a.preprocess)
    data = _data_names(a.data, "adult")
    data = data[0] if len(data) == 1 and (os.path.isfile(data[0]) or a.schema) else data
    out = a.out or "bench_grid.csv"
    plot = a.plot or os.path.splitext(out)[0] + ".png"
    if a.storage:  # the grid as a shared study: this process starts --workers, others join with bench-worker
        if a.in_process or a.resume:
            flag = "--in-process" if a.in_process else "--resume"
            why = ("its workers run each cell in a process of its own" if a.in_process else
                   "the study keeps every finished cell: the same command joins it and runs the rest")
            print(f"synthzoo: error: {flag} does not apply to a shared grid (--storage): {why}", file=sys.stderr)
            return 2
        return _bench_shared(a, sel, mod, pre, data, out, plot)
    epsilons = _budgets(a.epsilon)
    if not a.resume and not a.force:
        _check_not_an_earlier_grid(out)
    res = bench.grid(data, selectors=sel, models=mod, epsilons=epsilons, seeds=range(a.seeds),
                     delta=a.delta, schema=a.schema, base=a.synth, preprocess=pre, cell_timeout=a.cell_timeout,
                     isolate=not a.in_process, ml=not a.no_ml, root=a.root, out=out, plot=plot,
                     log=lambda s: print(s, flush=True), resume=a.resume)
    print(GRID_NOTE)
    print(_grid_summary(res))
    return 0


def _check_not_an_earlier_grid(out: str) -> None:
    """The local grid starts by emptying --out: an earlier grid's rows there (bench_grid.csv by default: hours
    of cells) were lost to the next grid run without a word."""
    import pandas as pd

    from .core.errors import ConfigError

    from .metrics._common import count as plural

    if not os.path.isfile(out):
        return
    try:
        n = len(pd.read_csv(out))
    except Exception:  # noqa: BLE001 - not a table (or empty): nothing of a grid's to keep
        n = 0
    if n:
        raise ConfigError(f"--out {out!r} holds {plural(n, 'row')} of an earlier grid run; pass --resume to keep "
                          "them and run only the missing cells (same grid), --force to replace them, or name another "
                          "--out")


def _grid_summary(res) -> str:
    """The grid's last line, local or shared: how many cells ran, were skipped, failed or have no result yet."""
    cells = res[res["kind"] == "cell"]
    count = {s: int((cells["status"] == s).sum()) for s in ("ok", "skipped", "pending")}
    failed = len(cells) - sum(count.values())
    line = (f"# {count['ok']} of {len(cells)} cells ran; {count['skipped']} skipped, {failed} failed "
            "(error/timeout/crashed)")
    if count["pending"]:
        line += f", {count['pending']} without a result yet (bench-worker runs them)"
    from .metrics._common import count as plural

    refs = res[(res["kind"] == "reference") & (res["status"] != "ok")]
    if len(refs):
        line += f"; {plural(len(refs), 'reference row')} without a score"
    return line


def _busy_seconds(intervals) -> float:
    """The seconds covered by any of the ``(start, end)`` intervals: a step's wall time while some unit of it
    ran.  From its first unit's start it counted the other steps' units its later ones queued behind (hmeq's ML
    metrics read "268.3s wall; 12.4s summed over its 4 units")."""
    total, reach = 0.0, -math.inf
    for a, b in sorted(intervals):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def _eval_steps(names: list[str]) -> list[list[str]]:
    """Metrics in the steps ``eval`` reports progress on: the ML metrics together (one set of
    models serves them all) and the privacy attacks together (they share their distances); every
    other metric alone."""
    from synthzoo.metrics.evaluate import METRICS

    ml = [m for m in names if m.startswith("ml_")]
    attacks = [m for m in names if METRICS[m][0] == "privacy" and m != "mds"]
    steps, seen = [], set()
    for m in names:
        group = ml if m in ml else attacks if m in attacks else [m]
        if group[0] not in seen:
            steps.append(group)
            seen.update(group)
    return steps


def _bench_shared(a, sel, mod, pre, data, out, plot) -> int:
    """`synthzoo bench ... --storage URL [--study NAME] [--workers N]`: the grid's cells in a shared Optuna
    study (synthzoo.bench.distributed); N local workers, and any `synthzoo bench-worker` elsewhere."""
    import subprocess

    from synthzoo.bench import distributed, plot_grid

    n = distributed.create_grid_study(a.storage, a.study, data if isinstance(data, list) else [data], sel, mod,
                                      _budgets(a.epsilon), range(a.seeds), delta=a.delta, schema=a.schema,
                                      base=a.synth, preprocess=pre, cell_timeout=a.cell_timeout, ml=not a.no_ml,
                                      root=a.root)
    print(f"# grid study {a.study!r}: {n} cells; join from any machine with: synthzoo bench-worker --storage "
          f"URL --study {a.study}", flush=True)
    procs = [subprocess.Popen([sys.executable, "-m", "synthzoo.cli", "bench-worker", "--storage", a.storage,
                               "--study", a.study]) for _ in range(a.workers)]
    rc = max([p.wait() for p in procs], default=0)
    res = distributed.grid_result(a.storage, a.study)
    res.to_csv(out, index=False)
    print(f"# wrote {out}")
    if plot_grid(res, plot):
        print(f"# wrote {plot}")
    print(GRID_NOTE)
    print(_grid_summary(res))
    return rc


def cmd_bench_worker(a) -> int:
    """`synthzoo bench-worker --storage URL --study NAME`: run cells of a shared grid until it is done."""
    from synthzoo.bench import distributed

    ran = distributed.grid_worker(a.storage, a.study, heartbeat_interval=a.heartbeat,
                                  log=lambda s: print(s, flush=True))
    print(f"# this worker ran {ran} cell(s)", flush=True)
    return 0


def cmd_eval(a) -> int:
    """``synthzoo eval REAL FAKE [--test T] [--schema S] [--out report.html] [--metrics a,b]``: writes the
    report and prints the metric table, step by step with progress."""
    import pandas as pd

    from synthzoo.core.progress import progress_bar
    from synthzoo.core.schema import Schema
    from synthzoo.metrics import evaluate, write_html_report
    from synthzoo.metrics.evaluate import _resolve_metrics, _task_of
    from synthzoo.metrics.html import read_risk_csv, timing_notes

    schema = _schema(a.schema)
    csv = {"sep": a.sep, "encoding": a.encoding, "decimal": a.decimal, "thousands": a.thousands, "schema": schema}
    real = read_csv(a.real, role="real", **csv)
    fake = read_csv(a.fake, role="synthetic", **csv)
    test = None if a.test is None else read_csv(a.test, role="test", **csv)
    if schema is None:
        schema = Schema.infer(real)  # warns: fine for evaluation, not a differentially private schema
    schema = _with_target(schema, a.target, a.task)
    metrics = None if a.metrics is None else [m.strip() for m in a.metrics.split(",") if m.strip()]  # "" names none
    names = _resolve_metrics(metrics, test is not None, False, _task_of(schema), field="--metrics")
    left_out = []
    if metrics is None:  # say what the default run leaves out, and why, before the minutes it takes
        from synthzoo.metrics.evaluate import default_left_out

        left_out = default_left_out(names, test is not None, _task_of(schema), cli=True)
        for msg in left_out:
            print("eval: " + msg, file=sys.stderr)
    steps = _eval_steps(names)
    step_of = {m: i for i, step in enumerate(steps) for m in step}
    live = sys.stderr.isatty()
    bar = progress_bar(None, total=1, desc="eval", enabled=live) if live else None  # tqdm, updated by hand
    # per step: its units' seconds summed, how many, and when each ran: the units of a step run side by side
    # (tables, parts), so the sum is no time the user waited (it printed 256.9 s inside a 224 s run)
    seconds, units, ran = [0.0] * len(steps), [0] * len(steps), [[] for _ in steps]
    finished, reported = set(), set()
    start = last = time.perf_counter()

    def label(step):
        return "ML metrics" if step[0].startswith("ml_") else "privacy attacks" if len(step) > 1 else step[0]

    def progress(unit, table, dt, complete, done, total):
        # one evaluate call runs every metric on the release and its baselines side by side, the
        # longest first; a step is reported when its metrics are done on every table, with the wall
        # time while any of its units ran (and its units' seconds summed, where it has several), and a
        # count of the units done at least every 30 s
        nonlocal last
        now = time.perf_counter()
        i = step_of[unit[0]]
        seconds[i] += dt
        units[i] += 1
        ran[i].append((now - dt, now))
        finished.update(complete)
        lines = []
        for i, step in enumerate(steps):
            if i not in reported and finished.issuperset(step):
                reported.add(i)
                summed = (f"; {seconds[i]:.1f}s summed over its {units[i]} units, which ran side by side"
                          if units[i] > 1 else "")
                lines.append(f"{label(step)} ({_busy_seconds(ran[i]):.1f}s wall{summed})")
        if not lines and now - last >= 30 and done < total:
            lines.append(f"{done} of {total} units done ({now - start:.0f}s)")
        if not live:
            for line in lines:
                print(f"  [synthzoo] eval: {line}", file=sys.stderr, flush=True)
            last = now if lines else last
        if live:
            bar.total, bar.n = total, done
            bar.set_description(f"eval: {label(steps[step_of[unit[0]]])} ({table})")

    table, details = evaluate(real, fake, test=test, schema=schema, metrics=names, seed=a.seed, return_details=True,
                              progress=progress)
    if bar is not None:
        bar.close()
    timings = details.pop("timings")
    details = {k: v for k, v in details.items() if v is not None}  # ROC curves, ML detail, MDS
    details["caveats"] = left_out + details.get("caveats", [])  # the page says it too, not only the terminal
    notes = timing_notes(timings, wall=time.perf_counter() - start)
    if test is None:
        notes["privacy / ML"] = "no --test rows given: ML and privacy metrics need real held-out rows and were skipped"
    risk = None if a.risk is None else read_risk_csv(_existing(a.risk, "risk"))
    write_html_report(a.out, table, real, fake, schema, notes=notes, details={**details, "timings": timings},
                      risk=risk)
    with pd.option_context("display.width", 160):
        print(table.drop(columns="description").to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(f"# wrote {a.out} (computed from the real rows, not covered by DP: not for publication)")
    return 0


def _with_target(schema, target, task):
    """``schema`` with ``--target`` / ``--task`` as its "target" and "task": without ``--schema`` there was no
    file to add them to, so the ML metrics could not be scored at all."""
    from synthzoo.core.errors import ConfigError
    from synthzoo.core.schema import TASKS, Schema, task_kind, task_mismatch

    if target is None and task is None:
        return schema
    if target is None and schema.meta.get("target") is None:
        raise ConfigError("--task: the schema names no \"target\" to predict; give --target COLUMN too")
    if target is not None and target not in schema:
        near = difflib.get_close_matches(target, schema.names, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ConfigError(f"--target: {target[:80]!r} is not a column of the table{hint}; columns are "
                          f"{schema.names[:20]}")
    if task is not None and task_kind(task) is None:
        raise ConfigError(f"--task: unknown task {task[:80]!r}; choose from {sorted(TASKS)}")
    col = schema[target or schema.meta["target"]]
    why = task_mismatch(task_kind(task), col) if task is not None else None
    if why:
        raise ConfigError(f"--task {task!r}: the target {col.name!r} is {col.kind}; {why}")
    d = schema.to_dict()
    if target is not None and target != d.get("target"):
        d["target"] = target
        d.pop("task", None)  # the schema's task was its own target's
    if task is not None:
        d["task"] = task
    return Schema.from_dict(d)


def cmd_list(a) -> int:
    import synthzoo as sz

    for role, names in sz.available().items():
        print(f"{role:<11} {', '.join(names)}")
    presets = sz.available_presets()
    width = max(map(len, presets), default=0)  # the papers in one column ("tablediffusion" pushed its own out)
    for name, paper in presets.items():
        print(f"preset      {name:<{width}} {paper}")
    return 0


def cmd_tune(a) -> int:
    import warnings

    import pandas as pd

    from synthzoo.datasets import train_test_split
    from tuning import tune
    from tuning.storage import DEFAULT_STORAGE, _redact

    _check_tune_options(a)
    if a.sign is not None and not a.out:
        from synthzoo.core.errors import ConfigError

        raise ConfigError("--sign signs the model file that --out writes; pass --out tune.json")
    _check_sign_key(a.sign)
    schema = _schema(a.schema)
    csv = {"sep": a.sep, "encoding": a.encoding, "decimal": a.decimal, "thousands": a.thousands, "schema": schema}
    train = read_csv(a.data, **csv)
    if a.val:
        val = read_csv(a.val, role="val", **csv)
    elif a.privacy == "accounted":
        # no seeded split (one added record would move hundreds of others): every run splits the records
        # itself, each with an independent secret draw, and nothing about the split is printed or stored
        val = None
        print(f"no --val: each run scores on about 20% of the records of {a.data}, chosen record by record "
              "with secret randomness", file=sys.stderr)
    elif a.privacy != "public":
        train, val = train_test_split(train, test_size=0.2, seed=a.seed)
        print(f"no --val: holding out 20% of {a.data} ({len(val):,} rows) for validation", file=sys.stderr)
    else:
        val = None
    public = read_csv(a.public, role="public", **csv) if a.public else None
    choices = {}
    if a.numeric:
        choices["preprocess.numeric"] = _names(a.numeric)
    if a.select_model:
        choices["select_model"] = _names(a.select_model)
    storage = a.storage or DEFAULT_STORAGE
    where = _redact(storage) if "://" in storage else f"{Path(storage).resolve()} (SQLite)"
    if storage.startswith("sqlite:///"):
        where = f"{Path(storage[len('sqlite:///'):]).resolve()} (SQLite)"
    print(f"study database: {where}; an interrupted study resumes from it with the same --storage and "
          f"--study-name{'' if a.storage else ' (default storage)'}", file=sys.stderr)
    if a.models_dir:
        print(f"every run's synthesizer also goes to {Path(a.models_dir).resolve()}/", file=sys.stderr)
    with warnings.catch_warnings(), _tune_options_named():
        warnings.simplefilter("ignore", UserWarning)  # the privacy statement is printed in the summary below
        res = tune(a.synth, train, val, epsilon=a.epsilon, delta=a.delta, schema=schema, n_trials=a.trials,
                   privacy=a.privacy, public=public, storage=a.storage,
                   study_name=a.study_name, weights=_floats(a.weights, "--weights") if a.weights else None,
                   multi_objective=a.multi_objective, choose_modules=not a.fixed_modules, choices=choices or None,
                   seed=a.seed, sampler_seed=a.sampler_seed, trial_timeout=a.timeout, models_dir=a.models_dir,
                   isolate=not a.in_process, verbose=True, noise_seed=a.noise_seed,
                   # only when given (accounted mode): otherwise the tuner's own defaults
                   **{k: v for k, v in (("stopping", a.stopping), ("score_rows", a.score_rows)) if v is not None})
    print(res.summary())
    print(f"study {res.metadata.get('study_name')!r} is in {where}", file=sys.stderr)
    if a.out:
        res.save(a.out, sign_with=a.sign)
        model = Path(a.out).with_suffix(".model.json")
        print(f"wrote the tuning metadata to {a.out}" + (f" and the tuned synthesizer to {model} (synthzoo sample "
                                                         f"{model} -n N --out fake.csv)"
                                                         if res.synthesizer is not None else
                                                         "; no synthesizer was released"), file=sys.stderr)
    elif res.synthesizer is not None:
        print("the tuned synthesizer was not saved: pass --out tune.json to write it to tune.model.json",
              file=sys.stderr)
    return 0


def _check_tune_options(a) -> None:
    """Options of another privacy mode than --privacy's were read and then ignored without a word (--stopping
    poisson in a non-private study, --public outside public mode...): each is an error naming its mode."""
    from .core.errors import ConfigError

    only = {"--stopping": ("accounted", a.stopping), "--models-dir": ("accounted", a.models_dir),
            "--score-rows": ("accounted", a.score_rows), "--public": ("public", a.public)}
    for option, (mode, given) in only.items():
        if given is not None and a.privacy != mode:
            raise ConfigError(f"{option} applies to --privacy {mode} only; this is --privacy {a.privacy}, which "
                              "would ignore it")
    if a.privacy == "accounted" and a.sampler_seed is not None:
        raise ConfigError("--sampler-seed is not used with --privacy accounted: its random search is seeded with "
                          "secret randomness (--noise-seed replays it, for tests only)")
    if a.privacy == "public" and a.val is not None:
        raise ConfigError("--val is not read with --privacy public: trials fit and score on the --public table, "
                          "which is split 80/20; the private DATA is read once, by the final fit")


#: tune's settings as its options: what a study resumed with other settings names.
_TUNE_OPTIONS = {"preset": "--synth", "privacy": "--privacy", "epsilon": "--epsilon", "delta": "--delta",
                 "weights": "--weights", "score_rows": "--score-rows", "choose_modules": "--fixed-modules",
                 "choices": "--numeric/--select-model", "space": "search space (set in Python)",
                 "multi_objective": "--multi-objective", "n_trials": "--trials", "stopping": "--stopping",
                 "schema": "--schema (digest)", "validation": "--val ('given', or each run's split share)"}


def _tune_difference(key: str, before, now) -> str:
    """One setting a study started with, and the one given now, as the command line gives them."""
    flag = {"choose_modules": ("--fixed-modules", False), "multi_objective": ("--multi-objective", True)}
    if key in flag:
        option, on = flag[key]
        def said(value) -> str:
            return "with" if bool(value) == on else "without"

        return f"{said(before)} {option} (now {said(now)})"

    def shown(value) -> str:
        if key == "weights" and isinstance(value, list):
            return ",".join(f"{float(w):g}" for w in value)
        if key == "choices":
            names = {"preprocess.numeric": "--numeric", "select_model": "--select-model"}
            if not value:
                return "no --numeric or --select-model"
            return " ".join(f"{names.get(k, k)} {','.join(map(str, v))}" for k, v in value.items())
        if key == "epsilon" and value is None:
            return "none"
        return f"{value:g}" if isinstance(value, float) else str(value)

    option = _TUNE_OPTIONS.get(key, key)
    return f"{shown(before)} (now {shown(now)})" if key == "choices" else f"{option} {shown(before)} (now {shown(now)})"


@contextlib.contextmanager
def _tune_options_named():
    """A study resumed with other settings, said in tune's option words (the tuner names its arguments)."""
    from tuning.result import StudySettingsError

    from .core.errors import ConfigError

    try:
        yield
    except StudySettingsError as e:
        was = "; ".join(_tune_difference(k, before, now) for k, (before, now) in e.differences.items())
        raise ConfigError(f"study {e.study_name!r} was started with other settings: {was}. A study resumes only "
                          "with the options it started with (its trials' scores are compared with each other): "
                          "give those, or another --study-name") from None


def _metric_help() -> str:
    """``--metrics`` help, from the names synthzoo.metrics defines (so it never goes stale)."""
    from synthzoo.metrics.evaluate import GROUPS, METRICS, PRESETS

    return ("comma-separated metric names, groups or sets (default: every metric of the groups that applies: ML "
            "metrics need the schema's target and --test, privacy metrics --test). Sets (as SynthEval's): "
            + "; ".join(f"{k} ({len(v)} metrics)" for k, v in PRESETS.items()) + ". Groups: "
            + "; ".join(f"{g} = {', '.join(m)}" for g, m in GROUPS.items() if g not in PRESETS)
            + "; the default run's privacy metrics are " + ", ".join(GROUPS["privacy"])
            + " ('privacy' names the set above, which holds them and more)"
            + ". Metrics: " + ", ".join(m for m in METRICS if m != "mds")).replace("%", "%%")


def _csv_options(p, what: str = "input CSV files", reads: bool = True, numbers: bool = True) -> None:
    p.add_argument("--sep", type=_sep, default=",",
                   help=f"field separator of the {what} (default ','; e.g. ';', 'tab')")
    p.add_argument("--encoding", help=f"text encoding of the {what} (default utf-8; e.g. latin-1, cp1252)")
    if not numbers:  # split copies every field as the file writes it
        return
    p.add_argument("--decimal", type=_decimal, default=".",
                   help=f"decimal mark of the numbers in the {what} (default '.'; ',' for 3,14)")
    if reads:  # pandas writes numbers without separators: an option for input only
        p.add_argument("--thousands", type=_thousands,
                       help=f"thousands separator of the numbers in the {what} (default none; ',' for 1,234.5, "
                            "'.' with --decimal ',' for 1.234,5); numbers are written without it")


#: What argparse should read as a value, not an option, though it starts with '-': a negative number or a
#: comma-separated list that begins with one (no option of synthzoo looks like that).
_NEGATIVE_VALUE = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?(,.*)?$")


def build_parser() -> argparse.ArgumentParser:
    from .models.torch_features import SAMPLE_PRECISIONS

    p = argparse.ArgumentParser(prog="synthzoo", description="Tabular data synthesis with differential privacy. "
                                "`synthzoo COMMAND --help` explains each command.")
    p.add_argument("--version", action="version", version=f"synthzoo {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    f = sub.add_parser("fit", help="fit a synthesizer on a CSV and save it",
                       description="Fit a synthesizer on a CSV file and save it as a model file (JSON).")
    f.add_argument("data", help="the private training CSV")
    f.add_argument("--schema", help="public schema JSON (without it, one is inferred and NOT covered by DP)")
    f.add_argument("--synth", "--preset", dest="synth", default="privsyn",
                   help="preset name (default privsyn; see `synthzoo list`)")
    f.add_argument("--preprocess", help="override: comma-separated preprocessors, e.g. privtree,rare_merge, "
                                        "or none")
    f.add_argument("--select", help="override: selector, e.g. mst ('none' for record models)")
    f.add_argument("--model", help="override: synthesis model, e.g. pgm")
    f.add_argument("--set", dest="params", action="append", default=[], metavar="MODULE.PARAM=VALUE",
                   help="a module's parameter, e.g. --set model.epochs=20 --set select.rounds=30 (repeatable; "
                        "VALUE is read as JSON, else as text; `synthzoo list` names the modules)")
    f.add_argument("--epsilon", type=_epsilon, default=1.0, help="privacy budget (default 1; 'none' for a "
                                                                 "non-private run)")
    f.add_argument("--delta", type=float, default=1e-5, help="privacy delta (default 1e-5; keep it well below "
                                                             "1 / number of rows)")
    f.add_argument("--seed", type=_seed, default=0, help="seed of sampling and post-processing (default 0); it "
                                                       "never decides the DP noise")
    f.add_argument("--clip", action="store_true", help="clip numeric values outside the public bounds (default: an "
                                                       "error naming the column)")
    f.add_argument("--dp-schema", type=float, default=None, metavar="EPS",
                   help="measure the schema under DP with EPS of --epsilon (bounds, categories, missing values); "
                        "--schema may then be partial: what it gives is kept, what it lacks is measured")
    f.add_argument("--noise-seed", type=int, default=None,
                   help="TEST ONLY: replayable DP noise; the release is private only while this seed stays secret "
                        "(default: noise from OS entropy, never stored)")
    f.add_argument("--out", required=True, help="model file to write (JSON; no private rows)")
    f.add_argument("--sign", metavar="KEY", help="sign the model file with this private key (from `synthzoo "
                                                  "keygen`), so that loaders holding its .pub can tell it is unchanged")
    _csv_options(f)
    f.set_defaults(func=cmd_fit)

    s = sub.add_parser("sample", help="sample rows from a saved synthesizer into a CSV",
                       description="Draw synthetic rows from a model file into a CSV, chunk by chunk (memory does "
                                   "not grow with -n). The same model, -n and --seed give the same rows whatever "
                                   "--chunk is.")
    s.add_argument("model", help="model file written by `synthzoo fit` (or `tune --out`)")
    s.add_argument("-n", type=_count, default=None,
                   help="rows to draw, e.g. 10000 or 1e7 (default: the model's DP estimate of the number of "
                        "training rows)")
    s.add_argument("--seed", type=_seed, default=None, help="sampling seed (default: derived from the model's seed)")
    s.add_argument("--chunk", type=_count, default=None,
                   help="rows generated and written at a time (default 100,000); bounds the memory used")
    s.add_argument("--precision", choices=SAMPLE_PRECISIONS, default=None,
                   help="precision of the network's passes (ctgan, dp-ctgan, pate-gan, tablediffusion; default: the "
                        "model's, float32). bfloat16 draws slightly different rows; it is faster on CPUs with native "
                        "bf16 instructions (ctgan to CSV 1.7x on an AVX512-BF16 core), a little slower on other "
                        "AVX-512 CPUs and tens of times slower on AVX2-only ones (it warns there)")
    s.add_argument("--out", required=True, help="CSV file to write (compressed when named .gz, .bz2 or .xz); '-' "
                                                 "writes the rows to standard output, messages to standard error")
    s.add_argument("--trust", metavar="KEY.pub", action="append", default=[],
                   help="load the model only if it is signed by this public key and unchanged since (repeatable)")
    _csv_options(s, "output CSV", reads=False)
    s.set_defaults(func=cmd_sample)

    sp = sub.add_parser("split", help="split a CSV into training and held-out test rows (for `eval --test`)",
                        description="Shuffle a CSV and split it into a training file to fit on and a held-out "
                                    "test file for `synthzoo eval --test` (ML utility and privacy attacks need "
                                    "real rows the synthesizer never saw). Same seed, same split.")
    sp.add_argument("data", help="the CSV to split")
    sp.add_argument("--test-size", type=float, default=0.2,
                    help="share of rows held out, in (0, 1), or a number of rows (default 0.2)")
    sp.add_argument("--seed", type=_seed, default=0, help="shuffling seed (default 0)")
    sp.add_argument("--stratify", help="column whose value shares are kept (about) equal in both parts")
    sp.add_argument("--train", help="training file to write (default: DATA with .train.csv)")
    sp.add_argument("--test", help="test file to write (default: DATA with .test.csv)")
    sp.add_argument("--force", action="store_true", help="overwrite existing output files")
    _csv_options(sp, "CSV files (read and written; every field is copied as the file writes it)", numbers=False)
    sp.set_defaults(func=cmd_split)

    d = sub.add_parser("demo", help="end to end on a built-in generated table (no files needed)")
    d.add_argument("--synth", "--preset", dest="synth", default="privsyn", help="preset name (default privsyn)")
    d.add_argument("--epsilon", type=_epsilon, default=1.0, help="privacy budget (default 1; 'none' for non-private)")
    d.add_argument("--delta", type=float, default=1e-5, help="privacy delta (default 1e-5)")
    d.add_argument("--n", type=_count, default=20_000, help="rows of the generated table (default 20,000)")
    d.add_argument("--seed", type=_seed, default=0, help="seed of the table, the split and the sampling (default 0)")
    d.add_argument("--out", help="also write the synthetic rows to this CSV")
    d.set_defaults(func=cmd_demo)

    b = sub.add_parser("bench", help="quality and time on the shared datasets; with --select/--model, the "
                                     "selector x model ablation grid")
    b.add_argument("--data", help="shared dataset name(s), comma-separated, or a CSV path (with --schema); "
                                  "default adult,hmeq,housing (grid: adult)")
    b.add_argument("--schema", help="public schema JSON of a --data CSV")
    b.add_argument("--epsilon", default="0.2,1,5", help="comma-separated privacy budgets (default 0.2,1,5)")
    b.add_argument("--synth", "--preset", dest="synth", default="privsyn",
                   help="preset (grid: gives preprocessing and budget split)")
    b.add_argument("--select", help="grid: comma-separated selectors ('none' for record models)")
    b.add_argument("--model", help="grid: comma-separated models")
    b.add_argument("--preprocess", help="grid: comma-separated preprocessors instead of the preset's ('none')")
    b.add_argument("--seeds", type=_positive_int, default=1, help="synthesizer seeds per cell: seeds 0 to N-1 "
                                                                  "(default 1)")
    b.add_argument("--delta", type=float, default=1e-5, help="privacy delta (default 1e-5)")
    b.add_argument("--cell-timeout", type=_positive_seconds,
                   help="grid: seconds before a cell's process is stopped")
    b.add_argument("--no-ml", action="store_true", help="grid: skip the LightGBM macro-F1 / R2 score")
    b.add_argument("--in-process", action="store_true",
                   help="grid: run cells in this process (faster start; no per-cell memory or timeout)")
    b.add_argument("--plot", help="grid: heatmap PNG (default: the CSV's name with .png)")
    b.add_argument("--resume", action="store_true",
                   help="grid: keep the rows an earlier run of the same grid wrote to --out and run only the "
                        "missing cells (an --out of another grid is refused)")
    b.add_argument("--force", action="store_true",
                   help="grid: replace the rows an earlier grid run left in --out (default: an error)")
    b.add_argument("--root", help="datasets folder (default ../shared/datasets or $SYNTHZOO_DATASETS)")
    b.add_argument("--out", help="write the table as CSV (grid default: bench_grid.csv)")
    b.add_argument("--storage", help="grid: run the cells as a shared Optuna study in this storage (SQLite file or "
                                     "PostgreSQL URL); other machines join with bench-worker")
    b.add_argument("--study", default="synthzoo-grid", help="grid: the shared study's name")
    b.add_argument("--workers", type=_positive_int, default=1,
                   help="grid with --storage: local worker processes to start")
    b.set_defaults(func=cmd_bench)

    bw = sub.add_parser("bench-worker", help="run cells of a shared grid study (synthzoo bench --storage) until done")
    bw.add_argument("--storage", required=True, help="the grid study's storage, as given to synthzoo bench --storage")
    bw.add_argument("--study", default="synthzoo-grid", help="the grid study's name (default synthzoo-grid)")
    bw.add_argument("--heartbeat", type=_positive_int, default=10,
                    help="seconds between heartbeats (a dead worker's cell is re-run after 3 missed ones, at once "
                         "on its host; give every worker the same)")
    bw.set_defaults(func=cmd_bench_worker)

    e = sub.add_parser("eval", help="evaluate synthetic against real rows; write an HTML report",
                       description="Score synthetic rows against the real training rows (and, with --test, real "
                                   "held-out rows: `synthzoo split` makes them), next to baselines; print the table "
                                   "and write an HTML report.")
    e.add_argument("real", help="the real training CSV the synthesizer was fitted on")
    e.add_argument("fake", help="the synthetic CSV")
    e.add_argument("--test", help="real held-out CSV, never used for fitting (enables ML utility and privacy metrics)")
    e.add_argument("--schema", help="public schema JSON (default: inferred from the real rows)")
    e.add_argument("--target", help="column the ML metrics predict (default: the schema's \"target\"; without one "
                                    "they are skipped)")
    e.add_argument("--task", help="'binary classification', 'multiclass classification' or 'regression' (default: "
                                  "the schema's \"task\", else classification for a categorical target)")
    e.add_argument("--out", default="report.html", help="HTML report to write (default report.html)")
    e.add_argument("--metrics", help=_metric_help())
    e.add_argument("--seed", type=_seed, default=0, help="seed of the metrics' own randomness (default 0)")
    e.add_argument("--risk", help="a risk-response CSV (benchmarks/bench_risk.py --out) to plot in the report")
    _csv_options(e)
    e.set_defaults(func=cmd_eval)

    t = sub.add_parser("tune", help="tune a preset with Optuna (fidelity + MLA + query error), privacy stated")
    t.add_argument("data", help="private training CSV")
    t.add_argument("--val", help="validation CSV (default: 20%% of DATA held out; accounted: each run draws "
                                 "its own 20%% record by record with secret randomness)")
    t.add_argument("--public", help="public/proxy CSV for --privacy public")
    t.add_argument("--schema", required=True, help="public schema JSON")
    t.add_argument("--synth", "--preset", dest="synth", default="privsyn", help="preset name (default privsyn)")
    t.add_argument("--privacy", default="non-private", choices=["non-private", "public", "accounted"],
                   help="how tuning touches the private data: non-private (not covered by DP), public (tunes on "
                        "--public), accounted (the tuning itself is charged); default non-private")
    t.add_argument("--epsilon", type=_epsilon, default=1.0, help="privacy budget of the release (default 1)")
    t.add_argument("--delta", type=float, default=1e-5, help="privacy delta (default 1e-5)")
    t.add_argument("--trials", type=_trials, default=20, help="trials (accounted: their mean; default 20)")
    t.add_argument("--storage", help="Optuna storage URL or SQLite file holding the study (default "
                                     "sqlite:///synthzoo-tune.db in the current folder)")
    t.add_argument("--study-name", help="study name; workers sharing a storage use the same one")
    t.add_argument("--weights", help="a1,a2,a3 for fidelity,MLA,query error (default 1/3 each)")
    t.add_argument("--multi-objective", action="store_true", help="Pareto front over the three terms")
    t.add_argument("--fixed-modules", action="store_true", help="tune parameters only, not the module choice")
    t.add_argument("--numeric", help="numeric binning choices, e.g. privtree,uniform")
    t.add_argument("--select-model", help="selector+model choices, e.g. indif+gum,mst+pgm")
    t.add_argument("--timeout", type=float,
                   help="seconds per trial; a hard limit: the trial's process is killed and the trial pruned "
                        "(not with --privacy accounted: whether a run ends in time follows the private rows)")
    t.add_argument("--in-process", action="store_true",
                   help="run trials in this process (debugging; --timeout cannot stop a long native call)")
    t.add_argument("--stopping", default=None, choices=["geometric", "poisson"],
                   help="accounted mode: law of the random number of runs (default geometric)")
    t.add_argument("--models-dir", help="accounted mode: also save each trial's synthesizer here")
    t.add_argument("--score-rows", type=int, default=None,
                   help="accounted mode: the public number of validation rows each run is scored on (a fixed-size "
                        "sample of the validation records, padded when there are fewer); default 1000")
    t.add_argument("--noise-seed", type=int, default=None,
                   help="TEST ONLY: replayable DP noise, stopping coins and score noise; private only while this "
                        "seed stays secret (default: OS entropy, never stored)")
    t.add_argument("--seed", type=_seed, default=0, help="synthesizer and metric seed (default 0)")
    t.add_argument("--sampler-seed", type=_seed, help="TPE seed (give each worker its own; not used in accounted "
                                                    "mode, whose random search is seeded secretly)")
    t.add_argument("--out", help="write the tuning metadata JSON here and the tuned synthesizer next to it as "
                                 "<name>.model.json (without --out the tuned synthesizer is not saved)")
    t.add_argument("--sign", metavar="KEY", help="sign the tuned model file (--out) with this private key (from "
                                                  "`synthzoo keygen`), as fit --sign does")
    _csv_options(t)
    t.set_defaults(func=cmd_tune)

    k = sub.add_parser("keygen", help="make an Ed25519 key pair for signing model files (fit --sign, sample --trust)")
    k.add_argument("key", help="private key file to write (the public key goes to KEY.pub)")
    k.set_defaults(func=cmd_keygen)

    ls = sub.add_parser("list", help="registered modules and presets")
    ls.set_defaults(func=cmd_list)
    for action in sub._choices_actions:  # each command's own --help starts with what it does
        if sub.choices[action.dest].description is None:
            sub.choices[action.dest].description = action.help
    for parser in (p, *sub.choices.values()):  # '--weights -1,1,1' is a value (argparse took only '-1' for one)
        parser._negative_number_matcher = _NEGATIVE_VALUE
    p.commands = sub.choices
    return p


def _parse(parser: argparse.ArgumentParser, argv) -> argparse.Namespace:
    """``parse_args``, but an option the command does not take is refused by that command, with its usage
    and the nearest option names (argparse refuses it with the top level's usage, which lists no option)."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = parser.commands[args.cmd]
        known = [o for a in command._actions for o in a.option_strings if o.startswith("--") and o != "--help"]
        near = sorted({m for x in extra if x.startswith("-")
                       for m in difflib.get_close_matches(x.split("=")[0], known)})
        command.error(f"unrecognized arguments: {' '.join(extra)}"
                      + (f" (did you mean {', '.join(near)}?)" if near else "")
                      + f"; `synthzoo {args.cmd} --help` lists its options")
    return args


def _number_reading_hint(msg: str, decimal: str, thousands: str | None) -> str:
    """What to pass when a numerical column's values are numbers written with separators the reader was not
    told of (the values quoted in ``msg``; :func:`~synthzoo.core.schema.number_layout`), or ""."""
    from .core.schema import number_layout

    examples = re.findall(r"'(-?[\d.,]*\d)'", msg)
    layout = number_layout(examples) if thousands is None and decimal != "," else None
    if layout == "thousands":
        return "; its commas separate thousands (the point is the decimal mark): pass --thousands ','"
    one = next((x for x in examples if x.count(",") == 1), None)
    if layout == "comma" and one:
        return (f"; if its commas separate thousands, pass --thousands ',' (--decimal ',' would read {one!r} as "
                f"{one.replace(',', '.')}); if they are decimal commas, pass --decimal ','")
    if layout == "comma":  # 1,234,567: more than one comma is no decimal mark
        return "; its commas separate thousands: pass --thousands ','"
    if layout == "decimal comma, thousands point":
        return ("; if the file writes decimals with a comma and thousands with a point, pass --decimal ',' "
                "--thousands '.'")
    if layout == "decimal comma":
        return "; if the file writes decimals with a comma, pass --decimal ','"
    return ""


def main(argv=None) -> int:
    from synthzoo.core.csvfile import check_output_path
    from synthzoo.core.errors import SchemaError, SynthzooError

    single_thread_defaults()  # OpenMP spin-waiting hurts on small machines; a user's setting is kept
    args = _parse(build_parser(), argv)
    with plain_warnings():
        try:
            if getattr(args, "out", None) and not (args.cmd == "sample" and args.out == "-"):
                check_output_path(args.out)
                _check_out_is_not_an_input(args)
            _check_encoding(getattr(args, "encoding", None))
            return args.func(args)
        except (SynthzooError, FileNotFoundError) as e:
            msg = _cli_words(str(e))  # say it in the command line's words
            if isinstance(e, SchemaError) and "non-numeric" in msg:
                msg += _number_reading_hint(msg, getattr(args, "decimal", "."), getattr(args, "thousands", None))
            print(f"synthzoo: error: {msg}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
