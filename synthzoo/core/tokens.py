"""Token encodings for autoregressive record models (the ``transformer`` model), built from the
public schema -- the contract between the ``tokens`` preprocessor, the model and decoding.

A row becomes a fixed-length sequence of tokens, column by column, as in REaLTabFormer (Solatorio &
Dupriez 2023): one token for a category, a few digit tokens for a number.  Every *position* of the
sequence has its own slice of the vocabulary (REaLTabFormer's column-prefixed tokens), so a token
says which column and which digit it is, and the model's output at a position is read only over
that position's slice.  Unlike REaLTabFormer, whose vocabulary is the set of values found in the
training rows (read for free), the vocabulary here comes from the schema alone: the category list,
and for numbers the digits of a public grid on the public bounds:

* integer columns: every admissible integer (step 1);
* other numeric and datetime columns (epoch seconds): a step of
  ``10 ** (ceil(log10(upper - lower)) - digits)``, so ``digits`` significant digits of the range
  (default 4: a resolution between 1/10,000 and 1/1,000 of the range).

A grid value ``m`` (the number is ``m * step``) is written with ``D`` digits in base ``base``
(default 10), most significant first -- the value's own digits when ``lower >= 0``, else those of
``m - ceil(lower / step)``.  A column that may be missing has a ``MISSING`` token at its first
position (and, for numbers, a ``PAD`` token at its later positions, forced after ``MISSING``).

**Constrained decoding.**  :meth:`TokenTable.allowed` says which tokens of a position keep the row in
the schema given the tokens before it: the column's own tokens, and for a digit only those that keep
the number within the public bounds (a digit-by-digit automaton tracking whether the prefix still
equals the bounds' prefixes).  Sampling through it yields only valid rows, with no rejection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import ConfigError
from .schema import Column, Schema, category_key, numeric_values, per_column

#: The begin-of-row token (vocabulary id 0); position slices start at 1.
BOS = 0


@dataclass(frozen=True)
class Position:
    """One position of the token sequence: column ``column``'s ``index``-th token, drawn from the
    vocabulary ids ``[start, start + width)``."""

    column: str
    index: int
    start: int
    width: int


class CategoryTokens:
    """A categorical column as one token: the category's index, ``MISSING`` last when allowed."""

    kind = "category"

    def __init__(self, column: Column):
        self.column = column
        self._index = {c: i for i, c in enumerate(column.categories)}

    def widths(self) -> list[int]:
        return [len(self.column.categories) + (1 if self.column.missing else 0)]

    def transform(self, s: pd.Series) -> np.ndarray:
        na = s.isna().to_numpy()
        out = np.full((len(s), 1), len(self.column.categories), dtype=np.int64)
        if (~na).any():
            mapped = s[~na].map(category_key).map(self._index)
            if mapped.isna().any():
                bad = sorted(set(s[~na][mapped.isna()].map(category_key)))[:5]
                raise ConfigError(f"column {self.column.name!r}: values {bad} not among the schema's categories")
            out[~na, 0] = mapped.to_numpy(dtype=np.int64)
        if na.any() and not self.column.missing:
            raise ConfigError(f"column {self.column.name!r}: missing values but the schema allows none")
        return out

    def inverse(self, local: np.ndarray) -> np.ndarray:
        cats = np.asarray(list(self.column.categories) + [np.nan], dtype=object)
        return cats[np.clip(local[:, 0], 0, len(cats) - 1)]

    def to_state(self) -> dict:
        return {"type": self.kind}


def grid_step(column: Column, digits: int) -> float:
    """The public resolution of a numeric column: 1 for integers, else ``digits`` significant
    digits of the public range (a power of ten)."""
    if column.integer:
        return 1.0
    span = float(column.upper) - float(column.lower)
    if not span > 0:
        return 1.0
    return 10.0 ** (math.ceil(math.log10(span)) - int(digits))


class NumberTokens:
    """A numeric (or datetime) column as ``D`` digit tokens of a grid value on its public bounds.

    Parameters
    ----------
    column : Column
    step : float
        The grid's resolution (:func:`grid_step`); a number ``v`` is written as ``m = round(v / step)``.
    base : int, default 10
        Digits per position (10: REaLTabFormer's decimal digits; 100 halves the positions).
    """

    kind = "digits"

    def __init__(self, column: Column, step: float, base: int = 10):
        if not (isinstance(step, (int, float)) and math.isfinite(step) and step > 0):
            raise ConfigError(f"column {column.name!r}: the digit grid's step must be a positive number, got {step!r}")
        if isinstance(base, bool) or not isinstance(base, (int, np.integer)) or not 2 <= base <= 1000:
            raise ConfigError(f"column {column.name!r}: the digit base must be an integer in [2, 1000], got {base!r}")
        self.column, self.step, self.base = column, float(step), int(base)
        lo, hi = float(column.lower), float(column.upper)
        if column.integer:
            self.m_lo, self.m_hi = math.ceil(lo), math.floor(hi)
        else:
            self.m_lo = math.ceil(lo / self.step - 1e-9)
            self.m_hi = math.floor(hi / self.step + 1e-9)
        if self.m_hi < self.m_lo:  # a constant column (lower == upper off the grid): one value, the bound
            self.m_lo = self.m_hi = 0
            self.constant = lo
        else:
            self.constant = None
        self.offset = 0 if self.m_lo >= 0 else self.m_lo
        self.k_lo, self.k_hi = self.m_lo - self.offset, self.m_hi - self.offset
        n_digits = 1
        while self.base ** n_digits <= self.k_hi:
            n_digits += 1
        self.n_digits = n_digits
        self.lo_digits = self._digits(np.array([self.k_lo]))[0]
        self.hi_digits = self._digits(np.array([self.k_hi]))[0]
        # decimals that print the grid's values exactly (step = 10 ** -decimals)
        self.decimals = max(0, -int(round(math.log10(self.step)))) if not column.integer else 0

    @property
    def missing_token(self) -> int | None:
        return self.base if self.column.missing else None

    def widths(self) -> list[int]:
        extra = 1 if self.column.missing else 0  # MISSING at the first position, PAD at the others
        return [self.base + extra] * self.n_digits

    def _digits(self, k: np.ndarray) -> np.ndarray:
        out = np.zeros((len(k), self.n_digits), dtype=np.int64)
        rest = k.astype(np.int64)
        for j in range(self.n_digits - 1, -1, -1):
            out[:, j] = rest % self.base
            rest = rest // self.base
        return out

    def transform(self, s: pd.Series) -> np.ndarray:
        v = numeric_values(s, self.column)
        na = np.isnan(v)
        if na.any() and not self.column.missing:
            raise ConfigError(f"column {self.column.name!r}: missing values but the schema allows none")
        m = np.zeros(len(v), dtype=np.int64)
        if self.constant is None:
            m[~na] = np.clip(np.round(v[~na] / self.step), self.m_lo, self.m_hi).astype(np.int64)
        out = self._digits(m - self.offset)
        if na.any():
            out[na, 0] = self.base          # MISSING
            out[na, 1:] = self.base         # PAD
        return out

    def inverse(self, local: np.ndarray) -> np.ndarray:
        d = np.clip(local, 0, self.base - 1)
        k = np.zeros(len(local), dtype=np.int64)
        for j in range(self.n_digits):
            k = k * self.base + d[:, j]
        m = np.clip(k + self.offset, self.m_lo, self.m_hi)
        if self.constant is not None:
            v = np.full(len(local), self.constant, dtype=float)
        elif self.column.integer:
            v = m.astype(float)
        else:
            v = np.round(m / 10.0 ** self.decimals if self.decimals else m * self.step, self.decimals)
            v = np.clip(v, float(self.column.lower), float(self.column.upper))
        if self.column.missing:
            v[local[:, 0] == self.base] = np.nan
        return v

    def to_state(self) -> dict:
        return {"type": self.kind, "step": self.step, "base": self.base}


def token_encoder_from_state(column: Column, state: dict):
    kind = state.get("type") if isinstance(state, dict) else None
    if kind == "category" and column.kind == "categorical":
        return CategoryTokens(column)
    if kind == "digits" and column.is_numeric:
        if set(state) != {"type", "step", "base"}:
            raise ConfigError(f"column {column.name!r}: a 'digits' token encoder has the keys step, base")
        enc = NumberTokens(column, state["step"], state["base"])
        if enc.n_digits > 64:  # an edited step must not make a model of absurd length
            raise ConfigError(f"column {column.name!r}: the digit grid's step {state['step']!r} gives "
                              f"{enc.n_digits} digits on the bounds (at most 64)")
        return enc
    raise ConfigError(f"column {column.name!r}: unknown or mismatched token encoder {kind!r}")


class TokenTable:
    """One token encoder per schema column: a frame <-> an (n, L) matrix of vocabulary ids.

    Attributes
    ----------
    positions : list of Position
        The ``L`` positions in order (columns in schema order, digits most significant first).
    vocab_size : int
        ``1 + sum of the positions' widths`` (id 0 is :data:`BOS`).

    Examples
    --------
    >>> schema = Schema.from_dict({"columns": {"age": {"type": "numerical", "lower": 17, "upper": 90,
    ...                                                "integer": True},
    ...                                        "c": {"type": "categorical", "categories": ["a", "b"]}}})
    >>> table = TokenTable(schema, {"age": NumberTokens(schema["age"], 1.0), "c": CategoryTokens(schema["c"])})
    >>> [(p.column, p.start, p.width) for p in table.positions]
    [('age', 1, 10), ('age', 11, 10), ('c', 21, 2)]
    """

    def __init__(self, schema: Schema, encoders: dict):
        self.schema = schema
        self.encoders = per_column(schema, encoders, "token encoder")
        self.positions: list[Position] = []
        self.columns: dict[str, slice] = {}
        start = 1
        for c in schema.names:
            first = len(self.positions)
            for i, w in enumerate(self.encoders[c].widths()):
                self.positions.append(Position(c, i, start, int(w)))
                start += int(w)
            self.columns[c] = slice(first, len(self.positions))
        self.vocab_size = start
        self._build_automaton()

    @property
    def n_positions(self) -> int:
        return len(self.positions)

    @property
    def max_width(self) -> int:
        return max(p.width for p in self.positions)

    # ------------------------------------------------------------------ encode / decode
    def transform(self, df: pd.DataFrame, rng: np.random.Generator | None = None) -> np.ndarray:
        """The (n, L) vocabulary ids of ``df`` (a number is rounded to the nearest grid value)."""
        local = np.concatenate([self.encoders[c].transform(df[c]) for c in self.schema.names], axis=1)
        return local + self.starts[None, :]

    def inverse(self, tokens: np.ndarray, rng: np.random.Generator | None = None) -> pd.DataFrame:
        """Raw-typed values (categories as their schema strings, numbers as float, epoch s for datetimes)."""
        local = self.local(tokens)
        return pd.DataFrame({c: self.encoders[c].inverse(local[:, self.columns[c]]) for c in self.schema.names})

    def local(self, tokens: np.ndarray) -> np.ndarray:
        """Vocabulary ids -> each position's own index (0 .. width - 1); checks the shape and range."""
        tokens = np.asarray(tokens)
        if tokens.ndim != 2 or tokens.shape[1] != self.n_positions:
            raise ConfigError(f"token rows must have shape (n, {self.n_positions}), got {tokens.shape}")
        local = tokens.astype(np.int64) - self.starts[None, :]
        if local.size and (local.min() < 0 or np.any(local >= self.widths[None, :])):
            raise ConfigError("token ids fall outside their positions' vocabulary")
        return local

    # ------------------------------------------------------------------ constraints
    def _build_automaton(self) -> None:
        L = self.n_positions
        self.starts = np.array([p.start for p in self.positions], dtype=np.int64)
        self.widths = np.array([p.width for p in self.positions], dtype=np.int64)
        self.is_digit = np.zeros(L, dtype=bool)
        self.first = np.zeros(L, dtype=bool)
        self.base = np.zeros(L, dtype=np.int64)
        self.lo_digit = np.zeros(L, dtype=np.int64)
        self.hi_digit = np.zeros(L, dtype=np.int64)
        self.has_missing = np.zeros(L, dtype=bool)
        for p, pos in enumerate(self.positions):
            enc = self.encoders[pos.column]
            self.first[p] = pos.index == 0
            self.has_missing[p] = enc.column.missing
            if isinstance(enc, NumberTokens):
                self.is_digit[p] = True
                self.base[p] = enc.base
                self.lo_digit[p] = enc.lo_digits[pos.index]
                self.hi_digit[p] = enc.hi_digits[pos.index]

    def start_state(self, n: int) -> dict:
        """The automaton's state before a row's first token: per row, whether the current number's
        prefix equals the lower / upper bound's prefix, and whether it is missing."""
        return {"tlo": np.ones(n, dtype=bool), "thi": np.ones(n, dtype=bool), "miss": np.zeros(n, dtype=bool)}

    def allowed(self, p: int, state: dict) -> np.ndarray:
        """(n, max_width) bool: the local tokens of position ``p`` that keep each row valid."""
        n = state["tlo"].shape[0]
        W, w = self.max_width, int(self.widths[p])
        out = np.zeros((n, W), dtype=bool)
        if not self.is_digit[p]:
            out[:, :w] = True
            return out
        b = int(self.base[p])
        if self.first[p]:
            tlo, thi, miss = np.ones(n, bool), np.ones(n, bool), np.zeros(n, bool)
        else:
            tlo, thi, miss = state["tlo"], state["thi"], state["miss"]
        lo = np.where(tlo, self.lo_digit[p], 0)
        hi = np.where(thi, self.hi_digit[p], b - 1)
        d = np.arange(b)
        out[:, :b] = (d[None, :] >= lo[:, None]) & (d[None, :] <= hi[:, None]) & ~miss[:, None]
        if self.has_missing[p]:
            out[:, b] = True if self.first[p] else miss  # MISSING may start a number; PAD follows it
        return out

    def advance(self, p: int, state: dict, local: np.ndarray) -> dict:
        """The state after drawing ``local`` (each row's local token) at position ``p``."""
        if not self.is_digit[p]:
            return state
        n = local.shape[0]
        if self.first[p]:
            tlo, thi, miss = np.ones(n, bool), np.ones(n, bool), np.zeros(n, bool)
        else:
            tlo, thi, miss = state["tlo"], state["thi"], state["miss"]
        b = int(self.base[p])
        is_missing = local == b
        return {"tlo": tlo & (local == self.lo_digit[p]), "thi": thi & (local == self.hi_digit[p]),
                "miss": miss | is_missing}

    def masks(self, tokens: np.ndarray) -> np.ndarray:
        """(n, L, max_width) bool: at every position, what :meth:`allowed` permits given the row's own
        earlier tokens (the teacher-forced masks a model is trained with)."""
        local = self.local(tokens)
        n = local.shape[0]
        out = np.zeros((n, self.n_positions, self.max_width), dtype=bool)
        state = self.start_state(n)
        for p in range(self.n_positions):
            out[:, p] = self.allowed(p, state)
            state = self.advance(p, state, local[:, p])
        return out

    def check(self, tokens: np.ndarray) -> np.ndarray:
        """Per row, whether every token was allowed (True for rows :meth:`inverse` maps into the schema)."""
        local = self.local(tokens)
        m = self.masks(tokens)
        return np.take_along_axis(m, local[:, :, None], axis=2)[:, :, 0].all(axis=1)

    # ------------------------------------------------------------------ state
    def to_dict(self) -> dict:
        """The layout as JSON (what a token model's saved state is checked against)."""
        return {"vocab_size": self.vocab_size,
                "positions": [[p.column, p.index, p.start, p.width] for p in self.positions]}

    def __eq__(self, other) -> bool:
        return isinstance(other, TokenTable) and self.to_dict() == other.to_dict()

    def to_state(self) -> dict:
        return {c: e.to_state() for c, e in self.encoders.items()}

    @classmethod
    def from_state(cls, schema: Schema, state: dict) -> "TokenTable":
        if not isinstance(state, dict):
            raise ConfigError("model file: the token encoders must be an object")
        return cls(schema, {c.name: token_encoder_from_state(c, state.get(c.name)) for c in schema.columns})


@dataclass
class TokenData:
    """Records as token rows: the (n, L) vocabulary ids and the table that made them."""

    x: np.ndarray
    table: TokenTable

    @property
    def n(self) -> int:
        return self.x.shape[0]
