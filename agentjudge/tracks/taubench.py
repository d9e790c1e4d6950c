"""τ-bench track: real multi-turn agent trajectories as judge material, through the traces path.

The synthetic dataset gives judges clean single-shot calls. τ-bench's historical trajectories are the
opposite: a real agent (gpt-4o) talking to a simulated user over many turns, with tool errors and retries,
graded by τ-bench itself through the END STATE of a database (``reward``). Nobody in this project wrote
them, so they test whether a judge's verdicts track an outcome that no judge prompt was tuned on.

τ-bench's file is one more input format of ``agentjudge import traces`` (``tracks/traces/``): each episode
is a recorded conversation (``to_trace``) -- the user's turns as the query, the agent's calls in order
(``think``, a no-op scratchpad tool, left out; arguments that are not JSON kept as a call with none and
counted), its tool outputs (an output starting "Error" as the step's error), τ-bench's annotated actions
(reads and writes) as the expected calls, tool schemas INFERRED from every call seen in the file (it ships
none), labelled as such. ``run_taubench`` makes OUT/run an ordinary run folder of them and runs the judges
through the runner (its store, resume, cost cap and failure log), then writes the verb's files from it:
``episodes.parquet`` (τ-bench's facts per episode with the strict programmatic scores),
``judgments.parquet``, ``summary.json`` and ``summary.md`` (``analysis/taubench.py``: the agent's pass^k,
and each judge's alignment and AUC for τ-bench's reward, which the run's report also shows).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import Field, ValidationError

from agentjudge import strict_json
from agentjudge.analysis.taubench import EPISODES_FILE
from agentjudge.atomic import replacing_files
from agentjudge.errors import InputError
from agentjudge.models.failures import FailureLog
from agentjudge.runner.result import RunResult
from agentjudge.tracks.traces.conversation import Trace, build_trace
from agentjudge.tracks.traces.conversation import infer_tool_schemas as infer_from_calls
from agentjudge.types import ModelSettings, Strict, ToolCall, ToolSchema

NO_OP_TOOLS = frozenset({"think"})
DEFAULT_JUDGES = ("baseline/always-1", "baseline/rule", "baseline/gt-rule", "baseline/ceiling")
RUN_FOLDER = "run"  # OUT/run: the run folder the judges run in


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


def _parse_arguments(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def infer_tool_schemas(episodes: Sequence[TauEpisode], domain: str = "airline") -> list[ToolSchema]:
    """Schemas from observed arguments (annotated actions and the agent's calls; a call whose arguments
    are not JSON counts as one without any): a key is required when every call of the tool has it."""
    observed: list[tuple[str, dict[str, Any]]] = []
    for ep in episodes:
        observed += [(a.name, a.kwargs) for a in ep.info.task.actions]
        for msg in ep.traj:
            for tc in msg.tool_calls or []:
                observed.append((tc.function.name, _parse_arguments(tc.function.arguments) or {}))
    return infer_from_calls(observed, f"τ-bench {domain}")


def episode_id(episode: TauEpisode, domain: str = "airline") -> str:
    """The conversation's id in the run: τ-bench's task and trial ("tau-airline-003:trial1")."""
    return f"tau-{domain}-{episode.task_id:03d}:trial{episode.trial}"


def to_trace(episode: TauEpisode, tools: list[ToolSchema], domain: str = "airline") -> Trace:
    """One episode as a recorded conversation (module docstring); its metadata: τ-bench's task, trial,
    reward, turns, tool errors and calls whose arguments are not JSON."""
    messages: list[dict[str, Any]] = []
    bad_arguments = 0
    for m in episode.traj:
        message: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            calls = []
            for tc in m.tool_calls:
                args = _parse_arguments(tc.function.arguments)
                if args is None and tc.function.name not in NO_OP_TOOLS:
                    bad_arguments += (
                        1  # kept as a call with no arguments: the judge sees the failure as it was
                    )
                calls.append({"id": tc.id, "name": tc.function.name, "arguments": args or {}})
            message["tool_calls"] = calls
        if m.role == "tool":
            message.update(tool_call_id=m.tool_call_id, name=m.name)
            if (m.content or "").startswith("Error"):
                message["error"] = m.content
        messages.append(message)
    tool_errors = sum(1 for m in episode.traj if m.role == "tool" and (m.content or "").startswith("Error"))
    users = sum(1 for m in episode.traj if m.role == "user")
    return build_trace(
        messages,
        f"episode task {episode.task_id} trial {episode.trial}",
        trace_id=episode_id(episode, domain),
        line=0,
        tools=tools,
        expected=[ToolCall(name=a.name, arguments=a.kwargs) for a in episode.info.task.actions],
        metadata={
            "task_id": episode.task_id,
            "trial": episode.trial,
            "reward": episode.reward,
            "n_turns": users,
            "n_tool_errors": tool_errors,
            "n_bad_arguments": bad_arguments,
        },
        skip_tools=NO_OP_TOOLS,
    )


def episode_rows(traces: Sequence[Trace], domain: str = "airline") -> pd.DataFrame:
    """τ-bench's facts per episode (the run folder's taubench_episodes.parquet): its τ-bench ids, its
    record id in the run, reward, turns, calls, annotated actions, tool errors, unreadable arguments."""
    from agentjudge.tracks.traces.importer import DIFFICULTY

    rows = []
    for t in traces:
        meta = t.metadata
        rows.append(
            {
                "base_id": f"tau-{domain}-{meta['task_id']:03d}",
                "record_id": t.id,
                "task_id": meta["task_id"],
                "trial": meta["trial"],
                "reward": meta["reward"],
                "n_turns": meta["n_turns"],
                "n_calls": len(t.calls),
                "n_gt_actions": len(t.expected or []),
                "n_tool_errors": meta["n_tool_errors"],
                "n_bad_arguments": meta["n_bad_arguments"],
                "run_record_id": f"{t.id}:{DIFFICULTY}",
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class TauBenchRun:
    """What ``run_taubench`` wrote into ``out``: the summary (also summary.json), its markdown (summary.md),
    the judgments without a verdict (parse or transport failures), the failures by judge and reason, and
    the run of the judges in ``out/run`` (``RunResult``: stopped models, units not run, the resume
    command)."""

    out: Path
    summary: dict[str, Any]
    markdown: str
    failed: int
    failures: FailureLog
    run: RunResult


def run_taubench(
    data: Path,
    out: Path,
    judges: list[str] | None,
    api_base: str | None,
    conditions: list[str] | None,
    no_cache: bool = False,
    probe: bool = False,
    progress: Any = None,
) -> TauBenchRun:
    """Judge τ-bench's trajectories in the run folder ``out/run`` and write the verb's files into ``out``;
    bad input (also a failed preflight) raises an ``InputError`` before anything is written. A re-run of
    the same command continues the run; another file or other judges in the same ``out`` are refused."""
    from agentjudge.errors import PreflightError
    from agentjudge.fserrors import out_path_problem
    from agentjudge.registry.preflight import ModelUse, preflight
    from agentjudge.runner.run import run_pipeline

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
    traces = [to_trace(ep, tools) for ep in episodes]
    conds = list(conditions or ["with_gt", "without_gt"])
    rundir = out / RUN_FOLDER
    _prepare(rundir, traces, data, settings, conds)
    result = run_pipeline(rundir / "pipeline.yaml", rundir, no_cache=no_cache, progress=progress)
    return _write_outputs(out, rundir, data, result)


def _prepare(
    rundir: Path, traces: list[Trace], data: Path, judges: list[ModelSettings], conditions: list[str]
) -> None:
    """The run folder of the episodes: made beside and renamed into place the first time; a re-run keeps
    it (its run resumes) when it holds the same episodes, and refuses it otherwise."""
    import tempfile

    from agentjudge.tracks.traces.importer import RECORDS_FILE, built_beside, write_folder

    def build(work: Path) -> None:
        write_folder(
            work, traces, data.stem, "taubench", data.resolve(), label="τ-bench airline",
            judges=judges, conditions=conditions,
        )  # fmt: skip
        episode_rows(traces).to_parquet(work / EPISODES_FILE, index=False)

    if not rundir.exists():
        built_beside(rundir, build)
        return
    with tempfile.TemporaryDirectory(dir=rundir.parent) as tmp:
        fresh = Path(tmp)
        build(fresh)
        held = rundir / RECORDS_FILE
        if not held.is_file() or held.read_bytes() != (fresh / RECORDS_FILE).read_bytes():
            raise TauBenchError(
                f"{rundir}: holds the run of other episodes (or no τ-bench run); give another --out"
            )
        if (fresh / "pipeline.yaml").read_bytes() != (rundir / "pipeline.yaml").read_bytes():
            raise TauBenchError(
                f"{rundir}: holds the run of other judges or conditions; give another --out (or add judges "
                f"to it: agentjudge run {rundir / 'pipeline.yaml'} --out {rundir} --add-judge MODEL)"
            )


def _write_outputs(out: Path, rundir: Path, data: Path, result: RunResult) -> TauBenchRun:
    """episodes.parquet, judgments.parquet, summary.json and summary.md of the run in ``rundir``."""
    from agentjudge.analysis.taubench import markdown, summarize, tables
    from agentjudge.rundir import RunFolder

    folder = RunFolder.open(rundir)
    columns = ["record_id", "judge", "condition", "metric", "reference", "verdict", "parse_ok", "judge_error",
               "rationale", "scoring_mode", "trial"]  # fmt: skip
    episodes, judgments = tables(rundir, folder.judgments(columns=columns), folder.scores())
    kept = ["record_id", "base_id", "reward", "judge", "condition", "metric", "reference", "verdict",
            "parse_ok", "judge_error", "rationale"]  # fmt: skip
    order = ["judge", "condition", "record_id", "metric"]
    judgments = judgments[kept].sort_values(order, kind="stable").reset_index(drop=True)
    errors = judgments["judge_error"]
    judgments["judge_error"] = errors.astype(object).where(errors.notna(), None)  # text, or None
    summary = summarize(episodes, judgments)
    text = markdown(summary, str(data))
    names = ("episodes.parquet", "judgments.parquet", "summary.json", "summary.md")
    with replacing_files([out / name for name in names]) as (episodes_tmp, judgments_tmp, json_tmp, md_tmp):
        episodes.to_parquet(episodes_tmp, index=False)  # the four files together, or none
        judgments.to_parquet(judgments_tmp, index=False)
        json_tmp.write_text(strict_json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        md_tmp.write_text(text, encoding="utf-8")
    log = FailureLog()
    for group in result.failures:
        for _ in range(group.count):
            log.add(group.model, group.example, None, group.reason)
    return TauBenchRun(out, summary, text, int(judgments["verdict"].isna().sum()), log, result)
