"""``run``, ``infer`` and ``batches``: the grid, a one-stage run, and a run's provider batches."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentjudge.errors import InputError
from agentjudge.runner.events import Reporter
from agentjudge.runner.result import InferResult, RunResult


def _listed(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def run(
    pipeline: Path | str,
    out: Path | str,
    *,
    judges: Sequence[str] | None = None,
    generators: Sequence[str] | None = None,
    add_judges: Sequence[str] | None = None,
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
    """Infer, score and judge every cell of a pipeline grid into the run folder ``out``, resuming what an
    earlier invocation left; ``agentjudge run``.

    ``pipeline``: a pipeline file, or the name of a shipped one (``"quickstart"``) when no such file
    exists. ``judges`` replaces the pipeline's judges, ``add_judges`` adds to them (also into a folder that
    holds the pipeline without them: only their units run), ``generators`` replaces its generators;
    ``api_base`` is for the models given here. ``max_cost`` caps this invocation's spending (USD; no call is
    sent that could pass it); ``target_ci`` judges a sample of base scenarios sized for a 95 % CI half-width
    of that many percentage points per cell. ``dry_run`` estimates calls and cost and writes nothing;
    ``probe`` makes one 1-token call per API model before anything runs; ``force_new`` archives a folder
    holding another configuration instead of refusing it; ``skip_invalid`` leaves out records failing Gate 1
    instead of refusing them; ``no_cache`` does not read the call cache. ``progress`` receives the run's
    events and draws its bars (``agentjudge.runner.events``; none by default).

    Returns the invocation's ``RunResult`` (``status`` complete, stopped or dry_run). Raises ``InputError``
    (``PreflightError`` for the preflight's problems) before anything is written, and ``RunInterrupted`` on
    Ctrl-C once the finished units are stored.
    """
    from agentjudge.runner.run import run_pipeline

    return run_pipeline(
        pipeline,
        out,
        judges=_listed(judges),
        generators=_listed(generators),
        add_judges=_listed(add_judges),
        max_cost=max_cost,
        dry_run=dry_run,
        probe=probe,
        target_ci=target_ci,
        force_new=force_new,
        skip_invalid=skip_invalid,
        no_cache=no_cache,
        api_base=api_base,
        progress=progress,
    )


def infer(
    data: Path | str,
    generator: str,
    out: Path | str,
    *,
    difficulties: Sequence[str] | None = None,
    trials: int = 1,
    api_base: str | None = None,
    no_cache: bool = False,
    probe: bool = False,
    skip_invalid: bool = False,
    progress: Reporter | None = None,
) -> InferResult:
    """Run one generator over a records file and write its predictions (``.jsonl`` or ``.parquet``);
    ``agentjudge infer``. A re-run into the same file keeps its successful rows and runs what is missing or
    failed. ``generator``: ``sim/<profile>``, a litellm model string, or ``module:factory``. Raises
    ``InputError`` before anything is written."""
    from agentjudge.runner.infer import infer_predictions

    if trials < 1:
        raise InputError(f"--trials {trials}: must be >= 1")
    return infer_predictions(
        Path(data),
        generator,
        Path(out),
        difficulties=_listed(difficulties),
        trials=trials,
        api_base=api_base,
        no_cache=no_cache,
        probe=probe,
        skip_invalid=skip_invalid,
        progress=progress,
    )


def batches(rundir: Path | str) -> list[dict[str, Any]]:
    """The provider batches of a run (models with ``batch: true``), one dict per batch: id, model, state,
    the provider's counts, the run's requests and units; ``agentjudge batches``. Empty when the run has
    none. Raises ``InputError`` when ``rundir`` holds no run store."""
    from agentjudge.rundir.units import open_readonly
    from agentjudge.runner.batch_store import batch_rows

    rundir = Path(rundir)
    store = rundir / "run.sqlite"
    if not rundir.is_dir():
        what = "not a folder (give the run folder, not a file in it)" if rundir.exists() else "no such folder"
        raise InputError(f"{rundir}: {what}")
    if not store.is_file():
        raise InputError(f"{store}: no run store here (run `agentjudge run ... --out {rundir}` first)")
    db = open_readonly(store)
    if db is None:
        raise InputError(f"{store}: damaged or not a run store ({_why_unreadable(store)})")
    try:
        has_table = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='batches'").fetchone()
        rows: list[dict[str, Any]] = batch_rows(db) if has_table else []
    finally:
        db.close()
    return rows


def _why_unreadable(store: Path) -> str:
    """SQLite's reason a file is no run store (not a database, malformed, no ``units`` table)."""
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"{store.resolve().as_uri()}?mode=ro", uri=True)) as db:
            db.execute("SELECT 1 FROM units LIMIT 1")
    except sqlite3.Error as exc:
        return str(exc)
    return "unreadable"
