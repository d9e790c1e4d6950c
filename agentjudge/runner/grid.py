"""``agentjudge run``: predict -> score -> judge over a pipeline grid, resumable, then export.

Flow: the pipeline and dataset are validated completely (exit 2 on any problem, nothing written); the run
folder's store is opened and its config hash compared (a changed pipeline is refused with a diff unless
``--force-new``); pending predict units run; every successful prediction is scored in process (both modes
as configured); pending judge units run over the successful predictions; the parquet files and meta.json
are rebuilt from the store. Failed units stay ``failed`` in the store and are retried by re-running the
same command. Exit code 0 when every unit is done, 1 when some failed or the cost cap stopped the run.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from agentjudge import __version__, strict_json
from agentjudge.fastpaths.heap import collector_paused, freeze
from agentjudge.fastpaths.lean_export import lean_imports
from agentjudge.fserrors import FS_ERRORS, describe
from agentjudge.memo import remembered
from agentjudge.models.fleet import redact_model_urls
from agentjudge.provenance import git_commit
from agentjudge.registry.model_strings import model_kind
from agentjudge.rundir.meta import FORMAT_VERSION
from agentjudge.runner import offline, scheduler
from agentjudge.runner.pipeline import (
    Pipeline,
    PipelineError,
    config_hash,
    flag_value,
    forget_digests,
    hashed_config,
    load_pipeline,
    override_models,
    prefetch_digest,
    with_target,
)
from agentjudge.runner.resume_cache import cached_scores, save_gate1, stored_digest
from agentjudge.runner.store import (
    RangeReader,
    RunStore,
    UnitKey,
    UnitRow,
    archive_run,
    config_diff,
    from_stored,
    key_ranges,
    now,
    open_readonly,
    stored_json,
)
from agentjudge.runner.summary import (
    add_totals,
    endpoint_table,
    failed_unit_rows,
    failed_units_text,
    run_summary,
    summary_rows,
    summary_table,
    unpriced_notes,
)
from agentjudge.runner.work import (
    Dataset,
    GridError,
    ScoreKey,
    judge_request,
    judge_units,
    predict_units,
    reference,
    swap_partners,
)
from agentjudge.runner.workers import AUTO_MIN_UNITS, WorkerPool, WorkerSpec, effective_workers
from agentjudge.types import (
    TRAJECTORY_CONDITIONS,
    JudgeRequest,
    JudgeResult,
    ModelSettings,
    Prediction,
    Score,
    ScoringMode,
    Task,
)

_BLIND_HELD = 4_096  # judge_offline: outcomes of condition-blind judges kept (a record's few dozen suffice)
EXPORT_PROCESSES = 2  # the judgments export's processes, whatever `workers` says (memory; see export)


def load_dataset(pipeline: Pipeline, skip_invalid: bool = False, rundir: Path | None = None) -> Dataset:
    """Read the pipeline's records (first ``limit`` base scenarios); layout errors become GridError.

    Records failing Gate 1 are refused (a GridError listing them), or left out with ``skip_invalid``.
    With ``rundir``, Gate 1's findings come from its store when it holds them for this dataset and code
    (``resume_cache``; ``Dataset.gate1`` says which, and ``_run`` writes computed ones back).
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


def model_info(models: list[ModelSettings]) -> dict[str, dict[str, Any]]:
    out = {}
    for m in models:
        kind = model_kind(m.model)
        out[m.display_name] = {
            "model": m.model,
            "tier": m.tier,
            "kind": kind,
            "simulated": kind in ("sim", "simjudge", "baseline"),
        }
    return out


def run_cli(
    pipeline: Path,
    out: Path,
    judges: list[str] | None = None,
    generators: list[str] | None = None,
    api_base: str | None = None,
    dry_run: bool = False,
    max_cost: float | None = None,
    force_new: bool = False,
    no_cache: bool = False,
    probe: bool = False,
    skip_invalid: bool = False,
    lean_export: bool = False,
    add_judges: list[str] | None = None,
    target_ci: float | None = None,
) -> int:
    """Exit code: 0 everything done, 1 some units failed or were not run (re-run to resume), 2 bad input
    (the pipeline, the dataset, a model's set-up found by the preflight, the output folder, or another
    invocation holding it: ``runner/rundir_lock.py``).
    ``add_judges`` (``--add-judge``): judges run beside the pipeline's, also into a run folder that holds the
    pipeline without them (``_open_store``).
    ``lean_export``: write the files without importing pandas or numpy (fastpaths/lean_export.py; only for a
    process that ends after this call: the ``agentjudge run`` command)."""
    from agentjudge.runner.rundir_lock import RunFolderBusy, RunFolderLock

    forget_digests()  # the dataset is hashed once per invocation (pipeline.file_digest)
    console = Console()
    if not console.is_terminal:  # logs and pipes: wide enough that model names are not truncated
        console = Console(width=160)
    lock = RunFolderLock(Path(out))
    try:  # the models first: a placeholder or a missing key is reported before the dataset is read
        cost_cap = flag_value("max_cost_usd", "--max-cost", max_cost)  # before anything is read
        loaded = load_pipeline(Path(pipeline))
        earlier = [] if force_new or judges else _earlier_added(Path(out), add_judges or [])
        if earlier:  # judges added to this folder before stay in it: a run adds to them or resumes them
            add_judges = [*earlier, *(add_judges or [])]
            console.print(
                f"{escape(str(out))} also holds {', '.join(map(escape, earlier))} (added earlier with "
                "--add-judge): kept",
                highlight=False,
                soft_wrap=True,
            )
        pipe = override_models(loaded, judges, generators, api_base, add_judges)
        prefetch_digest(pipe.dataset)  # hashed on the other core while the models and records are checked
        if cost_cap is not None:
            pipe = pipe.model_copy(update={"max_cost_usd": cost_cap})
        if target_ci is not None:
            pipe = with_target(pipe, target_ci)
        problems = _preflight(pipe, Path(pipeline), judges, generators, Path(out), probe, add_judges)
        if not problems and not dry_run and Path(out).is_dir():
            lock.acquire()  # an existing folder: refused at once when another run holds it
        if not problems and judges and loaded.judges:
            replaced = ", ".join(j.display_name for j in loaded.judges)
            console.print(
                f"--judge replaces the pipeline's {len(loaded.judges)} judge(s) ({escape(replaced)}); "
                "--add-judge keeps them and adds yours",
                highlight=False,
                soft_wrap=True,
            )
        if not problems and not dry_run and not force_new and _finished(pipe, Path(out), skip_invalid):
            console.print(
                f"nothing to do: every unit of this configuration is done and the files in "
                f"{escape(str(out))} are current (--force-new starts over)",
                soft_wrap=True,
            )
            lock.release()
            return 0
        if not problems:
            data = load_dataset(pipe, skip_invalid, None if force_new else Path(out))  # starting over
            partners = swap_partners(data.records) if "swapped_gt" in pipe.conditions else {}
    except (PipelineError, GridError, RunFolderBusy) as exc:
        lock.release()
        forget_digests()  # a dataset hash started above and not needed: its thread ends here
        console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    if problems:
        forget_digests()  # as above
        for line in problems:
            console.print(f"[red]error:[/red] {escape(line)}", highlight=False, soft_wrap=True)
        console.print(f"preflight: {len(problems)} problem(s); nothing was run or written.")
        return 2
    if data.skipped_invalid:
        console.print(f"--skip-invalid: {data.skipped_invalid} record(s) failing Gate 1 left out")
    if dry_run:
        from agentjudge.runner.dryrun import dry_run_report

        return dry_run_report(pipe, data, Path(out), console, partners, start_over=force_new)
    ending = _Ending()
    try:
        if not lock.held:  # a new folder: made, then held before anything is written into it
            Path(out).mkdir(parents=True, exist_ok=True)
            lock.acquire()
        return _run_locked(
            pipe,
            data,
            partners,
            Path(out),
            force_new,
            no_cache,
            console,
            lean_export,
            add_judges or [],
            ending,
        )
    except RunFolderBusy as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:  # while the run was being torn down (after _run_locked's own handler)
        return ending.interrupted(console, Path(out))
    finally:
        lock.release()


@dataclass
class _Ending:
    """How the run ended, once it has said so (``done: ...`` or its failures): a Ctrl-C after that point
    finds nothing left to lose, so the run keeps its own exit code instead of claiming an interruption."""

    code: int | None = None

    def interrupted(self, console: Console, out: Path) -> int:
        if self.code is not None:
            return self.code
        console.print(
            f"interrupted: finished units are saved in {escape(str(out / 'run.sqlite'))}; "
            "re-run the same command to resume.",
            soft_wrap=True,
        )
        return 130


def _run_locked(
    pipe: Pipeline,
    data: Dataset,
    partners: dict[str, str],
    out: Path,
    force_new: bool,
    no_cache: bool,
    console: Console,
    lean_export: bool,
    added: list[str],
    ending: _Ending,
) -> int:
    """The run itself, while this process holds the run folder."""
    if any(model_kind(m.model) == "litellm" for m in [*pipe.generators, *pipe.judges]):
        from agentjudge.models.client import load_litellm

        load_litellm()  # seconds of import, before the event loop rather than inside the first call
    freeze()  # the records live for the whole run: kept out of the collector's full scans (until finally)
    pool = _fork_workers(pipe, data, no_cache)
    try:
        return asyncio.run(
            _run(
                pipe,
                data,
                partners,
                Path(out),
                force_new,
                no_cache,
                console,
                pool,
                lean_export,
                added,
                ending,
            )
        )
    except KeyboardInterrupt:
        return ending.interrupted(console, Path(out))
    finally:
        if pool is not None:
            pool.abandon()  # after an interruption or an early exit: workers see their pipe close
        gc.unfreeze()  # what was frozen during the run is collectable again (a caller may run again)


def _prompt_group(key: UnitKey) -> tuple[Any, ...]:
    """What a judge unit's prompt depends on besides the prediction: units of one group over identical
    predictions ask the same request (``_Grid._repeats`` takes those last; the workers' route, this group
    and ``_Grid._shown`` of the prediction, sends twins in flight together to one worker, so the request is
    sent once)."""
    return (key.judge, key.record_id, key.condition, key.variant, key.temperature, key.trial)


def _print_table(console: Console, table: Any) -> None:
    """A table in full: on a terminal as wide as the terminal; in a log or a pipe as wide as its content
    (at the fixed log width, rich cut long model names to the same prefix, e.g. two ``baseline/always…``)."""
    if console.is_terminal:
        console.print(table)
        return
    width = console.measure(table, options=console.options.update_width(10_000)).maximum
    Console(file=console.file, width=max(console.width, width)).print(table)


def _fork_workers(pipe: Pipeline, data: Dataset, no_cache: bool) -> WorkerPool | None:
    """Fork the worker processes (pipeline key ``workers``), before the event loop and after litellm's
    import, when the litellm units of the run call for them; None keeps every unit in this process."""
    gens, judges = remote_models(pipe)
    if not gens and not judges:
        return None
    predict = predict_units(pipe, data)
    remote = sum(u.generator in gens for u in predict)
    if remote < AUTO_MIN_UNITS:  # each prediction has >= 1 unit per judge: the first ones tell
        first = judge_units(pipe, predict[:AUTO_MIN_UNITS])
        remote += sum(u.judge in judges for u in first)
    size = effective_workers(pipe.workers, remote)
    if size <= 1:
        return None
    spec = WorkerSpec(
        generators=[s for s in pipe.generators if s.display_name in gens],
        judges=[s for s in pipe.judges if s.display_name in judges],
        cache=pipe.cache,
        read_cache=not no_cache,
        reask=pipe.reask,
        prompt_family=pipe.prompt_family,
        tool_rendering=pipe.judge_tool_rendering,
    )
    pool = WorkerPool(size, spec)
    pool.fork()
    return pool


_OUTPUT_FILES = ("meta.json", "predictions.parquet", "scores.parquet", "judgments.parquet")


def _export_stamp(version: int, skip_invalid: bool, pipe: Pipeline) -> str:
    """What the run folder's files were built from: the store's version (it grows with every committed
    group), the code, and whether records failing Gate 1 were left out (``--skip-invalid``): a re-run
    without that flag must refuse them again rather than call the run finished. A sampled run adds its
    design (a re-run with another target has work to do although the config hash leaves it out)."""
    stamp: dict[str, Any] = {
        "store_version": version,
        "skip_invalid": skip_invalid,
        "git_commit": git_commit(),
        "version": __version__,
    }
    if pipe.sampling is not None:
        stamp["sampling"] = pipe.sampling.model_dump(mode="json", exclude={"prior_run"})
    return json.dumps(stamp, sort_keys=True)


def _finished(pipe: Pipeline, rundir: Path, skip_invalid: bool) -> bool:
    """A re-run with nothing to do: the store holds this configuration (the hash covers the dataset's
    content), its last export saw every planned unit done, nothing was written to the store since, and the
    exported files are there. Costs a hash of the dataset file and two queries, not a reading of the grid."""
    from agentjudge.runner.store import open_readonly

    db = open_readonly(rundir / "run.sqlite")
    if db is None:
        return False
    try:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error:
        return False
    finally:
        db.close()
    complete = meta.get("exported_complete")
    if complete is None or not all((rundir / name).is_file() for name in _OUTPUT_FILES):
        return False
    version = int(meta.get("store_version", "0"))
    if complete not in (
        _export_stamp(version, False, pipe),
        _export_stamp(version, True, pipe) if skip_invalid else None,
    ):
        return False
    return meta.get("config_hash") == config_hash(pipe)


def _preflight(
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
    from agentjudge.registry.preflight import ModelUse, preflight

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
    problems = preflight(uses, max_cost=pipe.max_cost_usd, probe=probe)
    out_problem = out_path_problem(out, "dir")
    return [*problems, *([f"--out {out_problem}"] if out_problem else [])]


def _judges_added(meta: dict[str, str], pipe: Pipeline, added: list[str]) -> list[ModelSettings] | None:
    """The judges ``--add-judge`` adds to the run a folder holds: those of ``added`` not in its stored
    configuration, when the pipeline without them is exactly the stored one (the same config hash); None
    when the pipeline differs in anything else (then the folder is refused with the diff, as any change).
    A judge added to the folder earlier and given again is part of the stored configuration already."""
    if not added:
        return None
    stored = json.loads(meta.get("hashed_config", "{}")).get("judges", [])
    entries = json.loads(json.dumps(hashed_config(pipe)["judges"]))  # as stored: through JSON
    new = [
        judge
        for judge, entry in zip(pipe.judges, entries, strict=True)
        if judge.display_name in added and entry not in stored
    ]
    base = pipe.model_copy(update={"judges": [j for j in pipe.judges if j not in new]})
    return new if new and config_hash(base) == meta.get("config_hash") else None


def _open_store(
    rundir: Path, pipe: Pipeline, force_new: bool, console: Console, added: list[str] | None = None
) -> RunStore | None:
    """The run folder's store, holding this configuration: a new folder is given it; a folder holding
    another is refused with the diff, unless it differs only by judges of ``added`` (``--add-judge``), whose
    units are then planned beside the stored ones (the stored configuration becomes this one, and meta
    ``added_judges`` lists what was added when)."""
    rundir.mkdir(parents=True, exist_ok=True)
    if force_new:
        archived = archive_run(rundir)
        if archived is not None:
            console.print(f"--force-new: previous run moved to {escape(str(archived))}")
    store = RunStore(rundir / "run.sqlite")
    meta = store.meta()
    new_hash, new_config = config_hash(pipe), hashed_config(pipe)
    commit = git_commit()
    extension = (
        _judges_added(meta, pipe, added or []) if meta and meta.get("config_hash") != new_hash else None
    )
    if meta and meta.get("config_hash") != new_hash and extension is None:
        old_config = json.loads(meta.get("hashed_config", "{}"))
        earlier = [entry["judge"] for entry in json.loads(meta.get("added_judges", "[]"))]
        hint = (
            f"This folder's judges were extended with --add-judge {' --add-judge '.join(earlier)}; give the "
            "same flags to resume it.\n"
            if earlier
            else ""
        )
        store.close()
        console.print(
            f"[red]error:[/red] {escape(str(rundir))} holds a run of a different configuration; "
            "refusing to mix results.\n"
            f"Changes (old -> new):\n{escape(config_diff(old_config, new_config))}\n"
            f"{escape(hint)}"
            "Use another --out folder, restore the pipeline, or pass --force-new to archive the old run"
            + (
                " (--add-judge adds judges only to a folder holding the same pipeline without them)."
                if added
                else "."
            ),
            highlight=False,
            soft_wrap=True,
        )
        return None
    update: dict[str, str] = {}
    if extension:
        predictions, judged = (sum(store.counts(stage).values()) for stage in ("predict", "judge"))
        names = ", ".join(j.display_name for j in extension)
        console.print(
            f"--add-judge: {escape(str(rundir))} holds this pipeline without {escape(names)}; only their "
            f"units run, the {predictions:,} prediction and {judged:,} judge unit(s) stored are reused",
            highlight=False,
            soft_wrap=True,
        )
        record = json.loads(meta.get("added_judges", "[]"))
        record += [
            {"judge": j.display_name, "model": j.model, "added_at": now(), "git_commit": commit}
            for j in extension
        ]
        update["added_judges"] = strict_json.dumps(record)
    if not meta or extension:
        update["config_hash"] = new_hash
        update["hashed_config"] = json.dumps(new_config, sort_keys=True)
        update["pipeline"] = json.dumps(redact_model_urls(pipe.model_dump(mode="json")))
    if not meta:
        update |= {"git_commit": commit, "package_version": __version__, "seed": str(pipe.seed)}
    update |= {"git_commit_last": commit, "package_version_last": __version__}
    store.set_meta(update)  # one transaction: the configuration and the record of what was added
    return store


def _build_models(pipe: Pipeline, data: Dataset, client: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    from agentjudge.registry.factory import configure_judge, make_generator, make_judge

    gens: dict[str, Any] = {}
    for settings in pipe.generators:
        generator = make_generator(settings, client)
        if hasattr(generator, "bind"):
            generator.bind(data.by_base)
        gens[settings.display_name] = generator
    judges: dict[str, Any] = {}
    for settings in pipe.judges:
        judges[settings.display_name] = configure_judge(
            make_judge(settings, client),
            reask=pipe.reask,
            prompt_family=pipe.prompt_family,
            tool_rendering=pipe.judge_tool_rendering,
        )
    return gens, judges


def _in_unit(work: Any) -> Any:
    """``work`` with the unit's id visible to batch mode (stored with each queued request)."""
    from agentjudge.models.batch import CURRENT_UNIT

    async def run(key: UnitKey) -> scheduler.Outcome:
        CURRENT_UNIT.set(json.dumps(list(key.row())))
        outcome: scheduler.Outcome = await work(key)
        return outcome

    return run


def remote_models(pipe: Pipeline) -> tuple[set[str], set[str]]:
    """(generators, judges) whose units may run in worker processes: litellm models, single-shot
    generators only, and none when a cost cap needs one cost gate for the run (runner/workers.py). Batch-mode
    models stay here (their queue is this process's) and so do fleets (one view of endpoint health and one
    per-endpoint tally)."""
    if pipe.max_cost_usd is not None:
        return set(), set()
    gens = {
        s.display_name
        for s in pipe.generators
        if model_kind(s.model) == "litellm" and s.generation == "single_shot" and _one_process_ok(s)
    }
    judges = {s.display_name for s in pipe.judges if model_kind(s.model) == "litellm" and _one_process_ok(s)}
    return gens, judges


def _one_process_ok(settings: ModelSettings) -> bool:
    """May this model's calls leave the main process? Not in batch mode, not as a fleet."""
    return not settings.batch and not settings.api_bases


class _Grid:
    """State shared by the stages of one invocation (models, caps, budget, tallies, store)."""

    def __init__(
        self,
        pipe: Pipeline,
        data: Dataset,
        partners: dict[str, str],
        store: RunStore,
        client: Any,
        gens: dict[str, Any],
        judges: dict[str, Any],
        pool: WorkerPool | None = None,
    ) -> None:
        self.pipe, self.data, self.partners, self.store, self.client = pipe, data, partners, store, client
        self.gens, self.judges = gens, judges
        self.settings = {m.display_name: m for m in [*pipe.generators, *pipe.judges]}
        self.caps = {name: s.concurrency for name, s in self.settings.items()}
        self.variants = {v.key: v for v in pipe.prompt_variants}
        self.budget = scheduler.Budget(pipe.max_cost_usd)
        self.tallies: dict[str, scheduler.ModelTally] = {}
        self.global_cap = asyncio.Semaphore(pipe.concurrency)
        self.log = scheduler.RunLog()
        self.predictions: dict[UnitKey, Prediction] = {}
        self.scores: dict[ScoreKey, dict[ScoringMode, Score]] = {}
        self.batches: Any = None  # runner.batches.BatchBroker when some model has batch: true
        self.remote_gens, self.remote_judges = remote_models(pipe)
        self.pool = pool
        self.offline = offline.offline_models([*pipe.generators, *pipe.judges])
        # (trajectory shown?, digest of a prediction's judged part) -> a small id (_shown)
        self._shown_ids: dict[tuple[bool, bytes], int] = {}
        self._shown_of: dict[tuple[UnitKey, bool], int] = {}  # (a prediction's key, trajectory shown?) -> id
        self._alike: dict[tuple[str, str], scheduler.Outcome] = {}  # see judge_offline
        self._blind: dict[tuple[Any, ...], scheduler.Outcome] = {}  # see judge_offline
        self.unplanned: dict[str, int] = {}  # per stage, when known: stored units not planned (``_stage``)
        self.sampler: Any = None  # agentjudge.runner.sampling.stages.SampledGrid of a sampled run

    async def close_workers(self) -> None:
        """Let the workers finish and add their call statistics to this process's."""
        if self.pool is None:
            return
        pool, self.pool = self.pool, None
        for stats in await pool.close():
            if stats is not None:
                for name, model_stats in stats.per_model.items():
                    self.client.stats.model(name).add(model_stats)

    async def _stage(
        self,
        name: str,
        units: list[UnitKey],
        model_of: Any,
        work: Any,
        progress: Any,
        offline_work: Any,
        label: str = "",
    ) -> None:
        status = self.store.statuses(units[0].stage) if units else {}
        pending = [u for u in units if status.get(u) != "done"]
        if units:  # stored units this configuration does not plan; the stage stores planned ones only
            self.unplanned[units[0].stage] = (
                len(status) - sum(map(status.__contains__, units)) if status else 0
            )
        del status  # ~10^6 keys on a paper grid: not kept while the stage runs
        if self.log.console is not None and not self.log.console.is_terminal:  # no progress bar: say it
            self.log.console.print(f"{name}{label}: {len(pending)} unit(s) to run of {len(units)}")
        bar = progress.add_task(
            name + label, total=len(pending)
        )  # one bar for the stage, offline units or not
        in_chunks = [u for u in pending if model_of(u) in self.offline]
        if in_chunks:  # simulated models and baselines: chunks on every core (runner/offline.py)
            pending = [u for u in pending if model_of(u) not in self.offline]
            await offline.run_offline_units(
                name,
                in_chunks,
                model_of,
                offline_work,
                self.store,
                self.budget,
                self.tallies,
                progress,
                self.log,
                self.pipe.workers,
                bar,
            )
            if not pending:
                return
            scheduler.rate_from_here(progress, bar)  # the calls left run at their own rate
        if self.batches is not None:
            work = _in_unit(work)
        args = (model_of, self.caps, work, self.store, self.global_cap, self.budget, self.tallies, progress)
        # repeats last, except under a cost cap: taken last they would find the budget spent and not run,
        # although their twin's answer makes them free
        capped = self.pipe.max_cost_usd is not None
        last = self._repeats(pending) if name == "judge" and not capped else set()
        ahead = self._ahead(units[0].stage if units else name, {model_of(u) for u in pending})
        deferred = await scheduler.run_units(name, pending, *args, self.log, last=last, bar=bar, ahead=ahead)
        # batch mode: queued calls are sent as batches and awaited, then their units run again (a unit that
        # needs a further call, e.g. a re-ask, queues it and the loop goes round)
        while deferred and self.batches is not None:
            before = self.batches.progress
            await self.batches.settle()
            # a round without progress: settle returns once every batch of the run is final and read, and
            # it submitted, answered, failed and polled nothing, so what these units wait for is in no batch
            # anyone polls (a damaged store, a bug). Going round again would change nothing: the open
            # requests fail and the units run once more to receive that failure
            if self.batches.progress == before and not self.batches.fail_open():
                self._fail_waiting(name, deferred, model_of)  # not even an open request to fail
                break
            deferred = await scheduler.run_units(
                f"{name}:batch", deferred, *args, self.log, reading_batch_answers=True
            )

    def _ahead(self, stage: str, models: set[str]) -> dict[str, int]:
        """For a stage (``predict``/``judge``) whose units belong to ``models``: the stage's worker-process
        models, whose units need no global slot, and how many of their units to keep out beyond the model's
        cap (``scheduler.run_units``). A generator and a judge may share a display name: only the stage's own
        role counts (an in-process generator named like a worker judge holds its slots as before).

        In worker processes a model's ``concurrency`` is held around the request alone, split over the
        workers (``runner.workers``): a few more units than that are sent, so each worker builds the next
        prompts and parses answers while its share of requests is out. The pipeline's ``concurrency`` is
        held by the parent for whole units, so this is done only when it cannot bind: when the caps of
        the stage's models add up to no more than it. A quarter of the cap ahead covers a unit's own time
        (its prompt, the cache, the pipes, the commit: ~15 ms, a fifteenth of a 200 ms call, a quarter of a
        50 ms one), with room for bursts."""
        if self.pool is None or sum(self.caps.get(m, 1) for m in models) > self.pipe.concurrency:
            return {}
        remote = (self.remote_gens if stage == "predict" else self.remote_judges) & models
        return {m: max(self.pool.size, -(-self.caps[m] // 4)) for m in sorted(remote)}

    def _fail_waiting(self, stage: str, units: list[UnitKey], model_of: Any) -> None:
        """Units still waiting for a batch answer after a round without progress, with no open request of
        this run's batch models left to fail: failed here, with what to do (not left pending, which a
        re-run would meet again without a word)."""
        from agentjudge.runner.batches import STUCK_ADVICE  # batch mode's module: loaded only when it runs

        error = (
            f"batch_stuck: batch mode: the {stage} unit waits for a request that no batch of this run "
            f"will answer and {STUCK_ADVICE}"
        )
        outcome = scheduler.Outcome("failed", None, error, kind="batch_stuck")
        for unit in units:
            self.store.finish(unit, "failed", None, error, now(), outcome.failure)
            model = model_of(unit)
            tally = self.tallies.setdefault(model, scheduler.ModelTally())
            scheduler.settle(model, outcome, tally, self.budget, self.log, reading_batch_answers=True)

    def _repeats(self, units: list[UnitKey]) -> set[UnitKey]:
        """Judge units of litellm judges asking what an earlier unit asks: the same judge, record, condition,
        variant, temperature and trial over an identical prediction (simulated generators often agree). Run
        last, they are answered from the call cache; run beside their twin, each would hold a concurrency
        slot doing nothing but wait for the twin's answer (the client sends an identical request once)."""
        llm = {s.display_name for s in self.pipe.judges if model_kind(s.model) == "litellm"}
        if not llm or len(self.pipe.generators) * self.pipe.generator_trials < 2:
            return set()  # no prediction has a twin
        seen: set[tuple[Any, ...]] = set()
        repeats: set[UnitKey] = set()
        for key in units:
            if key.judge not in llm:
                continue
            shown = self._shown(key)
            if shown is None:
                continue
            twin = (*_prompt_group(key), shown)
            if twin in seen:
                repeats.add(key)
            seen.add(twin)
        return repeats

    def _shown(self, key: UnitKey) -> int | None:
        """A small id of what a judge unit's prediction shows the judge: its calls, and its trajectory only
        under a trajectory condition (elsewhere the request carries no trajectory, so two predictions with
        the same calls make identical requests and must get one id, or their twins could be sent from two
        workers). Equal ids, equal predictions as far as the prompt can tell. One JSON dump per prediction
        and kind of condition, remembered; None when the prediction is unknown."""
        pkey = UnitKey("predict", key.record_id, key.difficulty, key.generator, key.generator_trial)
        with_trajectory = key.condition in TRAJECTORY_CONDITIONS
        shown = self._shown_of.get((pkey, with_trajectory))
        if shown is None:
            pred = self.predictions.get(pkey)
            if pred is None:
                return None
            part = {"calls", "trajectory"} if with_trajectory else {"calls"}
            digest = hashlib.blake2b(pred.model_dump_json(include=part).encode()).digest()
            shown = self._shown_ids.setdefault((with_trajectory, digest), len(self._shown_ids))
            self._shown_of[(pkey, with_trajectory)] = shown
        return shown

    def _task(self, key: UnitKey) -> Task:
        record, difficulty = self.data.locate(key.record_id)
        return self.data.task(record, difficulty)

    @staticmethod
    def _predicted(pred: Prediction) -> scheduler.Outcome:
        result = pred.model_dump(mode="json", exclude_defaults=True)  # compact; see store.py
        if pred.absent is not None:  # an imported generator's task without a released output: done, unjudged
            return scheduler.Outcome("done", result, None, pred.usage)
        if pred.error is not None or pred.calls is None:
            error = pred.error or "prediction has no calls"
            return scheduler.Outcome(
                "failed", result, error, pred.usage, kind=pred.error_kind, attempts=pred.error_attempts
            )
        return scheduler.Outcome("done", result, None, pred.usage)

    async def predict(self, key: UnitKey) -> scheduler.Outcome:
        task = self._task(key)
        pred: Prediction
        if self.pool is not None and key.generator in self.remote_gens:
            pred = await self.pool.call("predict", key.generator, (task, key.generator_trial))
        else:
            pred = await self.gens[key.generator](task, key.generator_trial)
        return self._predicted(pred)

    def predict_offline(self, key: UnitKey) -> scheduler.Outcome:
        """``predict`` for a simulated generator, without an event loop (``runner.offline``)."""
        return self._predicted(offline.drive(self.gens[key.generator](self._task(key), key.generator_trial)))

    def _judge_request(self, key: UnitKey) -> JudgeRequest:
        score_key = (key.record_id, key.generator, key.generator_trial)
        oracle = getattr(self.judges[key.judge], "needs_reference", False)
        ref = reference(self.scores[score_key]) if oracle else None
        outcome_ref = next(iter(self.scores[score_key].values())).state_match if oracle else None
        pkey = UnitKey("predict", key.record_id, key.difficulty, key.generator, key.generator_trial)
        # only a judge that replays recorded verdicts is told whose output it is (imported/*): any other
        # request stays byte-identical across generators whose outputs are (runner/workers.py meets them)
        generator = key.generator if getattr(self.judges[key.judge], "needs_generator", False) else None
        return judge_request(
            key, self.data, self.predictions[pkey], self.variants, self.partners, ref, outcome_ref, generator
        )

    @staticmethod
    def _judged(res: JudgeResult, encoded: bool = False) -> scheduler.Outcome:
        """The unit's outcome: the result as its compact dump (see store.py), or, ``encoded`` (offline
        units), as the store's JSON text already (``store.stored_json``: pydantic's serializer, a third of
        the cost of dumping and then ``json.dumps``; it reads back as the same values,
        ``tests/test_stored_json.py``)."""
        result = None if encoded else res.model_dump(mode="json", exclude_defaults=True)
        text = stored_json(res) if encoded else None
        if res.error is not None:
            return scheduler.Outcome(
                "failed",
                result,
                res.error,
                res.usage,
                text=text,
                kind=res.error_kind,
                attempts=res.error_attempts,
            )
        note = res.rationales.get("_parse_problems") if not res.parse_ok else None
        return scheduler.Outcome("done", result, None, res.usage, not res.parse_ok, note, text)

    async def judge(self, key: UnitKey) -> scheduler.Outcome:
        request = self._judge_request(key)
        res: JudgeResult
        if self.pool is not None and key.judge in self.remote_judges:
            # the route names the request: its prompt group and what the prediction shows (identical requests
            # in flight together meet in one worker; different predictions spread over the workers)
            route = "|".join(map(str, (*_prompt_group(key), self._shown(key))))
            res = await self.pool.call("judge", key.judge, (request,), route)
        else:
            res = await self.judges[key.judge](request)
        return self._judged(res)

    def judge_offline(self, key: UnitKey) -> scheduler.Outcome:
        """``judge`` for a baseline or simulated judge, without an event loop (``runner.offline``).

        Two kinds of judge are asked less often; their outcome object is reused (``offline.compute_chunk``
        encodes it once):

        * one that ``answers_alike`` under the unit's condition (the constant baselines) is asked once per
          process and condition;
        * one that is ``condition_blind`` under it (``baseline/rule``, ``baseline/ceiling``: they never
          read the GT shown) is asked once per prediction, variant, temperature and trial over the
          conditions it is blind to; the runner works through a record's conditions one after the other
          (``work.prefix_order``), so the last few thousand answers are enough."""
        judge = self.judges[key.judge]

        def ask() -> scheduler.Outcome:
            return self._judged(offline.drive(judge(self._judge_request(key))), encoded=True)

        alike = getattr(judge, "answers_alike", None)
        if alike is not None and alike(key.condition):
            known = self._alike.get((key.judge, key.condition))
            if known is None:
                known = self._alike[(key.judge, key.condition)] = ask()
            return known
        blind = getattr(judge, "condition_blind", None)
        if blind is not None and blind(key.condition):
            # every coordinate of the unit but its condition (the record id holds the difficulty)
            same: tuple[Any, ...] = (key.judge, key.record_id, key.generator, key.generator_trial)
            same += (key.variant, key.temperature, key.trial)
            return remembered(self._blind, same, _BLIND_HELD, ask)
        return ask()

    async def run(self, console: Console) -> tuple[list[UnitKey], list[UnitKey]]:
        """predict -> score -> judge; returns the planned units of both stages. A sampled run
        (``self.sampler``) goes round once per stage of its design."""
        self.log.console = console
        if self.pool is not None:
            await self.pool.start()
        everything = predict_units(self.pipe, self.data)
        with scheduler.make_progress(console) as progress:
            if self.sampler is None:
                wanted, jwanted = everything, await self._round(everything, progress)
            else:
                wanted, jwanted = await self._sampled(everything, progress, console)
        await self.close_workers()
        self.predictions = {}  # the judge stage's input; the export reads predictions from the store
        self._shown_ids, self._shown_of = {}, {}
        return wanted, jwanted

    async def _round(
        self, wanted: list[UnitKey], progress: Any, keep: Any = None, label: str = ""
    ) -> list[UnitKey]:
        """One round of the grid over the predict units ``wanted``: predict, score, judge (the judge units
        of the successful predictions, those ``keep`` keeps); returns the judge units planned."""
        await self._stage(
            "predict", wanted, lambda u: u.generator, self.predict, progress, self.predict_offline, label
        )
        wanted_set = set(wanted)
        self.predictions = {}
        digests: dict[UnitKey, str] = {}  # each prediction's stored_digest, for the score cache
        with collector_paused():  # the judge stage's input: lives until the export (fastpaths/heap.py)
            for key, status, text, _, _ in self.store.iter_raw("predict"):
                if status == "done" and key in wanted_set:
                    stored = from_stored(Prediction, text or "")
                    if stored.calls is None:  # absent from an imported source: nothing to score or judge
                        continue
                    self.predictions[key] = stored
                    digests[key] = stored_digest(text or "")
        bar = progress.add_task(f"score{label}", total=len(self.predictions))
        workers = self.pipe.workers
        self.scores = cached_scores(  # read from run.sqlite what a previous invocation scored
            self.store.path,
            self.data,
            self.predictions,
            self.pipe.scoring_modes,
            self.pipe.lenient,
            on_scored=lambda: progress.advance(bar),
            compute=lambda data, preds, modes, lenient: offline.scores_in_chunks(
                data, preds, modes, lenient, workers, advance=lambda n: progress.advance(bar, n)
            ),
            digests=digests,
        )
        del digests
        freeze()  # what exists now lives until the export: not scanned by every collection again
        with collector_paused():
            jwanted = judge_units(self.pipe, sorted(self.predictions))
            if keep is not None:
                jwanted = keep(jwanted)
        await self._stage(
            "judge", jwanted, lambda u: u.judge, self.judge, progress, self.judge_offline, label
        )
        return jwanted

    async def _sampled(
        self, everything: list[UnitKey], progress: Any, console: Console
    ) -> tuple[list[UnitKey], list[UnitKey]]:
        """The stages of a sampled run (``agentjudge.runner.sampling.stages``): a round over the current plan,
        then each cell's prefix decided from what is stored; again while some cell grows. Nothing is
        decided while a planned unit has not run (a cost cap, a stopped model): the next invocation
        finishes the stage and decides then."""
        from agentjudge.runner.sampling.stages import RECORD_KEY, cell_sums

        sampler = self.sampler
        while True:
            stage = len(sampler.history)
            wanted = sampler.predict_units(everything)
            label = f" · stage {stage}"
            jwanted = await self._round(wanted, progress, sampler.judge_units, label)
            self.store.flush()
            if not self._all_ran(wanted, jwanted):
                return wanted, jwanted
            sums = cell_sums(sampler, self.pipe, self.store.iter_raw("judge"), self.scores)
            if not sampler.decide(sums):
                return wanted, jwanted
            self.store.set_meta({RECORD_KEY: sampler.dump()})
            grown = sum(1 for c, n in sampler.history[-1].items() if n > sampler.history[-2].get(c, 0))
            console.print(
                f"sampling: stage {stage} done; {grown} cell(s) need more scenarios for the "
                f"±{sampler.spec.target_ci_pp:g} pp target: stage {stage + 1}",
                highlight=False,
            )

    def _all_ran(self, wanted: list[UnitKey], jwanted: list[UnitKey]) -> bool:
        """Every planned unit of the round has a stored outcome (done or failed)."""
        for stage, units in (("predict", wanted), ("judge", jwanted)):
            status = self.store.statuses(stage)  # type: ignore[arg-type]
            if any(status.get(u) not in ("done", "failed") for u in units):
                return False
        return True

    def export(self, rundir: Path, wanted: list[UnitKey], jwanted: list[UnitKey]) -> tuple[int, int]:
        """Write the run folder's files from the store; returns (failed units, units not run)."""
        self.store.flush()  # everything committed: counted by SQLite, seen by the export's readers
        wanted_set = set(wanted)
        jwanted_set: set[UnitKey] = set()  # built only when some stored judge unit is not planned
        # the planned predict units as stored (results not decoded: only a rewrite of predictions.parquet
        # needs them decoded)
        with collector_paused():  # read whole, kept until the files are written (fastpaths/heap.py)
            predict_raw = [unit for unit in self.store.iter_raw("predict") if unit[0] in wanted_set]
        counts: dict[str, Counter[str]] = {
            "predict": Counter(unit[1] for unit in predict_raw),
            "judge": Counter(),
        }
        unwanted = self.unplanned.get("judge")  # stored judge units not planned (none, normally)
        if unwanted == 0:  # known from the judge stage: every stored unit is planned, SQLite counts them
            counts["judge"].update(self.store.counts("judge"))
        else:
            unwanted, jwanted_set = 0, set(jwanted)
            for key, status in self.store.iter_statuses("judge"):  # streamed: no map of every judge unit
                if key in jwanted_set:
                    counts["judge"][status] += 1
                else:
                    unwanted += 1
        judge_stored = sum(counts["judge"].values())
        meta_store = self.store.meta()
        meta: dict[str, Any] = {
            "format_version": FORMAT_VERSION,  # of the folder's file contracts (docs/formats.md)
            "pipeline": redact_model_urls(self.pipe.model_dump(mode="json")),  # no key from a URL
            "config_hash": meta_store["config_hash"],
            "git_commit": meta_store.get("git_commit", "unknown"),
            "git_commit_last": meta_store.get("git_commit_last", "unknown"),
            "package_version": meta_store.get("package_version", __version__),
            "seed": self.pipe.seed,
            "judges": model_info(self.pipe.judges),
            "generators": model_info(self.pipe.generators),
            **_added_judges(meta_store),
            "units": {
                stage: {
                    "planned": len(planned),
                    "done": counts[stage]["done"],
                    "failed": counts[stage]["failed"],
                }
                for stage, planned in (("predict", wanted), ("judge", jwanted))
            },
            "last_invocation": {
                "per_model": summary_rows(self.pipe, self.tallies, self.client.stats),
                "spent_usd": self.budget.spent,
                "cost_cap_usd": self.budget.cap,
                # what the cap counted as spent: the known costs plus, for an answer that may have been
                # billed unseen (a timeout, no usage reported), its worst case; null without a cap
                "cost_cap_counted_usd": None
                if self.client.cost_gate is None
                else self.client.cost_gate.spent,
                "units_not_run_at_cost_cap": self.budget.skipped,
            },
        }
        from agentjudge.runner.sampling.record import build_record, write_record

        record = None
        if self.sampler is not None:
            record = build_record(self.sampler, self.pipe, len(wanted), len(jwanted))
            meta["sampling"] = {
                "file": "sampling.json",
                "target_ci_pp": record.target_ci_pp,
                "fpc": record.fpc,
                "stages": record.stages,
                "judge_units": record.judge_units.model_dump(),
                "predict_units": record.predict_units.model_dump(),
            }
        write_record(rundir, record)  # or remove a sampled run's, in a folder now judged in full
        simulated = {name: bool(info["simulated"]) for name, info in model_info(self.pipe.generators).items()}
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
            self.data.sha256,
            resume_cache.code_fingerprint(),
        )
        keep = current_files(rundir, stamps, meta_store.get("exported_files"))  # e.g. after a judge retry
        with collector_paused():
            predict_rows: dict[UnitKey, UnitRow] = (
                {}
                if "predictions.parquet" in keep
                else {unit[0]: UnitRow.from_raw(unit) for unit in predict_raw}
            )
        # the judge rows are read by the processes that build the tables, one row group's range each
        ranges = key_ranges(jwanted, EXPORT_ROW_GROUP)
        reader = RangeReader(self.store.path, "judge")
        try:
            export_run(
                rundir,
                self.data,
                predict_rows,
                ranges,
                jwanted_set if unwanted else None,  # None: no filter (the readers never touch the set)
                self.scores,
                self.variants,
                self.settings,
                simulated,
                meta,
                # at most EXPORT_PROCESSES: each child holds a whole row group's rows, decoded and as
                # Arrow (~150-300 MB); measured under 2 GiB summed with 2, not with more
                workers=min(
                    EXPORT_PROCESSES,
                    offline.offline_workers(self.pipe.workers, len(jwanted), EXPORT_ROW_GROUP),
                ),
                row_group=EXPORT_ROW_GROUP,
                read=reader,
                keep=keep,
            )
        finally:
            reader.close()
        # stamps are kept only for files written by the code they name (an edit during the run: none)
        self.store.set_meta(
            {"exported_files": recorded_files(rundir, stamps) if resume_cache.code_unchanged() else ""}
        )
        failed = counts["predict"]["failed"] + counts["judge"]["failed"]
        missing = len(wanted) - len(predict_raw) + len(jwanted) - judge_stored
        return failed, missing


async def _run(
    pipe: Pipeline,
    data: Dataset,
    partners: dict[str, str],
    rundir: Path,
    force_new: bool,
    no_cache: bool,
    console: Console,
    pool: WorkerPool | None = None,
    lean_export: bool = False,
    added: list[str] | None = None,
    ending: _Ending | None = None,
) -> int:
    from agentjudge.fastpaths.inline_executor import install_if_loaded
    from agentjudge.models.cache import CallCache
    from agentjudge.models.client import ModelClient
    from agentjudge.registry.factory import ModelResolutionError

    install_if_loaded()  # litellm's request building runs inline in this loop (fastpaths/inline_executor.py)
    client = ModelClient(cache=CallCache(pipe.cache), read_cache=not no_cache, max_cost_usd=pipe.max_cost_usd)
    try:  # before the store is opened: a model that cannot be built leaves no trace in RUNDIR
        gens, judges = _build_models(pipe, data, client)
    except ModelResolutionError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    try:
        store = _open_store(rundir, pipe, force_new, console, added or [])
    except FS_ERRORS as exc:
        console.print(f"[red]error:[/red] {escape(describe(exc, rundir / 'run.sqlite'))}", soft_wrap=True)
        return 2
    if store is None:
        return 2
    if data.gate1 is not None:
        save_gate1(store.path, data.gate1)  # after the store accepted this configuration
    sampler = None
    if pipe.sampling is not None:
        from agentjudge.runner.sampling.stages import RECORD_KEY, SampledGrid

        sampler = SampledGrid.build(pipe.sampling, pipe, data)
        try:
            if sampler.open(store.meta(), (key for key, _ in store.iter_statuses("judge"))):
                store.set_meta({RECORD_KEY: sampler.dump()})
        except GridError as exc:
            store.close()
            console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
            return 2
    broker = None
    try:
        grid = _Grid(pipe, data, partners, store, client, gens, judges, pool)
        grid.sampler = sampler
        grid.batches = client.batch = broker = _batch_broker(pipe, rundir, console)
        wanted, jwanted = await grid.run(console)
        if client.cache is not None:  # the call cache's hit counts of this run (models/cache.py)
            client.cache.flush_hits()
        with lean_imports(lean_export):
            failed, missing = grid.export(rundir, wanted, jwanted)
        complete = not (failed or missing or grid.budget.skipped or grid.log.not_run)
        rows = summary_rows(pipe, grid.tallies, client.stats)
        _print_table(console, summary_table(rows))
        for line in unpriced_notes(rows):
            console.print(escape(line), highlight=False, soft_wrap=True)
        fleets = endpoint_table(pipe, client.stats)
        if fleets is not None:
            _print_table(console, fleets)
        failed_rows = _write_run_summary(grid, rundir)
        stamp = _export_stamp(store.version, data.skipped_invalid > 0, pipe) if complete else ""
        store.set_meta({"exported_complete": stamp})  # read by _finished on the next invocation
        code = _closing(grid, rundir, failed, missing, console, failed_rows)
        if ending is not None:
            ending.code = code  # said and written: a Ctrl-C from here on interrupts nothing
        return code
    except FS_ERRORS as exc:
        console.print(f"[red]error:[/red] {escape(describe(exc, rundir))}", highlight=False, soft_wrap=True)
        return 2
    finally:
        if broker is not None:
            broker.close()
        store.close()


def _earlier_added(rundir: Path, given: list[str]) -> list[str]:
    """The models added to this run folder with ``--add-judge`` by earlier invocations and not given again
    (read from its store with ``store.open_readonly``; none when the folder holds no run)."""
    import sqlite3

    conn = open_readonly(rundir / "run.sqlite")
    if conn is None:
        return []
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'added_judges'").fetchone()
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    entries = json.loads(row[0]) if row else []
    return [e["model"] for e in entries if isinstance(e, dict) and e.get("model") and e["model"] not in given]


def _added_judges(meta_store: dict[str, str]) -> dict[str, Any]:
    """meta.json's ``added_judges`` (judges added to the folder's run with ``--add-judge``: name, model, when,
    code), present only when some were."""
    added = json.loads(meta_store.get("added_judges", "[]"))
    return {"added_judges": added} if added else {}


def _batch_broker(pipe: Pipeline, rundir: Path, console: Console) -> Any:
    """The run's batch queue when some model has ``batch: true`` (``runner.batches``), else None."""
    batch_models = {m.display_name: m for m in [*pipe.generators, *pipe.judges] if m.batch}
    if not batch_models:
        return None
    from agentjudge.runner.batches import BatchBroker

    return BatchBroker(
        rundir / "run.sqlite",
        batch_models,
        poll_s=pipe.batch_poll_s,
        poll_max_s=pipe.batch_poll_max_s,
        max_requests=pipe.batch_max_requests,
        max_bytes=pipe.batch_max_bytes,
        say=lambda text: console.print(escape(text), highlight=False, soft_wrap=True),
    )


def _write_run_summary(grid: _Grid, rundir: Path) -> list[dict[str, Any]]:
    """RUNDIR/run_summary.json (``summary.run_summary``); requests and retries summed over invocations
    are kept in the store's meta. Returns the failed units."""
    rows = summary_rows(grid.pipe, grid.tallies, grid.client.stats)
    earlier = json.loads(grid.store.meta().get("requests_by_model", "{}"))
    totals = add_totals(earlier, rows)
    grid.store.set_meta({"requests_by_model": json.dumps(totals, sort_keys=True)})
    failed = failed_unit_rows(grid.store.failed_units())
    from agentjudge.runner.export import write_json

    write_json(rundir / "run_summary.json", run_summary(rows, totals, failed))
    return failed


def _closing(
    grid: _Grid, rundir: Path, failed: int, missing: int, console: Console, failed_rows: list[dict[str, Any]]
) -> int:
    """The end of a run: failures by model and reason, the failed units with their attempts, stopped
    models, the cost cap, what to do next."""
    log, budget, gate = grid.log, grid.budget, grid.client.cost_gate
    if log.failures:
        console.print(escape(log.failures.report()), highlight=False, soft_wrap=True)
    for line in failed_units_text(failed_rows, str(rundir / "run_summary.json")):
        console.print(escape(line), highlight=False, soft_wrap=True)
    for model, n in sorted(log.not_run.items()):
        console.print(
            f"{escape(model)}: stopped after {escape(log.stopped[model][:200])}; {n} unit(s) not run. "
            "Fix the set-up (agentjudge run ... --dry-run --probe checks it), then re-run.",
            highlight=False,
            soft_wrap=True,
        )
    if budget.skipped:
        spent = gate.spent if gate is not None else budget.spent
        console.print(
            f"[yellow]stopped at the cost cap[/yellow] (${spent:.4f} spent of ${budget.cap:.4f} in this "
            f"invocation); {budget.skipped} unit(s) left - re-run with a --max-cost for the rest.",
            soft_wrap=True,
        )
    if failed or missing:
        console.print(
            f"{failed} unit(s) failed, {missing} not run; re-run the same command to retry them. "
            f"Results so far: {escape(str(rundir))}",
            soft_wrap=True,
        )
        return 1
    console.print(f"done: {escape(str(rundir))}")
    return 0
