"""Model calls in worker processes (pipeline key ``workers``): both cores for litellm, one store writer.

Why processes: a judge call costs a few milliseconds of CPU in litellm and httpx (request building,
response parsing, pydantic), so one event loop on one core caps a run at a few hundred calls per second
however high the concurrency. ``workers: N`` forks N processes before the parent's event loop starts (after
litellm is imported, so a worker costs no second import: that import is worth about a thousand calls of
CPU), each running its own event loop and ``ModelClient``; the parent keeps everything else.

What stays where:
* The parent schedules; the workers hold the limits around the requests. Each worker holds a share of
  every model's ``concurrency`` (``split_limit``: the shares add up to it, no rounding) around the request
  alone (``ModelClient``'s ``call_limits``; around each HTTP exchange once its model was seen sending through
  httpx, ``fastpaths/http_shares.py``), and the parent keeps a few more of a model's units out than the
  model's ``concurrency`` (``engine.run_units``'s ``ahead``), so a worker builds the next prompts, looks up
  the cache and parses answers while its share of requests is out: those milliseconds (and the pipes
  both ways) no longer hold a slot. A unit goes to the worker with the fewest of the model's units out
  for its share. A worker that exits hands its shares to the live ones (``_Widen``), so a model keeps its
  whole ``concurrency``. Units are sent ahead only in a stage whose models' ``concurrency`` adds up to no
  more than the pipeline's, which therefore cannot bind there (those units take no slot of it); in any
  other stage the parent holds a slot of the pipeline's ``concurrency`` for each unit from start to
  finish, as in one process, and sends nothing ahead.
* The parent is the one writer of ``run.sqlite``: a worker answers with the unit's result and the parent
  commits it, as for an in-process unit. A killed parent leaves nothing half-written; a unit whose answer
  had not been committed is run again by the next invocation, and its call is answered from the call cache
  (each worker writes it, as the in-process client does), so it is not paid twice.
* Only litellm models go to workers (``kind == "litellm"``; interactive generators stay in process, they
  are bound to the records' environments). Simulated generators, baselines and simulated judges cost
  microseconds per unit, so a round trip per unit costs more than it saves: they are split across
  processes in chunks of whole records by ``runner/offline.py`` instead; plugins run in the parent.
* ``--max-cost`` needs one cost gate for the whole run, so a run with a cost cap keeps its calls in process.

Wire format: length-prefixed pickles over two pipes per worker (parent and workers are the same program,
so pickle is trusted here). Workers ignore SIGINT (Ctrl-C reaches the whole process group; the parent
decides: an interrupted parent stops them with SIGTERM and reaps them) and exit when their request pipe
closes, which is what a SIGKILLed parent leaves them. The fork happens before any event loop exists; a
worker runs only its own loop and then ``os._exit``, so threads of the forking process (a test's in-process
server) are never used in it. POSIX only (``os.fork``), like the rest of the runner's process handling.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import struct
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentjudge.fastpaths.heap import freeze
from agentjudge.runner.scheduler import RemoteUnitError
from agentjudge.types import GTStep, ModelSettings, PromptFamily, Task

_HEADER = struct.Struct("!I")
MAX_DEFAULT_WORKERS = 8
AUTO_MIN_UNITS = 200  # with `workers` unset, fewer model-call units than this run in the parent


def default_workers() -> int:
    """The number of cores, capped at ``MAX_DEFAULT_WORKERS``."""
    return max(1, min(os.cpu_count() or 1, MAX_DEFAULT_WORKERS))


def effective_workers(configured: int | None, remote_units: int) -> int:
    """How many worker processes a run with ``remote_units`` litellm units uses (1: all in process).

    An explicit ``workers: N`` is obeyed; unset, workers are forked only for at least ``AUTO_MIN_UNITS``
    units: a small run gains nothing from a second core, and one process is the simpler thing to debug."""
    if remote_units == 0:
        return 1
    if configured is not None:
        return configured
    return default_workers() if remote_units >= AUTO_MIN_UNITS else 1


@dataclass
class WorkerSpec:
    """What a worker needs to build the run's remote models exactly as the parent does."""

    generators: list[ModelSettings]
    judges: list[ModelSettings]
    cache: Path | None  # the pipeline's `cache` (None: the default cache file, as in the parent)
    read_cache: bool
    reask: int
    prompt_family: PromptFamily
    tool_rendering: str


def split_limit(limit: int, size: int, first: int = 0) -> list[int]:
    """``limit`` calls in flight split over ``size`` worker processes: the shares add up to ``limit`` and
    differ by at most one; the larger ones start at worker ``first`` (each model starts at its own, so one
    worker does not take every model's remainder)."""
    base, extra = divmod(limit, size)
    return [base + ((i - first) % size < extra) for i in range(size)]


def model_shares(spec: WorkerSpec, size: int) -> list[dict[str, int]]:
    """Per worker process, its share of each remote model's ``concurrency`` (models by display name; a judge
    named like a generator is that model, as in the parent's caps)."""
    # at least 1, as every semaphore of a model's ``concurrency`` is (``ModelClient._semaphore``, the engine)
    limits = {s.display_name: max(1, s.concurrency) for s in (*spec.generators, *spec.judges)}
    shares: list[dict[str, int]] = [{} for _ in range(size)]
    for first, (name, limit) in enumerate(sorted(limits.items())):
        for worker, share in enumerate(split_limit(limit, size, first)):
            shares[worker][name] = share
    return shares


@dataclass(frozen=True)
class _Widen:
    """The parent's frame giving a worker more of some models' calls in flight (another worker exited)."""

    shares: dict[str, int]


def _frame(obj: Any) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


@dataclass(frozen=True)
class _TaskRef:
    """A ``Task`` the worker holds, by its token (``_request_frame``)."""

    token: str


@dataclass(frozen=True)
class _WithTask:
    """A ``JudgeRequest`` for the pipe: its ``task`` (and its GT steps, when it shows some) replaced by None,
    put back by token on the worker's side."""

    token: str
    gt: str | None
    model: Any


class _TaskTokens:
    """The parent's names for what it has sent: one token per distinct task content, one per record's GT
    steps. A task is known by its record id, query and system prompt and the identity of its tool objects
    (a record's, shared by every task built from it and alive, like the record, for the whole run); GT steps
    by the identity of the steps (a record's too; a request holds a new list of them). The table keeps what
    it names, so no identity is reused while the name is in use."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[Any, ...], tuple[str, Any]] = {}

    def of(self, task: Task) -> str:
        key = (task.record_id, task.query, task.system_prompt, tuple(map(id, task.tools)))
        return self._name(key, "t", task)

    def of_steps(self, steps: list[GTStep]) -> str:
        return self._name(("gt", *map(id, steps)), "g", tuple(steps))

    def _name(self, key: tuple[Any, ...], kind: str, value: Any) -> str:
        known = self._tokens.get(key)
        if known is None:
            known = self._tokens[key] = (f"{kind}{len(self._tokens)}", value)
        return known[0]


def _request_frame(message: tuple[Any, ...], tokens: _TaskTokens, known: set[str]) -> bytes:
    """A request frame: ``(new shared items, message)`` with each ``Task`` of the payload (a record's tools,
    query and system prompt: ~85 % of a judge request's bytes) and a judge request's GT steps named by a
    token; what this worker lacks is sent once, in ``new``, in the frame of the first payload that refers to
    it. The worker then holds one copy of each: the judge prompt's memos, keyed by the identity of the GT
    steps (``judges.prompts``), hit there as they do here.

    The payload's items are looked at, not pickled through a ``persistent_id`` hook: that hook is a Python
    call for every object pickled (~300 for a judge request: ~20 µs of the parent's time per call with
    ``workers: 2``). A task is a payload item (``predict``) or a payload item's ``task`` field (``judge``'s
    request); one anywhere else is pickled whole (equal on arrival, only larger)."""
    *head, payload = message
    new: dict[str, Any] = {}

    def token(name: str, value: Any) -> str:
        if name not in known:
            new[name] = value
        return name

    items = []
    for item in payload:
        if type(item) is Task:
            item = _TaskRef(token(tokens.of(item), item))
        elif (  # set in place on the worker's side: not for a frozen model (pickled whole, as any other)
            isinstance(item, BaseModel)
            and type(getattr(item, "task", None)) is Task
            and not item.model_config.get("frozen")
        ):
            steps = getattr(item, "gt", None)
            gt = token(tokens.of_steps(steps), tuple(steps)) if type(steps) is list and steps else None
            blank = {"task": None, "gt": None} if gt is not None else {"task": None}
            item = _WithTask(token(tokens.of(item.task), item.task), gt, item.model_copy(update=blank))  # type: ignore[attr-defined]
        items.append(item)
    frame = _frame((new, (*head, tuple(items))))
    known.update(new)  # only once the frame exists: one that cannot be built is never sent
    return frame


def _read_request(frame: Any, tasks: dict[str, Any]) -> Any:
    """The worker's side of ``_request_frame``: remember the new shared items, then put them into the
    payload."""
    if frame is None:
        return None
    new, (*head, payload) = frame
    tasks.update(new)
    items = []
    for item in payload:
        if type(item) is _TaskRef:
            item = tasks[item.token]
        elif type(item) is _WithTask:  # a model just unpickled, this side's own: set in place
            item.model.task = tasks[item.token]
            if item.gt is not None:
                item.model.gt = list(tasks[item.gt])  # a new list of the same steps, as in the parent
            item = item.model
        items.append(item)
    return (*head, tuple(items))


async def _read_frame(reader: asyncio.StreamReader) -> Any:
    header = await reader.readexactly(_HEADER.size)
    (size,) = _HEADER.unpack(header)
    return pickle.loads(await reader.readexactly(size))  # noqa: S301 - our own forked process


async def _pipe_streams(read_fd: int, write_fd: int) -> tuple[asyncio.StreamReader, asyncio.WriteTransport]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    protocol = asyncio.StreamReaderProtocol(reader)
    await loop.connect_read_pipe(lambda: protocol, os.fdopen(read_fd, "rb", buffering=0))
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(write_fd, "wb", buffering=0))
    return reader, transport


class _Outbox:
    """Frames for one pipe, written together once per event-loop turn: the units a turn starts (or the answers
    it finishes) cost one write and wake the other side once, instead of once per frame. A frame is never
    held past the turn that made it, so nothing waits on the batch; the reader takes the frames apart by
    their length prefixes as before."""

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self.transport = transport
        self.frames: list[bytes] = []

    def send(self, frame: bytes) -> None:
        if not self.frames:
            asyncio.get_running_loop().call_soon(self.flush)
        self.frames.append(frame)

    def flush(self) -> None:
        if self.frames:
            data = b"".join(self.frames)
            self.frames.clear()
            self.transport.write(data)


def _signal(pid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to one worker process, if it still exists. Only to a process id: ``kill`` reads 0 as this
    process group and -1 as every process the user may signal, and no worker has such an id."""
    if pid > 0:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


@dataclass
class _Worker:
    pid: int
    request_fd: int  # the parent writes requests here
    answer_fd: int  # and reads answers here
    writer: asyncio.WriteTransport | None = None
    pending: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    reader_task: asyncio.Task[None] | None = None
    final: asyncio.Future[Any] | None = None
    dead: str | None = None
    reaped: bool = False
    fds_closed: bool = False
    tasks_sent: set[str] = field(default_factory=set)  # task tokens this worker holds (_request_frame)
    outbox: _Outbox | None = None  # frames for this worker, written once per event-loop turn
    shares: dict[str, int] = field(default_factory=dict)  # its share of each model's calls in flight
    load: dict[str, int] = field(default_factory=dict)  # its units out, by model


class WorkerPool:
    """N forked worker processes; ``call`` sends one unit to the one with the fewest of its model's units out
    for its share of the model, and awaits its result.

    ``fork()`` before the event loop starts, ``await start()`` inside it, ``await close()`` at the end
    (``abandon()`` when interrupted)."""

    def __init__(self, size: int, spec: WorkerSpec) -> None:
        self.size = size
        self.spec = spec
        self.shares = model_shares(spec, size) if spec is not None else None
        self._workers: list[_Worker] = []
        self._tasks = _TaskTokens()
        self._routes: dict[str, list[Any]] = {}  # route -> [its worker, its calls in flight] (see call)
        self._next_id = 0
        self.started = False

    def fork(self) -> None:
        # everything alive now (litellm, the dataset, the pipeline) stays alive in the workers: frozen, the
        # collector never walks it there, so their pages stay shared with the parent instead of copied
        freeze()  # (fastpaths/heap.py)
        for _ in range(self.size):
            request_r, request_w = os.pipe()
            answer_r, answer_w = os.pipe()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the worker: never returns into the caller's code
                code = 1
                try:
                    os.close(request_w)
                    os.close(answer_r)
                    for earlier in self._workers:  # their pipes are the parent's, not this worker's
                        os.close(earlier.request_fd)
                        os.close(earlier.answer_fd)
                    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
                    shares = self.shares[len(self._workers)] if self.shares is not None else None
                    asyncio.run(_serve(self.spec, request_r, answer_w, shares))
                    code = 0
                except BaseException:  # noqa: BLE001 - reported, then the worker ends
                    traceback.print_exc()
                finally:
                    os._exit(code)
            os.close(request_r)
            os.close(answer_w)
            shares = dict(self.shares[len(self._workers)]) if self.shares is not None else {}
            self._workers.append(_Worker(pid, request_w, answer_r, shares=shares))

    async def start(self) -> None:
        """Connect the pipes to the running loop and start reading answers (once)."""
        if self.started:
            return
        self.started = True
        readers = []
        for worker in self._workers:
            reader, worker.writer = await _pipe_streams(worker.answer_fd, worker.request_fd)
            worker.outbox = _Outbox(worker.writer)
            worker.final = asyncio.get_running_loop().create_future()
            readers.append(reader)
        # every outbox exists before any answer is read: a worker found dead at once hands its shares over
        for worker, reader in zip(self._workers, readers, strict=True):
            worker.reader_task = asyncio.create_task(self._read(worker, reader))

    async def _read(self, worker: _Worker, reader: asyncio.StreamReader) -> None:
        assert worker.final is not None
        try:
            while True:
                message = await _read_frame(reader)
                if message[0] == "stats":
                    worker.final.set_result(message[1])
                    return
                call_id, ok, payload = message
                future = worker.pending.pop(call_id, None)
                if future is None or future.done():
                    continue
                if ok:
                    future.set_result(payload)
                else:
                    future.set_exception(RemoteUnitError(*payload))
        except (asyncio.IncompleteReadError, ConnectionError, EOFError) as exc:
            worker.dead = f"worker process {worker.pid} exited ({type(exc).__name__})"
        except Exception as exc:  # noqa: BLE001 - an unreadable frame: this worker is no longer usable
            worker.dead = f"worker process {worker.pid}: unreadable answer ({type(exc).__name__})"
            _signal(worker.pid, signal.SIGKILL)
        finally:
            if worker.dead is None and not worker.final.done():
                worker.dead = f"worker process {worker.pid} stopped"
            for future in worker.pending.values():
                if not future.done():
                    future.set_exception(RemoteUnitError(f"WorkerError: {worker.dead or 'worker stopped'}"))
            worker.pending.clear()
            if not worker.final.done():
                worker.final.set_result(None)
            if worker.dead is not None:
                self._hand_over(worker)

    def _hand_over(self, gone: _Worker) -> None:
        """Give the shares of a worker that exited to the live ones, so each model keeps its whole
        ``concurrency``. Its requests ended with it on this side; a server that goes on computing an
        answer whose connection closed counts it a little longer (at most the dead worker's share, once)."""
        alive = [w for w in self._workers if w.dead is None and w.outbox is not None]
        alive = [w for w in alive if w.final is None or not w.final.done()]  # not one that has finished
        if not alive:
            return
        more: list[dict[str, int]] = [{} for _ in alive]
        for first, (name, share) in enumerate(sorted(gone.shares.items())):
            for i, extra in enumerate(split_limit(share, len(alive), first)):
                if extra:
                    more[i][name] = extra
        gone.shares = {}
        for worker, extra_shares in zip(alive, more, strict=True):
            if extra_shares:
                for name, extra in extra_shares.items():
                    worker.shares[name] = worker.shares.get(name, 0) + extra
                assert worker.outbox is not None
                worker.outbox.send(_frame(_Widen(extra_shares)))

    def _share(self, worker: _Worker, name: str) -> int:
        """A worker's share of ``name``'s calls in flight (1 each in a pool built without a spec: tests)."""
        return worker.shares.get(name, 0) if self.shares is not None else 1

    async def call(self, role: str, name: str, payload: Any, route: str | None = None) -> Any:
        """Run ``models[role][name](*payload)`` in a worker; its exception comes back as RemoteUnitError.
        ``start`` must have finished.

        ``route``: the identity of the request (calls with one route ask the same thing). While a call of a
        route is in flight, later calls of that route go to the same worker, so identical requests meet in
        one client, which sends one of them and answers the others from it (the in-flight sharing is per
        process). Otherwise, with or without a route, the worker with the fewest of the model's units out
        for its share of the model (a worker without a share never gets one): a route pins nothing once
        its calls have come back (by then the answer is in the call cache, which every worker reads), so
        work spreads evenly however the routes are distributed."""
        alive = [w for w in self._workers if w.dead is None and w.writer is not None]
        if not alive:
            raise RemoteUnitError(f"WorkerError: every worker process has exited ({self._workers[0].dead})")
        able = [w for w in alive if self._share(w, name) > 0]
        if not able:  # cannot happen while a worker lives: an exited worker's shares pass to the others
            raise RemoteUnitError(f"WorkerError: no live worker process holds a share of {name}'s calls")
        held = self._routes.get(route) if route is not None else None
        if held is not None and held[0] in able:
            worker = held[0]
        else:  # the least busy for this model, for its share; then the least busy overall
            worker = min(able, key=lambda w: (w.load.get(name, 0) / self._share(w, name), len(w.pending)))
            if route is not None:
                held = self._routes[route] = [worker, 0]  # calls on a dead worker count on their own list
        if held is not None:
            held[1] += 1  # calls of this route in flight
        worker.load[name] = worker.load.get(name, 0) + 1
        self._next_id += 1
        call_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        worker.pending[call_id] = future
        assert worker.outbox is not None
        try:  # a frame that cannot be built (an unpicklable payload) releases the route and the slot too
            worker.outbox.send(_request_frame((call_id, role, name, payload), self._tasks, worker.tasks_sent))
            return await future
        finally:
            worker.pending.pop(call_id, None)
            worker.load[name] -= 1
            if held is not None and route is not None:
                held[1] -= 1
                if held[1] == 0 and self._routes.get(route) is held:
                    del self._routes[route]

    async def close(self) -> list[Any]:
        """Ask every worker to finish and return its client statistics (None for a worker that died)."""
        await self.start()
        for worker in self._workers:
            if worker.dead is None and worker.outbox is not None:
                worker.outbox.send(_frame(None))  # after every request sent before it
                worker.outbox.flush()
        stats = []
        for worker in self._workers:
            assert worker.final is not None
            stats.append(await worker.final)
        self.abandon()
        return stats

    def abandon(self) -> None:
        """End the workers and reap them. After ``close`` they have already finished; after an interruption
        they are stopped mid-call, which loses nothing: the parent commits units, and a call a worker had
        finished is already in the call cache."""
        for worker in self._workers:
            if not worker.reaped:
                _signal(worker.pid, signal.SIGTERM)
        for worker in self._workers:
            if not worker.reaped:
                worker.reaped = True
                if worker.pid > 0:  # waitpid(0 or -1) would wait for any child of this process
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(worker.pid, 0)
            if worker.writer is None and not worker.fds_closed:  # never handed to an event loop
                worker.fds_closed = True
                for fd in (worker.request_fd, worker.answer_fd):
                    with contextlib.suppress(OSError):
                        os.close(fd)


# --------------------------------------------------------------------------------------- worker side
def _build(spec: WorkerSpec, client: Any) -> dict[str, dict[str, Any]]:
    from agentjudge.registry.factory import configure_judge, make_generator, make_judge

    judges: dict[str, Any] = {
        settings.display_name: configure_judge(
            make_judge(settings, client),
            reask=spec.reask,
            prompt_family=spec.prompt_family,
            tool_rendering=spec.tool_rendering,
        )
        for settings in spec.judges
    }
    gens = {s.display_name: make_generator(s, client) for s in spec.generators}
    return {"judge": judges, "predict": gens}


async def _serve(spec: WorkerSpec, request_fd: int, answer_fd: int, shares: dict[str, int] | None) -> None:
    from agentjudge.fastpaths.inline_executor import install_if_loaded
    from agentjudge.models.cache import CallCache
    from agentjudge.models.client import ModelClient
    from agentjudge.runner.scheduler import error_attempts, error_text

    install_if_loaded()  # litellm's request building runs inline in this loop (fastpaths/inline_executor.py)
    reader, writer = await _pipe_streams(request_fd, answer_fd)
    outbox = _Outbox(writer)
    client = ModelClient(cache=CallCache(spec.cache), read_cache=spec.read_cache, call_limits=shares)
    models = _build(spec, client)
    tasks: set[asyncio.Task[None]] = set()
    known_tasks: dict[str, Any] = {}  # token -> task or GT steps, as the parent sent them (_request_frame)

    async def handle(call_id: int, role: str, name: str, payload: Any) -> None:
        try:
            result = await models[role][name](*payload)
            outbox.send(_frame((call_id, True, result)))
        except Exception as exc:  # noqa: BLE001 - the parent records it as the unit's failure
            outbox.send(_frame((call_id, False, (error_text(exc), error_attempts(exc)))))

    try:
        while True:
            frame = await _read_frame(reader)
            if type(frame) is _Widen:
                client.widen(frame.shares)
                continue
            message = _read_request(frame, known_tasks)
            if message is None:
                break
            task = asyncio.create_task(handle(*message))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    except asyncio.IncompleteReadError:  # the parent went away: nobody will read an answer
        return
    if tasks:
        await asyncio.gather(*tasks)
    if client.cache is not None:  # its hit counts, now: a worker ends with os._exit (models/cache.py)
        client.cache.flush_hits()
    outbox.send(_frame(("stats", client.stats)))
    outbox.flush()
    while writer.get_write_buffer_size():  # asyncio.run must not close the loop on unsent answers
        await asyncio.sleep(0.005)
    writer.close()
