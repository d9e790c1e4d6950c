"""What a run tells the person running it while it works, as data: the runner prints nothing itself.

A run (and ``infer``, a run of one stage) reports through a ``Reporter`` passed in by its caller: typed
events (``Event``) as they happen, and progress bars (``Bars``) around its stages. The command line's
reporter (``agentjudge/commands/progress.py``) turns them into the lines and bars a terminal shows; a
library caller passes nothing and gets ``QUIET``, or its own reporter (a notebook's, a log's).

Why events and not text: a caller can act on them (a stopped model, a sampling stage), and the wording
lives in one place, the command line's, with the rest of what it prints.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentjudge.runner.result import RunResult


@dataclass(frozen=True)
class AddedJudgesKept:
    """Judges added to the run folder earlier with ``--add-judge`` stay in the run."""

    rundir: Path
    models: tuple[str, ...]


@dataclass(frozen=True)
class JudgesReplaced:
    """``--judge`` replaced the pipeline's judges (named here)."""

    names: tuple[str, ...]


@dataclass(frozen=True)
class SkippedInvalid:
    """``--skip-invalid`` left out this many records failing Gate 1."""

    count: int


@dataclass(frozen=True)
class FolderArchived:
    """``--force-new`` moved the folder's previous run here."""

    archive: Path


@dataclass(frozen=True)
class JudgesAdded:
    """``--add-judge`` extends the run the folder holds: only these judges' units run."""

    rundir: Path
    names: tuple[str, ...]
    predictions: int  # prediction units stored, reused
    judged: int  # judge units stored, reused


@dataclass(frozen=True)
class StageStarted:
    """A stage (``predict``, ``judge``; a sampled run's with `` · stage N``) runs ``pending`` of ``total``."""

    stage: str
    pending: int
    total: int


@dataclass(frozen=True)
class ModelStopped:
    """A failure every further call of the model would repeat (auth, bad request): its units stop."""

    model: str
    reason: str  # models.failures.reason_of
    error: str


@dataclass(frozen=True)
class SamplingStageDone:
    """A sampled run's stage ended and ``grown`` cells need more scenarios: the next stage starts."""

    stage: int
    grown: int
    target_ci_pp: float


@dataclass(frozen=True)
class BatchNote:
    """Batch mode's account of its provider batches (submitted, polled, read): one line."""

    text: str


@dataclass(frozen=True)
class OfflineStoreWarning:
    """An offline worker process could not store its chunk; the main process stores it instead."""

    store_name: str
    error: str


@dataclass(frozen=True)
class Note:
    """A step of a long verb's work (the AgentJudgeBench import reading each file): one line."""

    text: str


@dataclass(frozen=True)
class InferPlanned:
    """``infer``: how many predictions the generator's file needs, holds already, and runs now."""

    generator: str
    total: int
    done: int
    to_run: int


@dataclass(frozen=True)
class RunFinished:
    """The run ended (also a dry run, and a run with nothing to do); the result is what ``run`` returns."""

    result: RunResult


Event = (
    AddedJudgesKept
    | JudgesReplaced
    | SkippedInvalid
    | FolderArchived
    | JudgesAdded
    | StageStarted
    | ModelStopped
    | SamplingStageDone
    | BatchNote
    | OfflineStoreWarning
    | Note
    | InferPlanned
    | RunFinished
)


class Bars(Protocol):
    """Progress bars, one per stage (rich's ``Progress`` has the first two methods)."""

    def add_task(self, description: str, total: float | None = ...) -> Any: ...

    def advance(self, task_id: Any, advance: float = 1) -> None: ...

    def restart_rate(self, task_id: Any) -> None:
        """Measure the bar's rate afresh from now on (after a stage's burst of offline units)."""


class Reporter(Protocol):
    """Where a run reports: ``event`` for each ``Event``, ``bars()`` around its stages."""

    def event(self, event: Event) -> None: ...

    def bars(self) -> AbstractContextManager[Bars]: ...


class NoBars:
    """Bars nobody sees."""

    def add_task(self, description: str, total: float | None = None) -> int:
        return 0

    def advance(self, task_id: Any, advance: float = 1) -> None:
        return None

    def restart_rate(self, task_id: Any) -> None:
        return None


class Quiet:
    """The reporter of a caller that passes none: events dropped, no bars."""

    def event(self, event: Event) -> None:
        return None

    def bars(self) -> AbstractContextManager[Bars]:
        return nullcontext(NoBars())


QUIET = Quiet()
