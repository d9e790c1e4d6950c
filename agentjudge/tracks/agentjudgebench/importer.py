"""``agentjudge import agentjudgebench RELEASE --out RUNDIR``: the paper's released generator outputs and
judge verdicts as an ordinary run folder.

What it does, in order (nothing is left in RUNDIR unless every step succeeds: the folder is built beside
it and renamed at the end):

1. finds the release's files by their columns (``files.py``: the released dataset, or either
   layout of the publication pipeline's rows); the run's records are the release's own base records
   (``data/main/records.jsonl``), copied into the run folder, or ``--records``, which is then checked
   against the release's (differences counted);
2. streams every file, one row at a time, into ``imported.sqlite`` (``generators/replay.py``): each
   generator output (a task the release has no output for is absent), the published programmatic scores
   of it, and each verdict (a metric without a value stays None with the source's reason: a failure, never
   0 and never defaulted; a judgment the source lost is a parse failure of that judge). Re-runs of failed
   rows are merged the way the publication did (a judgment that succeeded wins over one that failed); the
   same output in several judge files is kept once (a disagreement is counted). Every judged row must name
   a record of the run's records; its query and GT calls are compared with the record's (counted). Only
   the running counts and the records' queries are held in memory, so the release's size does not set the
   import's memory;
3. recomputes every cell of the grid from the released verdicts under the publication's rule (a missing
   metric counts 0, lost judgments left out) and under ours (a missing metric left out), beside the printed
   value of ``data/published/`` (``imported_cells.csv``);
4. writes ``pipeline.yaml``: the generators and the judges as ``imported/<key>`` models with the paper's
   display names (a judge-specific baseline the paper ran beside its six, Prometheus-2, as
   ``imported-baseline/<key>``: shown apart from the six, never ranked or pooled), both GT conditions, the
   published prompt family and the paper-mode scorer; and runs it through the ordinary grid (offline), so
   every file of a run folder exists and ``report``, ``compare``, ``view``, ``human-sample`` and ``run
   --add-judge`` work on it;
5. compares our paper-mode scores of the released calls with the published programmatic scores (every
   disagreement counted) and writes ``import_summary.json``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentjudge.atomic import replacing_folder
from agentjudge.errors import InputError
from agentjudge.resources import data_dir
from agentjudge.tracks.agentjudgebench.files import (
    LOST,
    Failure,
    Found,
    Judged,
    Judgment,
    Output,
    Release,
    ReleaseError,
    read_judged,
    read_outputs,
    scan,
)
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
BASELINE_NAME = "Prometheus-2"  # any judge key naming prometheus: the paper's judge-specific baseline
GENERATOR_NAMES = {
    "llama_3_3_70b_instruct": "Llama-3.3-70B",
    "llama_3_1_8b_instruct": "Llama-3.1-8B",
    "qwen3_32b": "Qwen3-32B",
    "smollm3_3b": "SmolLM3-3B",
    "gpt_5_4": "GPT-5.4",
}
PUBLISHED_KEY = {"reranker_gemini": "gemini_2_5_pro"}  # the released files renamed the Gemini judge
PUBLISHED = data_dir() / "published" / "agentjudgebench_main_grid.csv"
RECORDS_FILE = "records.jsonl"  # the run's records, in the run folder
CONDITIONS = ("with_gt", "without_gt")  # the main grid's
DIFFICULTIES = ("easy", "medium", "hard")
ABSENT = "the publication released no output of this generator for this task (not judged there)"
UNREADABLE = "the publication's generated calls for this task cannot be read"


class ImportError_(InputError):  # noqa: N801 - ImportError is a builtin
    """Bad input to the importer: the message names the file, row and field."""


def is_baseline_judge(key: str) -> bool:
    return "prometheus" in key.lower()


def judge_name(key: str) -> str:
    return BASELINE_NAME if is_baseline_judge(key) else JUDGE_NAMES.get(key, key)


def import_release(
    release_dir: Path, records_path: Path | None, out: Path, progress: Any = None
) -> dict[str, Any]:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ImportError_(f"{out}: exists and is not empty; give a new folder for the imported run")
    release = scan(release_dir)
    try:
        release_records = release.records_file()
    except ReleaseError:
        if records_path is None:
            raise
        release_records = None  # several candidates: the given file is not compared with one of them
    _check_needs(release, release_dir, records_path or release_records)
    # built beside RUNDIR and renamed into place whole: an import that fails leaves nothing
    with replacing_folder(out) as work:
        return _build(work, release, records_path, release_records, progress)


def _check_needs(release: Release, folder: Path, records: Path | None) -> None:
    """Refuse (naming what is missing and the files that fit no kind) only when the import cannot run."""
    unknown = "".join(
        f"; {path}: columns {', '.join(columns[:12]) or '(none)'} fit no kind of file of the release"
        for path, columns in release.unrecognised[:5]
    )
    if not release.of("verdicts", "judged"):
        raise ImportError_(
            f"{folder}: no judge verdicts found: expected judge_<judge>.jsonl files of the released dataset "
            "(columns id, generator, difficulty, with_gt, without_gt) or the publication pipeline's output "
            "(<generator>/judged_by_<judge>/ folders, or judge_<judge>.jsonl rows with "
            f"generated_tool_calls and programmatic_judge_response){unknown}"
        )
    if release.of("verdicts") and not release.of("outputs"):
        raise ImportError_(
            f"{folder}: judge verdicts but no generator outputs found: expected files with columns id, "
            "difficulty, generated_tool_calls, score_tool_selection, score_parameter_structure, "
            f"score_sequence_accuracy, score_query_coverage (one set per generator){unknown}"
        )
    if records is None:
        raise ImportError_(
            f"{folder}: no base records found (the release keeps them in data/main/records.jsonl: columns "
            "id, dag_type, user_message, available_tools, expected_tool_calls); give them with --records"
        )


# --------------------------------------------------------------------------------------------- records
@dataclass
class Records:
    """What the import needs of the run's records: their ids, queries and GT calls (not the records)."""

    path: Path
    ids: list[str] = field(default_factory=list)
    queries: dict[str, dict[str, str]] = field(default_factory=dict)
    expected: dict[str, str] = field(default_factory=dict)  # id -> the GT calls as canonical JSON
    digests: dict[str, dict[str, str]] = field(default_factory=dict)  # id -> field -> digest


def read_index(path: Path) -> Records:
    """Every record of ``path`` parsed (bad records refused, naming file, line and field), one at a time."""
    from agentjudge.rundir.records import LayoutError, parse_line

    index = Records(path)
    seen: dict[str, int] = {}
    try:
        with path.open(encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                record = parse_line(line.removesuffix("\n"), path, lineno)
                if record.id in seen:
                    raise ImportError_(
                        f"{path}, line {lineno}, record {record.id!r}: field id: duplicate of line "
                        f"{seen[record.id]}"
                    )
                seen[record.id] = lineno
                index.ids.append(record.id)
                index.queries[record.id] = {str(d): q for d, q in record.queries.items()}
                expected = _canonical_calls((s.call.name, s.call.arguments) for s in record.gt)
                index.expected[record.id] = expected
                index.digests[record.id] = {
                    "dag_type": record.topology,
                    **{f"query_{d}": _digest(q) for d, q in record.queries.items()},
                    "available_tools": _digest(
                        json.dumps(
                            [[t.name, t.description, t.parameters] for t in record.tools], sort_keys=True
                        )
                    ),
                    "expected_tool_calls": _digest(expected),
                }
    except LayoutError as exc:
        raise ImportError_(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportError_(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None
    return index


def _canonical_calls(calls: Any) -> str:
    return json.dumps([[name, arguments] for name, arguments in calls], sort_keys=True, ensure_ascii=False)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def compare_records(given: Records, release: Records) -> dict[str, Any]:
    """The given records beside the release's: ids only in one, and records that differ, per field."""
    fields: Counter[str] = Counter()
    differing = []
    for rid in given.ids:
        theirs = release.digests.get(rid)
        if theirs is None:
            continue
        ours = given.digests[rid]
        changed = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))
        fields.update(changed)
        if changed:
            differing.append(rid)
    return {
        "given": str(given.path),
        "release": str(release.path),
        "records_given": len(given.ids),
        "records_in_release": len(release.ids),
        "only_in_given": len(set(given.ids) - set(release.ids)),
        "only_in_release": len(set(release.ids) - set(given.ids)),
        "differing": len(differing),
        "differing_fields": dict(sorted(fields.items())),
        "differing_examples": differing[:5],
    }


# --------------------------------------------------------------------------------------------- the store
class Store:
    """``imported.sqlite`` while it is written: one row at a time, in one transaction (the folder is
    thrown away whole if the import fails, so it is written without a journal)."""

    def __init__(self, path: Path) -> None:
        from agentjudge.generators.replay import SCHEMA

        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=OFF")
        self.conn.execute("PRAGMA synchronous=OFF")
        self.conn.executescript(SCHEMA)
        self.conn.execute("BEGIN")

    def output(
        self, generator: str, task: str, calls: list[dict[str, Any]] | None, absent: str | None
    ) -> str:
        """ "new", "same" (already held, equal) or "differs" (already held; the first is kept)."""
        text = json.dumps(calls) if calls is not None else None
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO predictions VALUES (?, ?, ?, ?)", (generator, task, text, absent)
        )
        if cur.rowcount:
            return "new"
        (held,) = self.conn.execute(
            "SELECT calls FROM predictions WHERE generator = ? AND record_id = ?", (generator, task)
        ).fetchone()
        return "same" if held == text else "differs"

    def reference(self, generator: str, task: str, copy: str, scores: dict[str, float]) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO reference VALUES (?, ?, ?, ?, ?, ?, ?)",
            (generator, task, copy, *(scores[m] for m in METRICS)),
        )

    def judged(self, judge: str, generator: str, task: str, with_gt: Judgment, without_gt: Judgment) -> str:
        """ "new"; "replaced" (the held with-GT judgment had failed, this one did not: the publication's
        re-run merge); or "repeated" (held already; this one is left out)."""
        rows = [
            (judge, generator, task, condition, _values(j), "", j.raw, j.problem, j.overall)
            for condition, j in (("with_gt", with_gt), ("without_gt", without_gt))
        ]
        insert = "INSERT {} INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        if self.conn.execute(insert.format("OR IGNORE"), rows[0]).rowcount:
            self.conn.execute(insert.format("OR REPLACE"), rows[1])
            return "new"
        (held,) = self.conn.execute(
            "SELECT verdicts FROM verdicts WHERE judge = ? AND generator = ? AND record_id = ? "
            "AND condition = 'with_gt'",
            (judge, generator, task),
        ).fetchone()
        if held is None and with_gt.values is not None:
            self.conn.executemany(insert.format("OR REPLACE"), rows)
            return "replaced"
        return "repeated"

    def fill_absent(self, generators: list[str], ids: list[str], difficulties: list[str]) -> int:
        """Every task without a released output, as absent (done, neither scored nor judged)."""
        before = self.conn.total_changes
        self.conn.executemany(
            "INSERT OR IGNORE INTO predictions VALUES (?, ?, NULL, ?)",
            ((g, f"{rid}:{d}", ABSENT) for g in generators for rid in ids for d in difficulties),
        )
        return self.conn.total_changes - before

    def close(self, meta: dict[str, Any]) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('release', ?)", (json.dumps(meta),))
        self.conn.execute("COMMIT")
        self.conn.close()


def _values(j: Judgment) -> str | None:
    return None if j.values is None else json.dumps(j.values)


# --------------------------------------------------------------------------------------------- building
@dataclass
class Tally:
    """The running counts of one import."""

    files: int = 0
    rows_read: Counter[str] = field(default_factory=Counter)  # per file
    failure_rows: Counter[tuple[str, str, str, str]] = field(
        default_factory=Counter
    )  # (file, gen, judge, diff)
    generators: dict[str, str] = field(default_factory=dict)  # key -> display name
    judges: dict[str, str] = field(default_factory=dict)
    difficulties: set[str] = field(default_factory=set)
    unknown_ids: dict[str, str] = field(default_factory=dict)  # id -> the first file naming it
    unknown_id_rows: int = 0
    output_conflicts: int = 0
    outputs_repeated: int = 0
    outputs_without_reference: int = 0
    query_mismatches: int = 0
    expected_mismatches: int = 0
    from_reruns: int = 0
    judged_repeated: int = 0
    judged_of_generators_without_outputs: Counter[str] = field(default_factory=Counter)


def _build(
    work: Path,
    release: Release,
    records_path: Path | None,
    release_records: Path | None,
    progress: Any,
) -> dict[str, Any]:
    from agentjudge.generators.replay import SOURCE_FILE
    from agentjudge.runner.run import run_pipeline

    source = records_path or release_records
    assert source is not None
    records = read_index(source)
    shutil.copyfile(source, work / RECORDS_FILE)
    check = (
        compare_records(records, read_index(release_records)) if records_path and release_records else None
    )
    store = Store(work / SOURCE_FILE)
    tally = Tally()
    for found in release.of("outputs"):
        _say(progress, f"reading {found.path} (generator outputs)")
        for item in read_outputs(found):
            tally.rows_read[str(found.path)] += 1
            if isinstance(item, Failure):
                tally.failure_rows[(item.file, item.generator, "(generator outputs)", item.difficulty)] += 1
            elif _known(item.id, found, records, tally):
                _put_output(store, tally, records, item, copy="")
        tally.files += 1
    # primary files first: a re-run only fills judgments its primary lost
    for found in sorted(release.of("verdicts", "judged"), key=lambda f: f.rerun):
        _say(progress, f"reading {found.path} (judge {found.judge})")
        for judged in read_judged(found):
            tally.rows_read[str(found.path)] += 1
            if isinstance(judged, Failure):
                tally.failure_rows[(judged.file, judged.generator, judged.judge, judged.difficulty)] += 1
            elif _known(judged.id, found, records, tally):
                _put_judged(store, tally, records, judged, found)
        tally.files += 1
    if tally.unknown_ids:
        rid, file = next(iter(tally.unknown_ids.items()))
        raise ImportError_(
            f"{file}: record id {rid!r} (and {len(tally.unknown_ids) - 1} more) is not in {source}; give "
            "the released base records the outputs were judged on"
        )
    names = list(tally.judges.values())
    if len(set(names)) != len(names):
        raise ImportError_(f"{release.root}: two judge files map to one judge name: {sorted(tally.judges)}")
    difficulties = [d for d in DIFFICULTIES if d in tally.difficulties]
    gens = sorted(tally.generators)
    absent = store.fill_absent([tally.generators[g] for g in gens], records.ids, difficulties)
    cells, counts = _cells(store.conn, tally)
    store.close({"layout": release.layout, "records": str(source)})
    del store
    judges = sorted(tally.judges)
    pipeline = {
        "name": "agentjudgebench-import",
        "description": "The AgentJudgeBench paper's released outputs and verdicts (agentjudge import).",
        "dataset": RECORDS_FILE,
        "difficulties": difficulties,
        "generators": [{"model": f"imported/{g}", "name": tally.generators[g]} for g in gens],
        "judges": [
            {
                "model": f"imported-baseline/{j}" if is_baseline_judge(j) else f"imported/{j}",
                "name": tally.judges[j],
            }
            for j in judges
        ],
        "conditions": list(CONDITIONS),
        "prompt_family": "paper",
        "scoring": "paper",
        "seed": 0,
    }
    import yaml

    (work / "pipeline.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False), encoding="utf-8")
    code = run_pipeline(work / "pipeline.yaml", work, progress=progress).exit_code  # the run's reporter
    if code != 0:
        raise ImportError_(f"the imported grid did not run cleanly (exit {code}); see the messages above")
    disagreements = _scorer_disagreements(work, work / SOURCE_FILE, tally)
    cells_path = work / "imported_cells.csv"
    _write_cells(cells, cells_path)
    failure_cells: Counter[str] = Counter()
    failure_files: Counter[str] = Counter()
    for (file, gen, judge, diff), n in tally.failure_rows.items():
        failure_cells[f"{tally.generators.get(gen, gen)} | {judge_name(judge)} | {diff}"] += n
        failure_files[file] += n
    summary = {
        "layout": release.layout,
        "files": tally.files,
        "rows_by_file": dict(sorted(tally.rows_read.items())),
        "files_unrecognised": [{"file": f, "columns": c} for f, c in release.unrecognised],
        "files_skipped_other_conditions": release.skipped,
        "records": {
            "file": str(source),
            "from": "--records" if records_path else "the release",
            "records": len(records.ids),
            "in_run_folder": RECORDS_FILE,
        },
        "records_check": check,
        "rows": counts["rows"],
        "judgments": 2 * counts["rows"],
        "generators": {g: tally.generators[g] for g in gens},
        "judges": {j: tally.judges[j] for j in judges},
        "baseline_judges": [tally.judges[j] for j in judges if is_baseline_judge(j)],
        "failure_rows": sum(tally.failure_rows.values()),
        "failure_rows_by_file": dict(sorted(failure_files.items())),
        "failure_rows_by_cell": dict(sorted(failure_cells.items())),
        "rows_from_reruns": tally.from_reruns,
        "judged_rows_repeated": tally.judged_repeated,
        "judgments_lost_in_the_source": counts["lost"],
        "judgments_unreadable": counts["unreadable"],
        "metrics_without_a_value": counts["missing_metrics"],
        "tasks_without_a_released_output": absent + counts["unreadable_outputs"],
        "judged_rows_without_a_readable_output": counts["judged_without_output"],
        "judged_rows_of_generators_without_outputs": dict(tally.judged_of_generators_without_outputs),
        "outputs_without_a_released_reference": tally.outputs_without_reference,
        "generator_outputs_differing_between_judge_files": tally.output_conflicts,
        "generator_outputs_repeated": tally.outputs_repeated,
        "queries_differing_from_the_records": tally.query_mismatches,
        "expected_calls_differing_from_the_records": tally.expected_mismatches,
        "scorer_disagreements": disagreements,
        "cells": len(cells),
    }
    summary["notes"] = _notes(summary, cells)
    (work / "import_summary.json").write_text(
        json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return summary


def _say(progress: Any, text: str) -> None:
    """A step of the import, to the caller's reporter (``runner.events``: the command line prints it)."""
    if progress is not None:
        from agentjudge.runner.events import Note

        progress.event(Note(text))


def _known(rid: str, found: Found, records: Records, tally: Tally) -> bool:
    if rid in records.queries:
        return True
    tally.unknown_ids.setdefault(rid, str(found.path))
    tally.unknown_id_rows += 1
    return False


def _put_output(store: Store, tally: Tally, records: Records, item: Output, copy: str) -> str:
    gen = tally.generators.setdefault(item.generator, GENERATOR_NAMES.get(item.generator, item.generator))
    task = f"{item.id}:{item.difficulty}"
    tally.difficulties.add(item.difficulty)
    status = store.output(gen, task, item.calls, None if item.calls is not None else UNREADABLE)
    tally.output_conflicts += status == "differs"
    if status != "new":
        tally.outputs_repeated += copy == "" and status == "same"
        return status
    expected = records.queries[item.id].get(item.difficulty)
    if item.query is not None and expected is not None and item.query.strip() != expected.strip():
        tally.query_mismatches += 1
    if item.expected is not None and _canonical_calls(item.expected) != records.expected[item.id]:
        tally.expected_mismatches += 1
    if copy == "":  # a released output's own scores (a pipeline row's copy is kept with its judgment)
        if item.reference is None:
            tally.outputs_without_reference += 1
        else:
            store.reference(gen, task, "", item.reference)
    return status


def _put_judged(store: Store, tally: Tally, records: Records, judged: Judged, found: Found) -> None:
    if judged.output is not None:  # a row of the pipeline: the output and its scores come with it
        _put_output(store, tally, records, judged.output, copy=judge_name(judged.judge))
    elif judged.generator not in tally.generators:  # no generator file has this generator's outputs
        tally.judged_of_generators_without_outputs[judged.generator] += 1
        return
    judge = tally.judges.setdefault(judged.judge, judge_name(judged.judge))
    gen = tally.generators[judged.generator]
    task = f"{judged.id}:{judged.difficulty}"
    tally.difficulties.add(judged.difficulty)
    status = store.judged(judge, gen, task, judged.with_gt, judged.without_gt)
    if status == "new":
        # a nullrerun row for an id the primary left as an id-less failure row (every field None, as the
        # pipeline writes them): it replaced that failure, as the published merge did
        tally.from_reruns += int(
            judged.rerun and not judged.with_gt.lost and "nullrerun" in found.path.name.lower()
        )
    elif status == "replaced":
        tally.from_reruns += int(judged.rerun)
    else:
        tally.judged_repeated += 1
    if status != "repeated" and judged.output is not None and judged.output.reference is not None:
        store.reference(gen, task, judge, judged.output.reference)


# --------------------------------------------------------------------------------------------- cells
@dataclass
class Cell:
    rows: int = 0
    lost: int = 0
    published: list[float] = field(default_factory=lambda: [0.0, 0.0])  # sum, n
    released: list[float] = field(default_factory=lambda: [0.0, 0.0])
    matches: list[float] = field(default_factory=lambda: [0.0, 0.0])
    without_reference: int = 0


def _cells(conn: sqlite3.Connection, tally: Tally) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Every (generator, judge, difficulty, condition) cell from the released verdicts, in one pass over
    the store; and the counts of judged rows, lost judgments and metrics without a value."""
    groups: dict[tuple[str, str, str, str], Cell] = defaultdict(Cell)
    counts = Counter[str]()
    query = """
        SELECT v.judge, v.generator, v.record_id, v.condition, v.verdicts, v.failure, v.overall,
               COALESCE(a.tool, b.tool), COALESCE(a.param, b.param), COALESCE(a.seq, b.seq),
               COALESCE(a.cov, b.cov)
        FROM verdicts v
        LEFT JOIN reference a ON a.generator = v.generator AND a.record_id = v.record_id AND a.copy = v.judge
        LEFT JOIN reference b ON b.generator = v.generator AND b.record_id = v.record_id AND b.copy = ''
    """
    for judge, gen, task, condition, verdicts, failure, overall, *ref in conn.execute(query):
        cell = groups[(gen, judge, task.rsplit(":", 1)[1], condition)]
        cell.rows += 1
        counts["rows"] += condition == "with_gt"
        if verdicts is None:
            cell.lost += 1
            counts["lost" if failure == LOST else "unreadable"] += 1
            continue
        values = json.loads(verdicts)
        counts["missing_metrics"] += sum(values[m] is None for m in METRICS)
        if overall is not None:
            cell.released[0] += overall
            cell.released[1] += 1
        if ref[0] is None:
            cell.without_reference += 1
            continue
        per = [
            0.0 if values[m] is None else 1 - abs(r - values[m]) for m, r in zip(METRICS, ref, strict=True)
        ]
        cell.published[0] += 100 * sum(per) / len(per)
        cell.published[1] += 1
        present = [1 - abs(r - values[m]) for m, r in zip(METRICS, ref, strict=True) if values[m] is not None]
        cell.matches[0] += sum(present)
        cell.matches[1] += len(present)
    counts["unreadable_outputs"] = conn.execute(
        "SELECT COUNT(*) FROM predictions WHERE calls IS NULL AND absent = ?", (UNREADABLE,)
    ).fetchone()[0]
    counts["judged_without_output"] = conn.execute(
        "SELECT COUNT(*) FROM verdicts v JOIN predictions p ON p.generator = v.generator "
        "AND p.record_id = v.record_id WHERE v.condition = 'with_gt' AND p.calls IS NULL"
    ).fetchone()[0]
    printed = _printed()
    gen_key = {name: key for key, name in tally.generators.items()}
    judge_key = {name: key for key, name in tally.judges.items()}
    out = []
    order = sorted(groups, key=lambda k: (gen_key[k[0]], judge_key[k[1]], k[2], k[3]))
    for gen, judge, diff, condition in order:
        cell = groups[(gen, judge, diff, condition)]
        jkey = judge_key[judge]
        shown = printed.get((gen_key[gen], PUBLISHED_KEY.get(jkey, jkey), diff, condition))
        value = cell.published[0] / cell.published[1] if cell.published[1] else None
        out.append(
            {
                "generator": gen,
                "judge": judge,
                "difficulty": diff,
                "condition": condition,
                "rows": cell.rows,
                "rows_lost": cell.lost,
                "published_rule": value,
                "released_overall": cell.released[0] / cell.released[1] if cell.released[1] else None,
                "ours_missing_excluded": 100 * cell.matches[0] / cell.matches[1] if cell.matches[1] else None,
                "printed": shown,
                "difference": None if shown is None or value is None else value - shown,
            }
        )
    return out, counts


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


# --------------------------------------------------------------------------------------------- reference
def _scorer_disagreements(work: Path, source: Path, tally: Tally) -> dict[str, Any]:
    """Our paper-mode scores of the released calls beside every copy of the published programmatic scores
    (a released output's own row; in the pipeline's layouts, each judge file's copy): per metric, how many
    copies differ by more than the published rounding (4 decimals), and how many outputs have one."""
    from agentjudge.rundir import RunFolder

    table = (
        RunFolder.open(work)
        .arrow("scores", columns=["generator", "record_id", "scoring_mode", *(f"p_{m}" for m in METRICS)])
        .to_pydict()
    )
    ours = {
        (g, r): tuple(table[f"p_{m}"][i] for m in METRICS)
        for i, (g, r, mode) in enumerate(
            zip(table["generator"], table["record_id"], table["scoring_mode"], strict=True)
        )
        if mode == "paper"
    }
    by_metric: Counter[str] = Counter()
    examples: list[str] = []
    compared: set[tuple[str, str]] = set()
    differing: set[tuple[str, str]] = set()
    rows_compared = 0
    names = {v: k for k, v in tally.generators.items()}
    conn = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    try:
        for gen, task, *published in conn.execute(
            "SELECT generator, record_id, tool, param, seq, cov FROM reference"
        ):
            mine = ours.get((gen, task))
            if mine is None:
                continue
            compared.add((gen, task))
            rows_compared += 1
            for metric, a, b in zip(METRICS, mine, published, strict=True):
                if abs(float(a) - b) > 5e-5:
                    by_metric[metric] += 1
                    differing.add((gen, task))
                    if len(examples) < 5:
                        examples.append(
                            f"{names.get(gen, gen)} {task} {metric}: ours {a:.4f}, published {b:.4f}"
                        )
    finally:
        conn.close()
    return {
        "outputs_compared": len(compared),
        "rows_compared": rows_compared,
        "outputs_differing": len(differing),
        "by_metric": dict(by_metric),
        "examples": examples,
    }


def _notes(summary: dict[str, Any], cells: list[dict[str, Any]]) -> list[str]:
    records = summary["records"]
    notes = [
        f"the run's records: {records['records']:,} from {records['from']} ({records['file']}), copied to "
        f"{records['in_run_folder']}",
        f"{summary['failure_rows']:,} failed graph executions (rows whose every field is None) counted, "
        "none turned into verdicts",
        f"{summary['judgments_lost_in_the_source']:,} judgments the source lost (null): parse failures of "
        f"their judge; {summary['metrics_without_a_value']:,} metric verdicts without a value: failures of "
        "that metric",
        f"{summary['tasks_without_a_released_output']:,} generator tasks without a released output "
        "(absent, not judged)",
        f"{summary['rows_from_reruns']:,} rows taken from re-run files (their primary row had failed)",
    ]
    check = summary["records_check"]
    if check is not None:
        notes.append(
            f"--records beside the release's records: {check['only_in_given']:,} only in the given file, "
            f"{check['only_in_release']:,} only in the release's, {check['differing']:,} differing"
            + (
                " (" + ", ".join(f"{k}: {v:,}" for k, v in check["differing_fields"].items()) + ")"
                if check["differing_fields"]
                else ""
            )
        )
    if summary["baseline_judges"]:
        notes.append(
            f"judge-specific baseline(s) {', '.join(summary['baseline_judges'])}: imported beside the "
            "judges, shown apart from them (never ranked, pooled, on the jury or in κ)"
        )
    for entry in summary["files_unrecognised"]:
        notes.append(f"left out: {entry['file']}: columns {', '.join(entry['columns'][:12])} fit no kind")
    if summary["judgments_unreadable"]:
        notes.append(f"{summary['judgments_unreadable']:,} judgments that cannot be read: parse failures")
    if summary["judged_rows_without_a_readable_output"]:
        notes.append(
            f"{summary['judged_rows_without_a_readable_output']:,} judged rows whose output the release does "
            "not have (or cannot be read): not judged here"
        )
    for gen, n in summary["judged_rows_of_generators_without_outputs"].items():
        notes.append(f"{n:,} judged rows of generator {gen}, which no file has outputs of: left out")
    dis = summary["scorer_disagreements"]
    notes.append(
        f"our paper-mode scorer on the same calls vs the published programmatic scores: "
        f"{sum(dis['by_metric'].values()):,} metric disagreements on {dis['rows_compared']:,} copies "
        f"({dis['outputs_differing']:,} of {dis['outputs_compared']:,} outputs)"
    )
    for key, what in (
        ("queries_differing_from_the_records", "released queries differ from the records' text"),
        ("expected_calls_differing_from_the_records", "released GT calls differ from the records'"),
        (
            "generator_outputs_differing_between_judge_files",
            "generator outputs differ between files (the first read is kept)",
        ),
        ("outputs_without_a_released_reference", "outputs without all four released score_ columns"),
    ):
        if summary[key]:
            notes.append(f"{summary[key]:,} {what}")
    with_printed = [c for c in cells if c["difference"] is not None]
    if with_printed:
        worst = max(with_printed, key=lambda c: abs(c["difference"]))
        notes.append(
            f"{len(with_printed)} cells beside the printed grid: largest difference "
            f"{worst['difference']:+.2f} pp ({worst['generator']} / {worst['judge']} / "
            f"{worst['difficulty']} / {worst['condition']})"
        )
    return notes
