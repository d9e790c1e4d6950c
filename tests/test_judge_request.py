"""``work.judge_request`` builds a judge's request without validating it (issue 15: validation copied every
list and was a sixth of an offline judge unit's cost). The request must be the one validation would make:
the same values of the same types, under every condition, with and without a reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentjudge.rundir.records import read_records
from agentjudge.runner.store import UnitKey, temperature_key
from agentjudge.runner.work import Dataset, judge_request, swap_partners
from agentjudge.types import (
    JudgeRequest,
    Prediction,
    PromptVariant,
    ToolCall,
    Trajectory,
)

MINI = Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl"
CONDITIONS = ("with_gt", "without_gt", "swapped_gt", "trajectory_with_gt", "trajectory_without_gt")


@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize("temperature", [None, 0.7])
def test_the_request_is_the_validated_one(condition: str, temperature: float | None) -> None:
    records = read_records(MINI, limit=3)
    data = Dataset(records)
    partners = swap_partners(records)
    variant = PromptVariant(prompt_format="freeform", cot=True)
    variants = {variant.key: variant}
    record = records[1]
    calls = [step.call for step in record.gt]
    prediction = Prediction(
        record_id=record.record_id("hard"),
        base_id=record.id,
        difficulty="hard",
        generator="sim/mid",
        calls=[*calls, ToolCall(name="extra", arguments={"n": 1.5, "nested": {"a": [1, None]}})],
        trajectory=Trajectory(
            messages=[{"role": "user", "content": "hi"}], steps=[], turns=1, stop_reason="answered"
        ),
    )
    key = UnitKey(
        "judge", record.record_id("hard"), "hard", "sim/mid", 0, "j", condition, variant.key,
        temperature_key(temperature), 2,
    )  # fmt: skip
    reference = {"strict": {"tool": 1.0, "param": 0.5, "seq": 0.0, "cov": 1.0}}
    for ref, outcome_ref in ((None, None), (reference, True)):
        built = judge_request(key, data, prediction, variants, partners, ref, outcome_ref)  # type: ignore[arg-type]
        validated = JudgeRequest.model_validate(dict(built))
        assert built == validated
        assert built.model_dump_json() == validated.model_dump_json()
        for name in JudgeRequest.model_fields:  # the same types, not only equal values (1 == 1.0 == True)
            assert type(getattr(built, name)) is type(getattr(validated, name)), name
        assert built.model_fields_set == validated.model_fields_set
        assert (built.gt is None) == (condition in ("without_gt", "trajectory_without_gt"))
        assert (built.trajectory is None) == (not condition.startswith("trajectory"))
