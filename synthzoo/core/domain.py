"""Finite domains, encoded records, vectorised marginal counting and noisy measurements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Iterable, Sequence

import numpy as np

from .statecheck import ARRAY, INTEGER, NUMBER, SCALAR, TEXT

Clique = tuple  # tuple[str, ...]


class Domain:
    """Ordered mapping attribute -> number of codes (the contract between all modules).

    Examples
    --------
    >>> Domain(["a", "b"], [2, 3]).size()
    6
    """

    def __init__(self, attrs: Sequence[str], shape: Sequence[int]):
        if len(attrs) != len(shape):
            raise ValueError("attrs and shape differ in length")
        self.attrs = tuple(attrs)
        self.shape = tuple(int(s) for s in shape)
        if any(s < 1 for s in self.shape):
            raise ValueError(f"every attribute needs at least one code: {dict(zip(self.attrs, self.shape))}")
        self._index = {a: i for i, a in enumerate(self.attrs)}

    @classmethod
    def from_dict(cls, d: dict) -> "Domain":
        return cls(list(d), list(d.values()))

    def to_dict(self) -> dict:
        return dict(zip(self.attrs, self.shape))

    def index(self, attr: str) -> int:
        return self._index[attr]

    def size(self, attrs: Iterable[str] | None = None) -> int:
        attrs = self.attrs if attrs is None else attrs
        return int(np.prod([self.shape[self._index[a]] for a in attrs], dtype=np.int64)) if attrs else 1

    def project(self, attrs: Iterable[str]) -> "Domain":
        attrs = tuple(attrs)
        return Domain(attrs, [self.shape[self._index[a]] for a in attrs])

    def __getitem__(self, attr: str) -> int:
        return self.shape[self._index[attr]]

    def __contains__(self, attr) -> bool:
        return attr in self._index

    def __len__(self) -> int:
        return len(self.attrs)

    def __iter__(self):
        return iter(self.attrs)

    def __eq__(self, other) -> bool:
        return isinstance(other, Domain) and self.attrs == other.attrs and self.shape == other.shape

    def __repr__(self) -> str:
        return f"Domain({self.to_dict()})"


MAX_CELLS = 50_000_000
#: Rows per chunk when counting in numpy: the flat cell index of a chunk is the only row-sized temporary.
CHUNK_ROWS = 1 << 18
#: Widest integer range read from a table over its integers (a histogram, or a code per integer)
#: instead of a sort or a binary search per value: PrivTree's counts, bin encoders' codes.
INTEGER_TABLE_CELLS = 1 << 22
#: From this many rows marginals are counted by the compiled loop (about five times numpy's speed);
#: below, numpy's is as fast as the compiled function's first call in a process.
COMPILED_ROWS = 1 << 18

try:  # one compiled pass over the rows per marginal (numba is a dependency); chunked numpy without it
    from .jit import cached_njit

    @cached_njit(nogil=True)
    def _count_rows(codes, cols, strides, out):  # pragma: no cover - compiled
        """Add every row's cell over columns ``cols`` of ``codes`` (flat index ``sum code * stride``)
        into ``out``; the codes are known to lie in the grid.  One, two and three columns (every
        marginal a selector counts) are loops without an inner loop, which the compiler unrolls."""
        k = cols.shape[0]
        if k == 1:
            a = codes[:, cols[0]]
            for r in range(a.shape[0]):
                out[np.int64(a[r])] += 1
        elif k == 2:
            a, b = codes[:, cols[0]], codes[:, cols[1]]
            s0 = strides[0]
            for r in range(a.shape[0]):
                out[np.int64(a[r]) * s0 + np.int64(b[r])] += 1
        elif k == 3:
            a, b, c = codes[:, cols[0]], codes[:, cols[1]], codes[:, cols[2]]
            s0, s1 = strides[0], strides[1]
            for r in range(a.shape[0]):
                out[np.int64(a[r]) * s0 + np.int64(b[r]) * s1 + np.int64(c[r])] += 1
        else:
            for r in range(codes.shape[0]):
                i = 0
                for j in range(k):
                    i += np.int64(codes[r, cols[j]]) * strides[j]
                out[i] += 1
except ImportError:  # pragma: no cover
    _count_rows = None


def code_dtype(shape: Sequence[int]) -> np.dtype:
    """The smallest unsigned integer type holding every code of a domain of ``shape`` (codes of a
    table are stored in it: a few bytes per row instead of eight per value)."""
    top = max((int(s) for s in shape), default=1)
    for t in (np.uint8, np.uint16, np.uint32):
        if top - 1 <= np.iinfo(t).max:
            return np.dtype(t)
    return np.dtype(np.int64)


def count(codes: np.ndarray, shape: Sequence[int], chunk: int = CHUNK_ROWS, cols=None) -> np.ndarray:
    """Histogram of rows of integer ``codes`` (n, k) -- or of its columns ``cols`` -- over a grid of
    ``shape``; no Python row loop.  Rows are counted in chunks, so memory beyond the histogram is
    one chunk's flat index."""
    shape = tuple(int(s) for s in shape)
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if size > MAX_CELLS:
        raise ValueError(f"marginal with {size:,} cells is too large to count (limit {MAX_CELLS:,})")
    if (codes.shape[1] if cols is None else len(cols)) == 0:
        return np.array(float(codes.shape[0]))
    out = np.zeros(size, dtype=np.int64)
    if _count_rows is not None and codes.ndim == 2 and codes.dtype.kind in "iu" and codes.shape[0] >= COMPILED_ROWS:
        cols = np.arange(codes.shape[1], dtype=np.int64) if cols is None else np.asarray(list(cols), dtype=np.int64)
        for c, s in zip(cols, shape):  # the grid's bounds, checked by column (contiguous: codes are column-major)
            col = codes[:, c]
            if col.max() >= s or (codes.dtype.kind == "i" and col.min() < 0):
                raise ValueError(f"codes fall outside the grid of shape {shape}")
        strides = np.ones(len(shape), dtype=np.int64)
        for k in range(len(shape) - 2, -1, -1):
            strides[k] = strides[k + 1] * shape[k + 1]
        _count_rows(codes, cols, strides, out)
        return out.astype(float).reshape(shape)
    for lo in range(0, codes.shape[0], chunk):
        part = codes[lo:lo + chunk] if cols is None else codes[lo:lo + chunk][:, list(cols)]
        flat = np.ravel_multi_index(tuple(part.T), shape) if part.shape[1] > 1 else part[:, 0]
        out += np.bincount(flat, minlength=size)
    return out.astype(float).reshape(shape)


class EncodedData:
    """Integer-coded records over a :class:`Domain`, with a cache of counted marginals.

    Codes are kept in the smallest unsigned type of the domain (:func:`code_dtype`); marginals are
    counted in row chunks (:func:`count`).

    Examples
    --------
    >>> data = EncodedData(np.array([[0, 1], [1, 1]]), Domain(["a", "b"], [2, 2]))
    >>> data.project(("b",)).tolist()
    [0.0, 2.0]
    """

    #: Cells of counted marginals kept in the cache (128 MB): a selector scoring thousands of
    #: candidates round after round counts each once, and a wide table's pool cannot fill the memory.
    cache_cells = 1 << 24

    def __init__(self, codes: np.ndarray, domain: Domain):
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != len(domain):
            raise ValueError(f"codes of shape {codes.shape} do not match a domain of {len(domain)} attributes")
        if codes.size and (codes.min() < 0 or np.any(codes.max(axis=0) >= np.array(domain.shape))):
            raise ValueError("codes fall outside the domain")
        self.codes = codes.astype(code_dtype(domain.shape), copy=False)
        self.domain = domain
        self._cache: dict[Clique, np.ndarray] = {}
        self._cached_cells = 0

    @property
    def n(self) -> int:
        return self.codes.shape[0]

    def column(self, attr: str) -> np.ndarray:
        return self.codes[:, self.domain.index(attr)]

    def project(self, clique: Iterable[str]) -> np.ndarray:
        """Counts over ``clique`` as an array of shape ``domain.project(clique).shape`` (cached)."""
        clique = tuple(clique)
        hit = self._cache.get(clique)
        if hit is None:
            idx = [self.domain.index(a) for a in clique]
            hit = count(self.codes, self.domain.project(clique).shape, cols=idx)
            if self._cached_cells + hit.size <= self.cache_cells:
                self._cache[clique] = hit
                self._cached_cells += hit.size
        return hit


@dataclass
class Measurement:
    """A noisy marginal: counts over ``clique`` (shape of the clique's domain) with noise of standard
    deviation at most ``sigma`` (0 for an exact, non-private measurement).

    Examples
    --------
    >>> Measurement(("a",), np.array([10.0, 12.0]), 1.5).clique
    ('a',)
    """

    clique: Clique
    noisy: np.ndarray
    sigma: float
    meta: dict = field(default_factory=dict)
    #: The form of :meth:`to_state`'s output (see :func:`synthzoo.core.statecheck.check_state`).
    STATE_SPEC: ClassVar[dict] = {"clique": [TEXT], "noisy": ARRAY, "shape": [INTEGER], "sigma": NUMBER,
                                  "meta": ("map", SCALAR)}

    def __post_init__(self):
        self.clique = tuple(self.clique)
        self.noisy = np.asarray(self.noisy, dtype=float)

    def to_state(self) -> dict:
        return {"clique": list(self.clique), "noisy": self.noisy.tolist(), "shape": list(self.noisy.shape),
                "sigma": self.sigma, "meta": self.meta}

    @classmethod
    def from_state(cls, d: dict) -> "Measurement":
        return cls(tuple(d["clique"]), np.asarray(d["noisy"], dtype=float).reshape(d["shape"]), float(d["sigma"]),
                   d.get("meta", {}))
