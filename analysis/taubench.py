"""τ-bench episodes: the agent's pass^k over its trials, and how the verdicts relate to τ-bench's reward.

A run folder made by ``agentjudge taubench`` holds τ-bench's published episodes as traces (one record per
episode: the user's turns as the query, the agent's calls, τ-bench's annotated actions as the GT) and, in
``taubench_episodes.parquet``, what τ-bench itself says of each episode: its task, trial and reward (the
end-state check). Nobody in this project wrote those episodes or tuned a prompt on that reward, so it tests
whether a judge's verdicts track an outcome from outside.

``summarize`` is the one computation behind this section and the verb's summary.md / summary.json:
- the agent's pass^k and pass@k over the trials of each task (``stats.passk``), its mean reward and the
  share of episodes with a tool error;
- the programmatic reference (strict scorer) against the reward: mean on solved and failed episodes, the
  AUC of each score as a predictor of the reward;
- per judge and condition: alignment with the reference, the mean verdict (over the four metrics, per
  episode) on solved and failed episodes, and the AUC of that mean for the reward.
Every AUC is ``stats.outcome.outcome_agreement``'s; the intervals resample τ-bench TASKS (the trials of a
task share the user, the instruction and the GT, so they are correlated).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from agentjudge.analysis._context import Context, Section

from agentjudge.stats.bootstrap import ClusterBootstrap
from agentjudge.stats.outcome import outcome_agreement
from agentjudge.stats.passk import pass_at_k, pass_hat_k
from agentjudge.types import METRICS

EPISODES_FILE = "taubench_episodes.parquet"
SCORE_COLUMNS = ("p_tool", "p_param", "p_seq", "p_cov", "p_value", "p_seq_dag")


def is_model_judge(judge: str) -> bool:
    """False for the project's own judges (``baseline/*`` calibration rules, ``simjudge/*`` simulations)."""
    return not judge.startswith(("baseline/", "simjudge/"))


def summarize(
    episodes: pd.DataFrame,
    judgments: pd.DataFrame | None,
    *,
    resamples: int = 1000,
    seed: int = 0,
    interval: str = "expanded",
) -> dict[str, Any]:
    """The summary of τ-bench episodes and their judgments.

    ``episodes``: one row per episode with ``task_id``, ``base_id`` (the task), ``reward``,
    ``n_tool_errors`` and the strict scores ``p_*``. ``judgments``: one row per metric verdict with
    ``record_id`` (the episode), ``base_id`` (the task), ``reward``, ``judge``, ``condition``, ``metric``,
    ``reference`` (strict) and ``verdict`` (NaN: failed). Every judge and condition is evaluated on the
    same resampled tasks."""
    solved = episodes["reward"] >= 1.0
    per_task = episodes.assign(ok=solved).groupby("task_id")["ok"].agg(["size", "sum"])
    n, c = per_task["size"].to_numpy(), per_task["sum"].to_numpy()
    max_k = int(n.min()) if len(n) else 0
    tasks = episodes["base_id"].astype(str)
    boot = ClusterBootstrap(tasks, resamples=resamples, seed=seed, interval=interval)  # type: ignore[arg-type]
    scores = episodes.melt(
        id_vars=["base_id"], value_vars=list(SCORE_COLUMNS), var_name="metric", value_name="score"
    ).assign(solved=np.tile(solved.to_numpy(), len(SCORE_COLUMNS)))
    # exact: per-episode scores, a few hundred distinct values at most (no 0.01 grid: 1/3 and 0.33 differ)
    ref_auc = outcome_agreement(scores, boot, ["metric"], "score", "solved", exact=True).set_index("metric")
    summary: dict[str, Any] = {
        "episodes": len(episodes),
        "tasks": len(per_task),
        "mean_reward": float(solved.mean()),
        "agent_pass_hat_k": {k: pass_hat_k(n, c, k) for k in range(1, max_k + 1)},
        "agent_pass_at_k": {k: pass_at_k(n, c, k) for k in range(1, max_k + 1)},
        "tool_error_rate": float((episodes["n_tool_errors"] > 0).mean()),
        "reference_vs_reward": {
            m: {
                "solved": float(episodes.loc[solved, m].mean()),
                "failed": float(episodes.loc[~solved, m].mean()),
                "auc": float(ref_auc.loc[m, "auc"]),
                "auc_ci": [float(ref_auc.loc[m, "auc_lo"]), float(ref_auc.loc[m, "auc_hi"])],
            }
            for m in SCORE_COLUMNS
        },
        "judges": [],
    }
    if judgments is None or not len(judgments):
        return summary
    summary["bootstrap"] = {
        "cluster": "task (base_id)",
        "clusters": len(boot.clusters),
        "resamples": resamples,
        "seed": seed,
        "interval": boot.interval,
    }
    aligned = judgments.assign(mu=1.0 - (judgments["reference"] - judgments["verdict"]).abs())
    align = boot.ratio(aligned, ["judge", "condition"], "mu", cluster_col="base_id")
    align_lo, align_hi = align.interval(align.draws)
    ok = judgments["verdict"].notna()
    per_episode = (
        judgments[ok]
        .groupby(["judge", "condition", "record_id"], sort=True)
        .agg(mean_verdict=("verdict", "mean"), reward=("reward", "first"), base_id=("base_id", "first"))
        .reset_index()
    )
    per_episode["solved"] = per_episode["reward"] >= 1.0
    aucs = (
        outcome_agreement(per_episode, boot, ["judge", "condition"], "mean_verdict", "solved", exact=True)
        if len(per_episode)
        else pd.DataFrame(columns=["judge", "condition", "auc", "auc_lo", "auc_hi"])  # no verdict at all
    )
    for (judge, condition), g in judgments.groupby(["judge", "condition"], sort=True):
        good = g["verdict"].notna()
        eps = per_episode[(per_episode["judge"] == judge) & (per_episode["condition"] == condition)]
        hit = aucs[(aucs["judge"] == judge) & (aucs["condition"] == condition)]
        row = hit.iloc[0] if len(hit) else None
        i = align.lookup(judge=judge, condition=condition)
        summary["judges"].append(
            {
                "judge": judge,
                "condition": condition,
                "model": is_model_judge(str(judge)),
                "judgments": int(len(g)),
                "failed": int((~good).sum()),
                "alignment_with_reference": float(align.estimate[i]) if good.any() else float("nan"),
                "alignment_ci": [float(align_lo[i]), float(align_hi[i])],
                "mean_verdict_solved": float(eps.loc[eps["solved"], "mean_verdict"].mean()),
                "mean_verdict_failed": float(eps.loc[~eps["solved"], "mean_verdict"].mean()),
                "auc_reward": float(row["auc"]) if row is not None else float("nan"),
                "auc_ci": [float(row["auc_lo"]), float(row["auc_hi"])] if row is not None else [np.nan] * 2,
            }
        )
    return summary


def markdown(summary: dict[str, Any], source: str) -> str:
    """summary.md: the summary as the τ-bench verb prints it."""
    lines = [
        "# τ-bench track",
        "",
        f"Source: `{source}` — {summary['episodes']} real episodes of {summary['tasks']} tasks "
        "(gpt-4o agent, airline domain; reward = τ-bench's end-state check). Tool schemas are inferred.",
        "",
        f"Agent mean reward {summary['mean_reward']:.3f}; episodes with at least one tool error "
        f"{summary['tool_error_rate']:.1%}.",
        "",
        "| k | pass^k | pass@k |",
        "|---|---|---|",
    ]
    for k, v in summary["agent_pass_hat_k"].items():
        lines.append(f"| {k} | {v:.3f} | {summary['agent_pass_at_k'][k]:.3f} |")
    lines += [
        "",
        "Programmatic reference (strict) vs reward:",
        "",
        "| metric | mean (solved) | mean (failed) | AUC for reward |",
        "|---|---|---|---|",
    ]
    for m, r in summary["reference_vs_reward"].items():
        lines.append(f"| {m} | {r['solved']:.3f} | {r['failed']:.3f} | {r['auc']:.3f} |")
    if summary["judges"]:
        not_models = sorted({j["judge"] for j in summary["judges"] if not j["model"]})
        boot = summary["bootstrap"]
        lines += ["", "Judges (mean verdict over the four metrics per episode):", ""]
        if not_models:
            lines += [
                f"> **Not models:** {', '.join(not_models)} are the project's baseline (calibration) or "
                "simulated judges, not models; their rows are reference points, not judge results.",
                "",
            ]
        lines += [
            f"[lo, hi] = 95 % cluster-bootstrap interval over the {boot['clusters']} τ-bench tasks "
            f"(the trials of a task resampled together; {boot['resamples']} resamples, seed {boot['seed']}, "
            f"{boot['interval']} interval).",
            "",
            "| judge | condition | judgments | failed | alignment w/ reference [95 % CI] | verdict (solved) "
            "| verdict (failed) | AUC for reward [95 % CI] |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for j in summary["judges"]:
            name = j["judge"] if j["model"] else f"{j['judge']} (not a model)"
            a_lo, a_hi = j["alignment_ci"]
            u_lo, u_hi = j["auc_ci"]
            lines.append(
                f"| {name} | {j['condition']} | {j['judgments']} | {j['failed']} | "
                f"{j['alignment_with_reference']:.3f} [{a_lo:.3f}, {a_hi:.3f}] | "
                f"{j['mean_verdict_solved']:.3f} | {j['mean_verdict_failed']:.3f} | "
                f"{j['auc_reward']:.3f} [{u_lo:.3f}, {u_hi:.3f}] |"
            )
    return "\n".join(lines) + "\n"


def tables(
    rundir: Path, judgments: pd.DataFrame, scores: pd.DataFrame | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(episodes, judgments) of a τ-bench run folder in the verb's columns: the episodes with their strict
    scores; one row per strict-mode metric verdict of the four metrics, keyed by τ-bench's own ids
    (``record_id`` the episode, ``base_id`` the task) with the episode's reward. ``judgments``: the run
    folder's rows (all of them, or the report's slice); ``scores``: scores.parquet's rows."""
    episodes = pd.read_parquet(rundir / EPISODES_FILE)
    run_ids = episodes[["run_record_id", "record_id", "base_id", "reward"]]
    if scores is not None and len(scores):
        strict = scores[scores["scoring_mode"].astype(str) == "strict"]
        strict = strict.assign(run_record_id=strict["record_id"].astype(str))[
            ["run_record_id", *SCORE_COLUMNS]
        ]
        episodes = episodes.merge(strict, on="run_record_id", how="left", validate="one_to_one")
    rows = judgments[
        (judgments["scoring_mode"].astype(str) == "strict").to_numpy()
        & judgments["metric"].astype(str).isin(METRICS).to_numpy()
    ]
    rows = rows.assign(run_record_id=rows["record_id"].astype(str)).drop(
        columns=[c for c in ("record_id", "base_id") if c in rows.columns]
    )
    rows = rows.merge(run_ids, on="run_record_id", how="inner", validate="many_to_one")
    for col in ("judge", "condition", "metric"):
        rows[col] = rows[col].astype(str)
    return episodes.drop(columns=["run_record_id"]), rows.drop(columns=["run_record_id"])


def analyze(ctx: Context) -> Section:
    sec = Section(
        key="taubench", title="τ-bench: the agent's pass^k, and the verdicts against τ-bench's reward"
    )
    main = ctx.data[ctx.data["condition"].astype(str).isin(["with_gt", "without_gt"]).to_numpy()]
    main = main[(main["trial"] == main["trial"].min()).to_numpy()]
    episodes, judgments = tables(ctx.rundir, main, ctx.scores)
    summary = summarize(
        episodes, judgments, resamples=ctx.boot.resamples, seed=ctx.boot.seed, interval=ctx.boot.interval
    )
    passk = pd.DataFrame(
        {
            "k": list(summary["agent_pass_hat_k"]),
            "pass_hat_k": list(summary["agent_pass_hat_k"].values()),
            "pass_at_k": list(summary["agent_pass_at_k"].values()),
        }
    )
    reference = pd.DataFrame(
        [
            {"metric": m, "mean_solved": r["solved"], "mean_failed": r["failed"], "auc": r["auc"],
             "auc_lo": r["auc_ci"][0], "auc_hi": r["auc_ci"][1]}
            for m, r in summary["reference_vs_reward"].items()
        ]
    )  # fmt: skip
    sec.tables["taubench_passk"] = passk
    sec.tables["taubench_reference_vs_reward"] = reference
    sec.text.append(
        f"{summary['episodes']} τ-bench episodes of {summary['tasks']} tasks; the agent's mean reward "
        f"{summary['mean_reward']:.3f}, pass^k "
        + ", ".join(f"k={k} {v:.3f}" for k, v in summary["agent_pass_hat_k"].items())
        + f"; episodes with a tool error {summary['tool_error_rate']:.1%}."
    )
    if summary["judges"]:
        judges = pd.DataFrame(summary["judges"])
        judges[["alignment_lo", "alignment_hi"]] = pd.DataFrame(judges.pop("alignment_ci").tolist())
        judges[["auc_lo", "auc_hi"]] = pd.DataFrame(judges.pop("auc_ci").tolist())
        sec.tables["taubench_judges"] = judges
        boot = summary["bootstrap"]
        sec.text.append(
            f"AUC of each judge's mean verdict (the four metrics, per episode) for τ-bench's reward, with "
            f"cluster-bootstrap intervals over the {boot['clusters']} tasks ({boot['interval']}):"
        )
        for j in summary["judges"]:
            lo, hi = j["auc_ci"]
            sec.text.append(
                f"- {ctx.judge_label(j['judge'])} / {j['condition']}: AUC {j['auc_reward']:.3f} "
                f"[{lo:.3f}, {hi:.3f}]"
            )
    return sec
