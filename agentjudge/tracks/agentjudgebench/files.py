"""Reading the AgentJudgeBench release, one file at a time, whichever of its three layouts it has.

Files are found by their columns (the keys of their first row), wherever they sit under the folder given, not
by guessed names; the names and folders of the released files are only partly known. What a file is:

- **base records** (``id``, ``dag_type``, ``user_message``, ``available_tools``, ``expected_tool_calls``): the
  published record layout (``rundir/records.py``); the released dataset keeps them in
  ``data/main/records.jsonl``.
- **generator outputs** (``id``, ``difficulty``, ``generated_tool_calls`` and the four ``score_<metric>``
  columns; the released dataset has one set per generator): the calls a generator made for a task, with the
  published programmatic scores of them. The generator is a column when the file has one, else read from
  the file's name or folder (``gpt5_4`` and ``gpt_5_4`` are one generator).
- **judge verdicts** (``id``, ``generator``, ``difficulty``, ``with_gt``, ``without_gt``; the released
  dataset's ``judge_<key>.jsonl``): each condition an object, or the same object as a JSON string, keyed by
  metric (``tool_selection``, ``parameter_structure``, ``sequence_accuracy``, ``query_coverage``, or their
  ``_accuracy`` spellings), each holding the judge's ``llm_score`` (also spelled ``llm_accuracy`` or
  ``accuracy``) with other keys beside it, plus ``overall_alignment_pct``. A null condition is a judgment the
  source lost. The judge is the file's name after ``judge_`` (or a ``judge`` column).
- **judged rows of the pipeline** (``id``, ``generated_tool_calls``, ``programmatic_judge_response``,
  ``judge_response``, ``judge_response_no_gt``, …: the publication pipeline's ``output_map``), either in
  per-judge files that name the generator and difficulty in columns, or in the raw pipeline's folders
  ``<generator>/judged_by_<judge>/…`` whose files (a JSON array or JSON lines) are named after the
  difficulty (``judge_<gen>_<judge>_<diff>_output_<ts>.json``). Re-runs of failed rows (``nullrerun_*``) and
  resumed runs (``resume_*``) sit beside the primary output; folders of other conditions (``*_nogt_05``,
  ``c2_*``, ``c3_*``, ``corrupt*``, ``freeform*``) are counted and left out (the import takes the main grid).

A row whose every field is None is a failed graph execution (the pipeline could not even say which record it
was): the readers yield it as a ``Failure`` for its file and cell, never as a verdict. A JSON file whose
columns fit none of these kinds is listed with its columns (``Release.unrecognised``); a row that breaks its
file's kind is refused with a ``ReleaseError`` naming file, row and field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentjudge.errors import InputError
from agentjudge.types import METRICS

# metric -> its keys in a judgment, the released short one first; the pipeline's spelling second
METRIC_NAMES: dict[str, tuple[str, ...]] = {
    "tool": ("tool_selection", "tool_selection_accuracy"),
    "param": ("parameter_structure", "parameter_structure_accuracy"),
    "seq": ("sequence_accuracy", "sequence"),
    "cov": ("query_coverage", "query_coverage_accuracy"),
}
SCORE_COLUMNS: dict[str, str] = {m: f"score_{names[0]}" for m, names in METRIC_NAMES.items()}
VALUE_KEYS = ("llm_score", "llm_accuracy", "accuracy")  # the judge's value in a metric's entry
REASON_KEYS = ("justification", "reason", "error", "explanation")  # why, when the source says
GENERATOR_COLUMNS = ("generator", "generator_model", "generator_name", "gen_model", "model")
DIFFICULTY_COLUMNS = ("difficulty", "difficulty_level", "tier", "split")
RECORD_COLUMNS = frozenset({"id", "dag_type", "user_message", "available_tools", "expected_tool_calls"})
OUTPUT_COLUMNS = frozenset({"id", "generated_tool_calls", *SCORE_COLUMNS.values()})
VERDICT_COLUMNS = frozenset({"id", "with_gt", "without_gt"})
JUDGED_COLUMNS = frozenset({"id", "generated_tool_calls", "programmatic_judge_response"})
DIFFICULTY = re.compile(r"(?<![a-z])(easy|medium|hard)(?![a-z])", re.I)
OTHER_CONDITIONS = re.compile(r"(nogt_?05|^c2_|^c3_|corrupt|freeform)", re.I)
RERUN = re.compile(r"(nullrerun|resume)", re.I)
LOST = (
    "the publication has no verdict of this judge for this output (its judge call failed there: a null row)"
)
# the five generators' keys; the released configs spell GPT-5.4 "gpt5_4", the judge files "gpt_5_4"
GENERATOR_KEYS = ("llama_3_3_70b_instruct", "llama_3_1_8b_instruct", "qwen3_32b", "smollm3_3b", "gpt_5_4")
_GENERATOR_ALIASES = {
    "gpt5_4": "gpt_5_4",
    "llama_3_3_70b": "llama_3_3_70b_instruct",
    "llama_3_1_8b": "llama_3_1_8b_instruct",
}
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode  # a judgment's raw text, without json.dumps' wrapper
_GENERIC_STEM = re.compile(r"^(train|test|validation|data|part|default|\d+|.*\d+_of_\d+)$")


class ReleaseError(InputError):
    """A release file that is not what the importer reads; the message names file, row and fields."""


@dataclass(frozen=True)
class Found:
    """One file of the release and what it holds."""

    path: Path
    kind: str  # "records", "outputs", "verdicts" (released judge files) or "judged" (the pipeline's rows)
    judge: str | None = None
    generator: str | None = None  # from the path (raw pipeline folder; outputs without a generator column)
    difficulty: str | None = None  # raw pipeline: from the file's name
    rerun: bool = False


@dataclass
class Release:
    root: Path
    files: list[Found] = field(default_factory=list)
    unrecognised: list[tuple[str, list[str]]] = field(default_factory=list)  # (file, its columns)
    skipped: list[str] = field(default_factory=list)  # files of other conditions, left out

    def of(self, *kinds: str) -> list[Found]:
        return [f for f in self.files if f.kind in kinds]

    @property
    def layout(self) -> str:
        names = {"verdicts": "released dataset", "judged": "per-judge files"}
        found = []
        for f in self.files:
            name = "raw pipeline" if f.generator is not None and f.kind == "judged" else names.get(f.kind)
            if name and name not in found:
                found.append(name)
        return " + ".join(found) or "nothing"

    def records_file(self) -> Path | None:
        """The release's base records: ``data/main/records.jsonl`` when there, else the one records file."""
        records = [f.path for f in self.of("records")]
        for path in records:
            if path.parent.name == "main" and path.name == "records.jsonl":
                return path
        if len(records) > 1:
            raise ReleaseError(
                f"{self.root}: {len(records)} files of base records ({', '.join(map(str, records[:4]))}) "
                "and none at data/main/records.jsonl; give the one the outputs were judged on with --records"
            )
        return records[0] if records else None


@dataclass
class Judgment:
    """One judge's verdicts on one output under one condition."""

    values: dict[str, float | None] | None  # metric -> value (None: no value); None: no judgment at all
    problem: str | None  # why values is None, or which metrics have no value and why (the source's words)
    overall: float | None  # the source's per-row alignment figure (%), when it gives one
    raw: str
    lost: bool = False  # null in the source (a failed judge call), as opposed to unreadable


@dataclass
class Output:
    """A generator's released output for one task, with the published programmatic scores of it."""

    generator: str
    difficulty: str
    id: str
    calls: list[dict[str, Any]] | None  # None: the released calls cannot be read
    reference: dict[str, float] | None  # metric -> published programmatic score; None: not all four
    query: str | None
    expected: list[tuple[str, dict[str, Any]]] | None  # the released GT calls, when readable


@dataclass
class Judged:
    """One judge's judgments of one output (both conditions). Rows of the pipeline also carry the output
    and its programmatic scores; a released judge file's rows do not (``output`` is None)."""

    judge: str
    generator: str
    difficulty: str
    id: str
    with_gt: Judgment
    without_gt: Judgment
    output: Output | None
    rerun: bool


@dataclass(frozen=True)
class Failure:
    """A failed graph execution: a row whose every field is None (what it was about may be unknown too)."""

    file: str
    generator: str
    judge: str
    difficulty: str


# ----------------------------------------------------------------------------------------------- finding
def scan(folder: Path) -> Release:
    """Every file of the release under ``folder``, by kind; a ReleaseError when ``folder`` is not one."""
    if not folder.is_dir():
        raise ReleaseError(f"{folder}: not a folder")
    release = Release(root=folder)
    raw_dirs = sorted(
        p for base in (folder, folder / "data") for p in base.glob("*/judged_by_*") if p.is_dir()
    )
    in_raw: set[Path] = set()
    for judge_dir in raw_dirs:
        generator = judge_dir.parent.name
        judge = judge_dir.name.removeprefix("judged_by_")
        files = sorted(p for p in judge_dir.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file())
        in_raw.update(files)
        if OTHER_CONDITIONS.search(judge):
            release.skipped.append(str(judge_dir))
            continue
        for path in files:
            relative = str(path.relative_to(judge_dir))
            if path.name == "metadata.json" or OTHER_CONDITIONS.search(relative.replace("/", " /")):
                release.skipped.append(str(path))
                continue
            match = DIFFICULTY.search(relative)
            if match is None:
                raise ReleaseError(
                    f"{path}: no difficulty (easy, medium or hard) in its name or folder; the raw "
                    "pipeline names its outputs "
                    "judge_<generator>_<judge>_<difficulty>_output_<timestamp>.json"
                )
            release.files.append(
                Found(path, "judged", judge, generator, match.group(1).lower(), _rerun(path))
            )
    for path in sorted(_json_files(folder)):
        if path in in_raw:
            continue
        columns = _columns(path)
        kind = _kind(columns)
        if kind is None:
            release.unrecognised.append((str(path), sorted(columns)))
            continue
        key = path.stem.removeprefix("judge_") if kind in ("verdicts", "judged") else None
        named = _generator_of_path(path, folder) if kind == "outputs" else None
        release.files.append(Found(path, kind, key, named, rerun=_rerun(path)))
    return release


def _rerun(path: Path) -> bool:
    """A re-run of failed rows or a resumed run (named so, or in a folder named so)."""
    return bool(RERUN.search(path.name) or RERUN.search(path.parent.name))


def _json_files(folder: Path) -> Iterator[Path]:
    """JSON and JSON-lines files under ``folder``, outside hidden folders (a download's ``.cache``)."""
    for path in folder.rglob("*"):
        hidden = any(part.startswith(".") for part in path.relative_to(folder).parts)
        if path.suffix in (".json", ".jsonl") and not hidden and path.is_file():
            yield path


def _columns(path: Path, first: int = 20) -> set[str]:
    """The keys of a file's first rows (a JSON-lines file, a JSON array or one JSON object): a failed row
    may keep fewer keys than the others."""
    found: set[str] = set()
    with path.open(encoding="utf-8", errors="replace") as handle:
        if path.suffix == ".jsonl":
            seen = 0
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except ValueError as exc:
                    raise ReleaseError(f"{path}, line {number}: not valid JSON ({exc})") from None
                found |= set(value) if isinstance(value, dict) else set()
                seen += 1
                if seen == first:
                    break
            return found
        try:
            value = json.load(handle)
        except ValueError as exc:
            raise ReleaseError(f"{path}: not valid JSON ({exc})") from None
    for row in value[:first] if isinstance(value, list) else [value]:
        found |= set(row) if isinstance(row, dict) else set()
    return found


def _kind(columns: set[str]) -> str | None:
    if columns >= VERDICT_COLUMNS:
        return "verdicts"
    if columns >= JUDGED_COLUMNS:
        return "judged"
    if columns >= OUTPUT_COLUMNS:
        return "outputs"
    if columns >= RECORD_COLUMNS and "generated_tool_calls" not in columns:
        return "records"
    return None


def _canonical(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def generator_key(name: str) -> str:
    """One key per generator, however a file spells it (``gpt5_4``, ``GPT-5.4``, ``Llama-3.3-70B``, …)."""
    key = _canonical(name)
    return _GENERATOR_ALIASES.get(key, key)


def _generator_of_path(path: Path, root: Path) -> str:
    """A generator named in the file's name or one of its folders; else the file's name (or its folder's,
    when the name is a generic shard name such as ``train`` or ``data-00000-of-00001``)."""
    parts = [path.stem, *(p.name for p in path.parents if p != root and root in p.parents)]
    known = sorted({*GENERATOR_KEYS, *_GENERATOR_ALIASES}, key=len, reverse=True)
    for part in parts:
        text = _canonical(part)
        for name in known:
            if re.search(rf"(^|_){name}($|_)", text):
                return generator_key(name)
    stem = _canonical(path.stem)
    return generator_key(_canonical(path.parent.name) if _GENERIC_STEM.match(stem) else stem)


# ----------------------------------------------------------------------------------------------- reading
def rows(path: Path) -> Iterator[tuple[int, Any]]:
    """(row number from 1, value) of a JSON-lines file, streamed, or of a JSON array file."""
    if path.suffix == ".json":
        try:
            values = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ReleaseError(f"{path}: not valid JSON ({exc})") from None
        yield from enumerate(values if isinstance(values, list) else [values], start=1)
        return
    with path.open("rb") as handle:  # lines decoded one by one: an error names its line, not a read block
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ReleaseError(
                    f"{path}, line {number}, column {exc.start + 1}: not UTF-8 (save the file as UTF-8)"
                ) from None
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except ValueError as exc:
                raise ReleaseError(f"{path}, line {number}: not valid JSON ({exc})") from None


def read_outputs(found: Found) -> Iterator[Output | Failure]:
    """A file of generator outputs, row by row."""
    for number, value in rows(found.path):
        where = f"{found.path}, row {number}"
        if not isinstance(value, dict):
            raise ReleaseError(f"{where}: expected an object; found {type(value).__name__}")
        gen = _optional_column(value, GENERATOR_COLUMNS, where, "the generator") or found.generator
        assert gen is not None  # scan() names one from the path
        gen = generator_key(gen)
        if all(v is None for k, v in value.items() if k not in (*GENERATOR_COLUMNS, *DIFFICULTY_COLUMNS)):
            diff = _optional_column(value, DIFFICULTY_COLUMNS, where, "the difficulty")
            yield Failure(str(found.path), gen, "", (diff or "(unknown difficulty)").lower())
            continue
        diff = _difficulty(_column(value, DIFFICULTY_COLUMNS, where, "the difficulty"), where)
        yield Output(
            generator=gen,
            difficulty=diff,
            id=_id(value, where),
            calls=calls_of(value.get("generated_tool_calls")),
            reference=_scores(value),
            query=value.get("user_query") if isinstance(value.get("user_query"), str) else None,
            expected=_expected(value.get("expected_tool_calls")),
        )


def read_judged(found: Found) -> Iterator[Judged | Failure]:
    """A judge's file, row by row: the released verdict files and both layouts of the pipeline's rows."""
    assert found.judge is not None
    for number, value in rows(found.path):
        where = f"{found.path}, row {number}"
        if not isinstance(value, dict):
            raise ReleaseError(f"{where}: expected an object; found {type(value).__name__}")
        judge = _optional_column(value, ("judge",), where, "the judge") or found.judge
        if all(v is None for v in value.values()):  # a failed graph execution that names no cell at all
            yield Failure(
                str(found.path),
                found.generator or "(unknown generator)",
                judge,
                found.difficulty or "(unknown difficulty)",
            )
            continue
        gen = generator_key(found.generator or _column(value, GENERATOR_COLUMNS, where, "the generator"))
        diff_text = found.difficulty or _column(value, DIFFICULTY_COLUMNS, where, "the difficulty")
        if all(
            v is None for k, v in value.items() if k not in (*GENERATOR_COLUMNS, *DIFFICULTY_COLUMNS, "judge")
        ):
            yield Failure(str(found.path), gen, judge, diff_text.lower())
            continue
        diff = _difficulty(diff_text, where)
        if found.kind == "verdicts":
            yield Judged(
                judge,
                gen,
                diff,
                _id(value, where),
                judgment(value.get("with_gt")),
                judgment(value.get("without_gt")),
                None,
                found.rerun,
            )
            continue
        missing = [k for k in JUDGED_COLUMNS if k not in value]
        if missing:
            raise ReleaseError(
                f"{where}: fields {', '.join(sorted(missing))} missing; expected the publication's output "
                f"fields ({', '.join(sorted(JUDGED_COLUMNS))}, judge_response, judge_response_no_gt, …); "
                f"found {', '.join(sorted(value)[:12])}"
            )
        rid = _id(value, where)
        reference = _programmatic(value["programmatic_judge_response"], where)
        output = Output(
            gen,
            diff,
            rid,
            calls_of(value["generated_tool_calls"]),
            reference,
            value.get("user_message"),
            None,
        )
        yield Judged(
            judge,
            gen,
            diff,
            rid,
            _pipeline_judgment(value.get("judge_response"), value.get("overall_llm_alignment_percentage")),
            _pipeline_judgment(
                value.get("judge_response_no_gt"), value.get("overall_llm_alignment_percentage_no_gt")
            ),
            output,
            found.rerun,
        )


def _id(value: dict[str, Any], where: str) -> str:
    rid = value.get("id")
    if not isinstance(rid, str | int) or isinstance(rid, bool) or rid == "":
        raise ReleaseError(f"{where}: field id is {rid!r}; expected the record's id")
    return str(rid)


def _difficulty(text: str, where: str) -> str:
    diff = text.lower()
    if diff not in ("easy", "medium", "hard"):
        raise ReleaseError(f"{where}: difficulty {text!r}; expected easy, medium or hard")
    return diff


def _optional_column(value: dict[str, Any], names: tuple[str, ...], where: str, what: str) -> str | None:
    present = [n for n in names if n in value]
    for name in present:
        if isinstance(value[name], str) and value[name]:
            return str(value[name])
    if present and any(v is not None for k, v in value.items() if k not in names):
        raise ReleaseError(f"{where}: {what} ({present[0]}) is {value[present[0]]!r}, not a name")
    return None


def _column(value: dict[str, Any], names: tuple[str, ...], where: str, what: str) -> str:
    found = _optional_column(value, names, where, what)
    if found is None:
        raise ReleaseError(
            f"{where}: {what} is not a column of this file; expected one of {', '.join(names)}; "
            f"found {', '.join(sorted(value)[:12])}"
        )
    return found


# ----------------------------------------------------------------------------------------------- values
def parse_json_text(raw: Any) -> Any:
    """A JSON value from a string (fenced or after a think block, as the publication's parser allows), or
    the value itself."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if "</think>" in text:
        text = text.split("</think>")[-1].strip()
    text = re.sub(r"^```(?:json)?\s*\n?", "", text)
    text = re.sub(r"\n?```\s*$", "", text).strip()
    return json.loads(text)


def _call_list(raw: Any) -> list[tuple[str, dict[str, Any]]] | None:
    """[(name, arguments)] of a list of calls ({name, arguments}, OpenAI style {function: {…}}, arguments as
    a JSON string too, as a JSON string or inside {tool_calls: […]}); None when it cannot be read."""
    try:
        value = parse_json_text(raw)
    except ValueError:
        return None
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    if not isinstance(value, list):
        return None
    out = []
    for call in value:
        if not isinstance(call, dict):
            return None
        function = call.get("function")
        inner: dict[str, Any] = function if isinstance(function, dict) else call
        name = inner.get("name") or inner.get("tool_name")
        arguments = inner.get("arguments", inner.get("parameters", {}))
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                return None
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return None
        out.append((name, arguments))
    return out


def calls_of(raw: Any) -> list[dict[str, Any]] | None:
    """The generated calls as [{name, arguments}]; None when they cannot be read."""
    calls = _call_list(raw)
    return None if calls is None else [{"name": n, "arguments": a} for n, a in calls]


def _expected(raw: Any) -> list[tuple[str, dict[str, Any]]] | None:
    return None if raw is None else _call_list(raw)


def _scores(value: dict[str, Any]) -> dict[str, float] | None:
    out = {}
    for metric, column in SCORE_COLUMNS.items():
        number = _number(value.get(column))
        if number is None:
            return None
        out[metric] = number
    return out


def judgment(raw: Any, overall: Any = None) -> Judgment:
    """One condition of a judged row: an object of metrics (or that object as a JSON string), each metric
    an entry holding the judge's value, or the value itself; a null condition is a lost judgment."""
    if raw is None:
        return Judgment(None, LOST, None, "", lost=True)
    text = raw if isinstance(raw, str) else _ENCODE(raw)
    try:
        value = parse_json_text(raw)
    except ValueError as exc:
        return Judgment(None, f"the source's judgment is not JSON ({exc})", None, text)
    if not isinstance(value, dict):
        return Judgment(
            None, f"the source's judgment is {type(value).__name__}, not an object of metrics", None, text
        )
    values: dict[str, float | None] = {}
    problems = []
    for metric, names in METRIC_NAMES.items():
        key = next((n for n in names if n in value), None)
        if key is None:
            values[metric] = None
            problems.append(f"{metric}: no {names[0]} in the source's judgment")
            continue
        values[metric], problem = _metric_value(value[key])
        if problem:
            problems.append(f"{metric}: {problem}")
    released = _number(overall if overall is not None else value.get("overall_alignment_pct"))
    return Judgment(values, "; ".join(problems) or None, released, text)


def _metric_value(entry: Any) -> tuple[float | None, str | None]:
    """The judge's value for one metric, or None and why (the source's reason, when it gives one)."""
    if isinstance(entry, dict):
        key = next((k for k in VALUE_KEYS if k in entry), None)
        raw: Any = entry.get(key) if key is not None else None
        if type(raw) in (float, int) and 0.0 <= raw <= 1.0:  # the common case, checked first (643k × 4)
            return float(raw), None
        said = next((entry[k] for k in REASON_KEYS if isinstance(entry.get(k), str) and entry[k]), None)
        reason = f" (the source says: {said[:200]!r})" if said else ""
        if key is None:
            return None, f"no llm_score in {sorted(entry)}{reason}"
    else:
        key, raw, reason = "value", entry, ""
    if raw is None:
        return None, f"{key} is null{reason}"
    number = _number(raw)
    if number is None:
        return None, f"{key} is {raw!r}, not a number{reason}"
    if not 0.0 <= number <= 1.0:
        return None, f"{key} is {raw!r}, outside 0–1{reason}"
    return number, None


def _pipeline_judgment(raw: Any, overall: Any) -> Judgment:
    """A judgment of the pipeline's rows: lost when its alignment is null (the publication's marker of a
    failed judge call, whatever text the response field kept)."""
    if _number(overall) is None:
        return Judgment(None, LOST, None, _text(raw), lost=True)
    return judgment(raw, overall)


def _programmatic(raw: Any, where: str) -> dict[str, float]:
    try:
        value = parse_json_text(raw)
    except ValueError:
        value = None
    out = {}
    if isinstance(value, dict):
        for metric, names in METRIC_NAMES.items():
            entry = next((value[n] for n in (names[1], names[0]) if n in value), None)
            number = _number(entry.get("accuracy") if isinstance(entry, dict) else None)
            if number is not None:
                out[metric] = number
    if len(out) != len(METRICS):
        keys = ", ".join(names[1] for names in METRIC_NAMES.values())
        raise ReleaseError(
            f"{where}: field programmatic_judge_response: expected {{{keys}: {{accuracy}}}}; "
            f"found {str(raw)[:120]!r}"
        )
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
