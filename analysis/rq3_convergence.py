"""RQ3: why does without-GT alignment converge? Verdict distributions (1.0-default compression), the
0.5-default prompt by generator strength, and the swapped-GT anchoring control."""

from __future__ import annotations

from agentjudge.analysis._context import Context, Section, fmt_pp
from agentjudge.analysis._figures import grouped_bars, stacked_shares

from agentjudge.stats import diff_table, snap
from agentjudge.stats.codes import values_of

from ._common import (
    align_ci,
    draws,
    figure_labels,
    group_mean,
    paired,
    prompt_reading_rows,
    rankable_rows,
    variant_advice,
    with_labels,
)

LEVELS = ("0.0", "0.5", "1.0")


def _distributions(ctx: Context, sec: Section) -> None:
    main = ctx.main
    ok = main[main["ok"]]
    lev = snap(ok["verdict"].to_numpy(float))
    tmp = ok[["judge", "condition", "difficulty"]].reset_index(drop=True)
    tmp["lev"] = lev
    tmp["ref1"] = snap(ok["reference"].to_numpy(float)) == 1.0
    for name in LEVELS:
        tmp[name] = (tmp["lev"] == float(name)).astype(float)
    if ctx.design is not None:  # a sampled run: shares pooled over generators weigh each cell as in full
        tmp["design_weight"] = ok["design_weight"].to_numpy()
        tmp["ref1"] = tmp["ref1"].astype(float)
    by = ["judge", "condition", "difficulty"]
    g = tmp.groupby(by, observed=True)
    dist = group_mean(ctx, tmp, by, [*LEVELS, "ref1"]).rename(columns={"ref1": "reference_share_1.0"})
    dist["verdicts"] = g.size()
    dist = dist.reset_index()
    sec.tables["rq3_verdict_distribution"] = with_labels(ctx, dist)
    pooled = group_mean(ctx, tmp, ["judge", "condition"], list(LEVELS)).reset_index()
    sec.figures["rq3_verdict_distribution"] = stacked_shares(
        pooled.assign(
            judge=pooled["judge"]
            .astype(str)
            .map(figure_labels(ctx, ctx.judges))
            .fillna(pooled["judge"].astype(str))
        ),
        ["judge", "condition"],
        LEVELS,
        "Verdict distribution by judge and condition",
    )
    ranked = rankable_rows(ctx, dist)  # a constant's 0 % or 100 % says nothing of how judges converge
    for cond, part in ranked.groupby("condition", observed=True):
        sec.text.append(
            f"- {cond}: share of 1.0 verdicts {100 * part['1.0'].mean():.1f} % (judge × difficulty mean, "
            f"rankable judges) vs {100 * part['reference_share_1.0'].mean():.1f} % of references that snap "
            "to 1.0."
        )


def _default_mode(ctx: Context, sec: Section) -> None:
    df = ctx.vary("default_mode")
    if "0.5" not in values_of(df["default_mode"]) or len(values_of(df["default_mode"])) < 2:
        sec.text.append(
            "0.5-default prompt: this run has one default mode; " + variant_advice("default_mode")
        )
        return
    readers = prompt_reading_rows(ctx, df)
    if readers.empty:
        sec.text.append(
            "0.5-default prompt: n/a (no rankable judge that reads the prompt in this run; the baselines are "
            "rules the prompt never reaches, and calibration judges are never pooled)."
        )
        return
    strength = group_mean(ctx, ctx.main, ["generator"], ["reference"])["reference"].rename("strength")
    gd = draws(ctx, readers, ["condition", "generator", "default_mode"])
    t = diff_table(gd, ["condition", "generator"], "default_mode", "0.5", "1.0")
    t = t.merge(strength.reset_index(), on="generator", how="left").sort_values(["condition", "strength"])
    sec.tables["rq3_default_mode"] = with_labels(ctx, t)
    gdj = draws(ctx, df, ["condition", "generator", "judge", "default_mode"])
    tj = diff_table(gdj, ["condition", "generator", "judge"], "default_mode", "0.5", "1.0")
    sec.tables["rq3_default_mode_by_judge"] = with_labels(ctx, tj)
    sec.text.append(
        f"0.5-default − 1.0-default alignment by generator (strength = mean {ctx.scoring_mode} "
        "reference of the generator, weakest first; pooled over the rankable judges that read the prompt, "
        "not the baselines: rules, unmoved by it):"
    )
    for r in t.itertuples(index=False):
        sec.text.append(
            f"- {r.condition}, {ctx.generator_label(str(r.generator))} (strength {r.strength:.2f}): "
            f"{fmt_pp(r.delta, r.ci_lo, r.ci_hi)}"
        )
    plot = t.assign(judge=t["condition"].astype(str))
    sec.figures["rq3_default_mode"] = grouped_bars(
        plot,
        group="generator",
        hue="judge",
        value="delta",
        colors={},
        title="0.5-default − 1.0-default, by generator (weak → strong)",
        ylabel="Δ alignment (pp)",
    )


def _anchoring(ctx: Context, sec: Section) -> None:
    df = ctx.vary(None, conditions=("with_gt", "swapped_gt"))
    conds = set(values_of(df["condition"]))
    if conds != {"with_gt", "swapped_gt"}:
        sec.text.append("Anchoring test: this run has no swapped_gt condition; add swapped_gt to conditions.")
        return
    # one set of draws for both deltas: the second, against no GT at all, tells a judge misled by the wrong
    # GT from one that read past it
    three = ctx.vary(None, conditions=("with_gt", "swapped_gt", "without_gt"))
    gd = draws(ctx, paired(ctx, three, "condition"), ["judge", "condition"])  # sampled: shared prefix
    t = diff_table(gd, ["judge"], "condition", "swapped_gt", "with_gt", name="swapped_minus_true")
    if "without_gt" in set(values_of(three["condition"])):
        versus = diff_table(
            gd, ["judge"], "condition", "swapped_gt", "without_gt", name="swapped_minus_without"
        )
        versus = versus.rename(
            columns={"ci_lo": "swapped_minus_without_ci_lo", "ci_hi": "swapped_minus_without_ci_hi"}
        )
        t = t.merge(versus.drop(columns=["n_level", "n_base"]), on="judge", how="left")
    t = t.merge(
        align_ci(ctx, df, ["judge", "condition"])
        .pivot_table(index="judge", columns="condition", values="align", observed=True)
        .reset_index(),
        on="judge",
    )
    t.columns.name = None
    t["content_insensitive"] = (t["ci_lo"] <= 0) & (t["ci_hi"] >= 0)
    sec.tables["rq3_anchoring"] = with_labels(ctx, t)
    against_none = "swapped_minus_without" in t.columns
    sec.text.append(
        "Anchoring: alignment with another record's GT − with the true GT. A CI containing 0 means the "
        "judge's verdicts do not depend on which GT it is shown. A drop mixes two things: losing the true "
        "GT's help, and being misled by the wrong one"
        + (
            "; the second delta, with the wrong GT − with no GT, separates them: below 0, the wrong GT "
            "misled the judge (worse than no GT at all); about 0, it read past a GT that did not fit."
            if against_none
            else " (add without_gt to the conditions to separate them)."
        )
    )
    for r in t.itertuples(index=False):
        calibration = ctx.is_oracle(str(r.judge)) or ctx.is_constant(str(r.judge))
        versus_txt = ""
        if against_none and r.swapped_minus_without == r.swapped_minus_without:
            versus_txt = "; wrong GT − no GT " + fmt_pp(
                r.swapped_minus_without, r.swapped_minus_without_ci_lo, r.swapped_minus_without_ci_hi
            )
        sec.text.append(
            f"- {r.judge}: wrong GT − true GT {fmt_pp(r.swapped_minus_true, r.ci_lo, r.ci_hi)}{versus_txt}"
            + (" — calibration judge" if calibration else "")
            + (" — unmoved by which GT it is shown" if r.content_insensitive and not calibration else "")
        )
    sec.figures["rq3_anchoring"] = grouped_bars(
        align_ci(ctx, df, ["judge", "condition"]).assign(judge=lambda x: x["judge"].astype(str)),
        group="condition",
        hue="judge",
        value="align",
        colors=ctx.colors,
        title="Alignment with the true vs a swapped GT (95 % CI)",
        ylabel="alignment (%)",
        zoom=True,
        labels=figure_labels(ctx, ctx.judges),
    )


def analyze(ctx: Context) -> Section:
    sec = Section(
        key="rq3", title="RQ3: convergence without GT — verdict distributions, default prompts, anchoring"
    )
    _distributions(ctx, sec)
    _default_mode(ctx, sec)
    _anchoring(ctx, sec)
    return sec
