"""The reading verbs: ``report``, ``compare`` and ``view``, shells over ``agentjudge.api``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentjudge.commands._app import guarded, within

CI = typer.Option(
    help="The bootstrap CI: 'expanded' (expanded percentile, the default) or 'percentile' (the plain one, "
    "the paper's)."
)


def report(
    rundir: Annotated[Path, typer.Argument(help="A run folder written by `agentjudge run`.")],
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples (>= 1000 for publication).")] = 1000,
    seed: Annotated[int, typer.Option()] = 0,
    ci: Annotated[str, CI] = "expanded",
) -> None:
    """Write RUNDIR/report/: report.md, report.html, tables/*.csv, figures/*.png."""
    from agentjudge.limits import MAX_RESAMPLES

    within(resamples=(resamples, 1, MAX_RESAMPLES), seed=(seed, 0))
    raise typer.Exit(guarded(lambda: report_cli(rundir=rundir, resamples=resamples, seed=seed, ci=ci)))


def report_cli(rundir: Path, resamples: int, seed: int, ci: str = "expanded") -> int:
    """0 written, 1 written but some analysis failed, 2 unusable run folder."""
    from agentjudge import api
    from agentjudge.commands._app import error

    try:
        written = api.report(rundir, resamples=resamples, seed=seed, ci=ci)
    except api.InputError as exc:
        error(str(exc))
        return 2
    print(
        f"report written to {written.html} and {written.markdown}"
        + (
            f"; {written.sections_failed} analysis section(s) FAILED (see the report)"
            if written.sections_failed
            else ""
        )
        + "".join(f"; {line}" for line in written.missing)
    )
    for line in written.unfinished:  # the report's first line, said here too
        print(line.replace("`", ""))
    return written.exit_code


def compare(
    rundirs: Annotated[
        list[Path], typer.Argument(help="Two or more run folders written by `agentjudge run`.")
    ],
    out: Annotated[Path, typer.Option(help="Folder for report.md, report.html, tables/, figures/.")] = Path(
        "compare"
    ),
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option()] = 0,
    ci: Annotated[str, CI] = "expanded",
) -> None:
    """One first screen across runs (judges labelled by run), with paired deltas where records overlap."""
    from agentjudge.limits import MAX_RESAMPLES

    within(resamples=(resamples, 1, MAX_RESAMPLES), seed=(seed, 0))
    raise typer.Exit(
        guarded(lambda: compare_cli(rundirs=rundirs, out=out, resamples=resamples, seed=seed, ci=ci))
    )


def compare_cli(rundirs: list[Path], out: Path, resamples: int, seed: int, ci: str = "expanded") -> int:
    """0 written, 1 written but some analysis failed, 2 bad input."""
    from agentjudge import api
    from agentjudge.commands._app import error

    try:
        done = api.compare(rundirs, out=out, resamples=resamples, seed=seed, ci=ci)
    except api.InputError as exc:
        error(str(exc))
        return 2
    print(
        f"comparison written to {done.out / 'report.html'} and {done.out / 'report.md'}; "
        f"{done.overlapping_pairs} judge pair(s) across runs share verdict rows"
        + (f"; {done.sections_failed} section(s) FAILED (see the report)" if done.sections_failed else "")
    )
    for line in done.unfinished:
        print(line.replace("`", ""))
    return done.exit_code


def view(
    rundir: Annotated[
        Path, typer.Argument(help="A run folder written by `agentjudge run` (read, never written).")
    ],
    port: Annotated[int, typer.Option(help="Port to listen on (0: a free one, printed).")] = 0,
    host: Annotated[
        str, typer.Option(help="Address to listen on (127.0.0.1: this machine only).")
    ] = "127.0.0.1",
) -> None:
    """Browse a run item by item in the browser: filter verdicts, open an item, compare judges."""
    within(port=(port, 0, 65535))
    raise typer.Exit(guarded(lambda: view_cli(rundir=rundir, host=host, port=port)))


def view_cli(rundir: Path, host: str, port: int) -> int:
    """Serve until Ctrl-C (exit 0); a folder that cannot be opened exits 2."""
    import time

    from rich.console import Console
    from rich.markup import escape

    from agentjudge import api
    from agentjudge.commands._app import error

    console = Console()
    try:
        viewing = api.view(rundir, host=host, port=port)
    except api.InputError as exc:
        error(str(exc))
        return 2
    try:  # from here Ctrl-C stops the server: exit 0
        console.print(
            f"viewing {escape(str(rundir))}: {viewing.rows:,} verdict rows, opened in "
            f"{viewing.open_seconds:.1f} s",
            highlight=False,
            soft_wrap=True,
        )
        url = viewing.url
        opened = f"open {url}  (the report: {url}report/; Ctrl-C stops)"
        console.print(opened, highlight=False, soft_wrap=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        viewing.server.shutdown()
        console.print("stopped", highlight=False)
        return 0
