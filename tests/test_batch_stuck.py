"""A resumed batch run ends even when its store says that requests wait for something that will never come.

The grid's batch loop ran while requests were open, and ``settle`` returns only once every batch of the run
is final and read; a request left "submitted" to a batch that has no row (or one already read), or owned by
a model that is no longer in batch mode, was neither sent nor polled, so the loop went round forever. Such
states came from the broker's older, non-atomic writes (tests/test_batch_atomic.py) and could come from any
later bug. Now the broker queues those requests again when it starts (saying so), a request a batch model
of the run asks for is taken over from a model that no longer sends batches, and a round that makes no
progress at all fails the waiting units with an error that says what to do, instead of spinning.

Each test plants its state in a real run's store (submitted to the loopback server, stopped while polling)
and bounds the resumed run's rounds (``_bounded_settle``): the code before the fix fails instead of hanging.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fakeserver import FakeLLM
from test_batch import FAST_POLL, UNITS, _judge, _pipeline, _responder, _stable
from test_batch_atomic import _bounded_settle, _Spinning
from test_runner import read, write_pipeline

from agentjudge.commands.run import run_cli
from agentjudge.runner.batches import BatchBroker


def _fresh_provider(fake: FakeLLM) -> None:
    """A provider that has seen nothing (its file and batch ids start again at 0)."""
    fake.reset()
    with fake._lock:
        fake.files.clear()
        fake.batches.clear()
    fake.set_responder(_responder)


def _stopped_while_polling(pipeline: Path, rundir: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> None:
    """A run that submitted its batch (batch_fake_0) and was stopped (Ctrl-C) while polling it."""

    async def ctrl_c(self: BatchBroker, batches: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(BatchBroker, "_poll", ctrl_c)
        assert run_cli(pipeline, rundir, **kw) == 130


def _execute(store: Path, *statements: str) -> None:
    db = sqlite3.connect(store, isolation_level=None)
    try:
        for sql in statements:
            db.execute(sql)
    finally:
        db.close()


def _keys(store: Path) -> list[str]:
    db = sqlite3.connect(store)
    try:
        return sorted(k for (k,) in db.execute("SELECT cache_key FROM batch_requests"))
    finally:
        db.close()


def _input_lines(fake: FakeLLM, batch_id: str) -> list[str]:
    """The custom_id of every request line of one batch's input file."""
    data = fake.files[fake.batches[batch_id]["input_file_id"]].decode()
    return sorted(json.loads(line)["custom_id"] for line in data.splitlines() if line.strip())


DAMAGE = {
    # requests "submitted" to a batch whose row is gone (the older code's failed submission or renaming,
    # interrupted halfway)
    "batch_missing": ("DELETE FROM batches", "DELETE FROM batch_members"),
    # requests "submitted" to a batch already read: no invocation polls it again
    "batch_collected": ("UPDATE batches SET collected = 1",),
}


def _bounded_run(pipeline: Path, rundir: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> int:
    """``run_cli``'s exit code, the run's rounds of ``settle`` bounded (``_bounded_settle``)."""
    with monkeypatch.context() as patch:
        _bounded_settle(patch)
        return run_cli(pipeline, rundir, **kw)


def _never_polling_run(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, nothing_open: bool = False
) -> tuple[Path, Path]:
    """A batch run whose broker never polls the batches it submits (a stand-in for any bug that leaves
    requests open with nothing to answer them); ``nothing_open``: nor does it see an open request to fail.
    It must end (exit 1) instead of going round for ever. Returns its pipeline and run folder."""
    _fresh_provider(fake_llm)
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True)
    rundir = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(BatchBroker, "_open_batches", lambda self: [])
        if nothing_open:
            patch.setattr(BatchBroker, "_open_rows", lambda self: [], raising=False)
        _bounded_settle(patch)
        assert run_cli(pipeline, rundir) == 1
    return pipeline, rundir


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_requests_waiting_for_a_batch_no_invocation_reads_are_queued_again_once_and_the_run_ends(
    damage: str,
    tmp_path: Path,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _fresh_provider(fake_llm)
    assert run_cli(_pipeline(tmp_path / "ref", fake_llm, batch=True), tmp_path / "undamaged") == 0
    reference = _stable(read(tmp_path / "undamaged", "judgments"))

    _fresh_provider(fake_llm)
    fake_llm.hold_batches = True
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True)
    rundir = tmp_path / "run"
    _stopped_while_polling(pipeline, rundir, monkeypatch)
    keys = _keys(rundir / "run.sqlite")
    assert len(keys) == UNITS and fake_llm.batches_created == 1 and fake_llm.requests == []
    _execute(rundir / "run.sqlite", *DAMAGE[damage])
    capsys.readouterr()

    fake_llm.hold_batches = False
    assert _bounded_run(pipeline, rundir, monkeypatch) == 0
    out = capsys.readouterr().out
    notice = (
        f"{UNITS} request(s) of judge were waiting for a batch that no invocation will read; queued again "
        "(the provider may have billed that send: it counts among the requests, and the new one as a retry, "
        "batch_lost)"
    )
    assert out.count(notice) == 1, out
    # each request sent again exactly once, in one new batch; the first batch was never read (nor run)
    assert fake_llm.batches_created == 2 and _input_lines(fake_llm, "batch_fake_1") == keys
    assert len(fake_llm.requests) == UNITS
    pd.testing.assert_frame_equal(_stable(read(rundir, "judgments")), reference)
    # both sends of each request are requests (the first was received by the provider, which may have run
    # and billed it), the second a retry: before, 32 requests and no retry for 16 calls, unexplained
    judge = json.loads((rundir / "run_summary.json").read_text())["per_model"]["judge"]
    assert judge["this_invocation"]["calls"] == UNITS
    assert judge["this_invocation"]["requests"] == 2 * UNITS
    assert judge["this_invocation"]["retries_by_kind"] == {"batch_lost": UNITS}
    assert judge["all_invocations"] == {"requests": 2 * UNITS, "retries_by_kind": {"batch_lost": UNITS}}


def _two_judges(folder: Path, fake: FakeLLM, batch: tuple[bool, bool]) -> Path:
    """judge-a and judge-b: one model, the same settings, so the same requests (cache keys)."""
    folder.mkdir(exist_ok=True)
    judges = [
        _judge(fake, on) | {"name": name} for name, on in zip(("judge-a", "judge-b"), batch, strict=True)
    ]
    return write_pipeline(
        folder,
        generators=["sim/perfect"],
        judges=judges,
        conditions=["with_gt", "without_gt"],
        cache="cache.sqlite",
        **FAST_POLL,
    )


def test_requests_left_by_a_model_now_run_direct_are_sent_for_the_batch_model_that_asks_them(
    tmp_path: Path,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # judge-a ran in batch mode and left its requests submitted; it now runs direct (``batch`` is not
    # hashed: the same run folder), and judge-b, in batch mode, asks the same requests. The run does not read
    # the call cache (--no-cache; reading it, judge-b would take judge-a's direct answers and never wait).
    _fresh_provider(fake_llm)
    now = (False, True)
    assert run_cli(_two_judges(tmp_path / "ref", fake_llm, now), tmp_path / "undamaged", no_cache=True) == 0
    reference = _stable(read(tmp_path / "undamaged", "judgments"))
    assert set(reference.judge) == {"judge-a", "judge-b"}

    _fresh_provider(fake_llm)
    fake_llm.hold_batches = True
    rundir = tmp_path / "run"
    _stopped_while_polling(_two_judges(tmp_path / "before", fake_llm, (True, True)), rundir, monkeypatch)
    keys = _keys(rundir / "run.sqlite")
    assert len(keys) == UNITS and fake_llm.batches_created == 1 and fake_llm.requests == []
    # every request and the batch are judge-a's (whichever judge asked first queued it)
    _execute(
        rundir / "run.sqlite",
        "UPDATE batch_requests SET model = 'judge-a'",
        "UPDATE batches SET model = 'judge-a'",
    )
    capsys.readouterr()

    fake_llm.hold_batches = False
    pipeline = _two_judges(tmp_path / "p", fake_llm, now)
    assert _bounded_run(pipeline, rundir, monkeypatch, no_cache=True) == 0
    out = capsys.readouterr().out
    notice = (
        f"{UNITS} request(s) of judge-b were left to judge-a, which does not send batches in this run; "
        "queued again"
    )
    assert out.count(notice) == 1, out
    # judge-b's requests sent again exactly once, in one new batch (judge-a's batch is not polled); judge-a's
    # calls went direct
    assert fake_llm.batches_created == 2 and _input_lines(fake_llm, "batch_fake_1") == keys
    assert sum(p.startswith("batch:") for p in fake_llm.paths) == UNITS
    assert len(fake_llm.requests) == 2 * UNITS
    pd.testing.assert_frame_equal(_stable(read(rundir, "judgments")), reference)


@pytest.mark.parametrize("requests_open", [True, False], ids=["requests_failed", "nothing_to_fail"])
def test_a_round_without_progress_fails_the_waiting_units_with_what_to_do_and_a_rerun_finishes(
    requests_open: bool,
    tmp_path: Path,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a broker that never polls the batches it submits (a stand-in for any bug that leaves requests open
    # with nothing to answer them): the batch loop stops instead of going round forever. Its open requests
    # fail and the units receive that failure; ``nothing_to_fail``: the broker finds no open request to fail
    # either (the units wait for something it does not see), so the grid fails the units itself
    pipeline, rundir = _never_polling_run(tmp_path, fake_llm, monkeypatch, nothing_open=not requests_open)
    out = capsys.readouterr().out
    judg = read(rundir, "judgments")
    assert judg.groupby(["record_id", "condition"]).ngroups == UNITS
    # every unit failed with the explanation; no verdict was made up for any of them
    if requests_open:
        # (0 attempts: its send is counted by the invocation that reads its answer, see the last test)
        assert judg.judge_error.str.startswith("batch_stuck after 0 attempt(s): batch mode: ").all()
        assert judg.judge_error.str.endswith("(sent in batch batch_fake_0, kept for the re-run)").all()
        assert f"{UNITS} request(s) of judge could not be answered: batch mode: " in out
    else:
        assert judg.judge_error.str.startswith("batch_stuck: batch mode: the judge unit waits").all()
    advice = "re-run the same command (it reads the request's batch"
    assert judg.judge_error.str.contains(advice, regex=False).all()
    assert judg.verdict.isna().all() and not judg.parse_ok.any()
    # the end of the run says it like every failure: by model and reason, and what to do
    assert "judge: batch x" in out and f"{UNITS} unit(s) failed, 0 not run; re-run the same command" in out
    assert fake_llm.batches_created == 1 and fake_llm.requests == []

    # as the error says, a re-run sends them again (or reads the batch) and finishes
    assert _bounded_run(pipeline, rundir, monkeypatch) == 0
    judg = read(rundir, "judgments")
    assert judg.judge_error.isna().all() and judg.parse_ok.all()


def test_open_requests_counts_only_this_runs_batch_models(tmp_path: Path, fake_llm: FakeLLM) -> None:
    store = tmp_path / "run.sqlite"
    settings = fake_llm.settings(name="judge", batch=True)
    broker = BatchBroker(store, {"judge": settings}, say=lambda _: None)
    rows = [
        ("k1", "judge", "queued"),
        ("k2", "judge", "submitted"),
        ("k3", "judge", "done"),
        ("k4", "now-direct", "queued"),  # a model of this store that no longer sends batches
        ("k5", "now-direct", "submitted"),
    ]
    broker.store.db.executemany(
        "INSERT INTO batch_requests (cache_key, model, state, line, units) VALUES (?, ?, ?, '{}', '[]')", rows
    )
    assert broker.open_requests() == 2
    broker.close()


def test_recovery_queues_again_only_requests_of_this_runs_models_whose_batch_nobody_polls(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    import asyncio

    store = tmp_path / "run.sqlite"
    settings = fake_llm.settings(name="judge", batch=True)
    said: list[str] = []
    broker = BatchBroker(store, {"judge": settings}, say=said.append)
    batches = [("b-open", "judge", 0), ("b-read", "judge", 1), ("b-other", "now-direct", 0)]
    broker.store.db.executemany(
        "INSERT INTO batches (batch_id, model, state, collected, created_at, updated_at) "
        "VALUES (?, ?, 'in_progress', ?, '', '')",
        batches,
    )
    rows = [
        ("open", "judge", "b-open"),  # polled by this run: left alone
        ("read", "judge", "b-read"),  # its batch already read
        ("gone", "judge", "b-gone"),  # its batch has no row
        ("other", "judge", "b-other"),  # its batch is of a model this run does not poll
        ("foreign", "now-direct", "b-gone"),  # not this run's: left to the model that asks it (defer)
    ]
    broker.store.db.executemany(
        "INSERT INTO batch_requests (cache_key, model, state, batch_id, line, units, submissions) "
        "VALUES (?, ?, 'submitted', ?, '{}', '[]', 1)",
        rows,
    )
    asyncio.run(broker._recover())
    states = dict(
        broker.store.db.execute("SELECT cache_key, state || ':' || IFNULL(batch_id, '') FROM batch_requests")
    )
    broker.close()
    assert states == {
        "open": "submitted:b-open",
        "read": "queued:",
        "gone": "queued:",
        "other": "queued:",
        "foreign": "submitted:b-gone",
    }
    assert said == [
        "3 request(s) of judge were waiting for a batch that no invocation will read; queued again (the "
        "provider may have billed that send: it counts among the requests, and the new one as a retry, "
        "batch_lost)"
    ]


def test_a_request_failed_by_a_round_without_progress_is_answered_by_its_open_batch_on_the_rerun(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the broker submitted the batch but (a bug) never polled it, so the round made no progress and
    # ``fail_open`` failed its requests for this run. The batch is still open at the provider, which runs and
    # bills its lines: the re-run takes their answers from it instead of sending the requests again (before,
    # it polled that batch, dropped its answers and sent every request in a second batch: paid twice)
    pipeline, rundir = _never_polling_run(tmp_path, fake_llm, monkeypatch)
    assert fake_llm.batches_created == 1 and fake_llm.requests == []
    keys = _keys(rundir / "run.sqlite")
    capsys.readouterr()

    assert _bounded_run(pipeline, rundir, monkeypatch) == 0
    judg = read(rundir, "judgments")
    assert judg.judge_error.isna().all() and judg.parse_ok.all()
    # one batch, each line run once by the provider: nothing sent (or paid for) twice
    assert fake_llm.batches_created == 1 and fake_llm.uploads == 1
    assert _input_lines(fake_llm, "batch_fake_0") == keys
    assert len(fake_llm.requests) == UNITS
    summary = json.loads((rundir / "run_summary.json").read_text())
    # each send counted once over the two invocations, by the one that read its answer
    assert summary["per_model"]["judge"]["all_invocations"]["requests"] == UNITS


def test_queued_requests_no_submission_takes_end_the_run_instead_of_spinning_inside_settle(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a submission that neither sends its requests nor fails them (a stand-in for any bug that leaves
    # requests queued): ``settle`` went round "sleep, submit" for ever inside one call, where the grid's check
    # of each round cannot see it (``_bounded_settle`` bounds calls of settle, not passes inside one). Now a
    # pass that submits, fails and retries nothing ends settle, and the grid's round fails the units
    _fresh_provider(fake_llm)
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True)
    rundir = tmp_path / "run"
    passes = [0]

    async def submit_nothing(self: BatchBroker) -> None:
        passes[0] += 1
        if passes[0] > 50:
            raise _Spinning(f"{passes[0]} submission passes; queued: {len(self._queued())}")

    with monkeypatch.context() as patch:
        patch.setattr(BatchBroker, "_submit_queued", submit_nothing)
        _bounded_settle(patch)
        assert run_cli(pipeline, rundir) == 1
    out = capsys.readouterr().out
    assert passes[0] <= 3, passes
    assert f"{UNITS} queued request(s) could not be submitted; not waiting for them" in out
    judg = read(rundir, "judgments")
    assert judg.judge_error.str.startswith("batch_stuck after 0 attempt(s): batch mode: ").all()
    assert judg.verdict.isna().all() and fake_llm.batches_created == 0

    # the requests were never sent: the re-run (without the bug) sends them, once
    assert _bounded_run(pipeline, rundir, monkeypatch) == 0
    assert fake_llm.batches_created == 1 and len(fake_llm.requests) == UNITS


@pytest.mark.parametrize("failures", [2, 99], ids=["transient", "persistent"])
def test_a_submission_that_fails_retryably_is_tried_again_up_to_max_retries_then_fails(
    failures: int, tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the other side of the check above: a pass whose submission failed with a retryable kind made progress
    # (the requests are queued again, each try said), so settle waits and tries again, ``max_retries`` times
    from agentjudge.models.batch import BatchAPI

    _fresh_provider(fake_llm)
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True, judge_fields={"max_retries": 3})
    tries = [0]
    real = BatchAPI.upload

    async def upload(self: BatchAPI, data: bytes, filename: str) -> str:
        tries[0] += 1
        if tries[0] <= failures:
            raise TimeoutError("upload timed out")
        return await real(self, data, filename)

    with monkeypatch.context() as patch:
        patch.setattr(BatchAPI, "upload", upload)
        _bounded_settle(patch)
        code = run_cli(pipeline, tmp_path / "run")
    judg = read(tmp_path / "run", "judgments")
    if failures == 2:
        assert code == 0 and tries[0] == 3 and judg.judge_error.isna().all()
    else:  # the first try and the judge's max_retries (3) more
        assert code == 1 and tries[0] == 4 and fake_llm.batches_created == 0
        assert judg.judge_error.str.startswith("timeout after 4 attempt(s): batch submission failed").all()


def test_a_store_written_before_retries_were_kept_opens_and_answers(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    # run.sqlite of an older version: batch_requests without the ``retries`` column
    store = tmp_path / "run.sqlite"
    _execute(
        store,
        "CREATE TABLE batch_requests (cache_key TEXT PRIMARY KEY, model TEXT NOT NULL, state TEXT NOT NULL, "
        "batch_id TEXT, line TEXT NOT NULL, units TEXT NOT NULL, submissions INTEGER NOT NULL DEFAULT 0, "
        "answer TEXT, error_kind TEXT, error TEXT, delivered_to TEXT)",
        "INSERT INTO batch_requests (cache_key, model, state, line, units, submissions, answer) "
        "VALUES ('k', 'judge', 'done', '{}', '[]', 2, '{\"id\": \"x\"}')",
    )
    broker = BatchBroker(store, {"judge": fake_llm.settings(name="judge", batch=True)}, say=lambda _: None)
    try:
        answer = broker.answer("k")
        assert answer is not None and (answer.state, answer.submissions, answer.retries) == ("done", 2, {})
    finally:
        broker.close()
