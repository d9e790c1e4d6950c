"""The end of an invocation of ``agentjudge run``: the run folder's files from the store, then its result.

``export`` reads every planned unit from the store and writes predictions.parquet, scores.parquet,
judgments.parquet and meta.json (``runner/export.py`` builds the tables, ``runner/meta.py`` the meta; a
file whose inputs did not change since the last export is kept); ``finish`` writes run_summary.json and
makes the ``RunResult`` (``runner/result.py``): the units per stage, this invocation's failures by model and
reason, the models stopped, the cost cap, the money spent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from agentjudge.fastpaths.heap import collector_paused
from agentjudge.runner import offline
from agentjudge.runner.meta import model_info, run_meta, sampling_meta, write_run_summary
from agentjudge.runner.pipeline import Pipeline
from agentjudge.runner.result import CostCapStop, FailureGroup, RunResult, StageUnits, StoppedModel
from agentjudge.runner.scheduler import Budget, ModelTally, RunLog
from agentjudge.runner.store import RangeReader, RunStore, UnitKey, UnitRow, key_ranges
from agentjudge.runner.summary import summary_rows
from agentjudge.runner.work import Dataset, ScoreKey
from agentjudge.types import ModelSettings, PromptVariant, Score, ScoringMode


class Grid(Protocol):
    """What the end of an invocation reads of the grid that ran (``runner.grid._Grid``; read only)."""

    @property
    def pipe(self) -> Pipeline: ...
    @property
    def data(self) -> Dataset: ...
    @property
    def store(self) -> RunStore: ...
    @property
    def client(self) -> Any: ...
    @property
    def budget(self) -> Budget: ...
    @property
    def log(self) -> RunLog: ...
    @property
    def tallies(self) -> dict[str, ModelTally]: ...
    @property
    def scores(self) -> dict[ScoreKey, dict[ScoringMode, Score]]: ...
    @property
    def variants(self) -> dict[str, PromptVariant]: ...
    @property
    def settings(self) -> dict[str, ModelSettings]: ...
    @property
    def unplanned(self) -> Mapping[str, int]: ...
    @property
    def sampler(self) -> Any: ...


EXPORT_PROCESSES = 2  # the judgments export's processes, whatever `workers` says (memory; see export)


def export(
    grid: Grid, rundir: Path, wanted: list[UnitKey], jwanted: list[UnitKey], resume_command: str = ""
) -> dict[str, StageUnits]:
    """Write the run folder's files from the store; returns the planned units per stage as stored.
    ``resume_command``: the command line that continues the run, kept in meta.json for the report of an
    unfinished run."""
    grid.store.flush()  # everything committed: counted by SQLite, seen by the export's readers
    wanted_set = set(wanted)
    jwanted_set: set[UnitKey] = set()  # built only when some stored judge unit is not planned
    # the planned predict units as stored (results not decoded: only a rewrite of predictions.parquet
    # needs them decoded)
    with collector_paused():  # read whole, kept until the files are written (fastpaths/heap.py)
        predict_raw = [unit for unit in grid.store.iter_raw("predict") if unit[0] in wanted_set]
    counts: dict[str, Counter[str]] = {
        "predict": Counter(unit[1] for unit in predict_raw),
        "judge": Counter(),
    }
    unwanted = grid.unplanned.get("judge")  # stored judge units not planned (none, normally)
    by_judge: dict[str, Counter[str]] = {}  # the judge units stored per judge and status
    if unwanted == 0:  # known from the judge stage: every stored unit is planned, SQLite counts them
        counts["judge"].update(grid.store.counts("judge"))
        by_judge = grid.store.counts_by_judge()
    else:
        unwanted, jwanted_set = 0, set(jwanted)
        for key, status in grid.store.iter_statuses("judge"):  # streamed: no map of every judge unit
            if key in jwanted_set:
                counts["judge"][status] += 1
                by_judge.setdefault(key.judge, Counter())[status] += 1
            else:
                unwanted += 1
    meta_store = grid.store.meta()
    planned = {"predict": len(wanted), "judge": len(jwanted)}
    judges = Counter(key.judge for key in jwanted)
    per_judge = {j: (n, by_judge.get(j, Counter())) for j, n in judges.items()}
    meta = run_meta(
        grid.pipe,
        meta_store,
        planned,
        counts,
        grid.tallies,
        grid.client,
        grid.budget,
        per_judge=per_judge,
        stopped={
            model: {"reason": grid.log.stopped_reasons.get(model, "other"), "error": error}
            for model, error in grid.log.stopped.items()
        },
        resume_command=resume_command,
    )
    from agentjudge.runner.sampling.record import build_record, write_record

    record = None
    if grid.sampler is not None:
        record = build_record(grid.sampler, grid.pipe, len(wanted), len(jwanted))
        meta["sampling"] = sampling_meta(record)
    write_record(rundir, record)  # or remove a sampled run's, in a folder now judged in full
    simulated = {name: bool(info["simulated"]) for name, info in model_info(grid.pipe.generators).items()}
    from agentjudge.runner import resume_cache
    from agentjudge.runner.export import (  # pyarrow: not for a no-op re-run
        EXPORT_ROW_GROUP,
        current_files,
        export_run,
        file_stamps,
        recorded_files,
    )

    stamps = file_stamps(
        ((*key.row(), status, text, error) for key, status, text, error, _ in predict_raw),
        simulated,
        meta_store["config_hash"],
        grid.data.sha256,
        resume_cache.code_fingerprint(),
    )
    keep = current_files(rundir, stamps, meta_store.get("exported_files"))  # e.g. after a judge retry
    with collector_paused():
        predict_rows: dict[UnitKey, UnitRow] = (
            {} if "predictions.parquet" in keep else {unit[0]: UnitRow.from_raw(unit) for unit in predict_raw}
        )
    # the judge rows are read by the processes that build the tables, one row group's range each
    ranges = key_ranges(jwanted, EXPORT_ROW_GROUP)
    reader = RangeReader(grid.store.path, "judge")
    try:
        export_run(
            rundir,
            grid.data,
            predict_rows,
            ranges,
            jwanted_set if unwanted else None,  # None: no filter (the readers never touch the set)
            grid.scores,
            grid.variants,
            grid.settings,
            simulated,
            meta,
            # at most EXPORT_PROCESSES: each child holds a whole row group's rows, decoded and as
            # Arrow (~150-300 MB); measured under 2 GiB summed with 2, not with more
            workers=min(
                EXPORT_PROCESSES,
                offline.offline_workers(grid.pipe.workers, len(jwanted), EXPORT_ROW_GROUP),
            ),
            row_group=EXPORT_ROW_GROUP,
            read=reader,
            keep=keep,
            modes=tuple(grid.pipe.scoring_modes),
        )
    finally:
        reader.close()
    # stamps are kept only for files written by the code they name (an edit during the run: none)
    grid.store.set_meta(
        {"exported_files": recorded_files(rundir, stamps) if resume_cache.code_unchanged() else ""}
    )
    return {
        stage: StageUnits(planned[stage], counts[stage]["done"], counts[stage]["failed"])
        for stage in ("predict", "judge")
    }


def finish(grid: Grid, rundir: Path, units: dict[str, StageUnits], resume_command: str) -> RunResult:
    """run_summary.json, and the invocation's result (``RunResult``)."""
    pipe, client, log, budget = grid.pipe, grid.client, grid.log, grid.budget
    rows = summary_rows(pipe, grid.tallies, client.stats)
    failed_rows = write_run_summary(pipe, grid.tallies, client.stats, grid.store, rundir)
    failures = tuple(
        FailureGroup(model, reason, n, log.failures.examples[(model, reason)])
        for (model, reason), n in log.failures.counts.items()
    )
    stopped = tuple(
        StoppedModel(model, log.stopped[model], n, log.stopped_reasons.get(model, "other"))
        for model, n in sorted(log.not_run.items())
    )
    cost_cap = None
    if budget.skipped:
        gate = client.cost_gate
        spent = gate.spent if gate is not None else budget.spent
        cost_cap = CostCapStop(spent, budget.cap or 0.0, budget.skipped)
    stages = units.values()
    incomplete = any(s.failed or s.not_run for s in stages)
    return RunResult(
        rundir=rundir,
        status="stopped" if incomplete else "complete",
        resume_command=resume_command,
        units=units,
        failures=failures,
        failed_units=tuple(failed_rows),
        stopped_models=stopped,
        cost_cap=cost_cap,
        cost_usd=budget.spent,
        per_model=tuple(rows),
        skipped_invalid=grid.data.skipped_invalid,
    )
