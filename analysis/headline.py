"""Headline: alignment per judge × condition with CIs, GT gain with paired CIs, and the three-level ceiling.

Every figure sits beside its parse-failure count; baseline judges and simulated generators are marked.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from agentjudge.analysis._context import Context, Section, fmt_ci, fmt_pp
from agentjudge.analysis._figures import ranked_dots

from agentjudge.stats import alignment_table, diff_table
from agentjudge.stats.codes import values_of

from ._common import align_ci, draws, figure_labels, group_mean, paired, with_labels


def _ceiling(ctx: Context, df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    if ctx.design is not None:  # a sampled run: design-weighted, as every other figure of it
        return group_mean(ctx, df, by, ["mu_ceiling"]).reset_index().rename(columns={"mu_ceiling": "ceiling"})
    c = alignment_table(df, by, "mu_ceiling")[[*by, "align"]].rename(columns={"align": "ceiling"})
    return c


def analyze(ctx: Context) -> Section:
    sec = Section(key="headline", title="Headline: judge alignment with the programmatic reference")
    by = ["scoring_mode", "judge", "condition"]
    tables, gains = [], []
    for mode in values_of(ctx.data["scoring_mode"]):
        df = ctx.vary(None, mode=mode)
        if df.empty:
            continue
        t = align_ci(ctx, df, by).merge(_ceiling(ctx, df, by), on=by)
        t["normalised"] = t["align"] / t["ceiling"]
        tables.append(t)
        gd = draws(ctx, paired(ctx, df, "condition"), by)  # a sampled run: on the scenarios both judged
        g = diff_table(gd, ["scoring_mode", "judge"], "condition", "with_gt", "without_gt", name="gt_gain")
        gains.append(g)
    head = with_labels(ctx, pd.concat(tables, ignore_index=True))
    sec.tables["headline"] = head
    gain = with_labels(ctx, pd.concat(gains, ignore_index=True)) if gains else pd.DataFrame()
    sec.tables["gt_gain"] = gain

    main = ctx.main
    cell_by = ["judge", "generator", "difficulty", "condition"]
    cells = align_ci(ctx, main, cell_by).merge(_ceiling(ctx, main, cell_by), on=cell_by)
    cells["normalised"] = cells["align"] / cells["ceiling"]
    sec.tables["headline_cells"] = with_labels(ctx, cells)
    cell_gd = draws(ctx, paired(ctx, main, "condition"), cell_by)
    sec.tables["gt_gain_cells"] = with_labels(
        ctx,
        diff_table(
            cell_gd,
            ["judge", "generator", "difficulty"],
            "condition",
            "with_gt",
            "without_gt",
            name="gt_gain",
        ),
    )

    prim = head[head["scoring_mode"] == ctx.scoring_mode]
    sec.text.append(
        f"Scoring mode used for every research question: **{ctx.scoring_mode}**. Alignment = mean of "
        "1 − |reference − verdict| over records and the four metrics; 95 % CIs resample base scenarios "
        f"({ctx.boot.resamples} resamples, seed {ctx.boot.seed}). The ceiling is the alignment of the "
        "reference "
        "snapped to {0, 0.5, 1}: no three-level judge can exceed it."
    )
    for r in prim.itertuples(index=False):
        kind = "" if r.judge_kind == "judge" else f" ({r.judge_kind} judge)"
        sec.text.append(
            f"- {r.judge}{kind}, {r.condition}: {fmt_ci(r.align, r.ci_lo, r.ci_hi)}; ceiling "
            f"{100 * r.ceiling:.1f} %,"
            f" normalised {100 * r.normalised:.1f} %; parse failures {r.n_failed} "
            f"({100 * r.failure_rate:.1f} %)"
        )
    pg = gain[gain["scoring_mode"] == ctx.scoring_mode] if len(gain) else gain
    if len(pg):
        sec.text.append("GT gain (with GT − without GT, paired over the same resampled scenarios):")
        for r in pg.itertuples(index=False):
            sec.text.append(f"- {r.judge}: {fmt_pp(r.gt_gain, r.ci_lo, r.ci_hi)}")
    else:
        sec.text.append("GT gain: this run lacks one of the two conditions with_gt / without_gt.")
    sims = [g for g in ctx.generators if ctx.is_simulated(g)]
    if sims:
        sec.text.append(f"Simulated generators (not real models): {', '.join(sims)}.")
    if np.isnan(prim["align"]).any():
        sec.text.append(
            "Some cells have no parsed verdict at all (alignment n/a); see the parse-failure table."
        )
    sec.figures["headline"] = ranked_dots(
        prim,
        order=_by_rank(ctx),
        apart=ctx.calibration_judges(),
        title=f"Alignment by judge, best first ({ctx.scoring_mode} reference, 95 % CI)",
        xlabel="alignment (%)",
        labels=figure_labels(ctx, ctx.judges),
    )
    return sec


def _by_rank(ctx: Context) -> list[str]:
    """The rankable judges in the first screen's order (alignment pooled over with and without GT, on the
    main rows), then the calibration judges, best first too."""
    main = ctx.main
    order = []
    for judges in (ctx.rankable_judges(), ctx.calibration_judges()):
        part = main[main["judge"].isin(judges).to_numpy()]
        if part.empty:
            order += sorted(judges)
            continue
        pooled = draws(ctx, part, ["judge"]).table("align")
        ranked = (
            pooled.sort_values("align", ascending=False, na_position="last")["judge"].astype(str).tolist()
        )
        order += ranked + sorted(set(judges) - set(ranked))
    return order
