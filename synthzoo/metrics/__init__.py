"""Evaluation suite: fidelity, utility and privacy-risk metrics with calibrated baselines.

Every metric is callable alone (``real, synthetic, schema`` frames in, a number out);
:func:`evaluate` computes them together with the HALF / INDEPENDENT / SELF baselines and
:func:`write_html_report` / :func:`evaluate_files` produce the HTML report.
"""

from ._common import HoldoutWarning, OutOfSchemaWarning
from .association import association_difference, association_matrices
from .baselines import BASELINES, baseline_tables, half_split, independent_sample
from .distance import GowerSpace, gower_nearest
from .leaky import leaky_release, leaky_risk_table
from .marginal import query_answers_3way, query_error_3way, tvd_1way, tvd_2way, tvd_2way_matrix
from .mds import (BootstrapSynthesizer, CopySynthesizer, IndependentSynthesizer, LeakySynthesizer,
                  membership_disclosure, membership_disclosure_score)
from .ml import EVALUATORS, encode_features, ml_affinity, ml_efficiency, ml_scores
from .privacy import (dcr_risk, domias_auc, identical_match_share, inference_risk, linkability_risk,
                      normalised_risk, nndr_risk, privacy_scores, singling_out_risk)
from .evaluate import METRICS, evaluate
from .html import evaluate_files, write_html_report
from .wasserstein import wasserstein_fidelity, wasserstein_marginals
from .statistical import (ci_overlap, correlation_difference, dimensionwise_means, hellinger_distance, ks_test,
                          mutual_information_difference, pca_difference, pmse)
from .disclosure import attribute_disclosure, epsilon_identifiability, hitting_rate, mia_classifier, nnaa
from .mia import NO_BOX_ATTACKS, groundhog_attack, membership_attacks, roc_summary
from .ml import auroc_difference, ml_cross_validated
from .risk import (LEVELS, canaries, canary_exposure, converged_epochs, correlation_matrix, level_correlation,
                   risk_response)
from .evaluate import PRESETS

__all__ = [
    "HoldoutWarning", "OutOfSchemaWarning",
    "association_difference", "association_matrices", "BASELINES", "baseline_tables",
    "half_split", "independent_sample", "GowerSpace", "gower_nearest", "leaky_release", "leaky_risk_table",
    "query_answers_3way", "query_error_3way", "tvd_1way", "tvd_2way", "tvd_2way_matrix", "BootstrapSynthesizer",
    "CopySynthesizer", "IndependentSynthesizer", "LeakySynthesizer", "membership_disclosure",
    "membership_disclosure_score", "EVALUATORS", "encode_features", "ml_affinity", "ml_efficiency", "ml_scores",
    "dcr_risk", "domias_auc", "identical_match_share", "inference_risk", "linkability_risk", "normalised_risk",
    "nndr_risk", "privacy_scores", "singling_out_risk", "METRICS", "evaluate", "evaluate_files",
    "write_html_report", "wasserstein_fidelity", "wasserstein_marginals",
    "ci_overlap", "correlation_difference", "dimensionwise_means", "hellinger_distance", "ks_test",
    "mutual_information_difference", "pca_difference", "pmse", "attribute_disclosure", "epsilon_identifiability",
    "hitting_rate", "mia_classifier", "nnaa", "NO_BOX_ATTACKS", "groundhog_attack", "membership_attacks",
    "roc_summary", "auroc_difference", "ml_cross_validated", "LEVELS", "canaries", "canary_exposure",
    "converged_epochs", "correlation_matrix", "level_correlation", "risk_response", "PRESETS",
]
