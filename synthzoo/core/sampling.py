"""Sampling helpers the synthesis models share (post-processing: they draw from the user's
generator, never from the privacy ledger's noise source)."""

from __future__ import annotations

import numpy as np


def allocate(p, n: int) -> np.ndarray:
    """Integer counts summing to ``n`` in proportion to ``p`` (largest-remainder rounding; negative
    weights count as 0, all-zero weights as uniform)."""
    p = np.clip(np.asarray(p, dtype=float), 0.0, None)
    tot = p.sum()
    p = np.full(p.size, 1.0 / p.size) if tot <= 0 else p / tot
    raw = p * n
    base = np.floor(raw).astype(np.int64)
    short = n - int(base.sum())
    if short > 0:
        base[np.argsort(-(raw - base), kind="stable")[:short]] += 1
    return base


def cycle_rows(m: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices into ``m`` synthetic rows: every row ``n // m`` times, a random subset without
    replacement for the rest, shuffled -- so ``n`` records keep the set's marginals as closely as
    ``n`` allows."""
    idx = np.concatenate([np.tile(np.arange(m), n // m), rng.choice(m, size=n % m, replace=False)])
    return rng.permutation(idx)


def inverse_cdf(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``probs`` (rows of unnormalised weights) from the uniforms
    ``u`` (one per row): the code whose cumulative weight first exceeds ``u`` times the row's mass."""
    cdf = np.cumsum(probs, axis=1)
    return np.minimum((cdf < u[:, None] * cdf[:, -1:]).sum(axis=1), probs.shape[1] - 1)


def softmax_blocks(logits: np.ndarray, shape) -> list[np.ndarray]:
    """Per-attribute softmax (float64) of flat logits laid out attribute after attribute."""
    out, off = [], 0
    for k in shape:
        z = logits[:, off:off + k].astype(np.float64)
        z = np.exp(z - z.max(axis=1, keepdims=True))
        out.append(z / z.sum(axis=1, keepdims=True))
        off += k
    return out
