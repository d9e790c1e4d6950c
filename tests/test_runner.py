"""The grid runner end to end on a hand-written dataset: stages, export columns, dry run, LLM judges."""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from fakeserver import FakeLLM

from agentjudge import api
from agentjudge.commands.run import run_cli
from agentjudge.rundir.records import write_records
from agentjudge.runner.work import swap_partners
from agentjudge.types import GTStep, JudgeRequest, JudgeResult, Record, ToolCall, ToolSchema, Usage

PREDICTION_COLUMNS = [
    "record_id",
    "base_id",
    "difficulty",
    "generator",
    "trial",
    "calls_json",
    "raw_output",
    "error",
    "simulated",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cached",
    "generation",
    "turns",
    "stop_reason",
    "trajectory_json",
    "cached_prompt_tokens",
]
SCORE_COLUMNS = [
    "record_id",
    "base_id",
    "domain",
    "topology",
    "difficulty",
    "generator",
    "trial",
    "scoring_mode",
    "p_tool",
    "p_param",
    "p_seq",
    "p_cov",
    "p_value",
    "p_seq_dag",
    "state_match",
    "source",
    "writes_done",
]
JUDGMENT_COLUMNS = [
    "record_id",
    "base_id",
    "domain",
    "topology",
    "difficulty",
    "generator",
    "generator_trial",
    "judge",
    "condition",
    "prompt_format",
    "cot",
    "default_mode",
    "temperature",
    "trial",
    "metric",
    "reference",
    "verdict",
    "parse_ok",
    "scoring_mode",
    "rationale",
    "judge_error",
    "source",
    "structured_output",
]


# ----------------------------------------------------------------------------------------- fixtures
def _tool(name: str, params: dict[str, str], required: list[str]) -> ToolSchema:
    return ToolSchema(
        name=name,
        description=f"{name.replace('_', ' ')}.",
        parameters={
            "type": "object",
            "properties": {k: {"type": t, "description": k} for k, t in params.items()},
            "required": required,
        },
    )


TOOLS = [
    _tool("get_customer", {"customer_id": "string"}, ["customer_id"]),
    _tool("list_orders", {"customer_id": "string", "status": "string"}, ["customer_id"]),
    _tool("list_invoices", {"customer_id": "string"}, ["customer_id"]),
    _tool("send_email", {"to": "string", "body": "string"}, ["to", "body"]),
    _tool("get_weather", {"city": "string"}, ["city"]),
]


def make_record(index: int, topology: str) -> Record:
    """A small record of our own (domain "testing": no executable environment, state_match None)."""
    cid = f"C-{100 + index}"
    first = GTStep(
        call=ToolCall(name="get_customer", arguments={"customer_id": cid}),
        output={"email": f"c{index}@example.com"},
        description="look the customer up",
    )
    if topology == "linear":
        gt = [
            first,
            GTStep(
                call=ToolCall(name="list_orders", arguments={"customer_id": cid, "status": "open"}),
                output=[{"id": "O-1", "email": f"c{index}@example.com"}],
                depends_on=[0],
                description="open orders",
            ),
            GTStep(
                call=ToolCall(name="send_email", arguments={"to": f"c{index}@example.com", "body": "O-1"}),
                output={"sent": True},
                depends_on=[1],  # a single chain: Gate 1's linear shape
                description="email the list",
            ),
        ]
        query = f"Email customer {cid} the list of their open orders."
    else:
        gt = [
            first,
            GTStep(
                call=ToolCall(name="list_orders", arguments={"customer_id": cid}),
                output=[],
                depends_on=[0],
                description="orders",
            ),
            GTStep(
                call=ToolCall(name="list_invoices", arguments={"customer_id": cid}),
                output=[],
                depends_on=[0],
                description="invoices",
            ),
        ]
        query = f"Show me customer {cid} with all their orders and invoices."
    return Record(
        id=f"test-{index:04d}",
        domain="testing",
        scenario="a hand-written test scenario",
        topology=topology,  # type: ignore[arg-type]
        queries={
            "easy": query,
            "medium": query + " Thanks.",
            "hard": "Customer " + cid + ": " + query.lower(),
        },
        system_prompt="You are a support agent. Use the tools.",
        tools=TOOLS,
        gt=gt,
    )


def make_records() -> list[Record]:
    return [make_record(i, "linear" if i % 2 == 0 else "fan_out") for i in range(4)]


def write_dataset(folder: Path) -> Path:
    path = folder / "records.jsonl"
    write_records(path, make_records())
    return path


def write_pipeline(folder: Path, **fields: Any) -> Path:
    """A pipeline next to a fresh dataset; ``fields`` override the small default grid."""
    write_dataset(folder)
    data = {
        "name": "test-grid",
        "dataset": "records.jsonl",
        "difficulties": ["easy", "hard"],
        "generators": ["sim/weak", "sim/perfect"],
        "judges": ["baseline/always-1", "baseline/ceiling", "baseline/rule"],
        "conditions": ["with_gt", "without_gt", "swapped_gt"],
        "scoring": "both",
        "concurrency": 4,
        "cache": "cache.sqlite",
        **fields,
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def read(rundir: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(rundir / f"{name}.parquet")


# ---------------------------------------------------------------------------------------- tests
def test_swap_partner_is_next_record_of_same_topology() -> None:
    records = make_records()
    partners = swap_partners(records)
    # linear: test-0000, test-0002; fan_out: test-0001, test-0003 (sorted, wrapping)
    assert partners == {
        "test-0000": "test-0002",
        "test-0002": "test-0000",
        "test-0001": "test-0003",
        "test-0003": "test-0001",
    }
    by_id = {r.id: r for r in records}
    assert all(by_id[a].topology == by_id[b].topology and a != b for a, b in partners.items())


def test_small_grid_end_to_end(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path)
    rundir = tmp_path / "run"
    assert api.run(pipeline, rundir).status == "complete"

    preds = read(rundir, "predictions")
    assert list(preds.columns) == PREDICTION_COLUMNS
    assert len(preds) == 2 * 4 * 2  # generators x records x difficulties
    assert preds["error"].isna().all() and preds["simulated"].all()
    perfect = preds[preds.generator == "sim/perfect"]
    for row in perfect.itertuples():
        record = {r.id: r for r in make_records()}[row.base_id]
        assert json.loads(row.calls_json) == [c.model_dump() for c in record.expected_calls]

    scores = read(rundir, "scores")
    assert list(scores.columns) == SCORE_COLUMNS
    assert len(scores) == 16 * 2  # predictions x scoring modes
    assert (
        (scores[scores.generator == "sim/perfect"][["p_tool", "p_param", "p_seq", "p_cov"]] == 1.0)
        .all()
        .all()
    )

    judg = read(rundir, "judgments")
    assert list(judg.columns) == JUDGMENT_COLUMNS
    assert len(judg) == 16 * 3 * 3 * 4 * 2  # predictions x judges x conditions x metrics x modes
    assert not judg.duplicated(
        subset=[
            c
            for c in JUDGMENT_COLUMNS
            if c
            not in (
                "reference",
                "verdict",
                "parse_ok",
                "rationale",
                "judge_error",
                "domain",
                "topology",
                "base_id",
            )
        ]
    ).any()
    assert judg["judge_error"].isna().all() and judg["parse_ok"].all()
    assert judg["temperature"].map(math.isnan).all()  # null = the judge's own setting (none set)
    assert set(judg.condition) == {"with_gt", "without_gt", "swapped_gt"}
    assert (judg[judg.judge == "baseline/always-1"].verdict == 1.0).all()
    # the oracle gets the reference of each scoring mode: its verdict is the reference snapped per mode
    ceiling = judg[judg.judge == "baseline/ceiling"]
    snapped = ceiling.reference.map(lambda x: min((0.0, 0.5, 1.0), key=lambda v: (abs(v - x), -v)))
    assert (ceiling.verdict == snapped).all()
    # the reference column is the score of that prediction, metric and mode
    merged = judg.merge(
        scores,
        left_on=["record_id", "generator", "generator_trial", "scoring_mode"],
        right_on=["record_id", "generator", "trial", "scoring_mode"],
    )
    for metric in ("tool", "param", "seq", "cov"):
        sub = merged[merged.metric == metric]
        assert (sub.reference == sub[f"p_{metric}"]).all()

    meta = json.loads((rundir / "meta.json").read_text())
    assert meta["judges"]["baseline/ceiling"] == {
        "model": "baseline/ceiling",
        "tier": None,
        "kind": "baseline",
        "simulated": True,
    }
    assert meta["generators"]["sim/weak"]["kind"] == "sim"
    assert len(meta["config_hash"]) == 64 and meta["seed"] == 0 and meta["package_version"]
    assert meta["units"]["judge"] == {"planned": 16 * 9, "done": 16 * 9, "failed": 0}


def test_rerun_of_finished_grid_does_nothing_and_exports_identically(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"])
    rundir = tmp_path / "run"
    assert api.run(pipeline, rundir).status == "complete"
    first, meta = read(rundir, "judgments"), (rundir / "meta.json").read_text()
    assert (
        api.run(pipeline, rundir).status == "complete"
    )  # only checks and exits (issue 15): nothing run, nothing written
    assert (rundir / "meta.json").read_text() == meta  # last_invocation: the last one that did work
    pd.testing.assert_frame_equal(first, read(rundir, "judgments"))
    (rundir / "scores.parquet").unlink()  # the full path: nothing left to run, the files rebuilt
    assert api.run(pipeline, rundir).status == "complete"
    meta_after = json.loads((rundir / "meta.json").read_text())
    assert all(row["done"] == 0 for row in meta_after["last_invocation"]["per_model"])
    pd.testing.assert_frame_equal(first, read(rundir, "judgments"))


def test_dry_run_writes_nothing_and_counts_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-never-sent")
    pipeline = write_pipeline(
        tmp_path,
        judges=[
            "baseline/rule",
            {"model": "openai/gpt-4o-mini", "name": "mini"},
            # a self-hosted model (no default host: its server's address is given)
            {"model": "hosted_vllm/no-price-known", "name": "placeholder", "api_base": fake_llm.base_url},
        ],
        prompt_variants=[{"prompt_format": "json"}, {"prompt_format": "freeform", "cot": True}],
    )
    before = sorted(p.name for p in tmp_path.iterdir())
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir, dry_run=True) == 0
    assert not rundir.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no cache, no store
    out = capsys.readouterr().out
    # 16 predictions x 3 conditions x 2 variants = 96 calls per judge; 3 x 96 + 16 predictions in total
    assert "total: 304 calls" in out
    assert "price unknown for placeholder" in out
    lines = [line for line in out.splitlines() if line.strip().startswith("│ mini")]
    assert lines and "96" in lines[0] and "unknown" not in lines[0]


def test_dry_run_of_a_finished_run_counts_nothing_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"])
    assert run_cli(pipeline, tmp_path / "run") == 0
    capsys.readouterr()
    assert run_cli(pipeline, tmp_path / "run", dry_run=True) == 0
    assert "total: 0 calls" in capsys.readouterr().out
    # --force-new starts over: its dry run counts every unit again (and writes nothing)
    stored = (tmp_path / "run" / "run.sqlite").read_bytes()
    assert run_cli(pipeline, tmp_path / "run", dry_run=True, force_new=True) == 0
    out = capsys.readouterr().out
    assert "calls a new run would make (--force-new)" in out
    assert "total: 0 calls" not in out and "total: " in out
    assert (tmp_path / "run" / "run.sqlite").read_bytes() == stored
    assert not (tmp_path / "run" / "archive").exists()


def test_failed_predictions_are_counted_not_scored_or_judged(tmp_path: Path) -> None:
    pipeline = write_pipeline(
        tmp_path,
        generators=["sim/perfect", "test_runner:make_failing_generator"],
        judges=["baseline/rule"],
        conditions=["with_gt"],
    )
    rundir = tmp_path / "run"
    assert api.run(pipeline, rundir).status == "stopped"
    preds = read(rundir, "predictions")
    failing = preds[preds.generator == "test_runner:make_failing_generator"]
    assert len(failing) == 8 and failing.error.str.contains("scripted failure").all()
    assert failing.calls_json.isna().all()
    assert set(read(rundir, "scores").generator) == {"sim/perfect"}
    assert set(read(rundir, "judgments").generator) == {"sim/perfect"}
    meta = json.loads((rundir / "meta.json").read_text())
    assert meta["units"]["predict"]["failed"] == 8


class _FailingGenerator:
    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, task: Any, trial: int) -> Any:
        raise RuntimeError("scripted failure")


def make_failing_generator(settings: Any, client: Any) -> _FailingGenerator:
    return _FailingGenerator(settings.display_name)


class _EchoJudge:
    """Records the GT it was shown, so the test can check which record's GT the swapped condition uses."""

    seen: list[tuple[str, str, str | None]] = []

    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        gt_key = request.gt[0].call.arguments["customer_id"] if request.gt else None
        _EchoJudge.seen.append((request.task.base_id, request.condition, gt_key))
        return JudgeResult(verdicts={m: 1.0 for m in ("tool", "param", "seq", "cov")}, parse_ok=True)


def make_echo_judge(settings: Any, client: Any) -> _EchoJudge:
    return _EchoJudge(settings.display_name)


def test_conditions_show_own_no_or_swapped_gt(tmp_path: Path) -> None:
    _EchoJudge.seen.clear()
    pipeline = write_pipeline(
        tmp_path, generators=["sim/perfect"], judges=["test_runner:make_echo_judge"], difficulties=["easy"]
    )
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    own = {r.id: r.gt[0].call.arguments["customer_id"] for r in make_records()}
    partners = swap_partners(make_records())
    assert len(_EchoJudge.seen) == 4 * 3
    for base, condition, shown in _EchoJudge.seen:
        expected = {"with_gt": own[base], "without_gt": None, "swapped_gt": own[partners[base]]}[condition]
        assert shown == expected


def _verdict_json(value: float) -> str:
    return json.dumps(
        {m: {"verdict": value, "justification": "because"} for m in ("tool", "param", "seq", "cov")}
        | {"overall": "ok"}
    )


def test_llm_judges_through_fake_server_count_parse_failures_and_cache(tmp_path: Path, fake_llm: Any) -> None:
    # Records whose hard query mentions customer C-101 get an unparseable answer from judge "b".
    def responder(req: dict[str, Any]) -> str:
        text = json.dumps(req["messages"])
        if req["model"] == "model-b" and "C-101" in text:
            return "I would rather not say."
        return _verdict_json(0.5 if req["model"] == "model-b" else 1.0)

    fake_llm.set_responder(responder)
    judges = [
        fake_llm.settings(model="openai/model-a", name="judge-a").model_dump(exclude_defaults=True),
        fake_llm.settings(model="openai/model-b", name="judge-b").model_dump(exclude_defaults=True),
    ]
    pipeline = write_pipeline(
        tmp_path, generators=["sim/mid"], judges=judges, conditions=["with_gt", "without_gt"]
    )
    units_per_judge = 8 * 2  # predictions x conditions
    assert api.run(pipeline, tmp_path / "run1").status == "complete"
    assert len(fake_llm.requests) == 2 * units_per_judge
    judg = read(tmp_path / "run1", "judgments")
    bad = judg[(judg.judge == "judge-b") & (judg.base_id == "test-0001")]
    assert len(bad) == 2 * 2 * 4 * 2 and (~bad.parse_ok).all() and bad.verdict.isna().all()
    assert bad.judge_error.isna().all()  # a parse failure is not a call failure
    good = judg.drop(bad.index)
    assert good.parse_ok.all()
    assert (good[good.judge == "judge-a"].verdict == 1.0).all() and (
        good[good.judge == "judge-b"].verdict == 0.5
    ).all()
    per_model = {
        r["model"]: r
        for r in json.loads((tmp_path / "run1" / "meta.json").read_text())["last_invocation"]["per_model"]
    }
    assert per_model["judge-b"]["parse_failures"] == 2 * 2  # 2 difficulties x 2 conditions
    assert per_model["judge-a"]["parse_failures"] == 0
    assert per_model["judge-a"]["calls"] == units_per_judge and per_model["judge-a"]["cache_hits"] == 0
    assert per_model["judge-a"]["tokens"] > 0

    # A second run into a fresh folder with the same cache: every judge answer comes from the cache.
    assert api.run(pipeline, tmp_path / "run2").status == "complete"
    assert len(fake_llm.requests) == 2 * units_per_judge
    per_model = {
        r["model"]: r
        for r in json.loads((tmp_path / "run2" / "meta.json").read_text())["last_invocation"]["per_model"]
    }
    for name in ("judge-a", "judge-b"):
        assert per_model[name]["calls"] == units_per_judge == per_model[name]["cache_hits"]
    pd.testing.assert_frame_equal(judg, read(tmp_path / "run2", "judgments"))


def test_reask_recovers_a_malformed_verdict_and_no_cache_calls_again(
    tmp_path: Path, fake_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first answer about customer C-101 is unparseable; the re-ask (3+ messages) gets a valid one.
    def responder(req: dict[str, Any]) -> str:
        if "C-101" in json.dumps(req["messages"]) and len(req["messages"]) == 2:
            return "no idea"
        return _verdict_json(1.0)

    fake_llm.set_responder(responder)
    judge = fake_llm.settings(name="judge").model_dump(exclude_defaults=True)
    pipeline = write_pipeline(
        tmp_path, generators=["sim/perfect"], judges=[judge], conditions=["with_gt"], reask=1
    )
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    assert len(fake_llm.requests) == 8 + 2  # 8 units, 2 of them (C-101, two difficulties) re-asked once
    judg = read(tmp_path / "run", "judgments")
    assert judg.parse_ok.all() and (judg.verdict == 1.0).all()

    # --no-cache: the cache is not read, so every call is made again.
    assert api.run(pipeline, tmp_path / "run2", no_cache=True).status == "complete"
    assert len(fake_llm.requests) == 2 * (8 + 2)

    # --judge / --api-base replace the pipeline's judges (key from the provider's usual variable).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-for-the-fake-server")
    code = run_cli(pipeline, tmp_path / "run3", judges=["openai/cli-judge"], api_base=fake_llm.base_url)
    assert code == 0
    assert fake_llm.requests[-1]["model"] == "cli-judge"
    assert set(read(tmp_path / "run3", "judgments").judge) == {"openai/cli-judge"}


class _PricedJudge:
    """Every verdict costs $0.01 (as reported by a provider); used for the cost cap."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        return JudgeResult(
            verdicts=dict.fromkeys(("tool", "param", "seq", "cov"), 1.0),
            parse_ok=True,
            usage=Usage(prompt_tokens=10, completion_tokens=5, cost_usd=0.01),
        )


def make_priced_judge(settings: Any, client: Any) -> _PricedJudge:
    return _PricedJudge(settings.display_name)


def test_cost_cap_stops_scheduling_and_a_rerun_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judge = {"model": "test_runner:make_priced_judge", "name": "priced", "concurrency": 1}
    pipeline = write_pipeline(
        tmp_path, generators=["sim/perfect"], judges=[judge], conditions=["with_gt"], concurrency=1
    )
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir, max_cost=0.05) == 1
    assert "stopped at the cost cap" in capsys.readouterr().out
    meta = json.loads((rundir / "meta.json").read_text())
    assert meta["units"]["judge"]["done"] == 5  # 5 x $0.01 reaches the cap; the other 3 are not started
    assert meta["last_invocation"]["units_not_run_at_cost_cap"] == 3
    assert meta["last_invocation"]["spent_usd"] == pytest.approx(0.05)
    assert len(read(rundir, "judgments")) == 5 * 4 * 2
    assert run_cli(pipeline, rundir) == 0  # no cap: the remaining units run, the finished ones do not
    meta = json.loads((rundir / "meta.json").read_text())
    assert meta["last_invocation"]["spent_usd"] == pytest.approx(0.03)
    assert meta["units"]["judge"]["done"] == 8


class _TimedJudge:
    """Sleeps ``delay`` per call and records when each call finished."""

    finished: dict[str, list[float]] = {}

    def __init__(self, name: str, delay: float) -> None:
        self.name, self.delay = name, delay

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        await asyncio.sleep(self.delay)
        _TimedJudge.finished.setdefault(self.name, []).append(time.monotonic())
        return JudgeResult(verdicts=dict.fromkeys(("tool", "param", "seq", "cov"), 1.0), parse_ok=True)


def make_timed_judge(settings: Any, client: Any) -> _TimedJudge:
    return _TimedJudge(settings.display_name, float(settings.extra["delay"]))


def test_a_slow_model_does_not_stall_the_others(tmp_path: Path) -> None:
    _TimedJudge.finished.clear()
    judges = [
        {"model": "test_runner:make_timed_judge", "name": "slow", "concurrency": 1, "extra": {"delay": 0.5}},
        {
            "model": "test_runner:make_timed_judge",
            "name": "fast",
            "concurrency": 1,
            "extra": {"delay": 0.001},
        },
    ]
    pipeline = write_pipeline(
        tmp_path, generators=["sim/perfect"], judges=judges, conditions=["with_gt"], concurrency=2
    )
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    slow, fast = _TimedJudge.finished["slow"], _TimedJudge.finished["fast"]
    assert len(slow) == len(fast) == 8
    # All of the fast judge's units finish while the slow judge is still on its first two.
    assert max(fast) < sorted(slow)[1]


def test_llm_generator_failures_are_retried_on_the_next_run(tmp_path: Path, fake_llm: Any) -> None:
    """Predict stage through the real client: a provider error fails the unit; the re-run retries it."""
    down = {"C-101"}

    def responder(req: dict[str, Any]) -> Any:
        text = json.dumps(req["messages"])
        customer = next(c for c in ("C-100", "C-101", "C-102", "C-103") if c in text)
        if customer in down:
            return {"status": 503, "text": "overloaded (scripted)"}  # retryable: other units go on
        return json.dumps([{"name": "get_customer", "arguments": {"customer_id": customer}}])

    fake_llm.set_responder(responder)
    gen = fake_llm.settings(name="llm-gen", native_tools=False, max_retries=0).model_dump(
        exclude_defaults=True
    )
    pipeline = write_pipeline(
        tmp_path, generators=[gen], judges=["baseline/always-1"], conditions=["with_gt"]
    )
    rundir = tmp_path / "run"
    assert api.run(pipeline, rundir).status == "stopped"
    preds = read(rundir, "predictions")
    failed = preds[preds.error.notna()]
    assert sorted(failed.base_id) == ["test-0001", "test-0001"] and failed.calls_json.isna().all()
    assert not preds.simulated.any() and (preds[preds.error.isna()].prompt_tokens > 0).all()
    assert set(read(rundir, "judgments").base_id) == {"test-0000", "test-0002", "test-0003"}
    calls_first = len(fake_llm.requests)

    down.clear()
    assert api.run(pipeline, rundir).status == "complete"
    assert len(fake_llm.requests) == calls_first + 2  # only the two failed predictions were asked again
    preds = read(rundir, "predictions")
    assert preds.error.isna().all()
    assert json.loads(preds[preds.base_id == "test-0001"].calls_json.iloc[0]) == [
        {"name": "get_customer", "arguments": {"customer_id": "C-101"}}
    ]
    assert len(read(rundir, "judgments")) == 8 * 4 * 2


def test_run_folder_says_requests_retries_and_attempts_per_failed_unit(
    tmp_path: Path, fake_llm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the loopback server: one judge unit's calls fail with 500 until its retries are spent, one
    gets a 429 then an answer; the rest answer. run_summary.json and the end-of-run text say so."""
    verdict = json.dumps({m: {"score": 1.0, "rationale": "ok"} for m in ("tool", "param", "seq", "cov")})
    fake_llm.set_responder(lambda req: verdict)
    judge = fake_llm.settings(name="judge", max_retries=2, concurrency=1).model_dump(exclude_defaults=True)
    pipeline = write_pipeline(
        tmp_path, generators=["sim/perfect"], judges=[judge], conditions=["with_gt"], difficulties=["easy"]
    )
    fake_llm.fail_next(status=500, times=3)  # the first unit: 1 request + 2 retries, all 500
    fake_llm.fail_next(status=429, times=1, retry_after=0)  # the second: one 429, then answered
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 1
    units = 4  # records x easy x with_gt
    summary = json.loads((rundir / "run_summary.json").read_text())
    mine = summary["per_model"]["judge"]["this_invocation"]
    assert mine["requests"] == 3 + 2 + (units - 2) == len(fake_llm.requests)
    assert mine["retries_by_kind"] == {"server_error": 2, "rate_limit": 1}
    assert mine["failed"] == 1 and summary["per_model"]["judge"]["failed_units"] == 1
    [failed] = summary["failed_units"]
    assert (failed["model"], failed["reason"], failed["attempts"], failed["runs"]) == (
        "judge",
        "server",
        3,
        1,
    )
    assert failed["kind"] == "server_error"  # the model client's kind, carried as a field
    with sqlite3.connect(rundir / "run.sqlite") as db:  # the store keeps both fields beside the text
        stored = db.execute("SELECT error_kind, error_attempts FROM units WHERE status = 'failed'").fetchall()
    assert stored == [("server_error", 3)]
    out = capsys.readouterr().out
    table = out.split("This run, per model")[1]  # the retries column (a cell may wrap)
    assert "rate_limit 1," in table and "server_error 2" in table
    assert "judge: " in out and "server, attempts 3, runs 1" in out

    fake_llm.fail_next(status=500, times=1)  # the re-run retries the failed unit: one 500, then answered
    assert run_cli(pipeline, rundir) == 0
    summary = json.loads((rundir / "run_summary.json").read_text())
    assert summary["failed_units"] == []
    assert summary["per_model"]["judge"]["this_invocation"]["requests"] == 2
    assert summary["per_model"]["judge"]["all_invocations"] == {
        "requests": 3 + 2 + (units - 2) + 2,
        "retries_by_kind": {"rate_limit": 1, "server_error": 3},
    }


def test_answers_without_a_known_price_are_not_shown_as_costing_nothing(
    tmp_path: Path, fake_llm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A judge litellm cannot price (a self-hosted name, no pipeline price): its cost is unknown, so the
    end-of-run table says "unknown" instead of 0.0000 and a note says how to count it; meta.json counts the
    answers. A judge with a pipeline price shows its dollars and no note."""
    verdict = json.dumps({m: {"score": 1.0, "rationale": "ok"} for m in ("tool", "param", "seq", "cov")})
    fake_llm.set_responder(lambda req: verdict)
    unpriced = fake_llm.settings(name="selfhosted", model="openai/unpriced-runner-test-model")
    priced = fake_llm.settings(
        name="priced",
        model="openai/priced-runner-test-model",
        input_cost_per_token=1e-6,
        output_cost_per_token=2e-6,
    )
    pipeline = write_pipeline(
        tmp_path,
        generators=["sim/perfect"],
        judges=[unpriced.model_dump(exclude_defaults=True), priced.model_dump(exclude_defaults=True)],
        conditions=["with_gt"],
        difficulties=["easy"],
    )
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    units = 4  # records x easy x with_gt
    rows = {
        r["model"]: r for r in json.loads((rundir / "meta.json").read_text())["last_invocation"]["per_model"]
    }
    assert (rows["selfhosted"]["unknown_cost_calls"], rows["selfhosted"]["cost_usd"]) == (units, 0.0)
    assert rows["priced"]["unknown_cost_calls"] == 0 and rows["priced"]["cost_usd"] > 0
    out = capsys.readouterr().out
    table = out.split("This run, per model")[1]
    line = {
        name: next(x for x in table.splitlines() if f" {name} " in x) for name in ("selfhosted", "priced")
    }
    assert "unknown" in line["selfhosted"] and "0.0000 │ 0.0000" not in line["selfhosted"]
    assert "unknown" not in line["priced"]
    total = next(x for x in table.splitlines() if " total " in x)
    assert f"≥ {rows['priced']['cost_usd']:.4f}" in total  # the priced part counted, the rest not
    assert f"selfhosted: {units} answer(s) had no known price" in out
    assert not any(line.startswith("priced: ") for line in out.splitlines())


def test_end_of_run_table_in_a_log_keeps_long_model_names_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Written to a file or pipe, the per-model table is as wide as its content: two judges whose names
    share a long prefix are told apart (at a fixed width rich cut both to the same ``baseline/always…``)."""
    pipeline = write_pipeline(
        tmp_path,
        generators=["sim/perfect", "sim/weak", "sim/mid", "sim/strong", "sim/frontier"],
        judges=[
            "baseline/always-0.5",
            {"model": "baseline/always-1", "name": "baseline/always-1-under-a-long-display-name-kept-whole"},
        ],
        conditions=["with_gt"],
    )
    assert run_cli(pipeline, tmp_path / "run") == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("│ baseline/always")]
    assert len(rows) == 2
    assert "│ baseline/always-0.5 " in rows[0]
    assert "│ baseline/always-1-under-a-long-display-name-kept-whole " in rows[1]
