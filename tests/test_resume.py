"""Resumability: a run killed with SIGKILL mid-grid and re-run equals an uninterrupted run, and no unit
that had finished is called again; a changed config is refused with a diff; --force-new starts over."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from test_runner import write_pipeline

from agentjudge.commands.run import run_cli
from agentjudge.rundir import RunFolder
from agentjudge.rundir.units import decode_result, store_units
from agentjudge.types import METRICS, JudgeRequest, JudgeResult

LOG_ENV = "AGENTJUDGE_TEST_JUDGE_LOG"
TESTS = Path(__file__).resolve().parent


class _LoggingJudge:
    """A slow judge that appends every call's coordinates to a log file (the call counter of this test)."""

    def __init__(self, name: str, delay: float) -> None:
        self.name = name
        self.delay = delay

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        await asyncio.sleep(self.delay)
        line = json.dumps([request.task.record_id, request.condition])
        with open(os.environ[LOG_ENV], "a", encoding="utf-8") as log:
            log.write(line + "\n")
        # A verdict that depends on the request, so rows from different units differ.
        value = 1.0 if request.gt is not None else (0.5 if len(request.calls) % 2 else 0.0)
        return JudgeResult(
            verdicts=dict.fromkeys(METRICS, value),
            parse_ok=True,
            rationales={m: f"{request.condition}" for m in METRICS},
        )


def make_logging_judge(settings: Any, client: Any) -> _LoggingJudge:
    return _LoggingJudge(settings.display_name, float(settings.extra.get("delay", 0.05)))


def _pipeline(folder: Path) -> Path:
    folder.mkdir()
    return write_pipeline(
        folder,
        difficulties=["easy", "medium", "hard"],
        generators=["sim/weak"],  # one generator: (record_id, condition) identifies a logger unit
        judges=[
            {
                "model": "test_resume:make_logging_judge",
                "name": "logger",
                "concurrency": 2,
                "extra": {"delay": 0.1},
            },
            "baseline/rule",
        ],
        conditions=["with_gt", "without_gt"],
    )


def _log(path: Path) -> Counter[str]:
    return Counter(path.read_text().splitlines()) if path.exists() else Counter()


LOGGER_DONE = [("stage", "==", "judge"), ("judge", "==", "logger"), ("status", "==", "done")]


def _done_logger_units(store: Path) -> int:
    """The logging judge's units stored as done so far (a run may be writing the store)."""
    try:
        units = store_units(store, ["stage"], LOGGER_DONE)
    except sqlite3.Error:
        return 0
    return 0 if units is None else len(units)


def _command(pipeline: Path, rundir: Path) -> list[str]:
    return [sys.executable, "-m", "agentjudge", "run", str(pipeline), "--out", str(rundir)]


def _env(log: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    env[LOG_ENV] = str(log)
    return env


def test_sigkill_then_resume_equals_uninterrupted_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = _pipeline(tmp_path / "p")
    units = 4 * 3 * 2  # records x difficulties x conditions, for the logging judge

    # Reference: uninterrupted, in process.
    ref_log = tmp_path / "ref.log"
    monkeypatch.setenv(LOG_ENV, str(ref_log))
    assert run_cli(pipeline, tmp_path / "ref") == 0
    assert sum(_log(ref_log).values()) == units

    # Interrupted: kill -9 once some (not all) of the logging judge's units are committed.
    rundir, log = tmp_path / "run", tmp_path / "run.log"
    proc = subprocess.Popen(
        _command(pipeline, rundir), env=_env(log), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while _done_logger_units(rundir / "run.sqlite") < 8:
        assert proc.poll() is None, f"run ended before it could be killed: {proc.stderr.read()!r}"  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    done_at_kill = _done_logger_units(rundir / "run.sqlite")
    assert 8 <= done_at_kill < units, "kill came too late to test resuming"
    assert not (rundir / "judgments.parquet").exists()
    stored = store_units(rundir / "run.sqlite", ["record_id", "condition"], LOGGER_DONE)  # no export yet
    assert stored is not None
    finished = {json.dumps([r[0], r[1]]) for r in stored.itertuples(index=False)}

    # Resume with the same command.
    done = subprocess.run(
        _command(pipeline, rundir), env=_env(log), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr

    for name in ("predictions", "scores", "judgments"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "ref" / f"{name}.parquet"), pd.read_parquet(rundir / f"{name}.parquet")
        )
    judg = pd.read_parquet(rundir / "judgments.parquet")
    key = [
        "record_id",
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
        "scoring_mode",
    ]
    assert not judg.duplicated(subset=key).any()
    assert len(judg[judg.judge == "logger"]) == units * 4 * 2

    calls = _log(log)
    assert set(calls) == set(_log(ref_log)) and len(calls) == units  # every unit was called
    assert len(finished) == done_at_kill
    # No unit committed before the kill was called again; only the (at most two) in-flight ones repeat.
    assert all(calls[unit] == 1 for unit in finished)
    assert sum(calls.values()) - units <= 2


def _edit(pipeline: Path, **fields: Any) -> None:
    data = yaml.safe_load(pipeline.read_text())
    data.update(fields)
    pipeline.write_text(yaml.safe_dump(data, sort_keys=False))


def test_changed_config_is_refused_with_a_diff_and_force_new_archives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], difficulties=["easy"])
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    before = pd.read_parquet(rundir / "judgments.parquet")
    capsys.readouterr()

    _edit(pipeline, judges=["baseline/rule", "baseline/always-0.5"], concurrency=2)  # concurrency is cosmetic
    assert run_cli(pipeline, rundir) == 2
    out = capsys.readouterr().err
    assert "different configuration" in out
    assert "judges[1].model: 'baseline/always-0.5' (added)" in out
    assert "concurrency" not in out.split("Changes")[1]
    pd.testing.assert_frame_equal(before, pd.read_parquet(rundir / "judgments.parquet"))  # untouched

    # A cosmetic-only change is not refused.
    _edit(pipeline, judges=["baseline/rule"], name="renamed", concurrency=3)
    assert run_cli(pipeline, rundir) == 0

    _edit(pipeline, judges=["baseline/rule", "baseline/always-0.5"])
    assert run_cli(pipeline, rundir, force_new=True) == 0
    archived = list((rundir / "archive").iterdir())
    assert len(archived) == 1 and (archived[0] / "run.sqlite").is_file()
    assert (archived[0] / "judgments.parquet").is_file()
    after = pd.read_parquet(rundir / "judgments.parquet")
    assert set(after.judge) == {"baseline/rule", "baseline/always-0.5"}
    pd.testing.assert_frame_equal(
        before.reset_index(drop=True), after[after.judge == "baseline/rule"].reset_index(drop=True)
    )


def test_failed_units_are_retried_on_rerun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flag = tmp_path / "fail"
    flag.write_text("1")
    monkeypatch.setenv("AGENTJUDGE_TEST_FAIL_FLAG", str(flag))
    pipeline = write_pipeline(
        tmp_path, judges=["test_resume:make_flaky_judge"], difficulties=["easy"], conditions=["with_gt"]
    )
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 1
    judg = pd.read_parquet(rundir / "judgments.parquet")
    assert judg.verdict.isna().all() and judg.judge_error.str.contains("provider down").all()
    assert not judg.parse_ok.any()
    flag.unlink()
    assert run_cli(pipeline, rundir) == 0
    judg = pd.read_parquet(rundir / "judgments.parquet")
    assert judg.judge_error.isna().all() and (judg.verdict == 1.0).all()
    attempts = set(RunFolder.open(rundir).units(["attempts"], [("stage", "==", "judge")])["attempts"])
    assert attempts == {2}


class _FlakyJudge:
    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        if Path(os.environ["AGENTJUDGE_TEST_FAIL_FLAG"]).exists():
            return JudgeResult(
                verdicts=dict.fromkeys(METRICS), parse_ok=False, error="provider down (scripted)"
            )
        return JudgeResult(verdicts=dict.fromkeys(METRICS, 1.0), parse_ok=True)


def make_flaky_judge(settings: Any, client: Any) -> _FlakyJudge:
    return _FlakyJudge(settings.display_name)


@pytest.mark.slow  # two more subprocess runs; the SIGKILL test above covers resuming in the fast suite
def test_ctrl_c_keeps_finished_units_and_resumes(tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path / "p")
    rundir, log = tmp_path / "run", tmp_path / "run.log"
    proc = subprocess.Popen(
        _command(pipeline, rundir), env=_env(log), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 60
    while _done_logger_units(rundir / "run.sqlite") < 4:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out
    assert "re-run the same command to resume" in out
    done_at_interrupt = _done_logger_units(rundir / "run.sqlite")
    assert done_at_interrupt >= 4
    done = subprocess.run(
        _command(pipeline, rundir), env=_env(log), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    judg = pd.read_parquet(rundir / "judgments.parquet")
    assert len(judg[judg.judge == "logger"]) == 4 * 3 * 2 * 4 * 2
    assert sum(_log(log).values()) - 4 * 3 * 2 <= 2  # finished units were not called again


# ------------------------------------------------------------------------------ group commits (issue 15)
def _key(i: int) -> Any:
    from agentjudge.runner.store import UnitKey

    return UnitKey("judge", f"r-{i:05d}:easy", "easy", "sim/weak", 0, "j", "with_gt", "v", "default", 0)


def test_store_commits_fast_units_in_groups_and_close_commits_the_rest(tmp_path: Path) -> None:
    from agentjudge.runner.store import RunStore

    store = RunStore(tmp_path / "run.sqlite")
    for i in range(3000):
        store.finish(_key(i), "done", {"verdicts": {"tool": 1.0}, "parse_ok": True}, None, "t0")
    groups = store.flushes
    store.close()  # commits the open group
    assert 1 <= groups < 3000 // 5, groups  # many units per transaction, not one each
    store = RunStore(tmp_path / "run.sqlite")
    assert store.counts("judge") == Counter({"done": 3000})
    store.finish(_key(7), "failed", None, "server after 5 attempt(s): 503", "t1")  # a re-run of one unit
    store.close()
    with sqlite3.connect(tmp_path / "run.sqlite") as db:
        rows = db.execute("SELECT COUNT(*), SUM(attempts) FROM units").fetchone()
        stored = db.execute("SELECT result FROM units WHERE record_id = 'r-00001:easy'").fetchone()[0]
    result = decode_result(stored)
    assert rows == (3000, 3001)  # upsert on the coordinates: never two rows for one unit
    assert result == '{"verdicts":{"tool":1.0},"parse_ok":true}'  # compact: no whitespace


def test_units_of_model_calls_are_committed_in_groups_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Units finishing every 10 ms (model calls) share a commit: a small group stays open at least a quarter
    of ``flush_interval_s``, however cheap its commit; none waits longer than ``flush_interval_s``; fast units
    are committed by the commit's cost alone once a group has ``MIN_GROUP_UNITS``."""
    from agentjudge.runner import store as store_module

    clock = [1000.0]
    monkeypatch.setattr(store_module.time, "monotonic", lambda: clock[0])
    store = store_module.RunStore(tmp_path / "run.sqlite")  # flush_interval_s 0.2
    for i in range(20):
        clock[0] += 0.01
        store.finish(_key(i), "done", {"i": i}, None, "t0")
    assert 3 <= store.flushes <= 5, store.flushes  # 200 ms of units: a commit per 50 ms, not 20
    clock[0] += 0.01
    store.finish(_key(20), "done", {"i": 20}, None, "t0")
    clock[0] += 0.2
    store.flush_if_due()  # the runner's timer
    assert store.pending == 0
    before = store.flushes
    for i in range(21, 121):  # fast units (0.1 ms apart): a group of 8 is committed as before, not held
        clock[0] += 0.0001
        store.finish(_key(i), "done", {"i": i}, None, "t0")
    assert store.flushes - before == 100 // 8, store.flushes - before


_KILL_ONE_OPEN_GROUP = """
import os, signal, sys
from agentjudge.runner.store import RunStore, UnitKey
store = RunStore(sys.argv[1], flush_interval_s=3600)
key = lambda i: UnitKey("judge", f"r-{i:05d}:easy", "easy", "g", 0, "j", "with_gt", "v", "default", 0)
for i in range(50):
    store.finish(key(i), "done", {"i": i}, None, "t0")
store.flush()
for i in range(50, 80):  # the open group: never committed
    store.finish(key(i), "done", {"i": i}, None, "t0")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_process_loses_only_its_open_group(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    proc = subprocess.run([sys.executable, "-c", _KILL_ONE_OPEN_GROUP, str(path)], capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with sqlite3.connect(path) as db:
        ids = sorted(
            json.loads(decode_result(r[0]) or "")["i"] for r in db.execute("SELECT result FROM units")
        )
    assert ids == list(range(50))


def test_sigkill_with_group_commits_repeats_only_the_open_group(tmp_path: Path) -> None:
    """Fast units (thousands a second) are committed in groups; after kill -9 a re-run calls exactly the
    units that were finished but not committed, once more, and no committed unit again."""
    folder = tmp_path / "p"
    folder.mkdir()
    trials = 60
    pipeline = write_pipeline(
        folder,
        difficulties=["easy", "medium", "hard"],
        generators=["sim/weak"],
        judges=[
            {
                "model": "test_resume:make_logging_judge",
                "name": "logger",
                "concurrency": 8,
                "extra": {"delay": 0.0},
            }
        ],
        conditions=["with_gt", "without_gt"],
        trials=trials,
        concurrency=8,
    )
    units = 4 * 3 * 2 * trials
    rundir, log = tmp_path / "run", tmp_path / "run.log"
    proc = subprocess.Popen(
        _command(pipeline, rundir), env=_env(log), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 90
    while _done_logger_units(rundir / "run.sqlite") < units // 4:
        assert proc.poll() is None, f"run ended before it could be killed: {proc.stderr.read()!r}"  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    calls_before = _log(log)
    stored = store_units(rundir / "run.sqlite", ["record_id", "condition"], LOGGER_DONE)  # no export yet
    assert stored is not None
    committed = Counter(json.dumps([r[0], r[1]]) for r in stored.itertuples(index=False))
    assert units // 4 <= sum(committed.values()) < units, "kill came too late to test resuming"
    # the logging judge writes a line when a call returns; (record_id, condition) repeats across trials,
    # so compare counts: every committed unit was called, the difference is the open group
    assert all(calls_before[u] >= n for u, n in committed.items())
    lost = sum(calls_before.values()) - sum(committed.values())

    done = subprocess.run(
        _command(pipeline, rundir), env=_env(log), capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    calls = _log(log)
    repeated = sum(calls.values()) - units
    assert repeated == lost  # exactly the finished-but-uncommitted units were run again, nothing else
    assert lost < units // 4  # a group, not the run
    judg = pd.read_parquet(rundir / "judgments.parquet")
    assert len(judg) == units * 4 * 2
    assert not judg.duplicated(subset=["record_id", "condition", "trial", "metric", "scoring_mode"]).any()
    judge_units = RunFolder.open(rundir).units(["attempts"], [("stage", "==", "judge")])
    assert (len(judge_units), judge_units["attempts"].max()) == (units, 1)


def test_rerun_of_a_finished_grid_only_checks_and_exits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import agentjudge.runner.run as grid  # where the invocation reads its dataset

    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], difficulties=["easy"])
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    names = ("run.sqlite", "meta.json", "predictions.parquet", "scores.parquet", "judgments.parquet")
    stamps = {n: (rundir / n).stat().st_mtime_ns for n in names}
    capsys.readouterr()

    def no_reading(*_: Any, **__: Any) -> Any:
        raise AssertionError("a finished grid's dataset was read again")

    monkeypatch.setattr(grid, "load_dataset", no_reading)
    assert run_cli(pipeline, rundir) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert {n: (rundir / n).stat().st_mtime_ns for n in names} == stamps  # nothing rewritten
    monkeypatch.undo()

    (rundir / "judgments.parquet").unlink()  # a missing output is rebuilt by the full path
    assert run_cli(pipeline, rundir) == 0
    assert "nothing to do" not in capsys.readouterr().out
    assert (rundir / "judgments.parquet").is_file()
    with sqlite3.connect(rundir / "run.sqlite") as db:  # a unit changed since the export: not finished
        db.execute(
            "UPDATE units SET status = 'failed', error = 'x' WHERE rowid = (SELECT MAX(rowid) FROM units)"
        )
        db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'store_version'")
    assert run_cli(pipeline, rundir) == 0
    assert "nothing to do" not in capsys.readouterr().out


def test_a_run_with_failures_is_not_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flag = tmp_path / "fail"
    flag.write_text("1")
    monkeypatch.setenv("AGENTJUDGE_TEST_FAIL_FLAG", str(flag))
    pipeline = write_pipeline(
        tmp_path, judges=["test_resume:make_flaky_judge"], difficulties=["easy"], conditions=["with_gt"]
    )
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 1
    assert run_cli(pipeline, rundir) == 1  # retried (and failed again), not skipped as finished
    flag.unlink()
    assert run_cli(pipeline, rundir) == 0
