"""A stage whose units are partly offline (simulated, baseline: ``runner/offline.py``) and partly not:
the cost cap spent before the stage computes no offline chunk it would then drop (the counts stay what
they were), and the stage shows one progress bar counting all its units."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.progress import Progress
from test_runner import read, write_pipeline

from agentjudge import api
from agentjudge.commands.run import run_cli
from agentjudge.runner import offline
from agentjudge.types import JudgeRequest, JudgeResult, Prediction, Usage


class _PricedGenerator:
    """Answers the expected calls at $0.01 a unit (a paid model, without a server)."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, task: Any, trial: int) -> Prediction:
        return Prediction.for_task(task, self.name, trial, calls=[], usage=Usage(cost_usd=0.01))


def make_priced_generator(settings: Any, client: Any) -> _PricedGenerator:
    return _PricedGenerator(settings.display_name)


class _PluginJudge:
    """A judge that is not offline (a plugin goes through the event loop, as a litellm judge does)."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        return JudgeResult(verdicts=dict.fromkeys(("tool", "param", "seq", "cov"), 1.0), parse_ok=True)


def make_plugin_judge(settings: Any, client: Any) -> _PluginJudge:
    return _PluginJudge(settings.display_name)


class ChunkSpy:
    """Units computed by the offline chunk loop, per call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.units: list[str] = []
        real = offline.compute_chunk

        def spy(units: Any, work: Any) -> Any:
            self.units += [u.stage for u in units]
            return real(units, work)

        monkeypatch.setattr(offline, "compute_chunk", spy)


def test_a_cap_spent_before_the_judge_stage_computes_no_offline_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator = {"model": "test_stage_offline_mix:make_priced_generator", "name": "priced", "concurrency": 1}
    pipeline = write_pipeline(
        tmp_path,
        generators=[generator],
        judges=["baseline/rule", "baseline/always-1"],
        conditions=["with_gt"],
        concurrency=1,
        workers=1,
    )
    rundir = tmp_path / "run"
    spy = ChunkSpy(monkeypatch)
    assert api.run(pipeline, rundir, max_cost=0.05).status == "stopped"
    # 8 predictions (4 records x 2 difficulties) at $0.01: 5 reach the cap, 3 are not started; the judge
    # stage would judge the 5 with 2 baselines: 10 units, none stored, none computed
    assert spy.units == []
    meta = json.loads((rundir / "meta.json").read_text())
    assert meta["units"]["predict"]["done"] == 5
    assert meta["units"]["judge"].get("done", 0) == 0
    assert meta["last_invocation"]["units_not_run_at_cost_cap"] == 3 + 10
    assert len(read(rundir, "judgments")) == 0
    assert (
        api.run(pipeline, rundir).status == "complete"
    )  # no cap: the rest runs, the offline units are computed now
    assert spy.units == ["judge"] * 16
    assert len(read(rundir, "judgments")) == 16 * 4 * 2  # units x metrics x scoring modes


def test_a_stage_mixing_offline_and_other_units_shows_one_bar_counting_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Progress] = []
    from agentjudge.commands import progress as bars

    real = bars.make_progress

    def keep(console: Any) -> Progress:
        made.append(real(console))
        return made[-1]

    monkeypatch.setattr(bars, "make_progress", keep)
    generator = {"model": "test_stage_offline_mix:make_priced_generator", "name": "paid"}
    judge = {"model": "test_stage_offline_mix:make_plugin_judge", "name": "plugin-judge"}
    pipeline = write_pipeline(
        tmp_path,
        generators=["sim/perfect", generator],  # offline and not, in both stages
        judges=["baseline/rule", judge],
        conditions=["with_gt"],
    )
    assert run_cli(pipeline, tmp_path / "run") == 0  # the command line draws the bars
    (progress,) = made
    bars = [(t.description, t.total, t.completed) for t in progress.tasks]
    # 2 generators x 4 records x 2 difficulties = 16 predictions; x 2 judges x 1 condition = 32 judge units
    assert bars == [("predict", 16, 16), ("score", 16, 16), ("judge", 32, 32)]
    # after the offline units the bar's rate is measured afresh (StageBars.restart_rate), its start kept
    assert all("began" in progress.tasks[i].fields for i in (0, 2))
