"""Robustness of judge rankings (§8): metric weightings, topology weighting, binary collapse.

A ranking is robust when it does not hinge on an arbitrary choice of the protocol; each function here
recomputes the judge ranking under one alternative choice and compares it with the equal-weight ranking.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentjudge.stats.agreement import spearman
from agentjudge.stats.align import binary_collapse, mu, weighted_mu

WEIGHTINGS: dict[str, dict[str, float]] = {
    "equal": {"tool": 1, "param": 1, "seq": 1, "cov": 1},
    "seq×2": {"tool": 1, "param": 1, "seq": 2, "cov": 1},
    "param×2": {"tool": 1, "param": 2, "seq": 1, "cov": 1},
    "cov×0.5": {"tool": 1, "param": 1, "seq": 1, "cov": 0.5},
    "seq×2+param×2": {"tool": 1, "param": 2, "seq": 2, "cov": 1},
    "tool×2": {"tool": 2, "param": 1, "seq": 1, "cov": 1},
}


def _row_weights(df: pd.DataFrame, design: str | None) -> np.ndarray | None:
    """The design weights of a sampled run's rows (``stats.design``), or None (every row counts once)."""
    return None if design is None else df[design].to_numpy(dtype=float)


def _weighted_mean(tmp: pd.DataFrame, by: list[str], cols: list[str], w: np.ndarray) -> pd.DataFrame:
    """Per ``by`` group, Σ w·value / Σ w of each column (NaN values left out)."""
    out = tmp[by].copy()
    for col in cols:
        v = tmp[col].to_numpy(dtype=float)
        ok = ~np.isnan(v)
        out[f"n:{col}"] = np.where(ok, w * np.nan_to_num(v), 0.0)
        out[f"d:{col}"] = np.where(ok, w, 0.0)
    sums = out.groupby(by, observed=True, sort=True).sum()
    return pd.DataFrame({c: sums[f"n:{c}"] / sums[f"d:{c}"].where(sums[f"d:{c}"] > 0) for c in cols})


def _weighted_align(
    df: pd.DataFrame, weights: dict[str, float], by: list[str], design: str | None = None
) -> pd.Series:
    w = weighted_mu(df, weights)
    if design is not None:
        w = w * df[design].to_numpy(dtype=float)
    m = df["mu"].to_numpy(dtype=float)
    ok = ~np.isnan(m)
    tmp = df[by].reset_index(drop=True)
    tmp["wm"] = np.where(ok, w * np.nan_to_num(m), 0.0)
    tmp["w"] = np.where(ok, w, 0.0)
    g = tmp.groupby(by, observed=True, sort=True).sum()
    return g["wm"] / g["w"]


def rank_desc(values: pd.Series) -> pd.Series:
    """Rank 1 = highest alignment; ties share the average rank."""
    return values.rank(ascending=False, method="average")


def weighting_rankings(
    df: pd.DataFrame, by: tuple[str, ...] = ("condition",), design: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Alignment and rank of every judge under each weighting, and ρ(equal ranking, alternative ranking).

    ``df`` must carry a ``mu`` column. Returns (long table judge × weighting, ρ table per ``by`` group).
    ``design``: the column of a sampled run's design weights, which multiply every row's weight.
    """
    cols = [*by, "judge"]
    parts = []
    for name, w in WEIGHTINGS.items():
        s = _weighted_align(df, w, cols, design).rename("align").reset_index()
        s["weighting"] = name
        parts.append(s)
    long = pd.concat(parts, ignore_index=True)
    long["rank"] = long.groupby([*by, "weighting"], observed=True)["align"].transform(lambda s: rank_desc(s))
    rho_rows = []
    for key, part in long.groupby(list(by), observed=True):
        key = key if isinstance(key, tuple) else (key,)
        base = part[part["weighting"] == "equal"].set_index("judge")["align"]
        for name in WEIGHTINGS:
            if name == "equal":
                continue
            alt = part[part["weighting"] == name].set_index("judge")["align"].reindex(base.index)
            rho_rows.append(
                {
                    **dict(zip(by, key, strict=True)),
                    "weighting": name,
                    "rho_vs_equal": spearman(base, alt),
                    "n_judges": len(base),
                }
            )
    return long, pd.DataFrame(rho_rows)


def topology_balanced(
    df: pd.DataFrame, by: tuple[str, ...] = ("judge", "condition"), design: str | None = None
) -> pd.DataFrame:
    """Record-weighted alignment vs the unweighted mean of per-topology alignments, and the shift in pp.
    ``design``: a sampled run's design-weight column (the record-weighted figure is then the full grid's)."""
    w = _row_weights(df, design)
    if w is None:
        rec = df.groupby(list(by), observed=True)["mu"].mean().rename("record_weighted")
        per_topo = df.groupby([*by, "topology"], observed=True)["mu"].mean()
    else:
        tmp = df[[*by, "topology", "mu"]].reset_index(drop=True)
        rec = _weighted_mean(tmp, list(by), ["mu"], w)["mu"].rename("record_weighted")
        per_topo = _weighted_mean(tmp, [*by, "topology"], ["mu"], w)["mu"]
    bal = per_topo.groupby(level=list(range(len(by))), observed=True).mean().rename("topology_balanced")
    n_topo = per_topo.groupby(level=list(range(len(by))), observed=True).size().rename("n_topologies")
    out = pd.concat([rec, bal, n_topo], axis=1).reset_index()
    out["shift_pp"] = 100 * (out["topology_balanced"] - out["record_weighted"])
    return out


def binary_collapse_table(
    df: pd.DataFrame, by: tuple[str, ...] = ("condition",), design: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Alignment and rank per judge on the three-level and on the binary-collapsed scale, the 0.5 rate,
    and ρ between the two rankings per ``by`` group (``design``: a sampled run's design-weight column)."""
    ver = df["verdict"].to_numpy(dtype=float, na_value=np.nan)
    ref = df["reference"].to_numpy(dtype=float)
    tmp = df[[*by, "judge"]].reset_index(drop=True)
    tmp["mu3"] = mu(ref, ver)
    tmp["mu2"] = mu(ref, binary_collapse(ref, ver))
    tmp["half"] = np.where(np.isnan(ver), np.nan, (ver == 0.5).astype(float))
    w = _row_weights(df, design)
    if w is None:
        g = tmp.groupby([*by, "judge"], observed=True)
        means = {
            "align_three_level": g["mu3"].mean(),
            "align_binary": g["mu2"].mean(),
            "half_rate": g["half"].mean(),
        }
    else:
        m = _weighted_mean(tmp, [*by, "judge"], ["mu3", "mu2", "half"], w)
        means = {"align_three_level": m["mu3"], "align_binary": m["mu2"], "half_rate": m["half"]}
    out = pd.DataFrame(means).reset_index()
    grp = out.groupby(list(by), observed=True)
    out["rank_three_level"] = grp["align_three_level"].rank(ascending=False, method="average")
    out["rank_binary"] = grp["align_binary"].rank(ascending=False, method="average")
    rho = [
        {
            **dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
            "rho_rankings": spearman(part["align_three_level"], part["align_binary"]),
            "n_judges": len(part),
        }
        for key, part in out.groupby(list(by), observed=True)
    ]
    return out, pd.DataFrame(rho)
