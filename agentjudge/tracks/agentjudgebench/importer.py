"""``agentjudge import agentjudgebench DIR --records RECORDS --out RUNDIR``: the paper's released generator
outputs and judge verdicts as an ordinary run folder.

What it does, in order (nothing is left in RUNDIR unless every step succeeds: the folder is built beside
it and renamed at the end):

1. reads the release (``agentjudgebench_files``: either layout) and the released base records (the
   published layout ``validate`` reads); every judged row must name a record of RECORDS, its query must be
   that record's query at its difficulty (counted when not);
2. merges re-runs the way the publication did (a row whose judgment succeeded in the primary output wins,
   else one from a ``nullrerun``/``resume`` file), and keeps one generator output per task (the judges
   saw the same output; a disagreement between files is counted);
3. writes ``imported.sqlite`` (``generators/imported.py``): each generator output, each verdict (a metric
   without a value stays None: a failure, never 0 and never defaulted; a judgment the publication lost is
   a parse failure of that judge), and ``pipeline.yaml``: the generators and judges as ``imported/<key>``
   models with the paper's display names, both GT conditions, the published prompt family and the
   paper-mode scorer;
4. runs that pipeline through the ordinary grid (offline, in seconds), so every file of a run folder
   exists and ``report``, ``compare``, ``view``, ``human-sample`` and ``run --add-judge`` work on it;
5. compares our paper-mode scores of the same calls with the published programmatic scores (every
   disagreement counted), recomputes every cell of the main grid from the released verdicts under the
   publication's rule (a missing metric counts 0, failed rows left out) and under ours (a missing metric
   left out), beside the printed value of ``data/published/`` (``imported_cells.csv``), and writes
   ``import_summary.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentjudge.resources import data_dir
from agentjudge.tracks.agentjudgebench.files import Release, ReleaseError, Row, read_release
from agentjudge.types import METRICS

JUDGE_NAMES = {
    "gpt_5_4": "GPT-5.4",
    "claude_large": "Claude Sonnet 4.5",
    "reranker_gemini": "Gemini-2.5-Pro",
    "gemini_2_5_pro": "Gemini-2.5-Pro",
    "qwq_32b": "QwQ-32B",
    "gpt_oss_20b": "GPT-OSS-20B",
    "gpt_oss_120b": "GPT-OSS-120B",
}
GENERATOR_NAMES = {
    "llama_3_3_70b_instruct": "Llama-3.3-70B",
    "llama_3_1_8b_instruct": "Llama-3.1-8B",
    "qwen3_32b": "Qwen3-32B",
    "smollm3_3b": "SmolLM3-3B",
    "gpt_5_4": "GPT-5.4",
}
PUBLISHED_KEY = {"reranker_gemini": "gemini_2_5_pro"}  # the released files renamed the Gemini judge
PUBLISHED = data_dir() / "published" / "agentjudgebench_main_grid.csv"
CONDITIONS = ("with_gt", "without_gt")  # the main grid's
ABSENT = "the publication released no output of this generator for this task (not judged there)"
LOST = (
    "the publication has no verdict of this judge for this output (its judge call failed there: a null row)"
)


class ImportError_(ValueError):  # noqa: N801 - ImportError is a builtin
    """Bad input to the importer: the message names the file, row and field."""


@dataclass
class Verdict:
    values: dict[str, Any] | None
    raw: str
    overall: float | None


def import_cli(release_dir: Path, records: Path, out: Path) -> int:
    """Exit 0: imported; 2: bad input (one line, nothing written)."""
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    try:
        summary = import_release(release_dir, records, out, console)
    except (ImportError_, ReleaseError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    console.print(
        f"imported {summary['rows']:,} judged rows ({summary['judgments']:,} judgments) of "
        f"{len(summary['generators'])} generators x {len(summary['judges'])} judges from {summary['files']} "
        f"file(s) ({summary['layout']}) into {escape(str(out))}",
        highlight=False,
        soft_wrap=True,
    )
    for line in summary["notes"]:
        console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
    console.print(f"done: {escape(str(out))} (agentjudge report {escape(str(out))})", highlight=False)
    return 0


def import_release(release_dir: Path, records_path: Path, out: Path, console: Any = None) -> dict[str, Any]:
    from agentjudge.rundir.records import LayoutError, read_records

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ImportError_(f"{out}: exists and is not empty; give a new folder for the imported run")
    try:
        records = {r.id: r for r in read_records(records_path)}
    except LayoutError as exc:
        raise ImportError_(str(exc)) from None
    release = read_release(release_dir)
    unknown = sorted({r.id for r in release.rows if r.id not in records})
    if unknown:
        first = next(r for r in release.rows if r.id == unknown[0])
        raise ImportError_(
            f"{first.file}: record id {unknown[0]!r} (and {len(unknown) - 1} more) is not in {records_path}; "
            "give the released base records the outputs were judged on"
        )
    chosen, merged_from_reruns = _merge(release.rows)
    work = Path(tempfile.mkdtemp(prefix=".import-", dir=out.parent if out.parent.exists() else None))
    try:
        summary = _build(work, release, chosen, merged_from_reruns, records, records_path)
        if out.exists():
            out.rmdir()
        os.replace(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return summary


def _merge(rows: list[Row]) -> tuple[dict[tuple[str, str, str, str], Row], int]:
    """One row per (generator, judge, difficulty, id): a primary row whose with-GT judgment succeeded,
    else a re-run's that did, else the primary row (the publication's merge, ``rerun_nulls.py``)."""
    best: dict[tuple[str, str, str, str], Row] = {}
    from_rerun = 0
    for row in sorted(rows, key=lambda r: r.rerun):  # primary outputs first
        key = (row.generator, row.judge, row.difficulty, row.id)
        current = best.get(key)
        if current is None:
            best[key] = row
            # a nullrerun row for an id the primary left as an id-less failure row (every field None, as the
            # pipeline writes them): it replaced that failure, as the published merge did
            from_rerun += int(row.rerun and row.overall_with is not None and "nullrerun" in row.file)
        elif current.overall_with is None and row.overall_with is not None:
            best[key] = row
            from_rerun += int(row.rerun)
    return best, from_rerun


def _build(
    work: Path,
    release: Release,
    chosen: dict[tuple[str, str, str, str], Row],
    merged_from_reruns: int,
    records: dict[str, Any],
    records_path: Path,
) -> dict[str, Any]:
    from agentjudge.generators.replay import SCHEMA, SOURCE_FILE
    from agentjudge.runner.grid import run_cli

    generators = sorted({k[0] for k in chosen})
    judges = sorted({k[1] for k in chosen})
    difficulties = [d for d in ("easy", "medium", "hard") if any(k[2] == d for k in chosen)]
    gen_name = {g: GENERATOR_NAMES.get(g, g) for g in generators}
    judge_name = {j: JUDGE_NAMES.get(j, j) for j in judges}
    if len(set(judge_name.values())) != len(judge_name):
        raise ImportError_(f"{release.layout}: two judge keys map to one name: {judges}")
    outputs: dict[tuple[str, str], list[dict[str, Any]] | None] = {}
    # every judge file's copy of the output's published programmatic scores: each is compared with ours
    programmatic: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    output_conflicts = query_mismatches = 0
    for (gen, _judge, diff, rid), row in chosen.items():
        key = (gen, f"{rid}:{diff}")
        if key in outputs and outputs[key] != row.calls:
            output_conflicts += 1
        outputs.setdefault(key, row.calls)
        programmatic[key].append(row.programmatic)
        expected = records[rid].queries.get(diff)
        if (
            row.user_message is not None
            and expected is not None
            and row.user_message.strip() != expected.strip()
        ):
            query_mismatches += 1
    absent = 0  # tasks without a released output (or with calls that cannot be read)
    conn = sqlite3.connect(work / SOURCE_FILE)
    conn.executescript(SCHEMA)
    with conn:
        for gen in generators:
            for rid in records:
                for diff in difficulties:
                    calls = outputs.get((gen, f"{rid}:{diff}"))
                    unreadable = (gen, f"{rid}:{diff}") in outputs and calls is None
                    absent += calls is None
                    conn.execute(
                        "INSERT INTO predictions VALUES (?, ?, ?, ?)",
                        (
                            gen_name[gen],
                            f"{rid}:{diff}",
                            json.dumps(calls) if calls is not None else None,
                            None
                            if calls is not None
                            else (
                                "the publication's generated calls for this task cannot be read"
                                if unreadable
                                else ABSENT
                            ),
                        ),
                    )
        for (gen, judge, diff, rid), row in chosen.items():
            for condition, values, raw, overall in (
                ("with_gt", row.with_gt, row.raw_with, row.overall_with),
                ("without_gt", row.without_gt, row.raw_without, row.overall_without),
            ):
                lost = values is None or overall is None
                conn.execute(
                    "INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        judge_name[judge],
                        gen_name[gen],
                        f"{rid}:{diff}",
                        condition,
                        None if lost else json.dumps(values),
                        "",
                        raw,
                        LOST if lost else None,
                    ),
                )
        conn.execute("INSERT INTO meta VALUES ('release', ?)", (json.dumps({"layout": release.layout}),))
    conn.close()
    pipeline = {
        "name": "agentjudgebench-import",
        "description": "The AgentJudgeBench paper's released outputs and verdicts (agentjudge import).",
        "dataset": str(records_path.resolve()),
        "difficulties": difficulties,
        "generators": [{"model": f"imported/{g}", "name": gen_name[g]} for g in generators],
        "judges": [{"model": f"imported/{j}", "name": judge_name[j]} for j in judges],
        "conditions": ["with_gt", "without_gt"],
        "prompt_family": "paper",
        "scoring": "paper",
        "seed": 0,
    }
    import yaml

    (work / "pipeline.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False), encoding="utf-8")
    code = run_cli(work / "pipeline.yaml", work)
    if code != 0:
        raise ImportError_(f"the imported grid did not run cleanly (exit {code}); see the messages above")
    disagreements = _scorer_disagreements(work, programmatic, gen_name)
    cells = _cells(chosen, gen_name, judge_name)
    cells_path = work / "imported_cells.csv"
    _write_cells(cells, cells_path)
    failure_rows: Counter[str] = Counter()  # per cell
    failure_files: Counter[str] = Counter()  # per file (a per-judge file holds many cells)
    for (file, gen, judge, diff), n in release.failure_rows.items():
        failure_rows[f"{gen_name.get(gen, gen)} | {judge_name.get(judge, judge)} | {diff}"] += n
        failure_files[file] += n
    lost_total = sum(
        1 for row in chosen.values() for o in (row.overall_with, row.overall_without) if o is None
    )
    missing_metrics = sum(
        1
        for row in chosen.values()
        for v in (row.with_gt, row.without_gt)
        if v
        for x in v.values()
        if x is None
    )
    summary = {
        "layout": release.layout,
        "files": release.files,
        "files_skipped_other_conditions": release.skipped,
        "rows": len(chosen),
        "judgments": 2 * len(chosen),
        "generators": {g: gen_name[g] for g in generators},
        "judges": {j: judge_name[j] for j in judges},
        "failure_rows": sum(release.failure_rows.values()),
        "failure_rows_by_file": dict(sorted(failure_files.items())),
        "failure_rows_by_cell": dict(sorted(failure_rows.items())),
        "rows_from_reruns": merged_from_reruns,
        "judgments_lost_in_the_source": lost_total,
        "metrics_without_a_value": missing_metrics,
        "tasks_without_a_released_output": absent,
        "generator_outputs_differing_between_judge_files": output_conflicts,
        "queries_differing_from_the_records": query_mismatches,
        "scorer_disagreements": disagreements,
        "cells": len(cells),
    }
    summary["notes"] = _notes(summary, cells)
    (work / "import_summary.json").write_text(
        json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return summary


def _scorer_disagreements(
    work: Path, programmatic: dict[tuple[str, str], list[dict[str, float]]], gen_name: dict[str, str]
) -> dict[str, Any]:
    """Our paper-mode scores of the same calls beside the published programmatic ones: per metric, how many
    judged rows (each judge file carries its own copy of the output's scores) differ by more than the
    published rounding (4 decimals), and how many outputs have at least one such row."""
    from agentjudge.rundir import RunFolder

    scores = RunFolder.open(work).scores()
    scores = scores[scores["scoring_mode"] == "paper"]
    ours = {
        (g, r): row
        for g, r, row in zip(scores["generator"], scores["record_id"], scores.to_dict("records"), strict=True)
    }
    by_metric: Counter[str] = Counter()
    compared = 0
    examples: list[str] = []
    names = {v: k for k, v in gen_name.items()}
    rows_compared = outputs_differing = 0
    for (gen, record_id), copies in programmatic.items():
        row = ours.get((gen_name[gen], record_id))
        if row is None:
            continue
        compared += 1
        differs = False
        for published in copies:
            rows_compared += 1
            for metric in METRICS:
                if abs(float(row[f"p_{metric}"]) - published[metric]) > 5e-5:
                    by_metric[metric] += 1
                    differs = True
                    if len(examples) < 5:
                        examples.append(
                            f"{names.get(gen_name[gen], gen)} {record_id} {metric}: "
                            f"ours {row[f'p_{metric}']:.4f}, published {published[metric]:.4f}"
                        )
        outputs_differing += differs
    return {
        "outputs_compared": compared,
        "rows_compared": rows_compared,
        "outputs_differing": outputs_differing,
        "by_metric": dict(by_metric),
        "examples": examples,
    }


def _cells(
    chosen: dict[tuple[str, str, str, str], Row], gen_name: dict[str, str], judge_name: dict[str, str]
) -> list[dict[str, Any]]:
    """Every (generator, judge, difficulty, condition) cell recomputed from the released verdicts."""
    groups: dict[tuple[str, str, str, str], list[Row]] = defaultdict(list)
    for (gen, judge, diff, _rid), row in chosen.items():
        for condition in CONDITIONS:
            groups[(gen, judge, diff, condition)].append(row)
    printed = _printed()
    out = []
    for (gen, judge, diff, condition), rows in sorted(groups.items()):
        published_rule: list[float] = []
        matches: list[float] = []
        released: list[float] = []
        lost = 0
        for row in rows:
            values = row.with_gt if condition == "with_gt" else row.without_gt
            overall = row.overall_with if condition == "with_gt" else row.overall_without
            if overall is None or values is None:
                lost += 1
                continue
            released.append(overall)
            per = [0.0 if values[m] is None else 1 - abs(row.programmatic[m] - values[m]) for m in METRICS]
            published_rule.append(100 * sum(per) / len(per))
            matches += [1 - abs(row.programmatic[m] - values[m]) for m in METRICS if values[m] is not None]
        key = (PUBLISHED_KEY.get(judge, judge), gen, diff, condition)
        shown = printed.get((gen, key[0], diff, condition))
        value = statistics.fmean(published_rule) if published_rule else None
        out.append(
            {
                "generator": gen_name[gen],
                "judge": judge_name[judge],
                "difficulty": diff,
                "condition": condition,
                "rows": len(rows),
                "rows_lost": lost,
                "published_rule": value,
                "released_overall": statistics.fmean(released) if released else None,
                "ours_missing_excluded": 100 * statistics.fmean(matches) if matches else None,
                "printed": shown,
                "difference": None if shown is None or value is None else value - shown,
            }
        )
    return out


def _printed() -> dict[tuple[str, str, str, str], float]:
    import csv

    if not PUBLISHED.is_file():
        return {}
    with PUBLISHED.open(encoding="utf-8") as handle:
        return {
            (r["generator"], r["judge"], r["difficulty"], r["condition"]): float(r["alignment_pct"])
            for r in csv.DictReader(handle)
        }


def _write_cells(cells: list[dict[str, Any]], path: Path) -> None:
    import csv

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(cells[0]) if cells else ["generator"])
        writer.writeheader()
        writer.writerows(cells)


def _notes(summary: dict[str, Any], cells: list[dict[str, Any]]) -> list[str]:
    notes = [
        f"{summary['failure_rows']:,} failed graph executions (rows whose every field is None) counted, "
        "none turned into verdicts",
        f"{summary['judgments_lost_in_the_source']:,} judgments the source lost (null alignment): parse "
        f"failures of their judge; {summary['metrics_without_a_value']:,} metric verdicts without a value: "
        "failures of that metric",
        f"{summary['tasks_without_a_released_output']:,} generator tasks without a released output "
        "(absent, not judged)",
        f"{summary['rows_from_reruns']:,} rows taken from re-run files (their primary row had failed)",
    ]
    dis = summary["scorer_disagreements"]
    notes.append(
        f"our paper-mode scorer on the same calls vs the published programmatic scores: "
        f"{sum(dis['by_metric'].values()):,} metric disagreements on {dis['rows_compared']:,} judged rows "
        f"({dis['outputs_differing']:,} of {dis['outputs_compared']:,} outputs)"
    )
    if summary["queries_differing_from_the_records"]:
        notes.append(
            f"{summary['queries_differing_from_the_records']:,} judged queries differ from the records' text"
        )
    if summary["generator_outputs_differing_between_judge_files"]:
        notes.append(
            f"{summary['generator_outputs_differing_between_judge_files']:,} generator outputs differ "
            "between judge files (the first read is kept)"
        )
    with_printed = [c for c in cells if c["difference"] is not None]
    if with_printed:
        worst = max(with_printed, key=lambda c: abs(c["difference"]))
        notes.append(
            f"{len(with_printed)} cells beside the printed grid: largest difference "
            f"{worst['difference']:+.2f} pp ({worst['generator']} / {worst['judge']} / "
            f"{worst['difficulty']} / {worst['condition']})"
        )
    return notes
