"""OpenAI-style JSON Lines: one conversation per line, as litellm, the OpenAI SDK and most agent frameworks
log them.

    {"id": "c1", "messages": [...], "tools": [...], "expected_tool_calls": [...], "metadata": {...}}

``messages`` (required): chat messages (``system``, ``user``, ``assistant`` with ``tool_calls``, ``tool``
with ``tool_call_id``); ``tools`` (optional): OpenAI tool objects (``{"type": "function", "function":
{name, description, parameters}}``) or bare ``{name, description, parameters}``; ``id`` (optional, string
or number; default: the line number); ``expected_tool_calls`` (optional): the calls the agent should have
made, ``{name, arguments}`` or OpenAI function objects; ``metadata`` (optional): any JSON object, kept.
Blank lines are skipped. Every problem is a ``TraceError`` naming the file, the line and the field, before
anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentjudge.tracks.traces.conversation import Trace, TraceError, build_trace, call_of
from agentjudge.types import ToolSchema

KEYS = frozenset({"id", "messages", "tools", "expected_tool_calls", "metadata"})
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def read_openai(path: Path) -> list[Trace]:
    """Every conversation of ``path``, in file order."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None
    traces: list[Trace] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            traces.append(_conversation(line, f"{path}, line {lineno}", lineno))
    return traces


def _conversation(line: str, where: str, lineno: int) -> Trace:
    try:
        raw = json.loads(line)
    except ValueError as exc:
        raise TraceError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise TraceError(
            f"{where}: a line must be a JSON object (one conversation), got {type(raw).__name__}"
        )
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise TraceError(f"{where}: field {unknown[0]}: unknown (a line has {', '.join(sorted(KEYS))})")
    trace_id = raw.get("id", f"line-{lineno}")
    if isinstance(trace_id, bool) or not isinstance(trace_id, str | int) or str(trace_id) == "":
        raise TraceError(f"{where}: field id: a non-empty string or a number, got {trace_id!r}")
    messages = raw.get("messages")
    if not isinstance(messages, list) or not messages:
        raise TraceError(f"{where}: field messages: a non-empty list of chat messages is required")
    for i, message in enumerate(messages):
        _check_message(message, f"{where}: field messages[{i}]")
    metadata = raw.get("metadata", {})
    if not isinstance(metadata, dict):
        raise TraceError(f"{where}: field metadata: a JSON object, got {type(metadata).__name__}")
    expected = None
    if raw.get("expected_tool_calls") is not None:
        listed = raw["expected_tool_calls"]
        if not isinstance(listed, list):
            raise TraceError(
                f"{where}: field expected_tool_calls: a list of calls, got {type(listed).__name__}"
            )
        expected = [call_of(c, f"{where}: field expected_tool_calls[{k}]") for k, c in enumerate(listed)]
    tools = None
    if raw.get("tools") is not None:
        if not isinstance(raw["tools"], list):
            raise TraceError(f"{where}: field tools: a list of tools, got {type(raw['tools']).__name__}")
        tools = [_tool(t, f"{where}: field tools[{k}]") for k, t in enumerate(raw["tools"])]
    return build_trace(
        messages,
        where,
        trace_id=str(trace_id),
        line=lineno,
        tools=tools,
        expected=expected,
        metadata=metadata,
    )


def _check_message(message: Any, where: str) -> None:
    if not isinstance(message, dict):
        raise TraceError(f"{where}: a message must be a JSON object, got {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise TraceError(f"{where}.role: {role!r} is not one of {', '.join(sorted(ROLES))}")
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise TraceError(f"{where}.tool_calls: a list, got {type(calls).__name__}")
    for j, call in enumerate(calls or []):
        if not isinstance(call, dict):
            raise TraceError(
                f"{where}.tool_calls[{j}]: a call must be a JSON object, got {type(call).__name__}"
            )


def _tool(item: Any, where: str) -> ToolSchema:
    if not isinstance(item, dict):
        raise TraceError(f"{where}: a tool must be a JSON object, got {type(item).__name__}")
    body = item["function"] if isinstance(item.get("function"), dict) else item
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise TraceError(f"{where}: a tool without a name")
    parameters = body.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise TraceError(f"{where}.parameters: a JSON Schema object, got {type(parameters).__name__}")
    description = body.get("description") or ""
    return ToolSchema(name=name, description=str(description), parameters=parameters)
