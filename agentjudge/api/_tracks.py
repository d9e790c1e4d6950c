"""``taubench``, ``import_bfcl``, ``import_agentjudgebench`` and ``import_traces``: tasks, verdicts and
agents' conversations from elsewhere."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentjudge.runner.events import Reporter

if TYPE_CHECKING:
    from agentjudge.tracks.bfcl import Imported
    from agentjudge.tracks.taubench import TauBenchRun
    from agentjudge.tracks.traces.importer import TracesImport


def taubench(
    data: Path | str,
    out: Path | str,
    *,
    judges: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    api_base: str | None = None,
    no_cache: bool = False,
    probe: bool = False,
) -> TauBenchRun:
    """Judge τ-bench's historical trajectories and relate the verdicts to τ-bench's reward
    (``agentjudge taubench``): OUT/episodes.parquet, judgments.parquet, summary.json, summary.md.
    ``judges`` default: baseline/always-1, rule, gt-rule, ceiling; ``conditions``: with_gt and/or
    without_gt (default both). Raises ``InputError`` (``PreflightError``) before anything is written."""
    from agentjudge.tracks.taubench import run_taubench

    listed = None if conditions is None else list(conditions)
    chosen = None if judges is None else list(judges)
    return run_taubench(Path(data), Path(out), chosen, api_base, listed, no_cache=no_cache, probe=probe)


def import_bfcl(
    tasks: Path | str, answers: Path | str, out: Path | str, *, category: str | None = None
) -> Imported:
    """BFCL tasks and their accepted answers as records in the published layout (``agentjudge import
    bfcl``): the human query, every accepted value kept, no environment. ``category`` names ids and origin
    (default: from the file name). Raises ``InputError`` (``BfclError``) before anything is written."""
    from agentjudge.tracks.bfcl import import_files

    return import_files(Path(tasks), Path(answers), Path(out), category)


@dataclass(frozen=True)
class ReleaseImport:
    """The AgentJudgeBench release imported as the run folder ``out``; ``summary`` is import_summary.json."""

    out: Path
    summary: dict[str, Any]


def import_agentjudgebench(
    release: Path | str,
    out: Path | str,
    *,
    records: Path | str | None = None,
    progress: Reporter | None = None,
) -> ReleaseImport:
    """The AgentJudgeBench paper's generator outputs and judge verdicts as a new run folder
    (``agentjudge import agentjudgebench``), run through the ordinary grid so ``report``, ``view`` and
    ``run --add-judge`` work on it. ``release``: the downloaded release (its root or data/) or the pipeline's
    judge outputs; ``records``: base records instead of the release's own (needed when it has none);
    ``progress`` receives the import's steps and its run's events. Raises ``InputError`` (nothing is left in
    ``out``)."""
    from agentjudge.tracks.agentjudgebench.importer import import_release

    chosen = None if records is None else Path(records)
    summary = import_release(Path(release), chosen, Path(out), progress)
    return ReleaseImport(Path(out), summary)


def import_traces(
    file: Path | str,
    out: Path | str,
    *,
    agent: str | None = None,
    format: str = "auto",
    progress: Reporter | None = None,
) -> TracesImport:
    """An agent's recorded conversations as a new run folder (``agentjudge import traces``): OpenAI-style
    JSON Lines (``format="openai"``) or an Inspect log (``"inspect"``; ``"auto"``: from the file's name);
    ``agent`` names the agent (default: the file's stem), a generator of kind ``imported``. Judges are added
    with ``run(out / "pipeline.yaml", out, add_judges=[...])``. Raises ``InputError`` (``TraceError``) with
    nothing written."""
    from agentjudge.tracks.traces.importer import import_traces as run_import

    return run_import(Path(file), Path(out), agent, format, progress)
