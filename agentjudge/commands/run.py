"""``agentjudge run`` and ``agentjudge batches``: shells over ``agentjudge.api.run`` and ``api.batches``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentjudge.commands._app import FLAG, NO_CACHE, PROBE, SKIP_INVALID, Process, guarded


def run(
    pipeline: Annotated[
        Path,
        typer.Argument(
            help="Pipeline YAML, e.g. pipelines/quickstart.yaml, or the name of a shipped pipeline "
            "(quickstart) when no such file exists."
        ),
    ],
    out: Annotated[Path, typer.Option(help="Run folder (resumable).")],
    judge: Annotated[
        list[str] | None,
        typer.Option(help="REPLACE the pipeline's judges with this one (repeatable); see --add-judge."),
    ] = None,
    add_judge: Annotated[
        list[str] | None,
        typer.Option(
            help="Add a judge to the pipeline's (repeatable); also into an existing run folder of the "
            "pipeline, where only the added judges' units run."
        ),
    ] = None,
    generator: Annotated[
        list[str] | None, typer.Option(help="Replace the pipeline's generators (repeatable).")
    ] = None,
    api_base: Annotated[
        str | None, typer.Option(help="API base for models given with --judge/--add-judge/--generator.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count calls and estimate cost; spend nothing.", metavar=FLAG)
    ] = False,
    max_cost: Annotated[
        float | None,
        typer.Option(
            help="Hard cap on money spent by this invocation (USD); no call is sent that could pass it."
        ),
    ] = None,
    force_new: Annotated[
        bool, typer.Option("--force-new", help="Start over although the config changed.", metavar=FLAG)
    ] = False,
    no_cache: Annotated[bool, NO_CACHE] = False,
    probe: Annotated[bool, PROBE] = False,
    skip_invalid: Annotated[bool, SKIP_INVALID] = False,
    target_ci: Annotated[
        float | None,
        typer.Option(
            "--target-ci",
            metavar="PP",
            help="Sample: judge as few base scenarios as give every cell a 95 % CI of half-width <= PP "
            "percentage points (pipeline key `sampling`).",
        ),
    ] = None,
) -> None:
    """Infer, score and judge every cell of a pipeline grid; resumes where it stopped."""
    raise typer.Exit(
        guarded(
            lambda: run_cli(
                pipeline=pipeline,
                out=out,
                judges=judge,
                add_judges=add_judge,
                generators=generator,
                api_base=api_base,
                dry_run=dry_run,
                max_cost=max_cost,
                force_new=force_new,
                no_cache=no_cache,
                probe=probe,
                skip_invalid=skip_invalid,
                target_ci=target_ci,
                lean_export=Process.standalone,  # only when this process ends with the verb
            ),
            resumable=True,
        )
    )


def run_cli(
    pipeline: Path,
    out: Path,
    judges: list[str] | None = None,
    generators: list[str] | None = None,
    api_base: str | None = None,
    dry_run: bool = False,
    max_cost: float | None = None,
    force_new: bool = False,
    no_cache: bool = False,
    probe: bool = False,
    skip_invalid: bool = False,
    lean_export: bool = False,
    add_judges: list[str] | None = None,
    target_ci: float | None = None,
) -> int:
    """The verb: 0 everything done, 1 some units failed or were not run (re-run to resume), 2 bad input
    (the pipeline, the dataset, a model's set-up found by the preflight, the output folder, or another
    invocation holding it), 130 interrupted (finished units are kept). ``lean_export``: this process ends
    after the run (the console script), so its export may keep pandas out (``fastpaths/lean_export.py``)."""
    from agentjudge import api
    from agentjudge.commands._app import error, failed_preflight
    from agentjudge.commands.progress import ConsoleReporter, run_console
    from agentjudge.fastpaths.lean_export import process_ends_after_run

    console = run_console()
    process_ends_after_run(lean_export)
    try:
        result = api.run(
            pipeline,
            out,
            judges=judges,
            generators=generators,
            add_judges=add_judges,
            max_cost=max_cost,
            dry_run=dry_run,
            probe=probe,
            target_ci=target_ci,
            force_new=force_new,
            skip_invalid=skip_invalid,
            no_cache=no_cache,
            api_base=api_base,
            progress=ConsoleReporter(console),  # prints the events and, at the end, the result
        )
    except api.PreflightError as exc:
        return failed_preflight(exc)
    except api.InputError as exc:
        error(str(exc))
        return 2
    except api.RunInterrupted as exc:
        typer.echo(
            f"interrupted: finished units are saved in {exc.rundir / 'run.sqlite'}; "
            "re-run the same command to resume.",
            err=True,
        )
        return 130
    finally:
        process_ends_after_run(False)
    return result.exit_code


def batches(
    rundir: Annotated[Path, typer.Argument(help="Run folder of `agentjudge run` (its run.sqlite).")],
) -> None:
    """Provider batches of a run (models with batch: true): id, model, state, counts, units."""
    raise typer.Exit(guarded(lambda: batches_cli(rundir)))


def batches_cli(rundir: Path) -> int:
    """One line per batch. Exit 0, or 2 when RUNDIR holds no run store."""
    from collections import Counter

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from agentjudge import api
    from agentjudge.commands._app import error

    console = Console(width=None if Console().is_terminal else 200)
    try:
        rows = api.batches(rundir)
    except api.InputError as exc:
        error(str(exc))
        return 2
    if not rows:
        console.print(f"{escape(str(rundir))}: no batches (no model of this run has batch: true)")
        return 0
    table = Table(title=f"Batches of {rundir}")
    columns = ("batch", "model", "state", "provider total", "completed", "failed", "requests", "units",
               "answered", "failed requests", "open", "created", "updated")  # fmt: skip
    for col in columns:
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            r["batch_id"],
            r["model"],
            r["state"] + (f" ({r['note']})" if r["note"] else ""),
            *(str(r[k]) for k in ("total", "completed", "failed", "requests", "units", "answered")),
            str(r["request_failures"]),
            str(r["open"]),
            r["created"],
            r["updated"],
        )
    console.print(table)
    states = Counter(r["state"] for r in rows)
    console.print(", ".join(f"{n} {state}" for state, n in sorted(states.items())))
    return 0
