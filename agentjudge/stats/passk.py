"""pass^k and pass@k with the unbiased estimators of §8 (τ-bench).

For a task tried n times with c successes: pass^k = E[C(c,k)/C(n,k)] (all k sampled trials succeed) and
pass@k = 1 − E[C(n−c,k)/C(n,k)] (at least one does). Unlike p̂^k these are unbiased for every k ≤ n.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import comb


def _mean(values: np.ndarray, w: np.ndarray | None) -> float:
    return float(np.mean(values)) if w is None else float(np.sum(w * values) / np.sum(w))


def pass_hat_k(n: np.ndarray, c: np.ndarray, k: int, w: np.ndarray | None = None) -> float:
    """Mean over tasks with n ≥ k of C(c,k)/C(n,k) (weighted by ``w``, a sampled run's design weights);
    NaN when no task has k trials."""
    n = np.asarray(n)
    c = np.asarray(c)
    use = n >= k
    if not use.any():
        return float("nan")
    ratio = comb(c[use], k, exact=False) / comb(n[use], k, exact=False)
    return _mean(ratio, None if w is None else np.asarray(w)[use])


def pass_at_k(n: np.ndarray, c: np.ndarray, k: int, w: np.ndarray | None = None) -> float:
    """1 − mean over tasks with n ≥ k of C(n−c,k)/C(n,k) (weighted by ``w``); NaN when no task has k
    trials."""
    n = np.asarray(n)
    c = np.asarray(c)
    use = n >= k
    if not use.any():
        return float("nan")
    ratio = comb(n[use] - c[use], k, exact=False) / comb(n[use], k, exact=False)
    return 1.0 - _mean(ratio, None if w is None else np.asarray(w)[use])


def success_counts(
    df: pd.DataFrame, task_cols: Sequence[str], success_col: str, weight: str | None = None
) -> pd.DataFrame:
    """Per task: n trials and c successes from one row per (task, trial) with a boolean success column;
    with ``weight``, the task's weight (its rows' first) as column ``w`` (``passk_curve`` then weighs)."""
    g = df.groupby(list(task_cols), observed=True, dropna=False)
    cols = {"n": g[success_col].size(), "c": g[success_col].sum().astype(int)}
    if weight is not None:
        cols["w"] = g[weight].first()
    return pd.DataFrame(cols).reset_index()


def passk_curve(counts: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """pass^k and pass@k for k = 1..max n per ``by`` group (columns *by, k, pass_hat_k, pass_at_k, tasks)."""
    rows = []
    groups = counts.groupby(list(by), observed=True) if by else [((), counts)]
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        n = part["n"].to_numpy()
        c = part["c"].to_numpy()
        w = part["w"].to_numpy(dtype=float) if "w" in part.columns else None
        for k in range(1, int(n.max()) + 1):
            rows.append(
                {
                    **dict(zip(by, key, strict=True)),
                    "k": k,
                    "pass_hat_k": pass_hat_k(n, c, k, w),
                    "pass_at_k": pass_at_k(n, c, k, w),
                    "tasks": int((n >= k).sum()),
                }
            )
    return pd.DataFrame(rows)
