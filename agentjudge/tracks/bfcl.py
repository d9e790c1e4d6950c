"""`agentjudge import bfcl`: real, human-written BFCL tasks as records in the published layout.

BFCL (the Berkeley Function Calling Leaderboard) ships two JSON Lines files per category, joined on ``id``:
the tasks (``question`` turns and ``function`` declarations in BFCL's own type names) and the accepted
answers (per call, per parameter, every value a checker accepts; ``""`` among them means the parameter may
be left out). This module turns one pair into ``Record`` objects and writes them with the project's own
writer, so everything downstream (gates, generators, scorer, judges, report) reads them like any record.

What an imported record is, and is not:
- ``source="imported"``, ``origin="bfcl/<category>"``, ``human_query=True``: its one query is the user's
  own words (stored in the layout's ``user_message`` slot, which ``Record.queries`` calls ``easy``); no
  easy/medium/hard rewrites are made.
- tools: BFCL types mapped to JSON Schema (dict→object, float→number, tuple→array, any→no type
  constraint); where the declared name differs from the JSON Schema one it is kept as ``"x-bfcl-type"``.
- GT: per argument the FIRST accepted value (an argument whose first accepted value is ``""`` is left out
  of the GT call); every accepted value is kept in ``GTStep.accepted`` (the scorer's p_value and the gates
  read it). Outputs are None: there is no executable environment, so ``state_match`` is None.
- ``dag_type``: one call → ``linear`` (a one-step chain); several calls in one turn (BFCL "parallel"),
  which are independent of each other → ``fan_out``, with no dependency edges.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from agentjudge import strict_json
from agentjudge.dataset.resolve import is_nested_alternative
from agentjudge.errors import InputError
from agentjudge.rundir.records import json_object_line
from agentjudge.types import GTStep, Record, Strict, ToolCall, ToolSchema, Topology

# BFCL type name -> JSON Schema type name (None: no type constraint at all)
BFCL_TYPES: dict[str, str | None] = {
    "dict": "object",
    "float": "number",
    "tuple": "array",
    "any": None,
    "integer": "integer",
    "string": "string",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
    "number": "number",
    "null": "null",
}
DECLARED_TYPE_KEY = "x-bfcl-type"
_SCHEMA_CHILDREN = ("items", "additionalProperties")


class BfclError(InputError):
    """Input that cannot be imported; the message names file, line, task id and field."""


class BfclMessage(Strict):
    role: Literal["system", "user", "assistant"]
    content: str


class BfclFunction(Strict):
    name: str
    description: str = ""
    parameters: dict[str, Any]


class BfclTask(Strict):
    id: str
    question: list[list[BfclMessage]]
    function: list[BfclFunction]


class BfclAnswer(Strict):
    id: str
    ground_truth: list[dict[str, dict[str, list[Any]]]]


# ---------------------------------------------------------------- schemas


def to_json_schema(schema: Any, field: str) -> Any:
    """One BFCL parameter schema → JSON Schema, recursively; raises ``ValueError("field: ...")``."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            if not isinstance(value, str) or value not in BFCL_TYPES:
                raise ValueError(f"{field}.type: unknown BFCL type {value!r}")
            mapped = BFCL_TYPES[value]
            if mapped is not None:
                out["type"] = mapped
            if mapped != value:
                out[DECLARED_TYPE_KEY] = value
        elif key == "properties" and isinstance(value, dict):
            out[key] = {n: to_json_schema(sub, f"{field}.properties.{n}") for n, sub in value.items()}
        elif key in _SCHEMA_CHILDREN:
            out[key] = to_json_schema(value, f"{field}.{key}")
        else:
            out[key] = value
    items = out.get("items")
    if out.get("type") == "array" and "enum" in out and isinstance(items, dict) and "enum" not in items:
        # BFCL puts the allowed item values of a list on the list; JSON Schema wants them on the items
        out["items"] = {**items, "enum": out.pop("enum")}
    return out


# ---------------------------------------------------------------- accepted values


def first_value(alternative: Any) -> Any:
    """The concrete value an accepted alternative stands for, taking the first choice at every level."""
    if is_nested_alternative(alternative):
        return {k: first_value(alts[0]) for k, alts in alternative.items() if alts[0] != ""}
    if isinstance(alternative, list):
        return [first_value(item) for item in alternative]
    return alternative


def _gt_step(call: dict[str, dict[str, list[Any]]], field: str) -> GTStep:
    if len(call) != 1:
        raise ValueError(f"{field}: one function name per call, got {sorted(call)}")
    ((name, params),) = call.items()
    arguments: dict[str, Any] = {}
    for param, alternatives in params.items():
        if not alternatives:
            raise ValueError(f"{field}.{name}.{param}: no accepted value")
        if alternatives[0] != "":
            arguments[param] = first_value(alternatives[0])
    return GTStep(call=ToolCall(name=name, arguments=arguments), output=None, accepted=params)


# ---------------------------------------------------------------- records


def to_record(task: BfclTask, answer: BfclAnswer, category: str) -> Record:
    """One BFCL task and its accepted answers → a Record; ``ValueError("field: ...")`` when they disagree."""
    users = [m.content for turn in task.question for m in turn if m.role == "user"]
    systems = [m.content for turn in task.question for m in turn if m.role == "system"]
    if not users or not any(u.strip() for u in users):
        raise ValueError("question: no user turn with text")
    if not answer.ground_truth:
        raise ValueError("ground_truth: no expected call")
    tools = [
        ToolSchema(
            name=f.name,
            description=f.description,
            parameters=to_json_schema(f.parameters, f"function[{i}].parameters"),
        )
        for i, f in enumerate(task.function)
    ]
    gt = [_gt_step(call, f"ground_truth[{i}]") for i, call in enumerate(answer.ground_truth)]
    topology: Topology = "linear" if len(gt) == 1 else "fan_out"
    return Record(
        id=task.id,
        domain=f"bfcl_{category}",
        scenario=f"BFCL v4 {category} task {task.id} (human-written)",
        topology=topology,
        queries={"easy": "\n".join(u for u in users if u.strip())},
        system_prompt="\n".join(systems),
        tools=tools,
        gt=gt,
        source="imported",
        origin=f"bfcl/{category}",
        human_query=True,
    )


def _read_lines(path: Path, model: type[Strict]) -> list[tuple[int, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BfclError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None
    items: list[tuple[int, Any]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        raw, where = json_object_line(line, path, lineno, "task", BfclError)
        try:
            items.append((lineno, model.model_validate(raw)))
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
            more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
            raise BfclError(f"{where}: field {loc or '(line)'}: {err['msg']}{more}") from None
    if not items:
        raise BfclError(f"{path}: no lines")
    return items


def category_of(tasks: Path) -> str:
    """``BFCL_v4_live_multiple.json`` → ``live_multiple``."""
    stem = tasks.name.removesuffix(".json").removesuffix(".jsonl")
    parts = stem.split("_", 2)
    return parts[2] if len(parts) == 3 and parts[0] == "BFCL" else stem


def import_bfcl(tasks: Path, answers: Path, category: str | None = None) -> list[Record]:
    """Every task of ``tasks`` joined with its line in ``answers``, in the task file's order."""
    category = category or category_of(tasks)
    task_lines = _read_lines(tasks, BfclTask)
    answer_lines = _read_lines(answers, BfclAnswer)
    by_id: dict[str, tuple[int, BfclAnswer]] = {}
    for lineno, ans in answer_lines:
        if ans.id in by_id:
            raise BfclError(
                f"{answers}, line {lineno}, task {ans.id!r}: field id: duplicate of line {by_id[ans.id][0]}"
            )
        by_id[ans.id] = (lineno, ans)
    records: list[Record] = []
    seen: dict[str, int] = {}
    for lineno, task in task_lines:
        if task.id in seen:
            raise BfclError(
                f"{tasks}, line {lineno}, task {task.id!r}: field id: duplicate of line {seen[task.id]}"
            )
        seen[task.id] = lineno
        found = by_id.get(task.id)
        if found is None:
            raise BfclError(
                f"{tasks}, line {lineno}, task {task.id!r}: field id: no line in {answers} has this id"
            )
        try:
            records.append(to_record(task, found[1], category))
        except ValidationError as exc:
            err = exc.errors()[0]
            raise BfclError(
                f"{tasks}, line {lineno}, task {task.id!r}: field {err['loc']}: {err['msg']}"
            ) from None
        except ValueError as exc:
            file = answers if str(exc).startswith("ground_truth") else tasks
            line = found[0] if file == answers else lineno
            raise BfclError(f"{file}, line {line}, task {task.id!r}: field {exc}") from None
    orphans = sorted(set(by_id) - set(seen))
    if orphans:
        lineno = by_id[orphans[0]][0]
        raise BfclError(
            f"{answers}, line {lineno}, task {orphans[0]!r}: field id: no task in {tasks} has this id"
            + (f" (and {len(orphans) - 1} more)" if len(orphans) > 1 else "")
        )
    return records


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def import_manifest(
    records: list[Record], tasks: Path, answers: Path, category: str, text: str
) -> dict[str, Any]:
    calls = Counter(len(r.gt) for r in records)
    return {
        "source": "imported",
        "origin": f"bfcl/{category}",
        "inputs": {
            "tasks": {"file": tasks.name, "sha256": _sha256(tasks)},
            "answers": {"file": answers.name, "sha256": _sha256(answers)},
        },
        "n_records": len(records),
        "counts": {
            "dag_type": dict(sorted(Counter(r.topology for r in records).items())),
            "calls_per_record": {str(k): v for k, v in sorted(calls.items())},
            "optional_arguments": sum(
                1 for r in records for s in r.gt for alts in (s.accepted or {}).values() if "" in alts
            ),
        },
        "environment": None,  # no executable tools: state_match is None for every prediction
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }


@dataclass(frozen=True)
class Imported:
    """What ``import_files`` wrote: OUT/records.jsonl and OUT/manifest.json, and how many records will fail
    ``agentjudge validate`` (an answer its query does not ground, or one that breaks its own schema)."""

    records_path: Path
    category: str
    records: int
    manifest: dict[str, Any]
    failing_validation: int


def import_files(tasks: Path, answers: Path, out: Path, category: str | None) -> Imported:
    """BFCL's task and answer files as records in the published layout; a bad file raises ``BfclError``
    before anything is written."""
    from agentjudge.atomic import write_texts
    from agentjudge.dataset.validate import check_records
    from agentjudge.rundir.records import dumps_record, records_text

    name = category or category_of(tasks)
    records = import_bfcl(tasks, answers, name)
    text = records_text(dumps_record(r) for r in records)
    manifest = import_manifest(records, tasks, answers, name, text)
    manifest_text = strict_json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    write_texts({out / "records.jsonl": text, out / "manifest.json": manifest_text})  # both or neither
    failing = sum(not report.passed for report in check_records(records, processes=1))
    return Imported(out / "records.jsonl", name, len(records), manifest, failing)
