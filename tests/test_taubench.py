"""τ-bench track on the real published trajectories in ../shared/data/tau-bench (not copied here)."""

from __future__ import annotations

import asyncio
import itertools
import json
from math import comb
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from fakeserver import FakeLLM
from typer.testing import CliRunner

from agentjudge.commands import app
from agentjudge.tracks.taubench import (
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


@needs_data
def test_cli_rejected_key_prints_failures_by_model_and_reason(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentjudge.commands.tracks import taubench_cli

    small = tmp_path / "three.json"
    small.write_text(json.dumps(json.loads(DATA.read_text())[:3]))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-rejected-by-the-server")
    fake_llm.set_responder(lambda req: {"status": 401, "body": json.dumps({"error": {"message": "bad key"}})})
    code = taubench_cli(small, tmp_path / "out", ["openai/test-model"], fake_llm.base_url, ["without_gt"])
    out = capsys.readouterr().out
    assert code == 1
    assert "failures by model and reason:" in out and "openai/test-model: auth x3" in out
    assert len(fake_llm.requests) <= 3  # none retried; once stopped, the rest are not sent


def _synthetic_tau(seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """8 tasks × 4 trials; one model judge and one baseline, 2 metrics per episode, one failed verdict."""
    rng = np.random.default_rng(seed)
    ep_rows, j_rows = [], []
    for task in range(8):
        for trial in range(4):
            rid, base = f"tau-airline-{task:03d}:trial{trial}", f"tau-airline-{task:03d}"
            reward = float(rng.random() < 0.5)
            ep_rows.append(
                {"task_id": task, "trial": trial, "reward": reward, "n_tool_errors": 0}
                | {
                    m: float(rng.random())
                    for m in ("p_tool", "p_param", "p_seq", "p_cov", "p_value", "p_seq_dag")
                }
            )
            for judge in ("openai/m", "baseline/always-1"):
                for metric in ("tool", "param"):
                    verdict = 1.0 if judge == "baseline/always-1" else float(rng.integers(0, 2))
                    if judge == "openai/m" and task == 2 and trial == 1 and metric == "tool":
                        verdict = float("nan")
                    j_rows.append(
                        {
                            "record_id": rid,
                            "base_id": base,
                            "reward": reward,
                            "judge": judge,
                            "condition": "with_gt",
                            "metric": metric,
                            "reference": float(rng.integers(0, 2)),
                            "verdict": verdict,
                        }
                    )
    return pd.DataFrame(ep_rows), pd.DataFrame(j_rows)


def test_judge_cis_resample_tasks_and_match_a_loop_over_drawn_tasks() -> None:
    from agentjudge.stats.bootstrap import ClusterBootstrap, percentile_ci

    episodes, judgments = _synthetic_tau()
    summary = summarize(episodes, judgments, resamples=200, seed=7)
    assert summary["bootstrap"]["cluster"] == "task (base_id)"
    assert summary["bootstrap"]["clusters"] == 8  # tasks, not the 32 episodes
    boot = ClusterBootstrap(judgments["base_id"], resamples=200, seed=7)
    by_task = {b: g for b, g in judgments.groupby("base_id")}
    for j in summary["judges"]:
        g_all = judgments[(judgments["judge"] == j["judge"]) & (judgments["condition"] == j["condition"])]
        ok = g_all[g_all["verdict"].notna()]
        mu_all = 1 - (ok["reference"] - ok["verdict"]).abs()
        assert j["alignment_with_reference"] == pytest.approx(mu_all.mean())
        align, aucs = [], []
        for draw in boot.idx:  # the slow way: stack the drawn TASKS (all 4 trials each), recompute
            parts = []
            for k, c in enumerate(draw):
                g = by_task[boot.clusters[c]]
                g = g[(g["judge"] == j["judge"]) & g["verdict"].notna()]
                parts.append(g.assign(record_id=g["record_id"] + f"#{k}"))
            stacked = pd.concat(parts)
            align.append((1 - (stacked["reference"] - stacked["verdict"]).abs()).mean())
            per_ep = stacked.groupby("record_id").agg(v=("verdict", "mean"), r=("reward", "first"))
            aucs.append(auc(per_ep["v"].to_numpy(), per_ep["r"].to_numpy() >= 1.0))
        a_lo, a_hi = percentile_ci(np.array(align), boot.alpha)
        u_lo, u_hi = percentile_ci(np.array(aucs), boot.alpha)
        assert j["alignment_ci"] == pytest.approx([a_lo[0], a_hi[0]])
        assert j["auc_ci"] == pytest.approx([u_lo[0], u_hi[0]], nan_ok=True)
        assert j["alignment_ci"][0] <= j["alignment_with_reference"] <= j["alignment_ci"][1]
    model = next(j for j in summary["judges"] if j["judge"] == "openai/m")
    assert model["auc_ci"][0] <= model["auc_reward"] <= model["auc_ci"][1]
    assert model["auc_ci"][0] < model["auc_ci"][1]
    # seeded: same seed same intervals
    again = summarize(episodes, judgments, resamples=200, seed=7)
    assert again["judges"] == summary["judges"]


def test_summary_md_has_cis_and_names_baseline_judges_not_models() -> None:
    from agentjudge.tracks.taubench import _markdown

    episodes, judgments = _synthetic_tau()
    summary = summarize(episodes, judgments, resamples=200, seed=7)
    text = _markdown(summary, Path("x.json"))
    banner = next(line for line in text.splitlines() if "Not models" in line)
    assert "baseline/always-1" in banner and "openai/m" not in banner
    model = next(j for j in summary["judges"] if j["judge"] == "openai/m")
    lo, hi = model["alignment_ci"]
    row = next(line for line in text.splitlines() if line.startswith("| openai/m |"))
    assert f"{model['alignment_with_reference']:.3f} [{lo:.3f}, {hi:.3f}]" in row
    assert "| baseline/always-1 (not a model) |" in text
    assert "over the 8 τ-bench tasks" in text
