"""agentjudge as a library: every verb of the command line as a function that returns what it did.

    from agentjudge.api import RunFolder, report, run

    result = run("quickstart", "runs/qs")  # a shipped pipeline's name, or a pipeline file
    print(result.status, result.units["judge"].done, result.cost_usd)
    written = report(result.rundir)
    print(written.html)
    judgments = RunFolder.open(result.rundir).judgments()  # the run's files, typed (agentjudge.rundir)

Each function checks its input before it writes anything and raises ``InputError`` (the command line's
exit 2) with one line naming the file, line and field; otherwise it returns a typed result (``RunResult``,
``ReportResult``, ...) and prints nothing. ``run`` and ``infer`` report while they work only to the
``progress`` reporter they are given (``agentjudge.runner.events``). The command line
(``agentjudge.commands``) is a shell over these functions: parse flags, call, print, exit code.

Modules behind this one are private (``_run``, ``_data``, ...): import from ``agentjudge.api``. Nothing heavy
is imported until a function is called (``agentjudge --help`` and ``import agentjudge.api`` stay fast).
"""

from typing import TYPE_CHECKING, Any

from agentjudge.api._cache import CacheCleared, CacheStats, cache_clear, cache_stats
from agentjudge.api._data import GenerateResult, ValidationResult, audit, generate, score, validate
from agentjudge.api._people import Agreement, Labelling, human_agree, human_sample, label
from agentjudge.api._report import CompareResult, ReportResult, Viewing, compare, report, view
from agentjudge.api._run import batches, infer, run
from agentjudge.api._tracks import (
    ReleaseImport,
    import_agentjudgebench,
    import_bfcl,
    import_traces,
    taubench,
)
from agentjudge.errors import InputError, PreflightError
from agentjudge.runner.events import Event, Reporter
from agentjudge.runner.result import (
    CallCounts,
    CostCapStop,
    DryRunPlan,
    FailureGroup,
    InferResult,
    RunInterrupted,
    RunResult,
    StageUnits,
    StoppedModel,
)

if TYPE_CHECKING:
    from agentjudge.rundir import RunFolder, RunFolderError


def __getattr__(name: str) -> Any:
    """``RunFolder`` (the typed reader of a run folder) and its error, imported when first asked for: they
    bring pydantic's models, which ``import agentjudge.api`` alone does not need."""
    if name in ("RunFolder", "RunFolderError"):
        import agentjudge.rundir

        return getattr(agentjudge.rundir, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Agreement",
    "CacheCleared",
    "CacheStats",
    "CallCounts",
    "CompareResult",
    "CostCapStop",
    "DryRunPlan",
    "Event",
    "FailureGroup",
    "GenerateResult",
    "InferResult",
    "InputError",
    "Labelling",
    "PreflightError",
    "ReleaseImport",
    "ReportResult",
    "Reporter",
    "RunFolder",
    "RunFolderError",
    "RunInterrupted",
    "RunResult",
    "StageUnits",
    "StoppedModel",
    "ValidationResult",
    "Viewing",
    "audit",
    "batches",
    "cache_clear",
    "cache_stats",
    "compare",
    "generate",
    "human_agree",
    "human_sample",
    "import_agentjudgebench",
    "import_bfcl",
    "import_traces",
    "infer",
    "label",
    "report",
    "run",
    "score",
    "taubench",
    "validate",
    "view",
]
