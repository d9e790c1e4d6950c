"""Model calls in worker processes (pipeline key ``workers``): both cores for litellm, one store writer.

Why processes: a judge call costs a few milliseconds of CPU in litellm and httpx (request building,
response parsing, pydantic), so one event loop on one core caps a run at a few hundred calls per second
however high the concurrency. ``workers: N`` starts N processes (``python -m agentjudge.runner.workers``),
each with its own event loop, litellm import and ``ModelClient``; the parent keeps everything else.

What stays where:
* The parent schedules: the engine's per-model worker tasks and the global semaphore are held in the
  parent for the whole time a unit is out in a worker process, so per-model ``concurrency`` and the
  pipeline's ``concurrency`` hold across processes exactly as in one process (a parent-side token scheme:
  no splitting of limits, so no rounding and no idle share when one worker is busier than another).
* The parent is the one writer of ``run.sqlite``: a worker answers with the unit's result and the parent
  commits it, as for an in-process unit. A killed parent leaves nothing half-written; a unit whose answer
  had not been committed is run again by the next invocation, and its call is answered from the call cache
  (each worker writes it, as the in-process client does), so it is not paid twice.
* Only litellm models go to workers (``kind == "litellm"``; interactive generators stay in process, they
  are bound to the records' environments). Simulated generators, baselines, simulated judges and plugins
  run in the parent: they cost microseconds per unit, so a round trip to another process costs more than
  it saves.
* ``--max-cost`` needs one cost gate for the whole run, so a run with a cost cap keeps its calls in process.

Wire format: length-prefixed pickles over the worker's stdin/stdout (parent and workers are the same
program, so pickle is trusted here). The worker moves its own stdout to stderr first, so a library that
prints cannot corrupt a frame. Workers ignore SIGINT (Ctrl-C reaches the whole process group; the parent
decides) and exit when their stdin closes, which also happens when the parent is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentjudge.types import ModelSettings, PromptFamily

_HEADER = struct.Struct("!I")
MAX_DEFAULT_WORKERS = 8
AUTO_MIN_UNITS = 200  # with `workers` unset, fewer model-call units than this run in the parent


def default_workers() -> int:
    """The number of cores, capped at ``MAX_DEFAULT_WORKERS``."""
    return max(1, min(os.cpu_count() or 1, MAX_DEFAULT_WORKERS))


def effective_workers(configured: int | None, remote_units: int) -> int:
    """How many worker processes a stage with ``remote_units`` litellm units uses (1: in process).

    An explicit ``workers: N`` is obeyed; unset, workers start only for at least ``AUTO_MIN_UNITS`` units,
    because a worker takes a few seconds to import litellm and a small run is over before it pays off."""
    if remote_units == 0:
        return 1
    if configured is not None:
        return configured
    return default_workers() if remote_units >= AUTO_MIN_UNITS else 1


@dataclass
class WorkerSpec:
    """What a worker needs to build the run's remote models exactly as the parent would."""

    generators: list[ModelSettings]
    judges: list[ModelSettings]
    cache: str | None
    read_cache: bool
    reask: int
    prompt_family: PromptFamily
    tool_rendering: str


class RemoteUnitError(Exception):
    """A unit that raised in a worker: ``text`` is what ``engine.error_text`` made of it there."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _frame(obj: Any) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


async def _read_frame(reader: asyncio.StreamReader) -> Any:
    header = await reader.readexactly(_HEADER.size)
    (size,) = _HEADER.unpack(header)
    return pickle.loads(await reader.readexactly(size))  # noqa: S301 - our own child process


@dataclass
class _Worker:
    proc: asyncio.subprocess.Process
    pending: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    reader_task: asyncio.Task[None] | None = None
    final: asyncio.Future[Any] | None = None
    dead: str | None = None


class WorkerPool:
    """N worker processes; ``call`` sends one unit to the least busy one and awaits its result."""

    def __init__(self, size: int, spec: WorkerSpec) -> None:
        self.size = size
        self.spec = spec
        self._workers: list[_Worker] = []
        self._next_id = 0

    async def start(self) -> None:
        for _ in range(self.size):
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "agentjudge.runner.workers",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=2**26,
            )
            worker = _Worker(proc)
            worker.final = asyncio.get_running_loop().create_future()
            assert proc.stdin is not None
            proc.stdin.write(_frame(self.spec))
            worker.reader_task = asyncio.create_task(self._read(worker))
            self._workers.append(worker)

    async def _read(self, worker: _Worker) -> None:
        assert worker.proc.stdout is not None and worker.final is not None
        try:
            while True:
                message = await _read_frame(worker.proc.stdout)
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
                    future.set_exception(RemoteUnitError(payload))
        except (asyncio.IncompleteReadError, ConnectionError, EOFError) as exc:
            worker.dead = f"worker process {worker.proc.pid} exited ({type(exc).__name__})"
        except Exception as exc:  # noqa: BLE001 - an unreadable frame: this worker is no longer usable
            worker.dead = f"worker process {worker.proc.pid}: unreadable answer ({type(exc).__name__})"
            worker.proc.kill()
        finally:
            if worker.dead is None and not worker.final.done():
                worker.dead = f"worker process {worker.proc.pid} stopped"
            for future in worker.pending.values():
                if not future.done():
                    future.set_exception(RemoteUnitError(f"WorkerError: {worker.dead or 'worker stopped'}"))
            worker.pending.clear()
            if not worker.final.done():
                worker.final.set_result(None)

    async def call(self, role: str, name: str, payload: Any) -> Any:
        """Run ``models[role][name](*payload)`` in a worker; its exception comes back as RemoteUnitError."""
        alive = [w for w in self._workers if w.dead is None]
        if not alive:
            raise RemoteUnitError(f"WorkerError: every worker process has exited ({self._workers[0].dead})")
        worker = min(alive, key=lambda w: len(w.pending))
        self._next_id += 1
        call_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        worker.pending[call_id] = future
        assert worker.proc.stdin is not None
        worker.proc.stdin.write(_frame((call_id, role, name, payload)))
        try:
            return await future
        finally:
            worker.pending.pop(call_id, None)

    def abandon(self) -> None:
        """Close every worker's input without waiting (an interrupted run): each exits on its own."""
        for worker in self._workers:
            if worker.proc.stdin is not None:
                with contextlib.suppress(Exception):
                    worker.proc.stdin.close()

    async def close(self) -> list[Any]:
        """Ask every worker to finish and return its client statistics (None for a worker that died)."""
        for worker in self._workers:
            if worker.dead is None and worker.proc.stdin is not None:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    worker.proc.stdin.write(_frame(None))
                    await worker.proc.stdin.drain()
        stats = []
        for worker in self._workers:
            assert worker.final is not None
            stats.append(await worker.final)
            if worker.proc.stdin is not None:
                worker.proc.stdin.close()
            await worker.proc.wait()
        return stats


# --------------------------------------------------------------------------------------- worker side
def _build(spec: WorkerSpec, client: Any) -> dict[str, dict[str, Any]]:
    from agentjudge.models.registry import make_generator, make_judge

    judges: dict[str, Any] = {}
    for settings in spec.judges:
        judge = make_judge(settings, client)
        if spec.reask and hasattr(judge, "reask"):
            judge.reask = spec.reask
        if hasattr(judge, "prompt_family"):
            judge.prompt_family = spec.prompt_family
        if hasattr(judge, "tool_rendering"):
            judge.tool_rendering = spec.tool_rendering
        judges[settings.display_name] = judge
    gens = {s.display_name: make_generator(s, client) for s in spec.generators}
    return {"judge": judges, "predict": gens}


async def _serve(frames_in: int, frames_out: int) -> None:
    from agentjudge.models.cache import CallCache
    from agentjudge.models.client import ModelClient
    from agentjudge.runner.engine import error_text

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(frames_in, "rb"))
    transport, protocol = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(frames_out, "wb"))
    spec: WorkerSpec = await _read_frame(reader)
    cache = CallCache(Path(spec.cache)) if spec.cache else None
    client = ModelClient(cache=cache, read_cache=spec.read_cache)
    models = _build(spec, client)
    tasks: set[asyncio.Task[None]] = set()

    async def handle(call_id: int, role: str, name: str, payload: Any) -> None:
        try:
            result = await models[role][name](*payload)
            transport.write(_frame((call_id, True, result)))
        except Exception as exc:  # noqa: BLE001 - the parent records it as the unit's failure
            transport.write(_frame((call_id, False, error_text(exc))))

    try:
        while True:
            message = await _read_frame(reader)
            if message is None:
                break
            task = asyncio.create_task(handle(*message))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    except asyncio.IncompleteReadError:  # the parent went away: nobody will read an answer
        return
    if tasks:
        await asyncio.gather(*tasks)
    transport.write(_frame(("stats", client.stats)))
    transport.close()


def main() -> None:
    """Entry point of a worker process (started by ``WorkerPool``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    frames_out = os.dup(1)
    os.dup2(2, 1)  # anything printed goes to stderr, never into a frame
    from agentjudge.models.client import _litellm

    _litellm()  # imported before the event loop starts, never inside it
    asyncio.run(_serve(0, frames_out))


if __name__ == "__main__":
    main()
