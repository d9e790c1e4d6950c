"""The grid of ``agentjudge run``: predict -> score -> judge over every cell, while the run folder is held.

``run_grid`` is what happens between opening the folder and the end of the invocation (``runner/run.py``
does what comes before: the pipeline, the preflight, the dataset, the lock): litellm is loaded and the worker
processes forked when the run's models call for them; the models are built (before the store is opened, so
a model that cannot be built leaves no trace); the store is opened (``runner/folder_open.py``); ``_Grid``
runs the pending predict units, scores every successful prediction in process, and runs the pending judge
units over them (a sampled run: one round per stage of its design); the files, meta.json and
run_summary.json are written from the store (``runner/finish.py``). Failed units stay ``failed`` in the
store and are retried by the next invocation. Everything the run says while it works goes to its reporter
(``runner/events.py``).
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentjudge.errors import InputError
from agentjudge.fastpaths.heap import collector_paused, freeze
from agentjudge.fastpaths.lean_export import ends_after_run, lean_imports
from agentjudge.fserrors import FS_ERRORS, describe
from agentjudge.memo import remembered
from agentjudge.registry.model_strings import model_kind, reading_reference
from agentjudge.runner import offline, scheduler
from agentjudge.runner.events import (
    Bars,
    BatchNote,
    Reporter,
    RunFinished,
    SamplingStageDone,
    StageStarted,
)
from agentjudge.runner.folder_open import export_stamp, open_store, written_digests
from agentjudge.runner.pipeline import Pipeline
from agentjudge.runner.result import RunResult, StageUnits
from agentjudge.runner.resume_cache import cached_scores, save_gate1, stored_digest
from agentjudge.runner.store import RunStore, UnitKey, from_stored, now, stored_json
from agentjudge.runner.work import (
    Dataset,
    GridError,
    ScoreKey,
    judge_request,
    judge_units,
    predict_units,
    reference,
)
from agentjudge.runner.workers import AUTO_MIN_UNITS, WorkerPool, WorkerSpec, effective_workers
from agentjudge.types import (
    TRAJECTORY_CONDITIONS,
    JudgeRequest,
    JudgeResult,
    ModelSettings,
    Prediction,
    Score,
    ScoringMode,
    Task,
)

_BLIND_HELD = 4_096  # judge_offline: outcomes of condition-blind judges kept (a record's few dozen suffice)


@dataclass
class Ending:
    """How the run ended, once its result is made and its files written: a Ctrl-C after that point finds
    nothing left to lose, so the run returns its result instead of claiming an interruption."""

    result: RunResult | None = None


def run_grid(
    pipe: Pipeline,
    data: Dataset,
    partners: dict[str, str],
    out: Path,
    force_new: bool,
    no_cache: bool,
    report: Reporter,
    added: list[str],
    ending: Ending,
    resume_command: str,
) -> RunResult:
    """The run itself, while this process holds the run folder. A KeyboardInterrupt propagates (the
    caller says what is saved), unless ``ending`` holds the result already."""
    if any(model_kind(m.model) == "litellm" for m in [*pipe.generators, *pipe.judges]):
        from agentjudge.models.client import load_litellm

        load_litellm()  # seconds of import, before the event loop rather than inside the first call
    freeze()  # the records live for the whole run: kept out of the collector's full scans (until finally)
    pool = _fork_workers(pipe, data, no_cache)
    try:
        return asyncio.run(
            _run(pipe, data, partners, out, force_new, no_cache, report, pool, added, ending, resume_command)
        )
    except KeyboardInterrupt:
        if ending.result is not None:
            return ending.result
        raise
    finally:
        if pool is not None:
            pool.abandon()  # after an interruption or an early exit: workers see their pipe close
        gc.unfreeze()  # what was frozen during the run is collectable again (a caller may run again)


def _prompt_group(key: UnitKey) -> tuple[Any, ...]:
    """What a judge unit's prompt depends on besides the prediction: units of one group over identical
    predictions ask the same request (``_Grid._repeats`` takes those last; the workers' route, this group
    and ``_Grid._shown`` of the prediction, sends twins in flight together to one worker, so the request is
    sent once)."""
    return (key.judge, key.record_id, key.condition, key.variant, key.temperature, key.trial)


def _fork_workers(pipe: Pipeline, data: Dataset, no_cache: bool) -> WorkerPool | None:
    """Fork the worker processes (pipeline key ``workers``), before the event loop and after litellm's
    import, when the litellm units of the run call for them; None keeps every unit in this process."""
    gens, judges = remote_models(pipe)
    if not gens and not judges:
        return None
    predict = predict_units(pipe, data)
    remote = sum(u.generator in gens for u in predict)
    if remote < AUTO_MIN_UNITS:  # each prediction has >= 1 unit per judge: the first ones tell
        oracles = reading_reference(pipe.judges)
        first = judge_units(pipe, predict[:AUTO_MIN_UNITS], data.no_gt, oracles=oracles)
        remote += sum(u.judge in judges for u in first)
    size = effective_workers(pipe.workers, remote)
    if size <= 1:
        return None
    spec = WorkerSpec(
        generators=[s for s in pipe.generators if s.display_name in gens],
        judges=[s for s in pipe.judges if s.display_name in judges],
        cache=pipe.cache,
        read_cache=not no_cache,
        reask=pipe.reask,
        prompt_family=pipe.prompt_family,
        tool_rendering=pipe.judge_tool_rendering,
    )
    pool = WorkerPool(size, spec)
    pool.fork()
    return pool


def _build_models(pipe: Pipeline, data: Dataset, client: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    from agentjudge.registry.factory import configure_judge, make_generator, make_judge

    gens: dict[str, Any] = {}
    for settings in pipe.generators:
        generator = make_generator(settings, client)
        if hasattr(generator, "bind"):
            generator.bind(data.by_base)
        gens[settings.display_name] = generator
    judges: dict[str, Any] = {}
    for settings in pipe.judges:
        judges[settings.display_name] = configure_judge(
            make_judge(settings, client),
            reask=pipe.reask,
            prompt_family=pipe.prompt_family,
            tool_rendering=pipe.judge_tool_rendering,
        )
    return gens, judges


def _in_unit(work: Any) -> Any:
    """``work`` with the unit's id visible to batch mode (stored with each queued request)."""
    from agentjudge.models.batch import CURRENT_UNIT

    async def run(key: UnitKey) -> scheduler.Outcome:
        CURRENT_UNIT.set(json.dumps(list(key.row())))
        outcome: scheduler.Outcome = await work(key)
        return outcome

    return run


def remote_models(pipe: Pipeline) -> tuple[set[str], set[str]]:
    """(generators, judges) whose units may run in worker processes: litellm models, single-shot
    generators only, and none when a cost cap needs one cost gate for the run (runner/workers.py). Batch-mode
    models stay here (their queue is this process's) and so do fleets (one view of endpoint health and one
    per-endpoint tally)."""
    if pipe.max_cost_usd is not None:
        return set(), set()
    gens = {
        s.display_name
        for s in pipe.generators
        if model_kind(s.model) == "litellm" and s.generation == "single_shot" and _one_process_ok(s)
    }
    judges = {s.display_name for s in pipe.judges if model_kind(s.model) == "litellm" and _one_process_ok(s)}
    return gens, judges


def _one_process_ok(settings: ModelSettings) -> bool:
    """May this model's calls leave the main process? Not in batch mode, not as a fleet."""
    return not settings.batch and not settings.api_bases


class _Grid:
    """State shared by the stages of one invocation (models, caps, budget, tallies, store)."""

    def __init__(
        self,
        pipe: Pipeline,
        data: Dataset,
        partners: dict[str, str],
        store: RunStore,
        client: Any,
        gens: dict[str, Any],
        judges: dict[str, Any],
        pool: WorkerPool | None = None,
    ) -> None:
        self.pipe, self.data, self.partners, self.store, self.client = pipe, data, partners, store, client
        self.gens, self.judges = gens, judges
        self.settings = {m.display_name: m for m in [*pipe.generators, *pipe.judges]}
        self.caps = {name: s.concurrency for name, s in self.settings.items()}
        self.variants = {v.key: v for v in pipe.prompt_variants}
        self.budget = scheduler.Budget(pipe.max_cost_usd)
        self.tallies: dict[str, scheduler.ModelTally] = {}
        self.global_cap = asyncio.Semaphore(pipe.concurrency)
        self.log = scheduler.RunLog()
        self.predictions: dict[UnitKey, Prediction] = {}
        self.scores: dict[ScoreKey, dict[ScoringMode, Score]] = {}
        self.batches: Any = None  # runner.batches.BatchBroker when some model has batch: true
        self.remote_gens, self.remote_judges = remote_models(pipe)
        self.pool = pool
        self.offline = offline.offline_models([*pipe.generators, *pipe.judges])
        # (trajectory shown?, digest of a prediction's judged part) -> a small id (_shown)
        self._shown_ids: dict[tuple[bool, bytes], int] = {}
        self._shown_of: dict[tuple[UnitKey, bool], int] = {}  # (a prediction's key, trajectory shown?) -> id
        self._alike: dict[tuple[str, str], scheduler.Outcome] = {}  # see judge_offline
        self._blind: dict[tuple[Any, ...], scheduler.Outcome] = {}  # see judge_offline
        self.unplanned: dict[str, int] = {}  # per stage, when known: stored units not planned (``_stage``)
        self.sampler: Any = None  # agentjudge.runner.sampling.stages.SampledGrid of a sampled run

    async def close_workers(self) -> None:
        """Let the workers finish and add their call statistics to this process's."""
        if self.pool is None:
            return
        pool, self.pool = self.pool, None
        for stats in await pool.close():
            if stats is not None:
                for name, model_stats in stats.per_model.items():
                    self.client.stats.model(name).add(model_stats)

    async def _stage(
        self,
        name: str,
        units: list[UnitKey],
        model_of: Any,
        work: Any,
        progress: Bars,
        offline_work: Any,
        label: str = "",
    ) -> None:
        status = self.store.statuses(units[0].stage) if units else {}
        pending = [u for u in units if status.get(u) != "done"]
        if units:  # stored units this configuration does not plan; the stage stores planned ones only
            self.unplanned[units[0].stage] = (
                len(status) - sum(map(status.__contains__, units)) if status else 0
            )
        del status  # ~10^6 keys on a paper grid: not kept while the stage runs
        self.log.report(StageStarted(name + label, len(pending), len(units)))
        bar = progress.add_task(
            name + label, total=len(pending)
        )  # one bar for the stage, offline units or not
        in_chunks = [u for u in pending if model_of(u) in self.offline]
        if in_chunks:  # simulated models and baselines: chunks on every core (runner/offline.py)
            pending = [u for u in pending if model_of(u) not in self.offline]
            await offline.run_offline_units(
                name,
                in_chunks,
                model_of,
                offline_work,
                self.store,
                self.budget,
                self.tallies,
                progress,
                self.log,
                self.pipe.workers,
                bar,
            )
            if not pending:
                return
            progress.restart_rate(bar)  # the calls left run at their own rate
        if self.batches is not None:
            work = _in_unit(work)
        args = (model_of, self.caps, work, self.store, self.global_cap, self.budget, self.tallies, progress)
        # repeats last, except under a cost cap: taken last they would find the budget spent and not run,
        # although their twin's answer makes them free
        capped = self.pipe.max_cost_usd is not None
        last = self._repeats(pending) if name == "judge" and not capped else set()
        ahead = self._ahead(units[0].stage if units else name, {model_of(u) for u in pending})
        deferred = await scheduler.run_units(name, pending, *args, self.log, last=last, bar=bar, ahead=ahead)
        # batch mode: queued calls are sent as batches and awaited, then their units run again (a unit that
        # needs a further call, e.g. a re-ask, queues it and the loop goes round)
        while deferred and self.batches is not None:
            before = self.batches.progress
            await self.batches.settle()
            # a round without progress: settle returns once every batch of the run is final and read, and
            # it submitted, answered, failed and polled nothing, so what these units wait for is in no batch
            # anyone polls (a damaged store, a bug). Going round again would change nothing: the open
            # requests fail and the units run once more to receive that failure
            if self.batches.progress == before and not self.batches.fail_open():
                self._fail_waiting(name, deferred, model_of)  # not even an open request to fail
                break
            deferred = await scheduler.run_units(
                f"{name}:batch", deferred, *args, self.log, reading_batch_answers=True
            )

    def _ahead(self, stage: str, models: set[str]) -> dict[str, int]:
        """For a stage (``predict``/``judge``) whose units belong to ``models``: the stage's worker-process
        models, whose units need no global slot, and how many of their units to keep out beyond the model's
        cap (``scheduler.run_units``). A generator and a judge may share a display name: only the stage's own
        role counts (an in-process generator named like a worker judge holds its slots as before).

        In worker processes a model's ``concurrency`` is held around the request alone, split over the
        workers (``runner.workers``): a few more units than that are sent, so each worker builds the next
        prompts and parses answers while its share of requests is out. The pipeline's ``concurrency`` is
        held by the parent for whole units, so this is done only when it cannot bind: when the caps of
        the stage's models add up to no more than it. A quarter of the cap ahead covers a unit's own time
        (its prompt, the cache, the pipes, the commit: ~15 ms, a fifteenth of a 200 ms call, a quarter of a
        50 ms one), with room for bursts."""
        if self.pool is None or sum(self.caps.get(m, 1) for m in models) > self.pipe.concurrency:
            return {}
        remote = (self.remote_gens if stage == "predict" else self.remote_judges) & models
        return {m: max(self.pool.size, -(-self.caps[m] // 4)) for m in sorted(remote)}

    def _fail_waiting(self, stage: str, units: list[UnitKey], model_of: Any) -> None:
        """Units still waiting for a batch answer after a round without progress, with no open request of
        this run's batch models left to fail: failed here, with what to do (not left pending, which a
        re-run would meet again without a word)."""
        from agentjudge.runner.batches import STUCK_ADVICE  # batch mode's module: loaded only when it runs

        error = (
            f"batch_stuck: batch mode: the {stage} unit waits for a request that no batch of this run "
            f"will answer and {STUCK_ADVICE}"
        )
        outcome = scheduler.Outcome("failed", None, error, kind="batch_stuck")
        for unit in units:
            self.store.finish(unit, "failed", None, error, now(), outcome.failure)
            model = model_of(unit)
            tally = self.tallies.setdefault(model, scheduler.ModelTally())
            scheduler.settle(model, outcome, tally, self.budget, self.log, reading_batch_answers=True)

    def _repeats(self, units: list[UnitKey]) -> set[UnitKey]:
        """Judge units of litellm judges asking what an earlier unit asks: the same judge, record, condition,
        variant, temperature and trial over an identical prediction (simulated generators often agree). Run
        last, they are answered from the call cache; run beside their twin, each would hold a concurrency
        slot doing nothing but wait for the twin's answer (the client sends an identical request once)."""
        llm = {s.display_name for s in self.pipe.judges if model_kind(s.model) == "litellm"}
        if not llm or len(self.pipe.generators) * self.pipe.generator_trials < 2:
            return set()  # no prediction has a twin
        seen: set[tuple[Any, ...]] = set()
        repeats: set[UnitKey] = set()
        for key in units:
            if key.judge not in llm:
                continue
            shown = self._shown(key)
            if shown is None:
                continue
            twin = (*_prompt_group(key), shown)
            if twin in seen:
                repeats.add(key)
            seen.add(twin)
        return repeats

    def _shown(self, key: UnitKey) -> int | None:
        """A small id of what a judge unit's prediction shows the judge: its calls, and its trajectory only
        under a trajectory condition (elsewhere the request carries no trajectory, so two predictions with
        the same calls make identical requests and must get one id, or their twins could be sent from two
        workers). Equal ids, equal predictions as far as the prompt can tell. One JSON dump per prediction
        and kind of condition, remembered; None when the prediction is unknown."""
        pkey = UnitKey("predict", key.record_id, key.difficulty, key.generator, key.generator_trial)
        with_trajectory = key.condition in TRAJECTORY_CONDITIONS
        shown = self._shown_of.get((pkey, with_trajectory))
        if shown is None:
            pred = self.predictions.get(pkey)
            if pred is None:
                return None
            part = {"calls", "trajectory"} if with_trajectory else {"calls"}
            digest = hashlib.blake2b(pred.model_dump_json(include=part).encode()).digest()
            shown = self._shown_ids.setdefault((with_trajectory, digest), len(self._shown_ids))
            self._shown_of[(pkey, with_trajectory)] = shown
        return shown

    def _task(self, key: UnitKey) -> Task:
        record, difficulty = self.data.locate(key.record_id)
        return self.data.task(record, difficulty)

    @staticmethod
    def _predicted(pred: Prediction) -> scheduler.Outcome:
        result = pred.model_dump(mode="json", exclude_defaults=True)  # compact; see store.py
        if pred.absent is not None:  # an imported generator's task without a released output: done, unjudged
            return scheduler.Outcome("done", result, None, pred.usage)
        if pred.error is not None or pred.calls is None:
            error = pred.error or "prediction has no calls"
            return scheduler.Outcome(
                "failed", result, error, pred.usage, kind=pred.error_kind, attempts=pred.error_attempts
            )
        return scheduler.Outcome("done", result, None, pred.usage)

    async def predict(self, key: UnitKey) -> scheduler.Outcome:
        task = self._task(key)
        pred: Prediction
        if self.pool is not None and key.generator in self.remote_gens:
            pred = await self.pool.call("predict", key.generator, (task, key.generator_trial))
        else:
            pred = await self.gens[key.generator](task, key.generator_trial)
        return self._predicted(pred)

    def predict_offline(self, key: UnitKey) -> scheduler.Outcome:
        """``predict`` for a simulated generator, without an event loop (``runner.offline``)."""
        return self._predicted(offline.drive(self.gens[key.generator](self._task(key), key.generator_trial)))

    def _judge_request(self, key: UnitKey) -> JudgeRequest:
        score_key = (key.record_id, key.generator, key.generator_trial)
        oracle = getattr(self.judges[key.judge], "needs_reference", False)
        ref = reference(self.scores[score_key]) if oracle else None
        outcome_ref = next(iter(self.scores[score_key].values())).state_match if oracle else None
        pkey = UnitKey("predict", key.record_id, key.difficulty, key.generator, key.generator_trial)
        # only a judge that replays recorded verdicts is told whose output it is (imported/*): any other
        # request stays byte-identical across generators whose outputs are (runner/workers.py meets them)
        generator = key.generator if getattr(self.judges[key.judge], "needs_generator", False) else None
        return judge_request(
            key, self.data, self.predictions[pkey], self.variants, self.partners, ref, outcome_ref, generator
        )

    @staticmethod
    def _judged(res: JudgeResult, encoded: bool = False) -> scheduler.Outcome:
        """The unit's outcome: the result as its compact dump (see store.py), or, ``encoded`` (offline
        units), as the store's JSON text already (``store.stored_json``: pydantic's serializer, a third of
        the cost of dumping and then ``json.dumps``; it reads back as the same values,
        ``tests/test_stored_json.py``)."""
        result = None if encoded else res.model_dump(mode="json", exclude_defaults=True)
        text = stored_json(res) if encoded else None
        if res.error is not None:
            return scheduler.Outcome(
                "failed",
                result,
                res.error,
                res.usage,
                text=text,
                kind=res.error_kind,
                attempts=res.error_attempts,
            )
        note = res.rationales.get("_parse_problems") if not res.parse_ok else None
        return scheduler.Outcome("done", result, None, res.usage, not res.parse_ok, note, text)

    async def judge(self, key: UnitKey) -> scheduler.Outcome:
        request = self._judge_request(key)
        res: JudgeResult
        if self.pool is not None and key.judge in self.remote_judges:
            # the route names the request: its prompt group and what the prediction shows (identical requests
            # in flight together meet in one worker; different predictions spread over the workers)
            route = "|".join(map(str, (*_prompt_group(key), self._shown(key))))
            res = await self.pool.call("judge", key.judge, (request,), route)
        else:
            res = await self.judges[key.judge](request)
        return self._judged(res)

    def judge_offline(self, key: UnitKey) -> scheduler.Outcome:
        """``judge`` for a baseline or simulated judge, without an event loop (``runner.offline``).

        Two kinds of judge are asked less often; their outcome object is reused (``offline.compute_chunk``
        encodes it once):

        * one that ``answers_alike`` under the unit's condition (the constant baselines) is asked once per
          process and condition;
        * one that is ``condition_blind`` under it (``baseline/rule``, ``baseline/ceiling``: they never
          read the GT shown) is asked once per prediction, variant, temperature and trial over the
          conditions it is blind to; the runner works through a record's conditions one after the other
          (``work.prefix_order``), so the last few thousand answers are enough."""
        judge = self.judges[key.judge]

        def ask() -> scheduler.Outcome:
            return self._judged(offline.drive(judge(self._judge_request(key))), encoded=True)

        alike = getattr(judge, "answers_alike", None)
        if alike is not None and alike(key.condition):
            known = self._alike.get((key.judge, key.condition))
            if known is None:
                known = self._alike[(key.judge, key.condition)] = ask()
            return known
        blind = getattr(judge, "condition_blind", None)
        if blind is not None and blind(key.condition):
            # every coordinate of the unit but its condition (the record id holds the difficulty)
            same: tuple[Any, ...] = (key.judge, key.record_id, key.generator, key.generator_trial)
            same += (key.variant, key.temperature, key.trial)
            return remembered(self._blind, same, _BLIND_HELD, ask)
        return ask()

    async def run(self, reporter: Reporter) -> tuple[list[UnitKey], list[UnitKey]]:
        """predict -> score -> judge; returns the planned units of both stages. A sampled run
        (``self.sampler``) goes round once per stage of its design."""
        self.log.report = reporter.event
        if self.pool is not None:
            await self.pool.start()
        everything = predict_units(self.pipe, self.data)
        with reporter.bars() as progress:
            if self.sampler is None:
                wanted, jwanted = everything, await self._round(everything, progress)
            else:
                wanted, jwanted = await self._sampled(everything, progress)
        await self.close_workers()
        self.predictions = {}  # the judge stage's input; the export reads predictions from the store
        self._shown_ids, self._shown_of = {}, {}
        return wanted, jwanted

    async def _round(
        self, wanted: list[UnitKey], progress: Bars, keep: Any = None, label: str = ""
    ) -> list[UnitKey]:
        """One round of the grid over the predict units ``wanted``: predict, score, judge (the judge units
        of the successful predictions, those ``keep`` keeps); returns the judge units planned."""
        await self._stage(
            "predict", wanted, lambda u: u.generator, self.predict, progress, self.predict_offline, label
        )
        wanted_set = set(wanted)
        self.predictions = {}
        digests: dict[UnitKey, str] = {}  # each prediction's stored_digest, for the score cache
        with collector_paused():  # the judge stage's input: lives until the export (fastpaths/heap.py)
            for key, status, text, _, _ in self.store.iter_raw("predict"):
                if status == "done" and key in wanted_set:
                    stored = from_stored(Prediction, text or "")
                    if stored.calls is None:  # absent from an imported source: nothing to score or judge
                        continue
                    self.predictions[key] = stored
                    digests[key] = stored_digest(text or "")
        # a record without GT is not scored: no reference exists for it (work.compute_scores)
        no_gt = self.data.no_gt
        scorable = (
            {k: p for k, p in self.predictions.items() if k.record_id.rpartition(":")[0] not in no_gt}
            if no_gt
            else self.predictions
        )
        bar = progress.add_task(f"score{label}", total=len(scorable))
        workers = self.pipe.workers
        self.scores = cached_scores(  # read from run.sqlite what a previous invocation scored
            self.store.path,
            self.data,
            scorable,
            self.pipe.scoring_modes,
            self.pipe.lenient,
            on_scored=lambda: progress.advance(bar),
            compute=lambda data, preds, modes, lenient: offline.scores_in_chunks(
                data, preds, modes, lenient, workers, advance=lambda n: progress.advance(bar, n)
            ),
            digests=digests,
        )
        del digests
        freeze()  # what exists now lives until the export: not scanned by every collection again
        with collector_paused():
            # a replayed trace with tool outputs is shown as an episode; a record without GT is judged
            # without one, and never by a judge that reads the reference it does not have
            episodes = {k for k, p in self.predictions.items() if p.trajectory is not None}
            oracles = {n for n, j in self.judges.items() if getattr(j, "needs_reference", False)}
            jwanted = judge_units(self.pipe, sorted(self.predictions), self.data.no_gt, episodes, oracles)
            if keep is not None:
                jwanted = keep(jwanted)
        await self._stage(
            "judge", jwanted, lambda u: u.judge, self.judge, progress, self.judge_offline, label
        )
        return jwanted

    async def _sampled(
        self, everything: list[UnitKey], progress: Bars
    ) -> tuple[list[UnitKey], list[UnitKey]]:
        """The stages of a sampled run (``agentjudge.runner.sampling.stages``): a round over the current plan,
        then each cell's prefix decided from what is stored; again while some cell grows. Nothing is
        decided while a planned unit has not run (a cost cap, a stopped model): the next invocation
        finishes the stage and decides then."""
        from agentjudge.runner.sampling.stages import RECORD_KEY, cell_sums

        sampler = self.sampler
        while True:
            stage = len(sampler.history)
            wanted = sampler.predict_units(everything)
            label = f" · stage {stage}"
            jwanted = await self._round(wanted, progress, sampler.judge_units, label)
            self.store.flush()
            if not self._all_ran(wanted, jwanted):
                return wanted, jwanted
            sums = cell_sums(sampler, self.pipe, self.store.iter_raw("judge"), self.scores)
            if not sampler.decide(sums):
                return wanted, jwanted
            self.store.set_meta({RECORD_KEY: sampler.dump()})
            grown = sum(1 for c, n in sampler.history[-1].items() if n > sampler.history[-2].get(c, 0))
            self.log.report(SamplingStageDone(stage, grown, sampler.spec.target_ci_pp))

    def _all_ran(self, wanted: list[UnitKey], jwanted: list[UnitKey]) -> bool:
        """Every planned unit of the round has a stored outcome (done or failed)."""
        for stage, units in (("predict", wanted), ("judge", jwanted)):
            status = self.store.statuses(stage)  # type: ignore[arg-type]
            if any(status.get(u) not in ("done", "failed") for u in units):
                return False
        return True

    def export(
        self, rundir: Path, wanted: list[UnitKey], jwanted: list[UnitKey], resume_command: str = ""
    ) -> dict[str, StageUnits]:
        """Write the run folder's files from the store (``runner.finish.export``); the units per stage."""
        from agentjudge.runner.finish import export

        return export(self, rundir, wanted, jwanted, resume_command)


async def _run(
    pipe: Pipeline,
    data: Dataset,
    partners: dict[str, str],
    rundir: Path,
    force_new: bool,
    no_cache: bool,
    report: Reporter,
    pool: WorkerPool | None,
    added: list[str],
    ending: Ending,
    resume_command: str,
) -> RunResult:
    from agentjudge.fastpaths.inline_executor import install_if_loaded
    from agentjudge.models.cache import CallCache
    from agentjudge.models.client import ModelClient
    from agentjudge.runner.finish import finish

    install_if_loaded()  # litellm's request building runs inline in this loop (fastpaths/inline_executor.py)
    client = ModelClient(cache=CallCache(pipe.cache), read_cache=not no_cache, max_cost_usd=pipe.max_cost_usd)
    # before the store is opened: a model that cannot be built (ModelResolutionError) leaves no trace
    gens, judges = _build_models(pipe, data, client)
    try:
        store = open_store(rundir, pipe, force_new, report.event, added)
    except FS_ERRORS as exc:
        raise InputError(describe(exc, rundir / "run.sqlite")) from exc
    if data.gate1 is not None:
        save_gate1(store.path, data.gate1)  # after the store accepted this configuration
    sampler = None
    if pipe.sampling is not None:
        from agentjudge.runner.sampling.stages import RECORD_KEY, SampledGrid

        sampler = SampledGrid.build(pipe.sampling, pipe, data)
        try:
            if sampler.open(store.meta(), (key for key, _ in store.iter_statuses("judge"))):
                store.set_meta({RECORD_KEY: sampler.dump()})
        except GridError:
            store.close()
            raise
    broker = None
    try:
        grid = _Grid(pipe, data, partners, store, client, gens, judges, pool)
        grid.sampler = sampler
        grid.batches = client.batch = broker = _batch_broker(pipe, rundir, report)
        wanted, jwanted = await grid.run(report)
        if client.cache is not None:  # the call cache's hit counts of this run (models/cache.py)
            client.cache.flush_hits()
        with lean_imports(ends_after_run()):  # the console script's process ends with the run
            units = grid.export(rundir, wanted, jwanted, resume_command)
        result = finish(grid, rundir, units, resume_command)
        complete = not (result.failed or result.not_run or grid.budget.skipped or grid.log.not_run)
        stamp = export_stamp(store.version, data.skipped_invalid > 0, pipe) if complete else ""
        digests = written_digests(rundir) if complete else ""  # the files as written, to see damage later
        # read by folder_open.finished on the next invocation
        store.set_meta({"exported_complete": stamp, "exported_digests": digests})
        ending.result = result  # written: a Ctrl-C from here on interrupts nothing
        report.event(RunFinished(result))
        return result
    except FS_ERRORS as exc:
        raise InputError(describe(exc, rundir)) from exc
    finally:
        if broker is not None:
            broker.close()
        store.close()


def _batch_broker(pipe: Pipeline, rundir: Path, report: Reporter) -> Any:
    """The run's batch queue when some model has ``batch: true`` (``runner.batches``), else None."""
    batch_models = {m.display_name: m for m in [*pipe.generators, *pipe.judges] if m.batch}
    if not batch_models:
        return None
    from agentjudge.runner.batches import BatchBroker

    return BatchBroker(
        rundir / "run.sqlite",
        batch_models,
        poll_s=pipe.batch_poll_s,
        poll_max_s=pipe.batch_poll_max_s,
        max_requests=pipe.batch_max_requests,
        max_bytes=pipe.batch_max_bytes,
        say=lambda text: report.event(BatchNote(text)),
    )
