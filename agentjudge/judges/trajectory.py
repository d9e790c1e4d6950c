"""Judges that see outputs: the prompt of the trajectory conditions and the outcome verdict.

The published judge sees only the calls; an interactive episode also has what each call returned, the
errors, and the agent's final message, which is what a judge needs to tell whether the user's request was
ACCOMPLISHED (the outcome, compared with ``state_match``). Same shape as the structural prompts
(``prompts.py``): static instructions first from files in ``prompts/`` (``trajectory_*.md`` plus the
shared rubric, default and chain-of-thought files), untrusted content last in tagged JSON blocks. The four
metrics are parsed by ``parse.parse_verdicts`` exactly as for the other conditions; the outcome is read
here with the same number rules and scale (three-level snapped, free-form clamped) and counts as a fifth
verdict: a missing outcome makes the answer a parse failure.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentjudge.judges.parse import (
    ParsedVerdicts,
    _balanced_objects,
    _entry_value,
    _finish,
    _number,
    strip_reasoning,
)
from agentjudge.judges.prompts import (
    TAG_QUERY,
    TAG_TOOLS,
    _tool_payload,
    block,
    fill,
    load_template,
    safe_json,
    verdict_scale,
)
from agentjudge.types import TRAJECTORY_CONDITIONS, JudgeRequest, PromptVariant, Trajectory

TAG_TRAJECTORY = "agent_episode"
TAG_REFERENCE_EPISODE = "reference_episode"
_OWN_TAGS = re.compile(rf"<(\s*/?\s*(?:{TAG_TRAJECTORY}|{TAG_REFERENCE_EPISODE}))", re.IGNORECASE)
OUTCOME_KEYS = (
    "outcome",
    "accomplished",
    "request_accomplished",
    "task_accomplished",
    "goal_achieved",
    "success",
)
_FREE_OUTCOME = re.compile(r"outcome[\s*_`\"']*[:=][\s*_`\"']*([-+]?(?:\d+(?:\.\d*)?|\.\d+))", re.IGNORECASE)


def is_trajectory(condition: str) -> bool:
    return condition in TRAJECTORY_CONDITIONS


def _json(payload: Any) -> str:
    return _OWN_TAGS.sub(lambda m: "\\u003c" + m.group(1), safe_json(payload))


def _lines(items: list[Any]) -> str:
    return "[\n" + ",\n".join(_json(i) for i in items) + "\n]" if items else "[]"


def episode_payload(trajectory: Trajectory) -> dict[str, Any]:
    """What the judge reads: each call with its output or error, the final message, how it ended."""
    steps = []
    for k, s in enumerate(trajectory.steps, start=1):
        item: dict[str, Any] = {"step": k, "turn": s.turn, "name": s.call.name, "arguments": s.call.arguments}
        item.update({"error": s.error} if s.error is not None else {"output": s.output})
        steps.append(item)
    ended = {
        "answered": "the agent ended with a message",
        "max_turns": f"cut off after {trajectory.turns} turns without a final message",
        "unparseable": "the agent's last answer could not be read as calls or a message",
        "ended": "the recorded conversation ends without a final message",
    }[trajectory.stop_reason]
    return {"calls": steps, "final_message": trajectory.answer, "ended": ended}


def system_prompt(variant: PromptVariant, condition: str) -> str:
    three = verdict_scale(variant) == "three_level"
    parts = [load_template("trajectory_system.md")]
    if three:
        parts += [load_template("rubric_three_level.md"), load_template("trajectory_outcome_three_level.md")]
    parts.append(load_template(f"condition_{condition}.md"))
    parts.append(load_template(f"default_{variant.default_mode}.md"))
    parts.append(load_template(f"trajectory_format_{variant.prompt_format}.md"))
    parts.append(load_template("cot_on.md" if variant.cot else "cot_off.md"))
    return "\n\n".join(parts)


def user_prompt(request: JudgeRequest) -> str:
    if request.trajectory is None:
        raise ValueError(f"{request.task.record_id}: a {request.condition} judge request needs a trajectory")
    reference = ""
    if request.condition == "trajectory_with_gt":
        if request.gt is None:
            raise ValueError(f"{request.task.record_id}: trajectory_with_gt needs the GT trace")
        gt = [
            {"step": i + 1, "name": s.call.name, "arguments": s.call.arguments, "output": s.output,
             "depends_on": [d + 1 for d in s.depends_on]}
            for i, s in enumerate(request.gt)
        ]  # fmt: skip
        reference = (
            "\n"
            + fill("trajectory_reference_block.md", {"gt": block(TAG_REFERENCE_EPISODE, _lines(gt))})
            + "\n"
        )
    elif request.gt is not None:
        raise ValueError(f"{request.task.record_id}: trajectory_without_gt must not carry a GT trace")
    return fill(
        "trajectory_user.md",
        {
            "tools": block(TAG_TOOLS, _lines([_tool_payload(t) for t in request.task.tools])),
            "query": block(TAG_QUERY, _json(request.task.query)),
            "reference": reference,
            "trajectory": block(TAG_TRAJECTORY, _json(episode_payload(request.trajectory))),
        },
    )


def build_messages(request: JudgeRequest) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system_prompt(request.variant, request.condition)},
        {"role": "user", "content": user_prompt(request)},
    ]


def parse_outcome(text: str, variant: PromptVariant) -> tuple[float | None, str, list[str]]:
    """(outcome verdict or None, justification, problems): the last JSON object holding an outcome key,
    else a free-form "Outcome: <number>" line."""
    scale = verdict_scale(variant)
    problems: list[str] = []
    body = strip_reasoning(text or "", [])
    found: tuple[Any, str] | None = None
    for span in _balanced_objects(body):
        try:
            obj = json.loads(span)
        except json.JSONDecodeError:
            continue
        for holder in (
            [obj, *[v for v in obj.values() if isinstance(v, dict)]] if isinstance(obj, dict) else []
        ):
            key = next((k for k in holder if k.strip().lower() in OUTCOME_KEYS), None)
            if key is not None:
                found = _entry_value(holder[key])
                break
    if found is None:
        matches = _FREE_OUTCOME.findall(body)
        if matches:
            found = (matches[-1], "")
    if found is None:
        return None, "", ["missing verdict for outcome"]
    x = _number(found[0])
    if x is None:
        return None, "", [f"outcome: {found[0]!r} is not a number"]
    return _finish("outcome", x, scale, problems), found[1], problems


def with_outcome(
    parsed: ParsedVerdicts, text: str, variant: PromptVariant
) -> tuple[ParsedVerdicts, float | None]:
    """The four-metric parse plus the outcome: parse_ok only when all five verdicts were read."""
    value, reason, problems = parse_outcome(text, variant)
    rationales = dict(parsed.rationales)
    if reason:
        rationales["outcome"] = reason
    ok = parsed.parse_ok and value is not None
    return ParsedVerdicts(parsed.verdicts, rationales, ok, parsed.method, parsed.problems + problems), value
