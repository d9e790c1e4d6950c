"""Outcome verdicts of the baseline judges in the trajectory conditions (no model involved).

They give the outcome study its floor and its reference points: ``rule`` reads only the episode (did it end
with a message, was every tool error recovered, was a call repeated), ``gt-rule`` compares the successful
calls with the GT shown, constants never look, and the oracle ``ceiling`` is ``state_match`` itself.
"""

from __future__ import annotations

from agentjudge.scoring.scorer import values_match
from agentjudge.types import GTStep, JudgeRequest, ToolCall, Trajectory


def _repeats(calls: list[ToolCall]) -> int:
    return sum(1 for i in range(1, len(calls)) if calls[i] == calls[i - 1])


def rule_outcome(trajectory: Trajectory) -> tuple[float, str]:
    """0 when the episode did not end with a message or a tool error was never followed by a successful
    call of that tool; 0.5 when a call was sent twice in a row (a possible duplicate side effect); else 1."""
    steps = trajectory.steps
    if trajectory.stop_reason != "answered":
        return 0.0, f"rule: the episode ended without a final message ({trajectory.stop_reason})"
    for i, s in enumerate(steps):
        if s.error is not None and not any(
            t.error is None and t.call.name == s.call.name for t in steps[i + 1 :]
        ):
            return 0.0, f"rule: the error of {s.call.name} at step {i + 1} was never recovered"
    if _repeats([s.call for s in steps if s.error is None]):
        return 0.5, "rule: a call was sent twice in a row"
    return 1.0, "rule: ended with a message, every error recovered, no repeated call"


def gt_outcome(gt: list[GTStep], trajectory: Trajectory) -> tuple[float, str]:
    """1 when every GT call was made successfully with the GT's values and none twice in a row; 0.5 when at
    least half were; else 0."""
    done = [s.call for s in trajectory.steps if s.error is None]
    used: set[int] = set()
    matched = 0
    for step in gt:
        for j, call in enumerate(done):
            if (
                j not in used
                and call.name == step.call.name
                and all(
                    k in call.arguments and values_match(v, call.arguments[k])
                    for k, v in step.call.arguments.items()
                )
            ):
                used.add(j)
                matched += 1
                break
    n = max(len(gt), 1)
    if matched == len(gt) and not _repeats(done):
        return 1.0, f"gt-rule: all {len(gt)} GT calls made with the GT's values"
    if matched * 2 >= n:
        return 0.5, f"gt-rule: {matched} of {len(gt)} GT calls made with the GT's values (or a call repeated)"
    return 0.0, f"gt-rule: {matched} of {len(gt)} GT calls made with the GT's values"


def baseline_outcome(kind: str, request: JudgeRequest, constant: float | None = None) -> tuple[float, str]:
    """The outcome verdict of baseline ``kind`` (constant, rule, gt-rule, ceiling) in a trajectory request."""
    traj = request.trajectory
    if traj is None:
        raise ValueError(f"{request.task.record_id}: a {request.condition} request without a trajectory")
    if kind == "constant" and constant is not None:
        return constant, f"constant baseline: always {constant:g}"
    if kind == "ceiling":
        if request.outcome_reference is None:
            raise ValueError(f"{request.task.record_id}: the ceiling needs outcome_reference (state_match)")
        return float(request.outcome_reference), "oracle: state_match itself"
    if kind == "gt-rule" and request.gt is not None:
        return gt_outcome(request.gt, traj)
    return rule_outcome(traj)
