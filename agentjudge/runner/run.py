"""One invocation of ``agentjudge run``: everything is checked before anything is written, then the grid runs.

Order, so that bad input costs nothing and leaves nothing behind: the ``--max-cost`` flag; the pipeline
(a file, or the name of a shipped one: ``quickstart``), with the judges added to the folder earlier kept and
the command line's models put in; every model and the output folder checked by the preflight (``--probe``
also calls each API model once); the folder's lock taken when it exists; a folder whose run is finished with
current files is left alone (nothing to do); the dataset read and Gate 1 checked. Then a dry run estimates
(``runner/dryrun.py``), or the folder is locked (made first when new) and the grid runs
(``runner/grid.py``). Bad input raises an ``InputError`` (``PreflightError`` with every problem the
preflight found); Ctrl-C raises ``RunInterrupted`` once the folder is safe (finished units are stored).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from agentjudge.errors import PreflightError
from agentjudge.fastpaths.heap import collector_paused
from agentjudge.runner.events import (
    QUIET,
    AddedJudgesKept,
    JudgesReplaced,
    Reporter,
    RunFinished,
    SkippedInvalid,
)
from agentjudge.runner.folder_open import earlier_added, finished
from agentjudge.runner.pipeline import (
    Pipeline,
    flag_value,
    forget_digests,
    load_pipeline,
    override_models,
    prefetch_digest,
    with_target,
)
from agentjudge.runner.result import RunInterrupted, RunResult
from agentjudge.runner.work import Dataset, GridError, check_grid_size, swap_partners


def pipeline_path(pipeline: Path | str) -> Path:
    """The pipeline file: ``pipeline`` itself, or, when no such file exists, the shipped pipeline of that
    name (``quickstart``: ``agentjudge.resources.shipped_pipeline``); else ``pipeline`` (its reading then
    says it is missing)."""
    from agentjudge.resources import shipped_pipeline

    path = Path(pipeline)
    if path.exists():
        return path
    return shipped_pipeline(str(pipeline)) or path


def run_pipeline(
    pipeline: Path | str,
    out: Path | str,
    *,
    judges: list[str] | None = None,
    generators: list[str] | None = None,
    add_judges: list[str] | None = None,
    max_cost: float | None = None,
    dry_run: bool = False,
    probe: bool = False,
    target_ci: float | None = None,
    force_new: bool = False,
    skip_invalid: bool = False,
    no_cache: bool = False,
    api_base: str | None = None,
    progress: Reporter | None = None,
) -> RunResult:
    """Run (or resume, or dry-run) ``pipeline`` into the run folder ``out``; see ``agentjudge.api.run``."""
    from agentjudge.runner.rundir_lock import RunFolderLock

    report = progress if progress is not None else QUIET
    out = Path(out)
    given = [str(pipeline), "--out", str(out)]
    resume = _command(
        given, judges, generators, add_judges, max_cost, target_ci, skip_invalid, no_cache, api_base
    )
    forget_digests()  # the dataset is hashed once per invocation (pipeline.file_digest)
    lock = RunFolderLock(out)
    try:  # the models first: a placeholder or a missing key is reported before the dataset is read
        cost_cap = flag_value("max_cost_usd", "--max-cost", max_cost)  # before anything is read
        path = pipeline_path(pipeline)
        loaded = load_pipeline(path)
        earlier = [] if force_new or judges else earlier_added(out, add_judges or [])
        if earlier:  # judges added to this folder before stay in it: a run adds to them or resumes them
            add_judges = [*earlier, *(add_judges or [])]
            report.event(AddedJudgesKept(out, tuple(earlier)))
        pipe = override_models(loaded, judges, generators, api_base, add_judges)
        prefetch_digest(pipe.dataset)  # hashed on the other core while the models and records are checked
        if cost_cap is not None:
            pipe = pipe.model_copy(update={"max_cost_usd": cost_cap})
        if target_ci is not None:
            pipe = with_target(pipe, target_ci)
        problems = preflight(pipe, path, judges, generators, out, probe, add_judges)
        if problems:
            raise PreflightError(problems)
        if not dry_run and out.is_dir():
            lock.acquire()  # an existing folder: refused at once when another run holds it
        if judges and loaded.judges:
            report.event(JudgesReplaced(tuple(j.display_name for j in loaded.judges)))
        if not dry_run and not force_new and finished(pipe, out, skip_invalid):
            lock.release()
            result = _up_to_date(out, resume)
            report.event(RunFinished(result))
            return result
        data = load_dataset(pipe, skip_invalid, None if force_new else out)  # force_new: starting over
        check_grid_size(pipe, len(data.records), str(path))  # before a unit of it is made
        partners = swap_partners(data.records) if "swapped_gt" in pipe.conditions else {}
    except BaseException:
        lock.release()
        forget_digests()  # a dataset hash started above and not needed: its thread ends here
        raise
    if data.skipped_invalid:
        report.event(SkippedInvalid(data.skipped_invalid))
    if dry_run:
        from agentjudge.runner.dryrun import plan

        estimate = plan(pipe, data, out, partners, start_over=force_new)
        result = RunResult(out, "dry_run", resume, plan=estimate, skipped_invalid=data.skipped_invalid)
        report.event(RunFinished(result))
        return result
    from agentjudge.runner.grid import Ending, run_grid

    ending = Ending()
    try:
        if not lock.held:  # a new folder: made, then held before anything is written into it
            out.mkdir(parents=True, exist_ok=True)
            lock.acquire()
        result = run_grid(
            pipe, data, partners, out, force_new, no_cache, report, add_judges or [], ending, resume
        )
    except KeyboardInterrupt as exc:  # while the run was being torn down (after run_grid's own handler)
        if ending.result is not None:
            return ending.result
        raise RunInterrupted(out) from exc
    finally:
        lock.release()
    return result


def _up_to_date(out: Path, resume: str) -> RunResult:
    """The result of a run with nothing to do: its units as its meta.json counts them (``RunFolder``)."""
    from agentjudge.rundir import RunFolder, RunFolderError
    from agentjudge.runner.result import StageUnits

    try:
        units = RunFolder.open(out).meta.units
    except RunFolderError:  # a meta.json edited by hand since the last export: the store says done
        units = None
    stages = (
        {}
        if units is None
        else {
            stage: StageUnits(counts.planned, counts.done, counts.failed)
            for stage, counts in (("predict", units.predict), ("judge", units.judge))
        }
    )
    return RunResult(out, "complete", resume, units=stages, up_to_date=True)


def _command(
    given: list[str],
    judges: list[str] | None,
    generators: list[str] | None,
    add_judges: list[str] | None,
    max_cost: float | None,
    target_ci: float | None,
    skip_invalid: bool,
    no_cache: bool,
    api_base: str | None,
) -> str:
    """The command line that continues this run: the same models, cap, target and flags, without
    ``--force-new`` (which would start over again), ``--dry-run`` and ``--probe``."""
    args = ["agentjudge", "run", *given]
    for flag, values in (("--judge", judges), ("--add-judge", add_judges), ("--generator", generators)):
        for value in values or []:
            args += [flag, value]
    if api_base is not None:
        args += ["--api-base", api_base]
    if max_cost is not None:
        args += ["--max-cost", f"{max_cost:g}"]
    if target_ci is not None:
        args += ["--target-ci", f"{target_ci:g}"]
    args += ["--skip-invalid"] if skip_invalid else []
    args += ["--no-cache"] if no_cache else []
    return shlex.join(args)


def load_dataset(pipeline: Pipeline, skip_invalid: bool = False, rundir: Path | None = None) -> Dataset:
    """Read the pipeline's records (first ``limit`` base scenarios); layout errors are GridErrors.

    Records failing Gate 1 are refused (a GridError listing them), or left out with ``skip_invalid``.
    With ``rundir``, Gate 1's findings come from its store when it holds them for this dataset and code
    (``resume_cache``; ``Dataset.gate1`` says which, and the grid writes computed ones back).
    """
    from agentjudge.dataset.validate import gate1_message
    from agentjudge.rundir.records import LayoutError, read_records
    from agentjudge.runner.pipeline import file_digest
    from agentjudge.runner.resume_cache import gate1_check

    try:
        with collector_paused():  # millions of objects that all live on (fastpaths/heap.py)
            records = read_records(pipeline.dataset, limit=pipeline.limit)  # the rest is not parsed
        sha256 = file_digest(pipeline.dataset)  # what the caches of resume_cache are keyed by
    except LayoutError as exc:
        raise GridError(str(exc)) from None
    if not records:
        raise GridError(f"{pipeline.dataset}: no records")
    gate1 = gate1_check(records, sha256, rundir / "run.sqlite" if rundir is not None else None)
    failing = gate1.failing
    if failing and not skip_invalid:
        raise GridError(gate1_message(pipeline.dataset, failing, len(records)))
    records = [r for r in records if r.id not in failing]
    if not records:
        raise GridError(f"{pipeline.dataset}: every record fails Gate 1; nothing to run")
    data = Dataset(records)
    data.skipped_invalid = len(failing)
    data.sha256, data.gate1 = sha256, gate1
    for record in data.records:
        missing = [d for d in pipeline.difficulties if d not in record.queries]
        if missing:
            raise GridError(f"{pipeline.dataset}: record {record.id}: field `queries` has no {missing}")
    return data


def preflight(
    pipe: Pipeline,
    pipeline_path: Path,
    judges: list[str] | None,
    generators: list[str] | None,
    out: Path,
    probe: bool,
    add_judges: list[str] | None = None,
) -> list[str]:
    """Every model of the run and the output folder, checked before any unit (``registry.preflight``)."""
    from agentjudge.fserrors import out_path_problem
    from agentjudge.registry.preflight import ModelUse
    from agentjudge.registry.preflight import preflight as check

    def where(flag: str, key: str, i: int) -> str:
        return f"{flag}[{i}]" if flag else f"{pipeline_path}: {key}[{i}]"

    added = len(add_judges or [])
    named = len(pipe.judges) - added  # the pipeline's judges (or those of --judge), then --add-judge's
    uses = [
        ModelUse("generator", s, where("--generator" if generators else "", "generators", i))
        for i, s in enumerate(pipe.generators)
    ] + [
        ModelUse(
            "judge",
            s,
            where("--judge" if judges else "", "judges", i) if i < named else f"--add-judge[{i - named}]",
        )
        for i, s in enumerate(pipe.judges)
    ]
    problems = check(
        uses, max_cost=pipe.max_cost_usd, probe=probe, cache=pipe.cache, cache_key=f"{pipeline_path}: cache"
    )
    out_problem = out_path_problem(out, "dir")
    return [*problems, *([f"--out {out_problem}"] if out_problem else [])]
