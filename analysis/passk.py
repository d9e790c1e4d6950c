"""pass^k / pass@k (τ-bench, §8) for judges run several times per record and generators run several times
per task. A judge trial succeeds when every metric verdict equals the reference snapped to {0,0.5,1} (a
failed verdict is not a success); a generator trial succeeds when all four scores are 1."""

from __future__ import annotations

import numpy as np
import pandas as pd
from agentjudge.analysis._context import Context, Section
from agentjudge.analysis._figures import passk_lines

from agentjudge.stats import passk_curve, snap, success_counts
from agentjudge.types import METRICS

from ._common import figure_labels

TASK = [
    "record_id",
    "generator",
    "generator_trial",
    "judge",
    "condition",
    "prompt_format",
    "cot",
    "default_mode",
    "temperature",
]


def _judges(ctx: Context, sec: Section) -> None:
    df = ctx.df
    if df["trial"].nunique() < 2:
        sec.text.append(
            "Judges: this run has one trial per judgment; add trials: 4 (or more) to the pipeline "
            "for judge pass^k."
        )
        return
    hit = df["verdict"].to_numpy(float) == snap(df["reference"].to_numpy(float))
    tmp = df[TASK + ["trial"]].copy()
    tmp["hit"] = hit
    per_trial = tmp.groupby(TASK + ["trial"], observed=True, dropna=False)["hit"].all().reset_index()
    weight = None
    if ctx.design is not None:  # a sampled run: each task weighs as its cell's prefix says (stats.design)
        tmp["design_weight"] = df["design_weight"].to_numpy()
        w = tmp.groupby(TASK + ["trial"], observed=True, dropna=False)["design_weight"].first()
        per_trial["design_weight"] = w.to_numpy()
        weight = "design_weight"
    counts = success_counts(per_trial, TASK, "hit", weight)
    curve = passk_curve(counts, ["judge", "condition"])
    sec.tables["passk_judges"] = curve
    for (j, c), part in curve.groupby(["judge", "condition"], observed=True):
        last = part.iloc[-1]
        k = int(last["k"])
        sec.text.append(
            f"- judge {j}, {c}: pass^1 {100 * part.iloc[0]['pass_hat_k']:.1f} %, "
            f"pass^{k} {100 * last['pass_hat_k']:.1f} % (every trial exact), pass@{k} "
            f"{100 * last['pass_at_k']:.1f} % (at least one) ({int(last['tasks'])} tasks)"
        )
    multi = curve[curve.groupby(["judge", "condition"], observed=True)["k"].transform("max") > 1]
    sec.figures["passk_judges"] = passk_lines(
        multi,
        "judge",
        ctx.colors,
        "Judges: pass^k (every trial exact) and pass@k",
        panel="condition",
        labels=figure_labels(ctx, ctx.judges),
    )


def _generators(ctx: Context, sec: Section) -> None:
    sc = ctx.scores
    if sc is None:
        sec.text.append("Generators: this run folder has no scores.parquet.")
        return
    sc = sc[sc["scoring_mode"].astype(str) == ctx.scoring_mode]
    if sc["trial"].nunique() < 2:
        sec.text.append(
            "Generators: this run has one trial per task; add generator_trials: 4 to the pipeline "
            "for generator pass^k."
        )
        return
    tmp = pd.DataFrame(
        {
            "generator": sc["generator"].astype(str),
            "record_id": sc["record_id"].astype(str),
            "ok": np.all(sc[[f"p_{m}" for m in METRICS]].to_numpy(float) == 1.0, axis=1),
        }
    )
    weight = None
    if ctx.design is not None and "design_weight" in sc.columns:  # a sampled run's prediction prefixes
        tmp["design_weight"] = sc["design_weight"].to_numpy()
        weight = "design_weight"
    counts = success_counts(tmp, ["generator", "record_id"], "ok", weight)
    curve = passk_curve(counts, ["generator"])
    sec.tables["passk_generators"] = curve
    sec.figures["passk_generators"] = passk_lines(
        curve,
        "generator",
        {},
        "Generators: pass^k and pass@k",
        labels={g: ctx.generator_label(g) for g in curve["generator"].astype(str).unique()},
    )
    for g, part in curve.groupby("generator"):
        sec.text.append(
            f"- generator {ctx.generator_label(str(g))}: "
            + ", ".join(f"pass^{int(r.k)} {100 * r.pass_hat_k:.1f} %" for r in part.itertuples(index=False))
            + f"; pass@{int(part['k'].max())} {100 * part['pass_at_k'].iloc[-1]:.1f} % (at least one trial)"
        )


def analyze(ctx: Context) -> Section:
    sec = Section(key="passk", title="Consistency: pass^k and pass@k")
    _judges(ctx, sec)
    _generators(ctx, sec)
    if not sec.tables:
        sec.lacking = (
            "pass^k: this run has one trial per judgment and per generator task; add trials to the "
            "pipeline (judges and/or generators)."
        )
        sec.text = []
    return sec
