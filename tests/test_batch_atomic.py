"""Batch mode's bookkeeping is all-or-nothing: a Ctrl-C or a killed process in the middle of a change that
takes several statements keeps none of it, and the next invocation does that step again and completes.

The broker's connection to run.sqlite is autocommit (``isolation_level=None``); a ``with connection:`` block
then begins no transaction, so each statement used to be kept on its own: a batch renamed without its
requests (collected with none of them: the run then waited for them forever), a batch row removed with its
requests still "submitted" to it, a request's failure kept without its batch collected (asked again as an
earlier invocation's failure). ``_StopsAt`` stands in for the connection and raises a Ctrl-C just before a
chosen statement, and compares what another connection sees of the store at that moment (what a killed
process would leave) and after the interruption with what it saw when the block began.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fakeserver import FakeLLM
from test_batch import UNITS, _pipeline, _Refused, _responder, _stable
from test_runner import read

from agentjudge.commands.run import run_cli
from agentjudge.models.batch import CURRENT_UNIT, BatchAPI, BatchInfo, request_line
from agentjudge.runner.batches import BatchBroker

TABLES = ("batches", "batch_requests", "batch_members")


def _tables(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The batch tables as another connection (a later invocation) sees them: only what is committed."""
    db = sqlite3.connect(store)
    try:
        return {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES}
    finally:
        db.close()


class _StopsAt:
    """A broker's connection that raises ``KeyboardInterrupt`` just before the ``nth`` statement containing
    ``sql``. ``at_begin``: the store as another connection saw it when the block of writes holding that
    statement began (its ``BEGIN``, or a ``with`` on the connection); ``at_stop``: as it saw it at the
    interruption, i.e. what a process killed there would have left."""

    def __init__(self, db: sqlite3.Connection, store: Path, sql: str, nth: int = 1) -> None:
        self._db, self._store, self._sql, self._left = db, store, sql, nth
        self.at_begin: dict[str, list[tuple[Any, ...]]] | None = None
        self.at_stop: dict[str, list[tuple[Any, ...]]] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)

    def __enter__(self) -> sqlite3.Connection:
        self.at_begin = _tables(self._store)
        return self._db.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._db.__exit__(*exc)

    def _before(self, sql: str) -> None:
        if sql.lstrip().upper().startswith("BEGIN"):
            self.at_begin = _tables(self._store)
        if self._sql in sql:
            self._left -= 1
            if self._left == 0:
                self.at_stop = _tables(self._store)
                raise KeyboardInterrupt

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._before(sql)
        return self._db.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._before(sql)
        return self._db.executemany(sql, *args)


def _settings(fake: FakeLLM) -> Any:
    return fake.settings(name="judge", batch=True)


def _line(settings: Any, key: str) -> dict[str, Any]:
    return request_line(
        key, {"model": settings.model, "messages": [{"role": "user", "content": f"hi {key}"}]}
    )


def _broker(store: Path, settings: Any, api: Any = BatchAPI) -> BatchBroker:
    return BatchBroker(
        store, {"judge": settings}, poll_s=0.001, poll_max_s=0.002, say=lambda _: None, api=api
    )


def _settle(broker: BatchBroker) -> int:
    return asyncio.run(asyncio.wait_for(broker.settle(), 20.0))


def _queue_two(fake: FakeLLM, store: Path) -> None:
    """An earlier invocation queued two requests (key-1, key-2) of unit-1."""
    settings = _settings(fake)
    broker = _broker(store, settings)
    CURRENT_UNIT.set("unit-1")
    for key in ("key-1", "key-2"):
        broker.defer(key, settings, _line(settings, key))
    broker.close()


def _answers(broker: BatchBroker) -> list[tuple[str, str]]:
    out = []
    for key in ("key-1", "key-2"):
        answer = broker.answer(key)
        out.append(("none", "") if answer is None else (answer.state, answer.kind))
    return out


def _sent_lines(fake: FakeLLM) -> list[str]:
    """The custom_id of every request line uploaded to the provider (input files, not result files)."""
    lines = [json.loads(ln) for data in fake.files.values() for ln in data.splitlines() if ln.strip()]
    return sorted(line["custom_id"] for line in lines if "method" in line)


def _both_answered_once(uploads: int) -> Callable[[FakeLLM, BatchBroker], None]:
    def check(fake: FakeLLM, broker: BatchBroker) -> None:
        assert _settle(broker) == 2
        assert _answers(broker) == [("done", ""), ("done", "")]
        # one batch created, each request answered once by the provider (``uploads``: files sent)
        assert (fake.uploads, fake.batches_created, len(fake.requests)) == (uploads, 1, 2)

    return check


# --- the steps interrupted ---------------------------------------------------------------------------------
def _act_settle(fake: FakeLLM, broker: BatchBroker) -> None:
    _settle(broker)


def _fail_key_1(fake: FakeLLM, store: Path) -> None:
    _queue_two(fake, store)
    db = sqlite3.connect(store, isolation_level=None)  # an earlier invocation's failure of key-1
    db.execute(
        "UPDATE batch_requests SET state = 'failed', error_kind = 'server_error' WHERE cache_key = 'key-1'"
    )
    db.close()


def _defer_key_1_for_unit_2(fake: FakeLLM, broker: BatchBroker) -> None:
    settings = _settings(fake)
    CURRENT_UNIT.set("unit-2")
    broker.defer("key-1", settings, _line(settings, "key-1"))


def _defer_again_then_settle(fake: FakeLLM, broker: BatchBroker) -> None:
    _defer_key_1_for_unit_2(fake, broker)
    units = broker.store.db.execute("SELECT units FROM batch_requests WHERE cache_key = 'key-1'").fetchone()[
        0
    ]
    assert json.loads(units) == ["unit-1", "unit-2"]
    _both_answered_once(uploads=1)(fake, broker)


class _CreateRefused(BatchAPI):  # the file is uploaded, the batch's creation answered HTTP 500
    async def create(self, input_file_id: str, metadata: dict[str, str]) -> BatchInfo:
        raise _Refused(500, "internal error")


class _DiesAfterCreate(BatchAPI):  # the process ends before the batch id reaches the store
    async def create(self, input_file_id: str, metadata: dict[str, str]) -> BatchInfo:
        await super().create(input_file_id, metadata)
        raise KeyboardInterrupt


def _created_before_a_crash(fake: FakeLLM, store: Path) -> None:
    _queue_two(fake, store)
    broker = _broker(store, _settings(fake), api=_DiesAfterCreate)
    with pytest.raises(KeyboardInterrupt):
        _settle(broker)
    broker.close()


def _half_failed_batch(fake: FakeLLM, store: Path) -> None:
    _queue_two(fake, store)
    fake.script_batch("fail_half", status=400)  # a request error: a failure of its unit, not resubmitted


def _one_answered_one_failed_sent_once(fake: FakeLLM, broker: BatchBroker) -> None:
    assert _settle(broker) == 2
    # the failure reached its unit in this invocation: it is not asked again, in a second batch
    assert sorted(_answers(broker)) == [("done", ""), ("failed", "bad_request")]
    assert fake.batches_created == 1 and _sent_lines(fake) == ["key-1", "key-2"]


def _batch_forgotten(fake: FakeLLM, store: Path) -> None:
    _queue_two(fake, store)
    fake.hold_batches = True
    broker = _broker(store, _settings(fake))
    asyncio.run(broker._submit_queued())
    broker.close()
    fake.batches["deleted"] = fake.batches.pop("batch_fake_0")  # the provider no longer knows it


def _both_given_up(fake: FakeLLM, broker: BatchBroker) -> None:
    assert _settle(broker) == 2
    # failed in this invocation (their units receive it), not left as an earlier invocation's failure
    assert _answers(broker) == [("failed", "batch_given_up"), ("failed", "batch_given_up")]
    assert fake.batches_created == 1 and fake.requests == []


@dataclass
class Case:
    name: str
    sql: str  # the statement the interruption comes just before
    nth: int
    act: Callable[[FakeLLM, BatchBroker], None]
    resume: Callable[[FakeLLM, BatchBroker], None]
    setup: Callable[[FakeLLM, Path], None] = _queue_two
    api: Any = field(default=BatchAPI)


CASES = [
    # defer: a request failed in an earlier invocation is queued again for one more unit
    Case("defer", "SET units", 1, _defer_key_1_for_unit_2, _defer_again_then_settle, _fail_key_1),
    # _submit: the local batch row, its requests "submitted" and its members
    Case("submit", "INSERT OR IGNORE INTO batch_members", 1, _act_settle, _both_answered_once(uploads=1)),
    # _submit: the created batch's id given to its row, requests and members (the next invocation adopts it)
    Case("name", "UPDATE batch_requests SET batch_id", 1, _act_settle, _both_answered_once(uploads=1)),
    # _submission_failed: the batch row and members removed, the requests queued again
    Case(
        "submission_failed",
        "DELETE FROM batch_members",
        1,
        _act_settle,
        _both_answered_once(uploads=2),
        api=_CreateRefused,
    ),
    # _collect: every answer with the batch marked collected
    Case("collect", "SET state = 'done'", 2, _act_settle, _both_answered_once(uploads=1)),
    Case(
        "collect_failures",
        "UPDATE batches SET collected = 1 WHERE",
        1,
        _act_settle,
        _one_answered_one_failed_sent_once,
        _half_failed_batch,
    ),
    # _recover: a batch created just before a crash adopted with its requests and members
    Case(
        "adopt",
        "UPDATE batch_requests SET batch_id",
        1,
        _act_settle,
        _both_answered_once(uploads=1),
        _created_before_a_crash,
    ),
    # _give_up: the batch marked collected with its requests failed
    Case(
        "give_up", "UPDATE batches SET collected = 1, note", 1, _act_settle, _both_given_up, _batch_forgotten
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_an_interrupted_change_keeps_none_of_its_statements_and_the_next_invocation_completes(
    case: Case, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    from agentjudge.models.litellm_import import litellm_module as _litellm

    _litellm()  # imported outside the event loop, as the runner does
    fake_llm.set_responder(lambda req: "hello back")
    store = tmp_path / "run.sqlite"
    case.setup(fake_llm, store)

    broker = _broker(store, _settings(fake_llm), api=case.api)
    stops = _StopsAt(broker.store.db, store, case.sql, case.nth)
    broker.store.db = stops  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        case.act(fake_llm, broker)
    broker.close()
    assert stops.at_begin is not None and stops.at_stop is not None, "the statement was never reached"
    # killed at that statement, or stopped by Ctrl-C there: the store is as before the block began
    assert stops.at_stop == stops.at_begin
    assert _tables(store) == stops.at_begin

    fake_llm.hold_batches = False
    broker = _broker(store, _settings(fake_llm))
    try:
        case.resume(fake_llm, broker)
    finally:
        broker.close()


# --- a whole run ------------------------------------------------------------------------------------------
class _Spinning(BaseException):
    """Raised out of the run when the batch loop goes round without anything left to wait for."""


def _interrupted_at(monkeypatch: pytest.MonkeyPatch, sql: str) -> list[_StopsAt]:
    """Every BatchBroker of the run gets a connection that stops just before the first ``sql``."""
    made: list[_StopsAt] = []
    real_init = BatchBroker.__init__

    def init(self: BatchBroker, path: Path, *args: Any, **kwargs: Any) -> None:
        real_init(self, path, *args, **kwargs)
        made.append(_StopsAt(self.store.db, path, sql))
        self.store.db = made[-1]  # type: ignore[assignment]

    monkeypatch.setattr(BatchBroker, "__init__", init)
    return made


def _bounded_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose requests are stuck (open, but in no batch any invocation polls) called ``settle`` for ever
    before the grid's batch loop stopped on a round without progress (tests/test_batch_stuck.py): the code
    before that fix fails here instead of hanging. Ten rounds are far more than any run here needs (one per
    stage and re-ask)."""
    real_settle = BatchBroker.settle
    rounds = [0]

    async def settle(self: BatchBroker) -> int:
        rounds[0] += 1
        if rounds[0] > 10:
            raise _Spinning(f"settle called {rounds[0]} times; open requests: {self.open_requests()}")
        return await real_settle(self)

    monkeypatch.setattr(BatchBroker, "settle", settle)


@pytest.mark.parametrize(
    ("sql", "script"),
    [
        # recording the created batch's id: before, the batch was renamed without its requests, collected with
        # none of them, and the resumed run waited for them forever
        ("UPDATE batch_requests SET batch_id", None),
        # recording a collection: before, the failures were kept without the batch collected, and the
        # resumed run sent those requests again (and stored their new answers instead of the failures)
        ("UPDATE batches SET collected = 1 WHERE", 400),
    ],
    ids=["submission", "collection"],
)
def test_a_run_interrupted_while_recording_resumes_to_the_uninterrupted_judgments_sending_nothing_twice(
    sql: str, script: int | None, tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    def start() -> None:  # a provider that has seen nothing (its batch and file ids start again)
        fake_llm.reset()
        with fake_llm._lock:
            fake_llm.files.clear()
            fake_llm.batches.clear()
        fake_llm.set_responder(_responder)
        if script is not None:
            fake_llm.script_batch("fail_half", status=script)

    start()
    expected_code = 0 if script is None else 1  # half the units failed with HTTP 400
    assert (
        run_cli(_pipeline(tmp_path / "ref", fake_llm, batch=True), tmp_path / "uninterrupted")
        == expected_code
    )
    reference = _stable(read(tmp_path / "uninterrupted", "judgments"))
    reference_sent = _sent_lines(fake_llm)
    assert len(reference_sent) == UNITS and fake_llm.batches_created == 1

    start()
    pipeline = _pipeline(tmp_path / "p", fake_llm, batch=True)
    rundir = tmp_path / "run"
    with monkeypatch.context() as patch:
        stops = _interrupted_at(patch, sql)
        assert run_cli(pipeline, rundir) == 130  # the Ctrl-C, in the middle of that write
    assert stops and stops[0].at_stop is not None and stops[0].at_stop == stops[0].at_begin
    assert fake_llm.batches_created == 1

    with monkeypatch.context() as patch:
        _bounded_settle(patch)
        assert run_cli(pipeline, rundir) == expected_code
    # the batch created before the interruption was polled, not created again; no request line was sent twice
    assert fake_llm.batches_created == 1 and fake_llm.uploads == 1
    assert _sent_lines(fake_llm) == reference_sent
    pd.testing.assert_frame_equal(_stable(read(rundir, "judgments")), reference)


def test_the_broker_commits_without_an_fsync_each_yet_a_killed_process_keeps_every_commit(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    # the broker's connection was at SQLite's default synchronous=FULL: an fsync per commit (a request queued,
    # a batch recorded, an answer collected), where RunStore's connection, on the same file, runs NORMAL
    import subprocess
    import sys

    store = tmp_path / "run.sqlite"
    broker = _broker(store, _settings(fake_llm))
    try:
        assert broker.store.db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert broker.store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        broker.close()
    # WAL + NORMAL is durable against a process that dies right after a commit: a child queues a request and
    # exits at once (no close, no checkpoint); the next connection finds the request
    child = f"""
import os
from pathlib import Path
from agentjudge.models.batch import CURRENT_UNIT
from agentjudge.runner.batches import BatchBroker
from agentjudge.types import ModelSettings
settings = ModelSettings.model_validate_json({_settings(fake_llm).model_dump_json()!r})
broker = BatchBroker(Path({str(store)!r}), {{settings.display_name: settings}}, say=lambda _: None)
CURRENT_UNIT.set("unit-1")
broker.defer("k-killed", settings, {{"custom_id": "k-killed", "body": {{}}}})
os._exit(9)
"""
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stderr
    assert _tables(store)["batch_requests"][0][:3] == ("k-killed", "judge", "queued")
