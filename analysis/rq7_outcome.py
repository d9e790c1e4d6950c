"""RQ7 (issue 14): outcomes. Do judges that see the tool outputs recognise whether the user's request was
accomplished (``state_match``: the environment ends in the GT's end state)? Do they agree better with the
outcome than with the structural reference? Does any structural score predict the outcome? How much of the
judge–outcome gap remains when the judge also sees the GT episode?

Needs interactive generators (``generation: interactive``) and the ``trajectory_with_gt`` /
``trajectory_without_gt`` conditions; the state_match table needs only scores with an environment.
"Accomplished" is a verdict above 0.5 (three-level: 1.0); κ and accuracy use that call, AUC the verdict.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from agentjudge.analysis._common import draws, figure_labels, group_mean, paired, with_labels
from agentjudge.analysis._context import Context, Section, fmt_ci, fmt_pp
from agentjudge.analysis._figures import grouped_bars

from agentjudge.stats import diff_table, passk_curve, success_counts
from agentjudge.stats.outcome import outcome_agreement
from agentjudge.types import DIFFICULTIES, TRAJECTORY_CONDITIONS


def _difficulty_order(col: pd.Series) -> pd.Series:
    return (
        col.map({d: i for i, d in enumerate(DIFFICULTIES)}) if col.name == "difficulty" else col.astype(str)
    )


PREDICTORS = ("p_tool", "p_param", "p_seq", "p_cov", "p_value", "p_seq_dag", "writes_done")


def _scores(ctx: Context) -> pd.DataFrame | None:
    """Scores of the report's mode with a known state_match, each row labelled with its generation mode."""
    sc = ctx.scores
    if sc is None or "state_match" not in sc:
        return None
    sc = sc[(sc["scoring_mode"].astype(str) == ctx.scoring_mode) & sc["state_match"].notna()].copy()
    if sc.empty:
        return None
    sc["generation"] = "single_shot"
    preds = ctx.predictions
    if preds is not None and "generation" in preds:
        inter = preds.loc[preds["generation"] == "interactive", ["record_id", "generator", "trial"]]
        keys = set(map(tuple, inter.astype(str).to_numpy()))
        mask = [(r, g, str(t)) in keys for r, g, t in sc[["record_id", "generator", "trial"]].to_numpy()]
        sc.loc[np.array(mask, dtype=bool), "generation"] = "interactive"
    sc["base_id"] = sc["base_id"].astype(str)
    # read-only GT (no state-changing step): state_match is true whatever was done; unknown in older runs
    sc["read_only"] = sc["writes_done"].isna() if "writes_done" in sc else False
    if "writes_done" not in sc:
        sc["writes_done"] = np.nan
    sc["state"] = sc["state_match"].astype(bool).astype(float)
    return sc


def _state_tables(ctx: Context, sec: Section, sc: pd.DataFrame) -> None:
    keys = ["generator", "generation", "difficulty"]
    table = ctx.boot.ratio(sc, keys, "state").table("state_match_rate")
    table = table.sort_values(["generator", "difficulty"], key=_difficulty_order, ignore_index=True)
    writes = group_mean(ctx, sc, keys, ["writes_done"])["writes_done"]  # design-weighted when sampled
    table = table.merge(writes.rename("writes_done").reset_index(), on=keys)
    # a read-only GT's state_match is true whatever was done: the rate again without them, beside the count
    changing = sc.assign(state_changing=sc["state"].where(~sc["read_only"]))
    ch = ctx.boot.ratio(changing, keys, "state_changing").table("state_match_rate_changing")
    ch = ch.rename(columns={"ci_lo": "changing_ci_lo", "ci_hi": "changing_ci_hi"})
    table = table.merge(ch[[*keys, "state_match_rate_changing", "changing_ci_lo", "changing_ci_hi"]], on=keys)
    read_only = changing.groupby(keys, observed=True)["read_only"].sum().astype(int).rename("n_read_only")
    table = table.merge(read_only.reset_index(), on=keys)
    sec.tables["outcome_state_match"] = with_labels(ctx, table.drop(columns=["n_failed", "failure_rate"]))
    sec.text.append(
        "State match (the generator's calls leave the environment in the GT's end state), per generator and "
        "difficulty, with 95 % cluster-bootstrap CIs; writes_done is the share of the GT's state-changing "
        "calls reproduced exactly. A request whose GT changes nothing (read-only) matches whatever the "
        "generator did, so the rate is also given without them (state_match_rate_changing, the figure the "
        "predictor and judge tables below use):"
    )
    for r in table.itertuples(index=False):
        sec.text.append(
            f"- {ctx.generator_label(str(r.generator))} ({r.generation}), {r.difficulty}: "
            f"{fmt_ci(r.state_match_rate, r.ci_lo, r.ci_hi)}"
            + ("" if np.isnan(r.writes_done) else f", writes done {100 * r.writes_done:.1f} %")
            + (
                f"; without the {r.n_read_only} read-only: "
                + fmt_ci(r.state_match_rate_changing, r.changing_ci_lo, r.changing_ci_hi)
                if r.n_read_only
                else ""
            )
        )
    long = sc[~sc["read_only"]].melt(  # read-only GTs: state_match is vacuous, left out
        id_vars=["base_id", "generation", "state_match"],
        value_vars=[c for c in PREDICTORS if c in sc],
        var_name="score",
        value_name="value",
    )
    pred = outcome_agreement(long, ctx.boot, ["generation", "score"], "value", outcome="state_match")
    sec.tables["outcome_predictors"] = pred
    sec.text.append(
        "Does a structural score predict the outcome? AUC of each score against state_match on requests that "
        "change state (0.5 = no better than chance; writes_done is outcome-derived: a reference point):"
    )
    for gen, part in pred.groupby("generation", observed=True):
        structural = part[part["score"] != "writes_done"].sort_values("auc", ascending=False)
        if structural.empty:
            continue
        b = structural.iloc[0]
        sec.text.append(
            f"- {gen}: best structural score {b['score']}, AUC {b['auc']:.2f} [{b['auc_lo']:.2f}, "
            f"{b['auc_hi']:.2f}]; all: "
            + ", ".join(f"{r.score} {r.auc:.2f}" for r in part.itertuples(index=False))
        )


def _judge_tables(ctx: Context, sec: Section) -> None:
    df = ctx.vary(None, conditions=TRAJECTORY_CONDITIONS)
    out = df[df["metric"].astype(str) == "outcome"].copy()
    if out.empty:
        sec.text.append(
            "Judges: this run has no outcome verdicts; add `trajectory_with_gt` / `trajectory_without_gt` "
            "to `conditions` (they apply to generators with `generation: interactive`)."
        )
        return
    sc = _scores(ctx)
    if sc is not None:  # state_match says nothing when the GT changes nothing (read-only requests)
        read_only = sc.loc[sc["read_only"], ["record_id", "generator", "trial"]].astype(str)
        drop = set(map(tuple, read_only.to_numpy()))
        keys = df[["record_id", "generator", "generator_trial"]].astype(str).to_numpy()
        mask = np.array([tuple(k) not in drop for k in keys], dtype=bool)
        n_out = int((~mask & (df["metric"].astype(str) == "outcome").to_numpy()).sum())
        if n_out:
            sec.text.append(
                f"{n_out} outcome verdicts on requests whose GT changes nothing (read-only: state_match is "
                "true whatever the agent did) are left out of the judge tables (their four metrics too)."
            )
        df = df[mask]
        out = df[df["metric"].astype(str) == "outcome"].copy()
    out["outcome"] = out["reference"] == 1.0
    table = outcome_agreement(out, ctx.boot, ["condition", "judge"], "verdict")
    sec.tables["outcome_judges"] = with_labels(ctx, table)
    sec.text.append(
        "Judges that see the episode (calls, outputs, errors, final message): their outcome verdict against "
        "state_match. A verdict above 0.5 is the call 'accomplished' (on the three-level scale only 1.0; "
        "0.5 counts as not accomplished); accuracy and Cohen's κ score that yes/no call, AUC ranks the "
        "verdict itself (0.5 between 0 and 1); 95 % CIs. Null verdicts are counted in n_missing, never "
        "scored:"
    )
    for r in table.itertuples(index=False):
        sec.text.append(
            f"- {ctx.judge_label(str(r.judge))}, {r.condition}: accuracy "
            f"{fmt_ci(r.accuracy, r.accuracy_lo, r.accuracy_hi)}, κ {r.kappa:.2f} "
            f"[{r.kappa_lo:.2f}, {r.kappa_hi:.2f}], AUC {r.auc:.2f} ({r.n} verdicts, {r.n_missing} failed)"
        )
    # outcome agreement vs structural alignment, same judge units (paired)
    out["agree"] = np.where(
        out["verdict"].isna(), np.nan, ((out["verdict"] > 0.5) == out["outcome"]).astype(float)
    )
    structural = df[df["metric"].astype(str) != "outcome"].copy()
    structural["agree"] = structural["mu"]
    both = pd.concat(
        [out.assign(target="outcome"), structural.assign(target="structural")], ignore_index=True
    )
    gd = draws(ctx, both, ["judge", "condition", "target"], value="agree")
    vs = diff_table(
        gd, ["judge", "condition"], "target", "outcome", "structural", name="outcome_minus_structural"
    )
    sec.tables["outcome_vs_structural"] = with_labels(ctx, vs)
    sec.text.append(
        "Do they agree better with the outcome than with the structural reference? Outcome agreement "
        "(the yes/no call above vs state_match) minus structural alignment (μ over the four metrics) of the "
        "same judge and condition, paired CI:"
    )
    for r in vs.itertuples(index=False):
        delta = fmt_pp(r.outcome_minus_structural, r.ci_lo, r.ci_hi)
        sec.text.append(f"- {ctx.judge_label(str(r.judge))}, {r.condition}: {delta}")
    if {"trajectory_with_gt", "trajectory_without_gt"} <= set(out["condition"].astype(str)):
        gd_o = draws(ctx, paired(ctx, out, "condition"), ["judge", "condition"], value="agree")
        gap = diff_table(
            gd_o, ["judge"], "condition", "trajectory_with_gt", "trajectory_without_gt", name="gt_gain"
        )
        acc = {
            (str(k.judge), str(k.condition)): e
            for k, e in zip(gd_o.keys.itertuples(index=False), gd_o.estimate, strict=True)
        }
        gap["gap_without_gt"] = [1 - acc[(str(j), "trajectory_without_gt")] for j in gap["judge"]]
        gap["gap_with_gt"] = [1 - acc[(str(j), "trajectory_with_gt")] for j in gap["judge"]]
        with np.errstate(invalid="ignore", divide="ignore"):
            gap["gap_remaining"] = gap["gap_with_gt"] / gap["gap_without_gt"]
        sec.tables["outcome_gt_gap"] = with_labels(ctx, gap)
        sec.text.append(
            "How much of the judge–outcome gap (1 − outcome agreement) remains with the GT episode shown:"
        )
        for r in gap.itertuples(index=False):
            sec.text.append(
                f"- {ctx.judge_label(str(r.judge))}: gap {100 * r.gap_without_gt:.1f} % without GT, "
                f"{100 * r.gap_with_gt:.1f} % with GT (GT gain {fmt_pp(r.gt_gain, r.ci_lo, r.ci_hi)})"
            )
    plot = table.assign(align=table["accuracy"], ci_lo=table["accuracy_lo"], ci_hi=table["accuracy_hi"])
    sec.figures["outcome_judges"] = grouped_bars(
        plot, group="condition", hue="judge", value="align", colors=ctx.colors,
        title="Outcome verdict vs state_match: accuracy (95 % CI)", ylabel="accuracy", xlabel="condition",
        labels=figure_labels(ctx, ctx.judges),
    )  # fmt: skip


def _passk(ctx: Context, sec: Section, sc: pd.DataFrame) -> None:
    if sc["trial"].nunique() < 2:
        sec.text.append("Generator pass^k with state_match as success needs generator_trials ≥ 2.")
        return
    tmp = sc.assign(ok=sc["state_match"].astype(bool), generator=sc["generator"].astype(str))
    weight = "design_weight" if ctx.design is not None and "design_weight" in tmp.columns else None
    counts = success_counts(tmp, ["generator", "record_id"], "ok", weight)
    curve = passk_curve(counts, ["generator"])
    sec.tables["outcome_passk"] = curve
    sec.text.append("Generator pass^k (unbiased, τ-bench) with state_match as success:")
    for g, part in curve.groupby("generator"):
        sec.text.append(
            f"- {ctx.generator_label(str(g))}: "
            + ", ".join(f"pass^{int(r.k)} {100 * r.pass_hat_k:.1f} %" for r in part.itertuples(index=False))
        )


def analyze(ctx: Context) -> Section:
    sec = Section(
        key="rq7_outcome", title="RQ7 Outcomes: do judges that see outputs know whether the job got done?"
    )
    sc = _scores(ctx)
    if sc is None and not (ctx.data["metric"].astype(str) == "outcome").any():
        sec.lacking = (
            "Outcomes: this run has no state_match (records without an environment) and no outcome verdicts; "
            "run generators with `generation: interactive` and the trajectory_* conditions."
        )
        return sec
    if sc is not None:
        _state_tables(ctx, sec, sc)
    _judge_tables(ctx, sec)
    if sc is not None:
        _passk(ctx, sec, sc)
    return sec
