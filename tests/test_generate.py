"""`generate` / `validate`: exact counts, regeneration accounting, determinism, nothing half-written,
exit codes 0/1/2 through the real CLI, and the shipped data/mini reproduces byte for byte."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from test_gates import linear_record
from typer.testing import CliRunner

from agentjudge.commands import app
from agentjudge.dataset import gates, generate, scenario, world
from agentjudge.rundir.records import read_records, write_records
from agentjudge.types import TOPOLOGIES, Record, ToolCall

DATA = Path(__file__).resolve().parents[1] / "data"
FAKE_DOMAINS = [f"dom{i:02d}" for i in range(15)]
runner = CliRunner()


def test_full_plan_has_the_published_counts_spread_over_domains() -> None:
    jobs = generate.plan_jobs("full", FAKE_DOMAINS)
    assert len(jobs) == 3808
    assert Counter(j.topology for j in jobs) == Counter(
        {
            "fan_in": 1049,
            "optional_enrichment": 823,
            "linear": 812,
            "diamond": 501,
            "fan_out": 399,
            "loop_like": 224,
        }
    )
    per_domain = Counter(j.domain for j in jobs)
    assert set(per_domain.values()) <= {253, 254}
    for topology in TOPOLOGIES:  # each topology spread evenly too (±1 per domain)
        counts = Counter(j.domain for j in jobs if j.topology == topology)
        assert max(counts.values()) - min(counts.values()) <= 1 and len(counts) == 15
    assert len({(j.domain, j.index) for j in jobs}) == 3808  # unique ids


def test_mini_plan() -> None:
    jobs = generate.plan_jobs("mini", FAKE_DOMAINS)
    assert Counter(j.topology for j in jobs) == Counter({t: 10 for t in TOPOLOGIES})
    assert set(Counter(j.domain for j in jobs).values()) == {4}


def _fake_builder(fail: set[int]):
    """The fixture scenario at the requested coordinates; corrupt (enum violation) for seeds in ``fail``."""

    def build_scenario(domain: str, topology: str, seed: int, index: int):
        record, plan = linear_record()
        record = record.model_copy(
            update={"id": f"{domain}-{index:04d}", "domain": domain, "topology": topology, "seed": seed}
        )
        if seed in fail:
            gt = list(record.gt)
            args = {**gt[2].call.arguments, "priority": "urgent"}
            gt[2] = gt[2].model_copy(update={"call": ToolCall(name=gt[2].call.name, arguments=args)})
            record = record.model_copy(update={"gt": gt})
        return record, plan

    return build_scenario


@pytest.fixture
def fake_world(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(world, "list_domains", lambda: FAKE_DOMAINS)
    monkeypatch.setattr(world, "make_environment", lambda record: None)
    monkeypatch.setattr(
        gates, "_topology_shape", lambda record: None
    )  # the fixture is linear whatever its label


def test_generate_counts_regenerations_and_is_deterministic(
    fake_world: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    jobs = generate.plan_jobs("mini", FAKE_DOMAINS)
    first_seeds = [generate.sub_seed(5, j, 0) for j in jobs]
    fail = {s for s in first_seeds[::7]}  # every 7th scenario fails on its first attempt
    monkeypatch.setattr(scenario, "build_scenario", _fake_builder(fail))
    manifest = generate.generate(tmp_path / "a", "mini", 5)
    assert manifest["n_records"] == 60 and manifest["counts"]["topology"] == {t: 10 for t in TOPOLOGIES}
    assert manifest["gates"]["regenerations"] == len(fail)
    assert manifest["gates"]["regenerations_by_reason"]["arg_schema"] == len(fail)
    records = read_records(tmp_path / "a" / "records.jsonl")
    assert all(r.validation and r.validation.passed for r in records)
    assert sum(r.validation.regenerations for r in records if r.validation) == len(fail)
    assert all(r.gt[2].call.arguments["priority"] == "high" for r in records)  # no failing record shipped
    generate.generate(tmp_path / "b", "mini", 5)
    for name in ("records.jsonl", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    import hashlib

    text = (tmp_path / "a" / "records.jsonl").read_bytes()
    assert manifest["sha256"] == hashlib.sha256(text).hexdigest()


def test_generate_writes_nothing_when_a_scenario_never_passes(
    fake_world: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    class Always(set):
        def __contains__(self, item: object) -> bool:
            return True

    monkeypatch.setattr(scenario, "build_scenario", _fake_builder(Always()))
    monkeypatch.setattr(generate, "MAX_ATTEMPTS", 3)
    out = tmp_path / "out"
    result = runner.invoke(app, ["generate", "--out", str(out), "--size", "mini"])
    assert result.exit_code == 1, result.output
    assert "nothing written" in result.output and "arg_schema" in result.output
    assert not out.exists() or not any(out.iterdir())


def test_generate_bad_size_is_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["generate", "--out", str(tmp_path / "x"), "--size", "huge"])
    assert result.exit_code == 2 and "mini" in result.output


def _records_file(tmp_path: Path, records: list[Record]) -> Path:
    path = tmp_path / "records.jsonl"
    write_records(path, records)
    return path


def test_validate_exit_codes(tmp_path: Path) -> None:
    from test_gates import rendered_linear_record

    good = rendered_linear_record(0)
    result = runner.invoke(app, ["validate", str(_records_file(tmp_path, [good]))])
    assert result.exit_code == 0, result.output
    assert "1 base scenario (3 records over 3 difficulties); 1 pass, 0 fail" in result.output

    medium = good.queries["medium"] + " Use schedule_callback."
    bad = good.model_copy(update={"id": "fixture-0002", "queries": {**good.queries, "medium": medium}})
    result = runner.invoke(app, ["validate", str(_records_file(tmp_path, [good, bad]))])
    assert result.exit_code == 1
    assert "tool_name_in_query" in result.output and "fixture-0002" in result.output

    path = tmp_path / "broken.jsonl"
    line = json.loads(path.with_name("records.jsonl").read_text().splitlines()[0])
    line["available_tools"] = "none"
    path.write_text(json.dumps(line) + "\n")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert (
        "line 1" in result.output and "available_tools" in result.output and "Traceback" not in result.output
    )
    result = runner.invoke(app, ["validate", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2 and "cannot read" in result.output


def test_shipped_mini_regenerates_byte_for_byte(tmp_path: Path) -> None:
    result = runner.invoke(app, ["generate", "--out", str(tmp_path), "--size", "mini", "--seed", "0"])
    assert result.exit_code == 0, result.output
    for name in ("records.jsonl", "manifest.json"):
        assert (tmp_path / name).read_bytes() == (DATA / "mini" / name).read_bytes(), name


def test_shipped_mini_validates_and_full_manifest_is_consistent() -> None:
    result = runner.invoke(app, ["validate", str(DATA / "mini" / "records.jsonl")])
    assert result.exit_code == 0, result.output
    full = json.loads((DATA / "full" / "manifest.json").read_text())
    assert full["n_records"] == 3808 and full["size"] == "full" and full["seed"] == 0
    assert full["counts"]["topology"] == generate.FULL_COUNTS
    assert len(full["sha256"]) == 64 and full["gates"]["records_passed"] == 3808


@pytest.mark.slow
def test_full_split_regenerates_to_the_shipped_manifest(tmp_path: Path) -> None:
    result = runner.invoke(app, ["generate", "--out", str(tmp_path), "--size", "full", "--seed", "0"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "manifest.json").read_bytes() == (DATA / "full" / "manifest.json").read_bytes()
    assert runner.invoke(app, ["validate", str(tmp_path / "records.jsonl")]).exit_code == 0
    _the_full_split_reads_as_people_write(tmp_path / "records.jsonl")


def _the_full_split_reads_as_people_write(path: Path) -> None:
    """No sentence of five or more words in more than 1 % of the hard queries (a repeated sentence is a
    surface feature a judge could learn); asides at rates within 10 points in medium and hard (an aside
    must not tell the tier); no GT step that breaks its domain's rules."""
    import re
    from collections import Counter

    from agentjudge.dataset import rules
    from agentjudge.dataset.domains import COMMON_ASIDES, load_domain
    from agentjudge.rundir.records import read_records

    records = read_records(path)
    n = len(records)
    split = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(])")
    long = Counter(s for r in records for s in set(split.split(r.queries["hard"])) if len(s.split()) >= 5)
    assert long.most_common(1)[0][1] <= n / 100, long.most_common(3)
    rate = {}
    for d in ("medium", "hard"):
        seen = 0
        for r in records:
            asides = {c.text for c in load_domain(r.domain).asides} | set(COMMON_ASIDES)
            seen += any(s in asides for s in split.split(r.queries[d]))
        rate[d] = seen / n
    assert abs(rate["medium"] - rate["hard"]) <= 0.10 and min(rate.values()) > 0.2, rate
    assert [v for r in records[::7] for v in rules.violations(r)] == []


async def test_llm_rewrites_are_gated_and_fall_back_with_failed_status(fake_llm) -> None:
    from fakeserver import prompt_text

    from agentjudge.dataset.llm_synth import MAX_TRIES, rewrite_record
    from agentjudge.dataset.realiser import render_queries
    from agentjudge.models.client import ModelClient

    record, plan = linear_record()
    record = record.model_copy(
        update={"queries": render_queries(plan, 0), "rewrite_status": {"medium": "OK", "hard": "OK"}}
    )
    good_medium = (
        "Could you get a high priority callback set up on March 19, 2026 for the open order of the "
        "customer whose email is dana.kim@example.com? Three attempts, please."
    )
    bad_hard = "Use schedule_callback for her open order."  # a tool name and every value lost

    def respond(request: dict) -> str:
        return good_medium if "Paraphrase" in prompt_text(request) else bad_hard

    fake_llm.set_responder(respond)
    client = ModelClient(cache=None, backoff_base_s=0.001)
    out, failures = await rewrite_record(client, fake_llm.settings(), record, plan)
    assert out.queries["medium"] == good_medium and out.rewrite_status["medium"] == "OK"
    assert out.queries["hard"] == record.queries["hard"] and out.rewrite_status["hard"] == "FAILED"
    assert failures["tool_name_in_query"] == MAX_TRIES and failures["insufficient"] == MAX_TRIES
    assert out.validation is not None and out.validation.passed
    assert len(fake_llm.requests) == 1 + MAX_TRIES
    assert "dana.kim@example.com" in prompt_text(fake_llm.requests[0])  # the values to keep are in the prompt


def test_output_does_not_depend_on_the_process_hash_seed(tmp_path: Path) -> None:
    """Set iteration order changes with PYTHONHASHSEED; two processes with different seeds must agree."""
    import os
    import subprocess
    import sys

    digests = []
    for hash_seed in ("1", "2"):
        out = tmp_path / hash_seed
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run(
            [sys.executable, "-m", "agentjudge", "generate", "--out", str(out), "--size", "mini"],
            check=True,
            env=env,
            capture_output=True,
        )
        digests.append((out / "records.jsonl").read_bytes() + (out / "manifest.json").read_bytes())
    assert digests[0] == digests[1]


def test_generate_with_llm_rewrites_through_the_cli(
    fake_world: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_llm
) -> None:
    """--llm end to end: every accepted rewrite replaces the deterministic query and the manifest says so."""
    rewrite = (
        "Could you get a high priority callback set up on March 19, 2026 for the open order of the customer "
        "whose email is dana.kim@example.com? Three attempts, please."
    )
    fake_llm.set_responder(lambda request: rewrite)
    monkeypatch.setattr(scenario, "build_scenario", _fake_builder(set()))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-for-the-fake-server")
    out = tmp_path / "llm"
    args = ["generate", "--out", str(out), "--size", "mini", "--llm", "openai/test-model", "--api-base"]
    result = runner.invoke(app, [*args, fake_llm.base_url])
    assert result.exit_code == 0, result.output
    records = read_records(out / "records.jsonl")
    assert all(r.queries["medium"] == rewrite and r.queries["hard"] == rewrite for r in records)
    assert all(r.rewrite_status == {"medium": "OK", "hard": "OK"} for r in records)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rewrites"]["llm"] == "openai/test-model"
    assert manifest["rewrites"]["failed"]["medium"] == 0 and manifest["rewrites"]["failed"]["hard"] == 0
    assert len(fake_llm.requests) == 120  # 60 records x medium + hard, each accepted first time
