"""The tracks' verbs: ``taubench``, ``import bfcl``, ``import agentjudgebench`` and ``import traces``,
shells over ``agentjudge.api``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentjudge.commands._app import NO_CACHE, PROBE, guarded


def taubench(
    data: Annotated[
        Path, typer.Argument(help="τ-bench historical trajectories JSON (e.g. gpt-4o-airline.json).")
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="Output folder: episodes.parquet, judgments.parquet, summary.md; the judges' run folder in "
            "OUT/run (resumable; agentjudge report OUT/run)."
        ),
    ],
    judge: Annotated[
        list[str] | None,
        typer.Option(help="Judges (repeatable); default: baseline/always-1, rule, gt-rule, ceiling."),
    ] = None,
    condition: Annotated[
        list[str] | None, typer.Option(help="with_gt and/or without_gt (default both).")
    ] = None,
    api_base: Annotated[str | None, typer.Option(help="API base for --judge models.")] = None,
    no_cache: Annotated[bool, NO_CACHE] = False,
    probe: Annotated[bool, PROBE] = False,
) -> None:
    """τ-bench track: judge real multi-turn agent trajectories and relate verdicts to τ-bench's reward."""
    raise typer.Exit(
        guarded(
            lambda: taubench_cli(
                data=data,
                out=out,
                judges=judge,
                api_base=api_base,
                conditions=condition,
                no_cache=no_cache,
                probe=probe,
            )
        )
    )


def taubench_cli(
    data: Path,
    out: Path,
    judges: list[str] | None,
    api_base: str | None,
    conditions: list[str] | None,
    no_cache: bool = False,
    probe: bool = False,
) -> int:
    """0 every judgment has a verdict, 1 some failed (parse or transport), 2 bad input."""
    from rich.console import Console
    from rich.markup import escape

    from agentjudge import api
    from agentjudge.commands._app import error, failed_preflight

    console = Console()
    try:
        done = api.taubench(
            data, out, judges=judges, conditions=conditions, api_base=api_base, no_cache=no_cache, probe=probe
        )
    except api.PreflightError as exc:
        return failed_preflight(exc)
    except api.InputError as exc:
        error(str(exc))
        return 2
    console.print(done.markdown, markup=False, highlight=False)
    if done.failures:
        console.print(escape(done.failures.report()), highlight=False, soft_wrap=True)
    for model in done.run.stopped_models:
        console.print(
            f"[yellow]stopped: {escape(model.model)} ({escape(model.error)}); {model.units_not_run} of its "
            "units not run[/yellow]",
            highlight=False,
            soft_wrap=True,
        )
    if done.failed:
        console.print(
            f"[yellow]{done.failed} judgments failed (parse or transport); see judgments.parquet[/yellow]"
        )
    if done.run.status != "complete":
        console.print(
            f"the judges' run in {escape(str(out / 'run'))} stopped ({done.run.stop_reason}): re-run the "
            "same command to continue it",
            highlight=False,
            soft_wrap=True,
        )
    return 1 if done.failed or done.run.status != "complete" else 0


def import_bfcl(
    tasks: Annotated[Path, typer.Argument(help="BFCL task file, e.g. BFCL_v4_multiple.json (JSON Lines).")],
    answers: Annotated[
        Path, typer.Argument(help="Its accepted answers, e.g. possible_answer/BFCL_v4_multiple.json.")
    ],
    out: Annotated[Path, typer.Option(help="Output folder for records.jsonl and manifest.json.")],
    category: Annotated[
        str | None, typer.Option(help="Category name for ids/origin; default: from the file name.")
    ] = None,
) -> None:
    """BFCL tasks + accepted answers → records (human query, every accepted value kept, no environment)."""
    raise typer.Exit(
        guarded(lambda: import_bfcl_cli(tasks=tasks, answers=answers, out=out, category=category))
    )


def import_bfcl_cli(tasks: Path, answers: Path, out: Path, category: str | None) -> int:
    """0 written, 2 a bad task or answer file (nothing written)."""
    from rich.console import Console

    from agentjudge import api
    from agentjudge.commands._app import error

    console = Console(soft_wrap=True)
    try:
        done = api.import_bfcl(tasks, answers, out, category=category)
    except api.InputError as exc:
        error(str(exc))
        return 2
    shapes = ", ".join(f"{k} {v}" for k, v in done.manifest["counts"]["dag_type"].items())
    console.print(
        f"{done.records} BFCL {done.category} tasks → {done.records_path} ({shapes}); human-written queries, "
        "no executable environment (state_match will be None)"
    )
    console.print(
        f"{done.failing_validation} of {done.records} will fail `agentjudge validate` (an answer its query "
        "does not ground, or one that breaks its own schema: docs/tracks.md, 'Real human-written tasks "
        "(BFCL)'); "
        f"see them with: agentjudge validate {done.records_path}"
    )
    return 0


def import_agentjudgebench(
    release: Annotated[
        Path,
        typer.Argument(
            help="The downloaded release (its root or data/), or the pipeline's judge outputs "
            "(judge_<judge>.jsonl files or <gen>/judged_by_<judge>/ folders)."
        ),
    ],
    out: Annotated[Path, typer.Option(help="A new run folder for the imported run.")],
    records: Annotated[
        Path | None,
        typer.Option(
            help="Base records (published layout) for the run instead of the release's own "
            "data/main/records.jsonl, checked against it; needed when the release has none."
        ),
    ] = None,
) -> None:
    """The AgentJudgeBench paper's generator outputs and judge verdicts as a run folder (report, view,
    --add-judge)."""
    raise typer.Exit(guarded(lambda: import_agentjudgebench_cli(release, records, out)))


def import_agentjudgebench_cli(release: Path, records: Path | None, out: Path) -> int:
    """0 imported, 2 bad input (one line, nothing written)."""
    from rich.console import Console
    from rich.markup import escape

    from agentjudge import api
    from agentjudge.commands._app import error
    from agentjudge.commands.progress import ConsoleReporter, run_console

    console = Console()
    try:
        done = api.import_agentjudgebench(
            release, out, records=records, progress=ConsoleReporter(run_console())
        )
    except api.InputError as exc:
        error(str(exc))
        return 2
    summary = done.summary
    console.print(
        f"imported {summary['rows']:,} judged rows ({summary['judgments']:,} judgments) of "
        f"{len(summary['generators'])} generators x {len(summary['judges'])} judges from {summary['files']} "
        f"file(s) ({summary['layout']}) into {escape(str(out))}",
        highlight=False,
        soft_wrap=True,
    )
    for line in summary["notes"]:
        console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
    console.print(f"done: {escape(str(out))} (agentjudge report {escape(str(out))})", highlight=False)
    return 0


def import_traces(
    file: Annotated[
        Path,
        typer.Argument(
            help="An agent's conversations: OpenAI-style JSON Lines, or an Inspect log (.eval/.json)."
        ),
    ],
    out: Annotated[Path, typer.Option(help="A new run folder for the imported traces.")],
    agent: Annotated[
        str | None, typer.Option(help="The agent's name in the run (a generator); default: the file's stem.")
    ] = None,
    format: Annotated[
        str, typer.Option("--format", help="auto (from the file's name), openai or inspect.")
    ] = "auto",
) -> None:
    """Your own agent's traces as a run folder: its calls, scored where expected calls are given; add
    judges with `agentjudge run RUNDIR/pipeline.yaml --out RUNDIR --add-judge MODEL`."""
    raise typer.Exit(guarded(lambda: import_traces_cli(file, out, agent, format)))


def import_traces_cli(file: Path, out: Path, agent: str | None, format: str = "auto") -> int:
    """0 imported, 2 bad input (one line naming the file, line and field; nothing written)."""
    import sys

    from rich.console import Console
    from rich.markup import escape

    from agentjudge import api
    from agentjudge.commands.progress import ConsoleReporter, run_console

    console = Console(soft_wrap=True)
    try:
        done = api.import_traces(
            file, out, agent=agent, format=format, progress=ConsoleReporter(run_console())
        )
    except api.InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    inferred = (
        f"; {done.inferred_tools} tool schema(s) inferred from the calls" if done.inferred_tools else ""
    )
    console.print(
        f"imported {done.conversations} conversation(s) of {escape(done.agent)} ({done.format}) into "
        f"{escape(str(out))}: {done.calls} call(s); {done.with_gt} with expected calls (scored), "
        f"{done.conversations - done.with_gt} without (no reference: judged without GT only); "
        f"{done.with_outputs} with tool outputs (also judged as episodes){inferred}",
        highlight=False,
    )
    console.print(
        f"next: agentjudge run {escape(str(out / 'pipeline.yaml'))} --out {escape(str(out))} "
        "--add-judge MODEL",
        highlight=False,
    )
    return 0
