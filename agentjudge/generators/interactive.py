"""Interactive generation: the generator acts in the record's executable environment and sees every output.

The published protocol is single-shot: the generator plans all calls blind, so values that only exist in
earlier outputs (ids, owners, lists) cannot be right. Here each call the model makes is executed in the
record's environment -- the same initial state the GT ran on (``make_environment(record)``) -- and the
result, or the tool's error message, goes back as a tool message, as a real API would answer. The loop
ends when the model answers without a call (``answered``), when ``max_turns`` model turns have been used
(``max_turns``), or when a JSON-mode answer looks like calls but cannot be read (``unparseable``).
Parallel calls of one turn run in the order given.

Every model turn goes through ``ModelClient.complete``, whose cache key is the whole request (messages so
far included) and the environment is deterministic, so a resumed run replays earlier turns from the cache
and pays nothing for them. A transport failure at any turn fails the prediction (``calls=None``); it is not
the agent's behaviour, and re-running resumes from the cached turns.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentjudge.types import (
    ModelSettings,
    Prediction,
    Record,
    StopReason,
    Task,
    ToolCall,
    ToolStep,
    Trajectory,
    Usage,
)

INTERACTIVE_RULES = (
    "You carry out the user's request with the tools. Every call you make is executed and you see its "
    "result, or its error, before your next step: take ids, owners and lists from the tool results rather "
    "than guessing them. Independent calls may go in one turn; they run in the order you give. When the "
    "request is done, or cannot be done, reply in plain text without calling a tool."
)
JSON_TURN_RULES = (
    'To call tools, reply with ONLY a JSON array: [{"name": "<tool>", "arguments": {...}}, ...]. The '
    "results come back in the next message. To finish, reply in plain text with no JSON."
)


@dataclass
class PlannedCall:
    """One call of a model turn; ``arguments`` None when they were not a JSON object (``error`` says why)."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    error: str | None = None


@dataclass
class Turn:
    """What the agent did in one turn: text, calls (none = final answer), or an unreadable answer."""

    text: str
    calls: list[PlannedCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    unparseable: str | None = None  # why a call-shaped answer could not be read


class Policy(Protocol):
    """The agent: the messages so far -> its next turn. May raise ``ModelCallError``."""

    async def __call__(self, messages: list[dict[str, Any]]) -> Turn: ...


def tool_content(output: Any, error: str | None) -> str:
    """The tool message's content: the output as JSON, or ``{"error": message}``."""
    return json.dumps({"error": error} if error is not None else output, ensure_ascii=False)


async def run_episode(
    env: Any, messages: list[dict[str, Any]], policy: Policy, max_turns: int, native: bool
) -> tuple[Trajectory, Usage]:
    """Run the loop from ``messages`` (system + user); returns the trajectory and the summed usage.

    ``native``: calls go back as assistant ``tool_calls`` and one ``tool`` message each; otherwise the
    assistant's JSON text and one user message listing the results in call order."""
    from agentjudge.dataset.env import ToolError

    messages = list(messages)
    steps: list[ToolStep] = []
    usage = Usage(cached=True)
    for turn_no in range(1, max_turns + 1):
        try:
            turn = await policy(messages)
        except Exception as exc:  # the turns already paid for stay on the failed prediction's row
            exc.partial_usage = usage  # type: ignore[attr-defined]
            raise
        usage = usage.plus(turn.usage)
        stop: StopReason | None = None
        if turn.unparseable is not None:
            stop = "unparseable"
        elif not turn.calls:
            stop = "answered"
        if stop is not None:
            messages.append({"role": "assistant", "content": turn.text})
            return Trajectory(
                messages=messages, steps=steps, turns=turn_no, stop_reason=stop, answer=turn.text
            ), usage
        if native:
            messages.append(
                {
                    "role": "assistant",
                    "content": turn.text or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": json.dumps(c.arguments if c.arguments is not None else {}),
                            },
                        }
                        for c in turn.calls
                    ],
                }
            )
        else:
            messages.append({"role": "assistant", "content": turn.text})
        results = []
        for c in turn.calls:
            if c.arguments is None:
                step = ToolStep(turn=turn_no, call=ToolCall(name=c.name), error=c.error, executed=False)
            else:
                call = ToolCall(name=c.name, arguments=c.arguments)
                try:
                    step = ToolStep(turn=turn_no, call=call, output=env.execute(call))
                except ToolError as exc:
                    step = ToolStep(turn=turn_no, call=call, error=str(exc))
            steps.append(step)
            content = tool_content(step.output, step.error)
            if native:
                messages.append({"role": "tool", "tool_call_id": c.id, "content": content})
            else:
                results.append(f"{c.name}: {content}")
        if not native:
            messages.append(
                {"role": "user", "content": "Tool results, in call order:\n" + "\n".join(results)}
            )
    return Trajectory(messages=messages, steps=steps, turns=max_turns, stop_reason="max_turns"), usage


# ---- the LLM agent --------------------------------------------------------------------------------------


class LLMPolicy:
    """One model turn through ``ModelClient``: native tool calls, or JSON text (``native_tools=False``)."""

    def __init__(self, settings: ModelSettings, client: Any, task: Task, trial: int) -> None:
        from agentjudge.generators.llm import openai_tools

        self.settings, self.client, self.trial = settings, client, trial
        self.tools = openai_tools(task.tools) if settings.native_tools and task.tools else None
        self.turn_no = 0

    async def __call__(self, messages: list[dict[str, Any]]) -> Turn:
        from agentjudge.generators.llm import CallParseError, parse_arguments, parse_calls_text

        self.turn_no += 1
        temperature = self.settings.temperature if self.settings.temperature is not None else 0.0
        completion = await self.client.complete(
            self.settings, messages, tools=self.tools, temperature=temperature, sample_index=self.trial
        )
        text = completion.text or ""
        if completion.tool_calls:
            calls = []
            for i, raw in enumerate(completion.tool_calls):
                try:
                    calls.append(PlannedCall(raw.id, raw.name, parse_arguments(raw.arguments, raw.name, i)))
                except CallParseError as exc:
                    calls.append(PlannedCall(raw.id, raw.name, None, f"invalid arguments: {exc}"))
            return Turn(text, calls, completion.usage)
        try:
            parsed = parse_calls_text(text)
        except CallParseError as exc:
            if self.settings.native_tools or not exc.found_json:
                return Turn(text, [], completion.usage)  # prose: the final answer
            return Turn(text, [], completion.usage, unparseable=str(exc))
        ids = [f"call_{self.turn_no}_{i}" for i in range(len(parsed))]
        return Turn(
            text,
            [PlannedCall(i, c.name, c.arguments) for i, c in zip(ids, parsed, strict=True)],
            completion.usage,
        )


def initial_messages(task: Task, native: bool) -> list[dict[str, Any]]:
    from agentjudge.generators.llm import openai_tools

    parts = [task.system_prompt.strip(), INTERACTIVE_RULES]
    if not native:
        schemas = json.dumps(openai_tools(task.tools), indent=1, ensure_ascii=False)
        parts += [f"Available tools (JSON Schema):\n{schemas}", JSON_TURN_RULES]
    return [
        {"role": "system", "content": "\n\n".join(p for p in parts if p)},
        {"role": "user", "content": task.query},
    ]


PolicyFactory = Callable[[Record, Task, int], Policy]


class InteractiveGenerator:
    """Generator protocol for interactive episodes; the runner must ``bind`` the records (for their
    environments) as it does for simulated generators."""

    def __init__(
        self, name: str, policy_factory: PolicyFactory, max_turns: int, native: bool, simulated: bool = False
    ) -> None:
        self.name, self.policy_factory, self.max_turns = name, policy_factory, max_turns
        self.native, self.simulated = native, simulated
        self._records: dict[str, Record] | None = None

    def bind(self, records: dict[str, Record]) -> InteractiveGenerator:
        self._records = records
        return self

    async def __call__(self, task: Task, trial: int) -> Prediction:
        from agentjudge.dataset.world import environment_for
        from agentjudge.models.errors import ModelCallError

        if self._records is None:
            raise RuntimeError(f"{self.name}: interactive generator used before bind(records) was called")
        record = self._records[task.base_id]
        env = environment_for(record)
        if env is None:
            return Prediction.for_task(
                task, self.name, trial, calls=None, simulated=self.simulated,
                error=f"no_environment: record {record.id} has no executable environment (domain/seed)",
                error_kind="no_environment",
            )  # fmt: skip
        policy = self.policy_factory(record, task, trial)
        try:
            trajectory, usage = await run_episode(
                env, initial_messages(task, self.native), policy, self.max_turns, self.native
            )
        except ModelCallError as exc:
            turn = getattr(policy, "turn_no", "?")
            return Prediction.for_task(
                task,
                self.name,
                trial,
                calls=None,
                error=f"call_failed[{exc.kind}] at turn {turn}: {exc}",
                error_kind=exc.kind,
                error_attempts=exc.attempts,
                usage=exc.usage_after(getattr(exc, "partial_usage", Usage())),  # the turns paid for
            )
        errors = getattr(policy, "errors", None)  # simulated agents report the errors they injected
        raw = (
            trajectory.answer
            if errors is None
            else json.dumps({"answer": trajectory.answer, "simulated_errors": errors})
        )
        return Prediction.for_task(
            task,
            self.name,
            trial,
            calls=[s.call for s in trajectory.steps],
            raw_output=raw,
            simulated=self.simulated,
            usage=usage,
            trajectory=trajectory,
        )


def make_interactive_llm_generator(settings: ModelSettings, client: Any) -> InteractiveGenerator:
    def factory(record: Record, task: Task, trial: int) -> Policy:
        return LLMPolicy(settings, client, task, trial)

    return InteractiveGenerator(settings.display_name, factory, settings.max_turns, settings.native_tools)
