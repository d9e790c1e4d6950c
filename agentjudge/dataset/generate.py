"""`agentjudge generate`: build, word and gate every base scenario; write records.jsonl + manifest.json.

Each scenario is built from a sub-seed derived from (master seed, domain, index, attempt), worded by
``render_queries`` and checked by ``run_gates``. A scenario that fails is rebuilt with the next attempt's
sub-seed; the failure is counted per reason code in the manifest and never shipped. Sub-seeds depend only
on the scenario's coordinates, so the output is byte-identical however the work is split across
processes. Both files are written only when every scenario passed, each via temp file + rename.
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import signal
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentjudge import DATASET_VERSION, __version__, strict_json
from agentjudge.types import TOPOLOGIES, Topology

FULL_COUNTS: dict[Topology, int] = {
    "fan_in": 1049,
    "optional_enrichment": 823,
    "linear": 812,
    "diamond": 501,
    "fan_out": 399,
    "loop_like": 224,
}
SIZES: dict[str, dict[Topology, int]] = {"full": FULL_COUNTS, "mini": {t: 10 for t in TOPOLOGIES}}
MAX_ATTEMPTS = 40
PARALLEL_ABOVE = 200  # below this many scenarios a process pool costs more than it saves


class GenerationError(RuntimeError):
    """A scenario that failed every attempt; nothing is written."""


@dataclass(frozen=True)
class Job:
    domain: str
    topology: Topology
    index: int  # per-domain index, part of the record id


@dataclass
class Outcome:
    line: str | None
    record_id: str
    attempts: int
    failures: Counter[str]  # reason code -> failed attempts that showed it
    domain: str = ""
    topology: str = ""
    n_calls: int = 0
    n_tools: int = 0
    gates_run: tuple[str, ...] = ()
    plan_json: str | None = None
    error: str | None = None


def plan_jobs(size: str, domains: list[str]) -> list[Job]:
    """Topologies in the published order with their exact counts; domains dealt round-robin over the whole
    list, so every domain gets the same number of scenarios (±1) and every topology is spread evenly."""
    counts = SIZES[size]
    jobs: list[Job] = []
    per_domain: Counter[str] = Counter()
    for topology in TOPOLOGIES:
        for _ in range(counts[topology]):
            domain = domains[len(jobs) % len(domains)]
            jobs.append(Job(domain, topology, per_domain[domain]))
            per_domain[domain] += 1
    return jobs


def sub_seed(seed: int, job: Job, attempt: int) -> int:
    digest = hashlib.sha256(f"{seed}:{job.domain}:{job.topology}:{job.index}:{attempt}".encode()).hexdigest()
    return int(digest[:8], 16)


def make_one(job: Job, seed: int, keep_plan: bool = False) -> Outcome:
    """Build → word → gate until a scenario passes (or MAX_ATTEMPTS). Top-level so a pool can pickle it."""
    from agentjudge.dataset.gates import run_gates
    from agentjudge.dataset.realiser import RenderError, render_queries
    from agentjudge.dataset.scenario import build_scenario
    from agentjudge.rundir.records import dumps_record

    failures: Counter[str] = Counter()
    last = ""
    for attempt in range(MAX_ATTEMPTS):
        s = sub_seed(seed, job, attempt)
        try:
            record, plan = build_scenario(job.domain, job.topology, s, job.index)
        except RuntimeError as exc:  # the builder found no feasible scenario for this sub-seed
            failures["build_infeasible"] += 1
            last = f"build_infeasible: {exc}"
            continue
        try:
            queries = render_queries(plan, s)
        except RenderError as exc:
            failures["render_error"] += 1
            last = f"render_error: {exc}"
            continue
        record = record.model_copy(
            update={"queries": queries, "rewrite_status": {"medium": "OK", "hard": "OK"}}
        )
        report = run_gates(record)
        if report.passed:
            report.regenerations = attempt
            record = record.model_copy(update={"validation": report})
            return Outcome(
                line=dumps_record(record),
                record_id=record.id,
                attempts=attempt + 1,
                failures=failures,
                domain=record.domain,
                topology=record.topology,
                n_calls=len(record.gt),
                n_tools=len(record.tools),
                gates_run=tuple(report.gates_run),
                plan_json=plan.model_dump_json() if keep_plan else None,
            )
        for code in sorted({f.code for f in report.findings}):
            failures[code] += 1
        last = "; ".join(f"{f.code}: {f.detail}" for f in report.findings[:3])
    return Outcome(
        line=None,
        record_id=f"{job.domain}/{job.topology}/{job.index}",
        attempts=MAX_ATTEMPTS,
        failures=failures,
        error=f"failed {MAX_ATTEMPTS} attempts; last: {last}",
    )


def _make_star(args: tuple[Job, int, bool]) -> Outcome:
    return make_one(*args)


def run_jobs(
    jobs: list[Job], seed: int, keep_plans: bool = False, processes: int | None = None
) -> list[Outcome]:
    """Outcomes in job order (``imap`` keeps order, so parallelism never changes the bytes)."""
    from agentjudge.dataset import grammar, realiser  # noqa: F401  (imported and warmed once, before forking)

    grammar.warm()
    work = [(job, seed, keep_plans) for job in jobs]
    procs = processes if processes is not None else min(2, mp.cpu_count())
    if len(jobs) <= PARALLEL_ABOVE or procs <= 1:
        return [_make_star(w) for w in work]
    ctx = mp.get_context("fork")
    with ctx.Pool(procs, initializer=_pool_child) as pool:  # Ctrl-C: the parent ends the pool
        return list(pool.imap(_make_star, work, chunksize=32))


def _pool_child() -> None:
    """A pool child leaves Ctrl-C to the parent, which ends the pool (a child would print a traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _spread(values: list[int]) -> dict[str, float]:
    if not values:
        return {}
    return {"min": min(values), "max": max(values), "mean": round(sum(values) / len(values), 3)}


def build_manifest(
    size: str,
    seed: int,
    records_text: str,
    outcomes: list[Outcome],
    llm: str | None,
    rewrite_failed: dict[str, Any],
) -> dict[str, Any]:
    """Everything a reader needs to trust and reproduce the file, and nothing that varies between runs."""
    failures: Counter[str] = Counter()
    for o in outcomes:
        failures.update(o.failures)
    by_domain: dict[str, dict[str, int]] = {}
    for o in outcomes:
        by_domain.setdefault(o.domain, {t: 0 for t in TOPOLOGIES})[o.topology] += 1
    gates_run = sorted({g for o in outcomes for g in o.gates_run})
    return {
        "dataset": "agentjudge",
        "version": DATASET_VERSION,
        "package_version": __version__,
        "size": size,
        "seed": seed,
        "n_records": len(outcomes),
        "records_file": "records.jsonl",
        "sha256": hashlib.sha256(records_text.encode("utf-8")).hexdigest(),
        "counts": {
            "topology": {t: sum(o.topology == t for o in outcomes) for t in TOPOLOGIES},
            "domain": {d: sum(v.values()) for d, v in sorted(by_domain.items())},
            "domain_topology": dict(sorted(by_domain.items())),
        },
        "shape": {
            "calls_per_record": _spread([o.n_calls for o in outcomes]),
            "tools_per_record": _spread([o.n_tools for o in outcomes]),
        },
        "gates": {
            "gates_run": gates_run,
            "records_shipped": len(outcomes),
            "records_passed": sum(1 for o in outcomes if o.line is not None and not o.error),
            "attempts": sum(o.attempts for o in outcomes),
            "regenerations": sum(o.attempts - 1 for o in outcomes),
            "records_regenerated": sum(1 for o in outcomes if o.attempts > 1),
            "regenerations_by_reason": dict(sorted(failures.items())),
        },
        "rewrites": {"llm": llm, "failed": rewrite_failed},
    }


def generate(
    out: Path,
    size: str,
    seed: int,
    llm: str | None = None,
    api_base: str | None = None,
    processes: int | None = None,
) -> dict[str, Any]:
    """Generate and write; returns the manifest. Raises GenerationError (nothing written) on failure."""
    from agentjudge.atomic import write_texts
    from agentjudge.dataset.world import list_domains
    from agentjudge.rundir.records import records_text

    if size not in SIZES:
        raise ValueError(f"--size must be one of {', '.join(SIZES)}, got {size!r}")
    jobs = plan_jobs(size, sorted(list_domains()))
    outcomes = run_jobs(jobs, seed, keep_plans=llm is not None, processes=processes)
    failed = [o for o in outcomes if o.error]
    if failed:
        raise GenerationError(
            f"{len(failed)} scenario(s) never passed the gates, e.g. {failed[0].record_id}: {failed[0].error}"
        )
    lines = [o.line for o in outcomes if o.line is not None]
    rewrite_failed: dict[str, Any] = {"medium": 0, "hard": 0}
    if llm is not None:
        from agentjudge.dataset.llm_synth import rewrite_all

        lines, rewrite_failed = rewrite_all(lines, [o.plan_json or "" for o in outcomes], llm, api_base, seed)
    ids = Counter(o.record_id for o in outcomes)
    if dup := [i for i, c in ids.items() if c > 1]:
        raise GenerationError(f"the builder produced duplicate record ids, e.g. {dup[0]!r}")
    text = records_text(lines)
    manifest = build_manifest(size, seed, text, outcomes, llm, rewrite_failed)
    out.mkdir(parents=True, exist_ok=True)
    manifest_text = strict_json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    write_texts({out / "records.jsonl": text, out / "manifest.json": manifest_text})  # both or neither
    return manifest
