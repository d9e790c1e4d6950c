"""Nothing hangs: a server that takes connections and never answers stops its model after one call's
retries, ``--probe`` gives up on it quickly, Ctrl-C stops every verb at once with exit 130 and no traceback,
also when the verb was started as a background job of a script (items 8 and 9; SIGINT left ignored).

A shell running a script starts ``cmd &`` with SIGINT ignored; Python keeps that, so before the fix
``agentjudge view`` (and every other verb) could not be stopped with Ctrl-C or ``kill -INT`` there.
``harness.spawn(..., ignore_sigint=True)`` starts a verb that way.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from conftest import write_pipeline
from fakeserver import TEST_KEY_ENV, FakeLLM
from harness import child_env, cli, finish, no_traceback, refused, spawn


def _hanging_judge(fake: FakeLLM, **over: object) -> dict[str, object]:
    fake.hang_next(seconds=60, times=10_000)  # every chat request stalls; GET /models answers
    return {
        "model": "openai/test-model",
        "name": "silent",
        "api_base": fake.base_url,
        "api_key_env": TEST_KEY_ENV,
        "timeout_s": 0.5,
        "max_retries": 2,
        "concurrency": 1,
        **over,
    }


def test_a_server_that_never_answers_stops_its_model_after_the_first_calls_retries(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    pipeline = write_pipeline(
        tmp_path, generators=["sim/perfect"], judges=[_hanging_judge(fake_llm)], conditions=["with_gt"]
    )
    started = time.monotonic()
    o = cli("run", pipeline, "--out", tmp_path / "run")
    no_traceback(o)
    assert o.code == 1, o.err + o.out
    assert len(fake_llm.requests) == 3  # one call's attempts (1 + max_retries); the other 7 units unsent
    assert "stopped" in o.out and "silent" in o.out
    assert time.monotonic() - started < 15


def test_probe_gives_up_on_a_silent_server_after_its_own_short_timeout(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentjudge.registry import preflight

    monkeypatch.setattr(preflight, "PROBE_TIMEOUT_S", 1.0, raising=False)
    judge = _hanging_judge(fake_llm, timeout_s=8.0, max_retries=4)
    pipeline = write_pipeline(tmp_path, generators=["sim/perfect"], judges=[judge])
    started = time.monotonic()
    o = cli("run", pipeline, "--out", tmp_path / "run", "--probe", "--dry-run")
    elapsed = time.monotonic() - started
    refused(o, "--probe", "silent" if "silent" in o.err else "openai/test-model", max_lines=2)
    assert elapsed < 4.5, elapsed
    assert len(fake_llm.requests) == 1


def _wait_for(proc: object, predicate: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert proc.poll() is None, "the verb ended early"  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def test_view_started_with_sigint_ignored_stops_on_sigint(finished_run: Path) -> None:
    proc = spawn("view", finished_run, ignore_sigint=True)
    assert proc.stdout is not None
    lines = [proc.stdout.readline(), proc.stdout.readline()]  # "viewing …", "open http://…"
    assert lines[1].startswith("open http://127.0.0.1:"), lines
    proc.send_signal(signal.SIGINT)
    o = finish(proc, timeout=10)
    assert o.code == 0 and "stopped" in o.out, o.err
    no_traceback(o)


@pytest.mark.parametrize("ignored", [False, True], ids=["ctrl-c", "ctrl-c-in-background"])
def test_generate_stops_at_the_first_ctrl_c_with_130_and_writes_nothing(
    tmp_path: Path, ignored: bool
) -> None:
    """``--size full`` works in a pool of processes for minutes; Ctrl-C reaches the whole process group."""
    out = tmp_path / "full"
    proc = spawn("generate", "--out", out, "--size", "full", ignore_sigint=ignored, new_session=True)
    time.sleep(4.0)  # well into the pool's work
    assert proc.poll() is None
    os.killpg(proc.pid, signal.SIGINT)
    started = time.monotonic()
    o = finish(proc, timeout=30)
    assert o.code == 130, o.err[-2000:]
    assert time.monotonic() - started < 5
    no_traceback(o)
    assert o.err.strip() == "interrupted"
    assert not out.exists() or not any(out.iterdir())


def test_run_started_with_sigint_ignored_stops_on_sigint_and_resumes(tmp_path: Path) -> None:
    slow = {
        "model": "test_resume:make_logging_judge",
        "name": "logger",
        "concurrency": 1,
        "extra": {"delay": 0.2},
    }
    pipeline = write_pipeline(tmp_path, judges=[slow], conditions=["with_gt"])
    run = tmp_path / "run"
    env = child_env(
        AGENTJUDGE_TEST_JUDGE_LOG=str(tmp_path / "log"), AGENTJUDGE_CACHE=str(tmp_path / "c.sqlite")
    )
    proc = spawn("run", pipeline, "--out", run, env=env, ignore_sigint=True)
    _wait_for(
        proc, lambda: (tmp_path / "log").exists() and len((tmp_path / "log").read_text().splitlines()) >= 2
    )
    proc.send_signal(signal.SIGINT)
    o = finish(proc, timeout=30)
    assert o.code == 130, o.err[-2000:] + o.out[-2000:]
    no_traceback(o)
    assert "re-run the same command to resume" in o.err
    proc = spawn("run", pipeline, "--out", run, env=env)
    assert finish(proc, timeout=120).code == 0
