"""Pure metrics, apart from anything that calls an LLM: rater agreement (AMADEUS Table 2, CharacterCraft Table 6),
RAGEval's retrieval metrics (recall, EIR), its key-point generation metrics and the personality type scores
(AMADEUS Tables 4-5), and intervals, paired tests and sample sizes for any of them."""

from rpa_lib.evaluation.metrics.agreement import (
    KendallTau,
    LikertSummary,
    cronbach_alpha,
    feldt_interval,
    kendall_tau,
    krippendorff_alpha,
    likert_summary,
)
from rpa_lib.evaluation.metrics.charactercraft import table6_average
from rpa_lib.evaluation.metrics.intervals import (
    Interval,
    clopper_pearson,
    cluster_bootstrap,
    holm,
    mcnemar_exact,
    mde_paired_binary,
    mde_paired_continuous,
    n_paired_binary,
    n_paired_continuous,
    paired_permutation_test,
    sign_test,
    smallest_exact_p,
    two_proportion_test,
    wilcoxon_signed_rank,
)
from rpa_lib.evaluation.metrics.keypoints import (
    KeypointAverage,
    KeypointScores,
    average_keypoint_scores,
    keypoint_scores,
)
from rpa_lib.evaluation.metrics.retrieval import eir, evidence_recall, split_sentences, within_budget
from rpa_lib.evaluation.metrics.types import type_scores

__all__ = [
    "Interval", "KendallTau", "KeypointAverage", "KeypointScores", "LikertSummary", "average_keypoint_scores",
    "cronbach_alpha", "eir", "evidence_recall", "feldt_interval", "kendall_tau", "keypoint_scores",
    "krippendorff_alpha", "likert_summary", "split_sentences", "table6_average", "type_scores", "within_budget",
    "clopper_pearson", "cluster_bootstrap", "holm", "mcnemar_exact", "mde_paired_binary", "mde_paired_continuous",
    "n_paired_binary", "n_paired_continuous", "paired_permutation_test", "sign_test", "smallest_exact_p",
    "two_proportion_test", "wilcoxon_signed_rank",
]
