"""Helpers shared by the analysis modules: alignment with CIs and failure counts, paired deltas of one
prompt factor. Kept private so that each analysis module exposes exactly one public ``analyze``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from agentjudge.analysis._context import Context, Section, fmt_pp
from agentjudge.analysis._figures import grouped_bars

from agentjudge.stats import COORDS, GroupDraws, diff_table

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


def paired(ctx: Context, df: pd.DataFrame, factor: str) -> pd.DataFrame:
    """The rows a paired comparison along ``factor`` (a cell coordinate: judge, generator, difficulty or
    condition) may use. A sampled run (``ctx.design``) judged each cell on a prefix of one order of
    scenarios: the comparison keeps, in every slice of the other coordinates, the prefix all the levels of
    ``factor`` in ``df`` judged, with that prefix's design weights, so both sides stand on the same
    scenarios and one finite-population fraction (stats.design). An unsampled run: ``df`` itself."""
    if ctx.design is None or df.empty:
        return df
    from agentjudge.stats.design import shared_lengths

    lengths = ctx.design.cell_lengths(df)
    n = shared_lengths(df, ctx.design, factor, lengths)
    ranks = df["_rank"].to_numpy()
    keep = ranks < n
    out = df[keep].copy()
    out["design_weight"] = ctx.design.weight(ranks[keep], n[keep])
    return out


def group_mean(ctx: Context, df: pd.DataFrame, by: Sequence[str], cols: Sequence[str]) -> pd.DataFrame:
    """Means of ``cols`` per ``by`` group (NaN values left out), design-weighted in a sampled run: a
    pooled figure then weighs each cell as the full grid would, whatever its prefix. Unsampled: pandas'
    own means, as before."""
    by, cols = list(by), list(cols)
    if ctx.design is None or "design_weight" not in df.columns:
        return df.groupby(by, observed=True)[cols].mean()
    w = df["design_weight"].to_numpy(dtype=float)
    parts = {}
    tmp = df[by].reset_index(drop=True)
    for col in cols:
        v = df[col].to_numpy(dtype=float)
        ok = ~np.isnan(v)
        tmp[f"_n_{col}"] = np.where(ok, w * np.nan_to_num(v), 0.0)
        tmp[f"_d_{col}"] = np.where(ok, w, 0.0)
    sums = tmp.groupby(by, observed=True).sum()
    for col in cols:
        with np.errstate(invalid="ignore", divide="ignore"):
            parts[col] = sums[f"_n_{col}"] / sums[f"_d_{col}"].where(sums[f"_d_{col}"] > 0)
    return pd.DataFrame(parts)


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
    """oracle / constant (calibration, never ranked), baseline, simulated (planted effects), plugin (a
    ``module:factory`` or entry-point judge: the name the run table gives it too), or judge (a model)."""
    if ctx.is_oracle(judge):
        return "oracle"
    if ctx.is_constant(judge):
        return "constant"
    if ctx.is_baseline(judge):
        return "baseline"
    if ctx.is_imported_baseline(judge):
        return "judge-specific baseline"
    if ctx.is_simulated_judge(judge):
        return "simulated"
    kind = ctx.meta.get("judges", {}).get(judge, {}).get("kind")
    return "plugin" if kind == "plugin" else "imported" if kind == "imported" else "judge"


def run_of(main: pd.DataFrame) -> dict[str, str]:
    """judge → run label in a ``compare`` join (empty for a single run folder)."""
    if "run" not in main.columns:
        return {}
    return main.groupby("judge", observed=True)["run"].first().astype(str).to_dict()


def share_rows(main: pd.DataFrame, a: str, b: str) -> bool:
    """Do judges a and b have at least one verdict row in common (same record, output, variant, …)?"""
    coords = [c for c in COORDS if c in main.columns]
    left = main.loc[(main["judge"] == a).to_numpy(), coords].astype(str)
    right = main.loc[(main["judge"] == b).to_numpy(), coords].astype(str)
    return bool(pd.MultiIndex.from_frame(left).isin(pd.MultiIndex.from_frame(right)).any())


def figure_labels(ctx: Context, judges: Sequence[str]) -> dict[str, str]:
    """Legend names that say which judges are simulated or calibration points, not models (the prose's
    ``Context.judge_label``, so text and figures name a judge alike)."""
    return {j: ctx.judge_label(j) for j in judges}


def rankable_rows(ctx: Context, df: pd.DataFrame) -> pd.DataFrame:
    """Rows of rankable judges only: what pooled figures ("all judges") average over."""
    return df[df["judge"].isin(ctx.rankable_judges()).to_numpy()]


def prompt_reading_rows(ctx: Context, df: pd.DataFrame) -> pd.DataFrame:
    """Rows of rankable judges that read a prompt: what a prompt factor's pooled delta (temperature, CoT,
    format, default mode) averages over. A baseline judge is a rule over the calls (and the GT, for
    ``baseline/gt-rule``) that the prompt's wording, format and temperature never reach: its delta is 0 by
    construction, and pooled with the others it would only shrink their effect (by half beside one other
    judge)."""
    return df[df["judge"].isin(prompt_readers(ctx)).to_numpy()]


def prompt_readers(ctx: Context) -> list[str]:
    """The rankable judges that read a prompt (see ``prompt_reading_rows``)."""
    return [j for j in ctx.rankable_judges() if not ctx.is_baseline(j)]


def level_name(value: object) -> str:
    """How a prompt-factor level is printed; a NaN temperature is the model's default."""
    return "model default" if isinstance(value, float) and np.isnan(value) else str(value)


def _is(level: object, base: object) -> bool:
    return bool(level == base) or (bool(pd.isna(level)) and bool(pd.isna(base)))


#: what identifies one verdict within a judge once the variant factors are fixed (trial is fixed by ``vary``)
PAIR_KEY = ("judge", "record_id", "generator", "generator_trial", "condition", "metric")


def paired_rows(df: pd.DataFrame, factor: str, level: object, base: object) -> pd.DataFrame:
    """Rows at ``level`` and at ``base`` whose (judge, record, generator, condition, metric) has a verdict
    at both.

    Why: a joined comparison (or a partial grid) can hold judges or scenarios that ran only one side of a
    variant, and a verdict can fail (parse or transport) on one side only; averaging each side over
    whatever it has is not a paired delta. Only the pairs count."""
    answered = df["verdict"].notna().to_numpy() if "verdict" in df.columns else True
    at_level = df[_same_mask(df[factor], level) & answered]
    at_base = df[_same_mask(df[factor], base) & answered]
    key = [c for c in PAIR_KEY if c in df.columns]
    lk = pd.MultiIndex.from_frame(at_level[key].astype(str))
    bk = pd.MultiIndex.from_frame(at_base[key].astype(str))
    return pd.concat([at_level[lk.isin(bk)], at_base[bk.isin(lk)]])


def _same_mask(series: pd.Series, value: object) -> np.ndarray:
    if isinstance(value, float) and np.isnan(value):
        return np.asarray(series.isna().to_numpy(), dtype=bool)
    return np.asarray((series == value).to_numpy(), dtype=bool)


def variant_section(
    ctx: Context,
    key: str,
    title: str,
    factor: str,
    lacking: str,
    explain: str,
    first: object | None = None,
) -> Section:
    """RQ4–RQ6 share one shape: paired deltas per judge and condition, each level against the baseline level.

    The sign: level − baseline level, unless ``first`` names the level that always comes first (RQ6 reads
    JSON − free-form, the published direction, whichever format the run's baseline variant has); every table
    says it in its ``direction`` column, and the text and figure say the same.
    Every delta, per judge and pooled, is taken over verdicts that exist at both levels for the same judge
    (see ``paired_rows``); judges or scenarios with one side only are left out and counted."""
    sec = Section(key=key, title=title)
    df = ctx.vary(factor)
    levels = list(pd.unique(df[factor]))
    base = ctx.baseline_variant[factor]
    if len(levels) < 2:
        sec.lacking = lacking
        return sec
    others = [lev for lev in levels if not _is(lev, base)]
    sec.tables[f"{key}_alignment"] = with_labels(ctx, align_ci(ctx, df, ["condition", "judge", factor]))
    readers = set(prompt_readers(ctx))
    parts: list[pd.DataFrame] = []
    pooled: list[pd.DataFrame] = []
    pooled_na: list[str] = []
    for lev in others:
        minuend, subtrahend = (base, lev) if first is not None and _is(base, first) else (lev, base)
        direction = f"{level_name(minuend)} − {level_name(subtrahend)}"
        paired = paired_rows(df, factor, lev, base)
        unpaired = sorted(readers & set(df["judge"].astype(str)) - set(paired["judge"].astype(str)))
        if len(paired):
            t = diff_table(
                draws(ctx, paired, ["condition", "judge", factor]),
                ["condition", "judge"],
                factor,
                minuend,
                subtrahend,
            )
            t.insert(0, "level", level_name(lev))
            t.insert(1, "baseline_level", level_name(base))
            t.insert(2, "direction", direction)
            parts.append(t)
        ranked = prompt_reading_rows(ctx, paired)
        if ranked.empty:
            pooled_na.append(
                f"- {factor} {level_name(lev)} vs {level_name(base)}: pooled delta n/a (no rankable judge "
                "that reads the prompt has verdicts at both levels on the same scenarios)"
            )
            continue
        t = diff_table(draws(ctx, ranked, ["condition", factor]), ["condition"], factor, minuend, subtrahend)
        t.insert(0, "level", level_name(lev))
        t.insert(1, "baseline_level", level_name(base))
        t.insert(2, "direction", direction)
        t["n_judges"] = ranked["judge"].nunique()
        t["judges_left_out"] = ", ".join(unpaired)
        pooled.append(t)
    cols = [
        "level", "baseline_level", "direction", "condition", "judge", "delta", "ci_lo", "ci_hi", "n_level",
        "n_base",
    ]  # fmt: skip
    deltas = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)
    pooled_t = (
        pd.concat(pooled, ignore_index=True)
        if pooled
        else pd.DataFrame(columns=[c for c in cols if c != "judge"] + ["n_judges", "judges_left_out"])
    )
    sec.tables[f"{key}_deltas"] = with_labels(ctx, deltas)
    sec.tables[f"{key}_deltas_pooled"] = pooled_t
    sec.text.append(explain)
    sec.text.append(
        "Each delta is taken over the verdict rows answered at both levels: a row whose verdict failed "
        "(parse or transport) on either side leaves the pair out, so a delta can differ slightly from the "
        f"difference of the two alignments in table {key}_alignment, which keeps each level's own answered "
        "rows."
    )
    baselines = sorted(j for j in ctx.rankable_judges() if ctx.is_baseline(j))
    no_baselines = (
        f"; not the baseline{'s' if len(baselines) > 1 else ''} {', '.join(baselines)}: rules that the "
        "prompt's wording, format and temperature never reach, 0 by construction"
        if baselines
        else ""
    )
    for r in pooled_t.itertuples(index=False):
        left_out = f"; left out, one side only: {r.judges_left_out}" if r.judges_left_out else ""
        sec.text.append(
            f"- {r.condition}: {factor} {r.direction}: "
            f"{fmt_pp(r.delta, r.ci_lo, r.ci_hi)} (paired, pooled over {r.n_judges} rankable "
            f"judge{'s' if r.n_judges != 1 else ''} with both levels{left_out}{no_baselines})"
        )
    sec.text.extend(pooled_na)
    ranked_d = deltas[deltas["judge"].astype(str).isin(readers).to_numpy()]
    if len(ranked_d):
        sec.text.append(
            f"- largest per-judge move: {100 * ranked_d['delta'].abs().max():.2f} pp "
            f"({(ranked_d['ci_lo'] > 0).sum()} judge×condition deltas significantly > 0, "
            f"{(ranked_d['ci_hi'] < 0).sum()} significantly < 0, of {len(ranked_d)}; rankable judges that "
            "read the prompt only)."
        )
    # a reader's bar at exactly 0 (CI [0, 0]) is a judge the factor does not move, not a small effect: say so
    zero = (ranked_d["delta"] == 0) & (ranked_d["ci_lo"] == 0) & (ranked_d["ci_hi"] == 0)
    flat = ranked_d[zero.to_numpy()]
    for (judge, lev), rows in flat.groupby(["judge", "level"], sort=True, observed=True):
        conds = ", ".join(sorted(rows["condition"].astype(str)))
        sec.text.append(
            f"- {judge}: Δ exactly 0 in every resample for {factor} {lev} ({conds}): the same alignment at "
            f"both levels on the paired scenarios; this judge's alignment does not move with {factor} here, "
            "so its bar is 0 for that reason, not because a small effect was measured."
        )
    # the figure shows the judges the pooled delta averages: a calibration judge's delta is no judge's,
    # and a baseline's is an empty 0 by construction
    shown = deltas[deltas["judge"].astype(str).isin(readers).to_numpy()]
    if shown.empty:
        return sec
    plot = shown.assign(cell=shown["condition"].astype(str) + " · " + shown["direction"].astype(str))
    sec.figures[f"{key}_deltas"] = grouped_bars(
        plot,
        group="cell",
        hue="judge",
        value="delta",
        colors=ctx.colors,
        title=f"{title}\nΔ alignment ({factor}: {' ; '.join(pd.unique(shown['direction'].astype(str)))}), "
        "paired 95 % CI",
        ylabel="Δ alignment (pp)",
        xlabel=f"condition · {factor} Δ",
        labels=figure_labels(ctx, sorted(readers)),
    )
    return sec
