"""Data statistics that selectors release through a mechanism, each with its sensitivity, in one
place: pairwise dependency (InDif) and a model's L1 error on candidate marginals (the quality
scores of AIM, the refinement criteria of PrivMRF and RAP++'s selection scores).

These are the exact values; the selectors pass them to :mod:`synthzoo.core.privacy.mechanisms`,
which charges the budget and adds the noise.
"""

from __future__ import annotations

import itertools

import numpy as np

from .domain import EncodedData
from .errors import ConfigError

#: One added or removed record moves one InDif score by at most 4 (PrivSyn, Zhang et al. 2021, Lemma 2).
INDIF_SENSITIVITY = 4.0


def indif_scores(data: EncodedData) -> tuple[list[tuple[str, str]], np.ndarray]:
    """All attribute pairs (domain order) and their exact InDif scores on counts,
    ``sum_cells |M_ab - M_a x M_b / n|`` (PrivSyn; ``2 n TVD(P_ab, P_a x P_b)``, PrivMRF's score)."""
    attrs = data.domain.attrs
    n = max(data.n, 1)
    pairs = list(itertools.combinations(attrs, 2))
    one = {a: data.project((a,)) for a in attrs}
    scores = np.empty(len(pairs))
    for i, (a, b) in enumerate(pairs):
        joint = data.project((a, b))
        scores[i] = np.abs(joint - np.outer(one[a], one[b]) / n).sum()
    return pairs, scores


def model_errors(cliques: list[tuple], data: EncodedData, model) -> np.ndarray:
    """``||M_r(D) - M_r(model)||_1`` in counts for every clique ``r``.

    The model's answers depend on noisy measurements only, so one added or removed record moves
    each error by at most 1 (one cell of ``M_r(D)`` by one count).  One clique at a time: memory
    stays at the largest candidate's table (within a selector's model-size cap), not the sum over
    all candidates (thousands on a wide table).
    """
    out = np.zeros(len(cliques))
    for i, c in enumerate(cliques):
        n_c = data.domain.size(c)
        e = np.asarray(model.project(c), dtype=float).ravel()
        if e.size != n_c:
            raise ConfigError(f"model {model.name!r}: project{tuple(c)} returned {e.size} cells, expected {n_c}")
        out[i] = np.abs(data.project(c).ravel() - e).sum()
    return out
