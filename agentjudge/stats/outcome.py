"""Outcome statistics (issue 14): how well a score or verdict predicts ``state_match``, with bootstrap CIs.

One histogram per (group, cluster) of (score level, outcome) counts carries everything: accuracy and
Cohen's κ of the binary call "accomplished" (score > 0.5: a three-level verdict of 1.0, a continuous one above
the middle) and the AUC of the score itself (ties count one half), so each bootstrap draw is a weighted sum of
those histograms -- the same resampled scenarios as every other figure of the report (``ClusterBootstrap``).
Scores are put on a 0.01 grid for the AUC (three-level verdicts are unchanged; continuous ones are rounded),
unless the caller asks for the scores' own values (``exact``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from agentjudge.stats.bootstrap import ClusterBootstrap, percentile_ci
from agentjudge.stats.codes import group_codes

LEVELS = 101  # the 0.01 grid


def _stats(hist: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(accuracy, κ, AUC, n) from histograms (..., L, 2) of (score level, outcome) counts over ascending
    levels; ``hi`` marks the levels called "accomplished"."""
    neg, pos = hist[..., 0], hist[..., 1]
    n = neg.sum(-1) + pos.sum(-1)
    tp, fp = pos[..., hi].sum(-1), neg[..., hi].sum(-1)
    fn, tn = pos[..., ~hi].sum(-1), neg[..., ~hi].sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = (tp + tn) / n
        expected = ((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp)) / (n * n)
        kappa = np.where(expected < 1, (acc - expected) / (1 - expected), np.nan)
        below = np.cumsum(neg, axis=-1) - neg  # negatives strictly below each level
        auc = (pos * (below + 0.5 * neg)).sum(-1) / (pos.sum(-1) * neg.sum(-1))
    return acc, kappa, auc, n


def outcome_agreement(
    df: pd.DataFrame,
    boot: ClusterBootstrap,
    by: Sequence[str],
    score: str,
    outcome: str = "outcome",
    exact: bool = False,
) -> pd.DataFrame:
    """Per ``by`` group: accuracy, κ and AUC of ``score`` (in [0, 1]) against the boolean ``outcome``,
    each with its 95 % cluster-bootstrap CI (the interval ``boot`` was built for: ``boot.alpha``, so
    ``--ci`` holds here as in every other table); rows whose score or outcome is missing are left out and
    counted (``n_missing``). Columns: *by, n, n_missing, positives, accuracy, kappa, auc (+ _lo/_hi each).
    ``exact``: the scores' own distinct values are the levels instead of the 0.01 grid (no two scores
    closer than 0.01 tie; the histograms have as many levels as distinct scores: for a few hundred
    per-episode scores, as τ-bench's summary has)."""
    s = pd.to_numeric(df[score], errors="coerce").to_numpy(float)
    y = df[outcome].astype("boolean")
    keep = ~np.isnan(s) & y.notna().to_numpy()
    gcodes, keys = group_codes(df, by)
    n_groups, n_clusters = len(keys), len(boot.clusters)
    ccodes = boot.cluster_codes(df["base_id"])
    clipped = np.clip(s[keep], 0.0, 1.0)
    grid = clipped if exact else np.rint(clipped * (LEVELS - 1)).astype(np.int64)
    present, level = np.unique(grid, return_inverse=True)  # only the levels used (3 for three-level verdicts)
    middle = 0.5 if exact else LEVELS // 2
    n_levels, hi = max(len(present), 1), present > middle  # "accomplished": score > 0.5
    truth = y.to_numpy(dtype=bool, na_value=False)[keep].astype(np.int64)
    flat = ((gcodes[keep] * n_clusters + ccodes[keep]) * n_levels + level) * 2 + truth
    size = n_groups * n_clusters * n_levels * 2
    # a sampled run's design weights (the bootstrap's weight column) weigh each row in the histograms
    design = boot.weight_col is not None and boot.weight_col in df.columns
    w = df[str(boot.weight_col)].to_numpy(dtype=float)[keep] if design else None
    hist = np.bincount(flat, weights=w, minlength=size).reshape(n_groups, n_clusters, -1).astype(float)
    total = hist.sum(axis=1).reshape(n_groups, n_levels, 2)
    drawn = np.einsum("bc,gcx->bgx", boot.weights, hist).reshape(boot.resamples, n_groups, n_levels, 2)
    if not len(present):
        hi = np.zeros(1, dtype=bool)
    out = keys.copy()
    est = _stats(total, hi)
    draws = _stats(drawn, hi)
    # the counts stay counts of rows when the histograms are weighted
    out["n"] = np.bincount(gcodes[keep], minlength=n_groups) if design else est[3].astype(int)
    out["n_missing"] = np.bincount(gcodes, minlength=n_groups) - out["n"].to_numpy()
    positives = (
        np.bincount(gcodes[keep], weights=truth, minlength=n_groups) if design else total[..., 1].sum(-1)
    )
    out["positives"] = positives.astype(int)
    for name, e, d in zip(("accuracy", "kappa", "auc"), est[:3], draws[:3], strict=True):
        lo, hi = percentile_ci(d, boot.alpha)
        out[name], out[f"{name}_lo"], out[f"{name}_hi"] = e, lo, hi
    return out
