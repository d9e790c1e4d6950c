"""A traces file written for the tests (and the documented walk-through): 36 conversations of an agent that
helps with orders and weather, in OpenAI's chat format, one per line.

- 12 single-call conversations (6 with ``expected_tool_calls``: 4 right, 2 wrong);
- 10 multi-call ones, several calls in one assistant turn, no tool outputs (4 with expected calls given as
  OpenAI function objects);
- 14 multi-turn ones with tool outputs (the agent reads an output before its next call; some end with an
  answer, two stop after a tool output, two have a second user turn; 5 with expected calls).

Half the lines give ``tools``; the others leave them to be inferred. ``write_traces(path, malformed=N)``
puts a broken line (not JSON) at line N too, for the bad-input report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look up an order by its id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "cancel_order",
            "description": "Cancel an order, with a reason.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["C", "F"]}},
                "required": ["city"],
            },
        },
    },
]
CITIES = [
    "Paris",
    "Rome",
    "Oslo",
    "Lima",
    "Cairo",
    "Perth",
    "Quito",
    "Hanoi",
    "Dakar",
    "Sofia",
    "Bern",
    "Riga",
]


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def conversations() -> list[dict[str, Any]]:
    """The 36 conversations, in file order."""
    out: list[dict[str, Any]] = []
    for i, city in enumerate(CITIES):  # single-call
        args = {"city": city} if i % 3 else {"city": city, "unit": "C"}
        conv: dict[str, Any] = {
            "id": f"single-{i}",
            "messages": [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": f"What's the weather in {city}?"},
                {"role": "assistant", "content": None, "tool_calls": [_call(f"c{i}", "get_weather", args)]},
            ],
            "metadata": {"kind": "single-call"},
        }
        if i < 6:  # the agent's call is the expected one in four, the wrong city in two
            expected = args if i < 4 else {"city": CITIES[i + 1]}
            conv["expected_tool_calls"] = [{"name": "get_weather", "arguments": expected}]
        if i % 2 == 0:
            conv["tools"] = TOOLS
        out.append(conv)
    for i in range(10):  # multi-call in one turn, no outputs
        orders = [f"ORD-{100 + i}", f"ORD-{200 + i}"] + ([f"ORD-{300 + i}"] if i % 2 else [])
        calls = [_call(f"m{i}-{k}", "get_order", {"order_id": o}) for k, o in enumerate(orders)]
        conv = {
            "id": f"multi-{i}",
            "messages": [
                {"role": "user", "content": "Check the status of orders " + ", ".join(orders) + "."},
                {"role": "assistant", "content": "", "tool_calls": calls},
            ],
            "metadata": {"kind": "multi-call"},
        }
        if i < 4:
            conv["expected_tool_calls"] = [
                {
                    "type": "function",
                    "function": {"name": "get_order", "arguments": json.dumps({"order_id": o})},
                }
                for o in orders
            ]
        if i % 2:
            conv["tools"] = TOOLS
        out.append(conv)
    for i in range(14):  # multi-turn with tool outputs
        order = f"ORD-{500 + i}"
        status = "shipped" if i % 3 == 0 else "pending"
        lookup = _call(f"t{i}a", "get_order", {"order_id": order})
        found = json.dumps({"order_id": order, "status": status})
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": f"Please cancel {order} if it has not shipped yet."},
            {"role": "assistant", "content": None, "tool_calls": [lookup]},
            {"role": "tool", "tool_call_id": f"t{i}a", "content": found},
        ]  # fmt: skip
        if status == "pending":
            cancel = _call(f"t{i}b", "cancel_order", {"order_id": order, "reason": "customer asked"})
            answer = "Error: order is locked" if i == 4 else json.dumps({"cancelled": True})
            messages += [
                {"role": "assistant", "content": None, "tool_calls": [cancel]},
                {"role": "tool", "tool_call_id": f"t{i}b", "content": answer},
            ]
        if i in (5, 7):  # a second user turn
            messages += [
                {"role": "assistant", "content": "Done. Anything else?"},
                {"role": "user", "content": "Yes: what's the weather in Oslo?"},
                {"role": "assistant", "content": None,
                 "tool_calls": [_call(f"t{i}c", "get_weather", {"city": "Oslo"})]},
                {"role": "tool", "tool_call_id": f"t{i}c", "content": "4 degrees and snow"},
            ]  # fmt: skip
        if i not in (2, 8):  # two recordings stop after a tool output
            messages.append({"role": "assistant", "content": f"Order {order}: {status}; handled."})
        conv = {"id": f"turns-{i}", "messages": messages, "metadata": {"kind": "multi-turn"}}
        if i < 5:
            expected = [{"name": "get_order", "arguments": {"order_id": order}}]
            if status == "pending":
                expected.append({"name": "cancel_order", "arguments": {"order_id": order}})
            conv["expected_tool_calls"] = expected
        if i % 2 == 0:
            conv["tools"] = TOOLS
        out.append(conv)
    return out


def write_traces(path: Path, malformed: int | None = None) -> list[dict[str, Any]]:
    """Write the conversations to ``path`` (with a line that is not JSON at line ``malformed``); returns
    them in file order (the broken line aside)."""
    convs = conversations()
    lines = [json.dumps(c) for c in convs]
    if malformed is not None:
        lines.insert(malformed - 1, '{"id": "broken", "messages": [{"role": "user", "content": "hi"}')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return convs


def calls_of(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent's calls of a conversation as the file has them, arguments read as JSON."""
    return [
        {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
        for m in conv["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    ]
