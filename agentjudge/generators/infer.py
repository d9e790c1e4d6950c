"""``agentjudge infer``: run one generator over a dataset and write its predictions (resumable).

Predictions are a stage of their own so that scoring and judging can be re-run without paying for
generation again. The file (JSONL or Parquet, by suffix) has one row per (record at a difficulty, trial)
with the columns of ARCHITECTURE.md; ``calls_json`` is the JSON list of calls, or null for a failure.
Re-running with the same output keeps the successful rows and retries only what is missing or failed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentjudge import strict_json
from agentjudge.columns import LATER_PREDICTION_COLUMNS, PREDICTION_COLUMNS
from agentjudge.dataset.validate import gate1_failures, gate1_message
from agentjudge.fserrors import out_path_problem
from agentjudge.generators.interactive import read_trajectory, trajectory_fields
from agentjudge.models.cache import CallCache
from agentjudge.models.client import ModelClient
from agentjudge.models.failures import FailureLog
from agentjudge.preflight import ModelUse, preflight
from agentjudge.types import (
    DIFFICULTIES,
    Difficulty,
    Generator,
    ModelSettings,
    Prediction,
    Record,
    Task,
    ToolCall,
    Usage,
)

MAX_IN_FLIGHT = 64  # tasks scheduled at once; the client's per-model semaphore is the real rate limit


def prediction_row(pred: Prediction) -> dict[str, Any]:
    """One Prediction → one flat row (the predictions file format)."""
    calls = (
        None
        if pred.calls is None
        else strict_json.dumps([c.model_dump() for c in pred.calls], ensure_ascii=False)
    )
    return {
        "record_id": pred.record_id,
        "base_id": pred.base_id,
        "difficulty": pred.difficulty,
        "generator": pred.generator,
        "trial": pred.trial,
        "calls_json": calls,
        "raw_output": pred.raw_output,
        "error": pred.error,
        "simulated": pred.simulated,
        "prompt_tokens": pred.usage.prompt_tokens,
        "completion_tokens": pred.usage.completion_tokens,
        "cost_usd": pred.usage.known_cost_usd,  # null: some call had no known price
        "cached": pred.usage.cached,
        **trajectory_fields(pred),
        "cached_prompt_tokens": pred.usage.cached_prompt_tokens,
    }


def _none_if_nan(value: Any) -> Any:
    return None if isinstance(value, float) and value != value else value


def row_to_prediction(row: dict[str, Any], where: str) -> Prediction:
    """A row back to a Prediction; ``where`` (file:line) names the bad row in errors."""
    missing = [c for c in PREDICTION_COLUMNS if c not in row and c not in LATER_PREDICTION_COLUMNS]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}")
    calls_json = _none_if_nan(row["calls_json"])
    try:
        calls = None if calls_json is None else [ToolCall.model_validate(c) for c in json.loads(calls_json)]
    except (json.JSONDecodeError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: field calls_json is not a JSON list of calls: {exc}") from exc
    cost = _none_if_nan(row["cost_usd"])  # null: unknown (the priced part is not kept in the file)
    return Prediction(
        record_id=row["record_id"],
        base_id=row["base_id"],
        difficulty=row["difficulty"],
        generator=row["generator"],
        trial=int(row["trial"]),
        calls=calls,
        raw_output=_none_if_nan(row["raw_output"]) or "",
        error=_none_if_nan(row["error"]),
        simulated=bool(row["simulated"]),
        trajectory=read_trajectory(row, where),
        usage=Usage(
            prompt_tokens=int(row["prompt_tokens"]),
            completion_tokens=int(row["completion_tokens"]),
            cost_usd=0.0 if cost is None else float(cost),
            cost_known=cost is not None,
            cached=bool(row["cached"]),
            cached_prompt_tokens=int(_none_if_nan(row.get("cached_prompt_tokens")) or 0),
        ),
    )


def read_predictions(path: Path) -> list[Prediction]:
    """Predictions from .jsonl or .parquet."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pandas as pd

        frame = pd.read_parquet(path)
        return [row_to_prediction(r, f"{path}:row {i + 1}") for i, r in enumerate(frame.to_dict("records"))]
    out: list[Prediction] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not JSON: {exc}") from exc
            out.append(row_to_prediction(row, f"{path}:{lineno}"))
    return out


def write_predictions(path: Path, predictions: Iterable[Prediction]) -> None:
    """Write all predictions (replacing the file); format by suffix (.parquet or JSONL)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [prediction_row(p) for p in predictions]
    if path.suffix == ".parquet":
        import pandas as pd

        frame = pd.DataFrame(rows, columns=list(PREDICTION_COLUMNS))
        frame["cost_usd"] = frame["cost_usd"].astype("float64")  # nullable double, also when all null
        frame.to_parquet(path, index=False)
        return
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(strict_json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(path)


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
    from agentjudge.dataset.layout import read_records
    from agentjudge.registry import ModelResolutionError, make_generator

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
    log.extend((p.generator, p.error) for p in failed)
    if log:
        console.print(escape(log.report()), highlight=False)
    return 1 if failed else 0
