"""RQ1: which metrics and topologies are hardest, and does alignment fall easy → medium → hard?"""

from __future__ import annotations

import pandas as pd
from agentjudge.analysis._context import Context, Section
from agentjudge.analysis._figures import heatmap, line_panels

from agentjudge.stats.codes import values_of
from agentjudge.types import DIFFICULTIES, METRICS, TOPOLOGIES

from ._common import align_ci, figure_labels, rankable_rows, with_labels


def _matrix(t: pd.DataFrame, cond: str, col: str, order: tuple[str, ...]) -> pd.DataFrame:
    part = t[t["condition"].astype(str) == cond]
    m = part.pivot_table(index="judge", columns=col, values="align", observed=True)
    return m.reindex(columns=[c for c in order if c in m.columns])


def analyze(ctx: Context) -> Section:
    sec = Section(key="rq1", title="RQ1: hardest metrics and topologies; difficulty curves")
    main = ctx.main
    per_metric = align_ci(ctx, main, ["condition", "judge", "metric"])
    per_topo = align_ci(ctx, main, ["condition", "judge", "topology"])
    sec.tables["rq1_metric"] = with_labels(ctx, per_metric)
    sec.tables["rq1_topology"] = with_labels(ctx, per_topo)
    ranked = rankable_rows(ctx, main)  # pooled figures leave out the oracle and the constant judges
    empty = pd.DataFrame({"condition": [], "align": []})
    pooled_m = align_ci(ctx, ranked, ["condition", "metric"]) if len(ranked) else empty
    pooled_t = align_ci(ctx, ranked, ["condition", "topology"]) if len(ranked) else empty
    if ranked.empty:
        sec.text.append("No rankable judge in this run: the pooled rows are empty (per-judge tables below).")
    sec.tables["rq1_metric_pooled"] = pooled_m
    sec.tables["rq1_topology_pooled"] = pooled_t
    for cond in values_of(main["condition"]):
        pm = pooled_m[pooled_m["condition"].astype(str) == cond].dropna(subset=["align"]).sort_values("align")
        pt = pooled_t[pooled_t["condition"].astype(str) == cond].dropna(subset=["align"]).sort_values("align")
        if len(pm) and len(pt):
            sec.text.append(
                f"- {cond}: weakest metric **{pm.iloc[0]['metric']}** ({100 * pm.iloc[0]['align']:.1f} %), "
                "strongest "
                f"{pm.iloc[-1]['metric']} ({100 * pm.iloc[-1]['align']:.1f} %); "
                + (
                    f"hardest topology **{pt.iloc[0]['topology']}** ({100 * pt.iloc[0]['align']:.1f} %), "
                    f"easiest {pt.iloc[-1]['topology']} ({100 * pt.iloc[-1]['align']:.1f} %)"
                    if len(pt) > 1
                    else f"hardest / easiest topology n/a: one topology ({pt.iloc[0]['topology']})"
                )
                + " (pooled over rankable judges)."
            )
        names = figure_labels(ctx, ctx.judges)
        sec.figures[f"rq1_metric_{cond}"] = heatmap(
            _matrix(per_metric, cond, "metric", METRICS).rename(index=names),
            f"Alignment by judge and metric ({cond})",
            "alignment (%)",
            xlabel="metric",
            ylabel="judge",
        )
        sec.figures[f"rq1_topology_{cond}"] = heatmap(
            _matrix(per_topo, cond, "topology", TOPOLOGIES).rename(index=names),
            f"Alignment by judge and topology ({cond})",
            "alignment (%)",
            xlabel="topology",
            ylabel="judge",
        )

    curve_by = ["condition", "generator", "judge", "difficulty"]
    curves = align_ci(ctx, main, curve_by)
    sec.tables["rq1_difficulty_curves"] = with_labels(ctx, curves)
    wide = curves.pivot_table(
        index=["condition", "generator", "judge"], columns="difficulty", values="align", observed=True
    )
    present = [d for d in DIFFICULTIES if d in wide.columns]
    if len(present) < 2:
        sec.text.append(
            "Difficulty curves: this run has one difficulty; add difficulties: [easy, medium, hard]."
        )
    else:
        wide = wide[present]
        mono = (wide.diff(axis=1).iloc[:, 1:] <= 0).all(axis=1) & wide.notna().all(axis=1)
        mon = wide.reset_index()
        mon["monotone_non_increasing"] = mono.to_numpy()
        mon.columns.name = None
        sec.tables["rq1_monotonicity"] = with_labels(ctx, mon)
        judges = mon["judge"].astype(str)
        rankable = judges.isin(ctx.rankable_judges()).to_numpy()
        counted = mono.to_numpy()[rankable]
        calibration = (
            ""
            if rankable.all()
            else "; calibration judges left out: a constant's or the oracle's curve is the references' own"
        )
        sec.text.append(
            f"Alignment is non-increasing {' ≥ '.join(present)} for {int(counted.sum())} of {len(counted)} "
            f"(condition, generator, judge) curves of rankable judges (point estimates){calibration}."
        )
        sec.figures["rq1_difficulty"] = line_panels(
            curves,
            panel="generator",
            row="condition",
            x="difficulty",
            hue="judge",
            value="align",
            x_order=present,
            colors=ctx.colors,
            title="Alignment by difficulty (95 % CI bands)",
            ylabel="alignment (%)",
            labels=figure_labels(ctx, ctx.judges),
        )
    return sec
