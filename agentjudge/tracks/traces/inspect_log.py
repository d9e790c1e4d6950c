"""Inspect eval logs (``.eval`` or ``.json``), read with Inspect's own reader (the optional extra
``[inspect]``: ``pip install 'agentjudge[inspect]'``).

Each sample (each epoch of it) is one conversation: its messages as the OpenAI-style format reads them
(Inspect's tool messages carry their own ``error``, kept as the step's error); the tools its model was
offered, from the sample's first model event (none recorded: inferred from the calls, as for a file
without ``tools``); its target as ``expected_tool_calls`` when the target is a JSON list of calls
(``{name, arguments}`` or function objects), otherwise no GT; its metadata, with the sample's id, epoch
and scores, kept. The conversation's id is the sample's id (``ID-eN`` when the log has several epochs);
its "line" is the sample's place in the log, from 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentjudge.tracks.traces.conversation import Trace, TraceError, build_trace, call_of
from agentjudge.types import ToolCall, ToolSchema


def read_inspect(path: Path) -> list[Trace]:
    """Every sample of the Inspect log at ``path``, in the log's order."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise TraceError(
            f"{path}: reading an Inspect log needs Inspect (pip install 'agentjudge[inspect]')"
        ) from None
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # Inspect raises several unrelated types for a file it cannot read
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TraceError(f"{path}: not an Inspect log Inspect can read ({first})") from None
    samples = log.samples or []
    epochs = {s.epoch for s in samples}
    traces = []
    for n, sample in enumerate(samples, start=1):
        where = f"{path}, sample {n} (id {sample.id!r})"
        trace_id = str(sample.id) if len(epochs) <= 1 else f"{sample.id}-e{sample.epoch}"
        metadata = {
            "sample_id": sample.id,
            "epoch": sample.epoch,
            "scores": {k: _plain(v.value) for k, v in (sample.scores or {}).items()},
            **(sample.metadata or {}),
        }
        traces.append(
            build_trace(
                [_message(m) for m in sample.messages],
                where,
                trace_id=trace_id,
                line=n,
                tools=_tools(sample),
                expected=_expected(sample.target, where),
                metadata=metadata,
            )
        )
    return traces


def _plain(value: Any) -> Any:
    """A score's value as JSON can hold it."""
    try:
        json.dumps(value)
        return value
    except TypeError:
        return str(value)


def _message(message: Any) -> dict[str, Any]:
    """One Inspect chat message in the common shape (``conversation`` module)."""
    out: dict[str, Any] = {"role": message.role, "content": message.text}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.function, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
        out["name"] = message.function
        if message.error is not None:
            out["error"] = message.error.message
    return out


def _tools(sample: Any) -> list[ToolSchema] | None:
    """The tools offered to the model in the sample's first model event that has any; None if none."""
    for event in sample.events or []:
        tools = getattr(event, "tools", None)
        if getattr(event, "event", None) == "model" and tools:
            return [
                ToolSchema(
                    name=t.name,
                    description=t.description or "",
                    parameters=t.parameters.model_dump(exclude_none=True),
                )
                for t in tools
            ]
    return None


def _expected(target: Any, where: str) -> list[ToolCall] | None:
    """The target as expected calls when it is a JSON list of calls; None (no GT) for any other target."""
    text = target if isinstance(target, str) else (target[0] if len(target) == 1 else None)
    if not isinstance(text, str) or not text.lstrip().startswith("["):
        return None
    try:
        listed = json.loads(text)
    except ValueError:
        return None
    if not isinstance(listed, list) or not all(isinstance(c, dict) for c in listed):
        return None
    return [call_of(c, f"{where}: field target[{k}]") for k, c in enumerate(listed)]
