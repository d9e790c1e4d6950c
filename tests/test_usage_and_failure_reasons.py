"""Accounting and failure classes agree between single-shot and interactive generation.

Why: the interactive loop summed its turns' usage with its own copy of the adding rule (which dropped the
provider-cache fields), a failed episode lost the usage of the turns it had already paid for, and its error
text ("call_failed[kind] at turn N: ...") was not recognised by the failure classes, so a cost-cap stop or a
rejected key in an interactive unit was classed "other" (not left pending, not stopping the model).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agentjudge.generators.interactive import InteractiveGenerator, PlannedCall, Turn
from agentjudge.models.client import ModelCallError
from agentjudge.models.failures import is_model_fatal, read_failure, reason_of, reason_of_kind
from agentjudge.rundir.records import read_records
from agentjudge.types import Record, Task, Usage

MINI = Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl"


def test_usage_plus_keeps_every_field() -> None:
    a = Usage(
        prompt_tokens=100, completion_tokens=10, cost_usd=0.5, cached_prompt_tokens=60, cache_saved_usd=0.1
    )
    b = Usage(
        prompt_tokens=200, completion_tokens=20, cost_usd=1.0, cached_prompt_tokens=150, cache_saved_usd=0.2
    )
    total = Usage(cached=True).plus(a).plus(b)
    assert (total.prompt_tokens, total.completion_tokens, total.cached_prompt_tokens) == (300, 30, 210)
    assert abs(total.cost_usd - 1.5) < 1e-12 and abs(total.cache_saved_usd - 0.3) < 1e-12
    assert total.cached is False  # not every call was a cache hit
    assert Usage().plus(Usage(cached=True), first=True).cached is True


def test_error_texts_of_an_older_store_are_read_back_to_their_fields() -> None:
    """Rows written before the failure columns existed: their kind and attempts come from the text."""
    assert read_failure("call_failed[cost_cap] at turn 3: cost_cap after 1 attempt(s): over the cap") == (
        "cost_cap",
        1,
    )
    assert read_failure("call_failed[timeout]: timeout after 5 attempt(s): slow") == ("timeout", 5)
    assert read_failure("parse_error: no JSON array") == ("parse_error", None)
    assert read_failure("something else entirely") == (None, None)
    assert reason_of("call_failed[timeout]: timeout after 5 attempt(s): slow") == "timeout"
    assert reason_of("something else entirely") == "other"


def test_failure_kinds_have_their_reason_and_stop_the_model_or_not() -> None:
    assert reason_of_kind("cost_cap") == "cost_cap" and reason_of_kind("timeout") == "timeout"
    assert reason_of_kind(None) == "other" and reason_of_kind("ValueError") == "other"
    assert is_model_fatal("auth") and is_model_fatal("bad_request") and is_model_fatal("not_found")
    assert is_model_fatal("unreachable")
    assert (
        not is_model_fatal("server_error") and not is_model_fatal("connection") and not is_model_fatal(None)
    )


class _PaysThenFails:
    """One paid turn with a call, then the provider refuses the next turn."""

    def __init__(self, record: Record) -> None:
        self.record, self.turn_no = record, 0

    async def __call__(self, messages: list[dict[str, Any]]) -> Turn:
        self.turn_no += 1
        if self.turn_no == 1:
            step = self.record.gt[0].call
            call = PlannedCall(id="c1", name=step.name, arguments=dict(step.arguments))
            return Turn(
                text="", calls=[call], usage=Usage(prompt_tokens=1000, completion_tokens=50, cost_usd=0.01)
            )
        raise ModelCallError("cost_cap", 1, "this call could pass --max-cost")


def test_a_failed_episode_keeps_the_usage_of_its_paid_turns() -> None:
    records = read_records(MINI)
    record = records[0]
    gen = InteractiveGenerator("agent", lambda r, t, k: _PaysThenFails(r), max_turns=5, native=True)
    gen.bind({r.id: r for r in records})
    task = Task(
        record_id=record.record_id("easy"),
        base_id=record.id,
        difficulty="easy",
        query=record.queries["easy"],
        system_prompt=record.system_prompt,
        tools=record.tools,
    )
    pred = asyncio.run(gen(task, 0))
    assert pred.calls is None and pred.error is not None
    assert pred.error.startswith("call_failed[cost_cap] at turn 2:")
    assert (pred.error_kind, pred.error_attempts) == ("cost_cap", 1)  # the fields, beside the text
    assert reason_of_kind(pred.error_kind) == "cost_cap"
    assert (pred.usage.prompt_tokens, pred.usage.completion_tokens) == (1000, 50)
    assert abs(pred.usage.cost_usd - 0.01) < 1e-12
