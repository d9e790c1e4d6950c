"""One run per folder, judges added to a run folder, numeric flags held to their keys' rules, strict JSON.

* ``runner/rundir_lock.py``: a second ``agentjudge run`` on a folder another holds exits 2 naming the holder
  (pid, host, start time) and does nothing; the read-only verbs keep working meanwhile; a holder killed with
  SIGKILL blocks nothing (the resume runs).
* ``--add-judge``: the pipeline's judges plus these, also into a folder that holds the pipeline without them
  (only their units run, the stored ones are reused, meta.json's ``added_judges`` says what was added);
  anything else that differs is refused with the diff as before.
* ``--max-cost`` and the other numeric flags: negative, NaN, infinite → exit 2, nothing written.
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
import yaml
from test_runner import write_pipeline
from typer.testing import CliRunner

from agentjudge import strict_json
from agentjudge.commands import app
from agentjudge.commands.run import run_cli
from agentjudge.rundir import RunFolder
from agentjudge.rundir.lock import read_holder
from agentjudge.rundir.units import store_units
from agentjudge.runner.rundir_lock import RunFolderBusy, RunFolderLock
from agentjudge.types import METRICS, JudgeRequest, JudgeResult

TESTS = Path(__file__).resolve().parent
DELAY_ENV = "AGENTJUDGE_TEST_SLOW_JUDGE_S"
LOG_ENV = "AGENTJUDGE_TEST_SLOW_JUDGE_LOG"


class _SlowJudge:
    """Waits ``$AGENTJUDGE_TEST_SLOW_JUDGE_S`` per unit (not part of the configuration: the same pipeline runs
    fast or slow) and logs every unit it grades to ``$AGENTJUDGE_TEST_SLOW_JUDGE_LOG``."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        await asyncio.sleep(float(os.environ.get(DELAY_ENV, "0")))
        log = os.environ.get(LOG_ENV)
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(
                    json.dumps([request.task.record_id, request.condition, len(request.calls)]) + "\n"
                )
        return JudgeResult(verdicts=dict.fromkeys(METRICS, 1.0), parse_ok=True)


def make_slow_judge(settings: Any, client: Any) -> _SlowJudge:
    return _SlowJudge(settings.display_name)


SLOW = "test_run_folder:make_slow_judge"


def _strict(path: Path) -> Any:
    """The file parsed as strict JSON (NaN / Infinity refused)."""

    def refuse(token: str) -> Any:
        raise AssertionError(f"{path.name}: {token} is not JSON")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def _env(log: Path, delay: float) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    env[DELAY_ENV], env[LOG_ENV] = str(delay), str(log)
    return env


def _agentjudge(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "agentjudge", *map(str, args)]


def _done(store: Path, judge: str) -> int:
    """The judge's units stored as done so far (a run may be writing the store)."""
    try:
        done = [("stage", "==", "judge"), ("judge", "==", judge), ("status", "==", "done")]
        units = store_units(store, ["stage"], done)
    except sqlite3.Error:
        return 0
    return 0 if units is None else len(units)


def _wait_for(condition: Any, proc: subprocess.Popen[str], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the run ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


# ----------------------------------------------------------------------------------------------- the lock
def test_lock_refuses_a_second_holder_and_names_the_first(tmp_path: Path) -> None:
    first, second = RunFolderLock(tmp_path), RunFolderLock(tmp_path)
    first.acquire()
    holder = read_holder(tmp_path / "run.lock")
    assert holder["pid"] == os.getpid() and holder["host"] and holder["started"].endswith("UTC")
    with pytest.raises(RunFolderBusy) as busy:
        second.acquire()
    assert f"pid {os.getpid()} on host {holder['host']}, started {holder['started']}" in str(busy.value)
    first.release()
    assert not (tmp_path / "run.lock").exists()  # a normal end leaves nothing behind
    second.acquire()  # free again
    second.release()


def test_a_forked_child_does_not_keep_the_lock(tmp_path: Path) -> None:
    """The worker and offline processes are forked while the run holds the folder: the lock must end with
    the process that took it, not with its last child."""
    lock = RunFolderLock(tmp_path)
    lock.acquire()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: wait until the parent has let go, then say whether the folder is free
        os.close(write)
        os.read(read, 1)
        try:
            RunFolderLock(tmp_path).acquire()
            os._exit(0)
        except RunFolderBusy:
            os._exit(3)
    os.close(read)
    lock.release()
    os.write(write, b"x")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_two_runs_on_one_folder_the_second_refused_and_readers_work(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], difficulties=["easy", "hard"])
    rundir, log = tmp_path / "run", tmp_path / "judge.log"
    assert run_cli(pipeline, rundir) == 0  # the files `report` reads while the next run holds the folder
    holder = subprocess.Popen(
        _agentjudge("run", pipeline, "--out", rundir, "--add-judge", SLOW),
        env=_env(log, delay=0.5),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    _wait_for(lambda: _done(rundir / "run.sqlite", SLOW) >= 1, holder, "the first run held the folder")
    second = subprocess.run(
        _agentjudge("run", pipeline, "--out", rundir, "--add-judge", SLOW),
        env=_env(log, delay=0.0),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert holder.poll() is None, "the first run ended before the second started: no overlap was tested"
    assert second.returncode == 2, second.stdout + second.stderr
    said = second.stdout + second.stderr
    assert f"pid {holder.pid} on host" in said and "started" in said and "in use by another" in said
    for verb in (["report", rundir, "--resamples", "20"], ["batches", rundir]):
        reader = subprocess.run(_agentjudge(*verb), capture_output=True, text=True, timeout=300)
        assert reader.returncode == 0, (verb, reader.stdout + reader.stderr)
    out, _ = holder.communicate(timeout=120)
    assert holder.returncode == 0, out
    graded = log.read_text().splitlines()  # one line per unit graded, by either process
    assert len(graded) == _done(rundir / "run.sqlite", SLOW) == 48  # each unit once: the second ran nothing
    assert not (rundir / "run.lock").exists()


def test_a_holder_killed_with_sigkill_blocks_nothing(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, judges=[SLOW], difficulties=["easy", "hard"])
    rundir, log = tmp_path / "run", tmp_path / "judge.log"
    holder = subprocess.Popen(
        _agentjudge("run", pipeline, "--out", rundir),
        env=_env(log, delay=0.3),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    _wait_for(lambda: _done(rundir / "run.sqlite", SLOW) >= 2, holder, "some units were committed")
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=30)
    assert read_holder(rundir / "run.lock")["pid"] == holder.pid  # the file stays, the lock does not
    done_before = _done(rundir / "run.sqlite", SLOW)
    resumed = subprocess.run(
        _agentjudge("run", pipeline, "--out", rundir),
        env=_env(log, delay=0.0),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "in use" not in resumed.stdout + resumed.stderr
    judged = pd.read_parquet(rundir / "judgments.parquet")
    assert set(judged.judge) == {SLOW} and judged.verdict.notna().all()
    assert _done(rundir / "run.sqlite", SLOW) > done_before and not (rundir / "run.lock").exists()


# ------------------------------------------------------------------------------------------- --add-judge
def _units(rundir: Path) -> dict[tuple[Any, ...], tuple[str, int]]:
    """Every judge unit's coordinates -> (status, attempts)."""
    rows = RunFolder.open(rundir).units(
        ["record_id", "generator", "judge", "condition", "status", "attempts"], [("stage", "==", "judge")]
    )
    return {tuple(r[:4]): (r[4], r[5]) for r in rows.itertuples(index=False)}


def test_add_judge_into_an_existing_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule", "baseline/always-1"])
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    before_units = _units(rundir)
    before = pd.read_parquet(rundir / "judgments.parquet")
    capsys.readouterr()

    assert run_cli(pipeline, rundir, add_judges=["baseline/always-0"]) == 0
    out = capsys.readouterr().out
    assert "--add-judge" in out and "only their units run" in out
    after_units = _units(rundir)
    added = {k: v for k, v in after_units.items() if k[2] == "baseline/always-0"}
    assert added and all(status == "done" for status, _ in added.values())
    # the stored units are reused: not run again (one attempt each, the same count)
    assert {k: v for k, v in after_units.items() if k[2] != "baseline/always-0"} == before_units
    assert all(attempts == 1 for _, attempts in before_units.values())
    after = pd.read_parquet(rundir / "judgments.parquet")
    assert set(after.judge) == {"baseline/rule", "baseline/always-1", "baseline/always-0"}
    pd.testing.assert_frame_equal(
        before.reset_index(drop=True),
        after[after.judge != "baseline/always-0"].reset_index(drop=True),
    )
    assert (after[after.judge == "baseline/always-0"].verdict == 0.0).all()
    summary = _strict(rundir / "run_summary.json")["per_model"]
    assert summary["baseline/rule"]["this_invocation"]["done"] == 0  # nothing of the pipeline's ran again
    assert summary["baseline/always-0"]["this_invocation"]["done"] == len(added)
    # the folder's record of the pipeline says what was added
    meta = _strict(rundir / "meta.json")
    assert [j["model"] for j in meta["pipeline"]["judges"]] == [
        "baseline/rule",
        "baseline/always-1",
        "baseline/always-0",
    ]
    (entry,) = meta["added_judges"]
    assert entry["judge"] == "baseline/always-0" and entry["added_at"] and entry["git_commit"]

    # the same command again: nothing to do; a second judge added later: only its units
    assert run_cli(pipeline, rundir, add_judges=["baseline/always-0"]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert run_cli(pipeline, rundir, add_judges=["baseline/always-0", "baseline/always-0.5"]) == 0
    meta = _strict(rundir / "meta.json")
    assert [e["judge"] for e in meta["added_judges"]] == ["baseline/always-0", "baseline/always-0.5"]
    assert {k: v for k, v in _units(rundir).items() if k[2] != "baseline/always-0.5"} == after_units
    # a third judge given alone: the two added before are kept (said), only its units run
    capsys.readouterr()
    assert run_cli(pipeline, rundir, add_judges=["simjudge/noiseless"]) == 0
    out = capsys.readouterr().out
    assert "also holds baseline/always-0, baseline/always-0.5 (added earlier" in out
    meta = _strict(rundir / "meta.json")
    assert [e["judge"] for e in meta["added_judges"]] == [
        "baseline/always-0",
        "baseline/always-0.5",
        "simjudge/noiseless",
    ]
    # and a plain re-run of the pipeline resumes the folder as it stands: nothing to do
    assert run_cli(pipeline, rundir) == 0
    assert "nothing to do" in capsys.readouterr().out
    # --force-new starts over from the pipeline alone
    assert run_cli(pipeline, rundir, force_new=True) == 0
    assert set(pd.read_parquet(rundir / "judgments.parquet").judge) == {"baseline/rule", "baseline/always-1"}


def test_add_judge_refuses_a_folder_of_another_pipeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], difficulties=["easy"])
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    assert run_cli(pipeline, rundir, add_judges=["baseline/always-0"]) == 0
    capsys.readouterr()
    stored = (rundir / "run.sqlite").read_bytes()

    # the base pipeline alone resumes the folder as it stands: the judge added before is kept (said so)
    assert run_cli(pipeline, rundir) == 0
    out = capsys.readouterr().out
    assert (
        "also holds baseline/always-0 (added earlier with --add-judge): kept" in out
        and "nothing to do" in out
    )

    # anything else changed, judges added or not: refused with the diff as before
    data = yaml.safe_load(pipeline.read_text())
    data["difficulties"] = ["easy", "hard"]
    pipeline.write_text(yaml.safe_dump(data, sort_keys=False))
    assert run_cli(pipeline, rundir, add_judges=["baseline/always-0", "baseline/always-1"]) == 2
    out = capsys.readouterr().err
    assert "difficulties" in out and "only to a folder holding the same pipeline" in out
    assert (rundir / "run.sqlite").read_bytes() == stored


def test_add_judge_and_judge_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule", "baseline/always-1"], difficulties=["easy"])
    assert run_cli(pipeline, tmp_path / "dup", add_judges=["baseline/rule"]) == 2
    assert "--add-judge baseline/rule: already a judge of the pipeline" in capsys.readouterr().err
    assert not (tmp_path / "dup").exists()

    assert (
        run_cli(pipeline, tmp_path / "r", judges=["baseline/always-0"], add_judges=["baseline/ceiling"]) == 0
    )
    out = capsys.readouterr().out
    assert "--judge replaces the pipeline's 2 judge(s) (baseline/rule, baseline/always-1)" in out
    assert set(pd.read_parquet(tmp_path / "r" / "judgments.parquet").judge) == {
        "baseline/always-0",
        "baseline/ceiling",
    }
    help_text = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    assert "--add-judge" in help_text and "REPLACE the pipeline's judges" in help_text


# ---------------------------------------------------------------------------------- numeric flags, JSON
@pytest.mark.parametrize("value", ["-1", "nan", "inf", "-inf"])
def test_max_cost_is_held_to_the_pipeline_keys_rule(tmp_path: Path, value: str) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], difficulties=["easy"])
    rundir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(pipeline), "--out", str(rundir), "--max-cost", value])
    assert result.exit_code == 2, result.output
    assert "--max-cost" in result.output and "max_cost_usd" in result.output
    assert not rundir.exists()


@pytest.mark.parametrize("value", [".nan", ".inf", "-1"])
def test_the_pipeline_key_itself_refuses_them(tmp_path: Path, value: str) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], difficulties=["easy"])
    pipeline.write_text(pipeline.read_text() + f"max_cost_usd: {value}\n")
    result = CliRunner().invoke(app, ["run", str(pipeline), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "max_cost_usd" in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"timeout_s": 0}, "timeout_s"),
        ({"max_retries": -1}, "max_retries"),
        ({"concurrency": 0}, "concurrency"),
        ({"temperature": float("nan")}, "temperature"),
        ({"input_cost_per_token": -1e-6, "output_cost_per_token": 1e-6}, "input_cost_per_token"),
    ],
)
def test_model_numbers_are_checked(tmp_path: Path, entry: dict[str, Any], key: str) -> None:
    pipeline = write_pipeline(tmp_path, judges=[{"model": "baseline/rule", **entry}], difficulties=["easy"])
    result = CliRunner().invoke(app, ["run", str(pipeline), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and f"judges[0].{key}" in result.output, result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["report", "{run}", "--seed", "-1"],
        ["report", "{run}", "--resamples", "0"],
        ["compare", "{run}", "{run}", "--seed", "-2", "--out", "{out}"],
        ["human-sample", "{run}", "--n", "0", "--out", "{out}/s.csv"],
        ["human-sample", "{run}", "--seed", "-1", "--out", "{out}/s.csv"],
        ["human-agree", "{run}", "{out}/labels.csv", "--seed", "-1"],
    ],
)
def test_other_numeric_flags(tmp_path: Path, args: list[str]) -> None:
    run, out = tmp_path / "run", tmp_path / "out"
    run.mkdir()
    argv = [a.format(run=run, out=out) for a in args]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    flag = next(a for a in args if a in ("--seed", "--resamples", "--n"))
    assert f"error: {flag}" in result.output and "must be >=" in result.output
    assert not out.exists() and list(run.iterdir()) == []


def test_json_files_are_strict() -> None:
    assert strict_json.dumps({"a": float("nan"), "b": [1.0, float("inf")], "c": "NaN"}) == (
        '{"a": null, "b": [1.0, null], "c": "NaN"}'
    )


def test_run_files_parse_as_strict_json(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], difficulties=["easy"], max_cost_usd=1.5)
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    assert _strict(rundir / "meta.json")["pipeline"]["max_cost_usd"] == 1.5
    _strict(rundir / "run_summary.json")


# ------------------------------------------------------------------------------------------ Ctrl-C (issue 36)
def test_a_ctrl_c_after_the_run_said_done_keeps_exit_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C that lands while a finished run is being torn down (here: in the teardown's last step) is
    exit 0 with "done", never also "interrupted"."""
    import gc

    pipeline = write_pipeline(tmp_path)

    def late_ctrl_c() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(gc, "unfreeze", late_ctrl_c)  # runs in run_grid's finally, after "done"
    assert run_cli(pipeline, tmp_path / "run") == 0
    out = capsys.readouterr().out
    assert "done:" in out and "interrupted" not in out
    assert not (tmp_path / "run" / "run.lock").exists()


def test_a_ctrl_c_during_the_work_is_130_and_interrupted_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentjudge.runner import grid

    pipeline = write_pipeline(tmp_path)

    def ctrl_c(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(grid._Grid, "export", ctrl_c)  # the work is done, its files are not written yet
    assert run_cli(pipeline, tmp_path / "run") == 130
    printed = capsys.readouterr()
    assert "interrupted" in printed.err and "done:" not in printed.out + printed.err
    monkeypatch.undo()
    assert run_cli(pipeline, tmp_path / "run") == 0  # the re-run resumes and finishes
