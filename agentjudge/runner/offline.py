"""Offline units in chunks, on every core: simulated generators, baselines and simulated judges.

Why: these models answer in microseconds, so on a paper-shaped offline grid (685,440 judge units) the
runner's own per-unit machinery -- an asyncio worker step, a semaphore, two timestamps, a JSON dump in
the store's thread -- cost as much as the judging, and everything ran on one core. Here a stage's offline
units are cut into chunks of 1,000 units in record order (``prefix_order``: every judge, condition and
generator of a record next to each other, so per-record caches hit; a record may straddle two chunks) and
each chunk is computed in a tight synchronous loop:

* with ``workers`` N > 1 (unset: the cores, at most 8, for stages of at least ``AUTO_MIN_OFFLINE_UNITS``
  offline units) by this process and N - 1 children forked at the start of the stage, after the stage's
  inputs exist, so they inherit the dataset, the predictions and the scores and nothing of them is pickled.
  Each works through its own contiguous share of the chunks (a forked child copies every page it touches,
  if only to count a reference: so it touches its share only) and takes from the largest share left when
  done. A chunk goes out as one integer (its index into the stage's unit list, which the children inherit
  too) and comes back as one compact list: per unit the status, the result already encoded as the store's
  JSON text, the error, the usage (None when at its default) and the parse flags -- a pickle round trip
  per chunk, not per unit;
* with one process, by the same loop in the main process.

Storing: a child commits each chunk it computes in one transaction of its own (``store.GroupWriter``)
before it answers, and answers with the units' outcomes only; the main process stores its own chunks
through the store's group commits and keeps the engine's accounting for all (tallies, failures, stopped
models) with ``scheduler.settle``. Why: unpickling a child's ~0.5 MB answer and inserting its rows were
most of the main process's time while the child waited. Under a cost cap, once a model is stopped, and for
a chunk with a model-fatal failure, the main process stores instead (it decides unit by unit, as the engine
does); so it does for a child whose write fails (a full disk, an I/O error): that chunk and the child's
later ones come back unstored, and the main process says once why (a one-line warning, no traceback).
"Once a model is stopped" means stopped when the stage starts: a model stopped during the stage by a
model-fatal failure (no built-in offline model produces one) still has the chunks children compute for it
stored (counted done, not "not run"), where one process would store none of them (known, not fixed).
A killed run loses at most the open group and the chunks in flight (their units are not in the store and
run again), and a unit never has two rows (the primary key); a child killed after its commit and before
its answer arrives has its chunk computed and stored again by the main process (one row, ``attempts`` 2).
Results do not depend on the number of processes: the offline models are deterministic per unit (seeded
by the unit's coordinates, never by call order), and the export sorts by coordinates.

Processes: the children ignore SIGINT (Ctrl-C is the main process's: it stops at the next chunk boundary,
stores what came back, then SIGTERMs and reaps them) and exit when their request pipe closes, which is also
what a SIGKILLed main process leaves them (a child whose answer finds the pipe closed exits quietly). A
child that cannot be started is reported and the rest go on; a child that dies has its chunks computed in
the main process.
The chunk loop drives each model's coroutine without an event loop (``drive``): an offline model never
suspends; one that did would fail its unit with a message saying so. POSIX only (``os.fork``).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import pickle
import selectors
import signal
import struct
import sys
import traceback
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any

from agentjudge.fastpaths.heap import freeze
from agentjudge.models.failures import Failure, is_model_fatal
from agentjudge.registry.model_strings import model_kind
from agentjudge.runner import scheduler
from agentjudge.runner.events import Bars, OfflineStoreWarning
from agentjudge.runner.store import GroupWriter, RunStore, UnitKey, now, store_failure_columns
from agentjudge.runner.work import Dataset, ScoreKey, compute_scores, prefix_order
from agentjudge.types import ModelSettings, Prediction, Score, ScoringMode, Usage

OFFLINE_KINDS = frozenset({"sim", "simjudge", "baseline", "imported", "imported-baseline"})
AUTO_MIN_OFFLINE_UNITS = 20_000  # with `workers` unset, smaller stages run their offline units in process
CHUNK_UNITS = 1_000  # units per chunk: ~tens of ms of work, a ~0.5 MB answer
_HEADER = struct.Struct("!Q")

# (status, result text, error, usage, parse failed, parse note, failure kind, failure attempts)
Encoded = tuple[str, str | None, str | None, dict[str, Any] | None, bool, str | None, str | None, int | None]
"""One unit as a chunk returns it: status, result JSON text, error, usage (None: default), parse_failed,
parse_note."""


def offline_models(settings: Sequence[ModelSettings]) -> set[str]:
    """Display names of the models whose units the chunk loop runs (simulated, baseline, simjudge)."""
    return {s.display_name for s in settings if model_kind(s.model) in OFFLINE_KINDS}


def offline_workers(
    configured: int | None, units: int, chunk: int | None = None, auto_min: int = AUTO_MIN_OFFLINE_UNITS
) -> int:
    """Processes for ``units`` offline units cut in chunks of ``chunk`` (1: the main process computes them).

    An explicit ``workers: N`` is obeyed (never more processes than chunks); unset, the cores (at most 8)
    from ``auto_min`` units on: below that a fork costs more than a second core saves."""
    from agentjudge.runner.workers import default_workers

    if units == 0:
        return 1
    if configured is not None:
        return max(1, min(configured, -(-units // (chunk or CHUNK_UNITS))))
    return default_workers() if units >= auto_min else 1


def drive(coroutine: Any) -> Any:
    """The result of a coroutine that never suspends (an offline model's ``__call__``), without a loop."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    coroutine.close()
    raise RuntimeError("an offline model awaited something outside the runner's event loop")


def encode(outcome: scheduler.Outcome) -> Encoded:
    payload = outcome.text
    if payload is None and outcome.result is not None:
        payload = json.dumps(outcome.result, separators=(",", ":"))
    usage = outcome.usage
    plain = usage == _DEFAULT_USAGE
    return (
        outcome.status,
        payload,
        outcome.error,
        None if plain else usage.model_dump(),
        outcome.parse_failed,
        outcome.parse_note,
        outcome.kind,
        outcome.attempts,
    )


_DEFAULT_USAGE = Usage()


def decode(encoded: Encoded) -> tuple[str | None, scheduler.Outcome]:
    status, payload, error, usage, parse_failed, note, kind, attempts = encoded
    outcome = scheduler.Outcome(
        status,  # type: ignore[arg-type]
        None,
        error,
        Usage() if usage is None else Usage.model_validate(usage),
        parse_failed,
        note,
        kind=kind,
        attempts=attempts,
    )
    return payload, outcome


def compute_chunk(units: Sequence[UnitKey], work: Callable[[UnitKey], scheduler.Outcome]) -> list[Encoded]:
    """Run ``work`` on every unit; a unit that raises is failed with the engine's error text. An outcome
    object that ``work`` returns again (a judge that answers alike) is encoded once."""
    out: list[Encoded] = []
    again: dict[int, tuple[scheduler.Outcome, Encoded]] = {}  # id -> (the outcome, kept alive; its encoding)
    for unit in units:
        try:
            outcome = work(unit)
        except Exception as exc:  # noqa: BLE001 - a unit's failure is recorded, never fatal to the grid
            outcome = scheduler.raised(exc)
        seen = again.get(id(outcome))
        if seen is None:
            seen = again[id(outcome)] = (outcome, encode(outcome))
        out.append(seen[1])
    return out


# ------------------------------------------------------------------------------------------- the pool
def _write_frame(fd: int, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, size: int) -> bytes:
    parts, left = [], size
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            raise EOFError
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _widen(fd: int) -> None:
    """Give an answer pipe the system's largest buffer (Linux: 1 MiB by default, not 64 KiB), best effort.

    Why: a chunk's answer is ~0.5 MB; while this process computes one of its own chunks it reads no
    answers, and a child with a full pipe would sit blocked in its write instead of starting its next
    chunk."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setsize is None:
        return
    try:
        with open("/proc/sys/fs/pipe-max-size", encoding="ascii") as limit:
            size = int(limit.read())
        fcntl.fcntl(fd, setsize, size)
    except (OSError, ValueError):
        pass  # an older kernel or a lower limit: the default buffer works, only slower


def _read_frame(fd: int) -> Any:
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size))
    return pickle.loads(_read_exactly(fd, size))  # noqa: S301 - our own forked process


class ChunkPool:
    """``size`` forked children that each compute ``compute(payload)`` for the payloads sent to them.

    Payload i goes to child i mod size, at most ``depth`` in flight per child; ``map`` yields the answers in
    payload order. Create it when the children should inherit the caller's state (the payloads can then be
    small: an index). ``depth`` 2 keeps a child busy while its last answer is read, and is safe only for
    payloads that fit in a pipe's buffer (an index): otherwise this process could block writing the next
    payload to a child that is itself blocked writing its answer; larger payloads need ``depth`` 1."""

    def __init__(self, size: int, compute: Callable[[Any], Any], depth: int = 2) -> None:
        self.compute = compute
        self.depth = depth
        self.children: list[tuple[int, int, int]] = []  # pid, request fd (write), answer fd (read)
        self.dead: set[int] = set()
        sys.stdout.flush()
        sys.stderr.flush()
        freeze()  # the inherited heap is not touched by collections (fewer copied pages; see grid.py)
        for started in range(size):
            try:
                self._fork_one()
            except OSError as exc:  # EAGAIN/ENOMEM/EMFILE: go on with the children there are (this
                # process computes too), and say so: a failure is explained, not hidden
                sys.stderr.write(
                    f"warning: could not start offline worker process {started + 1} of {size} ({exc}); "
                    f"continuing with {len(self.children)} (set `workers: 1` to use none)\n"
                )
                break

    def _fork_one(self) -> None:
        request_r, request_w = os.pipe()
        try:
            answer_r, answer_w = os.pipe()
        except OSError:
            os.close(request_r)
            os.close(request_w)
            raise
        _widen(answer_w)
        try:
            pid = os.fork()
        except OSError:
            for fd in (request_r, request_w, answer_r, answer_w):
                os.close(fd)
            raise
        if pid == 0:  # the child: never returns into the caller's code
            code = 1
            try:
                # the parent's streams may be a progress bar's proxies (a refresh thread held their
                # locks at the fork): the child writes to the process's own streams only
                sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
                os.close(request_w)
                os.close(answer_r)
                for _, earlier_w, earlier_r in self.children:
                    os.close(earlier_w)
                    os.close(earlier_r)
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's
                # close() SIGTERMs a child still busy: it ends at once, whatever handler the parent had
                # installed (a handler that raises SystemExit would print a traceback under the bar)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                _serve(self.compute, request_r, answer_w)
                code = 0
            except (BrokenPipeError, EOFError):  # the main process is gone (killed, or stopped early)
                code = 0
            except BaseException:  # noqa: BLE001 - reported, then the child ends
                with contextlib.suppress(OSError):
                    os.write(2, traceback.format_exc().encode("utf-8", "replace"))
            finally:
                os._exit(code)
        os.close(request_r)
        os.close(answer_w)
        self.children.append((pid, request_w, answer_r))

    def map(self, payloads: Iterable[Any]) -> Iterator[Any]:
        size = len(self.children)
        if size == 0:  # no child could be started: everything here
            yield from (self.compute(p) for p in payloads)
            return
        queue: deque[tuple[int, Any]] = deque()  # (child, payload) sent and not yet answered
        source = iter(payloads)
        sent = 0

        def send_one() -> bool:
            nonlocal sent
            payload = next(source, _END)
            if payload is _END:
                return False
            child = sent % size
            sent += 1
            if child not in self.dead:
                try:
                    _write_frame(self.children[child][1], payload)
                except OSError:
                    self.dead.add(child)
            queue.append((child, payload))
            return True

        for _ in range(self.depth * size):
            if not send_one():
                break
        while queue:
            child, payload = queue.popleft()
            answer, answered = None, False
            if child not in self.dead:
                try:
                    answer, answered = _read_frame(self.children[child][2]), True
                except (EOFError, OSError, pickle.UnpicklingError):
                    self.dead.add(child)
            if not answered:  # the child died: this process computes its payload
                answer = self.compute(payload)
            send_one()
            yield answer

    def map_unordered(self, n: int) -> Iterator[tuple[int, Any]]:
        """``(i, compute(i))`` for i in range(n), as the answers arrive, with this process computing too.

        The children and this process each work through their own contiguous share of the indices from the
        front, and one whose share is done takes the last index of the largest share left: a child touches
        the parent's objects of its part of the grid only (a forked child copies every page it touches, if
        only to count a reference; this process copies nothing), and all stay busy to the end. This process
        computes one of its chunks whenever no answer is waiting. The payloads are indices (small), so
        ``depth`` of them may be in flight per child."""
        size = len(self.children)
        here = size  # this process's share
        shares = [deque(range(n * c // (size + 1), n * (c + 1) // (size + 1))) for c in range(size + 1)]
        inflight: list[deque[int]] = [deque() for _ in range(size)]

        def take(who: int) -> int | None:
            if shares[who]:
                return shares[who].popleft()
            largest = max(range(size + 1), key=lambda k: len(shares[k]))
            return shares[largest].pop() if shares[largest] else None

        def feed(child: int) -> None:
            while child not in self.dead and len(inflight[child]) < self.depth:
                index = take(child)
                if index is None:
                    return
                try:
                    _write_frame(self.children[child][1], index)
                except OSError:
                    self.dead.add(child)
                    shares[here].appendleft(index)  # computed here
                    return
                inflight[child].append(index)

        with selectors.DefaultSelector() as selector:
            for child, (_, _, answer_fd) in enumerate(self.children):
                selector.register(answer_fd, selectors.EVENT_READ, child)
                feed(child)
            while True:
                mine = any(shares)  # something left that this process could compute
                if not mine and not any(inflight):
                    break
                events = selector.select(timeout=0 if mine else None)
                for key, _ in events:
                    child = key.data
                    if not inflight[child]:  # readable with nothing asked: end of file, the child died
                        self.dead.add(child)
                        selector.unregister(key.fileobj)
                        continue
                    index = inflight[child].popleft()
                    try:
                        answer = _read_frame(self.children[child][2])
                    except (EOFError, OSError, pickle.UnpicklingError):  # the child died: its chunks here
                        self.dead.add(child)
                        selector.unregister(key.fileobj)
                        shares[here].extendleft(reversed([index, *inflight[child]]))
                        inflight[child].clear()
                        for other in range(size):  # an idle live child takes some of them
                            if not inflight[other]:
                                feed(other)
                        continue
                    feed(child)
                    yield index, answer
                if mine:  # one of this process's chunks per round, answers or not (never starved)
                    index = take(here)
                    if index is not None:
                        yield index, self.compute(index)

    def close(self) -> None:
        """End the children (their request pipes close; SIGTERM for one still busy after an interruption)
        and reap them."""
        for pid, request_w, answer_r in self.children:
            for fd in (request_w, answer_r):
                with contextlib.suppress(OSError):
                    os.close(fd)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        for pid, _, _ in self.children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        self.children = []


_END = object()


def in_chunks_unordered(
    size: int, compute: Callable[[int], Any], n: int
) -> Generator[tuple[int, Any], None, None]:
    """``(i, compute(i))`` for i in range(n) by ``size`` processes: this one and ``size`` - 1 forked
    children, each through its own contiguous share (``ChunkPool.map_unordered``: in the order they finish;
    in order when ``size`` is 1). The children are ended when the iteration ends or is abandoned."""
    if size <= 1 or n <= 1:
        yield from ((i, compute(i)) for i in range(n))
        return
    pool = ChunkPool(size - 1, compute)
    try:
        yield from pool.map_unordered(n)
    finally:
        pool.close()


def in_chunks(
    size: int,
    compute: Callable[[Any], Any],
    payloads: Iterable[Any],
    small_payloads: bool = True,
    forked: Callable[[], None] | None = None,
) -> Generator[Any, None, None]:
    """``compute(payload)`` for every payload, in order: in ``size`` forked children (``ChunkPool``; two
    payloads in flight per child when they are ``small_payloads``, else one), or in this process when
    ``size`` is 1. The children are ended when the iteration ends or is abandoned. ``forked`` is called
    once the children exist, before the first answer is awaited (a thread may start then: none runs
    across the forks)."""
    if size <= 1:
        yield from (compute(p) for p in payloads)
        return
    pool = ChunkPool(size, compute, depth=2 if small_payloads else 1)
    if forked is not None:
        forked()
    try:
        yield from pool.map(payloads)
    finally:
        pool.close()


def _serve(compute: Callable[[Any], Any], request_fd: int, answer_fd: int) -> None:
    while True:
        try:
            payload = _read_frame(request_fd)
        except EOFError:  # the main process closed the pipe (done, or it died)
            return
        _write_frame(answer_fd, compute(payload))


# ------------------------------------------------------------------------------------------ the stage
async def run_offline_units(
    stage: str,
    units: list[UnitKey],
    model_of: Callable[[UnitKey], str],
    work: Callable[[UnitKey], scheduler.Outcome],
    store: RunStore,
    budget: scheduler.Budget,
    tallies: dict[str, scheduler.ModelTally],
    progress: Bars,
    log: scheduler.RunLog,
    workers: int | None,
    bar: Any = None,
) -> None:
    """Run ``units`` (pending, offline) in chunks with ``offline_workers(workers, len(units))`` processes
    and store them; the accounting is the engine's (``scheduler.settle``). ``bar``: the stage's progress bar
    when the stage has other units too (one bar per stage), else one is added for these units.

    The cost cap: like the engine, no unit is stored once ``budget.exhausted`` (``--max-cost`` reached
    before this stage, or ``--max-cost 0``), although offline units cost $0: they stay pending for a
    re-run. Offline units spend nothing, so the budget cannot change while they run: when it is exhausted
    at the start, every unit would be computed and then dropped, so none is computed (same counts).

    A child stores the chunks it computes itself (``store.GroupWriter``: one transaction per chunk, before
    it answers) and answers with the outcomes only, so the main process neither unpickles ~0.5 MB per
    chunk nor inserts the child's rows (both were most of its time while the child waited). Not under a
    cost cap or once a model is stopped (the main process decides then, unit by unit, what is stored), nor
    for a chunk with a model-fatal failure (handed to the main process, which stops the model), nor once
    the child's own write failed (the main process stores its chunks and warns once)."""
    ordered = sorted(units, key=prefix_order)
    chunks = [ordered[i : i + CHUNK_UNITS] for i in range(0, len(ordered), CHUNK_UNITS)]
    if bar is None:
        bar = progress.add_task(stage, total=len(ordered))
    if budget.exhausted:
        for unit in ordered:  # as the loop below counts a unit it does not store
            model = model_of(unit)
            if model in log.stopped:
                log.not_run[model] = log.not_run.get(model, 0) + 1
            else:
                budget.skipped += 1
        progress.advance(bar, len(ordered))
        return
    main_pid = os.getpid()
    direct = budget.cap is None and not budget.refused and not log.stopped
    writer = GroupWriter(store.path)
    cannot_store: list[str] = []  # in a child: why its writer failed (it then hands every chunk back)

    def compute(index: int) -> tuple[bool, list[Encoded], str | None]:
        """(stored by this child, the chunk's units, why this child could not store it)."""
        started = now()
        answer = compute_chunk(chunks[index], work)
        if not direct or os.getpid() == main_pid or cannot_store or any(_stops(e) for e in answer):
            return False, answer, None
        finished = now()
        rows = [
            (
                *unit.row(),
                e[0],
                e[1],
                e[2],
                *store_failure_columns(e[0], Failure(e[6], e[7])),  # type: ignore[arg-type]
                started,
                finished,
            )
            for unit, e in zip(chunks[index], answer, strict=True)
        ]
        try:
            writer.write(rows)  # committed before the answer: the main process counts stored units only
        except Exception as exc:  # noqa: BLE001 - the main process stores the chunk (and says why)
            cannot_store.append(scheduler.error_text(exc))
            return False, answer, cannot_store[0]
        return True, [(e[0], None, e[2], e[3], e[4], e[5], e[6], e[7]) for e in answer], None

    size = offline_workers(workers, len(ordered), CHUNK_UNITS)
    answers = in_chunks_unordered(size, compute, len(chunks))
    told = False
    try:
        started = now()
        for index, (stored, answer, store_error) in answers:  # stored as they come (not the files' order)
            chunk = chunks[index]
            if store_error is not None and not told:
                told = True
                log.report(OfflineStoreWarning(store.path.name, store_error[:300]))
            finished = now()
            for unit, encoded in zip(chunk, answer, strict=True):
                model = model_of(unit)
                if not stored:
                    if model in log.stopped:
                        log.not_run[model] = log.not_run.get(model, 0) + 1
                        continue
                    if budget.exhausted:
                        budget.skipped += 1
                        continue
                tally = tallies.get(model) or tallies.setdefault(model, scheduler.ModelTally())
                if encoded[0] == "done" and encoded[3] is None and not encoded[4]:
                    # the common case, whose accounting (scheduler.settle) is one more done unit: no Outcome
                    # and Usage objects built for it
                    if not stored:
                        store.finish_encoded(unit, "done", encoded[1], encoded[2], started, finished)
                    tally.done += 1
                    continue
                payload, outcome = decode(encoded)
                if not stored:
                    store.finish_encoded(
                        unit, outcome.status, payload, outcome.error, started, finished, outcome.failure
                    )
                scheduler.settle(model, outcome, tally, budget, log)
            store.flush_if_due()
            progress.advance(bar, len(chunk))
            started = finished
            await asyncio.sleep(0)  # Ctrl-C (the task's cancellation) is seen between chunks
    finally:
        answers.close()  # ends the children
        store.flush()


def _stops(encoded: Encoded) -> bool:
    """A failure that stops its model (``scheduler.settle``): the main process must see it before storing."""
    return encoded[0] == "failed" and is_model_fatal(encoded[6])


SCORE_CHUNK = 250  # predictions per chunk (~0.5 ms each: executing the GT and the calls)
AUTO_MIN_SCORED = 2_000  # with `workers` unset, fewer predictions are scored in process


def scores_in_chunks(
    data: Dataset,
    predictions: dict[UnitKey, Prediction],
    modes: list[ScoringMode],
    lenient: bool,
    workers: int | None,
    advance: Callable[[int], None] | None = None,
) -> dict[ScoreKey, dict[ScoringMode, Score]]:
    """``work.compute_scores`` over chunks of 250 predictions in key order (a record's predictions next to
    each other), in ``offline_workers`` processes that inherit the predictions; the scores come back
    pickled. The result is the same dict, in the same order, as one ``compute_scores`` call."""
    keys = sorted(predictions)
    chunks = [keys[i : i + SCORE_CHUNK] for i in range(0, len(keys), SCORE_CHUNK)]

    def compute(index: int) -> dict[ScoreKey, dict[ScoringMode, Score]]:
        return compute_scores(data, {k: predictions[k] for k in chunks[index]}, modes, lenient)

    size = offline_workers(workers, len(keys), SCORE_CHUNK, AUTO_MIN_SCORED)
    parts: list[dict[ScoreKey, dict[ScoringMode, Score]]] = [{} for _ in chunks]
    answers = in_chunks_unordered(size, compute, len(chunks))
    try:
        for index, scored in answers:
            parts[index] = scored
            if advance is not None:
                advance(len(chunks[index]))
    finally:
        answers.close()
    out: dict[ScoreKey, dict[ScoringMode, Score]] = {}
    for part in parts:  # in key order, as one compute_scores call would have made it
        out.update(part)
    return out
