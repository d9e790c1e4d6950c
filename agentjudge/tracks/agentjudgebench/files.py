"""Reading the AgentJudgeBench release: the raw pipeline layout and the per-judge files, into one shape.

Two layouts are accepted, detected from the folder:

- **raw pipeline**: ``<generator>/judged_by_<judge>/…/*.json`` (a JSON array) or ``*.jsonl``, the file or
  its folder named after the difficulty (``judge_<gen>_<judge>_<diff>_output_<ts>.json``); re-runs of failed
  rows (``nullrerun_*``) and resumed runs (``resume_*``) sit beside the primary output. Folders of other
  conditions (``judged_by_<judge>_nogt_05``, ``c2_*``, ``c3_*``, ``corrupt*``, ``freeform*``) are counted
  and left out: the import takes the main grid (with / without GT).
- **per-judge files**: ``judge_<judge>.jsonl`` (the released dataset: one file per judge), whose rows
  carry the generator and the difficulty as columns.

Each row's fields are those of the publication pipeline's ``output_map``: ``id`` (``<dag_type>_<hex>``,
shared by the three difficulties), ``dag_type``, ``user_message`` (the query at that difficulty),
``generated_tool_calls`` (a list or a JSON string), ``judge_response`` / ``judge_response_no_gt`` (per
metric ``{accuracy, justification}`` under the published keys), ``programmatic_judge_response``,
``overall_llm_alignment_percentage[_no_gt]``. A row whose every field is None is a failed graph execution
(the pipeline could not even say which record it was): it is counted for its file and cell, never turned into
a verdict. Anything else a file holds that is not such a row is refused, naming the file, the row and the
fields expected and found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentjudge.judges.llm import PAPER_METRIC_KEYS
from agentjudge.types import METRICS

# the published output keys (the paper prompt family asks for the same) -> our metric names
METRIC_KEYS: dict[str, str] = dict(zip(PAPER_METRIC_KEYS, METRICS, strict=True))
REQUIRED = ("id", "generated_tool_calls", "programmatic_judge_response")
GENERATOR_COLUMNS = ("generator", "generator_model", "generator_name", "gen_model", "model")
DIFFICULTY_COLUMNS = ("difficulty", "difficulty_level", "tier", "split")
DIFFICULTY = re.compile(r"(?<![a-z])(easy|medium|hard)(?![a-z])", re.I)
OTHER_CONDITIONS = re.compile(r"(nogt_?05|^c2_|^c3_|corrupt|freeform)", re.I)
RERUN = re.compile(r"(nullrerun|resume)", re.I)


class ReleaseError(ValueError):
    """A release file that is not what the importer reads; the message names file, row and fields."""


@dataclass
class Row:
    """One judged generator output, as the release has it."""

    generator: str
    judge: str
    difficulty: str
    id: str
    dag_type: str | None
    user_message: str | None
    calls: list[dict[str, Any]] | None  # None: the generated calls could not be read
    with_gt: dict[str, Any] | None  # metric -> verdict or None; None: no judge response
    without_gt: dict[str, Any] | None
    programmatic: dict[str, float]
    overall_with: float | None
    overall_without: float | None
    raw_with: str
    raw_without: str
    file: str
    rerun: bool


@dataclass
class Release:
    rows: list[Row] = field(default_factory=list)
    layout: str = ""
    files: int = 0
    failure_rows: dict[tuple[str, str, str, str], int] = field(
        default_factory=dict
    )  # (file, gen, judge, diff)
    skipped: list[str] = field(default_factory=list)  # files of other conditions, left out


def read_release(folder: Path) -> Release:
    """Every row of the release in ``folder``; a ReleaseError when the folder is neither layout."""
    if not folder.is_dir():
        raise ReleaseError(f"{folder}: not a folder")
    per_judge = sorted(folder.glob("judge_*.jsonl"))
    if not per_judge and (folder / "data").is_dir():  # the download's root: its files are in data/
        per_judge = sorted((folder / "data").glob("judge_*.jsonl"))
    raw = sorted(p for p in folder.glob("*/judged_by_*") if p.is_dir())
    release = Release()
    if per_judge:
        release.layout = "per-judge files"
        for path in per_judge:
            judge = path.stem.removeprefix("judge_")
            _read_file(path, release, judge=judge, generator=None, difficulty=None)
    elif raw:
        release.layout = "raw pipeline"
        for judge_dir in raw:
            generator = judge_dir.parent.name
            judge = judge_dir.name.removeprefix("judged_by_")
            if OTHER_CONDITIONS.search(judge):
                release.skipped.append(str(judge_dir))
                continue
            files = sorted(p for p in judge_dir.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file())
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
                _read_file(path, release, judge=judge, generator=generator, difficulty=match.group(1).lower())
    else:
        found = sorted(p.name for p in folder.iterdir())[:8]
        raise ReleaseError(
            f"{folder}: neither layout of the AgentJudgeBench release: expected judge_<judge>.jsonl files "
            "(the released dataset) or <generator>/judged_by_<judge>/ folders (the raw pipeline); found "
            + (", ".join(found) or "nothing")
        )
    if not release.rows:
        raise ReleaseError(f"{folder}: no judged rows in {release.files} file(s)")
    return release


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    """(row number from 1, value) of a JSON array file or a JSONL file."""
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if path.suffix == ".json" and stripped.startswith("["):
        try:
            values = json.loads(text)
        except ValueError as exc:
            raise ReleaseError(f"{path}: not valid JSON ({exc})") from None
        yield from enumerate(values, start=1)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            raise ReleaseError(f"{path}, line {number}: not valid JSON ({exc})") from None


def _read_file(
    path: Path, release: Release, *, judge: str, generator: str | None, difficulty: str | None
) -> None:
    release.files += 1
    rerun = bool(RERUN.search(path.name)) or bool(RERUN.search(path.parent.name))
    for number, value in _records(path):
        where = f"{path}, row {number}"
        if not isinstance(value, dict):
            raise ReleaseError(
                f"{where}: expected an object with {', '.join(REQUIRED)}; found {type(value).__name__}"
            )
        if all(v is None for v in value.values()):  # a failed graph execution that names no cell at all
            key = (str(path), generator or "(unknown generator)", judge, difficulty or "(unknown difficulty)")
            release.failure_rows[key] = release.failure_rows.get(key, 0) + 1
            continue
        gen = generator or _column(value, GENERATOR_COLUMNS, where, "the generator")
        diff = difficulty or _column(value, DIFFICULTY_COLUMNS, where, "the difficulty").lower()
        if all(v is None for k, v in value.items() if k not in (*GENERATOR_COLUMNS, *DIFFICULTY_COLUMNS)):
            key = (str(path), gen, judge, diff)
            release.failure_rows[key] = release.failure_rows.get(key, 0) + 1
            continue
        missing = [k for k in REQUIRED if k not in value]
        if missing:
            raise ReleaseError(
                f"{where}: fields {', '.join(missing)} missing; expected the publication's output fields "
                f"({', '.join(REQUIRED)}, judge_response, judge_response_no_gt, …); "
                f"found {', '.join(sorted(value)[:12])}"
            )
        if diff not in ("easy", "medium", "hard"):
            raise ReleaseError(f"{where}: difficulty {diff!r}; expected easy, medium or hard")
        release.rows.append(
            Row(
                generator=gen,
                judge=judge,
                difficulty=diff,
                id=str(value["id"]),
                dag_type=value.get("dag_type"),
                user_message=value.get("user_message"),
                calls=_calls(value.get("generated_tool_calls")),
                with_gt=_verdicts(value.get("judge_response")),
                without_gt=_verdicts(value.get("judge_response_no_gt")),
                programmatic=_programmatic(value["programmatic_judge_response"], where),
                overall_with=_number(value.get("overall_llm_alignment_percentage")),
                overall_without=_number(value.get("overall_llm_alignment_percentage_no_gt")),
                raw_with=_text(value.get("judge_response")),
                raw_without=_text(value.get("judge_response_no_gt")),
                file=str(path),
                rerun=rerun,
            )
        )


def _column(value: dict[str, Any], names: tuple[str, ...], where: str, what: str) -> str:
    for name in names:
        if isinstance(value.get(name), str) and value[name]:
            return str(value[name])
    present = [n for n in names if n in value]
    if present:
        raise ReleaseError(f"{where}: {what} ({present[0]}) is {value[present[0]]!r}, not a name")
    raise ReleaseError(
        f"{where}: {what} is not a column of this per-judge file; expected one of {', '.join(names)}; "
        f"found {', '.join(sorted(value)[:12])}"
    )


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


def _calls(raw: Any) -> list[dict[str, Any]] | None:
    """The generated calls as [{name, arguments}] (OpenAI-style {function: {name, arguments}} accepted,
    arguments as a JSON string too); None when they cannot be read."""
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
        out.append({"name": name, "arguments": arguments})
    return out


def _verdicts(raw: Any) -> dict[str, Any] | None:
    """metric -> the judge's accuracy (None where the response has no number for it); None: no response."""
    try:
        value = parse_json_text(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    out: dict[str, Any] = {}
    for key, metric in METRIC_KEYS.items():
        entry = value.get(key)
        number = entry.get("accuracy") if isinstance(entry, dict) else None
        out[metric] = _number(number)
    return out


def _programmatic(raw: Any, where: str) -> dict[str, float]:
    try:
        value = parse_json_text(raw)
    except ValueError:
        value = None
    out = {}
    if isinstance(value, dict):
        for key, metric in METRIC_KEYS.items():
            entry = value.get(key)
            number = _number(entry.get("accuracy") if isinstance(entry, dict) else None)
            if number is not None:
                out[metric] = number
    if len(out) != len(METRIC_KEYS):
        raise ReleaseError(
            f"{where}: field programmatic_judge_response: expected "
            f"{{{', '.join(METRIC_KEYS)}: {{accuracy}}}}; found {str(raw)[:120]!r}"
        )
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
