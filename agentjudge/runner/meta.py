"""RUNDIR/meta.json and RUNDIR/run_summary.json: what a run folder says about the run that wrote it.

``meta.json`` (docs/formats.md) is assembled here from the pipeline, the store's meta table (the
configuration hash, the code that started and last continued the run, the judges added with ``--add-judge``),
the units per stage and this invocation's accounting (per model, money spent, the cost cap); the export
(``runner/export.py``) writes it beside the parquet files. ``run_summary.json`` keeps requests and retries
summed over every invocation (in the store's meta) and every failed unit.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentjudge import __version__
from agentjudge.models.fleet import redact_model_urls
from agentjudge.registry.model_strings import model_kind
from agentjudge.rundir.meta import FORMAT_VERSION
from agentjudge.runner.pipeline import Pipeline
from agentjudge.runner.scheduler import Budget, ModelTally
from agentjudge.runner.store import RunStore
from agentjudge.runner.summary import add_totals, failed_unit_rows, run_summary, summary_rows
from agentjudge.types import ModelSettings


def model_info(models: list[ModelSettings]) -> dict[str, dict[str, Any]]:
    """meta.json's ``judges`` / ``generators``: per display name, the model string, tier and kind."""
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


def added_judges(meta_store: Mapping[str, str]) -> dict[str, Any]:
    """meta.json's ``added_judges`` (judges added to the folder's run with ``--add-judge``: name, model, when,
    code), present only when some were."""
    added = json.loads(meta_store.get("added_judges", "[]"))
    return {"added_judges": added} if added else {}


def run_meta(
    pipe: Pipeline,
    meta_store: Mapping[str, str],
    planned: Mapping[str, int],
    counts: Mapping[str, Counter[str]],
    tallies: dict[str, ModelTally],
    client: Any,
    budget: Budget,
    *,
    per_judge: Mapping[str, tuple[int, Counter[str]]] | None = None,
    stopped: Mapping[str, Mapping[str, str]] | None = None,
    resume_command: str = "",
) -> dict[str, Any]:
    """meta.json's content (the sampling block is added by the caller when the run is sampled).
    ``per_judge``: each judge's planned units and its stored ones by status; ``stopped``: the models a
    fatal failure stopped in this invocation, with its reason and error; ``resume_command``: the command
    line that continues the run (what the report of an unfinished run tells its reader to type)."""
    by_judge = {
        judge: {"planned": planned_n, "done": stored["done"], "failed": stored["failed"]}
        for judge, (planned_n, stored) in (per_judge or {}).items()
    }
    return {
        "format_version": FORMAT_VERSION,  # of the folder's file contracts (docs/formats.md)
        "pipeline": redact_model_urls(pipe.model_dump(mode="json")),  # no key from a URL
        "config_hash": meta_store["config_hash"],
        "git_commit": meta_store.get("git_commit", "unknown"),
        "git_commit_last": meta_store.get("git_commit_last", "unknown"),
        "package_version": meta_store.get("package_version", __version__),
        "seed": pipe.seed,
        "judges": model_info(pipe.judges),
        "generators": model_info(pipe.generators),
        **added_judges(meta_store),
        "units": {
            stage: {
                "planned": planned[stage],
                "done": counts[stage]["done"],
                "failed": counts[stage]["failed"],
            }
            for stage in ("predict", "judge")
        }
        | ({"by_judge": by_judge} if by_judge else {}),
        "last_invocation": {
            "per_model": summary_rows(pipe, tallies, client.stats),
            "spent_usd": budget.spent,
            "cost_cap_usd": budget.cap,
            # what the cap counted as spent: the known costs plus, for an answer that may have been
            # billed unseen (a timeout, no usage reported), its worst case; null without a cap
            "cost_cap_counted_usd": None if client.cost_gate is None else client.cost_gate.spent,
            "units_not_run_at_cost_cap": budget.skipped,
            "stopped_models": {model: dict(why) for model, why in (stopped or {}).items()},
            "resume_command": resume_command,
        },
    }


def sampling_meta(record: Any) -> dict[str, Any]:
    """meta.json's ``sampling`` block of a sampled run (``runner.sampling.record``'s record)."""
    return {
        "file": "sampling.json",
        "target_ci_pp": record.target_ci_pp,
        "fpc": record.fpc,
        "stages": record.stages,
        "judge_units": record.judge_units.model_dump(),
        "predict_units": record.predict_units.model_dump(),
    }


def write_run_summary(
    pipe: Pipeline, tallies: dict[str, ModelTally], client_stats: Any, store: RunStore, rundir: Path
) -> list[dict[str, Any]]:
    """RUNDIR/run_summary.json (``summary.run_summary``); requests and retries summed over invocations
    are kept in the store's meta. Returns the failed units."""
    rows = summary_rows(pipe, tallies, client_stats)
    earlier = json.loads(store.meta().get("requests_by_model", "{}"))
    totals = add_totals(earlier, rows)
    store.set_meta({"requests_by_model": json.dumps(totals, sort_keys=True)})
    failed = failed_unit_rows(store.failed_units())
    from agentjudge.runner.export import write_json

    write_json(rundir / "run_summary.json", run_summary(rows, totals, failed))
    return failed
