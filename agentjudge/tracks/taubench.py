"""τ-bench track (SPEC §10): real multi-turn agent trajectories as judge material.

The synthetic dataset gives judges clean single-shot calls. τ-bench's historical trajectories are the
opposite: a real agent (gpt-4o) talking to a simulated user over many turns, with tool errors and retries,
graded by τ-bench itself through the END STATE of a database (``reward``). Nobody in this project wrote
them, so they test whether a judge's verdicts track an outcome that no judge prompt was tuned on.

Per episode we derive:
- the agent's calls in order (``think`` is a no-op scratchpad tool and is left out), tool errors and turns;
- the GT: τ-bench's annotated actions (reads and writes), as a chain;
- the programmatic reference: the strict scorer of §6 on (GT actions, agent calls);
- tool schemas INFERRED from every call seen in the file (the file ships no schemas) — labelled as such.
Then any judge (baseline, litellm model, registered class) grades each episode with and without GT, and
the summary relates the verdicts to τ-bench's reward: mean verdict on solved vs failed episodes, the AUC of
a judge's mean verdict as a predictor of reward, and alignment with the programmatic reference. The agent's
own consistency is reported as pass^k over its four trials (the unbiased estimator of §8).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, ValidationError

from agentjudge import strict_json
from agentjudge.atomic import replacing_files
from agentjudge.errors import InputError
from agentjudge.models.failures import FailureLog
from agentjudge.types import (
    METRICS,
    Condition,
    GTStep,
    JudgeRequest,
    ModelSettings,
    Strict,
    Task,
    ToolCall,
    ToolSchema,
)

NO_OP_TOOLS = frozenset({"think"})
DEFAULT_JUDGES = ("baseline/always-1", "baseline/rule", "baseline/gt-rule", "baseline/ceiling")


class TauFunction(Strict):
    name: str
    arguments: str


class TauToolCall(Strict):
    id: str
    type: Literal["function"]
    function: TauFunction


class TauMessage(Strict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None
    tool_calls: list[TauToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class TauAction(Strict):
    name: str
    kwargs: dict[str, Any]


class TauTask(Strict):
    user_id: str
    instruction: str
    actions: list[TauAction]
    outputs: list[str]


class TauInfo(Strict):
    task: TauTask
    source: str
    user_cost: float | None  # null in some published episodes
    reward_info: dict[str, Any] | None  # null when the episode ended before tau-bench graded it


class TauEpisode(Strict):
    task_id: int
    trial: int
    reward: float = Field(ge=0, le=1, allow_inf_nan=False)  # NaN is not a failure: refused, naming it
    info: TauInfo
    traj: list[TauMessage]


class TauItem(Strict):
    """One episode turned into judge material."""

    base_id: str
    record_id: str
    task_id: int
    trial: int
    reward: float
    task: Task
    calls: list[ToolCall]
    gt: list[GTStep]
    n_turns: int
    n_tool_errors: int
    n_bad_arguments: int


class TauBenchError(InputError):
    """Unreadable trajectory file; the message names the file, the episode and the field."""


def load_episodes(path: Path) -> list[TauEpisode]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: not JSON, or not UTF-8 text
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0][:200]
        raise TauBenchError(f"{path}: cannot read τ-bench trajectories: {reason}") from None
    if not isinstance(raw, list):
        raise TauBenchError(f"{path}: expected a JSON list of episodes, got {type(raw).__name__}")
    episodes = []
    seen: dict[tuple[int, int], int] = {}
    for i, item in enumerate(raw):
        try:
            episode = TauEpisode.model_validate(item)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise TauBenchError(f"{path}: episode {i}, field {field}: {err['msg']}") from None
        key = (episode.task_id, episode.trial)
        if key in seen:  # it would be judged and counted twice
            raise TauBenchError(
                f"{path}: episode {i} (task_id {key[0]}, trial {key[1]}) repeats episode {seen[key]}; "
                "keep one"
            )
        seen[key] = i
        episodes.append(episode)
    return episodes


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string" if isinstance(value, str) else "null"


def infer_tool_schemas(episodes: Sequence[TauEpisode]) -> list[ToolSchema]:
    """Schemas from observed arguments: a key is required when every call of the tool has it."""
    seen: dict[str, list[dict[str, Any]]] = {}
    for ep in episodes:
        for action in ep.info.task.actions:
            seen.setdefault(action.name, []).append(action.kwargs)
        for msg in ep.traj:
            for tc in msg.tool_calls or []:
                args = _parse_arguments(tc.function.arguments)
                seen.setdefault(tc.function.name, []).append(args if args is not None else {})
    schemas = []
    for name in sorted(seen):
        calls = seen[name]
        types: dict[str, set[str]] = {}
        for args in calls:
            for key, value in args.items():
                types.setdefault(key, set()).add(_json_type(value))
        props = {
            key: {"type": sorted(t)[0]} if len(t) == 1 else {"type": sorted(t)}
            for key, t in sorted(types.items())
        }
        required = sorted(k for k in types if all(k in args for args in calls))
        schemas.append(
            ToolSchema(
                name=name,
                description=f"τ-bench airline tool {name} (schema inferred from {len(calls)} observed calls)",
                parameters={"type": "object", "properties": props, "required": required},
            )
        )
    return schemas


def _parse_arguments(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def to_item(episode: TauEpisode, tools: list[ToolSchema], domain: str = "airline") -> TauItem:
    """The judge's view of one episode: the user's turns as the query, the agent's calls, the GT actions."""
    user_turns = [m.content or "" for m in episode.traj if m.role == "user"]
    system = next((m.content or "" for m in episode.traj if m.role == "system"), "")
    calls: list[ToolCall] = []
    bad_arguments = 0
    for msg in episode.traj:
        for tc in msg.tool_calls or []:
            if tc.function.name in NO_OP_TOOLS:
                continue
            args = _parse_arguments(tc.function.arguments)
            if args is None:
                bad_arguments += 1  # kept as a call with no arguments: the judge sees the failure as it was
                args = {}
            calls.append(ToolCall(name=tc.function.name, arguments=args))
    tool_errors = sum(1 for m in episode.traj if m.role == "tool" and (m.content or "").startswith("Error"))
    gt = [
        GTStep(
            call=ToolCall(name=a.name, arguments=a.kwargs),
            output=None,  # τ-bench annotates actions, not their outputs
            depends_on=[i - 1] if i else [],
            description=f"annotated action {i + 1}",
        )
        for i, a in enumerate(episode.info.task.actions)
    ]
    base_id = f"tau-{domain}-{episode.task_id:03d}"
    record_id = f"{base_id}:trial{episode.trial}"
    query = "\n".join(f"User turn {i + 1}: {text}" for i, text in enumerate(user_turns))
    task = Task(
        record_id=record_id,
        base_id=base_id,
        difficulty="hard",
        query=query,
        system_prompt=system,
        tools=tools,
    )
    return TauItem(
        base_id=base_id,
        record_id=record_id,
        task_id=episode.task_id,
        trial=episode.trial,
        reward=episode.reward,
        task=task,
        calls=calls,
        gt=gt,
        n_turns=len(user_turns),
        n_tool_errors=tool_errors,
        n_bad_arguments=bad_arguments,
    )


def reference_scores(item: TauItem) -> dict[str, dict[str, float]]:
    """The §6 scores of the agent's calls against the annotated actions, both modes."""
    from agentjudge.scoring.scorer import score_calls

    expected = [s.call for s in item.gt]
    return {
        mode: score_calls(expected, item.calls, mode, tools=item.task.tools) for mode in ("paper", "strict")
    }


def episodes_table(items: Sequence[TauItem]) -> pd.DataFrame:
    rows = []
    for item in items:
        strict = reference_scores(item)["strict"]
        rows.append(
            {
                "base_id": item.base_id,
                "record_id": item.record_id,
                "task_id": item.task_id,
                "trial": item.trial,
                "reward": item.reward,
                "n_turns": item.n_turns,
                "n_calls": len(item.calls),
                "n_gt_actions": len(item.gt),
                "n_tool_errors": item.n_tool_errors,
                "n_bad_arguments": item.n_bad_arguments,
                **strict,
            }
        )
    return pd.DataFrame(rows)


async def judge_items(
    items: Sequence[TauItem],
    judges: Sequence[ModelSettings],
    conditions: Sequence[Condition],
    *,
    no_cache: bool = False,
) -> pd.DataFrame:
    """Every judge × condition × episode; one row per metric. Failures are rows with a null verdict."""
    from agentjudge.models.cache import CallCache
    from agentjudge.models.client import ModelClient
    from agentjudge.registry.factory import make_judge

    client = ModelClient(cache=CallCache(), read_cache=not no_cache)
    refs = {item.record_id: reference_scores(item) for item in items}
    rows: list[dict[str, Any]] = []

    async def one(settings: ModelSettings, judge: Any, item: TauItem, condition: Condition) -> None:
        strict = refs[item.record_id]["strict"]
        request = JudgeRequest(
            task=item.task,
            calls=item.calls,
            gt=None if condition == "without_gt" else item.gt,
            condition=condition,
            reference=(
                {m: {k: refs[item.record_id][m][f"p_{k}"] for k in METRICS} for m in ("paper", "strict")}
                if getattr(judge, "needs_reference", False)
                else None
            ),
        )
        try:
            result = await judge(request)
            verdicts, parse_ok, error = result.verdicts, result.parse_ok, result.error
            rationales = result.rationales
        except Exception as exc:  # recorded and counted, never defaulted
            verdicts, parse_ok, error, rationales = (
                dict.fromkeys(METRICS),
                False,
                f"{type(exc).__name__}: {exc}",
                {},
            )
        for metric in METRICS:
            rows.append(
                {
                    "record_id": item.record_id,
                    "base_id": item.base_id,
                    "reward": item.reward,
                    "judge": settings.display_name,
                    "condition": condition,
                    "metric": metric,
                    "reference": strict[f"p_{metric}"],
                    "verdict": verdicts.get(metric),
                    "parse_ok": parse_ok,
                    "judge_error": error,
                    "rationale": rationales.get(metric, ""),
                }
            )

    tasks = []
    for settings in judges:
        judge = make_judge(settings, client)
        tasks += [one(settings, judge, item, cond) for item in items for cond in conditions]
    await asyncio.gather(*tasks)
    table = pd.DataFrame(rows)
    return table.sort_values(["judge", "condition", "record_id", "metric"], kind="stable").reset_index(
        drop=True
    )


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Probability that a solved episode gets a higher score than a failed one (ties count half)."""
    pos, neg = scores[labels], scores[~labels]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def auc_draws(scores: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The AUC of every bootstrap resample: ``weights`` (B × episodes) are how often each episode is drawn.

    A resample that draws an episode k times counts each of its solved/failed pairs k times, so the AUC of
    the resample is Σ w_i w_j [s_i > s_j] (ties half) / (Σ w_pos · Σ w_neg) over solved i and failed j;
    NaN where a resample has no solved or no failed episode.
    """
    pos, neg = scores[labels], scores[~labels]
    wins = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    w_pos, w_neg = weights[:, labels], weights[:, ~labels]
    num = ((w_pos @ wins) * w_neg).sum(axis=1)
    den = w_pos.sum(axis=1) * w_neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def is_model_judge(judge: str) -> bool:
    """False for the project's own judges (``baseline/*`` calibration rules, ``simjudge/*`` simulations)."""
    return not judge.startswith(("baseline/", "simjudge/"))


def summarize(
    episodes: pd.DataFrame,
    judgments: pd.DataFrame | None,
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Agent consistency, the reference against reward, and every judge's alignment and AUC with 95 % CIs.

    The CIs resample τ-bench TASKS (``base_id``), not episodes: the four trials of one task share the user,
    the instruction and the GT, so their verdicts and rewards are correlated (SPEC §8's cluster bootstrap).
    Every judge and condition is evaluated on the same resampled tasks.
    """
    from agentjudge.stats.bootstrap import ClusterBootstrap, percentile_ci
    from agentjudge.stats.passk import pass_at_k, pass_hat_k

    solved = episodes["reward"] >= 1.0
    per_task = episodes.assign(ok=solved).groupby("task_id")["ok"].agg(["size", "sum"])
    n, c = per_task["size"].to_numpy(), per_task["sum"].to_numpy()
    max_k = int(n.min()) if len(n) else 0
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
                "auc": auc(episodes[m].to_numpy(), solved.to_numpy()),
            }
            for m in ("p_tool", "p_param", "p_seq", "p_cov", "p_value", "p_seq_dag")
        },
        "judges": [],
    }
    if judgments is not None and len(judgments):
        boot = ClusterBootstrap(judgments["base_id"].astype(str), resamples=resamples, seed=seed)
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
        for (judge, condition), g in judgments.groupby(["judge", "condition"], sort=True):
            ok = g["verdict"].notna()
            per_ep = (
                g[ok]
                .groupby("record_id")
                .agg(
                    mean_verdict=("verdict", "mean"), reward=("reward", "first"), base_id=("base_id", "first")
                )
            )
            labels = per_ep["reward"].to_numpy() >= 1.0
            scores = per_ep["mean_verdict"].to_numpy(dtype=float)
            ep_weights = boot.weights[:, boot.cluster_codes(per_ep["base_id"].astype(str))]
            auc_lo, auc_hi = percentile_ci(auc_draws(scores, labels, ep_weights), boot.alpha)
            i = align.lookup(judge=judge, condition=condition)
            summary["judges"].append(
                {
                    "judge": judge,
                    "condition": condition,
                    "model": is_model_judge(str(judge)),
                    "judgments": int(len(g)),
                    "failed": int((~ok).sum()),
                    "alignment_with_reference": float(align.estimate[i]) if ok.any() else float("nan"),
                    "alignment_ci": [float(align_lo[i]), float(align_hi[i])],
                    "mean_verdict_solved": float(per_ep.loc[labels, "mean_verdict"].mean()),
                    "mean_verdict_failed": float(per_ep.loc[~labels, "mean_verdict"].mean()),
                    "auc_reward": auc(scores, labels),
                    "auc_ci": [float(auc_lo[0]), float(auc_hi[0])],
                }
            )
    return summary


def _markdown(summary: dict[str, Any], source: Path) -> str:
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


@dataclass(frozen=True)
class TauBenchRun:
    """What ``run_taubench`` wrote into ``out``: the summary (also summary.json), its markdown (summary.md),
    the judgments without a verdict (parse or transport failures) and the failures by judge and reason."""

    out: Path
    summary: dict[str, Any]
    markdown: str
    failed: int
    failures: FailureLog


def run_taubench(
    data: Path,
    out: Path,
    judges: list[str] | None,
    api_base: str | None,
    conditions: list[str] | None,
    no_cache: bool = False,
    probe: bool = False,
) -> TauBenchRun:
    """Judge τ-bench's trajectories into ``out``; bad input (also a failed preflight) raises an
    ``InputError`` before anything is written."""
    from agentjudge.errors import PreflightError
    from agentjudge.fserrors import out_path_problem
    from agentjudge.models.failures import read_failure
    from agentjudge.registry.preflight import ModelUse, preflight

    episodes = load_episodes(data)
    bad = [c for c in conditions or [] if c not in ("with_gt", "without_gt")]
    if bad:
        raise TauBenchError(f"--condition {bad[0]!r}: the τ-bench track has with_gt and without_gt")
    if not episodes:
        raise TauBenchError(f"{data}: no episodes")
    settings = [ModelSettings(model=m, api_base=api_base) for m in (judges or DEFAULT_JUDGES)]
    uses = [ModelUse("judge", s, f"--judge[{i}]") for i, s in enumerate(settings)]
    problems = preflight(uses, probe=probe)
    out_problem = out_path_problem(out, "dir")
    problems += [f"--out {out_problem}"] if out_problem else []
    if problems:
        raise PreflightError(problems)
    tools = infer_tool_schemas(episodes)
    items = [to_item(ep, tools) for ep in episodes]
    ep_table = episodes_table(items)
    conds: list[Condition] = list(conditions or ["with_gt", "without_gt"])  # type: ignore[arg-type]
    judgments = asyncio.run(judge_items(items, settings, conds, no_cache=no_cache))
    summary = summarize(ep_table, judgments)
    markdown = _markdown(summary, data)
    names = ("episodes.parquet", "judgments.parquet", "summary.json", "summary.md")
    with replacing_files([out / name for name in names]) as (episodes_tmp, judgments_tmp, json_tmp, md_tmp):
        ep_table.to_parquet(episodes_tmp, index=False)  # the four files together, or none
        judgments.to_parquet(judgments_tmp, index=False)
        json_tmp.write_text(strict_json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        md_tmp.write_text(markdown, encoding="utf-8")
    failed = int(judgments["verdict"].isna().sum())
    log = FailureLog()
    per_unit = judgments.drop_duplicates(["judge", "condition", "record_id"])
    for row in per_unit.itertuples():
        if isinstance(row.judge_error, str):
            # read from the table's text until this track runs through the runner (kind kept as a field)
            log.add(str(row.judge), row.judge_error, read_failure(row.judge_error).kind)
        elif not row.parse_ok and row.judge in (judges or []):
            log.add(str(row.judge), row.rationale or "answer could not be parsed", None, "parse")
    return TauBenchRun(out, summary, markdown, failed, log)
