"""Tuning before release (top layer): an Optuna tuner over any synthesizer preset.

``tuning.tune(preset, train, val, epsilon=..., delta=..., schema=..., n_trials=..., privacy=...)``
minimises Du & Li's fidelity + MLA + query-error objective and states in every result whether
the tuning is covered by the DP guarantee (``"accounted"``: random search with random stopping,
``"public"``) or not (``"non-private"``).  Search spaces are composed from each module's
``hyperparameter_space()``.  Modules: :mod:`tuning.tuner` (``tune``, ``TuneResult``),
:mod:`tuning.objective` (score terms, the accounted score's validation sample and sensitivity,
the per-record split), :mod:`tuning.accounting` (Papernot-Steinke budget, stopping coins),
:mod:`tuning.trials` (trial processes), :mod:`tuning.storage` (Optuna storage), :mod:`tuning.result`
(what a run releases), :mod:`tuning.space`.
"""

from .accounting import per_trial_rho, stop_coin, stop_hazard, stopping_event, tuning_epsilon
from .objective import (
                        accounted_score,
                        canonical_frame,
                        score_sensitivity,
                        score_terms,
                        split_records,
                        validation_sketch,
)
from .space import MODULE_CHOICES, pipeline_space, suggest_config
from .result import TuningAborted
from .tuner import MODES, NON_PRIVATE_WARNING, NOTHING_RELEASED, TuneResult, tune

__all__ = [
                        "MODES",
                        "MODULE_CHOICES",
                        "NON_PRIVATE_WARNING",
                        "NOTHING_RELEASED",
                        "TuneResult",
                        "TuningAborted",
                        "accounted_score",
                        "canonical_frame",
                        "per_trial_rho",
                        "pipeline_space",
                        "score_sensitivity",
                        "score_terms",
                        "split_records",
                        "stop_coin",
                        "stop_hazard",
                        "stopping_event",
                        "suggest_config",
                        "tune",
                        "tuning_epsilon",
                        "validation_sketch",
]
