"""τ-bench track on the real published trajectories in ../shared/data/tau-bench (not copied here)."""

from __future__ import annotations

import itertools
import json
from math import comb
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from agentjudge.analysis.taubench import markdown, summarize
from fakeserver import FakeLLM
from typer.testing import CliRunner

from agentjudge import api
from agentjudge.commands import app
from agentjudge.rundir import RunFolder
from agentjudge.stats.bootstrap import ClusterBootstrap
from agentjudge.stats.outcome import outcome_agreement
from agentjudge.tracks.taubench import (
    TauBenchError,
    infer_tool_schemas,
    load_episodes,
    to_trace,
)


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


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> api.TauBenchRun:  # type: ignore[name-defined]
    """The verb with its default (offline) judges on the published file, through the runner."""
    return api.taubench(DATA, tmp_path_factory.mktemp("tau") / "out")


def pairwise_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """The AUC by its definition: the share of (solved, failed) pairs ordered right, ties one half."""
    pos, neg = scores[labels], scores[~labels]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


@needs_data
def test_loads_all_episodes_and_traces_drop_only_think(episodes) -> None:  # type: ignore[no-untyped-def]
    assert len(episodes) == 200
    assert len({e.task_id for e in episodes}) == 50
    tools = infer_tool_schemas(episodes)
    ep = episodes[3]
    trace = to_trace(ep, tools)
    raw = [tc.function.name for m in ep.traj for tc in (m.tool_calls or [])]
    assert [c.name for c in trace.calls] == [n for n in raw if n != "think"]
    assert [c.name for c in trace.expected or []] == [a.name for a in ep.info.task.actions]
    assert trace.id == f"tau-airline-{ep.task_id:03d}:trial{ep.trial}"
    # the episode: each call of the trace with its tool output (or error) as the judge sees it
    assert trace.trajectory is not None
    assert [s.call for s in trace.trajectory.steps] == trace.calls
    # an output answers the latest call with its id (the published episodes reuse call ids)
    latest: dict[str, int] = {}
    errors: dict[int, str | None] = {}
    steps = 0
    for m in ep.traj:
        for tc in m.tool_calls or []:
            if tc.function.name != "think":
                latest[tc.id], steps = steps, steps + 1
        if m.role == "tool" and m.name != "think":
            text = m.content or ""
            errors[latest[m.tool_call_id or ""]] = text if text.startswith("Error") else None
    assert [s.error for s in trace.trajectory.steps] == [errors.get(i) for i in range(len(trace.calls))]
    assert sum(s.error is not None for s in trace.trajectory.steps) == trace.metadata["n_tool_errors"]


@needs_data
def test_inferred_schemas_accept_every_observed_call(episodes) -> None:  # type: ignore[no-untyped-def]
    tools = {t.name: t for t in infer_tool_schemas(episodes)}
    checked = 0
    for ep in episodes:
        trace = to_trace(ep, list(tools.values()))
        for call in trace.calls + (trace.expected or []):
            jsonschema.validate(call.arguments, tools[call.name].parameters)
            checked += 1
    assert checked > 1000
    assert all("inferred from" in t.description for t in tools.values())


@needs_data
def test_agent_pass_hat_k_matches_brute_force(episodes, offline_run) -> None:  # type: ignore[no-untyped-def]
    summary = offline_run.summary
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


def test_auc_hand_computed_and_exact_beside_the_grid() -> None:
    frame = pd.DataFrame(
        {
            "base_id": ["a", "b", "c", "d"],
            "g": "x",
            "s": [0.9, 0.5, 0.5, 0.1],
            "y": [True, True, False, False],
        }
    )
    boot = ClusterBootstrap(frame["base_id"], resamples=50, seed=0)
    # pairs (pos, neg): (0.9>0.5) (0.9>0.1) (0.5=0.5 → ½) (0.5>0.1) = 3.5 / 4
    assert outcome_agreement(frame, boot, ["g"], "s", "y", exact=True)["auc"].iloc[0] == pytest.approx(0.875)
    # two scores closer than the 0.01 grid: one tie on the grid, ordered when exact (τ-bench's p_value)
    close = frame.assign(s=[0.334, 0.9, 1 / 3, 0.1])
    assert outcome_agreement(close, boot, ["g"], "s", "y")["auc"].iloc[0] == pytest.approx(0.875)
    assert outcome_agreement(close, boot, ["g"], "s", "y", exact=True)["auc"].iloc[0] == pytest.approx(1.0)


@needs_data
def test_the_verb_runs_its_judges_through_the_runner(offline_run) -> None:  # type: ignore[no-untyped-def]
    out = offline_run.out
    assert {p.name for p in out.iterdir()} >= {
        "episodes.parquet", "judgments.parquet", "summary.json", "summary.md", "run"
    }  # fmt: skip
    folder = RunFolder.open(out / "run")
    assert folder.status.state == "complete"
    records = folder.records()
    assert len(records) == 200 and {r.source for r in records} == {"traces"}
    judgments = pd.read_parquet(out / "judgments.parquet")
    assert len(judgments) == 200 * 4 * 2 * 4  # episodes x judges x conditions x metrics
    got = {(j["judge"], j["condition"]): j["alignment_with_reference"] for j in offline_run.summary["judges"]}
    ones = judgments[(judgments.judge == "baseline/always-1") & (judgments.condition == "with_gt")]
    assert got[("baseline/always-1", "with_gt")] == pytest.approx(ones["reference"].mean())  # 1-|ref-1| = ref
    assert got[("baseline/ceiling", "with_gt")] > got[("baseline/always-1", "with_gt")]
    # the report of the run folder carries the τ-bench section with the same pass^k
    report = api.report(out / "run", resamples=200)
    text = (report.out / "report.md").read_text()
    assert "τ-bench: the agent's pass^k" in text
    table = pd.read_csv(report.out / "tables" / "taubench_passk.csv")
    assert table["pass_hat_k"].tolist() == pytest.approx(
        list(offline_run.summary["agent_pass_hat_k"].values())
    )


@needs_data
def test_a_rerun_continues_and_other_judges_are_refused(tmp_path: Path) -> None:
    small = tmp_path / "three.json"
    small.write_text(json.dumps(json.loads(DATA.read_text())[:3]))
    api.taubench(small, tmp_path / "out", judges=["baseline/rule"])
    written = (tmp_path / "out" / "summary.json").read_text()
    again = api.taubench(small, tmp_path / "out", judges=["baseline/rule"])
    assert again.run.up_to_date and (tmp_path / "out" / "summary.json").read_text() == written
    result = CliRunner().invoke(app, ["taubench", str(small), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "other judges or conditions" in result.output
    assert pd.read_parquet(tmp_path / "out" / "judgments.parquet")["judge"].unique().tolist() == [
        "baseline/rule"
    ]


@needs_data
def test_llm_judge_through_loopback_server(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    small = tmp_path / "three.json"
    small.write_text(json.dumps(json.loads(DATA.read_text())[:3]))
    good = json.dumps({m: {"verdict": 0.5, "justification": "x"} for m in ("tool", "param", "seq", "cov")})
    fake_llm.queue(good)
    fake_llm.queue("I cannot grade this.")  # unparseable: must be counted, not defaulted
    fake_llm.queue(good)
    done = api.taubench(
        small,
        tmp_path / "out",
        judges=["openai/test-model"],
        conditions=["without_gt"],
        api_base=fake_llm.base_url,
    )
    assert len(fake_llm.requests) == 3
    table = pd.read_parquet(tmp_path / "out" / "judgments.parquet")
    failed = table[table.verdict.isna()]
    assert len(failed) == 4 and not failed.parse_ok.any() and done.failed == 4
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
    assert "failures by model and reason:" in out and "openai/test-model: auth x" in out
    assert "re-run the same command to continue" in out  # the runner's store keeps what was done
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
                {"task_id": task, "base_id": base, "trial": trial, "reward": reward, "n_tool_errors": 0}
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
            aucs.append(pairwise_auc(per_ep["v"].to_numpy(), per_ep["r"].to_numpy() >= 1.0))
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
    episodes, judgments = _synthetic_tau()
    summary = summarize(episodes, judgments, resamples=200, seed=7)
    text = markdown(summary, "x.json")
    banner = next(line for line in text.splitlines() if "Not models" in line)
    assert "baseline/always-1" in banner and "openai/m" not in banner
    model = next(j for j in summary["judges"] if j["judge"] == "openai/m")
    lo, hi = model["alignment_ci"]
    row = next(line for line in text.splitlines() if line.startswith("| openai/m |"))
    assert f"{model['alignment_with_reference']:.3f} [{lo:.3f}, {hi:.3f}]" in row
    assert "| baseline/always-1 (not a model) |" in text
    assert "over the 8 τ-bench tasks" in text
