"""Alignment of the same grid run twice with one setting changed, as a paired difference with a CI.

Why a separate comparison: settings such as ``judge_tool_rendering`` are one value per run (they change
how every prompt is rendered, not a coordinate of the grid), so their ablation is two runs of one pipeline.
The rows of the two ``judgments.parquet`` files are paired on their full coordinates; the interval is a
bootstrap over base scenarios (the clusters every table of the report resamples), so the correlated rows
of one scenario move together; its interval is the report's (``interval``: "expanded" by default, the plain
"percentile" interval on request), read with the same tails as ``ClusterBootstrap`` would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from agentjudge.stats.align import mu
from agentjudge.stats.bootstrap import ALPHA, draw_indices, expanded_alpha, multiplicities, percentile_ci

PAIR_COLUMNS = (
    "record_id", "base_id", "generator", "generator_trial", "judge", "condition", "prompt_format", "cot",
    "default_mode", "temperature", "trial", "metric", "scoring_mode",
)  # fmt: skip


@dataclass(frozen=True)
class PairedDelta:
    """Alignment of ``b`` minus that of ``a`` over the rows both runs judged (a verdict in both)."""

    mu_a: float
    mu_b: float
    delta: float
    ci_lo: float
    ci_hi: float
    pairs: int  # rows with a verdict in both runs
    changed: int  # of those, rows whose verdict differs between the runs
    unpaired: int  # rows with a verdict in only one of the runs (left out, counted here)


def paired_alignment_delta(
    a: pd.DataFrame,
    b: pd.DataFrame,
    *,
    resamples: int = 1000,
    seed: int = 0,
    scoring_mode: str | None = None,
    interval: str = "expanded",
) -> PairedDelta:
    """Paired alignment difference b − a of two judgments tables of the same grid; ``interval`` as
    ``--ci``: "expanded" (default) or "percentile"."""
    if interval not in ("expanded", "percentile"):
        raise ValueError(f"interval must be 'expanded' or 'percentile', not {interval!r}")
    if scoring_mode is not None:
        a, b = a[a.scoring_mode == scoring_mode], b[b.scoring_mode == scoring_mode]
    keys = list(PAIR_COLUMNS)
    left = a[[*keys, "reference", "verdict"]].copy()
    right = b[[*keys, "verdict"]].copy()
    for frame in (left, right):  # NaN temperature (model default) must pair with NaN
        frame["temperature"] = frame["temperature"].fillna(-1.0)
    merged = left.merge(right, on=keys, how="outer", suffixes=("_a", "_b"), indicator=True)
    both = merged["verdict_a"].notna() & merged["verdict_b"].notna()
    either = merged["verdict_a"].notna() | merged["verdict_b"].notna()
    rows = merged[both]
    if rows.empty:
        raise ValueError("the two runs have no judged row in common: not the same grid")
    mu_a = mu(rows["reference"], rows["verdict_a"])
    mu_b = mu(rows["reference"], rows["verdict_b"])
    diff = mu_b - mu_a
    clusters, codes = np.unique(rows["base_id"].to_numpy(), return_inverse=True)
    sums = np.bincount(codes, weights=diff, minlength=len(clusters))
    counts = np.bincount(codes, minlength=len(clusters)).astype(float)
    weights = multiplicities(draw_indices(len(clusters), resamples, seed), len(clusters))
    draws = (weights @ sums) / (weights @ counts)
    alpha = expanded_alpha(len(clusters)) if interval == "expanded" else ALPHA
    lo, hi = percentile_ci(draws[:, None], alpha)
    return PairedDelta(
        mu_a=float(mu_a.mean()),
        mu_b=float(mu_b.mean()),
        delta=float(diff.mean()),
        ci_lo=float(lo[0]),
        ci_hi=float(hi[0]),
        pairs=int(len(rows)),
        changed=int((rows["verdict_a"] != rows["verdict_b"]).sum()),
        unpaired=int((either & ~both).sum()),
    )
