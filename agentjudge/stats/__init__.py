"""§8 statistics: pure, seeded functions over DataFrames (alignment, cluster bootstrap, κ, jury,
robustness, pass^k) and §11's estimates against people from few labels (direct, PPI++ with inverse-
inclusion weights, label budget, annotator κ). Analyses in ``analysis/`` compose these; nothing here reads
files."""

from agentjudge.stats.agreement import (
    COORDS,
    cohen_kappa,
    kappa_from_confusion,
    kappa_tier_correlation,
    pairwise_agreement,
    soft_jury,
    spearman,
    verdict_matrix,
)
from agentjudge.stats.align import (
    add_alignment_columns,
    alignment_table,
    binary_collapse,
    mu,
    snap,
    weighted_mu,
)
from agentjudge.stats.bootstrap import (
    ClusterBootstrap,
    GroupDraws,
    diff_table,
    draw_indices,
    multiplicities,
    paired_difference,
    percentile_ci,
    slow_ratio_reference,
)
from agentjudge.stats.passk import pass_at_k, pass_hat_k, passk_curve, success_counts
from agentjudge.stats.people import ANNOTATOR_COLUMNS, PPI_COLUMNS, annotator_agreement, ppi_table
from agentjudge.stats.ppi import (
    LabelBudget,
    PPIEstimate,
    cluster_sums,
    label_budget,
    ppi_from_sums,
    ppi_mean,
    stratum_inclusion,
)
from agentjudge.stats.robust import WEIGHTINGS, binary_collapse_table, topology_balanced, weighting_rankings

__all__ = [
    "ANNOTATOR_COLUMNS",
    "COORDS",
    "PPI_COLUMNS",
    "WEIGHTINGS",
    "ClusterBootstrap",
    "GroupDraws",
    "LabelBudget",
    "PPIEstimate",
    "add_alignment_columns",
    "alignment_table",
    "annotator_agreement",
    "binary_collapse",
    "binary_collapse_table",
    "cluster_sums",
    "cohen_kappa",
    "diff_table",
    "draw_indices",
    "kappa_from_confusion",
    "kappa_tier_correlation",
    "label_budget",
    "multiplicities",
    "mu",
    "paired_difference",
    "pairwise_agreement",
    "pass_at_k",
    "pass_hat_k",
    "passk_curve",
    "percentile_ci",
    "ppi_from_sums",
    "ppi_mean",
    "ppi_table",
    "slow_ratio_reference",
    "snap",
    "soft_jury",
    "spearman",
    "stratum_inclusion",
    "success_counts",
    "topology_balanced",
    "verdict_matrix",
    "weighted_mu",
    "weighting_rankings",
]
