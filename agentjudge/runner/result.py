"""What ``agentjudge run`` did, as data: the value ``agentjudge.api.run`` returns and the command line prints.

One invocation's account: the run folder, whether every planned unit is done (``complete``), or some failed
or were not run (``stopped``: a re-run of ``resume_command`` continues), or nothing ran (``dry_run``, with
the ``plan``); the units per stage, this invocation's failures by model and reason, the models a fatal
failure stopped, the cost cap that stopped it, the money spent. Frozen: a result is a record of what
happened, not a handle on the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Status = Literal["complete", "stopped", "dry_run"]


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: the finished units are stored in ``rundir``'s run.sqlite; a re-run resumes."""

    def __init__(self, rundir: Path) -> None:
        super().__init__(f"interrupted: finished units are saved in {rundir / 'run.sqlite'}")
        self.rundir = rundir


@dataclass(frozen=True)
class StageUnits:
    """One stage's units (``predict``, ``judge``) as meta.json counts them: planned, done, failed."""

    planned: int
    done: int
    failed: int

    @property
    def not_run(self) -> int:
        """Planned units with no stored outcome (a cost cap, a stopped model, an interruption)."""
        return self.planned - self.done - self.failed


@dataclass(frozen=True)
class FailureGroup:
    """This invocation's failures of one model for one reason (``models.failures.REASONS``)."""

    model: str
    reason: str
    count: int
    example: str  # the first message seen


@dataclass(frozen=True)
class StoppedModel:
    """A model a fatal failure (auth, bad request) stopped; ``units_not_run`` were left for a re-run."""

    model: str
    error: str
    units_not_run: int
    reason: str = "other"  # models.failures.REASONS


@dataclass(frozen=True)
class CostCapStop:
    """The cost cap stopped the run: ``spent_usd`` as the cap counted it, of ``cap_usd``."""

    spent_usd: float
    cap_usd: float
    units_left: int


@dataclass(frozen=True)
class SampledPlan:
    """A sampled run's dry run beside the full grid: (label, totals) per grid, and the notes."""

    target_ci_pp: float
    grids: tuple[tuple[str, Mapping[str, Any]], ...]  # first the full grid's totals, then the sampled ones
    notes: tuple[str, ...]


@dataclass(frozen=True)
class DryRunPlan:
    """What a run would call and cost (``runner.dryrun``): one row per model, then the notes."""

    pipeline: str
    start_over: bool  # --force-new: the calls of a run that starts over, not of the resumed one
    rows: tuple[Mapping[str, Any], ...]  # runner.dryrun.estimate's rows (model, role, calls, tokens, $ ...)
    total_line: str
    expected_line: str | None  # the expected cost when some model runs in batch mode
    notes: tuple[str, ...]
    sampled: SampledPlan | None = None


@dataclass(frozen=True)
class RunResult:
    """One invocation of ``agentjudge run`` (``agentjudge.api.run``)."""

    rundir: Path
    status: Status
    resume_command: str  # the command line that continues this run (or, after a dry run, runs it)
    units: Mapping[str, StageUnits] = field(default_factory=dict)  # empty after a dry run
    failures: tuple[FailureGroup, ...] = ()
    failed_units: tuple[Mapping[str, Any], ...] = ()  # as run_summary.json lists them
    stopped_models: tuple[StoppedModel, ...] = ()
    cost_cap: CostCapStop | None = None
    cost_usd: float = 0.0  # spent by this invocation (cache hits cost nothing)
    per_model: tuple[Mapping[str, Any], ...] = ()  # this invocation per model (runner.summary.summary_rows)
    plan: DryRunPlan | None = None
    up_to_date: bool = False  # nothing to do: every unit was done and the files were current
    skipped_invalid: int = 0  # records failing Gate 1 left out (--skip-invalid)

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.units.values())

    @property
    def not_run(self) -> int:
        return sum(s.not_run for s in self.units.values())

    @property
    def stop_reason(self) -> str | None:
        """Why a stopped run stopped: ``cost cap``, ``stopped model``, ``failed units`` or ``not run``."""
        if self.status != "stopped":
            return None
        if self.cost_cap is not None:
            return "cost cap"
        if self.stopped_models:
            return "stopped model"
        return "failed units" if self.failed else "not run"

    @property
    def exit_code(self) -> int:
        """The command line's: 0 complete or a dry run, 1 stopped (re-run to resume)."""
        return 1 if self.status == "stopped" else 0


@dataclass(frozen=True)
class CallCounts:
    """Model calls of an invocation, summed over its models (``ModelClient.stats``)."""

    calls: int = 0  # answers asked for, cache hits included
    cache_hits: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unknown_cost_calls: int = 0  # answers without a known price (not in cost_usd)
    unseen_cost_requests: int = 0  # requests that timed out or came back unreadable: maybe billed

    @property
    def hit_rate(self) -> float:
        return self.cache_hits / self.calls if self.calls else 0.0

    @classmethod
    def of(cls, stats: Any) -> CallCounts:
        """From a ``ModelStats`` (the client's counters; read by attribute, not copied as an object)."""
        return cls(**{name: getattr(stats, name) for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class InferResult:
    """One invocation of ``agentjudge infer`` (``agentjudge.api.infer``): the predictions file ``out``
    holds ``kept`` earlier successes and ``new`` predictions made now, ``failed`` of them failures (a row
    with the error, retried by the next invocation)."""

    out: Path
    generator: str
    planned: int  # predictions the file should hold: tasks x trials
    kept: int
    new: int
    failed: int
    calls: CallCounts
    failures: tuple[FailureGroup, ...] = ()

    @property
    def exit_code(self) -> int:
        """The command line's: 0 every prediction succeeded, 1 some failed."""
        return 1 if self.failed else 0
