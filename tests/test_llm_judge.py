"""LLMJudge end to end through the real client stack and the loopback fake server (tests/fakeserver.py)."""

from __future__ import annotations

import json
from typing import Any

from fakeserver import TEST_KEY, FakeLLM, prompt_text

from agentjudge.judges.llm import ATTEMPT_SEPARATOR, LLMJudge
from agentjudge.judges.prompts import TAG_CALLS
from agentjudge.models.client import ModelClient
from agentjudge.types import JudgeRequest, PromptVariant, Task, ToolCall, ToolSchema

GOOD = json.dumps(
    {
        "tool": {"verdict": 1.0, "justification": "right tools"},
        "param": {"verdict": 0.5, "justification": "extra key"},
        "seq": {"verdict": 1.0, "justification": "in order"},
        "cov": {"verdict": 0.0, "justification": "refund missing"},
        "overall": "half done",
    }
)


def request(**overrides: Any) -> JudgeRequest:
    task = Task(
        record_id="crm-0003:medium",
        base_id="crm-0003",
        difficulty="medium",
        query="Refund order 42 and email the customer.",
        system_prompt="You are a CRM assistant.",
        tools=[
            ToolSchema(
                name="refund_order",
                description="Refund an order.",
                parameters={
                    "type": "object",
                    "properties": {"order_id": {"type": "integer"}},
                    "required": [],
                },
            )
        ],
    )
    values: dict[str, Any] = {
        "task": task,
        "calls": [ToolCall(name="refund_order", arguments={"order_id": 42})],
        "gt": None,
        "condition": "without_gt",
    }
    values.update(overrides)
    return JudgeRequest(**values)


def judge(fake_llm: FakeLLM, reask: int = 0, **settings: Any) -> LLMJudge:
    values: dict[str, Any] = {"model": "openai/judge-a", "name": "judge-a", "max_retries": 0}
    values.update(settings)
    return LLMJudge(fake_llm.settings(**values), ModelClient(cache=None, backoff_base_s=0.001), reask=reask)


async def test_correct_verdicts(fake_llm: FakeLLM) -> None:
    fake_llm.queue(GOOD)
    j = judge(fake_llm)
    assert j.name == "judge-a"
    result = await j(request())
    assert result.parse_ok and result.error is None
    assert result.verdicts == {"tool": 1.0, "param": 0.5, "seq": 1.0, "cov": 0.0}
    assert result.rationales["cov"] == "refund missing" and result.rationales["overall"] == "half done"
    assert result.rationales["_reasks"] == "0" and result.rationales["_parse_method"] == "json"
    assert result.raw_output == GOOD
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    (sent,) = fake_llm.requests
    assert sent["model"] == "judge-a" or sent["model"].endswith("judge-a")
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert f"<{TAG_CALLS}>" in sent["messages"][1]["content"]
    assert TEST_KEY not in result.model_dump_json()


async def test_temperature_and_trial_reach_the_request(fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(lambda req: GOOD)
    j = judge(fake_llm)
    await j(request(temperature=0.7, trial=0))
    await j(request(temperature=0.3, trial=2))
    await j(request())  # no temperature: the provider default, so none is sent
    temps = [r.get("temperature") for r in fake_llm.requests]
    assert temps == [0.7, 0.3, None]
    # the sample index is part of the call's identity (cache key), not a provider field: with a cache,
    # two trials of the same request are two provider calls, the same trial again is a cache hit
    from agentjudge.models.cache import CallCache

    cached = LLMJudge(j.settings, ModelClient(cache=CallCache(), backoff_base_s=0.001))
    fake_llm.reset()
    fake_llm.set_responder(lambda req: GOOD)
    first = await cached(request(trial=0))
    again = await cached(request(trial=0))
    other = await cached(request(trial=1))
    assert len(fake_llm.requests) == 2
    assert not first.usage.cached and again.usage.cached and not other.usage.cached


async def test_malformed_verdict_is_a_parse_failure_not_a_default(fake_llm: FakeLLM) -> None:
    fake_llm.queue('{"tool": 1.0, "param": 1.0, "seq": "fine"}')
    result = await judge(fake_llm)(request())
    assert not result.parse_ok and result.error is None
    assert result.verdicts == {"tool": 1.0, "param": 1.0, "seq": None, "cov": None}
    assert "missing verdict(s) for seq, cov" in result.rationales["_parse_problems"]
    assert len(fake_llm.requests) == 1  # no re-ask unless asked for


async def test_reask_rescues_and_keeps_every_attempt(fake_llm: FakeLLM) -> None:
    fake_llm.queue("I think the calls look fine overall.")
    fake_llm.queue(GOOD)
    result = await judge(fake_llm, reask=2)(request())
    assert result.parse_ok and result.verdicts["cov"] == 0.0
    assert result.rationales["_reasks"] == "1" and result.rationales["_attempts"] == "2"
    assert result.raw_output == "I think the calls look fine overall." + ATTEMPT_SEPARATOR.format(n=1) + GOOD
    second = fake_llm.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "I think the calls look fine overall."
    assert "no verdicts found" in second[3]["content"]  # the re-ask quotes the parse problem


async def test_reask_exhausted_stays_a_failure(fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(lambda req: "Tool selection: 1.0")
    result = await judge(fake_llm, reask=1)(request())
    assert not result.parse_ok
    assert result.verdicts == {"tool": 1.0, "param": None, "seq": None, "cov": None}
    assert result.rationales["_reasks"] == "1" and len(fake_llm.requests) == 2
    assert result.raw_output.count("Tool selection: 1.0") == 2


async def test_transport_error_is_recorded(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next(status=500, times=5)
    result = await judge(fake_llm, max_retries=1)(request())
    assert not result.parse_ok
    assert result.verdicts == {"tool": None, "param": None, "seq": None, "cov": None}
    assert result.error is not None and result.error.startswith("server_error after 2 attempt(s): ")
    assert TEST_KEY not in result.error
    assert len(fake_llm.requests) == 2  # one retry by the client, then the failure is reported


async def test_error_during_reask_keeps_first_answer(fake_llm: FakeLLM) -> None:
    fake_llm.queue("no idea")
    fake_llm.queue(body=json.dumps({"error": {"message": "bad"}}), status=400)
    result = await judge(fake_llm, reask=1)(request())
    assert result.error is not None and result.error.startswith("bad_request after 1 attempt(s): ")
    assert result.raw_output == "no idea" and all(v is None for v in result.verdicts.values())


async def test_cot_variant_and_thinking_params(fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(lambda req: "Let me check each call.\n\n```json\n" + GOOD + "\n```")
    extra = {"judge_thinking_on": {"reasoning_effort": "high"}, "judge_thinking_off": {"top_p": 0.5}}
    j = judge(fake_llm, extra=extra)
    on = await j(request(variant=PromptVariant(cot=True)))
    off = await j(request(variant=PromptVariant(cot=False)))
    assert on.parse_ok and on.rationales["_parse_method"] == "fenced_json" and off.parse_ok
    sent_on, sent_off = fake_llm.requests
    assert "step by step" in prompt_text(sent_on) and "step by step" not in prompt_text(sent_off)
    assert sent_on.get("reasoning_effort") == "high" and "top_p" not in sent_on
    assert sent_off.get("top_p") == 0.5 and "reasoning_effort" not in sent_off
    for sent in (sent_on, sent_off):  # the judge-only keys never reach the provider
        assert "judge_thinking_on" not in json.dumps(sent) and "judge_thinking_off" not in json.dumps(sent)


async def test_freeform_variant_is_continuous(fake_llm: FakeLLM) -> None:
    fake_llm.queue(
        "Tool selection: 0.8\nParameter structure: 0.3\nSequence accuracy: 1\nQuery coverage: 0.65"
    )
    result = await judge(fake_llm)(request(variant=PromptVariant(prompt_format="freeform")))
    assert result.parse_ok
    assert result.verdicts == {"tool": 0.8, "param": 0.3, "seq": 1.0, "cov": 0.65}
