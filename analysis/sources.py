"""Record sources: synthetic records (our generator) and imported ones (tasks people wrote, e.g. BFCL).

Judges may grade real human phrasing differently from ours, so alignment is never pooled across sources
without saying so: this section labels where the run's records come from and splits the headline
alignment (and the GT gain) by source. When a run mixes sources, ``agentjudge report`` also writes one
full report per source (``report/<source>/``) and the top-level report shows alignment only split.
"""

from __future__ import annotations

from agentjudge.analysis._context import Context, Section, fmt_ci

from agentjudge.stats import alignment_table, diff_table
from agentjudge.stats.codes import values_of

from ._common import align_ci, draws, group_mean, paired, with_labels

LABELS = {
    "synthetic": "synthetic (this project's generator; GT executed in typed tool environments)",
    "imported": (
        "imported (written by people elsewhere, e.g. BFCL; accepted answers, no executable environment)"
    ),
}


def analyze(ctx: Context) -> Section:
    sec = Section(key="sources", title="Record sources: synthetic vs imported")
    df = ctx.df
    sources = values_of(df["source"])
    counts = (
        df.groupby("source", observed=True)
        .agg(base_scenarios=("base_id", "nunique"), records=("record_id", "nunique"))
        .reset_index()
    )
    counts["what"] = [LABELS.get(str(s), str(s)) for s in counts["source"]]
    sec.tables["records_by_source"] = counts
    if len(sources) == 1:
        sec.title = f"Record sources: all {sources[0]}"
    by = ["judge", "condition", "source"]
    # the headline's slice (baseline prompt variant, first trials, with/without GT), so the two agree
    main = ctx.main
    table = align_ci(ctx, main, by)
    if ctx.design is None:
        ceiling = alignment_table(main, by, "mu_ceiling")[[*by, "align"]].rename(columns={"align": "ceiling"})
    else:  # a sampled run: design-weighted like the alignment beside it
        ceiling = (
            group_mean(ctx, main, by, ["mu_ceiling"]).reset_index().rename(columns={"mu_ceiling": "ceiling"})
        )
    table = with_labels(ctx, table.merge(ceiling, on=by))
    sec.tables["alignment_by_source"] = table
    gain = diff_table(
        draws(ctx, paired(ctx, main, "condition"), by),
        ["judge", "source"],
        "condition",
        "with_gt",
        "without_gt",
        "gt_gain",
    )
    sec.tables["gt_gain_by_source"] = with_labels(ctx, gain)
    sec.text.append(
        f"Scoring mode **{ctx.scoring_mode}**. Sources in this run: "
        + "; ".join(f"**{s}** — {LABELS.get(s, s)}" for s in sources)
        + "."
    )
    if len(sources) > 1:
        sec.text.append(
            "This run mixes sources, so every other table is written per source: see "
            + ", ".join(f"`report/{s}/report.md`" for s in sources)
            + ". Alignment per judge, condition and source:"
        )
    sec.text.append(
        "Alignment below is on the headline's slice (baseline prompt variant, first trials); the ceiling is "
        "the oracle's on the same rows."
    )
    for r in table.itertuples(index=False):
        sec.text.append(
            f"- {r.judge} ({r.judge_kind}), {r.condition}, {r.source}: {fmt_ci(r.align, r.ci_lo, r.ci_hi)}; "
            f"ceiling {100 * r.ceiling:.1f} %; failures {r.n_failed}"
        )
    return sec
