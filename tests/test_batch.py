"""Batch mode (``batch: true``) against the loopback server's OpenAI Files and Batches endpoints.

A batch run stores the same judgments as a direct run; expired batches and per-request failures resubmit
only what has no answer; a run killed while its batches are in flight resumes by polling them, and the
server answers every request exactly once.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fakeserver import TEST_KEY, TEST_KEY_ENV, FakeLLM
from test_runner import read, write_pipeline

from agentjudge.commands.run import run_cli
from agentjudge.models.batch import parse_result_line, split_lines
from agentjudge.rundir import RunFolder

TESTS = Path(__file__).resolve().parent
UNITS = 8 * 2  # predictions (4 records x 2 difficulties, sim/perfect) x conditions
FAST_POLL = {"batch_poll_s": 0.01, "batch_poll_max_s": 0.05}


def _verdict(value: float) -> str:
    return json.dumps(
        {m: {"verdict": value, "justification": "because"} for m in ("tool", "param", "seq", "cov")}
        | {"overall": "ok"}
    )


def _responder(req: dict[str, Any]) -> str:
    """A verdict that depends on the request (its length), so rows differ between units."""
    return _verdict((0.0, 0.5, 1.0)[len(json.dumps(req["messages"])) % 3])


def _judge(fake: FakeLLM, batch: bool, **extra: Any) -> dict[str, Any]:
    prices = {"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6}
    entry = fake.settings(name="judge", **(prices | extra))
    return entry.model_dump(exclude_defaults=True) | ({"batch": True} if batch else {})


def _pipeline(folder: Path, fake: FakeLLM, batch: bool, **fields: Any) -> Path:
    folder.mkdir(exist_ok=True)
    judge = _judge(fake, batch, **fields.pop("judge_fields", {}))
    return write_pipeline(
        folder,
        generators=["sim/perfect"],
        judges=[judge],
        conditions=["with_gt", "without_gt"],
        **({"cache": f"cache-{'batch' if batch else 'direct'}.sqlite"} | FAST_POLL | fields),
    )


def _stable(judg: pd.DataFrame) -> pd.DataFrame:
    """Judgment rows without the per-call accounting (batch answers are priced at the batch price)."""
    drop = [c for c in judg.columns if c in ("cost_usd", "judge_cost_usd")]
    key = ["record_id", "generator", "judge", "condition", "metric", "scoring_mode"]
    return judg.drop(columns=drop).sort_values(key).reset_index(drop=True)


def test_split_lines_respects_request_and_byte_limits() -> None:
    lines = [b"x" * 9] * 5  # 10 bytes each with the newline
    assert split_lines(lines, max_requests=2, max_bytes=1000) == [[0, 1], [2, 3], [4]]
    assert split_lines(lines, max_requests=100, max_bytes=30) == [[0, 1, 2], [3, 4]]
    with pytest.raises(ValueError, match="over the 5-byte"):
        split_lines(lines, max_requests=10, max_bytes=5)


def test_a_sendable_line_drops_only_transport_keys_of_its_body() -> None:
    from agentjudge.models.batch import sendable_line

    clean = json.dumps({"custom_id": "k1", "body": {"model": "m", "messages": []}}, sort_keys=True)
    assert sendable_line(clean) is clean and sendable_line("not json") == "not json"
    body = {"model": "m", "messages": [], "extra_headers": {"Authorization": "Bearer x"}, "timeout": 5}
    old = {"custom_id": "k1", "method": "POST", "url": "/v1/chat/completions", "body": body}
    assert json.loads(sendable_line(json.dumps(old))) == old | {"body": {"model": "m", "messages": []}}


def test_result_lines_of_output_and_error_files() -> None:
    ok = parse_result_line(
        json.dumps(
            {"custom_id": "k1", "response": {"status_code": 200, "body": {"choices": []}}, "error": None}
        )
    )
    assert ok is not None and ok.status == 200 and ok.body == {"choices": []} and ok.error is None
    bad = parse_result_line(
        json.dumps(
            {"custom_id": "k2", "response": {"status_code": 400, "body": {"error": {"message": "no"}}}}
        )
    )
    assert bad is not None and bad.status == 400 and bad.error == "no"
    assert parse_result_line("not json") is None and parse_result_line('{"x": 1}') is None


def test_batch_run_equals_direct_run(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(_responder)
    direct = _pipeline(tmp_path / "d", fake_llm, batch=False)
    assert run_cli(direct, tmp_path / "direct") == 0
    direct_requests = [json.dumps(r, sort_keys=True) for r in fake_llm.requests]
    assert len(direct_requests) == UNITS

    fake_llm.reset()
    fake_llm.set_responder(_responder)
    fake_llm.batch_polls = 2
    batched = _pipeline(tmp_path / "b", fake_llm, batch=True, batch_max_requests=5)
    assert run_cli(batched, tmp_path / "batch") == 0
    # 16 requests in files of at most 5: 4 uploads, 4 batches; each request answered once
    assert (fake_llm.uploads, fake_llm.batches_created, len(fake_llm.requests)) == (4, 4, UNITS)
    assert all(p.startswith("batch:") for p in fake_llm.paths)
    # the request bodies the provider saw are those of the direct run (timeouts and keys aside)
    assert sorted(json.dumps(r, sort_keys=True) for r in fake_llm.requests) == sorted(direct_requests)

    d, b = read(tmp_path / "direct", "judgments"), read(tmp_path / "batch", "judgments")
    assert len(d) == len(b) > 0 and b.parse_ok.all() and b.judge_error.isna().all()
    pd.testing.assert_frame_equal(_stable(d), _stable(b))
    assert set(b.verdict) == {0.0, 0.5, 1.0}
    # the key never reaches the store: request lines carry the body only
    assert TEST_KEY.encode() not in (tmp_path / "batch" / "run.sqlite").read_bytes()
    with sqlite3.connect(tmp_path / "batch" / "run.sqlite") as db:
        states = dict(db.execute("SELECT state, COUNT(*) FROM batch_requests GROUP BY state").fetchall())
        members = db.execute("SELECT COUNT(*) FROM batch_members").fetchone()[0]
    assert states == {"done": UNITS} and members == UNITS
    # the batch price is half the pipeline's list price (OpenAI's documented 50 %), per call
    meta_d = json.loads((tmp_path / "direct" / "meta.json").read_text())["last_invocation"]["per_model"]
    meta_b = json.loads((tmp_path / "batch" / "meta.json").read_text())["last_invocation"]["per_model"]
    cost_d = next(r for r in meta_d if r["model"] == "judge")["cost_usd"]
    cost_b = next(r for r in meta_b if r["model"] == "judge")["cost_usd"]
    assert cost_d > 0 and cost_b == pytest.approx(cost_d / 2)

    # the batch answers are in the call cache under the direct call's keys: a direct run of the batch
    # pipeline's cache sends nothing
    fake_llm.reset()
    again = _pipeline(tmp_path / "b", fake_llm, batch=False, cache="cache-batch.sqlite")
    assert run_cli(again, tmp_path / "again") == 0
    assert fake_llm.requests == []


def test_batch_mode_sends_headers_env_and_extra_headers_with_every_files_and_batches_request(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "gw-7f3e-header-secret"
    monkeypatch.setenv("AJ_GATEWAY_HDR", secret)
    # a gateway that echoes the header's value in its answers: scrubbed wherever an answer is kept
    fake_llm.set_responder(lambda req: _responder(req).replace('"because"', f'"because {secret}"'))
    fake_llm.batch_polls = 2
    fields = {
        "headers_env": {"X-Gateway-Key": "AJ_GATEWAY_HDR"},
        "extra": {"extra_headers": {"X-Title": "aj"}},
    }
    pipeline = _pipeline(tmp_path / "b", fake_llm, batch=True, judge_fields=fields)
    assert run_cli(pipeline, tmp_path / "batch") == 0
    judgments = read(tmp_path / "batch", "judgments")
    assert len(judgments) > 0 and judgments.parse_ok.all()
    assert judgments.rationale.str.contains("because ***", regex=False).any()  # scrubbed, kept
    routes = {route.split()[0] + " " + route.split()[1].split("/")[2] for route, _ in fake_llm.batch_headers}
    assert routes == {"POST files", "GET files", "POST batches", "GET batches"}  # upload, read, create, poll
    for route, headers in fake_llm.batch_headers:
        assert headers.get("x-gateway-key") == secret and headers.get("x-title") == "aj", route
    # the output file is read once, by the runner (litellm's own batch cost logging would read it again,
    # without the headers)
    assert sum(route.endswith("/content") for route, _ in fake_llm.batch_headers) == 1
    # the headers are transport: no request line carries them, and their value is in no file of the run
    lines = [json.loads(line) for data in fake_llm.files.values() for line in data.splitlines()]
    requests = [line for line in lines if "body" in line and "method" in line]  # the input file's lines
    assert len(requests) == UNITS and not any("extra_headers" in line["body"] for line in requests)
    assert not any(secret in json.dumps(line) for line in requests)  # (the answers echo it: the provider)
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or secret.encode() not in path.read_bytes(), path


def test_expired_batch_resubmits_only_unanswered_requests(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(_responder)
    fake_llm.script_batch("expire")
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True)
    assert run_cli(pipeline, tmp_path / "run") == 0
    # first batch: 16 requests, 8 answered before it expired; second batch: the other 8
    assert fake_llm.batches_created == 2 and len(fake_llm.requests) == UNITS
    second = fake_llm.files[fake_llm.batches["batch_fake_1"]["input_file_id"]].decode().splitlines()
    assert len(second) == UNITS // 2
    assert read(tmp_path / "run", "judgments").parse_ok.all()
    # 24 requests for 16 calls: the 8 sent again are retries (of an expired batch: timeout), as a direct
    # call's; before, 24 requests and no retry
    judge = json.loads((tmp_path / "run" / "run_summary.json").read_text())["per_model"]["judge"]
    assert judge["this_invocation"]["requests"] == UNITS + UNITS // 2
    assert judge["this_invocation"]["retries_by_kind"] == {"timeout": UNITS // 2}


def test_half_failed_batch_records_failures_per_unit_and_rerun_retries(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.set_responder(_responder)
    fake_llm.script_batch("fail_half", status=400)  # a request error: not retried, a failure of its unit
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True)
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 1
    judg = read(rundir, "judgments")
    failed = judg[judg.judge_error.notna()]
    assert failed.groupby(["record_id", "condition"]).ngroups == UNITS // 2
    assert failed.verdict.isna().all() and failed.judge_error.str.startswith("bad_request").all()
    assert judg[judg.judge_error.isna()].verdict.notna().all()
    assert len(fake_llm.requests) == UNITS // 2
    # a re-run sends only the failed requests, in a new batch
    assert run_cli(pipeline, rundir) == 0
    assert fake_llm.batches_created == 2 and len(fake_llm.requests) == UNITS
    assert read(rundir, "judgments").judge_error.isna().all()

    # a retryable per-request error (HTTP 500) is resubmitted within the run
    fake_llm.reset()
    fake_llm.set_responder(_responder)
    fake_llm.script_batch("fail_half", status=500)
    other = _pipeline(tmp_path / "q", fake_llm, batch=True)
    assert run_cli(other, tmp_path / "run2") == 0
    assert fake_llm.batches_created == 2 and len(fake_llm.requests) == UNITS


def test_batches_verb_lists_status(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(_responder)
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True, batch_max_requests=10)
    assert run_cli(pipeline, tmp_path / "run") == 0
    out = subprocess.run(
        [sys.executable, "-m", "agentjudge", "batches", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "batch_fake_0" in out.stdout and "batch_fake_1" in out.stdout and "completed" in out.stdout
    assert TEST_KEY not in out.stdout + out.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "agentjudge", "batches", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        check=False,
    )
    assert missing.returncode == 2 and "nope" in missing.stderr and "Traceback" not in missing.stderr
    assert "no such folder" in missing.stderr
    a_file = subprocess.run(  # the store itself given instead of its folder
        [sys.executable, "-m", "agentjudge", "batches", str(tmp_path / "run" / "run.sqlite")],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        check=False,
    )
    assert a_file.returncode == 2 and "not a folder" in a_file.stderr
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "run.sqlite").write_text("not a database")
    junk = subprocess.run(
        [sys.executable, "-m", "agentjudge", "batches", str(tmp_path / "junk")],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        check=False,
    )
    assert junk.returncode == 2 and "not a run store" in junk.stderr and "Traceback" not in junk.stderr


def test_batch_true_on_a_provider_without_batches_is_refused(tmp_path: Path) -> None:
    pipeline = write_pipeline(
        tmp_path, judges=[{"model": "ollama/llama3", "batch": True}], generators=["sim/perfect"]
    )
    assert run_cli(pipeline, tmp_path / "run") == 2
    assert not (tmp_path / "run").exists()


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    env[TEST_KEY_ENV] = TEST_KEY
    env["AGENTJUDGE_CACHE"] = str(tmp_path / "env-cache.sqlite")
    return env


def _batch_ids(store: Path) -> list[str]:
    try:
        with sqlite3.connect(store, timeout=5) as db:
            return [r[0] for r in db.execute("SELECT batch_id FROM batches WHERE batch_id LIKE 'batch_%'")]
    except sqlite3.Error:
        return []


def test_sigkill_while_batches_are_in_flight_then_resume_sends_nothing_twice(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.set_responder(_responder)
    fake_llm.hold_batches = True
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True, batch_max_requests=6)
    rundir = tmp_path / "run"
    command = [sys.executable, "-m", "agentjudge", "run", str(pipeline), "--out", str(rundir)]
    proc = subprocess.Popen(command, env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(_batch_ids(rundir / "run.sqlite")) < 3 or fake_llm.retrieves < 3:
        assert proc.poll() is None, f"run ended before it could be killed: {proc.stderr.read()!r}"  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the run never submitted its batches"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert (fake_llm.uploads, fake_llm.batches_created, len(fake_llm.requests)) == (3, 3, 0)

    fake_llm.hold_batches = False
    resumed = subprocess.run(command, env=_env(tmp_path), capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    # nothing uploaded or created again; each request answered exactly once
    assert (fake_llm.uploads, fake_llm.batches_created, len(fake_llm.requests)) == (3, 3, UNITS)
    assert len({json.dumps(r, sort_keys=True) for r in fake_llm.requests}) == UNITS
    judg = read(rundir, "judgments")
    assert judg.parse_ok.all() and judg.groupby(["record_id", "condition"]).ngroups == UNITS


def _two_stage_responder(req: dict[str, Any]) -> str:
    """The generator answers a JSON array of calls; the judge's first answer about C-101 is unreadable
    (the re-ask, a third message, gets a verdict), so the judge stage needs two batch rounds."""
    text = json.dumps(req["messages"])
    if req["model"] == "gen-model":
        customer = next(c for c in ("C-100", "C-101", "C-102", "C-103") if c in text)
        return json.dumps([{"name": "get_customer", "arguments": {"customer_id": customer}}])
    if "C-101" in text and len(req["messages"]) == 2:
        return "no idea"
    return _responder(req)


def test_batch_generator_and_reasking_judge_equal_direct(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(_two_stage_responder)

    def pipeline(folder: Path, batch: bool) -> Path:
        folder.mkdir()
        gen = fake_llm.settings(model="openai/gen-model", name="gen", native_tools=False)
        entry = gen.model_dump(exclude_defaults=True) | ({"batch": True} if batch else {})
        return write_pipeline(
            folder,
            generators=[entry],
            judges=[_judge(fake_llm, batch)],
            conditions=["with_gt"],
            reask=1,
            cache="cache.sqlite",
            **FAST_POLL,
        )

    assert run_cli(pipeline(tmp_path / "d", False), tmp_path / "direct") == 0
    direct_requests = len(fake_llm.requests)
    assert direct_requests == 8 + 8 + 2  # predictions, judge calls, two re-asks (C-101, two difficulties)
    fake_llm.reset()
    fake_llm.set_responder(_two_stage_responder)
    assert run_cli(pipeline(tmp_path / "b", True), tmp_path / "batch") == 0
    # one batch of predictions, one of judge calls, one of the two re-asks
    assert fake_llm.batches_created == 3 and len(fake_llm.requests) == direct_requests
    for name in ("predictions", "judgments"):
        d, b = read(tmp_path / "direct", name), read(tmp_path / "batch", name)
        drop = [c for c in d.columns if "cost" in c]
        pd.testing.assert_frame_equal(d.drop(columns=drop), b.drop(columns=drop))
    assert read(tmp_path / "batch", "judgments").parse_ok.all()
    # the generator has no price, direct or at a batch price: its rows' cost is unknown (null), not $0
    for run in ("direct", "batch"):
        assert read(tmp_path / run, "predictions").cost_usd.isna().all()
    # the end-of-run accounting counts each call once, although a re-asking unit ran twice (the second
    # time it read its first answer again on the way to the re-ask)
    rows = {}
    for run in ("direct", "batch"):
        meta = json.loads((tmp_path / run / "meta.json").read_text())["last_invocation"]["per_model"]
        rows[run] = {r["model"]: r for r in meta}
    assert rows["direct"]["judge"]["calls"] == rows["batch"]["judge"]["calls"] == 8 + 2
    assert rows["direct"]["gen"]["calls"] == rows["batch"]["gen"]["calls"] == 8
    assert rows["direct"]["judge"]["tokens"] == rows["batch"]["judge"]["tokens"] > 0
    assert rows["batch"]["judge"]["cost_usd"] == pytest.approx(rows["direct"]["judge"]["cost_usd"] / 2)
    # and each unit's stored usage is what its direct unit's was, at the batch price
    usage = {}
    for run in ("direct", "batch"):
        judged = RunFolder.open(tmp_path / run).units(
            ["record_id", "condition", "result"], [("stage", "==", "judge")]
        )
        usage[run] = {
            (rid, cond): json.loads(result)["usage"] for rid, cond, result in judged.itertuples(index=False)
        }
    assert usage["direct"].keys() == usage["batch"].keys() and len(usage["batch"]) == 8
    for unit, direct_usage in usage["direct"].items():
        batch_usage = usage["batch"][unit]
        assert batch_usage["prompt_tokens"] == direct_usage["prompt_tokens"] > 0
        assert batch_usage["completion_tokens"] == direct_usage["completion_tokens"]
        assert batch_usage["cost_usd"] == pytest.approx(direct_usage["cost_usd"] / 2)
        # results are stored compactly (fields at their defaults left out): no "cached" key means False
        assert batch_usage.get("cached", False) is direct_usage.get("cached", False) is False
        assert "cost_known" not in batch_usage and "cost_known" not in direct_usage  # priced: the default


def test_cost_cap_refuses_batch_requests_that_do_not_fit(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(_responder)
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True, judge_fields={"max_tokens": 100})
    rundir = tmp_path / "run"
    # worst case of one request at the batch price: > 100 completion tokens x $4e-6 = $0.0004
    assert run_cli(pipeline, rundir, max_cost=0.0003) == 1
    assert fake_llm.uploads == 0 and fake_llm.requests == []
    assert run_cli(pipeline, rundir, max_cost=5.0) == 0
    assert fake_llm.batches_created == 1 and len(fake_llm.requests) == UNITS
    spent = json.loads((rundir / "meta.json").read_text())["last_invocation"]["spent_usd"]
    judg = read(rundir, "judgments")
    assert spent > 0 and judg.parse_ok.all()


def test_dry_run_expects_the_batch_price(
    tmp_path: Path, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = _pipeline(
        tmp_path / "p",
        fake_llm,
        batch=True,
        judge_fields={"input_cost_per_token": 2e-3, "output_cost_per_token": 8e-3, "max_tokens": 100},
    )
    assert run_cli(pipeline, tmp_path / "run", dry_run=True) == 0
    out = capsys.readouterr().out
    listed = float(out.split("calls; ~$")[1].split(" at list price")[0].replace(",", ""))
    expected = float(out.split("expected: ~$")[1].split(" with batch")[0].replace(",", ""))
    assert listed > 1 and expected == pytest.approx(listed / 2, abs=0.01)  # OpenAI: half of list
    assert not (tmp_path / "run").exists() and fake_llm.requests == []


def test_a_batch_created_just_before_a_crash_is_adopted_not_resubmitted(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    from agentjudge.models.batch import CURRENT_UNIT, BatchAPI, BatchInfo, request_line
    from agentjudge.models.litellm_import import litellm_module as _litellm
    from agentjudge.runner.batches import BatchBroker

    _litellm()  # imported outside the event loop, as the runner does
    fake_llm.set_responder(lambda req: "hello back")
    settings = fake_llm.settings(name="judge", batch=True)

    class DiesAfterCreate(BatchAPI):
        async def create(self, input_file_id: str, metadata: dict[str, str]) -> BatchInfo:
            await super().create(input_file_id, metadata)
            raise KeyboardInterrupt  # the process ends before the batch id reaches the store

    store = tmp_path / "run.sqlite"
    broker = BatchBroker(store, {"judge": settings}, poll_s=0.01, poll_max_s=0.02, api=DiesAfterCreate)
    CURRENT_UNIT.set("unit-1")
    line = request_line("key-1", {"model": settings.model, "messages": [{"role": "user", "content": "hi"}]})
    broker.defer("key-1", settings, line)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(broker.settle())
    broker.close()
    assert (fake_llm.uploads, fake_llm.batches_created, len(fake_llm.requests)) == (1, 1, 0)

    broker = BatchBroker(store, {"judge": settings}, poll_s=0.01, poll_max_s=0.02)
    assert asyncio.run(broker.settle()) == 1
    answer = broker.answer("key-1")
    broker.close()
    assert (fake_llm.uploads, fake_llm.batches_created, len(fake_llm.requests)) == (1, 1, 1)
    assert answer is not None and answer.state == "done"
    assert answer.body is not None and answer.body["choices"][0]["message"]["content"] == "hello back"
    assert fake_llm.requests[0]["model"] == "test-model"  # the provider's own name, prefix removed


class _Refused(Exception):
    """An error the provider's SDK would raise for an HTTP status (``classify`` reads ``status_code``)."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status_code = status


def _one_deferred(store: Path, settings: Any, api: Any = None, **kw: Any) -> Any:
    from agentjudge.models.batch import CURRENT_UNIT, request_line
    from agentjudge.runner.batches import BatchBroker

    said: list[str] = []
    extra = {} if api is None else {"api": api}
    broker = BatchBroker(
        store, {"judge": settings}, poll_s=0.001, poll_max_s=0.002, say=said.append, **kw, **extra
    )
    CURRENT_UNIT.set("unit-1")
    line = request_line("key-1", {"model": settings.model, "messages": [{"role": "user", "content": "hi"}]})
    broker.defer("key-1", settings, line)
    return broker, said


def test_a_batch_the_provider_forgot_is_given_up_and_a_rerun_asks_again(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    # review finding 2: retrieve answering 404 (batch deleted, another key or project) used to be polled
    # forever, by this invocation and every later one
    from agentjudge.models.litellm_import import litellm_module as _litellm

    _litellm()
    fake_llm.set_responder(lambda req: "hello back")
    settings = fake_llm.settings(name="judge", batch=True)
    store = tmp_path / "run.sqlite"
    broker, said = _one_deferred(store, settings)

    async def forgotten() -> int:
        fake_llm.hold_batches = True
        await broker._submit_queued()
        # the provider no longer knows the batch: GET /batches/batch_fake_0 is 404 (kept under another
        # name so that the fake server's next batch id is new, as a real provider's would be)
        fake_llm.batches["deleted"] = fake_llm.batches.pop("batch_fake_0")
        return await asyncio.wait_for(broker.settle(), 10.0)

    assert asyncio.run(forgotten()) == 1
    answer = broker.answer("key-1")
    assert answer is not None and answer.state == "failed" and answer.kind == "batch_given_up"
    assert "batch batch_fake_0: could not poll (not_found, once): given up" in answer.error
    assert sum("trying again" in s for s in said) == 0
    db = sqlite3.connect(store)
    assert db.execute("SELECT collected, note LIKE '%given up%' FROM batches").fetchall() == [(1, 1)]
    db.close()
    broker.close()

    # a re-run does not poll the given-up batch; it asks the failed request again, in a new batch
    fake_llm.hold_batches = False
    broker, said = _one_deferred(store, settings)
    assert asyncio.run(asyncio.wait_for(broker.settle(), 10.0)) == 1
    answer = broker.answer("key-1")
    broker.close()
    assert answer is not None and answer.state == "done" and fake_llm.batches_created == 2


def test_a_batch_that_cannot_be_polled_or_read_is_given_up_after_some_rounds(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    from agentjudge.models.batch import BatchAPI
    from agentjudge.models.litellm_import import litellm_module as _litellm
    from agentjudge.runner.batches import MAX_POLL_FAILURES

    _litellm()
    fake_llm.set_responder(lambda req: "hello back")
    settings = fake_llm.settings(name="judge", batch=True)
    retrieves = []

    class Unreachable(BatchAPI):  # the batch was created; every poll then finds no route to the provider
        async def retrieve(self, batch_id: str) -> Any:
            retrieves.append(batch_id)
            raise ConnectionRefusedError("connection refused")

    broker, said = _one_deferred(tmp_path / "a.sqlite", settings, api=Unreachable)
    assert asyncio.run(asyncio.wait_for(broker.settle(), 10.0)) == 1
    answer = broker.answer("key-1")
    broker.close()
    assert len(retrieves) == MAX_POLL_FAILURES
    assert answer is not None and answer.kind == "batch_given_up"
    assert f"could not poll (connection, {MAX_POLL_FAILURES} time(s) in a row): given up" in answer.error
    assert "a re-run polls the batch again and reads their answers" in answer.error

    # the provider ran (and billed) that batch all the same: the re-run, with the network back, polls it and
    # takes its answer instead of sending the request again (before: the batch was marked read, the request
    # sent and paid for in a second batch)
    broker, said = _one_deferred(tmp_path / "a.sqlite", settings)
    assert asyncio.run(asyncio.wait_for(broker.settle(), 10.0)) == 1
    answer = broker.answer("key-1")
    broker.close()
    assert answer is not None and answer.state == "done" and answer.submissions == 1
    assert fake_llm.batches_created == 1 and fake_llm.uploads == 1 and len(fake_llm.requests) == 1

    class Expired(BatchAPI):  # the batch completed, but its output file is gone
        async def content(self, file_id: str) -> str:
            raise _Refused(404, "No such File object: file-out")

    broker, said = _one_deferred(tmp_path / "b.sqlite", settings, api=Expired)
    assert asyncio.run(asyncio.wait_for(broker.settle(), 10.0)) == 1
    answer = broker.answer("key-1")
    broker.close()
    assert answer is not None and answer.kind == "batch_given_up"
    assert "could not read its results (not_found, once): given up" in answer.error


def test_a_run_whose_batch_the_provider_forgot_ends_with_each_unit_failed_and_a_rerun_finishes(
    tmp_path: Path, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    import threading

    fake_llm.set_responder(_responder)
    fake_llm.hold_batches = True
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True)
    rundir = tmp_path / "run"

    def forget_the_first_batch() -> None:  # as soon as it exists (a deleted batch, another project...)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with fake_llm._lock:
                if "batch_fake_0" in fake_llm.batches:
                    fake_llm.batches["deleted"] = fake_llm.batches.pop("batch_fake_0")
                    return
            time.sleep(0.005)

    forgetter = threading.Thread(target=forget_the_first_batch)
    forgetter.start()
    assert run_cli(pipeline, rundir) == 1  # returns: every unit failed, none polled forever
    forgetter.join()
    judg = read(rundir, "judgments")
    assert len(judg) > 0 and judg.verdict.isna().all()
    given_up = (
        "batch_given_up after 1 attempt(s): batch batch_fake_0: could not poll (not_found, once): given up"
    )
    assert judg.judge_error.str.startswith(given_up).all()
    assert "batch was given up" in capsys.readouterr().out  # its own reason at the end, not "bad request"

    fake_llm.hold_batches = False  # a re-run sends the requests again, in a new batch, and finishes
    assert run_cli(pipeline, rundir) == 0
    assert read(rundir, "judgments").judge_error.isna().all()
    assert fake_llm.batches_created == 2 and len(fake_llm.requests) == UNITS


def test_lines_an_older_version_queued_with_extra_headers_are_resent_without_them(
    tmp_path: Path,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # review finding: a queued line is resent on resume as it is stored, and an older version's lines could
    # carry ``extra_headers`` (an HTTP header dict, maybe a credential) in their body
    from agentjudge.runner.batches import BatchBroker

    secret = "Bearer old-queue-4b9e-credential"
    fake_llm.set_responder(_responder)
    assert run_cli(_pipeline(tmp_path / "d", fake_llm, batch=False), tmp_path / "direct") == 0
    direct_requests = sorted(json.dumps(r, sort_keys=True) for r in fake_llm.requests)
    fake_llm.reset()
    fake_llm.set_responder(_responder)

    async def ctrl_c(self: BatchBroker) -> int:  # Ctrl-C once the stage has queued its requests
        raise KeyboardInterrupt

    pipeline = _pipeline(tmp_path / "b", fake_llm, batch=True)
    rundir = tmp_path / "batch"
    with monkeypatch.context() as patch:
        patch.setattr(BatchBroker, "settle", ctrl_c)
        assert run_cli(pipeline, rundir) == 130
    assert fake_llm.uploads == 0
    # the queued lines as an older version left them: the headers inside each line's body
    db = sqlite3.connect(rundir / "run.sqlite", isolation_level=None)
    planted = {}
    for key, text in db.execute("SELECT cache_key, line FROM batch_requests WHERE state = 'queued'"):
        line = json.loads(text)
        line["body"]["extra_headers"] = {"Authorization": secret, "X-Title": "aj"}
        planted[key] = line
    for key, line in planted.items():
        db.execute(
            "UPDATE batch_requests SET line = ? WHERE cache_key = ?", (json.dumps(line, sort_keys=True), key)
        )
    db.close()
    assert len(planted) == UNITS

    assert run_cli(pipeline, rundir) == 0  # resumes: sends the stored lines
    sent = [json.loads(ln) for data in fake_llm.files.values() for ln in data.splitlines()]
    sent = [line for line in sent if "method" in line]  # the input file's lines (not the answers)
    assert sorted(line["custom_id"] for line in sent) == sorted(planted)
    assert not any("extra_headers" in line["body"] for line in sent)
    for line in sent:  # nothing else of a line changed
        old = planted[line["custom_id"]]
        assert line == old | {"body": {k: v for k, v in old["body"].items() if k != "extra_headers"}}
    assert sorted(json.dumps(r, sort_keys=True) for r in fake_llm.requests) == direct_requests
    # each answer reached its unit: the judgments are those of the direct run
    judg = read(rundir, "judgments")
    assert judg.parse_ok.all() and set(judg.verdict) == {0.0, 0.5, 1.0}
    pd.testing.assert_frame_equal(_stable(read(tmp_path / "direct", "judgments")), _stable(judg))
    # the header's value is echoed nowhere: not sent, no longer in the stored lines
    assert not any(secret.encode() in data for data in fake_llm.files.values())
    db = sqlite3.connect(rundir / "run.sqlite")
    lines = [text for (text,) in db.execute("SELECT line FROM batch_requests")]
    db.close()
    assert len(lines) == UNITS and not any("extra_headers" in text or secret in text for text in lines)


@pytest.fixture
def batch_judge(fake_llm: FakeLLM) -> Any:
    """A batch-mode judge on the fake server, which answers "hello back" (litellm loaded first)."""
    from agentjudge.models.litellm_import import litellm_module as _litellm

    _litellm()
    fake_llm.set_responder(lambda req: "hello back")
    return fake_llm.settings(name="judge", batch=True)


def _settle_once(store: Path, settings: Any, api: Any = None) -> Any:
    """One invocation's broker for the one deferred request: settled, its answer read, closed."""
    broker, _ = _one_deferred(store, settings, api=api)
    asyncio.run(asyncio.wait_for(broker.settle(), 20.0))
    answer = broker.answer("key-1")
    broker.close()
    assert answer is not None
    return answer


def test_a_batch_whose_output_cannot_be_read_is_sent_again_and_one_never_reachable_after_a_few_runs(
    tmp_path: Path, fake_llm: FakeLLM, batch_judge: Any
) -> None:
    # review finding (rev17): a batch given up for this invocation only was left open whatever the failure,
    # so one whose output the parser cannot read (the same every time) was polled by every re-run, its units
    # failed each time and its request never sent again
    from agentjudge.models.batch import BatchAPI
    from agentjudge.runner.batches import MAX_LEFT_OPEN, MAX_POLL_FAILURES

    settings = batch_judge

    class Garbled(BatchAPI):  # a line of another shape in the output file: classified "other"
        async def content(self, file_id: str) -> str:
            return '{"custom_id": "key-1", "response": "oops"}\n'

    answer = _settle_once(tmp_path / "a.sqlite", settings, api=Garbled)
    assert answer.kind == "batch_given_up"
    assert f"(other, {MAX_POLL_FAILURES} time(s) in a row): given up, " in answer.error
    answer = _settle_once(tmp_path / "a.sqlite", settings)  # the re-run asks it again, and is answered
    assert answer.state == "done" and fake_llm.batches_created == 2

    class Unreachable(BatchAPI):  # every poll of the batch finds no route to the provider
        async def retrieve(self, batch_id: str) -> Any:
            raise ConnectionRefusedError("connection refused")

    errors = []
    for _ in range(MAX_LEFT_OPEN):
        answer = _settle_once(tmp_path / "b.sqlite", settings, api=Unreachable)
        assert answer.kind == "batch_given_up"
        errors.append(answer.error)
    assert all("given up for this run" in e for e in errors[:-1])  # polled again by the next invocation
    assert f"in {MAX_LEFT_OPEN} invocations): given up, " in errors[-1]  # then for good
    assert fake_llm.batches_created == 3  # one batch for those invocations
    answer = _settle_once(tmp_path / "b.sqlite", settings)
    assert answer.state == "done" and fake_llm.batches_created == 4


def test_a_queued_request_failed_by_fail_open_is_not_sent_until_the_next_invocation(
    tmp_path: Path, fake_llm: FakeLLM, batch_judge: Any
) -> None:
    # review finding (rev17): ``fail_open`` failed a still-queued request for this invocation only, but a
    # later ``settle`` of the same invocation (the next stage's) sent it: nobody read that answer in this run,
    # and the next run took it as already delivered, so that send was never counted among the requests
    settings = batch_judge
    broker, _ = _one_deferred(tmp_path / "run.sqlite", settings)
    assert broker.fail_open() == 1
    asyncio.run(asyncio.wait_for(broker.settle(), 10.0))
    answer = broker.answer("key-1")
    broker.close()
    assert answer is not None and answer.state == "failed" and answer.kind == "batch_stuck"
    assert fake_llm.batches_created == 0 and fake_llm.uploads == 0  # not sent by this invocation
    answer = _settle_once(tmp_path / "run.sqlite", settings)  # the re-run sends it, and reads it fresh
    assert answer.state == "done" and answer.fresh and answer.submissions == 1
    assert fake_llm.batches_created == 1


def test_a_batch_answer_without_usage_counts_its_worst_case_as_spent(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """Issue 42 (money paths): a batch answer that reports no usage may still have been billed in full, so
    under ``--max-cost`` it is settled at its reserved worst case, never at $0: each of the 16 requests
    holds at least 100 completion tokens x $4e-6 (the batch price of $8e-6) = $0.0004."""
    from fakeserver import Reply

    def no_usage(req: dict[str, Any]) -> Reply:
        envelope = {
            "id": "chatcmpl-no-usage",
            "object": "chat.completion",
            "created": 0,
            "model": req.get("model", "test-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": _responder(req)},
                    "finish_reason": "stop",
                }
            ],
        }
        return Reply(body=json.dumps(envelope))

    fake_llm.set_responder(no_usage)
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True, judge_fields={"max_tokens": 100})
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir, max_cost=5.0) == 0
    assert fake_llm.batches_created == 1 and len(fake_llm.requests) == UNITS
    last = json.loads((rundir / "meta.json").read_text())["last_invocation"]
    assert last["spent_usd"] == 0.0  # no usage: no known cost to add up
    assert last["cost_cap_counted_usd"] >= UNITS * 100 * 4e-6  # but the cap counted every worst case
    assert read(rundir, "judgments").parse_ok.all()
