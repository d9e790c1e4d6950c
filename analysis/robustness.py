"""Robustness of the judge ranking: metric weightings, topology weighting, binary collapse (§8)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from agentjudge.analysis._context import Context, Section
from agentjudge.analysis._figures import grouped_bars

from agentjudge.stats import binary_collapse_table, topology_balanced, weighting_rankings

from ._common import draws, figure_labels, rankable_rows, with_labels


def _with_topology_cis(ctx: Context, main: pd.DataFrame, topo: pd.DataFrame) -> pd.DataFrame:
    """CIs for the topology-balanced alignment and for its shift from the record-weighted one.

    Both come from the same resampled scenarios: the balanced draw is the mean of the per-topology draws,
    the shift is balanced − record-weighted within each resample (paired)."""
    per_topo = draws(ctx, main, ["judge", "condition", "topology"])
    overall = draws(ctx, main, ["judge", "condition"])
    out = topo.copy()
    cols = {k: np.full(len(out), np.nan) for k in ("bal_lo", "bal_hi", "shift_lo", "shift_hi")}
    for i, r in enumerate(out.itertuples(index=False)):
        mask = ((per_topo.keys["judge"] == r.judge) & (per_topo.keys["condition"] == r.condition)).to_numpy()
        block = per_topo.draws[:, mask]
        counts = (~np.isnan(block)).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):  # NaN where no topology has a verdict
            balanced = np.where(counts > 0, np.nansum(block, axis=1) / counts, np.nan)
        record = overall.draws[:, overall.lookup(judge=r.judge, condition=r.condition)]
        lo, hi = overall.interval(balanced)
        slo, shi = overall.interval(100 * (balanced - record))
        cols["bal_lo"][i], cols["bal_hi"][i] = lo[0], hi[0]
        cols["shift_lo"][i], cols["shift_hi"][i] = slo[0], shi[0]
    at = list(out.columns).index("topology_balanced") + 1
    out.insert(at, "topology_balanced_ci_lo", cols["bal_lo"])
    out.insert(at + 1, "topology_balanced_ci_hi", cols["bal_hi"])
    out["shift_pp_ci_lo"] = cols["shift_lo"]
    out["shift_pp_ci_hi"] = cols["shift_hi"]
    return out


def analyze(ctx: Context) -> Section:
    sec = Section(
        key="robustness", title="Robustness: metric weightings, topology weighting, binary collapse"
    )
    main = ctx.main
    # rank correlations compare rankings: only rankable judges (the oracle and constants are never ranked)
    ranked = rankable_rows(ctx, main)
    n_ranked = len(ctx.rankable_judges())
    if ranked.empty:
        sec.lacking = (
            "Robustness: no rankable judge with verdicts in this run (the oracle and constant judges are "
            "never ranked), so there is no ranking to perturb."
        )
        return sec
    # a compare join ranks judges within each run: judges of different runs graded other material
    runs = sorted(ranked["run"].astype(str).unique()) if "run" in ranked.columns else []
    by: tuple[str, ...] = ("run", "condition") if len(runs) > 1 else ("condition",)
    if len(runs) > 1:
        sec.text.append(
            f"Rankings below are within each run ({', '.join(runs)}): a judge is ranked only against the "
            "judges of its own run, and ρ compares two rankings of the same judges."
        )
    design = "design_weight" if ctx.design is not None else None  # a sampled run's (stats.design)
    long, rho = weighting_rankings(ranked, by=by, design=design)
    sec.tables["robust_weightings"] = with_labels(ctx, long)
    sec.tables["robust_weighting_rho"] = rho
    if len(runs) > 1:
        n_ranked = int(ranked.groupby("run", observed=True)["judge"].nunique().min())
    if n_ranked < 3:
        smallest = "The smallest run ranks" if len(runs) > 1 else "Rankings of"
        sec.text.append(
            f"{smallest} {n_ranked} rankable judge{'s' if n_ranked != 1 else ''}: ρ between rankings needs "
            "≥3 judges to mean much."
        )
    if rho["rho_vs_equal"].notna().any():
        sec.text.append(
            f"Judge ranking under the five alternative metric weightings vs equal weights: Spearman ρ from "
            f"{rho['rho_vs_equal'].min():.3f} to {rho['rho_vs_equal'].max():.3f} (published ρ ≥ 0.832)."
        )
    else:
        sec.text.append("Weighting ρ undefined (fewer than two judges, or all judges tied).")

    topo = _with_topology_cis(ctx, main, topology_balanced(main, design=design))
    for col in ("shift_pp", "shift_pp_ci_lo", "shift_pp_ci_hi"):  # two sums of one set: a float's last bit
        topo[col] = topo[col].mask(topo[col].abs() < 1e-9, 0.0)
    sec.tables["robust_topology_weighting"] = with_labels(ctx, topo)
    shifts = topo["shift_pp"].abs().dropna()
    shift_txt = f"{shifts.max():.2f} pp" if len(shifts) else "n/a (no parsed verdicts)"
    per_topology = main.groupby("topology", observed=True)["record_id"].nunique()
    balanced = (
        " The records are spread evenly over the topologies here, so the two weightings can differ only "
        "through failed verdicts."
        if len(per_topology) > 1 and per_topology.nunique() == 1
        else ""
    )
    sec.text.append(
        f"Topology-balanced (unweighted mean of {int(topo['n_topologies'].max())} topologies) vs "
        f"record-weighted alignment: largest shift {shift_txt} (published ≤1.5 pp).{balanced}"
    )

    bc, bc_rho = binary_collapse_table(ranked, by=by, design=design)
    sec.tables["robust_binary_collapse"] = with_labels(ctx, bc)
    sec.tables["robust_binary_rho"] = bc_rho
    for r in bc_rho.itertuples(index=False):
        rtxt = "undefined" if np.isnan(r.rho_rankings) else f"{r.rho_rankings:.2f}"
        where = f"{r.run} · {r.condition}" if "run" in by else str(r.condition)
        sec.text.append(
            f"- {where}: ρ(three-level ranking, binary ranking) = {rtxt} over {r.n_judges} rankable "
            f"judge{'s' if r.n_judges != 1 else ''} (published 0.03: hedging judges gain)."
        )
    rates = bc.groupby("judge", observed=True)["half_rate"].mean()
    sec.text.append(
        "0.5-verdict rate per judge: " + ", ".join(f"{j} {100 * v:.1f} %" for j, v in rates.items())
    )
    sec.figures["robust_binary"] = grouped_bars(
        bc.melt(
            id_vars=["condition", "judge"],
            value_vars=["align_three_level", "align_binary"],
            var_name="scale",
            value_name="align",
        ).assign(cell=lambda x: x["condition"].astype(str) + " · " + x["scale"].str.replace("align_", "")),
        group="cell",
        hue="judge",
        value="align",
        colors=ctx.colors,
        lo="none",
        hi="none",
        title="Alignment on the three-level vs binary-collapsed scale",
        labels=figure_labels(ctx, ctx.judges),
        xlabel="condition · verdict scale",
        ylabel="alignment (%)",
        zoom=True,
    )
    return sec
