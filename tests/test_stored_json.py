"""The store's JSON text of a result, written and read by pydantic's serializer and parser (issue 15: the
offline judge stage encodes each result with ``store.stored_json`` and the grid reads its predictions back
with ``store.from_stored``). The text may differ from ``json.dumps`` of the dump; what it reads back as may
not: the export and every later reader decode it with ``json.loads``."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from agentjudge.runner.store import from_stored, stored_json
from agentjudge.types import JudgeResult, Prediction, ToolCall, Usage


def _same(a: Any, b: Any) -> bool:
    """Equal as decoded JSON, with NaN equal to NaN and a float never equal to an int or a bool."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


RESULTS = [
    JudgeResult(verdicts={"tool": 1.0, "param": 0.5, "seq": 0.0, "cov": None}, parse_ok=True),
    JudgeResult(  # every field away from its default
        verdicts={"tool": 0.25, "param": 1e-7, "seq": 1e20, "cov": 0.3333333333333333},
        rationales={"tool": 'naïve café ✓ \u2028 \x7f \x01 "quoted" \\ back', "overall": "日本語"},
        parse_ok=False,
        raw_output="{not json",
        error="timeout: after 3 attempt(s)",
        usage=Usage(prompt_tokens=12, completion_tokens=3, cost_usd=1.5e-6, cached=True),
        mode_verdicts={"paper": {"tool": 1.0}, "strict": {"tool": 0.0}},
        outcome=0.5,
    ),
    # NaN and infinities: pydantic writes null by default, which would read back as "unparsed"
    JudgeResult(verdicts={"tool": math.nan, "param": math.inf, "seq": -math.inf}, parse_ok=True),
    # a lone surrogate (an odd model answer) cannot be UTF-8: json.dumps escapes it
    JudgeResult(verdicts={"tool": 1.0}, rationales={"tool": "half \ud800 a pair"}, parse_ok=True),
]


@pytest.mark.parametrize("result", RESULTS, ids=["plain", "every-field", "nan-inf", "surrogate"])
def test_stored_json_reads_back_as_the_dump(result: JudgeResult) -> None:
    text = stored_json(result)
    expected = json.dumps(result.model_dump(mode="json", exclude_defaults=True), separators=(",", ":"))
    assert _same(json.loads(text), json.loads(expected))
    back = JudgeResult.model_validate(json.loads(text))
    assert _same(back.model_dump(mode="json"), result.model_dump(mode="json"))


def test_a_nan_verdict_is_not_stored_as_unparsed() -> None:
    text = stored_json(RESULTS[2])
    verdicts = json.loads(text)["verdicts"]
    assert math.isnan(verdicts["tool"]) and verdicts["param"] == math.inf and verdicts["seq"] == -math.inf


def test_from_stored_reads_what_json_loads_reads() -> None:
    prediction = Prediction(
        record_id="r:easy",
        base_id="r",
        difficulty="easy",
        generator="g",
        calls=[
            ToolCall(name="a", arguments={"x": math.nan, "y": 10**30, "z": [1.0, "é", {"k": None}]}),
            ToolCall(name="b", arguments={"s": "half \ud800 a pair"}),  # refused by pydantic's parser
        ],
        usage=Usage(prompt_tokens=3),
    )
    text = json.dumps(prediction.model_dump(mode="json", exclude_defaults=True), separators=(",", ":"))
    read = from_stored(Prediction, text)
    before = Prediction.model_validate(json.loads(text))  # how the grid read it before
    assert _same(read.model_dump(mode="json"), before.model_dump(mode="json"))
    assert read.calls is not None and read.calls[1].arguments["s"] == "half \ud800 a pair"
    plain = text.replace("half \\ud800 a pair", "whole")
    assert from_stored(Prediction, plain) == Prediction.model_validate(json.loads(plain))


def test_from_stored_still_refuses_invalid_text() -> None:
    with pytest.raises(ValueError):  # json.JSONDecodeError and pydantic's ValidationError are ValueErrors
        from_stored(Prediction, '{"record_id": 1')
    with pytest.raises(ValueError):
        from_stored(Prediction, '{"record_id": "r"}')  # valid JSON, not a prediction
