"""Batch mode's bookkeeping in RUNDIR/run.sqlite: requests queued, files uploaded, batches polled, answers.

How a stage runs a ``batch: true`` model (``grid._Grid._stage``):

1. Every pending unit runs as usual; when its model call reaches ``ModelClient.complete`` and the answer is
   not known yet, the request (the call's cache key and the exact body a direct call would send) is queued
   here and the unit stops with ``batch_pending``: nothing is stored for it.
2. ``settle`` writes the queued requests as JSONL files within the provider's limits, uploads them,
   creates one batch per file, and records every batch id and the requests (with their unit ids) in it
   *before* polling. It then polls with doubling waits until every batch is final, and reads the output
   and error files into ``batch_requests``: the answer body, or the failure and its kind.
3. The deferred units run again; their calls now find their answers here, are parsed by the same code as
   a direct answer, priced at the batch price and written to the call cache under the same key.
   A unit that needs another call (a re-ask, the next turn) queues it, and the loop goes round.

Stopping at any point loses nothing that was sent: a re-run finds the submitted batches in the store and
polls them instead of sending their requests again. Requests of an expired, cancelled or failed batch
that have no answer are queued again (up to the model's ``max_retries`` resubmissions), and only those.
A batch the provider does not know or will not show (``not_found``/``auth``/``bad_request`` on retrieve or
on reading its files: deleted, another key or project, an expired output file) is given up: marked collected
with a note, and its unanswered requests fail their units with an error naming the batch; a later invocation
asks them again. One that fails to be polled or read ``MAX_POLL_FAILURES`` rounds in a row with a failure that
can pass (``PASSING_KINDS``: the network, the provider's 5xx) is given up for this invocation only
(``_leave_open``): its units fail, but the store keeps it open, and a later invocation polls it again and
takes its answers (the provider runs and bills it anyway); after ``MAX_LEFT_OPEN`` invocations, or at once
for any other kind (it would fail the same way every time), it is given up for good and its requests are
sent again.
A request the provider answered with an error is a failure of its unit (retryable kinds are resubmitted
first, like a direct call's retries); a later invocation asks a failed request again, as for direct calls.

Nothing open is left without something to answer it: at its start an invocation queues again every request
of its batch models "submitted" to a batch it will not poll (no row, already read, or of a model not in
batch mode here: a store written by an older version or damaged by a bug), and a request a batch model asks
for that another model queued (requests are keyed by their cache key, which two entries of one model share)
is taken over when that model does not send batches in this run. Should a round of the grid's batch loop
still make no progress (``progress`` unchanged: nothing submitted, answered, failed, or polled while in
progress), ``fail_open`` fails what is open for this invocation, so the loop ends instead of going round
for ever; the store keeps those requests open, so a re-run reads the batch one is in rather than sending it
again (the provider bills a batch's lines whether or not they are read: a request is never paid twice).
A pass inside ``settle`` that leaves requests queued without submitting, failing or retrying any returns
at once (to that check) instead of waiting and trying again for ever.

Every change that takes several statements (a request queued, a submission recorded or renamed, a batch's
answers collected, a batch given up) is one transaction (``store.transaction``): a Ctrl-C or a killed
process halfway keeps none of it, so the next invocation finds the state before it and does that step
again. The broker has its own connection to run.sqlite, beside ``RunStore``'s, in the same thread; no
transaction of either is held across an ``await`` or a call into the other, so neither ever waits for the
other's write lock (another process's is waited for up to the 30 s busy timeout, then an error).

This module is the state machine (what to submit, poll, collect or give up, and when); every statement it
runs on the batch tables is a method of ``runner/batch_store.py``'s ``BatchStore`` (``self.store``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentjudge.models.batch import (
    CURRENT_UNIT,
    FINAL_STATES,
    BatchAPI,
    BatchInfo,
    parse_result_line,
    sendable_line,
    split_lines,
)
from agentjudge.models.credentials import scrub, settings_secrets
from agentjudge.models.errors import MODEL_FATAL_KINDS, RETRYABLE_KINDS, classify
from agentjudge.runner.batch_store import UPLOADING, BatchStore
from agentjudge.types import ModelSettings

log = logging.getLogger(__name__)

# what a request or unit failed with ``batch_stuck`` is told (``BatchBroker.fail_open``, grid)
STUCK_ADVICE = (
    "a whole round of the batch loop made no progress; failed instead of waiting for ever: re-run the same "
    "command (it reads the request's batch if one of this run can still answer it, else sends it again)"
)
# a batch that cannot be polled or read this many rounds in a row (or once with a model-fatal kind: the
# provider does not know it, the key changed, its output file expired) is given up: see ``_give_up``
MAX_POLL_FAILURES = 8
# Failures that can pass (the network, the provider's overload or 5xx): a batch that still fails so is given
# up for this invocation only and polled again by the next (``_leave_open``: the provider runs and bills it
# anyway), at most MAX_LEFT_OPEN invocations in all; any other kind (an output the parser cannot read, a
# response of another shape) fails the same way every time, so the batch is given up for good at once and
# its requests are sent again by the next invocation, as they would never be answered otherwise.
PASSING_KINDS = frozenset({"connection", "timeout", "rate_limit", "server_error"})
MAX_LEFT_OPEN = 3


@dataclass(frozen=True)
class BatchAnswer:
    """What the store knows about one request: ``pending`` (queued or in a batch), ``done`` with the
    provider's response body, or ``failed`` with the error kind and message."""

    state: str
    body: dict[str, Any] | None = None
    kind: str = ""
    error: str = ""
    submissions: int = 0
    fresh: bool = True  # False: another unit already received this answer (counted as a cache hit)
    # the sends after the first, by why the request was sent again (``BatchStore.requeue``): retries, as
    # a direct call's (``submissions`` = 1 + their sum; 0 and empty for ``fail_open``'s failure)
    retries: dict[str, int] = field(default_factory=dict)


def _kind_of_status(status: int | None) -> str:
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status is not None and 400 <= status < 500:
        return "bad_request"
    return "server_error"


class BatchBroker:
    """One run's batch requests and batches; the model client asks it for answers (``answer``/``defer``)."""

    def __init__(
        self,
        path: Path,
        settings: dict[str, ModelSettings],
        *,
        poll_s: float = 30.0,
        poll_max_s: float = 600.0,
        max_requests: int | None = None,
        max_bytes: int | None = None,
        say: Callable[[str], None] | None = None,
        api: Callable[[ModelSettings], Any] = BatchAPI,
    ) -> None:
        self.settings = settings  # display name -> settings, for the batch models of the run
        self._names = sorted(settings)
        self.poll_s, self.poll_max_s = poll_s, poll_max_s
        self.max_requests, self.max_bytes = max_requests, max_bytes
        self.say = say or (lambda text: log.info("%s", text))
        self._api = api
        self.store = BatchStore(path)
        # a new invocation asks failed requests again (their units were stored as failed, and a re-run
        # retries failed units): only failures of this invocation are answers
        self._failed_now: set[str] = set()
        # requests ``fail_open`` failed for this invocation only (key -> message): the store keeps them open
        self._stuck: dict[str, tuple[str, str]] = {}  # key -> (kind, message)
        self._left_open: set[str] = set()  # batches given up for this invocation only (``_leave_open``)
        self._recovered = False
        self._resolved = 0  # requests answered or failed for good by this invocation
        # requests submitted, answered or failed, and polls of a batch still in progress, by this invocation:
        # the grid's batch loop stops when a round leaves it unchanged (see ``fail_open``)
        self.progress = 0
        self._poll_failures: Counter[str] = Counter()  # batch id -> failed polls/reads in a row
        self._taken: Counter[tuple[str, str]] = Counter()  # (model it was left to, model asking) -> requests

    def close(self) -> None:
        self.store.close()

    # --- the model client's side ----------------------------------------------------------------
    def answer(self, key: str) -> BatchAnswer | None:
        row = self.store.request(key)
        if row is None:
            return None
        state, answer, kind, error, submissions, delivered_to, retries = row
        if key in self._stuck and state in ("queued", "submitted"):
            # its send (if any) is counted when its answer is read, by the invocation that reads it
            stuck_kind, stuck_error = self._stuck[key]
            return BatchAnswer("failed", kind=stuck_kind, error=stuck_error, submissions=0)
        if state in ("queued", "submitted"):
            return BatchAnswer("pending", submissions=submissions)
        if state == "failed":
            if key not in self._failed_now:
                return None  # an earlier invocation's failure: ask again
            return BatchAnswer(
                "failed", kind=kind or "other", error=error or "", submissions=submissions, retries=retries
            )
        unit = CURRENT_UNIT.get()
        fresh = delivered_to is None or delivered_to == unit
        return BatchAnswer(
            "done", json.loads(answer or "null"), submissions=submissions, fresh=fresh, retries=retries
        )

    def delivered(self, key: str) -> None:
        """The answer reached the current unit: another unit asking the same request gets a cache hit."""
        self.store.set_delivered(key, CURRENT_UNIT.get())

    def defer(self, key: str, settings: ModelSettings, line: dict[str, Any]) -> None:
        """Queue ``line`` for the next batch (or note one more unit waiting for a request already queued)."""
        unit = CURRENT_UNIT.get()
        model = settings.display_name
        with self.store.transaction():  # the state reset and the unit list together
            row = self.store.waiting(key)
            if row is None:
                self.store.insert_queued(key, model, line, unit)
                return
            units, state, owner = row
            # failed in an earlier invocation (or answered): ask again; queued or submitted by a model that
            # does not send batches in this run (its queue is never sent, its batches never polled): taken
            # over by the model asking, or its units would wait for ever (counted anew: its submissions
            # were the other model's)
            taken = state in ("queued", "submitted") and owner not in self.settings
            if state in ("failed", "done") or taken:
                self.store.reset_queued(key, model)
            if unit not in units:
                units.append(unit)
                self.store.set_units(key, units)
        if taken:
            self._taken[(owner, model)] += 1  # said at the next ``settle``

    # --- the runner's side ----------------------------------------------------------------------
    def _open_rows(self) -> list[tuple[str, str]]:
        """(cache key, model) of the queued and submitted requests of this run's batch models."""
        return self.store.open_rows(self._names)

    def open_requests(self) -> int:
        """Queued and submitted requests of this run's batch models (a model switched to direct since the
        store was written keeps its rows, which this invocation neither sends nor polls)."""
        return self.store.count_open(self._names)

    def fail_open(self) -> int:
        """The last line of defence of the grid's batch loop, called after a round that made no
        ``progress``: every open request of this run's batch models fails for this invocation (kind
        ``batch_stuck``: the units waiting for it fail with the error). Returns how many failed.

        Only this invocation sees that failure: the store keeps each request as it was, queued or
        submitted to its batch. A request in a batch is not sent again by a later invocation: that batch
        may still run at the provider, which bills its lines whether or not anyone reads them, so the
        re-run polls it and takes its answer (paid once); only if no invocation can read that batch
        (``_requeue_orphans``) is the request queued again, the one way left to get an answer. The batch
        is not cancelled: the lines the provider ran before a cancel are billed all the same, and their
        answers are the ones the re-run reads."""
        rows = [(key, model) for key, model in self._open_rows() if key not in self._stuck]
        batch_of = self.store.open_batch_of(self._names)
        reason = (
            "batch mode: nothing would answer this request in this run (it is in no batch being polled: "
            f"run.sqlite's batch records are inconsistent) and {STUCK_ADVICE}"
        )
        for key, _ in rows:
            where = f" (sent in batch {batch_of[key]}, kept for the re-run)" if key in batch_of else ""
            self._stuck[key] = ("batch_stuck", reason + where)
        self._resolved += len(rows)
        self.progress += len(rows)
        for model, n in sorted(Counter(model for _, model in rows).items()):
            self.say(f"{n} request(s) of {model} could not be answered: {reason}")
        return len(rows)

    async def settle(self) -> int:
        """Submit what is queued and poll every open batch until all are final and read; requeued
        requests (expired/failed batches, retryable errors) are submitted again. Returns the number of
        requests answered or failed for good by this call."""
        before = self._resolved
        if not self._recovered:
            await self._recover()
            self._recovered = True
        for (owner, model), n in sorted(self._taken.items()):
            self.say(
                f"{n} request(s) of {model} were left to {owner}, which does not send batches in this run; "
                "queued again"
            )
        self._taken.clear()
        while True:
            progress = self.progress
            await self._submit_queued()
            open_batches = self._open_batches()
            if not open_batches:
                queued = self._queued()
                if not queued:
                    break
                if self.progress == progress:
                    # queued requests that this pass neither sent, failed nor tried to send (a bug): waiting
                    # would change nothing; returned to the grid, whose round without progress fails them
                    self.say(f"{len(queued)} queued request(s) could not be submitted; not waiting for them")
                    break
                await asyncio.sleep(self.poll_s)  # a submission failed and was requeued: try again later
                continue
            await self._poll(open_batches)
        return self._resolved - before

    async def _recover(self) -> None:
        """Submissions a killed invocation left half-recorded: a batch the provider created (found by its
        input file among the provider's recent batches) is adopted and polled; otherwise its requests are
        queued again. The window is one HTTP round trip; this closes it where the provider can list."""
        for local, model, file_id in self.store.uploading():
            if model not in self.settings:
                continue
            found: BatchInfo | None = None
            if file_id:
                try:
                    recent = await self._api(self.settings[model]).recent()
                except Exception as exc:  # noqa: BLE001 - cannot list: resubmitted (may repeat that batch)
                    self.say(
                        f"{model}: could not list the provider's batches ({classify(exc)}); the requests of "
                        f"an interrupted submission are sent again and may be answered twice"
                    )
                    recent = []
                found = next((b for b in recent if b.input_file_id == file_id), None)
            with self.store.transaction():  # the batch renamed with its requests, or requeued whole
                if found is not None:
                    self.store.adopt_batch(local, found.id, found.status)
                else:
                    self.store.drop_uploading(local)
            if found is not None:
                self.say(f"batch {found.id}: created before the interruption; polling it")
        self._requeue_orphans()

    def _requeue_orphans(self) -> None:
        """Requests of this run's batch models "submitted" to a batch this invocation will not poll: one
        without a row, one already read (marked collected), or one of a model not in batch mode here. No
        answer to them can reach this store, so they are queued again: sending them again is the only way
        to get one. (A store written by an older version, whose writes were not atomic, or damaged by a bug;
        left so, the run would wait for them for ever.)"""
        with self.store.transaction():
            rows = self.store.submitted_with_batch(self._names)
            lost = [
                (key, model)
                for key, model, batch_model, collected in rows
                if batch_model is None or collected or batch_model not in self.settings
            ]
            for key, _ in lost:  # its send was made, maybe run and billed: counted, and the next is a retry
                self.store.requeue(key, "batch_lost")
        for model, n in sorted(Counter(model for _, model in lost).items()):
            self.say(
                f"{n} request(s) of {model} were waiting for a batch that no invocation will read; "
                "queued again (the provider may have billed that send: it counts among the requests, and "
                "the new one as a retry, batch_lost)"
            )

    def _queued(self) -> list[tuple[str, str, str, int]]:
        """Queued requests of this run's batch models (a model switched to direct since keeps its rows).
        Every line sent is read here, so here each is made ``sendable_line``: a line an older version
        queued with transport keys in its body (``extra_headers``: maybe a credential) is sent without
        them, and the stored queued line is rewritten without them (rows an older version left submitted,
        done or failed are not sent again and keep what it stored)."""
        out = []
        for key, model, line, submissions in self.store.queued():
            if model not in self.settings or key in self._stuck:  # failed for this invocation: not sent
                continue
            clean = sendable_line(line)
            if clean != line:
                self.store.set_line(key, clean)
            out.append((key, model, clean, submissions))
        return out

    def _open_batches(self) -> list[tuple[str, str]]:
        rows = self.store.open_batches()
        return [r for r in rows if r[1] in self.settings and r[0] not in self._left_open]

    def _limits(self, api: Any) -> tuple[int, int]:
        requests, size = api.limits
        return min(requests, self.max_requests or requests), min(size, self.max_bytes or size)

    async def _submit_queued(self) -> None:
        by_model: dict[str, list[tuple[str, str, int]]] = {}
        for key, model, line, submissions in self._queued():
            by_model.setdefault(model, []).append((key, line, submissions))
        for model, rows in by_model.items():
            settings = self.settings[model]
            api = self._api(settings)
            max_requests, max_bytes = self._limits(api)
            lines = [line.encode("utf-8") for _, line, _ in rows]
            try:
                groups = split_lines(lines, max_requests, max_bytes)
            except ValueError as exc:  # a single request larger than a whole file: it can never be sent
                self._fail([k for k, _, _ in rows], "bad_request", str(exc))
                continue
            for group in groups:
                await self._submit(api, settings, [rows[i] for i in group])

    async def _submit(self, api: Any, settings: ModelSettings, rows: list[tuple[str, str, int]]) -> None:
        """Upload one file and create its batch; the store names the batch before it is polled."""
        keys = [k for k, _, _ in rows]
        local = f"{UPLOADING}-{uuid.uuid4().hex[:12]}"
        with self.store.transaction():  # the local batch row, its requests' state and its members together
            self.store.insert_uploading(local, settings.display_name, keys)
        data = b"".join(line.encode("utf-8") + b"\n" for _, line, _ in rows)
        try:
            file_id = await api.upload(data, f"agentjudge-{local}.jsonl")
            self.store.set_input_file(local, file_id)
            info: BatchInfo = await api.create(file_id, {"agentjudge_submission": local})
        except Exception as exc:  # noqa: BLE001 - a submission that failed is retried or recorded, per request
            self._submission_failed(settings, local, rows, exc)
            return
        # renamed together: a batch renamed without its requests would be collected with none of them, and
        # they would wait for it forever (interrupted here, the next invocation adopts it: ``_recover``)
        with self.store.transaction():
            self.store.name_batch(local, info.id, info.status, info.request_counts.total or len(rows))
        self.progress += len(rows)
        self.say(
            f"batch {info.id}: {len(rows)} request(s) of {settings.display_name} submitted ({info.status})"
        )

    def _submission_failed(
        self, settings: ModelSettings, local: str, rows: list[tuple[str, str, int]], exc: BaseException
    ) -> None:
        kind = classify(exc)
        message = scrub(f"{type(exc).__name__}: {exc}", settings_secrets(settings))[:2000]
        retry = kind in RETRYABLE_KINDS
        failed: list[str] = []
        with self.store.transaction():  # the batch row goes with its requests' new states, or stays whole
            self.store.delete_batch(local)
            for key, _, submissions in rows:
                if retry and submissions + 1 <= settings.max_retries:
                    self.store.requeue(key, kind)  # an attempt, counted like a direct call's failed one
                else:
                    failed.append(key)
                    self.store.set_submission_failed(key, kind, f"batch submission failed: {message}")
        self._note_failed(failed)
        self.progress += len(rows) - len(failed)  # tried, queued again: ``max_retries`` bounds those tries
        self.say(f"{settings.display_name}: batch submission failed ({kind}): {message[:200]}")

    def _fail(self, keys: list[str], kind: str, message: str) -> None:
        with self.store.transaction():
            self.store.set_failed(keys, kind, message)
        self._note_failed(keys)

    def _note_failed(self, keys: list[str]) -> None:
        """Once the failure of ``keys`` is committed: their units receive it in this invocation."""
        self._failed_now.update(keys)
        self._resolved += len(keys)
        self.progress += len(keys)

    async def _poll(self, batches: list[tuple[str, str]]) -> None:
        """Retrieve each open batch until all are final and collected, waiting longer each round."""
        delay = self.poll_s
        pending = list(batches)
        while pending:
            still: list[tuple[str, str]] = []
            for batch_id, model in pending:
                api = self._api(self.settings[model])
                try:
                    info = await api.retrieve(batch_id)
                except Exception as exc:  # noqa: BLE001 - a failed poll is tried again next round, or given up
                    if not self._poll_failed(batch_id, model, "poll", exc):
                        still.append((batch_id, model))
                    continue
                counts = info.request_counts
                self.store.set_polled(
                    batch_id, info.status, counts.total, counts.completed, counts.failed, info.errors
                )
                if info.status not in FINAL_STATES:
                    self._poll_failures.pop(batch_id, None)
                    self.progress += 1  # in progress: waited for, up to the provider's window
                    still.append((batch_id, model))
                    continue
                try:
                    await self._collect(api, self.settings[model], info)
                except Exception as exc:  # noqa: BLE001 - the files are read again next round, or given up
                    if not self._poll_failed(batch_id, model, "read its results", exc):
                        still.append((batch_id, model))
                    continue
                self._poll_failures.pop(batch_id, None)
            pending = still
            if pending:
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.poll_max_s)

    def _poll_failed(self, batch_id: str, model: str, what: str, exc: BaseException) -> bool:
        """A retrieve or a file read of ``batch_id`` failed: True if the batch is given up (see the module
        docstring), False if it is tried again next round."""
        kind = classify(exc)
        self._poll_failures[batch_id] += 1
        failures = self._poll_failures[batch_id]
        if kind not in MODEL_FATAL_KINDS and failures < MAX_POLL_FAILURES:
            self.say(f"batch {batch_id}: could not {what} ({kind}); trying again")
            return False
        settings = self.settings[model]
        secrets = settings_secrets(settings)
        detail = scrub(f"{type(exc).__name__}: {exc}", secrets)[:500]
        self._poll_failures.pop(batch_id, None)
        if kind in PASSING_KINDS and self.store.left_open(batch_id) + 1 < MAX_LEFT_OPEN:
            message = (
                f"batch {batch_id}: could not {what} ({kind}, {failures} time(s) in a row): given up for "
                f"this run, its unanswered requests are failed (a re-run polls the batch again and reads "
                f"their answers: they are not sent twice); last error: {detail}"
            )
            self._leave_open(batch_id, message)
            return True
        why = "once" if kind in MODEL_FATAL_KINDS else f"{failures} time(s) in a row"
        if kind in PASSING_KINDS:  # left open by earlier invocations already: it will not clear up
            why += f", in {MAX_LEFT_OPEN} invocations"
        message = (
            f"batch {batch_id}: could not {what} ({kind}, {why}): given up, its unanswered requests are "
            f"failed (a re-run sends them again; answers the provider still has for this batch are then not "
            f"read); last error: {detail}"
        )
        self._give_up(batch_id, "batch_given_up", message)  # its own reason: not the request's fault
        return True

    def _leave_open(self, batch_id: str, message: str) -> None:
        """A batch that failed to be polled or read ``MAX_POLL_FAILURES`` rounds in a row (the network, the
        provider's 5xx): not polled again by this invocation, whose units waiting for it fail (kind
        ``batch_given_up``), but kept open in the store, its requests submitted to it. The provider runs and
        bills it all the same, so a re-run polls it and takes its answers instead of paying for them twice
        (as ``fail_open``: the failure is this invocation's only, and the sends are counted when read)."""
        keys = self.store.unanswered(batch_id)
        self._left_open.add(batch_id)
        with self.store.transaction():  # counted across invocations: MAX_LEFT_OPEN of them, then given up
            self.store.add_left_open(batch_id)
        for key in keys:
            self._stuck[key] = ("batch_given_up", message)
        self._resolved += len(keys)
        self.progress += len(keys)
        self.say(f"{message[:400]} ({len(keys)} request(s))")

    def _give_up(self, batch_id: str, kind: str, message: str) -> None:
        """Mark ``batch_id`` collected (no invocation polls it again) and fail its unanswered requests:
        both or neither."""
        with self.store.transaction():
            keys = self.store.unanswered(batch_id)
            self.store.set_failed(keys, kind, message)
            self.store.set_collected(batch_id, message[:1000])
        self._note_failed(keys)
        self.say(f"{message[:400]} ({len(keys)} request(s))")

    async def _collect(self, api: Any, settings: ModelSettings, info: BatchInfo) -> None:
        """Read a final batch's output and error files into its requests; requeue what has no answer."""
        lines: list[str] = []
        for file_id in (info.output_file_id, info.error_file_id):
            if file_id:
                lines.extend((await api.content(file_id)).splitlines())
        outcome: Counter[str] = Counter()
        failed: list[str] = []
        secrets = settings_secrets(settings)
        # every request's outcome and the batch's ``collected`` in one transaction: interrupted, nothing
        # of it is kept and the next invocation reads the files again (a failure kept without its batch
        # collected would be asked again by that invocation, as an earlier invocation's failure)
        with self.store.transaction():
            rows = self.store.submitted_to(info.id)
            for text in lines:
                result = parse_result_line(text)
                if result is None or result.custom_id not in rows:
                    continue
                submissions = rows.pop(result.custom_id)
                if result.status == 200 and result.body is not None and result.error is None:
                    # scrubbed as the cache is
                    self.store.set_answered(result.custom_id, scrub(json.dumps(result.body), secrets))
                    outcome["answered"] += 1
                    continue
                kind = _kind_of_status(result.status)
                if kind in RETRYABLE_KINDS and submissions <= settings.max_retries:
                    self.store.requeue(result.custom_id, kind)
                    outcome["requeued"] += 1
                else:
                    message = scrub(f"HTTP {result.status} in batch {info.id}: {result.error}", secrets)[
                        :2000
                    ]
                    failed.append(result.custom_id)
                    self.store.set_failed([result.custom_id], kind, message)
                    outcome["failed"] += 1
            # requests without a line: a batch that expired/failed/was cancelled before reaching them
            kind = "timeout" if info.status == "expired" else "server_error"
            if info.status == "failed":
                kind = "bad_request"
            for key, submissions in rows.items():
                if submissions <= settings.max_retries:
                    self.store.requeue(key, kind)
                    outcome["requeued"] += 1
                else:
                    reason = f": {scrub(info.errors, secrets)}" if info.errors else ""
                    message = f"batch {info.id} {info.status} after {submissions} submission(s){reason}"
                    failed.append(key)
                    self.store.set_failed([key], kind, message)
                    outcome["failed"] += 1
            self.store.set_collected(info.id)
        self._note_failed(failed)  # the failures, as every other path records them; the answers:
        self._resolved += outcome["answered"]
        self.progress += outcome["answered"]
        parts = ", ".join(f"{n} {what}" for what, n in sorted(outcome.items())) or "no requests"
        self.say(f"batch {info.id} {info.status}: {parts}")
