"""The structured-output schema is the shape the prompt asks for, so a schema-constrained answer parses.

Why: a strict ``response_format`` forbids every key it does not list. Sending the four-metric schema to a
trajectory judge made its outcome impossible (every answer a parse failure), and sending our key names to
the ``paper`` family contradicted the published output format its prompt asks for.
"""

from __future__ import annotations

import json
from typing import Any

from agentjudge.judges.llm import response_format
from agentjudge.judges.parse import parse_verdicts
from agentjudge.judges.trajectory import with_outcome
from agentjudge.types import JudgeRequest, ModelSettings, PromptVariant, Task

SETTINGS = ModelSettings(model="openai/x", structured_output=True)


def _request(condition: str, variant: PromptVariant | None = None) -> JudgeRequest:
    task = Task(record_id="r:easy", base_id="r", difficulty="easy", query="q", system_prompt="", tools=[])
    return JudgeRequest(
        task=task,
        calls=[],
        gt=None,
        condition=condition,  # type: ignore[arg-type]
        variant=variant or PromptVariant(),
    )


def _answer(schema: dict[str, Any]) -> str:
    """The answer a schema-constrained model gives: every required key, verdicts 0.5, one sentence each."""
    out: dict[str, Any] = {}
    for key in schema["required"]:
        sub = schema["properties"][key]
        if sub["type"] == "string":
            out[key] = "one sentence"
        else:
            number_key = next(k for k, v in sub["properties"].items() if v["type"] == "number")
            out[key] = {number_key: 0.5, "justification": "one sentence"}
    return json.dumps(out)


def _schema(condition: str, family: str) -> dict[str, Any]:
    fmt = response_format(SETTINGS, _request(condition), family)  # type: ignore[arg-type]
    assert fmt is not None and fmt["type"] == "json_schema"
    schema: dict[str, Any] = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    return schema


def test_trajectory_schema_carries_the_outcome_and_its_answer_parses() -> None:
    schema = _schema("trajectory_with_gt", "agentjudge")
    assert "outcome" in schema["required"]
    text = _answer(schema)
    parsed, outcome = with_outcome(parse_verdicts(text, PromptVariant()), text, PromptVariant())
    assert parsed.parse_ok and outcome == 0.5
    assert parsed.verdicts == {"tool": 0.5, "param": 0.5, "seq": 0.5, "cov": 0.5}


def test_paper_family_schema_uses_the_published_keys_and_its_answer_parses() -> None:
    schema = _schema("with_gt", "paper")
    assert schema["required"] == [
        "tool_selection_accuracy",
        "parameter_structure_accuracy",
        "sequence_accuracy",
        "query_coverage_accuracy",
        "overall_assessment",
    ]
    parsed = parse_verdicts(_answer(schema), PromptVariant())
    assert parsed.parse_ok and parsed.verdicts == {"tool": 0.5, "param": 0.5, "seq": 0.5, "cov": 0.5}


def test_our_family_schema_is_unchanged_and_cot_or_freeform_send_none() -> None:
    schema = _schema("without_gt", "agentjudge")
    assert schema["required"] == ["tool", "param", "seq", "cov", "overall"]
    assert response_format(SETTINGS, _request("with_gt", PromptVariant(cot=True))) is None
    assert response_format(SETTINGS, _request("with_gt", PromptVariant(prompt_format="freeform"))) is None
    plain = ModelSettings(model="openai/x")
    assert response_format(plain, _request("trajectory_with_gt")) is None
