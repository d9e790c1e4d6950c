"""§8 statistics: pure, seeded functions over DataFrames (alignment, cluster bootstrap, κ, jury,
robustness, pass^k). Analyses in ``analysis/`` compose these; nothing here reads files."""

from agentjudge.stats.agreement import (
    COORDS,
    cohen_kappa,
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
from agentjudge.stats.robust import WEIGHTINGS, binary_collapse_table, topology_balanced, weighting_rankings

__all__ = [
    "COORDS",
    "WEIGHTINGS",
    "ClusterBootstrap",
    "GroupDraws",
    "add_alignment_columns",
    "alignment_table",
    "binary_collapse",
    "binary_collapse_table",
    "cohen_kappa",
    "diff_table",
    "draw_indices",
    "kappa_tier_correlation",
    "multiplicities",
    "mu",
    "paired_difference",
    "pairwise_agreement",
    "pass_at_k",
    "pass_hat_k",
    "passk_curve",
    "percentile_ci",
    "slow_ratio_reference",
    "snap",
    "soft_jury",
    "spearman",
    "success_counts",
    "topology_balanced",
    "verdict_matrix",
    "weighted_mu",
    "weighting_rankings",
]
