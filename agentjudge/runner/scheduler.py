"""Asynchronous execution of one stage's units: bounded, fair across models, committed in groups.

Why per-model worker pools instead of one task per unit: a global semaphore alone lets a slow or failing
model fill every slot with its own queued units and stall the rest. Here every model gets its own queue
and at most ``settings.concurrency`` workers, and a worker takes a global slot only for the duration of
one call, so the global cap bounds total load while each model progresses at its own pace. The number of
asyncio tasks is the sum of the per-model caps, not the number of units (a paper grid has ~10^5).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentjudge.models.errors import ModelCallError
from agentjudge.models.failures import (
    Failure,
    FailureLog,
    clip,
    is_batch_pending,
    is_model_fatal,
    reason_of_kind,
)
from agentjudge.runner.events import Bars, Event, ModelStopped
from agentjudge.runner.store import Status, UnitKey, now
from agentjudge.runner.work import prefix_order
from agentjudge.types import Usage


class UnitStore(Protocol):
    """Where finished units go: the run folder's ``RunStore``, or ``infer``'s predictions file."""

    flush_interval_s: float

    def finish(
        self, key: UnitKey, status: Status, result: Any, error: str | None, started_at: str, failure: Failure
    ) -> None: ...

    def flush_if_due(self) -> None: ...

    def flush(self) -> None: ...


@dataclass
class Outcome:
    """What one unit produced: the JSON to store, and the accounting the summary needs."""

    status: Status
    result: Any  # JSON-serialisable (a model_dump) or None when the call raised
    error: str | None
    usage: Usage = field(default_factory=Usage)
    parse_failed: bool = False
    parse_note: str | None = None  # why the answer could not be read (for the failures list)
    # ``result`` already encoded as the store's JSON text (offline units: runner.offline stores it as it is)
    text: str | None = None
    # a failure's kind and the requests the model client sent for it (models/failures.py)
    kind: str | None = None
    attempts: int | None = None

    @property
    def failure(self) -> Failure:
        return Failure(self.kind, self.attempts)


@dataclass
class ModelTally:
    """Per model, this invocation only (a resumed run reports what it did, not the history)."""

    done: int = 0
    failed: int = 0
    parse_failures: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass
class Budget:
    """``--max-cost`` as the runner sees it: no new unit starts once the cap is reached or a call was
    refused by the model client's cost gate (which reserves each call's worst case before sending it, so
    calls through ``ModelClient`` never overspend). Plugins that spend money elsewhere are counted after
    the fact only. Cached answers cost nothing. A refused unit is not stored: a re-run picks it up.
    """

    cap: float | None
    spent: float = 0.0
    skipped: int = 0
    refused: bool = False  # a call did not fit under the cap

    @property
    def exhausted(self) -> bool:
        return self.refused or (self.cap is not None and self.spent >= self.cap)


@dataclass
class RunLog:
    """What went wrong in this invocation: failures by model and reason, and models stopped early
    (an auth or bad-request failure is repeated by every other call of that model, so they are not made)."""

    failures: FailureLog = field(default_factory=FailureLog)
    stopped: dict[str, str] = field(default_factory=dict)  # model -> the error that stopped it
    stopped_reasons: dict[str, str] = field(default_factory=dict)  # model -> its reason (models.failures)
    not_run: dict[str, int] = field(default_factory=dict)  # model -> units left because it was stopped
    report: Callable[[Event], None] = field(default=lambda event: None)  # the run's (runner/events.py)
    stop_on_fatal: bool = True  # False: every unit runs and records its own failure (``infer``)

    def stop(self, model: str, error: str, kind: str | None) -> None:
        if model in self.stopped or not self.stop_on_fatal:
            return
        self.stopped[model] = error
        self.stopped_reasons[model] = reason_of_kind(kind)
        self.report(ModelStopped(model, reason_of_kind(kind), clip(error, 600)))


class RemoteUnitError(Exception):
    """A unit that raised in a worker process (``runner.workers``): ``text`` and ``attempts`` are what
    ``error_text`` and ``error_attempts`` made of it there. Defined here, beside them, so that the engine
    needs nothing from the workers."""

    def __init__(self, text: str, attempts: int | None = None) -> None:
        super().__init__(text)
        self.text = text
        self.attempts = attempts


def error_text(exc: BaseException) -> str:
    """A failure as data for the store; never empty (the exception type is always named)."""
    if isinstance(exc, RemoteUnitError):  # raised in a worker process: already in this form
        return exc.text
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def error_attempts(exc: BaseException) -> int | None:
    """The requests the model client sent for a call whose error a unit let through (None: not a call's)."""
    if isinstance(exc, RemoteUnitError | ModelCallError):
        return exc.attempts
    return None


def raised(exc: BaseException) -> Outcome:
    """The outcome of a unit that raised: failed, with no kind (a plug-in's or the engine's error)."""
    return Outcome("failed", None, error_text(exc), attempts=error_attempts(exc))


def settle(
    model: str,
    outcome: Outcome,
    tally: ModelTally,
    budget: Budget,
    log: RunLog,
    reading_batch_answers: bool = False,
) -> None:
    """The accounting of one stored unit: failures by reason, a model stopped by a fatal failure, the
    model's tally and the money spent (also used by ``runner.offline`` for its chunks)."""
    if outcome.status == "failed":
        log.failures.add(model, outcome.error, outcome.kind)
        if not reading_batch_answers and is_model_fatal(outcome.kind):
            log.stop(model, outcome.error or "", outcome.kind)
    elif outcome.parse_failed:
        log.failures.add(model, outcome.parse_note or "answer could not be parsed", None, "parse")
    usage = outcome.usage
    tally.done += outcome.status == "done"
    tally.failed += outcome.status == "failed"
    tally.parse_failures += outcome.parse_failed
    tally.cache_hits += usage.cached
    tally.prompt_tokens += usage.prompt_tokens
    tally.completion_tokens += usage.completion_tokens
    if not usage.cached:
        tally.cost_usd += usage.cost_usd
        budget.spent += usage.cost_usd


# the global slot of a unit whose calls are limited where they are made (``run_units``'s ``ahead``)
limited_elsewhere = contextlib.nullcontext()


async def run_units(
    stage: str,
    units: list[UnitKey],
    model_of: Callable[[UnitKey], str],
    caps: dict[str, int],
    work: Callable[[UnitKey], Awaitable[Outcome]],
    store: UnitStore,
    global_cap: asyncio.Semaphore,
    budget: Budget,
    tallies: dict[str, ModelTally],
    progress: Bars,
    log: RunLog | None = None,
    reading_batch_answers: bool = False,
    last: Collection[UnitKey] = (),
    bar: Any = None,
    ahead: Mapping[str, int] | None = None,
) -> list[UnitKey]:
    """Run ``units`` (already filtered to what is pending); commit each as it finishes. Returns the units
    whose call was queued for a provider batch (``batch_pending``): not stored, run again on the answer.
    ``reading_batch_answers`` (units run again on their batch answers): neither a request error nor the cost
    cap stops them, since those answers are already paid for (new calls still meet the client's cost gate).
    ``last``: units each model takes after all its others (repeats of an earlier unit's request: by then
    answered from the call cache, instead of holding a concurrency slot while the twin request is out).
    ``bar``: the stage's progress bar when it counts other units too (``runner.offline``'s), else one is
    added for ``units``.
    ``ahead``: models whose calls are limited where they are made (worker processes, each holding its share
    of the model's ``concurrency`` around the request alone; ``runner.workers``), with how many units each
    keeps out beyond its cap: the next units' prompts are built and their cache looked up while the model's
    requests are out. Their units take no ``global_cap`` slot, so the caller passes them only when the
    pipeline's limit cannot bind (the stage's models' caps add up to no more than it)."""
    ahead = ahead or {}
    queues: dict[str, list[UnitKey]] = defaultdict(list)
    # workers pop from the end: each model takes its units in prefix order (calls sharing a prompt
    # prefix close together in time, so a provider's prefix cache hits; see work.prefix_order)
    order: Callable[[UnitKey], Any] = (lambda u: (u in last, prefix_order(u))) if last else prefix_order
    for unit in sorted(units, key=order, reverse=True):
        queues[model_of(unit)].append(unit)
    if bar is None:
        bar = progress.add_task(stage, total=len(units))
    log = log if log is not None else RunLog()
    deferred: list[UnitKey] = []

    async def worker(model: str, queue: list[UnitKey]) -> None:
        tally = tallies.setdefault(model, ModelTally())
        while queue:
            unit = queue.pop()
            if model in log.stopped:
                log.not_run[model] = log.not_run.get(model, 0) + 1
                progress.advance(bar)
                continue
            if budget.exhausted and not reading_batch_answers:
                budget.skipped += 1
                progress.advance(bar)
                continue
            async with limited_elsewhere if model in ahead else global_cap:
                started = now()
                try:
                    outcome = await work(unit)
                except Exception as exc:  # noqa: BLE001 - a unit's failure is recorded, never fatal to the grid
                    outcome = raised(exc)
            if outcome.status == "failed" and is_batch_pending(outcome.kind):
                deferred.append(unit)  # not stored: the unit runs again once its batch is read
                progress.advance(bar)
                continue
            if outcome.status == "failed" and reason_of_kind(outcome.kind) == "cost_cap":
                budget.refused = True  # not sent, nothing to store: the unit stays pending
                budget.skipped += 1
                progress.advance(bar)
                continue
            store.finish(unit, outcome.status, outcome.result, outcome.error, started, outcome.failure)
            settle(model, outcome, tally, budget, log, reading_batch_answers)
            progress.advance(bar)

    async def flush_on_timer() -> None:  # group commits while calls are in flight (store.py)
        while True:
            await asyncio.sleep(store.flush_interval_s / 10)
            store.flush_if_due()

    workers = [
        worker(model, queue)
        for model, queue in sorted(queues.items())
        for _ in range(max(1, min(caps.get(model, 1) + ahead.get(model, 0), len(queue))))
    ]
    timer = asyncio.create_task(flush_on_timer())
    try:
        await asyncio.gather(*workers)
    finally:
        timer.cancel()
        store.flush()
    return deferred
