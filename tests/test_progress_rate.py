"""A stage's bar after its offline burst: the rate and time left are those of the calls that remain."""

from __future__ import annotations

from rich.console import Console
from rich.progress import TaskID

from agentjudge.commands import progress as bars


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0  # a clock reading, not 0: rich keeps durations and readings in the same fields

    def __call__(self) -> float:
        return self.now


def _bar_after_offline_burst(restart: bool) -> tuple[bars.StageBars, TaskID, Clock]:
    clock = Clock()
    progress = bars.make_progress(Console(force_terminal=True, width=120), get_time=clock)
    bar = progress.add_task("judge", total=2100)
    for _ in range(2):  # two offline chunks of 1,000 units within a second
        clock.now += 0.5
        progress.advance(bar, 1000)
    if restart:
        progress.restart_rate(bar)
    for _ in range(2):  # then model calls, one per second
        clock.now += 1
        progress.advance(bar, 1)
    return progress, bar, clock


def test_the_rate_after_the_offline_burst_is_the_calls_rate() -> None:
    progress, bar, _ = _bar_after_offline_burst(restart=True)
    (task,) = progress.tasks
    assert task.completed == 2002 and task.total == 2100
    assert task.speed == 1.0  # the calls' rate: one per second
    assert task.time_remaining == 98.0
    # without the restart the burst is in rich's estimate window: hundreds of units per second, ETA ~0
    progress, _, _ = _bar_after_offline_burst(restart=False)
    assert progress.tasks[0].speed is not None and progress.tasks[0].speed > 300


def test_the_elapsed_time_still_counts_from_the_stage_start() -> None:
    progress, bar, clock = _bar_after_offline_burst(restart=True)
    (task,) = progress.tasks
    clock.now = 1075.0
    assert str(bars.StageElapsedColumn().render(task)) == "0:01:15"
    assert task.description == "judge"
    clock.now = 1090.0
    progress.advance(bar, 98)  # the last calls: the bar finishes and its time stops
    clock.now = 2000.0
    assert task.finished and str(bars.StageElapsedColumn().render(task)) == "0:01:30"
