"""Inter-judge agreement (§8): raw agreement, Cohen's κ, κ vs capability-tier gap, soft jury.

Judges are compared only on identical coordinates (same record, generator output, condition, prompt
variant, temperature, trial, metric, scoring mode): the verdict table is pivoted to one column per judge.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from agentjudge.stats.align import snap
from agentjudge.stats.codes import codes_for, group_codes, values_of

#: columns that identify one verdict apart from the judge who gave it
COORDS: tuple[str, ...] = (
    "record_id",
    "generator",
    "generator_trial",
    "condition",
    "prompt_format",
    "cot",
    "default_mode",
    "temperature",
    "trial",
    "metric",
    "scoring_mode",
)


def cohen_kappa(
    a: np.ndarray,
    b: np.ndarray,
    n_categories: int = 3,
    weights: str | None = None,
    sample_weight: np.ndarray | None = None,
) -> float:
    """Cohen's κ of two integer-coded raters (codes 0..k−1); ``weights='linear'`` for linear-weighted κ;
    ``sample_weight``: each pair's weight in the confusion matrix (a sampled run's design weights).

    Returns NaN when κ is undefined (no pairs, or both raters constant on the same category).
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if len(a) == 0:
        return float("nan")
    k = n_categories
    conf = np.bincount(a * k + b, weights=sample_weight, minlength=k * k).reshape(k, k).astype(float)
    return float(kappa_from_confusion(conf, weights))


def kappa_from_confusion(conf: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Cohen's κ of (..., k, k) confusion matrices (rows rater a, columns rater b), vectorised over the
    leading axes: a cluster bootstrap's B resampled matrices give B κ's in one call. NaN where undefined
    (an empty matrix, or both raters constant on the same category)."""
    conf = np.asarray(conf, dtype=float)
    k = conf.shape[-1]
    if weights is None:
        w = 1.0 - np.eye(k)
    elif weights == "linear":
        grid = np.arange(k)
        w = np.abs(grid[:, None] - grid[None, :]) / (k - 1)
    else:
        raise ValueError(f"unknown weights {weights!r}")
    n = conf.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = conf.sum(axis=-1)[..., :, None] * conf.sum(axis=-2)[..., None, :] / n[..., None, None]
        denom = (w * expected).sum(axis=(-2, -1))
        kappa = 1.0 - (w * conf).sum(axis=(-2, -1)) / denom
    return np.asarray(np.where((n > 0) & (denom != 0), kappa, np.nan))


def verdict_matrix(
    df: pd.DataFrame, judges: Sequence[str] | None = None, value: str = "verdict"
) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    """Pivot verdicts (or another column, ``value``) to (coordinates × judges); NaN where a judge has no
    verdict at a coordinate.

    Returns (coordinate keys, matrix, judge order). Uses integer codes, not ``pivot_table``, to stay fast at
    paper scale.
    """
    coords = [c for c in COORDS if c in df.columns]
    codes, _ = group_codes(df, coords)
    order = list(judges) if judges is not None else values_of(df["judge"])
    jcode = codes_for(df["judge"], order)
    keep = jcode >= 0
    n_coord = int(codes.max()) + 1 if len(codes) else 0
    mat = np.full((n_coord, len(order)), np.nan)
    mat[codes[keep], jcode[keep]] = df[value].to_numpy(dtype=float, na_value=np.nan)[keep]
    first = np.unique(codes, return_index=True)[1]
    keys = df[coords + ["base_id", "reference"]].iloc[first].reset_index(drop=True)
    return keys, mat, order


def pairwise_agreement(
    df: pd.DataFrame,
    by: Sequence[str] = ("condition",),
    weights: str | None = None,
    design: str | None = None,
) -> pd.DataFrame:
    """Raw agreement and κ (three categories, verdicts snapped) for every judge pair per ``by`` group.

    ``design``: the column of a sampled run's design weights (``stats.design``). Two judges share the
    coordinates of the shorter of their two prefixes, whose weight is the larger of their two rows'; each
    shared coordinate counts with it, so a pair's figure pooled over cells weighs them as the full grid."""
    rows = []
    groups = df.groupby(list(by), observed=True, dropna=False) if by else [((), df)]
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        _, mat, order = verdict_matrix(part)
        wmat = verdict_matrix(part, order, design)[1] if design is not None else None
        cat = snap(mat) * 2  # 0, 1, 2 (NaN kept)
        for i, j in itertools.combinations(range(len(order)), 2):
            both = ~np.isnan(cat[:, i]) & ~np.isnan(cat[:, j])
            a = cat[both, i].astype(np.int64)
            b = cat[both, j].astype(np.int64)
            w = None if wmat is None else np.maximum(wmat[both, i], wmat[both, j])
            if w is None:
                agreement = float((a == b).mean()) if len(a) else np.nan
            else:
                agreement = float((w * (a == b)).sum() / w.sum()) if len(a) and w.sum() > 0 else np.nan
            rows.append(
                {
                    **dict(zip(by, key, strict=True)),
                    "judge_a": order[i],
                    "judge_b": order[j],
                    "n_pairs": int(both.sum()),
                    "agreement": agreement,
                    "kappa": cohen_kappa(a, b, weights=weights, sample_weight=w),
                }
            )
    return pd.DataFrame(rows)


def kappa_tier_correlation(
    pairs: pd.DataFrame, tiers: dict[str, float]
) -> tuple[pd.DataFrame, float, float, int]:
    """Attach |tier_a − tier_b| to each pair and return (pairs, Spearman ρ, p-value, n pairs used).

    ρ is NaN with fewer than 3 usable pairs or when gap or κ is constant.
    """
    out = pairs.copy()
    out["tier_gap"] = [
        abs(tiers[a] - tiers[b]) if a in tiers and b in tiers else np.nan
        for a, b in zip(out["judge_a"], out["judge_b"], strict=True)
    ]
    use = out.dropna(subset=["tier_gap", "kappa"])
    if len(use) < 3 or use["tier_gap"].nunique() < 2 or use["kappa"].nunique() < 2:
        return out, float("nan"), float("nan"), len(use)
    res = sps.spearmanr(use["tier_gap"], use["kappa"])
    return out, float(res.statistic), float(res.pvalue), len(use)


def soft_jury(df: pd.DataFrame, judges: Sequence[str], name: str = "jury") -> pd.DataFrame:
    """Mean verdict of ``judges`` per coordinate, as rows of a new judge ``name`` (scored like a judge).

    A coordinate where any juror failed gets a null jury verdict (counted as a failure, never filled).
    """
    keys, mat, _ = verdict_matrix(df[codes_for(df["judge"], list(judges)) >= 0], judges)
    verdict = mat.mean(axis=1)  # NaN if any juror is NaN
    out = keys.copy()
    out["judge"] = name
    out["verdict"] = verdict
    if "domain" in df.columns:
        extra = df[["record_id", "domain", "topology", "difficulty"]].drop_duplicates("record_id")
        out = out.merge(extra, on="record_id", how="left")
    return out


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman ρ (NaN when undefined)."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if len(x) < 2 or len(np.unique(x)) < 2 or len(np.unique(y)) < 2:
        return float("nan")
    return float(sps.spearmanr(x, y).statistic)
