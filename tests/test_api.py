"""The library API (``agentjudge.api``): typed results instead of printed lines and exit codes, one
exception family for bad input, events for what a run says while it works; and ``agentjudge --help``
stays light (no litellm, no pandas)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_runner import write_pipeline

from agentjudge import api
from agentjudge.runner import events
from agentjudge.runner.run import pipeline_path


class Recorder:
    """A reporter that keeps every event and counts what the bars were told."""

    def __init__(self) -> None:
        self.events: list[events.Event] = []
        self.advanced = 0

    def event(self, event: events.Event) -> None:
        self.events.append(event)

    def bars(self) -> Any:
        from contextlib import nullcontext

        recorder = self

        class Bars(events.NoBars):
            def advance(self, task_id: Any, advance: float = 1) -> None:
                recorder.advanced += int(advance)

        return nullcontext(Bars())

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def test_a_complete_run_returns_its_units_and_a_rerun_has_nothing_to_do(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule", "baseline/always-1"], conditions=["with_gt"])
    recorder = Recorder()
    result = api.run(pipeline, tmp_path / "run", progress=recorder)
    assert (result.status, result.exit_code, result.stop_reason) == ("complete", 0, None)
    assert result.rundir == tmp_path / "run" and not result.up_to_date
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    # 4 records x 2 difficulties x 2 generators = 16 predictions; x 2 judges x 1 condition = 32 judge units
    assert {s: (u.planned, u.done, u.failed) for s, u in result.units.items()} == {
        "predict": (16, 16, 0),
        "judge": (32, 32, 0),
    }
    stages = {s: u for s, u in meta["units"].items() if s != "by_judge"}  # by_judge: per judge, below
    assert {s: (u["planned"], u["done"], u["failed"]) for s, u in stages.items()} == {
        s: (u.planned, u.done, u.failed) for s, u in result.units.items()
    }
    assert result.failed == result.not_run == 0 and result.failures == () and result.stopped_models == ()
    assert result.cost_cap is None and result.cost_usd == 0.0
    assert [row["model"] for row in result.per_model] == [
        "sim/weak",
        "sim/perfect",
        "baseline/rule",
        "baseline/always-1",
    ]
    assert result.resume_command == f"agentjudge run {pipeline} --out {tmp_path / 'run'}"
    folder = api.RunFolder.open(result.rundir)  # the typed reader agrees with the result
    assert len(folder.judgments()) == 32 * 4 * 2  # units x metrics x scoring modes
    assert (folder.status.state, folder.status.done) == ("complete", 16 + 32)
    # the reporter heard the stages and the end (the same result), and the bars counted every unit
    assert [(e.stage, e.pending, e.total) for e in recorder.of(events.StageStarted)] == [
        ("predict", 16, 16),
        ("judge", 32, 32),
    ]
    assert recorder.of(events.RunFinished) == [events.RunFinished(result)]
    assert recorder.advanced == 16 + 16 + 32  # predict, score, judge

    again = api.run(pipeline, tmp_path / "run")
    assert again.status == "complete" and again.up_to_date and again.units == result.units


def test_a_cost_capped_run_is_stopped_and_says_how_to_go_on(tmp_path: Path) -> None:
    generator = {"model": "test_stage_offline_mix:make_priced_generator", "name": "priced", "concurrency": 1}
    pipeline = write_pipeline(
        tmp_path, generators=[generator], judges=["baseline/rule"], conditions=["with_gt"], concurrency=1
    )
    rundir = tmp_path / "run"
    result = api.run(pipeline, rundir, max_cost=0.05)
    # 8 predictions at $0.01: 5 reach the cap, 3 are left; the judge stage does not start
    assert (result.status, result.exit_code, result.stop_reason) == ("stopped", 1, "cost cap")
    assert result.cost_cap is not None and result.cost_cap.cap_usd == 0.05
    assert result.cost_usd == pytest.approx(0.05)  # the plug-in's own dollars, counted after the fact
    predict = result.units["predict"]
    assert (predict.planned, predict.done, predict.failed, predict.not_run) == (8, 5, 0, 3)
    assert result.units["judge"].done == 0 and result.cost_cap.units_left == 3 + 5
    assert result.resume_command.endswith(f"--out {rundir} --max-cost 0.05")
    resumed = api.run(pipeline, rundir)  # the same command without a cap finishes it
    assert resumed.status == "complete" and resumed.units["predict"].done == 8


def test_a_dry_run_returns_the_plan_and_writes_nothing(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], conditions=["with_gt", "without_gt"])
    result = api.run(pipeline, tmp_path / "run", dry_run=True)
    assert (result.status, result.exit_code) == ("dry_run", 0) and not (tmp_path / "run").exists()
    assert result.plan is not None and result.units == {}
    calls = {row["model"]: row["calls"] for row in result.plan.rows}
    assert calls == {"sim/weak": 8, "sim/perfect": 8, "baseline/rule": 2 * 8 * 2}
    assert result.plan.total_line.startswith(f"total: {8 + 8 + 32} calls")
    assert "judge calls assume every prediction succeeds" in result.plan.notes


def test_bad_input_is_an_input_error_naming_the_file_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(api.InputError, match=r"nope\.yaml: cannot read pipeline file"):
        api.run(tmp_path / "nope.yaml", tmp_path / "run")
    pipeline = write_pipeline(tmp_path)
    records = tmp_path / "records.jsonl"
    lines = records.read_text().splitlines()
    lines[1] = lines[1].replace('"dag_type":"fan_out"', '"dag_type":"spiral"')
    records.write_text("\n".join(lines) + "\n")
    with pytest.raises(api.InputError) as caught:
        api.run(pipeline, tmp_path / "run")
    message = str(caught.value)
    assert "records.jsonl" in message and "line 2" in message and "\n" not in message
    assert not (tmp_path / "run").exists()
    # the preflight: every problem, before anything is read or written
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(api.PreflightError) as refused:
        api.run(pipeline, tmp_path / "run", judges=["openai/gpt-4o", "anthropic/claude-3-5-sonnet-latest"])
    assert len(refused.value.problems) == 2 and str(refused.value).startswith("preflight: 2 problem(s)")
    assert all(p.startswith(f"--judge[{i}]") for i, p in enumerate(refused.value.problems))
    assert "OPENAI_API_KEY" in refused.value.problems[0]
    assert not (tmp_path / "run").exists()


def test_a_folder_of_another_configuration_is_refused_with_the_diff(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], conditions=["with_gt"])
    api.run(pipeline, tmp_path / "run")
    with pytest.raises(api.InputError) as caught:
        api.run(pipeline, tmp_path / "run", judges=["baseline/always-1"])
    assert "holds a run of a different configuration" in str(caught.value)
    assert "baseline/always-1" in str(caught.value)  # the diff names what changed


def test_a_shipped_pipeline_is_found_by_name_unless_a_file_of_that_name_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentjudge.resources import pipelines_dir

    monkeypatch.chdir(tmp_path)
    assert pipeline_path("quickstart") == pipelines_dir() / "quickstart.yaml"
    assert pipeline_path("quickstart.yaml") == pipelines_dir() / "quickstart.yaml"
    (tmp_path / "quickstart").write_text("name: mine\n")
    assert pipeline_path("quickstart") == Path("quickstart")  # a file in the way is the user's own
    assert pipeline_path("no-such-pipeline") == Path("no-such-pipeline")  # its reading says it is missing


def test_infer_returns_its_counts_and_resumes(tmp_path: Path) -> None:
    write_pipeline(tmp_path)
    out = tmp_path / "preds.jsonl"
    recorder = Recorder()
    result = api.infer(
        tmp_path / "records.jsonl", "sim/perfect", out, difficulties=["easy"], progress=recorder
    )
    assert (result.planned, result.kept, result.new, result.failed, result.exit_code) == (4, 0, 4, 0, 0)
    assert recorder.of(events.InferPlanned) == [events.InferPlanned("sim/perfect", 4, 0, 4)]
    assert recorder.advanced == 4 and len(out.read_text().splitlines()) == 4
    again = api.infer(tmp_path / "records.jsonl", "sim/perfect", out, difficulties=["easy"])
    assert (again.kept, again.new) == (4, 0)
    with pytest.raises(api.InputError, match="--difficulty extreme: choose from easy, medium, hard"):
        api.infer(tmp_path / "records.jsonl", "sim/perfect", out, difficulties=["extreme"])


def test_help_imports_no_litellm_nor_pandas_and_is_quick(tmp_path: Path) -> None:
    """``agentjudge --help`` and a verb's help import the command modules only, never the heavy stack."""
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['agentjudge', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('agentjudge', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('litellm', 'pandas', 'numpy', 'pyarrow', 'agentjudge.runner.grid')\n"
        "print('LOADED', *sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    for argv in ([], ["--help"], ["run", "--help"], ["import", "bfcl", "--help"]):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        seconds = time.perf_counter() - started
        assert "Usage: agentjudge" in done.stdout, done.stdout + done.stderr
        assert done.stderr.strip().splitlines()[-1] == "LOADED", (argv, done.stderr)
        assert seconds < 5.0, (argv, seconds)  # ~0.3 s alone; generous for a loaded machine
