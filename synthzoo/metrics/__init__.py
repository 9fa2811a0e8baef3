"""Evaluation suite: fidelity, utility and privacy-risk metrics with calibrated baselines.

Every metric is callable alone (``real, synthetic, schema`` frames in, a number out);
:func:`evaluate` computes them together with the HALF / INDEPENDENT / SELF baselines and
:func:`write_html_report` / :func:`evaluate_files` produce the HTML report.
"""

from ._common import OutOfSchemaWarning
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

__all__ = [
    "OutOfSchemaWarning", "association_difference", "association_matrices", "BASELINES", "baseline_tables",
    "half_split", "independent_sample", "GowerSpace", "gower_nearest", "leaky_release", "leaky_risk_table",
    "query_answers_3way", "query_error_3way", "tvd_1way", "tvd_2way", "tvd_2way_matrix", "BootstrapSynthesizer",
    "CopySynthesizer", "IndependentSynthesizer", "LeakySynthesizer", "membership_disclosure",
    "membership_disclosure_score", "EVALUATORS", "encode_features", "ml_affinity", "ml_efficiency", "ml_scores",
    "dcr_risk", "domias_auc", "identical_match_share", "inference_risk", "linkability_risk", "normalised_risk",
    "nndr_risk", "privacy_scores", "singling_out_risk", "METRICS", "evaluate", "evaluate_files",
    "write_html_report", "wasserstein_fidelity", "wasserstein_marginals",
]
