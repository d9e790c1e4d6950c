"""LLMGenerator (native tools, JSON fallback, failures recorded) and the `infer` verb, via the fake server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeserver import TEST_KEY, FakeLLM, prompt_text
from typer.testing import CliRunner

from agentjudge.commands import app
from agentjudge.commands.data import infer_cli
from agentjudge.generators.llm import LLMGenerator, parse_calls_text
from agentjudge.models.cache import CallCache
from agentjudge.models.client import ModelClient
from agentjudge.rundir.columns import PREDICTION_COLUMNS
from agentjudge.rundir.predictions import read_predictions
from agentjudge.rundir.records import write_records
from agentjudge.types import GTStep, Record, Task, ToolCall, ToolSchema

TOOLS = [
    ToolSchema(
        name="find_customer",
        description="Find a customer by email.",
        parameters={"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]},
        returns={"type": "object"},
    ),
    ToolSchema(
        name="close_ticket",
        description="Close a ticket.",
        parameters={
            "type": "object",
            "properties": {"customer_id": {"type": "string"}},
            "required": ["customer_id"],
        },
    ),
]
TASK = Task(
    record_id="itsm-0001:easy",
    base_id="itsm-0001",
    difficulty="easy",
    query="Close the ticket of ana@example.com",
    system_prompt="You are an IT service desk agent.",
    tools=TOOLS,
)
CALLS = [
    {"name": "find_customer", "arguments": {"email": "ana@example.com"}},
    {"name": "close_ticket", "arguments": {"customer_id": "<find_customer.customer_id>"}},
]
EXPECTED = [ToolCall.model_validate(c) for c in CALLS]


def generator(fake_llm: FakeLLM, **overrides: object) -> LLMGenerator:
    return LLMGenerator(fake_llm.settings(**overrides), ModelClient(CallCache(), backoff_base_s=0.005))


async def test_native_tool_calls(fake_llm: FakeLLM) -> None:
    fake_llm.queue(tool_calls=CALLS, usage={"prompt_tokens": 40, "completion_tokens": 12})
    pred = await generator(fake_llm, name="gen-a")(TASK, 0)
    assert pred.error is None and pred.calls == EXPECTED
    assert (pred.generator, pred.record_id, pred.base_id, pred.trial) == (
        "gen-a",
        TASK.record_id,
        "itsm-0001",
        0,
    )
    assert (pred.usage.prompt_tokens, pred.usage.completion_tokens) == (40, 12)
    assert json.loads(pred.raw_output)["tool_calls"][0]["name"] == "find_customer"
    (req,) = fake_llm.requests
    assert req["temperature"] == 0.0  # default for generators
    assert [t["function"]["name"] for t in req["tools"]] == ["find_customer", "close_ticket"]
    assert req["tools"][0] == {
        "type": "function",
        "function": {
            "name": "find_customer",
            "description": TOOLS[0].description,
            "parameters": TOOLS[0].parameters,
        },
    }
    assert req["messages"][-1] == {"role": "user", "content": TASK.query}
    assert "You are an IT service desk agent." in req["messages"][0]["content"]


async def test_native_model_answering_in_text_is_parsed(fake_llm: FakeLLM) -> None:
    fake_llm.queue("Here is my plan:\n```json\n" + json.dumps(CALLS) + "\n```")
    pred = await generator(fake_llm)(TASK, 0)
    assert pred.error is None and pred.calls == EXPECTED


async def test_native_prose_without_json_means_no_calls(fake_llm: FakeLLM) -> None:
    fake_llm.queue("I cannot help with that request.")
    pred = await generator(fake_llm)(TASK, 0)
    assert pred.error is None and pred.calls == [] and pred.raw_output == "I cannot help with that request."


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(CALLS),
        "```json\n" + json.dumps(CALLS, indent=2) + "\n```",
        "Sure! The calls are:\n" + json.dumps(CALLS) + "\nLet me know if you need more.",
        json.dumps({"calls": CALLS}),
        json.dumps([{"name": c["name"], "arguments": json.dumps(c["arguments"])} for c in CALLS]),
    ],
    ids=["plain", "fenced", "prose", "wrapped", "string-args"],
)
async def test_json_mode_parses_robustly(fake_llm: FakeLLM, text: str) -> None:
    fake_llm.queue(text)
    pred = await generator(fake_llm, native_tools=False)(TASK, 0)
    assert pred.error is None and pred.calls == EXPECTED and pred.raw_output == text
    (req,) = fake_llm.requests
    assert "tools" not in req
    prompt = prompt_text(req)
    assert "JSON array" in prompt and '"close_ticket"' in prompt  # schemas are in the prompt


async def test_json_mode_empty_array_is_zero_calls(fake_llm: FakeLLM) -> None:
    fake_llm.queue("[]")
    pred = await generator(fake_llm, native_tools=False)(TASK, 0)
    assert pred.error is None and pred.calls == []


@pytest.mark.parametrize(
    "text",
    [
        "I would first find the customer and then close the ticket.",
        '[{"name": "find_customer", "arguments": {',
        '[{"arguments": {}}]',
        '[{"name": "x", "arguments": [1, 2]}]',
    ],
    ids=["prose", "truncated", "no-name", "list-args"],
)
async def test_json_mode_unparseable_is_a_recorded_failure(fake_llm: FakeLLM, text: str) -> None:
    fake_llm.queue(text)
    pred = await generator(fake_llm, native_tools=False)(TASK, 0)
    assert pred.calls is None and pred.error is not None and pred.error.startswith("parse_error")
    assert pred.raw_output == text  # kept for inspection


async def test_malformed_native_arguments_is_a_failure(fake_llm: FakeLLM) -> None:
    fake_llm.queue(tool_calls=[{"name": "find_customer", "arguments": '{"email": "ana@'}])
    pred = await generator(fake_llm)(TASK, 0)
    assert pred.calls is None and pred.error is not None and pred.error.startswith("bad_arguments")
    assert "find_customer" in pred.raw_output


async def test_model_call_error_is_recorded_not_empty(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next(status=400, message=f"bad request for key {TEST_KEY}")
    pred = await generator(fake_llm)(TASK, 0)
    assert pred.calls is None and pred.error is not None
    assert pred.error.startswith("call_failed[bad_request]") and TEST_KEY not in pred.error


async def test_trials_are_distinct_samples(fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(lambda req: json.dumps(CALLS))
    gen = generator(fake_llm, native_tools=False)
    await gen(TASK, 0)
    await gen(TASK, 1)
    await gen(TASK, 0)  # repeat of trial 0: from the cache
    assert len(fake_llm.requests) == 2
    assert gen.client.stats.total.cache_hits == 1


def test_parse_calls_text_accepts_openai_shaped_items() -> None:
    text = json.dumps([{"type": "function", "function": {"name": "a", "arguments": '{"x": 1}'}}])
    assert parse_calls_text(text) == [ToolCall(name="a", arguments={"x": 1})]


# ---- infer verb ---------------------------------------------------------------------------------------


def _records(tmp_path: Path, n: int = 3) -> Path:
    records = [
        Record(
            id=f"itsm-{i:04d}",
            domain="itsm",
            scenario="close a ticket",
            topology="linear",
            queries={
                "easy": f"Close ticket {i} of ana@example.com",
                "medium": f"Ticket {i}: close it",
                "hard": f"{i}?",
            },
            system_prompt="You are an IT service desk agent.",
            tools=TOOLS,
            gt=[
                GTStep(call=EXPECTED[0], output={"customer_id": "C1"}),
                GTStep(
                    call=ToolCall(name="close_ticket", arguments={"customer_id": "C1"}),
                    output={},
                    depends_on=[0],
                ),
            ],
        )
        for i in range(n)
    ]
    path = tmp_path / "records.jsonl"
    write_records(path, records)
    return path


def _responder(req: dict[str, object]) -> str:
    if "Ticket 1:" in prompt_text(req):
        return '```json\n[{"name": "find_customer", "arguments": {\n```'  # unparseable: a recorded failure
    return json.dumps(CALLS)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_infer_cli_writes_resumes_and_second_run_hits_cache(
    fake_llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)  # litellm's default key variable for openai/ models
    fake_llm.set_responder(_responder)
    data = _records(tmp_path)
    out = tmp_path / f"preds{suffix}"
    # The CLI settings have native_tools=True; the fake answers in text, which the generator parses.
    code = infer_cli(data, "openai/test-model", out, None, 2, fake_llm.base_url, False)
    assert code == 1  # one record-difficulty failed to parse (2 trials)
    preds = read_predictions(out)
    assert len(preds) == 3 * 3 * 2 and len(fake_llm.requests) == 3 * 3 * 2
    failed = [p for p in preds if p.error]
    assert {(p.record_id, p.trial) for p in failed} == {("itsm-0001:medium", 0), ("itsm-0001:medium", 1)}
    assert all(p.calls is None for p in failed)
    assert all(p.calls == EXPECTED for p in preds if not p.error)
    if suffix == ".jsonl":
        row = json.loads(out.read_text().splitlines()[0])
        assert tuple(row) == PREDICTION_COLUMNS
    assert TEST_KEY not in out.read_bytes().decode("utf-8", "replace")

    # Resume: successes are kept, only the two failures are asked again (answered from the cache).
    fake_llm.set_responder(lambda req: json.dumps(CALLS))
    code = infer_cli(data, "openai/test-model", out, None, 2, fake_llm.base_url, True)  # --no-cache
    assert code == 0 and len(fake_llm.requests) == 18 + 2
    assert len(read_predictions(out)) == 18 and not any(p.error for p in read_predictions(out))

    # A second identical run into a new file: every answer comes from the cache.
    again = tmp_path / f"again{suffix}"
    assert (
        infer_cli(data, "openai/test-model", again, ["easy", "medium", "hard"], 2, fake_llm.base_url, False)
        == 0
    )
    assert len(fake_llm.requests) == 20  # no new request
    assert all(p.usage.cached for p in read_predictions(again))


def test_infer_cli_bad_input(tmp_path: Path) -> None:
    data = _records(tmp_path, 1)
    runner = CliRunner()
    out = str(tmp_path / "p.jsonl")
    result = runner.invoke(app, ["infer", str(data), "--generator", "sim/no-such-profile", "--out", out])
    assert result.exit_code == 2 and "unknown simulated" in result.output
    result = runner.invoke(
        app, ["infer", str(tmp_path / "missing.jsonl"), "--generator", "sim/perfect", "--out", out]
    )
    assert result.exit_code == 2 and "missing.jsonl" in result.output
    result = runner.invoke(
        app, ["infer", str(data), "--generator", "sim/perfect", "--out", str(tmp_path / "p.csv")]
    )
    assert result.exit_code == 2


def test_infer_cli_binds_records_for_simulated_generators(tmp_path: Path) -> None:
    data = _records(tmp_path, 2)
    out = tmp_path / "sim.jsonl"
    assert infer_cli(data, "sim/perfect", out, ["easy"], 1, None, False) == 0
    preds = read_predictions(out)
    assert len(preds) == 2 and all(p.simulated and p.error is None for p in preds)
    gt_calls = [EXPECTED[0], ToolCall(name="close_ticket", arguments={"customer_id": "C1"})]
    assert all(p.calls == gt_calls for p in preds)  # the perfect profile reproduces the GT calls


def test_infer_into_a_shared_file_keeps_other_generators_rows(tmp_path: Path) -> None:
    """Two generators written to one predictions file: the second run must not delete the first's rows."""
    data = _records(tmp_path, 2)
    out = tmp_path / "both.jsonl"
    assert infer_cli(data, "sim/perfect", out, ["easy"], 1, None, False) == 0
    first = read_predictions(out)
    assert infer_cli(data, "sim/weak", out, ["easy"], 1, None, False) == 0
    preds = read_predictions(out)
    assert sorted({p.generator for p in preds}) == ["sim/perfect", "sim/weak"] and len(preds) == 4
    assert [p for p in preds if p.generator == "sim/perfect"] == first
