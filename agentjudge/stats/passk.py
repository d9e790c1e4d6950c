"""pass^k and pass@k with the unbiased estimators of §8 (τ-bench).

For a task tried n times with c successes: pass^k = E[C(c,k)/C(n,k)] (all k sampled trials succeed) and
pass@k = 1 − E[C(n−c,k)/C(n,k)] (at least one does). Unlike p̂^k these are unbiased for every k ≤ n.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import comb


def pass_hat_k(n: np.ndarray, c: np.ndarray, k: int) -> float:
    """Mean over tasks with n ≥ k of C(c,k)/C(n,k); NaN when no task has k trials."""
    n = np.asarray(n)
    c = np.asarray(c)
    use = n >= k
    if not use.any():
        return float("nan")
    return float(np.mean(comb(c[use], k, exact=False) / comb(n[use], k, exact=False)))


def pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> float:
    """1 − mean over tasks with n ≥ k of C(n−c,k)/C(n,k); NaN when no task has k trials."""
    n = np.asarray(n)
    c = np.asarray(c)
    use = n >= k
    if not use.any():
        return float("nan")
    return float(1.0 - np.mean(comb(n[use] - c[use], k, exact=False) / comb(n[use], k, exact=False)))


def success_counts(df: pd.DataFrame, task_cols: Sequence[str], success_col: str) -> pd.DataFrame:
    """Per task: n trials and c successes from one row per (task, trial) with a boolean success column."""
    g = df.groupby(list(task_cols), observed=True, dropna=False)[success_col]
    return pd.DataFrame({"n": g.size(), "c": g.sum().astype(int)}).reset_index()


def passk_curve(counts: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """pass^k and pass@k for k = 1..max n per ``by`` group (columns *by, k, pass_hat_k, pass_at_k, tasks)."""
    rows = []
    groups = counts.groupby(list(by), observed=True) if by else [((), counts)]
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        n = part["n"].to_numpy()
        c = part["c"].to_numpy()
        for k in range(1, int(n.max()) + 1):
            rows.append(
                {
                    **dict(zip(by, key, strict=True)),
                    "k": k,
                    "pass_hat_k": pass_hat_k(n, c, k),
                    "pass_at_k": pass_at_k(n, c, k),
                    "tasks": int((n >= k).sum()),
                }
            )
    return pd.DataFrame(rows)
