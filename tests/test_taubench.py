"""τ-bench track on the real published trajectories in ../shared/data/tau-bench (not copied here)."""

from __future__ import annotations

import asyncio
import itertools
import json
from math import comb
from pathlib import Path

import jsonschema
import pytest
from fakeserver import FakeLLM
from typer.testing import CliRunner

from agentjudge.cli import app
from agentjudge.taubench import (
    TauBenchError,
    auc,
    episodes_table,
    infer_tool_schemas,
    judge_items,
    load_episodes,
    summarize,
    to_item,
)
from agentjudge.types import ModelSettings


def _published_trajectories() -> Path:
    """The published file beside the checkout (``../shared/data/tau-bench``), looked up in every parent
    folder so that a git worktree nested deeper than the main checkout finds it too."""
    rel = Path("shared") / "data" / "tau-bench" / "gpt-4o-airline.json"
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / rel).exists():
            return parent / rel
    return here.parents[2] / rel


DATA = _published_trajectories()
# only the tests that read the published trajectories skip without them; the rest always run
needs_data = pytest.mark.skipif(not DATA.exists(), reason=f"τ-bench trajectories not found at {DATA}")


@pytest.fixture(scope="module")
def episodes():  # type: ignore[no-untyped-def]
    return load_episodes(DATA)


@needs_data
def test_loads_all_episodes_and_items_drop_only_think(episodes) -> None:  # type: ignore[no-untyped-def]
    assert len(episodes) == 200
    assert len({e.task_id for e in episodes}) == 50
    tools = infer_tool_schemas(episodes)
    ep = episodes[3]
    item = to_item(ep, tools)
    raw = [tc.function.name for m in ep.traj for tc in (m.tool_calls or [])]
    assert [c.name for c in item.calls] == [n for n in raw if n != "think"]
    assert [s.call.name for s in item.gt] == [a.name for a in ep.info.task.actions]
    assert item.record_id == f"tau-airline-{ep.task_id:03d}:trial{ep.trial}"


@needs_data
def test_inferred_schemas_accept_every_observed_call(episodes) -> None:  # type: ignore[no-untyped-def]
    tools = {t.name: t for t in infer_tool_schemas(episodes)}
    checked = 0
    for ep in episodes:
        item = to_item(ep, list(tools.values()))
        for call in item.calls + [s.call for s in item.gt]:
            jsonschema.validate(call.arguments, tools[call.name].parameters)
            checked += 1
    assert checked > 1000


@needs_data
def test_agent_pass_hat_k_matches_brute_force(episodes) -> None:  # type: ignore[no-untyped-def]
    tools = infer_tool_schemas(episodes)
    table = episodes_table([to_item(e, tools) for e in episodes])
    summary = summarize(table, None)
    by_task: dict[int, list[bool]] = {}
    for e in episodes:
        by_task.setdefault(e.task_id, []).append(e.reward >= 1.0)
    for k in (1, 2, 3, 4):
        brute = sum(
            sum(all(s) for s in itertools.combinations(trials, k)) / comb(len(trials), k)
            for trials in by_task.values()
        ) / len(by_task)
        assert summary["agent_pass_hat_k"][k] == pytest.approx(brute)
    assert summary["agent_pass_hat_k"][1] == pytest.approx(sum(e.reward for e in episodes) / 200)


def test_auc_hand_computed() -> None:
    import numpy as np

    scores = np.array([0.9, 0.5, 0.5, 0.1])
    labels = np.array([True, True, False, False])
    # pairs (pos, neg): (0.9>0.5) (0.9>0.1) (0.5=0.5 → ½) (0.5>0.1) = 3.5 / 4
    assert auc(scores, labels) == pytest.approx(0.875)


@needs_data
def test_baseline_judges_alignment_recomputed(episodes) -> None:  # type: ignore[no-untyped-def]
    tools = infer_tool_schemas(episodes)
    items = [to_item(e, tools) for e in episodes[:40]]
    settings = [ModelSettings(model="baseline/always-1"), ModelSettings(model="baseline/ceiling")]
    table = asyncio.run(judge_items(items, settings, ["with_gt"]))
    assert len(table) == 40 * 2 * 4
    summary = summarize(episodes_table(items), table)
    got = {j["judge"]: j["alignment_with_reference"] for j in summary["judges"]}
    ones = table[table.judge == "baseline/always-1"]
    assert got["baseline/always-1"] == pytest.approx(ones["reference"].mean())  # 1 - |ref - 1| = ref
    assert got["baseline/ceiling"] > got["baseline/always-1"]


@needs_data
def test_llm_judge_through_loopback_server(episodes, fake_llm: FakeLLM) -> None:  # type: ignore[no-untyped-def]
    tools = infer_tool_schemas(episodes)
    items = [to_item(e, tools) for e in episodes[:3]]
    good = json.dumps({m: {"verdict": 0.5, "justification": "x"} for m in ("tool", "param", "seq", "cov")})
    fake_llm.queue(good)
    fake_llm.queue("I cannot grade this.")  # unparseable: must be counted, not defaulted
    fake_llm.queue(good)
    settings = fake_llm.settings(max_retries=0, concurrency=1)
    table = asyncio.run(judge_items(items, [settings], ["without_gt"]))
    assert len(fake_llm.requests) == 3
    failed = table[table.verdict.isna()]
    assert len(failed) == 4 and not failed.parse_ok.any()
    assert set(table.verdict.dropna()) == {0.5}


@needs_data
def test_bad_file_names_episode_and_field(tmp_path: Path) -> None:
    bad = json.loads(DATA.read_text())[:2]
    bad[1]["traj"][0]["role"] = "robot"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(TauBenchError, match=r"episode 1, field traj\.0\.role"):
        load_episodes(path)
    result = CliRunner().invoke(app, ["taubench", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert not (tmp_path / "out").exists()


def test_cli_rejected_key_prints_failures_by_model_and_reason(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentjudge.taubench import taubench_cli

    small = tmp_path / "three.json"
    small.write_text(json.dumps(json.loads(DATA.read_text())[:3]))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-rejected-by-the-server")
    fake_llm.set_responder(lambda req: {"status": 401, "body": json.dumps({"error": {"message": "bad key"}})})
    code = taubench_cli(small, tmp_path / "out", ["openai/test-model"], fake_llm.base_url, ["without_gt"])
    out = capsys.readouterr().out
    assert code == 1
    assert "failures by model and reason:" in out and "openai/test-model: auth x3" in out
    assert len(fake_llm.requests) <= 3  # none retried; once stopped, the rest are not sent
