"""Noisy measurements as models consume them: input checks, the record count they imply, and
duplicate measurements of one clique merged.  Post-processing only: nothing here costs budget."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .domain import Domain, Measurement
from .errors import ConfigError


def estimate_total(measurements, floor: float = 1.0) -> float:
    """The number of records the noisy ``measurements`` imply: the minimum-variance (inverse-variance
    weighted) mean of their sums -- a marginal of ``c`` cells with noise sigma has a sum of variance
    ``c sigma^2`` -- as ``mbi``'s ``minimum_variance_unbiased_total``; exact measurements (sigma 0, a
    non-private run) take all the weight.  At least ``floor``.  Post-processing: costs no budget."""
    sums = np.array([float(np.sum(m.noisy)) for m in measurements])
    if sums.size == 0:
        raise ValueError("no measurement to estimate the number of records from")
    var = np.array([m.noisy.size * float(m.sigma) ** 2 for m in measurements])
    exact = var == 0
    est = float(np.mean(sums[exact])) if exact.any() else float(np.dot(1.0 / var, sums) / np.sum(1.0 / var))
    return max(floor, est)


def total_sigma(measurements) -> float | None:
    """The standard deviation of :func:`estimate_total`'s estimate (before its floor): 0 when a
    measurement is exact, None without measurements."""
    var = np.array([np.size(m.noisy) * float(m.sigma) ** 2 for m in measurements])
    if var.size == 0:
        return None
    return 0.0 if (var == 0).any() else float(np.sum(1.0 / var) ** -0.5)


def check_measurements(who: str, domain: Domain, measurements) -> list[Measurement]:
    """Validate a model's ``fit`` input; the :class:`ConfigError` names the model and the clique."""
    if not isinstance(domain, Domain):
        raise ConfigError(f"{who}.fit needs a Domain, got {type(domain).__name__}")
    measurements = list(measurements)
    if not measurements:
        raise ConfigError(f"{who}.fit needs at least one measurement")
    for m in measurements:
        if not isinstance(m, Measurement):
            raise ConfigError(f"{who}.fit: expected Measurement objects, got {type(m).__name__}")
        bad = [a for a in m.clique if a not in domain]
        if bad or len(set(m.clique)) != len(m.clique):
            raise ConfigError(f"{who}.fit: measurement over {m.clique} names attributes not in the domain "
                              f"(or twice): {bad}")
        if m.noisy.shape != domain.project(m.clique).shape:
            raise ConfigError(f"{who}.fit: measurement over {m.clique} has shape {m.noisy.shape}, expected "
                              f"{domain.project(m.clique).shape}")
        if not (np.all(np.isfinite(m.noisy)) and math.isfinite(m.sigma) and m.sigma >= 0):
            raise ConfigError(f"{who}.fit: measurement over {m.clique} has non-finite values or a bad sigma")
    return measurements


def combine_duplicates(domain: Domain, measurements: Sequence[Measurement]) -> list[tuple[tuple, np.ndarray, float]]:
    """One (clique, counts, sigma) per distinct attribute set: repeated measurements of the same set
    (in any attribute order) are merged by inverse-variance weighting. Cliques come back in domain order."""
    groups: dict[tuple, list[tuple[np.ndarray, float]]] = {}
    for m in measurements:
        missing = [a for a in m.clique if a not in domain]
        if missing:
            raise ValueError(f"measurement over {m.clique} names attributes {missing} that are not in the domain")
        if len(set(m.clique)) != len(m.clique):
            raise ValueError(f"measurement clique {m.clique} repeats an attribute")
        canon = tuple(sorted(m.clique, key=domain.index))
        expect = domain.project(m.clique).shape
        noisy = np.asarray(m.noisy, dtype=float)
        if noisy.shape != expect:
            if noisy.size != int(np.prod(expect, dtype=np.int64)):
                raise ValueError(f"measurement over {m.clique} has shape {noisy.shape}, the domain says {expect}")
            noisy = noisy.reshape(expect)
        if not (np.isfinite(m.sigma) and m.sigma >= 0):
            raise ValueError(f"measurement over {m.clique} has an invalid noise sigma {m.sigma!r}")
        axes = [m.clique.index(a) for a in canon]
        groups.setdefault(canon, []).append((np.transpose(noisy, axes), float(m.sigma)))
    out = []
    for clique, items in groups.items():
        values = np.stack([v for v, _ in items])
        sig = np.array([s for _, s in items])
        w = inverse_variance_weights(sig ** 2)
        merged = np.tensordot(w, values, axes=1)
        var = 0.0 if np.any(sig == 0) else 1.0 / np.sum(1.0 / sig ** 2)
        out.append((clique, merged, math.sqrt(var)))
    return out


def inverse_variance_weights(var: np.ndarray) -> np.ndarray:
    """Normalised inverse-variance weights; exact (zero-variance) inputs take all the weight."""
    var = np.asarray(var, dtype=float)
    exact = var == 0
    w = exact.astype(float) if exact.any() else 1.0 / var
    return w / w.sum()


def normalised_targets(who: str, domain: Domain, measurements: list[Measurement]):
    """``(targets, total)``: one ``(clique, normalised noisy counts, sigma)`` per distinct clique
    (duplicates merged by inverse variance) and the estimated number of records.

    The total is the inverse-variance weighted mean of the measurements' sums (a marginal of
    ``c`` cells sums noise of variance ``c * sigma^2``); exact measurements take all the weight.
    """
    try:
        merged = combine_duplicates(domain, measurements)
    except ValueError as e:
        raise ConfigError(f"{who}: {e}") from None
    total = estimate_total([Measurement(c, v, s) for c, v, s in merged])
    return [(c, v / total, s) for c, v, s in merged], total
