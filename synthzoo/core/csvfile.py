"""Reading a CSV file the way every synthzoo entry point does (the command line and
:func:`synthzoo.metrics.evaluate_files`): an error that says what to do for the usual mistakes, the
schema's categories read as themselves where pandas would read them as missing ("NA", "None"), and
numbers spelt with a leading zero ("02139") kept as text unless the schema types them as numbers."""

from __future__ import annotations

import os
import re
from pathlib import Path

_SEP_NAMES = {";": "semicolons", "\t": "tabs", "|": "pipes", ",": "commas"}


def read_csv(path, sep: str = ",", encoding: str | None = None, role: str = "data", schema=None,
             decimal: str = ".", categories: dict | None = None, numerical=None, thousands: str | None = None,
             text: bool = False):
    """Read a CSV the way every command does, with an error that says what to do for the usual
    mistakes: a missing or empty (0-byte) file, a wrong text encoding, a separator other than
    ``sep`` (the file then reads as one column, or as ragged rows).  The categories ``schema`` lists (or
    ``categories``, column -> list, where only a partial description exists) are read as themselves even
    where pandas would read them as missing (:func:`_na_reading`), and numbers spelt with a leading zero
    ("02139") stay text where no schema types the column as numbers (:func:`_keep_leading_zeros`).  With
    ``text=True`` every field is read as the file's text, nothing as missing (what ``split`` copies)."""
    import pandas as pd

    from .errors import ConfigError

    if thousands is not None and thousands == decimal:  # (the field separator may be one: "1,234" is quoted)
        raise ConfigError(f"{role}: the thousands separator {thousands!r} is also the decimal mark; they must differ"
                          + (" (for 1.234,5 pass --decimal ',' too)" if thousands == "." else ""))
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{role}: file {str(p)!r} not found")
    if p.is_dir():
        raise ConfigError(f"{role}: {str(p)!r} is a folder, not a CSV file")
    if p.stat().st_size == 0:
        raise ConfigError(f"{role}: {str(p)!r} is empty (0 bytes); a CSV file needs a header line naming the "
                          "columns, then one line per row")
    with open(p, "rb") as fh:  # a model or schema file where a CSV belongs: the reader's error named its JSON keys
        head = fh.read(4096)
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"\xef\xbb\xbf") and not _is_utf8(encoding):
        # read as latin-1 the mark became 'ï»¿' in the first column's name, refused as a column the schema lacks
        raise ConfigError(f"{role}: {str(p)!r} starts with a UTF-8 byte-order mark, so it is UTF-8 text, not "
                          f"{encoding}: drop --encoding {encoding} (or pass --encoding utf-8)")
    if start.startswith(b"{"):
        what = ("a synthzoo model file" if re.match(rb'\{\s*"format"\s*:\s*"synthzoo-model"', start)
                else "a JSON document")
        hint = (f"; draw rows from it first: synthzoo sample {p} --out fake.csv" if what != "a JSON document"
                else "")
        raise ConfigError(f"{role}: {str(p)!r} is {what}, not a CSV file{hint}")
    try:
        na = _na_reading(schema, categories, lambda: pd.read_csv(p, sep=sep, encoding=encoding, header=None, nrows=1,
                                                                 dtype=str, keep_default_na=False).iloc[0])
        if text:
            na = {"dtype": str, "keep_default_na": False}
        df = pd.read_csv(p, sep=sep, encoding=encoding, decimal=decimal, thousands=thousands, **na)
    except UnicodeDecodeError as e:
        raise ConfigError(f"{role}: {str(p)!r} is not {encoding or 'utf-8'} text ({_undecodable(p, encoding, e)}); "
                          "pass its encoding, e.g. --encoding latin-1") from None
    except pd.errors.EmptyDataError:
        raise ConfigError(f"{role}: {str(p)!r} holds no columns (only blank lines?); a CSV file needs a header "
                          "line naming the columns") from None
    except pd.errors.ParserError as e:
        first = str(e).strip().splitlines()[0]
        hint = _sep_hint(_header_line(p, encoding), sep) or "check --sep"
        raise ConfigError(f"{role}: {str(p)!r} is not a well-formed CSV file with separator {sep!r} ({first}); "
                          f"{hint}") from None
    # read_csv renames a repeated header ('age', 'age.1'); the file's own header says it twice
    header = pd.read_csv(p, sep=sep, encoding=encoding, header=None, nrows=1, dtype=str,
                         keep_default_na=False).iloc[0].tolist()
    blank = [i for i, h in enumerate(header) if h == "" and i < df.shape[1]]
    if blank:  # pandas calls it 'Unnamed: i', a name the file does not hold (and the release would write)
        i = blank[0]
        if (df.iloc[:, i].isna() | (df.iloc[:, i] == "")).all():  # (text=True reads an empty field as "")
            raise ConfigError(f"{role}: {str(p)!r}: the header's field {i + 1} is empty and so is every value under "
                              "it (a separator at the end of each line?); remove it, or name the column")
        raise ConfigError(f"{role}: {str(p)!r}: column {i + 1} has no name in its header (such as the row index "
                          "pandas' to_csv writes without index=False); name it in the header line, or drop it")
    if len(set(header)) != len(header):
        dup = list(dict.fromkeys(h for i, h in enumerate(header) if h in header[:i]))
        raise ConfigError(f"{role}: {str(p)!r} names column(s) {dup[:5]} more than once in its header; give each "
                          "column its own name")
    if df.shape[1] == 1:
        head = str(df.columns[0])
        hint = None if schema is not None and head in schema.names else _sep_hint(head, sep)
        if hint:
            raise ConfigError(f"{role}: {str(p)!r} reads as a single column named {head[:60]!r}: {hint}")
    if len(df) == 0:  # the library's message named a pandas DataFrame
        raise ConfigError(f"{role}: {str(p)!r} has a header line but no rows")
    if schema is not None:  # said here with the file's name, before any work (the fit said "the table" after it began)
        schema.check_columns(df, f"{role}: {str(p)!r}")
    if text:
        return df

    def as_text(cols):
        return pd.read_csv(p, sep=sep, encoding=encoding, usecols=cols, dtype=str, **na)

    return _dates_as_text(_keep_leading_zeros(df, as_text, schema, numerical, categories), as_text, schema, numerical)


def _dates_as_text(df, text, schema, numerical=None):
    """A column the schema (or ``numerical``, name -> kind of a partial description) types as datetime that
    pandas read as numbers is kept as the file's text: dates written ``20200131`` (a ``"format"`` of
    ``"%Y%m%d"``) or ``2020`` (``"%Y"``) are text in the file, and read as numbers the fit refused them as
    numbers, not dates.  ``text(cols)``: those columns as text."""
    import pandas as pd

    dates = {c.name for c in schema.columns if c.kind == "datetime"} if schema is not None else set()
    if isinstance(numerical, dict):
        dates |= {c for c, kind in numerical.items() if kind == "datetime"}
    cols = [c for c in df.columns if c in dates and pd.api.types.is_numeric_dtype(df[c].dtype)
            and not pd.api.types.is_bool_dtype(df[c].dtype) and df[c].notna().any()]
    if cols:
        raw = text(cols)
        for c in cols:
            df[c] = raw[c]
    return df


_LEADING_ZERO = re.compile(r"[+-]?0\d+")


def _keep_leading_zeros(df, text, schema, numerical, categories=None):
    """A column pandas read as numbers whose text spells some value with a leading zero ("02139", "007": ZIP
    codes, account codes) is kept as that text, unless the schema (or ``numerical``, names a partial
    description types as numbers) declares it numerical, or lists its categories with none so spelt ("01"
    still matches a listed 1): read as numbers, the fit and ``split`` wrote 2139 for "02139", and a schema
    listing "02139" refused the file for values it does not hold.  ``text(cols)``: those columns as text."""
    import pandas as pd

    declared = set(numerical or ())
    listed = dict(categories or {})
    if schema is not None:
        declared |= {c.name for c in schema.columns if c.kind != "categorical"}
        listed.update({c.name: c.categories for c in schema.columns if c.kind == "categorical"})
    declared |= {c for c, cats in listed.items() if isinstance(cats, (list, tuple))
                 and not any(_LEADING_ZERO.fullmatch(str(x)) for x in cats)}
    cols = [c for c in df.columns if c not in declared and pd.api.types.is_numeric_dtype(df[c].dtype)
            and not pd.api.types.is_bool_dtype(df[c].dtype)]
    if not cols:
        return df
    raw = text(cols)
    for c in cols:
        if raw[c].dropna().map(lambda v: bool(_LEADING_ZERO.fullmatch(v.strip()))).any():
            df[c] = raw[c]
    return df


#: The texts pandas' CSV reader takes for a missing value (its documented default ``na_values``).
CSV_NA_TEXTS = frozenset(["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                          "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"])


def _na_reading(schema, categories: dict | None, header) -> dict:
    """``read_csv`` keywords that keep a listed category spelt like a missing value ("NA" for North America,
    "None" for no alley) as that category: pandas reads such a text as missing in every column, and the fit
    then failed on missing values the file does not hold.  Other texts, and every column that lists no such
    category, read as pandas reads them.  ``categories``: column -> listed categories, beside ``schema``'s;
    ``header()``: the file's column names (read only when some category needs it)."""
    listed = {} if schema is None else {c.name: c.categories for c in schema.columns if c.kind == "categorical"}
    listed.update({k: v for k, v in (categories or {}).items() if isinstance(v, (list, tuple))})
    keep = {k: CSV_NA_TEXTS & {str(x) for x in v} for k, v in listed.items()}
    if not any(keep.values()):
        return {}
    # keep_default_na=False leaves a column outside the dict with no missing texts at all: every column of the
    # file gets the default set, less its own listed categories
    return {"keep_default_na": False,
            "na_values": {c: sorted(CSV_NA_TEXTS - keep.get(c, set())) for c in header()}}


def _undecodable(p: Path, encoding, err: UnicodeDecodeError) -> str:
    """Where the file stops being text in ``encoding``: its line and column (the decoder's own byte offset
    counts from whichever chunk the reader was decoding)."""
    with open(p, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:
                raw.decode(encoding or "utf-8")
            except UnicodeDecodeError as e:
                return f"line {number}, column {e.start + 1}: byte {raw[e.start:e.start + 1]!r}, {e.reason}"
    return err.reason


def _is_utf8(encoding) -> bool:
    import codecs

    if encoding is None:
        return True
    try:
        return codecs.lookup(encoding).name in ("utf-8", "utf-8-sig")
    except LookupError:  # an unknown name: pandas' reader says so
        return True


def _header_line(p: Path, encoding) -> str:
    with open(p, encoding=encoding or "utf-8", errors="replace") as fh:
        return fh.readline()


def _sep_hint(header: str, sep: str) -> str | None:
    """A hint naming the separator to pass, when the header line holds another usual separator
    (semicolon, tab, pipe, comma) more often than ``sep``; else None."""
    counts = {c: header.count(c) for c in _SEP_NAMES if c != sep}
    c = max(counts, key=counts.get) if counts else None
    if c is None or counts[c] == 0 or counts[c] <= header.count(sep):
        return None
    shown = "'\\t'" if c == "\t" else repr(c)
    return (f"its values look separated by {_SEP_NAMES[c]}, not {_SEP_NAMES.get(sep, repr(sep))}; "
            f"pass --sep {shown}")


def check_output_path(path, role: str = "--out") -> None:
    """An output path that cannot be written is said before any work (and any budget) is spent: a folder, a
    missing or read-only folder (not the temporary file's name the writer would have failed on)."""
    from .errors import ConfigError

    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{role}: {str(p)!r} is a folder; give a file name inside it")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        what = "is a file, not a folder" if parent.exists() else "does not exist (create it first)"
        raise ConfigError(f"{role}: folder {str(parent)!r} {what}")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"{role}: folder {str(parent)!r} is not writable")
