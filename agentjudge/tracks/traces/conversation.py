"""One recorded conversation turned into what the run needs: the query, the agent's calls, its episode.

Every input format (OpenAI-style JSON Lines, an Inspect log, τ-bench's published trajectories) reads its
file into chat messages of one shape -- ``{"role", "content", "tool_calls", "tool_call_id", "name",
"error"}`` -- and ``build_trace`` reads those the same way for all of them:

- the user's turns are the query (one turn: its text; several: "User turn 1: ..." lines, one per turn);
  system (and developer) messages are the system prompt;
- the assistant's ``tool_calls``, in order, are the agent's calls (``{"id", "name", "arguments"}``, or
  OpenAI's ``{"id", "type", "function": {"name", "arguments"}}``);
- ``tool`` messages are their outputs, matched by ``tool_call_id`` (by order where a message has none);
  a conversation with at least one is an episode (``types.Trajectory``), which judges also see under the
  trajectory conditions: each call with its output (text that is JSON is read as JSON) or error;
- a final assistant message with text and no calls is the agent's answer; without one the episode
  "ended" (the recording stops there).

Bad input raises ``TraceError`` naming the file, the line (or sample) and the field: no user turn, a call
without a name, arguments that are not a JSON object, a tool output that answers no call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentjudge.errors import InputError
from agentjudge.types import ToolCall, ToolSchema, ToolStep, Trajectory


class TraceError(InputError):
    """A traces file that cannot be imported; the message names the file, the line and the field."""


@dataclass
class Trace:
    """One conversation, as the import needs it. ``tools`` None: the file gave none (inferred later);
    ``expected`` None: no expected calls were given (the record has no GT)."""

    id: str
    line: int
    query: str
    system_prompt: str
    calls: list[ToolCall]
    trajectory: Trajectory | None
    tools: list[ToolSchema] | None = None
    expected: list[ToolCall] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def text_of(content: Any) -> str:
    """A message's text: a string as it is; a list of content parts, their text parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        return "\n".join(p for p in parts if p)
    return json.dumps(content, ensure_ascii=False)


def arguments_of(value: Any, where: str) -> dict[str, Any]:
    """A call's arguments: a JSON object, or a string holding one (OpenAI's spelling); else TraceError."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError as exc:
            raise TraceError(f"{where}: arguments are not JSON ({exc})") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TraceError(f"{where}: arguments are not a JSON object (got {type(value).__name__})")
    return value


def output_of(content: Any) -> Any:
    """A tool's output as the judge reads it: text that is a JSON object or list, read as JSON."""
    text = text_of(content) if not isinstance(content, dict | list) or _is_parts(content) else content
    if isinstance(text, str) and text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _is_parts(content: Any) -> bool:
    return isinstance(content, list) and all(isinstance(p, dict) and "type" in p for p in content)


def call_of(item: Any, where: str) -> ToolCall:
    """One expected call: ``{name, arguments}`` or an OpenAI function object (``{"type": "function",
    "function": {name, arguments}}`` or ``{"function": {...}}``)."""
    if not isinstance(item, dict):
        raise TraceError(f"{where}: a call must be a JSON object, got {type(item).__name__}")
    body = item["function"] if isinstance(item.get("function"), dict) else item
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise TraceError(f"{where}: a call without a name")
    return ToolCall(name=name, arguments=arguments_of(body.get("arguments"), where))


def build_trace(
    messages: Sequence[dict[str, Any]],
    where: str,
    *,
    trace_id: str,
    line: int,
    tools: list[ToolSchema] | None = None,
    expected: list[ToolCall] | None = None,
    metadata: dict[str, Any] | None = None,
    skip_tools: Iterable[str] = (),
) -> Trace:
    """The trace of one conversation in the common message shape (module docstring); ``where`` names the
    file and line for errors ("agent.jsonl, line 12"); ``skip_tools``: calls left out of the calls and the
    episode (τ-bench's no-op ``think``)."""
    skipped = set(skip_tools)
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    if not any(u.strip() for u in users):
        raise TraceError(f"{where}: field messages: no user turn with text (the user's turns are the query)")
    users = [u for u in users if u.strip()]
    query = users[0] if len(users) == 1 else "\n".join(f"User turn {i}: {u}" for i, u in enumerate(users, 1))
    system = "\n".join(
        text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
    )
    calls: list[ToolCall] = []
    steps: list[ToolStep] = []
    by_id: dict[str, int] = {}  # call id -> its step
    waiting: list[int] = []  # steps without an output yet, in order (a tool message without an id)
    outputs = 0
    turns = 0
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            turns += 1
            for j, raw in enumerate(message.get("tool_calls") or []):
                here = f"{where}: field messages[{i}].tool_calls[{j}]"
                nested = isinstance(raw, dict) and isinstance(raw.get("function"), dict)
                body = raw["function"] if nested else raw
                here += ".function" if nested else ""
                name = body.get("name") if isinstance(body, dict) else None
                if not isinstance(name, str) or not name:
                    raise TraceError(f"{here}.name: a call without a name")
                if name in skipped:
                    continue
                call = ToolCall(name=name, arguments=arguments_of(body.get("arguments"), f"{here}.arguments"))
                calls.append(call)
                steps.append(ToolStep(turn=turns, call=call, executed=False))
                if raw.get("id"):
                    by_id[str(raw["id"])] = len(steps) - 1
                waiting.append(len(steps) - 1)
        elif role in ("tool", "function"):
            call_id = message.get("tool_call_id")
            if call_id is not None and str(call_id) in by_id:
                k = by_id[str(call_id)]
            elif call_id is not None and message.get("name") in skipped:
                continue  # the output of a call left out
            elif call_id is not None:
                raise TraceError(
                    f"{where}: field messages[{i}].tool_call_id: {call_id!r} answers no call of the "
                    "conversation"
                )
            elif waiting:
                k = waiting[0]
            else:
                raise TraceError(
                    f"{where}: field messages[{i}]: a tool output before any call it could answer"
                )
            if k in waiting:
                waiting.remove(k)
            error = message.get("error")
            steps[k] = steps[k].model_copy(
                update={
                    "output": None if error else output_of(message.get("content")),
                    "error": str(error) if error else None,
                    "executed": True,
                }
            )
            outputs += 1
    trajectory = None
    if outputs:
        last = messages[-1] if messages else {}
        answered = (
            last.get("role") == "assistant" and not last.get("tool_calls") and text_of(last.get("content"))
        )
        trajectory = Trajectory(
            messages=[dict(m) for m in messages],
            steps=steps,
            turns=turns,
            stop_reason="answered" if answered else "ended",
            answer=text_of(last.get("content")) if answered else "",
        )
    return Trace(
        id=trace_id,
        line=line,
        query=query,
        system_prompt=system,
        calls=calls,
        trajectory=trajectory,
        tools=tools,
        expected=expected,
        metadata=dict(metadata or {}),
    )


def infer_tool_schemas(observed: Iterable[tuple[str, dict[str, Any]]], label: str) -> list[ToolSchema]:
    """Schemas from the calls seen (name, arguments): a key's JSON type(s) as observed, required when every
    call of the tool has it; each described as inferred (``label`` names where the calls came from)."""
    seen: dict[str, list[dict[str, Any]]] = {}
    for name, arguments in observed:
        seen.setdefault(name, []).append(arguments)
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
                description=f"{label} tool {name} (schema inferred from {len(calls)} observed calls)",
                parameters={"type": "object", "properties": props, "required": required},
            )
        )
    return schemas


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
