"""Issue 12: a real-model run that cannot fail quietly (preflight, stopped models, failures by reason,
the hard cost cap, settings inherited by --judge, file-system errors, Gate 1 refusal)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from fakeserver import TEST_KEY_ENV, FakeLLM
from test_runner import _verdict_json, make_records, read, write_pipeline

from agentjudge.commands.run import run_cli
from agentjudge.models.failures import FailureLog, reason_of
from agentjudge.registry.preflight import ModelUse, preflight
from agentjudge.rundir.records import write_records
from agentjudge.types import ModelSettings, ToolSchema


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _problems(settings: ModelSettings, role: Any = "judge", **kw: Any) -> list[str]:
    return preflight([ModelUse(role, settings, "judges[0]")], **kw)


# ------------------------------------------------------------------------------------ preflight units
def test_preflight_names_each_problem(monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (line,) = _problems(ModelSettings(model="openai/gpt-4o-mini"))
    assert line.startswith("judges[0] ('openai/gpt-4o-mini'):") and "OPENAI_API_KEY" in line
    (line,) = _problems(ModelSettings(model="foo"))
    assert "provider/model" in line
    (line,) = _problems(ModelSettings(model="openai/REPLACE-ME"))
    assert "placeholder REPLACE-ME left in model" in line
    (line,) = _problems(
        ModelSettings(model="hosted_vllm/x", api_key_env="NOT_SET_ANYWHERE_12", api_base=fake_llm.base_url)
    )
    assert "NOT_SET_ANYWHERE_12" in line
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    (line,) = _problems(ModelSettings(model="hosted_vllm/x", api_base=dead))
    assert f"api_base {dead} does not answer" in line
    (line,) = _problems(ModelSettings(model="sim/no-such-profile"), role="generator")
    assert "unknown simulated profile 'no-such-profile'" in line
    (line,) = _problems(ModelSettings(model="baseline/nope"))
    assert "unknown baseline judge 'nope'" in line
    (line,) = _problems(ModelSettings(model="hosted_vllm/x"))  # no default host: litellm would call OpenAI
    assert "provider hosted_vllm has no default host" in line and "api_base" in line
    assert _problems(fake_llm.settings()) == []  # key set, server answers GET /models
    assert fake_llm.requests == []  # nothing was sent to the chat endpoint


def test_probe_makes_one_token_call_and_reports_rejection(fake_llm: FakeLLM) -> None:
    fake_llm.queue("OK")
    assert _problems(fake_llm.settings(), probe=True) == []
    assert fake_llm.requests[0]["max_tokens"] == 1
    fake_llm.fail_next(status=401, message="invalid key")
    (line,) = _problems(fake_llm.settings(), probe=True)
    assert "--probe" in line and "auth" in line


def test_probe_sends_no_judge_only_extra_keys(fake_llm: FakeLLM) -> None:
    fake_llm.queue("OK")
    thinking = {"judge_thinking_on": {"reasoning_effort": "high"}, "judge_thinking_off": {"seed": 7}}
    assert _problems(fake_llm.settings(extra=thinking), probe=True) == []
    (request,) = fake_llm.requests
    assert "judge_thinking_on" not in request and "judge_thinking_off" not in request
    assert "reasoning_effort" not in request and request["seed"] == 7  # the call a no-CoT judge makes
    assert request["max_tokens"] == 1


def test_max_cost_needs_a_price_and_a_length_bound(fake_llm: FakeLLM) -> None:
    (line,) = _problems(fake_llm.settings(), max_cost=1.0)  # litellm has no price for "test-model"
    assert "input_cost_per_token" in line
    priced = fake_llm.settings(input_cost_per_token=1e-6, output_cost_per_token=2e-6)
    (line,) = _problems(priced, max_cost=1.0)
    assert "max_tokens" in line
    assert _problems(priced.model_copy(update={"max_tokens": 50}), max_cost=1.0) == []


def test_reason_of_stored_failure_texts() -> None:
    assert reason_of("auth: environment variable X (api_key_env) is not set") == "auth"
    assert reason_of("call_failed[not_found]: not_found after 1 attempt(s): ...") == "bad_request"
    assert reason_of("call_failed[rate_limit]: ...") == "rate_limit"
    assert reason_of("server_error: ...") == "server"
    assert reason_of("parse_error: no JSON array") == "parse"
    assert reason_of("RuntimeError: boom") == "other"
    log = FailureLog()
    log.extend([("m", "auth: first", "auth"), ("m", "auth: second", "auth"), ("m", "timeout: t", "timeout")])
    assert log.lines() == [
        "  m: auth x2 (401/403 or a missing key: check the key variable; never retried); e.g. auth: first",
        "  m: timeout x1 (no answer within timeout_s after every retry); e.g. timeout: t",
    ]


# ------------------------------------------------------------------------------------ run, end to end
def test_run_without_key_is_refused_before_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"])
    rundir = tmp_path / "run"
    for dry in (False, True):
        assert run_cli(pipeline, rundir, judges=["openai/gpt-4o-mini", "foo"], dry_run=dry) == 2
        out = capsys.readouterr().err
        assert "--judge[0] ('openai/gpt-4o-mini'): provider openai needs OPENAI_API_KEY" in out
        assert "--judge[1] ('foo'): litellm cannot tell which provider" in out
        assert "preflight: 2 problem(s)" in out
        assert not rundir.exists()


def test_auth_failure_stops_the_model_with_one_message(
    tmp_path: Path, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    """The key is set but the server rejects it: the first 401 stops the judge; no unit is retried."""
    fake_llm.set_responder(lambda req: {"status": 401, "body": json.dumps({"error": {"message": "bad key"}})})
    judge = fake_llm.settings(name="judge", concurrency=1).model_dump(exclude_defaults=True)
    pipeline = write_pipeline(tmp_path, generators=["sim/perfect"], judges=[judge], conditions=["with_gt"])
    assert run_cli(pipeline, tmp_path / "run") == 1
    out = capsys.readouterr().out
    assert len(fake_llm.requests) == 1  # 8 judge units planned, one request made, none retried
    assert out.count("stopping judge") == 1
    assert "judge: auth x1" in out and "judge: stopped (auth)" in out and "7 unit(s) not run" in out


def test_cost_cap_is_never_exceeded(
    tmp_path: Path, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    """Worst case reserved before sending; the server reports real usage; the spend stays under the cap."""
    fake_llm.set_responder(lambda req: _verdict_json(1.0))
    price_in, price_out = 1e-6, 2e-6
    judge = fake_llm.settings(
        name="judge",
        concurrency=4,
        max_tokens=400,
        input_cost_per_token=price_in,
        output_cost_per_token=price_out,
    ).model_dump(exclude_defaults=True)
    pipeline = write_pipeline(
        tmp_path, generators=["sim/perfect"], judges=[judge], conditions=["with_gt", "without_gt"]
    )
    cap = 0.006
    assert run_cli(pipeline, tmp_path / "run", max_cost=cap) == 1
    out = capsys.readouterr().out
    spent = 0.0
    for usage in (json.loads(r["usage_json"]) for r in _usage_rows(fake_llm)):
        spent += usage["prompt_tokens"] * price_in + usage["completion_tokens"] * price_out
    assert 0 < len(fake_llm.requests) < 16 and spent <= cap  # overspend = 0
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    left = meta["last_invocation"]["units_not_run_at_cost_cap"]
    assert left == 16 - len(fake_llm.requests) and f"{left} unit(s) left" in out
    assert meta["last_invocation"]["spent_usd"] == pytest.approx(spent)


def _usage_rows(fake: FakeLLM) -> list[dict[str, Any]]:
    """The usage the fake server reported for each request (prompt/completion word counts)."""
    from fakeserver import prompt_text

    rows = []
    for req in fake.requests:
        answer = _verdict_json(1.0)
        usage = {
            "prompt_tokens": max(1, len(prompt_text(req).split())),
            "completion_tokens": len(answer.split()),
        }
        rows.append({"usage_json": json.dumps(usage)})
    return rows


def test_cli_judge_inherits_the_pipeline_settings(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(lambda req: _verdict_json(1.0))
    fake_llm.latency = 0.05
    template = {"model": "baseline/always-1", "concurrency": 1, "temperature": 0.25, "max_tokens": 77}
    pipeline = write_pipeline(tmp_path, generators=["sim/perfect"], judges=[template], conditions=["with_gt"])
    cli_judge = "openai/cli-judge"
    import os

    os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-for-the-fake-server")
    assert run_cli(pipeline, tmp_path / "run", judges=[cli_judge], api_base=fake_llm.base_url) == 0
    assert fake_llm.max_in_flight == 1
    assert {r["temperature"] for r in fake_llm.requests} == {0.25}
    assert {r["max_tokens"] for r in fake_llm.requests} == {77}


def test_output_path_that_is_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"])
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    for out in (blocker, blocker / "run"):
        assert run_cli(pipeline, out) == 2
        text = capsys.readouterr().err
        assert f"--out {out}" in text and ("not a folder" in text or "is a file" in text)
    assert blocker.read_text() == "x"


def test_gate1_failures_are_refused_or_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], conditions=["with_gt"])
    records = make_records()
    bad_tool = ToolSchema(name="broken", description="b", parameters={"type": "object", "required": 5})
    records[1] = records[1].model_copy(update={"tools": [*records[1].tools, bad_tool]})
    write_records(tmp_path / "records.jsonl", records)
    assert run_cli(pipeline, tmp_path / "run") == 2
    out = capsys.readouterr().err
    assert "1 of 4 record(s) fail Gate 1" in out and "record test-0001: gate1:schema_invalid" in out
    assert not (tmp_path / "run").exists()
    assert run_cli(pipeline, tmp_path / "run", skip_invalid=True) == 0
    assert "--skip-invalid: 1 record(s) failing Gate 1 left out" in capsys.readouterr().out
    assert "test-0001" not in set(read(tmp_path / "run", "predictions").base_id)


def test_fs_error_escaping_a_verb_is_one_line_rc2(capsys: pytest.CaptureFixture[str]) -> None:
    from agentjudge.commands._app import guarded as _guarded

    def full() -> int:
        raise OSError(28, "No space left on device", "/data/run/judgments.parquet")

    assert _guarded(full) == 2  # a verb without units: its earlier files were left as they were
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: /data/run/judgments.parquet: No space left on device (the disk is full: free some space, "
        "then run it again; the earlier files were left as they were)"
    ]
    assert _guarded(full, resumable=True) == 2  # run, infer: what finished is kept
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: /data/run/judgments.parquet: No space left on device (the disk is full: free some space, "
        "then re-run the same command; finished units are kept)"
    ]
    assert TEST_KEY_ENV  # the fixture's key variable is set for every test (conftest)


def test_structured_output_sends_the_schema_and_is_recorded(tmp_path: Path, fake_llm: FakeLLM) -> None:
    """A judge with structured_output gets response_format json_schema; the column says so; the report's
    failures section compares parse-failure rates with and without it."""

    def responder(req: dict[str, Any]) -> str:
        if "response_format" in req:
            return _verdict_json(1.0)
        return "I think it is fine." if "C-101" in json.dumps(req["messages"]) else _verdict_json(1.0)

    fake_llm.set_responder(responder)
    judges = [
        fake_llm.settings(model="openai/so", name="so", structured_output=True).model_dump(
            exclude_defaults=True
        ),
        fake_llm.settings(model="openai/plain", name="plain").model_dump(exclude_defaults=True),
    ]
    pipeline = write_pipeline(tmp_path, generators=["sim/perfect"], judges=judges, conditions=["with_gt"])
    assert run_cli(pipeline, tmp_path / "run") == 0
    sent = {r["model"]: r.get("response_format") for r in fake_llm.requests}
    assert sent["plain"] is None
    schema = sent["so"]["json_schema"]["schema"]
    assert sent["so"]["type"] == "json_schema" and set(schema["required"]) == {
        "tool",
        "param",
        "seq",
        "cov",
        "overall",
    }
    judg = read(tmp_path / "run", "judgments")
    assert judg.groupby("judge").structured_output.all().to_dict() == {"so": True, "plain": False}
    from agentjudge.commands.report import report_cli

    assert report_cli(tmp_path / "run", resamples=20, seed=0) in (0, 1)
    # the failures section is folded in report.html (report.md keeps one line per section)
    html = (tmp_path / "run" / "report" / "report.html").read_text()
    # plain: 2 of its 8 prompts mention C-101 (test-0001 easy and hard): 2 x 4 of 8 x 4 metric verdicts
    assert "so: unparseable verdicts with structured output 0.0 % of 32, without n/a." in html
    assert "plain: unparseable verdicts with structured output n/a, without 25.0 % of 32." in html


def test_empty_inputs_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentjudge.commands.data import infer_cli, score_cli

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    records = tmp_path / "records.jsonl"
    write_records(records, make_records())
    assert infer_cli(empty, "sim/weak", tmp_path / "p.jsonl") == 2
    assert score_cli(records, empty, tmp_path / "s.parquet", "both", False) == 2
    err = capsys.readouterr()
    assert f"{empty}: no records" in err.err + err.out and f"{empty}: no predictions" in err.err
    assert not (tmp_path / "p.jsonl").exists() and not (tmp_path / "s.parquet").exists()


async def test_generator_structured_output_json_object_form(fake_llm: FakeLLM) -> None:
    """llama-cpp-python's server wants {"type": "json_object", "schema": ...}; the answer's {"calls": [...]}
    is read as the call list."""
    from agentjudge.generators.llm import CALLS_SCHEMA, LLMGenerator
    from agentjudge.models.client import ModelClient
    from agentjudge.runner.work import Dataset

    data = Dataset(make_records())
    record = data.records[0]
    fake_llm.queue(json.dumps({"calls": [{"name": "get_customer", "arguments": {"customer_id": "C-100"}}]}))
    settings = fake_llm.settings(native_tools=False, structured_output="json_object")
    pred = await LLMGenerator(settings, ModelClient())(data.task(record, "easy"), 0)
    assert fake_llm.requests[0]["response_format"] == {"type": "json_object", "schema": CALLS_SCHEMA}
    assert pred.error is None and [c.name for c in pred.calls or []] == ["get_customer"]
