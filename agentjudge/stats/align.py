"""Alignment (§8): μ = 1 − |reference − verdict|, averaged over records and metrics.

Everything here is a pure function over a long-form judgments DataFrame (one row per metric verdict).
Rows whose verdict is null (parse or transport failure) are excluded from every mean and counted
instead, so a figure can always be shown beside its failure count.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from agentjudge.stats.codes import codes_for, values_of

LEVELS = np.array([0.0, 0.5, 1.0])


def snap(values: np.ndarray | pd.Series) -> np.ndarray:
    """Nearest verdict level in {0, 0.5, 1}; exact ties (0.25, 0.75) go up, NaN stays NaN.

    Why: the reference is continuous but verdicts are three-level; the snapped reference is what a
    perfect three-level judge would answer, which defines the ceiling of §6.
    """
    arr = np.asarray(values, dtype=float)
    return np.asarray(np.floor(np.clip(arr, 0.0, 1.0) * 2.0 + 0.5) / 2.0, dtype=float)


def mu(reference: np.ndarray | pd.Series, verdict: np.ndarray | pd.Series) -> np.ndarray:
    """Per-row alignment 1 − |p − ℓ|; NaN where the verdict failed."""
    return np.asarray(1.0 - np.abs(np.asarray(reference, dtype=float) - np.asarray(verdict, dtype=float)))


def add_alignment_columns(df: pd.DataFrame, inplace: bool = False) -> pd.DataFrame:
    """Return a copy (or ``df`` itself with ``inplace``: a paper grid's frame is ~10^6 rows) with ``mu``
    (NaN on failure), ``ok`` (verdict present) and ``mu_ceiling``.

    ``mu_ceiling`` is the alignment the snapped reference would get on the same row; it is NaN where the
    judge failed so that the ceiling is computed over exactly the rows the judge is scored on.
    """
    out = df if inplace else df.copy()
    ref = out["reference"].to_numpy(dtype=float)
    ver = out["verdict"].to_numpy(dtype=float, na_value=np.nan)
    ok = ~np.isnan(ver)
    out["ok"] = ok
    out["mu"] = mu(ref, ver)
    ceil = mu(ref, snap(ref))
    ceil[~ok] = np.nan
    out["mu_ceiling"] = ceil
    return out


def alignment_table(df: pd.DataFrame, by: Sequence[str], value: str = "mu") -> pd.DataFrame:
    """Point estimates per group: mean of ``value`` over non-failed rows, with failure counts.

    Columns: *by, align, n_verdicts (rows scored), n_failed (null verdicts), failure_rate.
    """
    if "ok" not in df.columns:
        df = add_alignment_columns(df)
    g = df.groupby(list(by), observed=True, sort=True, dropna=False)
    res = pd.DataFrame(
        {
            "align": g[value].mean(),
            "n_verdicts": g["ok"].sum().astype(int),
            "n_rows": g["ok"].size(),
        }
    )
    res["n_failed"] = res["n_rows"] - res["n_verdicts"]
    res["failure_rate"] = res["n_failed"] / res["n_rows"]
    return res.drop(columns="n_rows").reset_index()


def weighted_mu(df: pd.DataFrame, weights: dict[str, float]) -> np.ndarray:
    """Per-row weights for a metric weighting (e.g. seq×2): weight of the row's metric, 0 on failure.

    Alignment under a weighting is Σ w·μ / Σ w over rows, which equals the equal-weight headline when all
    weights are 1.
    """
    names = list(weights)
    codes = codes_for(df["metric"], names)
    if (codes < 0).any():
        missing = sorted(set(values_of(df["metric"])) - set(names))
        raise ValueError(f"weighting lacks metrics {missing}")
    return np.asarray(np.array([float(weights[m]) for m in names])[codes], dtype=float)


def binary_collapse(reference: np.ndarray | pd.Series, verdict: np.ndarray | pd.Series) -> np.ndarray:
    """§8 binary collapse: a 0.5 verdict becomes 0 when the reference is below 0.5, else 1."""
    ref = np.asarray(reference, dtype=float)
    ver = np.asarray(verdict, dtype=float).copy()
    half = ver == 0.5
    ver[half] = np.where(ref[half] < 0.5, 0.0, 1.0)
    return ver
