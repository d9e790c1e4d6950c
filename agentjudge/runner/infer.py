"""``agentjudge infer``: run one generator over a dataset and write its predictions (resumable).

Predictions are a stage of their own so that scoring and judging can be re-run without paying for
generation again. The file (JSONL or Parquet, by suffix) has one row per (record at a difficulty, trial)
with the columns of ARCHITECTURE.md; ``calls_json`` is the JSON list of calls, or null for a failure.
Re-running with the same output keeps the successful rows and retries only what is missing or failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentjudge import strict_json
from agentjudge.dataset.validate import gate1_failures, gate1_message
from agentjudge.fserrors import out_path_problem
from agentjudge.models.cache import CallCache
from agentjudge.models.client import ModelClient
from agentjudge.models.failures import FailureLog
from agentjudge.registry.preflight import ModelUse, preflight
from agentjudge.rundir.predictions import (
    prediction_row,
    read_predictions,
    write_predictions,
)
from agentjudge.types import (
    DIFFICULTIES,
    Difficulty,
    Generator,
    ModelSettings,
    Prediction,
    Record,
    Task,
)

MAX_IN_FLIGHT = 64  # tasks scheduled at once; the client's per-model semaphore is the real rate limit


def build_tasks(records: Iterable[Record], difficulties: Iterable[Difficulty]) -> list[Task]:
    """One Task per record × difficulty that has a query."""
    chosen = list(difficulties)
    return [record.task(d) for record in records for d in chosen if d in record.queries]


async def run_generator(
    generator: Generator, jobs: list[tuple[Task, int]], on_done: Any = None
) -> list[Prediction]:
    """Run ``generator`` over (task, trial) pairs concurrently; an exception becomes a recorded failure."""
    gate = asyncio.Semaphore(MAX_IN_FLIGHT)

    async def one(task: Task, trial: int) -> Prediction:
        async with gate:
            try:
                pred = await generator(task, trial)
            except Exception as exc:  # noqa: BLE001 - recorded and counted, not hidden
                pred = Prediction.for_task(
                    task,
                    generator.name,
                    trial,
                    calls=None,
                    error=f"generator_raised: {type(exc).__name__}: {exc}",
                    error_kind="generator_raised",
                )
        if on_done is not None:
            on_done(pred)
        return pred

    return list(await asyncio.gather(*(one(t, k) for t, k in jobs)))


def infer_cli(
    data: Path,
    generator: str,
    out: Path,
    difficulties: list[str] | None = None,
    trials: int = 1,
    api_base: str | None = None,
    no_cache: bool = False,
    probe: bool = False,
    skip_invalid: bool = False,
) -> int:
    """CLI body. 0 all predictions succeeded, 1 some failed (recorded in the file), 2 bad input (also: a
    failed preflight, records failing Gate 1 without ``--skip-invalid``, an unwritable ``--out``)."""
    console = Console(stderr=True, soft_wrap=True)
    from agentjudge.registry.factory import ModelResolutionError, make_generator
    from agentjudge.rundir.records import read_records

    chosen = list(difficulties or DIFFICULTIES)
    bad = [d for d in chosen if d not in DIFFICULTIES]
    if bad:
        console.print(f"[red]--difficulty {', '.join(bad)}: choose from {', '.join(DIFFICULTIES)}[/red]")
        return 2
    if out.suffix not in (".jsonl", ".parquet"):
        console.print(f"[red]--out {out}: use a .jsonl or .parquet file name[/red]")
        return 2
    try:
        records = list(read_records(data))
    except (OSError, ValueError) as exc:
        console.print(f"[red]cannot read {data}: {exc}[/red]")
        return 2
    if not records:
        console.print(f"[red]{data}: no records[/red]")
        return 2
    failing = gate1_failures(records)
    if failing and not skip_invalid:
        console.print(f"[red]{escape(gate1_message(data, failing, len(records)))}[/red]")
        return 2
    if failing:
        records = [r for r in records if r.id not in failing]
        console.print(f"--skip-invalid: {len(failing)} record(s) failing Gate 1 left out")
    settings = ModelSettings(model=generator, api_base=api_base)
    problems = preflight([ModelUse("generator", settings, "--generator")], probe=probe)
    out_problem = out_path_problem(out, "file")
    problems += [f"--out {out_problem}"] if out_problem else []
    if problems:
        for line in problems:
            console.print(f"[red]error:[/red] {escape(line)}", highlight=False)
        console.print(f"preflight: {len(problems)} problem(s); nothing was run or written.")
        return 2
    client = ModelClient(cache=CallCache(), read_cache=not no_cache)
    try:
        gen = make_generator(settings, client)
    except ModelResolutionError as exc:
        console.print(f"[red]--generator: {exc}[/red]")
        return 2

    bind = getattr(gen, "bind", None)
    if callable(bind):  # simulated generators perturb the GT, so they need the records (as in the runner)
        bind({r.id: r for r in records})

    previous: list[Prediction] = []
    others: list[Prediction] = []  # other generators' rows in the same file: written back unchanged
    if out.exists():
        try:
            for p in read_predictions(out):
                (previous if p.generator == gen.name else others).append(p)
        except (OSError, ValueError) as exc:
            console.print(
                f"[red]existing output {out} is unreadable ({exc}); move it away to start over[/red]"
            )
            return 2
    kept = {(p.record_id, p.trial): p for p in previous if p.error is None}
    tasks = build_tasks(records, chosen)  # type: ignore[arg-type]
    jobs = [(t, k) for t in tasks for k in range(trials) if (t.record_id, k) not in kept]
    console.print(
        f"{gen.name}: {len(tasks) * trials} predictions, {len(kept)} already done, {len(jobs)} to run"
    )

    done: list[Prediction] = []
    write_predictions(out, [*others, *kept.values()])  # drops old failures: they are retried below
    append = out.open("a", encoding="utf-8") if out.suffix == ".jsonl" else None

    def on_done(pred: Prediction) -> None:
        done.append(pred)
        progress.advance(bar)
        if append is not None:  # JSONL: every finished prediction is on disk at once (crash-safe resume)
            append.write(strict_json.dumps(prediction_row(pred), ensure_ascii=False) + "\n")
            append.flush()

    try:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as progress:
            bar = progress.add_task(f"infer {gen.name}", total=len(jobs))
            asyncio.run(run_generator(gen, jobs, on_done=on_done))
    finally:
        if append is not None:
            append.close()
        write_predictions(out, [*others, *kept.values(), *done])  # also on Ctrl-C: what finished is kept
    new = done

    failed = [p for p in new if p.error is not None]
    total = client.stats.total
    console.print(
        f"wrote {len(kept) + len(new)} predictions to {out}: {len(new)} new, {len(failed)} failed; "
        f"model calls {total.calls}, cache hits {total.cache_hits} ({total.hit_rate:.0%}), "
        f"retries {total.retries}, "
        f"tokens {total.prompt_tokens} in / {total.completion_tokens} out, cost ${total.cost_usd:.4f}"
        + (f" ({total.unknown_cost_calls} answers without a known price)" if total.unknown_cost_calls else "")
        + (
            f" ({total.unseen_cost_requests} requests timed out or came back unreadable or empty: "
            "maybe billed, not counted)"
            if total.unseen_cost_requests
            else ""
        )
    )
    log = FailureLog()
    log.extend((p.generator, p.error, p.error_kind) for p in failed)
    if log:
        console.print(escape(log.report()), highlight=False)
    return 1 if failed else 0
