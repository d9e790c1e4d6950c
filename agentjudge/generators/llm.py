"""LLM generator: one task → one planned sequence of tool calls, single-shot.

The published protocol never shows the generator tool outputs: it plans the whole sequence at once, so
values that depend on earlier calls are written as placeholders. Two conventions are supported (§7):

* native function calling (``settings.native_tools=True``): tools go in the OpenAI ``tools`` field and the
  ordered ``tool_calls`` are the answer. A model that answers in text instead is parsed as a JSON array;
  plain prose with no JSON at all means the model chose to call no tool (``calls=[]``).
* JSON output (``native_tools=False``, the published grid): the schemas are in the prompt and the model
  must answer with a raw JSON array of ``{"name", "arguments"}``, parsed from plain text, a code fence or
  surrounding prose.

A failure — the call failed, the output cannot be parsed, arguments are not a JSON object — gives a
Prediction with ``calls=None`` and ``error`` set; it is never turned into an empty list.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentjudge.models.client import ModelClient, schema_response_format
from agentjudge.models.completion import Completion
from agentjudge.models.errors import ModelCallError
from agentjudge.types import ModelSettings, Prediction, Task, ToolCall, ToolSchema, Usage

SINGLE_SHOT_RULES = (
    "You plan the complete sequence of tool calls that fulfils the user's request, in execution order. "
    "You will not see any tool output: when an argument depends on an earlier call's result, write a "
    'placeholder such as "<get_customer.customer_id>". Call only the tools the request needs.'
)
JSON_OUTPUT_RULES = (
    "Answer with ONLY a JSON array, no prose: "
    '[{"name": "<tool name>", "arguments": {<parameter>: <value>, ...}}, ...] in execution order. '
    "Answer [] if no tool is needed."
)
CALLS_SCHEMA: dict[str, Any] = {  # structured output for the JSON-output mode: {"calls": [...]}
    "type": "object",
    "properties": {
        "calls": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
                "required": ["name", "arguments"],
            },
        }
    },
    "required": ["calls"],
}
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class CallParseError(ValueError):
    """Text that should hold tool calls but does not. ``found_json`` tells 'no JSON' from 'bad JSON'."""

    def __init__(self, message: str, *, found_json: bool) -> None:
        super().__init__(message)
        self.found_json = found_json


def openai_tools(tools: list[ToolSchema]) -> list[dict[str, Any]]:
    """Task tools in the OpenAI ``tools`` format (our ``returns`` extension is not sent)."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def _candidates(text: str) -> list[Any]:
    """JSON values found in ``text``: the whole text, then code fences, then the first decodable [ or {."""
    found: list[Any] = []
    stripped = text.strip()
    try:
        found.append(json.loads(stripped))
        return found
    except json.JSONDecodeError:
        pass
    for block in _FENCE_RE.findall(text):
        try:
            found.append(json.loads(block.strip()))
        except json.JSONDecodeError:
            continue
    if found:
        return found
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "[{":
            try:
                value, _ = decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                continue
            if isinstance(value, list) or (isinstance(value, dict) and _call_list(value) is not None):
                found.append(value)
                break
    return found


def _call_list(value: Any) -> list[Any] | None:
    """The list of call objects inside a decoded JSON value, or None if it is not call-shaped."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in ("calls", "tool_calls", "function_calls"):
            if isinstance(value.get(key), list):
                return list(value[key])
        if "name" in value or "function" in value:
            return [value]
    return None


def _to_call(item: Any, index: int) -> ToolCall:
    if not isinstance(item, dict):
        raise CallParseError(f"call {index} is {type(item).__name__}, not an object", found_json=True)
    if isinstance(item.get("function"), dict):  # OpenAI-shaped {"type": "function", "function": {...}}
        item = item["function"]
    name = item.get("name") or item.get("tool") or item.get("tool_name")
    if not isinstance(name, str) or not name:
        raise CallParseError(f"call {index} has no tool name", found_json=True)
    args: Any = next((item[k] for k in ("arguments", "parameters", "args") if k in item), {})
    if isinstance(args, str):
        args = parse_arguments(args, name, index)
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise CallParseError(
            f"call {index} ({name}): arguments are {type(args).__name__}, not an object", found_json=True
        )
    return ToolCall(name=name, arguments=args)


def parse_arguments(text: str, name: str, index: int) -> dict[str, Any]:
    """A native call's arguments string → dict; empty string means no arguments."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CallParseError(
            f"call {index} ({name}): arguments are not valid JSON: {exc}", found_json=True
        ) from exc
    if not isinstance(value, dict):
        raise CallParseError(
            f"call {index} ({name}): arguments are {type(value).__name__}, not an object", found_json=True
        )
    return value


def parse_calls_text(text: str) -> list[ToolCall]:
    """Tool calls from a text answer: plain JSON, fenced JSON, or JSON inside prose."""
    candidates = _candidates(text)
    if not candidates:
        stripped = text.strip()
        found = bool(_FENCE_RE.search(text)) or stripped[:1] in ("[", "{") or '"name"' in text
        raise CallParseError("no JSON array of tool calls found in the output", found_json=found)
    errors: list[str] = []
    for value in candidates:
        calls = _call_list(value)
        if calls is None:
            errors.append(f"JSON {type(value).__name__} is not a list of calls")
            continue
        try:
            return [_to_call(item, i) for i, item in enumerate(calls)]
        except CallParseError as exc:
            errors.append(str(exc))
    raise CallParseError("; ".join(errors), found_json=True)


class LLMGenerator:
    """Generator protocol over ``ModelClient``: ``await generator(task, trial) -> Prediction``."""

    def __init__(self, settings: ModelSettings, client: ModelClient) -> None:
        self.settings = settings
        self.client = client
        self.name = settings.display_name

    def messages(self, task: Task) -> list[dict[str, Any]]:
        """System prompt (+ rules, + schemas in JSON mode) and the user query."""
        parts = [task.system_prompt.strip(), SINGLE_SHOT_RULES]
        if not self.settings.native_tools:
            schemas = json.dumps(openai_tools(task.tools), indent=1, ensure_ascii=False)
            parts += [f"Available tools (JSON Schema):\n{schemas}", JSON_OUTPUT_RULES]
        return [
            {"role": "system", "content": "\n\n".join(p for p in parts if p)},
            {"role": "user", "content": task.query},
        ]

    def _prediction(self, task: Task, trial: int, **fields: Any) -> Prediction:
        return Prediction.for_task(task, self.name, trial, **fields)

    async def __call__(self, task: Task, trial: int) -> Prediction:
        temperature = self.settings.temperature if self.settings.temperature is not None else 0.0
        tools = openai_tools(task.tools) if self.settings.native_tools and task.tools else None
        structured = self.settings.structured_output and not self.settings.native_tools
        schema = (
            schema_response_format(self.settings, "tool_calls", CALLS_SCHEMA, strict=False)
            if structured
            else None
        )
        try:
            completion = await self.client.complete(
                self.settings,
                self.messages(task),
                tools=tools,
                temperature=temperature,
                sample_index=trial,
                response_format=schema,
            )
        except ModelCallError as exc:
            usage = exc.usage_after(Usage())  # an attempt may have been billed unseen: then not known
            return self._prediction(
                task,
                trial,
                calls=None,
                error=f"call_failed[{exc.kind}]: {exc}",
                error_kind=exc.kind,
                error_attempts=exc.attempts,
                usage=usage,
            )
        return self._interpret(task, trial, completion)

    def _interpret(self, task: Task, trial: int, completion: Completion) -> Prediction:
        usage: Usage = completion.usage
        if completion.tool_calls:
            raw = json.dumps(
                {
                    "content": completion.text,
                    "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in completion.tool_calls],
                },
                ensure_ascii=False,
            )
            try:
                calls = [
                    ToolCall(name=c.name, arguments=parse_arguments(c.arguments, c.name, i))
                    for i, c in enumerate(completion.tool_calls)
                ]
            except CallParseError as exc:
                return self._prediction(
                    task,
                    trial,
                    calls=None,
                    raw_output=raw,
                    usage=usage,
                    error=f"bad_arguments: {exc}",
                    error_kind="bad_arguments",
                )
            return self._prediction(task, trial, calls=calls, raw_output=raw, usage=usage)
        try:
            calls = parse_calls_text(completion.text)
        except CallParseError as exc:
            if self.settings.native_tools and not exc.found_json:
                # Native mode, prose only: the model chose to call no tool.
                return self._prediction(task, trial, calls=[], raw_output=completion.text, usage=usage)
            return self._prediction(
                task,
                trial,
                calls=None,
                raw_output=completion.text,
                usage=usage,
                error=f"parse_error: {exc}",
                error_kind="parse_error",
            )
        return self._prediction(task, trial, calls=calls, raw_output=completion.text, usage=usage)
