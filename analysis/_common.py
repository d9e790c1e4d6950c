"""Helpers shared by the analysis modules: alignment with CIs and failure counts, paired deltas of one
prompt factor. Kept private so that each analysis module exposes exactly one public ``analyze``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from agentjudge.report.context import Context, Section, fmt_pp
from agentjudge.report.figures import grouped_bars
from agentjudge.stats import GroupDraws, diff_table

# What the report tells a person to add when a run has only one level of a prompt-variant factor. Each is a
# complete, valid `prompt_variants` value (one entry per level; unset keys keep their defaults), checked by
# tests/test_analysis_advice.py through load_pipeline.
VARIANT_ADVICE: dict[str, str] = {
    "cot": "prompt_variants: [{cot: false}, {cot: true}]",
    "prompt_format": "prompt_variants: [{prompt_format: json}, {prompt_format: freeform}]",
    "default_mode": 'prompt_variants: [{default_mode: "1.0"}, {default_mode: "0.5"}]',
}


def variant_advice(factor: str) -> str:
    """One sentence with a pipeline snippet that adds the missing levels of ``factor``."""
    return (
        f"list one prompt variant per setting in the pipeline, e.g. `{VARIANT_ADVICE[factor]}` "
        "(add the other keys of your existing variants to each entry)."
    )


def draws(ctx: Context, df: pd.DataFrame, by: Sequence[str], value: str = "mu") -> GroupDraws:
    return ctx.boot.ratio(df, list(by), value)


def align_ci(ctx: Context, df: pd.DataFrame, by: Sequence[str], value: str = "mu") -> pd.DataFrame:
    """Alignment per group with its 95 % cluster-bootstrap CI, next to the parse-failure count and rate."""
    return draws(ctx, df, list(by), value).table("align")


def with_labels(ctx: Context, table: pd.DataFrame) -> pd.DataFrame:
    """Add the 'baseline judge' / 'simulated generator' markers next to names."""
    out = table.copy()
    if "judge" in out:
        out.insert(
            list(out.columns).index("judge") + 1,
            "judge_kind",
            [judge_kind(ctx, str(j)) for j in out["judge"]],
        )
    if "generator" in out:
        out.insert(
            list(out.columns).index("generator") + 1,
            "generator_kind",
            ["simulated" if ctx.is_simulated(str(g)) else "model" for g in out["generator"]],
        )
    return out


def judge_kind(ctx: Context, judge: str) -> str:
    """oracle / constant (calibration, never ranked), baseline, simulated (planted effects), or judge."""
    if ctx.is_oracle(judge):
        return "oracle"
    if ctx.is_constant(judge):
        return "constant"
    if ctx.is_baseline(judge):
        return "baseline"
    return "simulated" if ctx.is_simulated_judge(judge) else "judge"


def rankable_rows(ctx: Context, df: pd.DataFrame) -> pd.DataFrame:
    """Rows of rankable judges only: what pooled figures ("all judges") average over."""
    return df[df["judge"].isin(ctx.rankable_judges()).to_numpy()]


def level_name(value: object) -> str:
    """How a prompt-factor level is printed; a NaN temperature is the model's default."""
    return "model default" if isinstance(value, float) and np.isnan(value) else str(value)


def _is(level: object, base: object) -> bool:
    return bool(level == base) or (bool(pd.isna(level)) and bool(pd.isna(base)))


def variant_section(ctx: Context, key: str, title: str, factor: str, lacking: str, explain: str) -> Section:
    """RQ4–RQ6 share one shape: paired deltas (level − baseline level) per judge and condition."""
    sec = Section(key=key, title=title)
    df = ctx.vary(factor)
    levels = list(pd.unique(df[factor]))
    base = ctx.baseline_variant[factor]
    if len(levels) < 2:
        sec.lacking = lacking
        return sec
    others = [lev for lev in levels if not _is(lev, base)]
    gd = draws(ctx, df, ["condition", "judge", factor])
    pooled_gd = draws(ctx, rankable_rows(ctx, df), ["condition", factor])
    sec.tables[f"{key}_alignment"] = with_labels(ctx, align_ci(ctx, df, ["condition", "judge", factor]))
    parts: list[pd.DataFrame] = []
    pooled: list[pd.DataFrame] = []
    for lev in others:
        for source, by, sink in ((gd, ["condition", "judge"], parts), (pooled_gd, ["condition"], pooled)):
            t = diff_table(source, by, factor, lev, base)
            t.insert(0, "level", level_name(lev))
            t.insert(1, "baseline_level", level_name(base))
            sink.append(t)
    deltas = pd.concat(parts, ignore_index=True)
    pooled_t = pd.concat(pooled, ignore_index=True)
    sec.tables[f"{key}_deltas"] = with_labels(ctx, deltas)
    sec.tables[f"{key}_deltas_pooled"] = pooled_t
    sec.text.append(explain)
    for r in pooled_t.itertuples(index=False):
        sec.text.append(
            f"- {r.condition}: {factor} {r.level} vs {r.baseline_level}: "
            f"{fmt_pp(r.delta, r.ci_lo, r.ci_hi)} (pooled over rankable judges)"
        )
    sec.text.append(
        f"- largest per-judge move: {100 * deltas['delta'].abs().max():.2f} pp "
        f"({(deltas['ci_lo'] > 0).sum()} judge×condition deltas significantly > 0, "
        f"{(deltas['ci_hi'] < 0).sum()} significantly < 0, of {len(deltas)})."
    )
    plot = deltas.assign(cell=deltas["condition"].astype(str) + " · " + deltas["level"].astype(str))
    sec.figures[f"{key}_deltas"] = grouped_bars(
        plot,
        group="cell",
        hue="judge",
        value="delta",
        colors=ctx.colors,
        title=f"{title}: Δ alignment vs {factor} = {level_name(base)} (paired 95 % CI)",
        ylabel="Δ alignment (pp)",
        xlabel=f"condition · {factor}",
    )
    return sec
