"""``agentjudge infer``: one generator over a dataset, its predictions written to a file (resumable).

Predictions are a stage of their own so that scoring and judging can be re-run without paying for
generation again. This is a run of one stage through the runner's machinery: the predict units of the
(record, difficulty, trial) grid run through ``scheduler.run_units`` (per-model workers, failures by model
and reason, the model's tallies and money), as the grid's predict stage runs them; only the place finished
units go differs. A run folder's units go to its run.sqlite; here they go to the predictions file itself
(``PredictionsFile``), which is also what a re-run resumes from: its successful rows are kept, and only
what is missing or failed runs again.

The file (JSONL or Parquet, by suffix) has one row per (record at a difficulty, trial) with the columns of
docs/formats.md; ``calls_json`` is the JSON list of calls, or null for a failure. A JSONL file gets each
prediction appended the moment it finishes (a killed process loses nothing finished); either file is
rewritten whole at the end, also on Ctrl-C, in the order of the grid (records in file order, difficulties,
trials). Other generators' rows in the same file are written back unchanged.

Unlike a grid run, a failure that every further call would repeat (an auth error) does not stop the
generator's remaining units: each records its failure, as ``infer`` always has.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from agentjudge import strict_json
from agentjudge.atomic import named
from agentjudge.errors import InputError, PreflightError
from agentjudge.models.failures import Failure
from agentjudge.runner import scheduler
from agentjudge.runner.events import QUIET, InferPlanned, Note, Reporter, SkippedInvalid
from agentjudge.runner.result import CallCounts, FailureGroup, InferResult
from agentjudge.runner.store import Status, UnitKey
from agentjudge.types import DIFFICULTIES, Difficulty, ModelSettings, Prediction, Record, Task

MAX_IN_FLIGHT = 64  # units the generator works on at once; the client's per-model semaphore is the rate limit


def build_tasks(records: Iterable[Record], difficulties: Iterable[Difficulty]) -> list[Task]:
    """One Task per record × difficulty that has a query."""
    chosen = list(difficulties)
    return [record.task(d) for record in records for d in chosen if d in record.queries]


class PredictionsFile:
    """The scheduler's store for ``infer``: a finished unit's prediction is kept (and, for JSONL, appended
    to the file at once); ``rows`` are the predictions made, in the grid's order."""

    flush_interval_s = 0.2

    def __init__(self, order: dict[UnitKey, int], append: IO[str] | None) -> None:
        self.order = order
        self.append = append
        self.made: dict[UnitKey, Prediction] = {}

    def finish(
        self, key: UnitKey, status: Status, result: Any, error: str | None, started_at: str, failure: Failure
    ) -> None:
        prediction: Prediction = result  # the work below hands the prediction itself, never None
        self.made[key] = prediction
        if self.append is not None:  # JSONL: every finished prediction is on disk at once
            from agentjudge.rundir.predictions import prediction_row

            try:
                self.append.write(strict_json.dumps(prediction_row(prediction), ensure_ascii=False) + "\n")
                self.append.flush()
            except OSError as exc:  # a full disk: say which file (what was flushed before stays in it)
                raise named(exc, Path(self.append.name)) from exc

    def flush_if_due(self) -> None:
        return None

    def flush(self) -> None:
        return None

    @property
    def rows(self) -> list[Prediction]:
        return [self.made[key] for key in sorted(self.made, key=self.order.__getitem__)]


def infer_predictions(
    data: Path,
    generator: str,
    out: Path,
    *,
    difficulties: list[str] | None = None,
    trials: int = 1,
    api_base: str | None = None,
    no_cache: bool = False,
    probe: bool = False,
    skip_invalid: bool = False,
    progress: Reporter | None = None,
) -> InferResult:
    """Run ``generator`` over ``data`` into the predictions file ``out``; see ``agentjudge.api.infer``.
    Bad input (also a failed preflight, records failing Gate 1 without ``skip_invalid``, an unwritable or
    unreadable ``out``) raises an ``InputError`` before anything is written."""
    from agentjudge.limits import MAX_TRIALS, check_range
    from agentjudge.registry.factory import ModelResolutionError, make_generator

    check_range("--trials", trials, 1, MAX_TRIALS)
    report = progress if progress is not None else QUIET
    chosen = list(difficulties or DIFFICULTIES)
    records = _records(data, chosen, out, skip_invalid, report)
    settings = ModelSettings(model=generator, api_base=api_base)
    _preflight(settings, out, probe)
    from agentjudge.models.cache import CallCache
    from agentjudge.models.client import ModelClient

    client = ModelClient(cache=CallCache(), read_cache=not no_cache)
    try:
        gen = make_generator(settings, client)
    except ModelResolutionError as exc:
        raise InputError(f"--generator: {exc}") from exc
    bind = getattr(gen, "bind", None)
    if callable(bind):  # simulated generators perturb the GT, so they need the records (as in the runner)
        bind({r.id: r for r in records})
    previous, others = _earlier(out, gen.name, report)
    kept = {(p.record_id, p.trial): p for p in previous if p.error is None}
    tasks = build_tasks(records, chosen)  # type: ignore[arg-type]
    jobs = {
        UnitKey("predict", t.record_id, t.difficulty, gen.name, k): t
        for t in tasks
        for k in range(trials)
        if (t.record_id, k) not in kept
    }
    report.event(InferPlanned(gen.name, len(tasks) * trials, len(kept), len(jobs)))
    grid = {(t.record_id, k): i for i, (t, k) in enumerate((t, k) for t in tasks for k in range(trials))}
    made, log = _run(gen, jobs, out, others, list(kept.values()), grid, report)
    failed = [p for p in made if p.error is not None]
    return InferResult(
        out=out,
        generator=gen.name,
        planned=len(tasks) * trials,
        kept=len(kept),
        new=len(made),
        failed=len(failed),
        calls=CallCounts.of(client.stats.total),
        failures=tuple(
            FailureGroup(model, reason, n, log.failures.examples[(model, reason)])
            for (model, reason), n in log.failures.counts.items()
        ),
    )


def _run(
    gen: Any,
    jobs: dict[UnitKey, Task],
    out: Path,
    others: list[Prediction],
    kept: list[Prediction],
    grid: dict[tuple[str, int], int],
    report: Reporter,
) -> tuple[list[Prediction], scheduler.RunLog]:
    """The predict stage over ``jobs``; the file holds the other generators' rows (``others``, unchanged),
    then this generator's ``kept`` and made ones in the grid's order (``grid``: (record at a difficulty,
    trial) -> position; rows outside it last), also on Ctrl-C: a resumed file is the bytes an uninterrupted
    run writes. Returns the predictions made (in the grid's order) and the stage's log (failures by model
    and reason)."""
    from agentjudge.rundir.predictions import write_predictions

    def in_order(rows: list[Prediction]) -> list[Prediction]:
        return [*others, *sorted(rows, key=lambda p: grid.get((p.record_id, p.trial), len(grid)))]

    write_predictions(out, in_order(kept))  # drops old failures: they are retried below
    append = out.open("a", encoding="utf-8") if out.suffix == ".jsonl" else None
    sink = PredictionsFile({key: i for i, key in enumerate(jobs)}, append)

    async def work(key: UnitKey) -> scheduler.Outcome:
        task, trial = jobs[key], key.generator_trial
        try:
            pred = await gen(task, trial)
        except Exception as exc:  # noqa: BLE001 - recorded and counted, not hidden
            pred = Prediction.for_task(
                task,
                gen.name,
                trial,
                calls=None,
                error=f"generator_raised: {type(exc).__name__}: {exc}",
                error_kind="generator_raised",
            )
        status: Status = "failed" if pred.error is not None else "done"
        # the sink takes the prediction itself as the result
        return scheduler.Outcome(
            status, pred, pred.error, pred.usage, kind=pred.error_kind, attempts=pred.error_attempts
        )

    log = scheduler.RunLog(stop_on_fatal=False)  # every unit runs and records its own failure
    try:
        with report.bars() as bars:
            bar = bars.add_task(f"infer {gen.name}", total=len(jobs))
            asyncio.run(
                scheduler.run_units(
                    "predict",
                    list(jobs),
                    lambda key: key.generator,
                    {gen.name: MAX_IN_FLIGHT},
                    work,
                    sink,
                    asyncio.Semaphore(MAX_IN_FLIGHT),
                    scheduler.Budget(None),
                    {},
                    bars,
                    log,
                    bar=bar,
                )
            )
    finally:
        if append is not None:
            with contextlib.suppress(OSError):  # its failure was raised already, by the write that failed
                append.close()
        write_predictions(out, in_order([*kept, *sink.rows]))  # also on Ctrl-C: what finished is kept
    return sink.rows, log


def _records(data: Path, chosen: list[str], out: Path, skip_invalid: bool, report: Reporter) -> list[Record]:
    """The records to predict: flags checked, the file read, Gate 1's failures refused or left out."""
    from agentjudge.dataset.validate import gate1_failures, gate1_message
    from agentjudge.rundir.records import read_records

    bad = [d for d in chosen if d not in DIFFICULTIES]
    if bad:
        raise InputError(f"--difficulty {', '.join(bad)}: choose from {', '.join(DIFFICULTIES)}")
    if out.suffix not in (".jsonl", ".parquet"):
        raise InputError(f"--out {out}: use a .jsonl or .parquet file name")
    try:
        records = list(read_records(data))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {data}: {exc}") from exc
    if not records:
        raise InputError(f"{data}: no records")
    failing = gate1_failures(records)
    if failing and not skip_invalid:
        raise InputError(gate1_message(data, failing, len(records)))
    if failing:
        records = [r for r in records if r.id not in failing]
        report.event(SkippedInvalid(len(failing)))
    return records


def _preflight(settings: ModelSettings, out: Path, probe: bool) -> None:
    from agentjudge.fserrors import out_path_problem
    from agentjudge.registry.preflight import ModelUse, preflight

    problems = preflight([ModelUse("generator", settings, "--generator")], probe=probe)
    out_problem = out_path_problem(out, "file")
    problems += [f"--out {out_problem}"] if out_problem else []
    if problems:
        raise PreflightError(problems)


def _earlier(out: Path, generator: str, report: Reporter) -> tuple[list[Prediction], list[Prediction]]:
    """The file's rows of this generator, and of the others (written back unchanged). A last line an
    interrupted write cut off (a full disk, a killed process) is dropped, saying so: its unit runs again."""
    from agentjudge.rundir.predictions import read_predictions, torn_last_line

    previous: list[Prediction] = []
    others: list[Prediction] = []
    if out.exists():
        try:
            for p in read_predictions(out, drop_torn_line=True):
                (previous if p.generator == generator else others).append(p)
            torn = torn_last_line(out)
            if torn is not None:  # the rest of the file reads: an interrupted write, not another file
                report.event(
                    Note(
                        f"{out}, line {torn}: torn (cut off by an interrupted write); dropped, its "
                        "prediction runs again"
                    )
                )
        except (OSError, ValueError) as exc:
            raise InputError(
                f"existing output {out} is unreadable ({exc}); move it away to start over"
            ) from exc
    return previous, others
