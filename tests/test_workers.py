"""``workers: N``: litellm calls in worker processes give the same results as one process, keep the
per-model and pipeline concurrency limits across processes, and a SIGKILLed run resumes without losing a
finished unit or sending its call again."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fakeserver import prompt_text
from test_runner import write_pipeline

from agentjudge import api
from agentjudge.commands.run import run_cli
from agentjudge.models.cache import CallCache
from agentjudge.rundir import RunFolder
from agentjudge.rundir.units import store_units
from agentjudge.runner import workers
from agentjudge.runner.workers import WorkerPool, effective_workers


def _digest(request: dict[str, Any]) -> str:
    return hashlib.sha256(prompt_text(request).encode()).hexdigest()[:16]


def _responder(request: dict[str, Any]) -> str:
    """A verdict that depends on the prompt (so a mixed-up answer shows), naming the prompt's digest."""
    digest = _digest(request)
    value = (0.0, 0.5, 1.0)[int(digest, 16) % 3]
    return json.dumps(
        {m: {"verdict": value, "justification": digest} for m in ("tool", "param", "seq", "cov")}
        | {"overall": digest}
    )


def _judge(fake_llm: Any, name: str, concurrency: int) -> dict[str, Any]:
    settings = fake_llm.settings(model=f"openai/{name}", name=name, concurrency=concurrency)
    return dict(settings.model_dump(exclude_defaults=True))


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    keys = [c for c in frame.columns if c not in ("rationale",)]
    return frame.sort_values(keys).reset_index(drop=True)


def test_effective_workers_rules() -> None:
    assert effective_workers(4, 0) == 1  # nothing to call: no processes
    assert effective_workers(3, 5) == 3  # explicit: obeyed
    assert effective_workers(None, workers.AUTO_MIN_UNITS - 1) == 1  # small run: in process
    assert effective_workers(None, workers.AUTO_MIN_UNITS) == workers.default_workers()
    assert 1 <= workers.default_workers() <= workers.MAX_DEFAULT_WORKERS


def test_a_task_crosses_the_pipe_once_per_worker() -> None:
    """A record's task (tools, query, system prompt) is pickled into the first request frame a worker gets
    and named by a token after that; each worker gets it once, and every request unpickles equal to what
    was sent."""
    from agentjudge.rundir.records import read_records
    from agentjudge.runner.work import Dataset
    from agentjudge.types import JudgeRequest

    data = Dataset(read_records(Path(__file__).parents[1] / "data" / "mini" / "records.jsonl", limit=2))
    first, second = data.records
    requests = [
        JudgeRequest(task=data.task(first, "easy"), calls=[], gt=first.gt, condition="with_gt"),
        JudgeRequest(task=data.task(first, "easy"), calls=[], gt=None, condition="without_gt"),
        JudgeRequest(task=data.task(first, "hard"), calls=[], gt=None, condition="without_gt"),
        JudgeRequest(task=data.task(second, "easy"), calls=[], gt=None, condition="without_gt"),
    ]
    tokens = workers._TaskTokens()
    sent_a: set[str] = set()
    held_a: dict[str, Any] = {}
    sizes = []
    for n, request in enumerate(requests):
        frame = workers._request_frame((n, "judge", "j", (request,)), tokens, sent_a)
        sizes.append(len(frame))
        message = workers._read_request(pickle.loads(frame[4:]), held_a)
        assert message == (n, "judge", "j", (request,))
    # the second request of the same task (a new Task object, equal content) travels without it
    assert sizes[1] < sizes[0] - len(pickle.dumps(requests[0].task)) // 2
    assert len(sent_a) == len(held_a) == 4  # first:easy, first:hard, second:easy; first's GT steps
    # another worker has none of them: its first request carries the task again
    sent_b: set[str] = set()
    frame = workers._request_frame((9, "judge", "j", (requests[1],)), tokens, sent_b)
    assert workers._read_request(pickle.loads(frame[4:]), {})[3][0] == requests[1]
    assert len(frame) > sizes[1]


def test_a_records_gt_steps_cross_the_pipe_once_and_stay_the_same_objects() -> None:
    """A judge request's GT steps (a record's) travel once per worker, like its task: later requests showing
    them arrive with the very steps the worker already holds (the judge prompt's memos, keyed by their
    identity, hit in the worker too) and equal to what was sent; a request without GT is unchanged."""
    from agentjudge.rundir.records import read_records
    from agentjudge.runner.work import Dataset
    from agentjudge.types import JudgeRequest, ToolCall

    data = Dataset(read_records(Path(__file__).parents[1] / "data" / "mini" / "records.jsonl", limit=2))
    first, second = data.records
    calls = [ToolCall(name="f", arguments={"x": 1})]
    requests = [
        JudgeRequest(task=data.task(first, "easy"), calls=calls, gt=first.gt, condition="with_gt"),
        JudgeRequest(task=data.task(first, "hard"), calls=[], gt=first.gt, condition="with_gt"),
        JudgeRequest(task=data.task(second, "easy"), calls=[], gt=first.gt, condition="swapped_gt"),
        JudgeRequest(task=data.task(second, "easy"), calls=calls, gt=None, condition="without_gt"),
    ]
    tokens = workers._TaskTokens()
    sent: set[str] = set()
    held: dict[str, Any] = {}
    arrived = []
    for n, request in enumerate(requests):
        frame = workers._request_frame((n, "judge", "j", (request,)), tokens, sent)
        message = workers._read_request(pickle.loads(frame[4:]), held)
        assert message == (n, "judge", "j", (request,))
        arrived.append(message[3][0])
        if n == 1:  # the steps were sent with the first request: not again
            assert len(frame) < len(pickle.dumps(request)) - len(pickle.dumps(first.gt)) // 2
    assert all(a is b for a, b in zip(arrived[1].gt, arrived[0].gt, strict=True))
    assert all(a is b for a, b in zip(arrived[2].gt, arrived[0].gt, strict=True))
    assert arrived[1].gt is not arrived[0].gt  # a list of its own, as every request has
    assert arrived[3].gt is None and arrived[3].calls == calls


class _Pipe:
    """Stands in for a worker's request pipe: keeps what is written, sends nothing."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)


def _fake_pool() -> WorkerPool:
    """A pool of two workers that are only their request pipes (nothing is forked)."""
    pool = WorkerPool(2, None)  # type: ignore[arg-type]
    for _ in range(2):
        pipe = _Pipe()
        worker = workers._Worker(pid=0, request_fd=-1, answer_fd=-1, writer=pipe)  # type: ignore[arg-type]
        worker.outbox = workers._Outbox(pipe)  # type: ignore[arg-type]
        pool._workers.append(worker)
    return pool


def test_only_real_worker_pids_are_signalled(monkeypatch: pytest.MonkeyPatch) -> None:
    """``kill(0)`` is this process group and ``kill(-1)`` every process the user may signal: a worker whose
    pid is not a process id (the fake pools of these tests) is never signalled or waited for. (``os.kill``
    and ``os.waitpid`` are replaced here, so nothing is sent even when this fails.)"""
    sent: list[Any] = []
    monkeypatch.setattr(workers.os, "kill", lambda pid, sig: sent.append(pid))
    monkeypatch.setattr(workers.os, "waitpid", lambda pid, options: sent.append(("wait", pid)) or (pid, 0))
    pool = WorkerPool(3, None)  # type: ignore[arg-type] - nothing is forked
    for pid in (0, -1, 4242):
        pool._workers.append(workers._Worker(pid=pid, request_fd=-1, answer_fd=-1, writer=_Pipe()))  # type: ignore[arg-type]
    pool.abandon()
    assert sent == [4242, ("wait", 4242)]


def test_a_route_holds_a_worker_only_while_its_calls_are_in_flight() -> None:
    """Calls asking the same thing (one route) meet in one worker while one of them is out; otherwise every
    call goes to the least busy worker, so distinct requests spread evenly, even routes that one hash would
    all put on the same worker (a record's units over different predictions used to share one worker)."""
    import asyncio
    import zlib

    async def scenario() -> None:
        pool = _fake_pool()
        a, b = pool._workers
        routes = [r for r in (f"judge|rec{i}|with_gt" for i in range(100)) if zlib.crc32(r.encode()) % 2 == 0]
        calls = [asyncio.create_task(pool.call("judge", "j", (), route)) for route in routes[:8]]
        await asyncio.sleep(0)
        assert len(a.pending) == len(b.pending) == 4  # distinct requests: spread evenly
        twin = asyncio.create_task(pool.call("judge", "j", (), routes[0]))
        more = [asyncio.create_task(pool.call("judge", "j", (), routes[0])) for _ in range(3)]
        await asyncio.sleep(0)
        holder = a if len(a.pending) > len(b.pending) else b
        assert len(holder.pending) == 8  # twins of an in-flight request join it, even on the busier worker
        for worker in (a, b):
            for future in list(worker.pending.values()):
                future.set_result("answer")
        assert await asyncio.gather(*calls, twin, *more) == ["answer"] * 12
        assert pool._routes == {}  # nothing in flight: no route holds a worker
        other = b if holder is a else a
        holder.pending[-1] = asyncio.get_running_loop().create_future()  # `holder` is now the busier one
        again = asyncio.create_task(pool.call("judge", "j", (), routes[0]))
        await asyncio.sleep(0)
        assert len(other.pending) == 1  # the answer is in the call cache now: the route pins nothing
        next(iter(other.pending.values())).set_result("cached")
        assert await again == "cached"

    asyncio.run(scenario())


def test_a_call_whose_frame_cannot_be_built_releases_its_route_and_slot() -> None:
    """A payload that cannot be pickled fails its call, and leaves no route pinned and no pending call
    behind (else the route would hold its worker for the rest of the run and skew the least-busy choice)."""
    import asyncio

    async def scenario() -> None:
        pool = _fake_pool()
        with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
            await pool.call("judge", "j", (lambda: None,), "judge|rec1|with_gt")
        assert pool._routes == {}
        assert all(not worker.pending for worker in pool._workers)

    asyncio.run(scenario())


def test_the_frames_of_one_event_loop_turn_go_out_in_one_write() -> None:
    """Units started in one turn of the parent's loop reach a worker in one write (one wake-up of the
    worker), in the order they were started, each frame intact; a later turn's go out in a later write."""
    import asyncio

    async def scenario() -> None:
        pool = _fake_pool()
        first = [asyncio.create_task(pool.call("judge", "j", (n,), f"r{n}")) for n in range(6)]
        await asyncio.sleep(0)  # the six calls run up to their frames
        await asyncio.sleep(0)  # the outboxes are flushed
        pipes = [w.writer for w in pool._workers]
        assert [len(p.writes) for p in pipes] == [1, 1]  # type: ignore[union-attr]
        later = asyncio.create_task(pool.call("judge", "j", (6,), "r6"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert sorted(len(p.writes) for p in pipes) == [1, 2]  # type: ignore[union-attr]
        for pipe in pipes:
            data = b"".join(pipe.writes)  # type: ignore[union-attr]
            payloads = []
            while data:
                (size,) = workers._HEADER.unpack(data[: workers._HEADER.size])
                frame = pickle.loads(data[workers._HEADER.size : workers._HEADER.size + size])
                payloads.append(workers._read_request(frame, {})[3][0])
                data = data[workers._HEADER.size + size :]
            assert payloads == sorted(payloads)  # in the order the calls were made
        for worker in pool._workers:
            for future in worker.pending.values():
                future.set_result(None)
        await asyncio.gather(*first, later)

    asyncio.run(scenario())


class _InFlight:
    """A responder that holds each answer ``delay`` s and counts requests in flight per model."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.now: Counter[str] = Counter()
        self.most: Counter[str] = Counter()

    def __call__(self, request: dict[str, Any]) -> str:
        model = str(request["model"])
        with self.lock:
            self.now[model] += 1
            self.most[model] = max(self.most[model], self.now[model])
        time.sleep(self.delay)
        with self.lock:
            self.now[model] -= 1
        return _responder(request)


def test_two_workers_equal_one_and_keep_the_limits(
    tmp_path: Path, fake_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote_calls = []
    original_call = WorkerPool.call

    async def counting_call(
        self: WorkerPool, role: str, name: str, payload: Any, route: str | None = None
    ) -> Any:
        remote_calls.append(name)
        return await original_call(self, role, name, payload, route)

    monkeypatch.setattr(WorkerPool, "call", counting_call)
    judges = [_judge(fake_llm, "judge-a", 3), _judge(fake_llm, "judge-b", 2), "baseline/rule"]
    units_per_judge = 2 * 8 * 2  # generators x predictions (4 records x 2 difficulties) x conditions
    runs = {}
    for n in (1, 2):
        folder = tmp_path / f"w{n}"
        folder.mkdir()
        pipeline = write_pipeline(
            folder,
            generators=["sim/mid", "sim/weak"],
            judges=judges,
            conditions=["with_gt", "without_gt"],
            concurrency=4,  # below the two judges' 3 + 2
            workers=n,
        )
        fake_llm.requests.clear()
        fake_llm.max_in_flight = 0
        in_flight = _InFlight(0.03)  # calls overlap, so the limits are exercised
        fake_llm.set_responder(in_flight)
        assert api.run(pipeline, folder / "run").status == "complete"
        assert len(fake_llm.requests) == 2 * units_per_judge
        # the limits hold across processes: the pipeline's 4 in all, each judge's own concurrency
        assert 2 <= fake_llm.max_in_flight <= 4
        assert in_flight.most["judge-a"] <= 3 and in_flight.most["judge-b"] <= 2
        runs[n] = folder / "run"
        meta = json.loads((folder / "run" / "meta.json").read_text())
        per_model = {r["model"]: r for r in meta["last_invocation"]["per_model"]}
        assert per_model["judge-a"]["calls"] == units_per_judge  # the workers' statistics came back
    assert len(remote_calls) == 2 * units_per_judge  # workers: 2 sent every judge call to a worker
    for name in ("predictions", "scores", "judgments"):
        pd.testing.assert_frame_equal(
            _sorted(pd.read_parquet(runs[1] / f"{name}.parquet")),
            _sorted(pd.read_parquet(runs[2] / f"{name}.parquet")),
        )


def test_identical_judge_prompts_are_sent_once_with_two_workers(tmp_path: Path, fake_llm: Any) -> None:
    """Two simulated generators often make the same prediction, so one judge prompt belongs to several units:
    one process sends it once and answers the rest from that answer; two workers must too (the parent routes
    a judge's units of one record and condition to one worker), not once per worker that gets one."""
    fake_llm.set_responder(_responder)
    fake_llm.latency = 0.05  # the duplicates are in flight together: the in-flight sharing is exercised
    judge = _judge(fake_llm, "judge-a", 8)
    gens = ["sim/weak", "sim/mid", "sim/strong", "sim/frontier", "sim/perfect"]
    sent = {}
    for n in (1, 2):
        folder = tmp_path / f"w{n}"
        folder.mkdir()
        pipeline = write_pipeline(
            folder, generators=gens, judges=[judge], conditions=["with_gt"], concurrency=8, workers=n
        )
        fake_llm.requests.clear()
        assert api.run(pipeline, folder / "run").status == "complete"
        sent[n] = [_digest(r) for r in fake_llm.requests]
        # the repeats are taken after every first asking has started, so they wait for nobody's answer
        # while holding a concurrency slot: they are read from the call cache (or share a request still out)
        judged = RunFolder.open(folder / "run").units(
            ["first_started_at", "result"], [("stage", "==", "judge")]
        )
        rows = list(judged.sort_values("first_started_at", kind="stable").itertuples(index=False))
        firsts: dict[str, str] = {}
        repeats: list[str] = []
        for started, result in rows:
            digest = json.loads(result)["rationales"]["tool"]
            if digest in firsts:
                repeats.append(started)
            else:
                firsts[digest] = started
        assert repeats and min(repeats) >= max(firsts.values())
        # every repeat was answered by the call cache, and its hit is on record when the run ends (the
        # workers' counts too: a worker writes them before it ends)
        assert CallCache(folder / "cache.sqlite").stats()["hits"] == len(rows) - len(sent[n])
    units = 5 * 8  # generators x predictions (4 records x 2 difficulties)
    assert len(set(sent[1])) < units  # the set-up has identical prompts, else this test shows nothing
    assert sorted(sent[2]) == sorted(sent[1]) == sorted(set(sent[1]))  # each distinct prompt sent once


def _done_units(store: Path) -> dict[str, str]:
    """digest of the prompt -> status, for the judge units committed so far."""
    try:
        rows = store_units(store, ["result"], [("stage", "==", "judge"), ("status", "==", "done")])
    except sqlite3.Error:
        return {}
    if rows is None:
        return {}
    return {json.loads(result)["rationales"]["tool"]: "done" for result in rows["result"]}


def test_sigkill_with_two_workers_then_resume_loses_nothing_and_repays_nothing(
    tmp_path: Path, fake_llm: Any
) -> None:
    fake_llm.set_responder(_responder)
    fake_llm.latency = 0.1
    judge = _judge(fake_llm, "judge-a", 2)
    units = 4 * 3 * 2  # records x difficulties x conditions (one generator)
    pipeline = write_pipeline(
        tmp_path,
        difficulties=["easy", "medium", "hard"],
        generators=["sim/weak"],
        judges=[judge],
        conditions=["with_gt", "without_gt"],
        workers=2,
    )
    ref = tmp_path / "ref"
    (ref / "p").mkdir(parents=True)
    ref_pipeline = write_pipeline(
        ref / "p",
        difficulties=["easy", "medium", "hard"],
        generators=["sim/weak"],
        judges=[judge],
        conditions=["with_gt", "without_gt"],
        workers=1,
    )
    assert api.run(ref_pipeline, ref / "run").status == "complete"
    fake_llm.requests.clear()

    rundir = tmp_path / "run"
    command = [sys.executable, "-m", "agentjudge", "run", str(pipeline), "--out", str(rundir)]
    proc = subprocess.Popen(command, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while len(_done_units(rundir / "run.sqlite")) < 6:
        assert proc.poll() is None, f"run ended before it could be killed: {proc.stderr.read()!r}"  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    finished = _done_units(rundir / "run.sqlite")
    assert 6 <= len(finished) < units, "kill came too late to test resuming"
    time.sleep(0.5)  # the orphaned workers see their input close and exit
    before_resume = len(fake_llm.requests)

    assert api.run(pipeline, rundir).status == "complete"
    resumed = [_digest(r) for r in fake_llm.requests[before_resume:]]
    assert not set(resumed) & set(finished)  # no finished unit was sent again
    sent = [_digest(r) for r in fake_llm.requests]
    assert len(set(sent)) == units  # every unit was called
    assert len(sent) - units <= 2  # only calls in flight at the kill (concurrency 2) may repeat
    for name in ("predictions", "scores", "judgments"):
        pd.testing.assert_frame_equal(
            _sorted(pd.read_parquet(ref / "run" / f"{name}.parquet")),
            _sorted(pd.read_parquet(rundir / f"{name}.parquet")),
        )


@pytest.mark.slow  # one more subprocess run; the SIGKILL test above covers resuming in the fast suite
def test_ctrl_c_with_two_workers_stops_them_and_resumes(tmp_path: Path, fake_llm: Any) -> None:
    fake_llm.set_responder(_responder)
    fake_llm.latency = 0.1
    units = 4 * 3 * 2
    pipeline = write_pipeline(
        tmp_path,
        difficulties=["easy", "medium", "hard"],
        generators=["sim/weak"],
        judges=[_judge(fake_llm, "judge-a", 2)],
        conditions=["with_gt", "without_gt"],
        workers=2,
    )
    rundir = tmp_path / "run"
    command = [sys.executable, "-m", "agentjudge", "run", str(pipeline), "--out", str(rundir)]
    proc = subprocess.Popen(
        command, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 90
    while len(_done_units(rundir / "run.sqlite")) < 4:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out
    assert "re-run the same command to resume" in out
    finished = _done_units(rundir / "run.sqlite")
    before_resume = len(fake_llm.requests)
    assert api.run(pipeline, rundir).status == "complete"
    resumed = {_digest(r) for r in fake_llm.requests[before_resume:]}
    assert not resumed & set(finished)  # finished units were not sent again
    assert len({_digest(r) for r in fake_llm.requests}) == units
    assert len(pd.read_parquet(rundir / "judgments.parquet").query("judge == 'judge-a'")) == units * 4 * 2


def test_identical_prompts_in_flight_together_meet_in_one_worker(
    tmp_path: Path, fake_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route on its own: with repeats not deferred, twins are out at the same moment; in two different
    workers each would be sent (the in-flight sharing is per client), in one they are sent once."""
    from agentjudge.runner import grid

    monkeypatch.setattr(grid._Grid, "_repeats", lambda self, units: set())  # twins side by side
    fake_llm.set_responder(_responder)
    fake_llm.latency = 0.2
    judge = _judge(fake_llm, "judge-r", 8)
    gens = ["sim/weak", "sim/mid", "sim/strong", "sim/frontier", "sim/perfect"]
    pipeline = write_pipeline(
        tmp_path, generators=gens, judges=[judge], conditions=["with_gt"], concurrency=8, workers=2
    )
    fake_llm.requests.clear()
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    sent = [_digest(r) for r in fake_llm.requests]
    assert len(set(sent)) < 5 * 8  # the set-up has identical prompts, else this test shows nothing
    assert sorted(sent) == sorted(set(sent))


def test_a_judge_units_route_names_its_request(
    tmp_path: Path, fake_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route is what makes two judge requests identical: equal requests share a route (so twins meet in
    one worker) and different ones never do (a record's units over different predictions spread over the
    workers instead of all following one route)."""
    routes: dict[str, set[str]] = {}
    original_call = WorkerPool.call

    async def recording_call(
        self: WorkerPool, role: str, name: str, payload: Any, route: str | None = None
    ) -> Any:
        assert route is not None
        routes.setdefault(route, set()).add(name + payload[0].model_dump_json())
        return await original_call(self, role, name, payload, route)

    monkeypatch.setattr(WorkerPool, "call", recording_call)
    fake_llm.set_responder(_responder)
    gens = ["sim/weak", "sim/mid", "sim/strong", "sim/frontier", "sim/perfect"]
    judges = [_judge(fake_llm, "judge-a", 8), _judge(fake_llm, "judge-b", 8)]
    pipeline = write_pipeline(
        tmp_path, generators=gens, judges=judges, conditions=["with_gt", "without_gt"], workers=2
    )
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    assert sum(map(len, routes.values())) == len(routes)  # one request per route
    requests = [next(iter(r)) for r in routes.values()]
    assert len(set(requests)) == len(requests)  # one route per request
    assert len(routes) < 2 * 2 * 5 * 8  # the set-up has identical requests, else this test shows less


def test_a_cost_cap_judges_as_many_units_as_without_repeats_last(
    tmp_path: Path, fake_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repeats taken last would find a cost cap's budget spent and not run, although their twin's answer
    makes them free: under a cap the order stays the plain one, so the cap buys the same units."""
    from agentjudge.runner import grid

    fake_llm.set_responder(_responder)
    priced = {
        **_judge(fake_llm, "judge-c", 1),
        **{"input_cost_per_token": 1e-5, "output_cost_per_token": 1e-5, "max_tokens": 200},
    }
    gens = ["sim/weak", "sim/mid", "sim/strong", "sim/frontier", "sim/perfect"]

    def judged(folder: Path, cap: float | None) -> int:
        folder.mkdir()
        pipeline = write_pipeline(folder, generators=gens, judges=[priced], conditions=["with_gt"], workers=1)
        monkeypatch.setenv("AGENTJUDGE_CACHE", str(folder / "calls.sqlite"))  # each run pays its own calls
        run_cli(pipeline, folder / "run", max_cost=cap)
        done = [("stage", "==", "judge"), ("status", "==", "done")]
        return len(RunFolder.open(folder / "run").units(["stage"], done))

    assert judged(tmp_path / "all", None) == 5 * 8
    results = RunFolder.open(tmp_path / "all" / "run").units(["result"], [("stage", "==", "judge")])["result"]
    costs = [json.loads(r).get("usage", {}).get("cost_usd", 0.0) for r in results]
    assert sum(c == 0 for c in costs) > 0  # repeats came for free (answered by their twin's request)
    cap = 0.5 * sum(costs)  # half of what the uncapped run paid
    with_order = judged(tmp_path / "capped", cap)
    monkeypatch.setattr(grid._Grid, "_repeats", lambda self, units: set())
    plain = judged(tmp_path / "plain", cap)
    assert 0 < with_order < 5 * 8 and with_order == plain


def test_twins_over_different_trajectories_share_a_route_where_no_trajectory_is_shown() -> None:
    """Two interactive predictions with the same calls but different trajectories make identical requests
    under the single-shot conditions (the trajectory is shown only under trajectory conditions), so their
    judge units must get one route there (else twins in flight could be sent from two workers and paid
    twice), and different routes where the trajectory is part of the prompt."""
    from types import SimpleNamespace

    from agentjudge.runner import grid
    from agentjudge.runner.store import UnitKey
    from agentjudge.types import Prediction, ToolCall, Trajectory

    def prediction(generator: str, answer: str) -> Prediction:
        trajectory = Trajectory(
            messages=[{"role": "assistant", "content": answer}], steps=[], turns=1, stop_reason="answered"
        )
        return Prediction(
            record_id="r1", base_id="b1", difficulty="easy", generator=generator,
            calls=[ToolCall(name="get", arguments={"id": 1})], trajectory=trajectory,
        )  # fmt: skip

    predictions = {
        UnitKey("predict", "r1", "easy", g, 0): prediction(g, f"done by {g}") for g in ("agent/a", "agent/b")
    }
    state = SimpleNamespace(predictions=predictions, _shown_of={}, _shown_ids={})

    def shown(generator: str, condition: str) -> int | None:
        key = UnitKey("judge", "r1", "easy", generator, 0, judge="j", condition=condition)
        return grid._Grid._shown(state, key)  # type: ignore[arg-type]

    assert shown("agent/a", "with_gt") == shown("agent/b", "with_gt")
    assert shown("agent/a", "trajectory_with_gt") != shown("agent/b", "trajectory_with_gt")
    assert shown("agent/a", "without_gt") == shown("agent/a", "with_gt")


def test_a_models_concurrency_is_split_over_the_workers_without_rounding() -> None:
    """Each worker process holds a share of each model's calls in flight: the shares add up to the model's
    ``concurrency`` exactly, differ by at most one, and the remainders of different models fall on
    different workers."""
    assert workers.split_limit(7, 2) == [4, 3]
    assert workers.split_limit(7, 2, first=1) == [3, 4]
    assert workers.split_limit(1, 3, first=2) == [0, 0, 1]
    assert workers.split_limit(6, 4, first=3) == [2, 1, 1, 2]
    for limit in range(1, 20):
        for size in range(1, 6):
            for first in range(size):
                shares = workers.split_limit(limit, size, first)
                assert sum(shares) == limit and max(shares) - min(shares) <= 1
    from agentjudge.types import ModelSettings

    def named(name: str, concurrency: int) -> ModelSettings:
        return ModelSettings(model=f"openai/{name}", name=name, concurrency=concurrency)

    spec = workers.WorkerSpec(
        generators=[named("gen", 3)],
        judges=[named("judge-a", 1), named("judge-b", 1)],
        cache=None,
        read_cache=True,
        reask=0,
        prompt_family="agentjudge",
        tool_rendering="full",
    )
    shares = workers.model_shares(spec, 2)
    assert [s["gen"] for s in shares] == [2, 1]
    assert sorted((s["judge-a"], s["judge-b"]) for s in shares) == [(0, 1), (1, 0)]  # not both on one


def test_units_go_to_the_workers_holding_a_share_and_an_exited_workers_share_passes_on() -> None:
    """The parent sends a model's unit to the worker with the most room in its share of the model (its units
    out per share), never to one without a share; when a worker exits, its shares go to the live workers in
    a frame each, and later units of a model only it held a share of go to them."""
    import asyncio

    async def scenario() -> None:
        pool = _fake_pool()
        a, b = pool._workers
        pool.shares = [{"m": 3, "one": 1}, {"m": 1, "one": 0}]
        a.shares, b.shares = dict(pool.shares[0]), dict(pool.shares[1])
        calls = [asyncio.create_task(pool.call("judge", "m", (n,))) for n in range(8)]
        calls += [asyncio.create_task(pool.call("judge", "one", (n,))) for n in range(3)]
        await asyncio.sleep(0)
        assert (a.load["m"], b.load["m"]) == (6, 2)  # as 3 to 1
        assert (a.load["one"], b.load.get("one", 0)) == (3, 0)  # only where it has a share
        assert b.outbox is not None
        a.dead = "worker process 1 exited (EOFError)"
        pool._hand_over(a)
        await asyncio.sleep(0)
        data = b"".join(b.writer.writes)  # type: ignore[union-attr]
        frames = []
        while data:
            (size,) = workers._HEADER.unpack(data[: workers._HEADER.size])
            frames.append(pickle.loads(data[workers._HEADER.size : workers._HEADER.size + size]))
            data = data[workers._HEADER.size + size :]
        assert [f for f in frames if type(f) is workers._Widen] == [workers._Widen({"m": 3, "one": 1})]
        assert b.shares == {"m": 4, "one": 1} and a.shares == {}
        later = asyncio.create_task(pool.call("judge", "one", ("after",)))
        await asyncio.sleep(0)
        assert b.load["one"] == 1
        for worker in (a, b):
            for future in list(worker.pending.values()):
                future.set_result("answer")
        await asyncio.gather(*calls, later)
        assert a.load == {"m": 0, "one": 0} and b.load == {"m": 0, "one": 0}

    asyncio.run(scenario())


def test_units_are_sent_ahead_while_the_workers_keep_each_models_limit(
    tmp_path: Path, fake_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the pipeline's ``concurrency`` cannot bind (the judges' 3 + 2 are below its 8), the parent keeps
    more of a model's units out in the workers than the model's ``concurrency``, so prompts are built while
    requests are out; the requests in flight at the server still never pass each model's limit (each worker
    holds its share around the request alone), and the limit is reached. The files equal one process's."""
    out: Counter[str] = Counter()
    most_out: Counter[str] = Counter()
    original_call = WorkerPool.call

    async def counting_call(
        self: WorkerPool, role: str, name: str, payload: Any, route: str | None = None
    ) -> Any:
        out[name] += 1
        most_out[name] = max(most_out[name], out[name])
        try:
            return await original_call(self, role, name, payload, route)
        finally:
            out[name] -= 1

    monkeypatch.setattr(WorkerPool, "call", counting_call)
    judges = [_judge(fake_llm, "judge-a", 3), _judge(fake_llm, "judge-b", 2)]
    runs = {}
    for n in (1, 2):
        folder = tmp_path / f"w{n}"
        folder.mkdir()
        pipeline = write_pipeline(
            folder,
            generators=["sim/mid", "sim/weak"],
            judges=judges,
            conditions=["with_gt", "without_gt"],
            concurrency=8,
            workers=n,
        )
        in_flight = _InFlight(0.05)
        fake_llm.set_responder(in_flight)
        assert api.run(pipeline, folder / "run").status == "complete"
        assert in_flight.most["judge-a"] == 3 and in_flight.most["judge-b"] == 2
        runs[n] = folder / "run"
    assert most_out["judge-a"] == 3 + 2 and most_out["judge-b"] == 2 + 2  # ahead: max(workers, cap / 4)
    for name in ("predictions", "scores", "judgments"):
        pd.testing.assert_frame_equal(
            _sorted(pd.read_parquet(runs[1] / f"{name}.parquet")),
            _sorted(pd.read_parquet(runs[2] / f"{name}.parquet")),
        )


def test_a_live_worker_takes_over_the_share_of_one_that_was_killed(tmp_path: Path, fake_llm: Any) -> None:
    """Real worker processes: after one is SIGKILLed, the other receives its share of the model and makes
    the model's whole ``concurrency`` of requests at once; every unit is answered."""
    import asyncio

    from agentjudge.rundir.records import read_records
    from agentjudge.runner.work import Dataset
    from agentjudge.types import ModelSettings

    in_flight = _InFlight(0.1)
    fake_llm.set_responder(in_flight)
    data = Dataset(read_records(Path(__file__).parents[1] / "data" / "mini" / "records.jsonl", limit=1))
    task = data.task(data.records[0], "easy")
    gen = ModelSettings(**_judge(fake_llm, "gen-a", 4))
    spec = workers.WorkerSpec(
        generators=[gen],
        judges=[],
        cache=tmp_path / "cache.sqlite",
        read_cache=True,
        reask=0,
        prompt_family="agentjudge",
        tool_rendering="full",
    )
    pool = WorkerPool(2, spec)
    pool.fork()
    victim, survivor = pool._workers

    async def scenario() -> list[Any]:
        await pool.start()
        os.kill(victim.pid, signal.SIGKILL)
        for _ in range(500):
            if victim.dead is not None:
                break
            await asyncio.sleep(0.01)
        assert victim.dead is not None
        assert survivor.shares == {"gen-a": 4}
        answers = await asyncio.gather(*(pool.call("predict", "gen-a", (task, trial)) for trial in range(12)))
        await pool.close()
        return answers

    try:
        answers = asyncio.run(scenario())
    finally:
        pool.abandon()
    # each unit was answered by the model (its text is no tool call, which the prediction says)
    assert len(answers) == 12 and all(a.usage.completion_tokens > 0 for a in answers)
    assert sum(in_flight.now.values()) == 0 and len(fake_llm.requests) == 12
    assert in_flight.most["gen-a"] == 4  # its own 2 and the killed worker's 2


def test_only_a_stages_worker_models_send_units_ahead_and_only_where_the_pipeline_limit_cannot_bind() -> None:
    """``_Grid._ahead``: a quarter of the model's cap (at least one per worker) for the stage's own worker
    models; nothing for an in-process model, even one named like a worker model of the other role; nothing
    when the stage's caps add up to more than the pipeline's ``concurrency``; nothing without workers."""
    from types import SimpleNamespace

    from agentjudge.runner.grid import _Grid

    grid = SimpleNamespace(
        pool=SimpleNamespace(size=2),
        caps={"x": 32, "judge": 8, "local": 4},
        pipe=SimpleNamespace(concurrency=48),
        remote_gens={"gen"},
        remote_judges={"x", "judge"},
    )
    assert _Grid._ahead(grid, "judge", {"x", "judge", "local"}) == {"x": 8, "judge": 2}  # type: ignore[arg-type]
    assert _Grid._ahead(grid, "predict", {"x", "local"}) == {}  # type: ignore[arg-type]  # x: a local generator
    grid.pipe.concurrency = 43  # 32 + 8 + 4 = 44 > 43: the pipeline's limit may bind
    assert _Grid._ahead(grid, "judge", {"x", "judge", "local"}) == {}  # type: ignore[arg-type]
    grid.pipe.concurrency, grid.pool = 48, None
    assert _Grid._ahead(grid, "judge", {"x", "judge"}) == {}  # type: ignore[arg-type]


def test_a_model_whose_concurrency_is_below_the_workers_runs_in_the_one_holding_its_share(
    tmp_path: Path, fake_llm: Any
) -> None:
    """``concurrency: 1`` with ``workers: 2``: one worker holds the model's whole share, every unit is
    answered, and no two requests of it are ever in flight together."""
    in_flight = _InFlight(0.02)
    fake_llm.set_responder(in_flight)
    pipeline = write_pipeline(
        tmp_path,
        generators=["sim/mid"],
        judges=[_judge(fake_llm, "judge-a", 1)],
        conditions=["with_gt"],
        workers=2,
    )
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    judgments = pd.read_parquet(tmp_path / "run" / "judgments.parquet")
    assert (
        judgments["record_id"].nunique() == 8 and judgments["judge_error"].isna().all()
    )  # 4 records x 2 levels
    assert in_flight.most["judge-a"] == 1 and len(fake_llm.requests) == 8
