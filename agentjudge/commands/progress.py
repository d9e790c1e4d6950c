"""What ``run`` and ``infer`` show while they work: the runner's events as lines, its stages as bars.

The runner prints nothing (``agentjudge/runner/events.py``); ``ConsoleReporter`` is the command line's
reporter: each event becomes the line it has always been, the stages' bars are rich progress bars (on a
terminal; in a log or a pipe a ``StageStarted`` line says what each stage runs instead), and the end of a
run (``RunFinished``) prints its tables and closing lines (``commands/run_output.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from agentjudge.runner import events


class StageBars(Progress):
    """rich's progress bars with the runner's ``restart_rate`` (``runner.events.Bars``)."""

    def restart_rate(self, task_id: TaskID) -> None:
        """Measure the bar's rate (and so its time left) afresh from now on, keeping its count and elapsed
        time.

        A stage's offline units (simulated models, baselines) finish thousands at a time in seconds, before
        its model calls; measured over both, the rate of the calls that remain would read hundreds of times
        too fast, and the time left near zero, for rich's whole estimate window (30 s)."""
        task = next(t for t in self.tasks if t.id == task_id)
        began = task.fields.get("began", task.start_time)
        self.reset(
            task_id, total=task.total, completed=int(task.completed), **{**task.fields, "began": began}
        )


class RateColumn(ProgressColumn):
    """Units per second (rich's built-in speed column is for bytes)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-/s" if speed is None else f"{speed:.1f}/s", style="progress.data.speed")


class StageElapsedColumn(TimeElapsedColumn):
    """Time since the stage's bar started, also after ``restart_rate`` restarted its clock."""

    def render(self, task: Task) -> Text:
        began = task.fields.get("began")
        # rich's own reading of the time since the (re)start: a finished task keeps it in ``finished_time``
        since = task.finished_time if task.finished else task.elapsed
        if began is None or task.start_time is None or since is None:
            return super().render(task)
        elapsed = task.start_time - began + since  # plus the stage's time before the restart
        return Text(str(timedelta(seconds=max(0, int(elapsed)))), style="progress.elapsed")  # rich's format


def make_progress(console: Console, get_time: Callable[[], float] | None = None) -> StageBars:
    """A run's bars: stage, bar, done of total, rate, elapsed, time left; shown on a terminal only."""
    return StageBars(
        TextColumn("[bold]{task.description:<8}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        StageElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        disable=not console.is_terminal,
        transient=False,
        get_time=get_time,
    )


def infer_progress(console: Console) -> StageBars:
    """``infer``'s one bar: name, bar, done of total, elapsed (rich prints its last state in a log)."""
    return StageBars(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def run_console() -> Console:
    """``run``'s console: on a terminal as wide as it; in a log or a pipe wide enough that model names are
    not truncated."""
    console = Console()
    return console if console.is_terminal else Console(width=160)


class ConsoleReporter:
    """The runner's events printed on ``console``; ``bars`` makes the progress bars."""

    def __init__(self, console: Console, bars: Callable[[Console], StageBars] | None = None) -> None:
        self.console = console
        self._bars = bars  # None: a run's bars (``make_progress``)

    def bars(self) -> AbstractContextManager[Any]:
        return (self._bars or make_progress)(self.console)

    def event(self, event: events.Event) -> None:
        say = self.console.print
        if isinstance(event, events.StageStarted):
            if not self.console.is_terminal:  # no progress bar: say it
                say(f"{event.stage}: {event.pending} unit(s) to run of {event.total}")
        elif isinstance(event, events.ModelStopped):
            say(
                f"[red]stopping {escape(event.model)}[/red] ({event.reason}: no retry can fix it); its "
                f"remaining units are not run: {escape(event.error)}",
                highlight=False,
                soft_wrap=True,
            )
        elif isinstance(event, events.RunFinished):
            from agentjudge.commands.run_output import print_ending

            print_ending(self.console, event.result)
        else:
            _LINES[type(event)](self.console, event)


def _kept(console: Console, e: Any) -> None:
    console.print(
        f"{escape(str(e.rundir))} also holds {', '.join(map(escape, e.models))} (added earlier with "
        "--add-judge): kept",
        highlight=False,
        soft_wrap=True,
    )


def _replaced(console: Console, e: Any) -> None:
    console.print(
        f"--judge replaces the pipeline's {len(e.names)} judge(s) ({escape(', '.join(e.names))}); "
        "--add-judge keeps them and adds yours",
        highlight=False,
        soft_wrap=True,
    )


def _added(console: Console, e: Any) -> None:
    console.print(
        f"--add-judge: {escape(str(e.rundir))} holds this pipeline without {escape(', '.join(e.names))}; "
        f"only their units run, the {e.predictions:,} prediction and {e.judged:,} judge unit(s) stored are "
        "reused",
        highlight=False,
        soft_wrap=True,
    )


def _sampling(console: Console, e: Any) -> None:
    console.print(
        f"sampling: stage {e.stage} done; {e.grown} cell(s) need more scenarios for the "
        f"±{e.target_ci_pp:g} pp target: stage {e.stage + 1}",
        highlight=False,
    )


def _offline_store(console: Console, e: Any) -> None:
    console.print(
        f"[yellow]warning:[/yellow] an offline worker process could not store its chunk in "
        f"{escape(e.store_name)} ({escape(e.error)}); the main process stores that process's units instead",
        highlight=False,
        soft_wrap=True,
    )


_LINES: dict[type, Callable[[Console, Any], None]] = {
    events.AddedJudgesKept: _kept,
    events.JudgesReplaced: _replaced,
    events.SkippedInvalid: lambda c, e: c.print(
        f"--skip-invalid: {e.count} record(s) failing Gate 1 left out"
    ),
    events.FolderArchived: lambda c, e: c.print(
        f"--force-new: previous run moved to {escape(str(e.archive))}"
    ),
    events.JudgesAdded: _added,
    events.SamplingStageDone: _sampling,
    events.BatchNote: lambda c, e: c.print(escape(e.text), highlight=False, soft_wrap=True),
    events.Note: lambda c, e: c.print(f"  {escape(e.text)}", highlight=False, soft_wrap=True),
    events.OfflineStoreWarning: _offline_store,
    events.InferPlanned: lambda c, e: c.print(
        f"{e.generator}: {e.total} predictions, {e.done} already done, {e.to_run} to run"
    ),
}
