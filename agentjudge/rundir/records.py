"""The published record layout ⇄ ``Record``.

One base scenario per JSONL line, with the AgentJudgeBench field names (``id``, ``dag_type``,
``user_message`` …) so files move between this project and the published dataset unchanged, plus our own
optional fields (``domain``, ``dependency_edges``, ``step_outputs`` …) that make the trace checkable.
A published file without our fields still reads: outputs come from its tool turns, dependencies stay
unknown (Gate 1 then skips the shape check), and BFCL-style ``"type": "dict"`` parameters are normalised
to JSON Schema's ``"object"``. Writing always emits valid JSON Schema, atomically and byte-stable.

Both spellings the published files use are read: an assistant turn's ``tool_calls`` as a list or as a JSON
string, a call's ``arguments`` as an object or as a JSON string. Our own files always write lists and
objects, because the published scoring code reads ``expected_responses`` and calls ``.keys()`` on each
call's ``arguments`` (it crashes on a JSON string). What our model does not hold -- the source's spelling
(strings, ``"dict"`` types), assistant text turns, which top-level keys a line had -- is kept verbatim in
``Record.source_layout`` (and in our files' ``source_layout`` field), so ``to_published(record,
layout="published")`` gives back the source line: lossless in both directions. A verbatim part is used only
while it still says what the record says (same tools, calls and outputs); an edited record is written from
its own content.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError, field_validator

from agentjudge import strict_json
from agentjudge.errors import InputError
from agentjudge.memo import exact_key
from agentjudge.types import (
    Difficulty,
    GTStep,
    Record,
    Source,
    Strict,
    ToolCall,
    ToolSchema,
    Topology,
    ValidationReport,
)

Status = Literal["OK", "FAILED"]
_TYPE_ALIASES = {
    "dict": "object",
    "float": "number",
    "tuple": "array",
    "int": "integer",
    "str": "string",
    "bool": "boolean",
    "list": "array",
}


class LayoutError(InputError):
    """A file that is not in the published layout; the message names file, line, record id and field."""


class PublishedFunction(Strict):
    name: str
    description: str = ""
    parameters: dict[str, Any]


class PublishedTool(Strict):
    type: Literal["function"] = "function"
    function: PublishedFunction


def _json_object(value: Any) -> Any:
    """``arguments`` as published: an object, or a JSON string holding one (OpenAI chat style)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError as exc:
            raise ValueError(f"a JSON string that does not parse ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError(f"a JSON string holding {type(value).__name__}, not an object")
    return value


class PublishedCall(Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    _args = field_validator("arguments", mode="before")(_json_object)


class CallFunction(Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)  # read from an object or a JSON string

    _args = field_validator("arguments", mode="before")(_json_object)


class ResponseToolCall(Strict):
    id: str
    type: Literal["function"] = "function"
    function: CallFunction


class AssistantTurn(Strict):
    role: Literal["assistant"]
    content: str | None = None
    tool_calls: list[ResponseToolCall] | None = None  # read from a list or a JSON string holding one

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _calls_from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else []
            except ValueError as exc:
                raise ValueError(f"a JSON string that does not parse ({exc})") from None
        return value


class ToolTurn(Strict):
    role: Literal["tool"]
    tool_call_id: str
    name: str
    content: Any  # a string as published (JSON text or prose); objects are accepted too


Turn = Annotated[AssistantTurn | ToolTurn, Field(discriminator="role")]
_TURNS: TypeAdapter[list[Turn]] = TypeAdapter(list[Turn])


class PublishedRecord(Strict):
    """One JSONL line. Field order here is the order written."""

    id: str
    dag_type: Topology
    user_message: str
    query_medium: str | None = None
    query_hard: str | None = None
    rewrite_medium_status: Status | None = None
    rewrite_hard_status: Status | None = None
    system_prompt: str = ""
    available_tools: list[PublishedTool]
    expected_tool_calls: list[PublishedCall]
    expected_responses: list[Turn] = Field(default_factory=list)
    # ours (absent from published files)
    domain: str | None = None
    scenario: str | None = None
    dependency_edges: list[tuple[int, int]] | None = None
    step_outputs: list[Any] | None = None
    step_descriptions: list[str] | None = None
    tool_returns: dict[str, dict[str, Any]] | None = None
    condition_holds: bool | None = None
    seed: int | None = None
    version: str | None = None
    validation: ValidationReport | None = None
    # ours, written only for imported records (so synthetic files keep their bytes)
    source: Source | None = None
    origin: str | None = None
    human_query: bool | None = None
    gt_known: bool | None = None  # false: no expected calls were given (an imported trace); absent: true
    accepted_values: list[dict[str, list[Any]] | None] | None = None
    source_layout: dict[str, Any] | None = None


PUBLISHED_KEYS: tuple[str, ...] = (
    "id",
    "dag_type",
    "user_message",
    "query_medium",
    "query_hard",
    "rewrite_medium_status",
    "rewrite_hard_status",
    "system_prompt",
    "available_tools",
    "expected_tool_calls",
    "expected_responses",
)
_VERBATIM_KEYS = ("available_tools", "expected_tool_calls", "expected_responses")
# keys only imported records carry (after the others, in this order); see to_published
_IMPORTED_KEYS = ("source", "origin", "human_query", "gt_known", "accepted_values")
# what we write for every record
_OUR_KEYS = [n for n in PublishedRecord.model_fields if n != "source_layout" and n not in _IMPORTED_KEYS]
LayoutChoice = Literal["ours", "published"]


_SUBSCHEMA_KEYS = frozenset(
    {"items", "additionalProperties", "anyOf", "oneOf", "allOf", "not", "prefixItems"}
)


def normalise_schema(schema: Any) -> Any:
    """BFCL-style type names ("dict", "float", "tuple") → JSON Schema names, recursively; ``schema``
    itself when it has none of them (ours never do: rebuilding every tool's schema was ~40 % of reading
    the full dataset)."""
    return _renamed(schema) if _has_alias(schema) else schema


def _has_alias(schema: Any) -> bool:
    """Whether ``_renamed`` would rename a type somewhere in ``schema`` (it walks the same keys)."""
    if isinstance(schema, list):
        return any(_has_alias(item) for item in schema)
    if not isinstance(schema, dict):
        return False
    for key, value in schema.items():
        if key == "type":
            if isinstance(value, str) and value in _TYPE_ALIASES:
                return True
            if isinstance(value, list) and any(isinstance(v, str) and v in _TYPE_ALIASES for v in value):
                return True
        elif key == "properties":
            if isinstance(value, dict) and any(_has_alias(sub) for sub in value.values()):
                return True
        elif key in _SUBSCHEMA_KEYS and _has_alias(value):
            return True
    return False


def _renamed(schema: Any) -> Any:
    """A copy of ``schema`` with BFCL-style type names replaced, recursively."""
    if isinstance(schema, list):
        return [_renamed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = _TYPE_ALIASES.get(value, value)
        elif key == "type" and isinstance(value, list):
            out[key] = [_TYPE_ALIASES.get(v, v) if isinstance(v, str) else v for v in value]
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _renamed(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_KEYS:
            out[key] = _renamed(value)
        else:
            out[key] = value
    return out


# ---------------------------------------------------------------- Record -> published


def gt_turns(steps: Sequence[GTStep]) -> list[dict[str, Any]]:
    """``expected_responses`` built from GT steps: assistant turns batch the calls that could run together
    (none depends on another in the batch), each followed by its tool turns. ``arguments`` are objects, the
    shape the published scoring code needs; tool outputs are JSON text, as published."""
    turns: list[dict[str, Any]] = []
    batch: list[int] = []

    def flush() -> None:
        if not batch:
            return
        turns.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": steps[i].call.name, "arguments": steps[i].call.arguments},
                    }
                    for i in batch
                ],
            }
        )
        for i in batch:
            turns.append(
                {
                    "role": "tool",
                    "tool_call_id": f"call_{i}",
                    "name": steps[i].call.name,
                    "content": strict_json.dumps(steps[i].output, ensure_ascii=False),
                }
            )
        batch.clear()

    for i, step in enumerate(steps):
        if any(u in batch for u in step.depends_on):
            flush()
        batch.append(i)
    flush()
    return turns


def expected_responses(record: Record) -> list[dict[str, Any]]:
    """The record's ``expected_responses`` as published: the source's own list when the record was read
    from a file and still says the same, else built from the GT (what the paper prompt family shows)."""
    verbatim = _verbatim(record, "expected_responses")
    return verbatim if verbatim is not None else gt_turns(record.gt)


# ---------------------------------------------------------------- verbatim source spelling


def _responses_content(turns: list[Any]) -> tuple[list[tuple[str, dict[str, Any]]], list[Any]]:
    """(calls, outputs in call order) that a published ``expected_responses`` list says."""
    parsed = _TURNS.validate_python(turns)
    calls = [
        (c.function.name, c.function.arguments)
        for t in parsed
        if isinstance(t, AssistantTurn)
        for c in t.tool_calls or []
    ]
    by_id = {t.tool_call_id: _content(t.content) for t in parsed if isinstance(t, ToolTurn)}
    ids = [c.id for t in parsed if isinstance(t, AssistantTurn) for c in t.tool_calls or []]
    return calls, [by_id.get(i) for i in ids]


def _says_the_same(key: str, value: Any, record: Record) -> bool:
    """Whether a verbatim published part still describes ``record`` (so writing it back loses nothing)."""
    try:
        if key == "available_tools":
            tools = [PublishedTool.model_validate(t) for t in value]
            return [
                (t.function.name, t.function.description, normalise_schema(t.function.parameters))
                for t in tools
            ] == [(t.name, t.description, t.parameters) for t in record.tools]
        if key == "expected_tool_calls":
            calls = [PublishedCall.model_validate(c) for c in value]
            return [(c.name, c.arguments) for c in calls] == [
                (s.call.name, s.call.arguments) for s in record.gt
            ]
        calls_r, outputs = _responses_content(value)
        return calls_r == [(s.call.name, s.call.arguments) for s in record.gt] and outputs == [
            s.output for s in record.gt
        ]
    except (ValidationError, ValueError, TypeError):
        return False


def _verbatim(record: Record, key: str) -> Any:
    source = record.source_layout or {}
    if key in source and _says_the_same(key, source[key], record):
        return source[key]
    return None


def to_published(record: Record, layout: LayoutChoice = "ours") -> dict[str, Any]:
    """The JSON object of one line, keys in ``PublishedRecord`` order. Built directly (not through the
    pydantic model) because generation serialises thousands of records; the round-trip test guards it.
    Not a copy: the tools' schema dicts are the record's own (shared with every record holding the tool),
    so a caller that edits them copies first.

    ``layout="ours"``: every field, canonical spelling (lists, objects, JSON Schema types), plus the source's
    verbatim parts when the record came from a published file. ``layout="published"``: only the published
    fields -- exactly the keys the source line had, if any -- in the source's own spelling where it still
    applies."""
    returns = {t.name: t.returns for t in record.tools if t.returns}
    if layout == "published":
        published = {k: v for k, v in to_published(record).items() if k in PUBLISHED_KEYS}
        source = record.source_layout or {}
        for key in _VERBATIM_KEYS:
            verbatim = _verbatim(record, key)
            if verbatim is not None:
                published[key] = verbatim
        if "keys" in source:
            published = {k: published[k] for k in source["keys"] if k in published}
        return published
    line: dict[str, Any] = {
        "id": record.id,
        "dag_type": record.topology,
        "user_message": record.queries.get("easy", ""),
        "query_medium": record.queries.get("medium"),
        "query_hard": record.queries.get("hard"),
        "rewrite_medium_status": record.rewrite_status.get("medium"),
        "rewrite_hard_status": record.rewrite_status.get("hard"),
        "system_prompt": record.system_prompt,
        "available_tools": [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": normalise_schema(t.parameters),
                },
            }
            for t in record.tools
        ],
        "expected_tool_calls": [{"name": s.call.name, "arguments": s.call.arguments} for s in record.gt],
        "expected_responses": gt_turns(record.gt),
        "domain": record.domain,
        "scenario": record.scenario,
        "dependency_edges": [list(e) for e in sorted(record.edges, key=lambda e: (e[1], e[0]))],
        "step_outputs": [s.output for s in record.gt],
        "step_descriptions": [s.description for s in record.gt],
        "tool_returns": returns,
        "condition_holds": record.condition_holds,
        "seed": record.seed,
        "version": record.version,
        "validation": record.validation.model_dump(mode="json") if record.validation else None,
        **({"source_layout": record.source_layout} if record.source_layout else {}),
    }
    if record.source != "synthetic" or record.origin is not None or record.human_query:
        line["source"] = record.source
        line["origin"] = record.origin
        line["human_query"] = record.human_query
    if not record.gt_known:
        line["gt_known"] = False
    if any(s.accepted is not None for s in record.gt):
        line["accepted_values"] = [s.accepted for s in record.gt]
    return line


def dumps_record(record: Record, layout: LayoutChoice = "ours") -> str:
    """One JSONL line (no newline): deterministic bytes for the same record."""
    return strict_json.dumps(to_published(record, layout), ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------- published -> Record


def _content(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


SharedTools = dict[tuple[str, str, bytes], ToolSchema]
"""The tools of the records read so far, by their exact content (``read_records``: one per file)."""


def _tool(function: PublishedFunction, returns: dict[str, Any], shared: SharedTools | None) -> ToolSchema:
    """The record's tool, the same object as an earlier record's when ``shared`` holds one spelled exactly
    alike: same name and description, and parameters and returns with the same ``memo.exact_key`` (types
    and key order kept; a third of the cost of JSON text); the same values in another key order are only
    not shared.

    Why: a dataset repeats a few hundred tools across thousands of records (the full dataset: 51,455
    tools, 337 distinct). With one object each, the full dataset's records take 87 MB instead of 353 MB
    (in the runner and in every process it forks), reading them is no slower, and a per-tool cache keyed
    by the object (the rule baseline's tool facts) finds it without working out a key from its content.
    The generator's records share their domain's tool objects already, and nothing in the package changes
    a tool in place (``to_published`` hands out the record's own schema dicts: a caller that edits them
    edits every record sharing the tool)."""
    if shared is None:
        return _new_tool(function, returns)
    spelled = exact_key((function.parameters, returns))
    if spelled is None:  # not plain JSON values (a caller's own objects): not shared
        return _new_tool(function, returns)
    key = (function.name, function.description, spelled)
    tool = shared.get(key)
    if tool is None:
        tool = shared[key] = _new_tool(function, returns)
    return tool


def _new_tool(function: PublishedFunction, returns: dict[str, Any]) -> ToolSchema:
    return ToolSchema(
        name=function.name,
        description=function.description,
        parameters=normalise_schema(function.parameters),
        returns=returns,
    )


def from_published(pub: PublishedRecord, shared: SharedTools | None = None) -> Record:
    """Raises ``ValueError("field: message")`` when the parts of a line disagree with each other.
    ``shared``: tools already built, reused when spelled alike (``_tool``)."""
    n = len(pub.expected_tool_calls)
    if pub.step_outputs is not None:
        if len(pub.step_outputs) != n:
            raise ValueError(f"step_outputs: {len(pub.step_outputs)} outputs for {n} expected_tool_calls")
        outputs = list(pub.step_outputs)
    else:
        by_id = {
            t.tool_call_id: _content(t.content) for t in pub.expected_responses if isinstance(t, ToolTurn)
        }
        ids = [
            c.id for t in pub.expected_responses if isinstance(t, AssistantTurn) for c in t.tool_calls or []
        ]
        if ids and len(ids) != n:
            raise ValueError(f"expected_responses: {len(ids)} tool calls for {n} expected_tool_calls")
        outputs = [by_id.get(i) for i in ids] if ids else [None] * n
    response_calls = [
        c.function for t in pub.expected_responses if isinstance(t, AssistantTurn) for c in t.tool_calls or []
    ]
    if response_calls:  # the published scorer reads these, ours reads expected_tool_calls: they must agree
        if len(response_calls) != n:
            raise ValueError(
                f"expected_responses: {len(response_calls)} tool calls for {n} expected_tool_calls"
            )
        for i, (said, flat) in enumerate(zip(response_calls, pub.expected_tool_calls, strict=True)):
            if (said.name, said.arguments) != (flat.name, flat.arguments):
                raise ValueError(
                    f"expected_responses: tool call {i} ({said.name}) differs from expected_tool_calls[{i}] "
                    f"({flat.name})"
                )
    deps: list[list[int]] = [[] for _ in range(n)]
    for k, (u, v) in enumerate(pub.dependency_edges or []):
        if not 0 <= v < n:
            raise ValueError(f"dependency_edges[{k}]: step {v} does not exist ({n} steps)")
        deps[v].append(u)
    descriptions = pub.step_descriptions or [""] * n
    if len(descriptions) != n:
        raise ValueError(f"step_descriptions: {len(descriptions)} descriptions for {n} expected_tool_calls")
    queries: dict[Difficulty, str] = {"easy": pub.user_message}
    if pub.query_medium is not None:
        queries["medium"] = pub.query_medium
    if pub.query_hard is not None:
        queries["hard"] = pub.query_hard
    status: dict[Difficulty, Literal["OK", "FAILED"]] = {}
    if pub.rewrite_medium_status is not None:
        status["medium"] = pub.rewrite_medium_status
    if pub.rewrite_hard_status is not None:
        status["hard"] = pub.rewrite_hard_status
    returns = pub.tool_returns or {}
    accepted = pub.accepted_values or [None] * n
    if len(accepted) != n:
        raise ValueError(f"accepted_values: {len(accepted)} entries for {n} expected_tool_calls")
    domain = (
        pub.domain if pub.domain is not None else (pub.id.rsplit("-", 1)[0] if "-" in pub.id else "unknown")
    )
    return Record(
        id=pub.id,
        domain=domain,
        scenario=pub.scenario or "",
        topology=pub.dag_type,
        queries=queries,
        rewrite_status=status,
        system_prompt=pub.system_prompt,
        tools=[_tool(t.function, returns.get(t.function.name, {}), shared) for t in pub.available_tools],
        gt=[
            GTStep(
                call=ToolCall(name=c.name, arguments=c.arguments),
                output=outputs[i],
                depends_on=sorted(deps[i]),
                description=descriptions[i],
                accepted=accepted[i],
            )
            for i, c in enumerate(pub.expected_tool_calls)
        ],
        condition_holds=pub.condition_holds,
        seed=pub.seed,
        version=pub.version,
        validation=pub.validation,
        source=pub.source or "synthetic",
        origin=pub.origin,
        human_query=bool(pub.human_query),
        gt_known=pub.gt_known is not False,
        source_layout=pub.source_layout,
    )


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("assistant", "tool") and out.startswith("expected_responses"):
            continue  # the discriminator tag pydantic inserts, not a field of the file
        else:
            out += ("." if out else "") + str(part)
    return out or "(record)"


def json_object_line(
    text: str, path: Path | str, lineno: int, noun: str, error: type[ValueError]
) -> tuple[dict[str, Any], str]:
    """One JSONL line as a JSON object, with where it is ("file, line N, <noun> 'id'") for the caller's
    messages; ``error`` (naming file and line) when the line is not JSON or not an object."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise error(f"{path}, line {lineno}: not valid JSON ({exc})") from None
    rid = raw.get("id") if isinstance(raw, dict) else None
    where = f"{path}, line {lineno}" + (f", {noun} {rid!r}" if rid is not None else "")
    if not isinstance(raw, dict):
        raise error(f"{where}: a line must be a JSON object, got {type(raw).__name__}")
    return raw, where


def parse_line(
    text: str, path: Path | str = "<string>", lineno: int = 1, shared: SharedTools | None = None
) -> Record:
    """One JSONL line → Record, or a LayoutError naming file, line, record id and field. ``shared``: tools
    of earlier lines, reused when spelled alike (``_tool``)."""
    raw, where = json_object_line(text, path, lineno, "record", LayoutError)
    try:
        pub = PublishedRecord.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise LayoutError(f"{where}: field {_loc(tuple(first['loc']))}: {first['msg']}{more}") from None
    try:
        record = from_published(pub, shared)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise LayoutError(f"{where}: field {_loc(tuple(first['loc']))}: {first['msg']}") from None
    except ValueError as exc:
        raise LayoutError(f"{where}: field {exc}") from None
    return _keep_source_spelling(record, raw)


def _keep_source_spelling(record: Record, raw: dict[str, Any]) -> Record:
    """Keep what the canonical writer would spell differently (see the module docstring)."""
    if pub_source := raw.get("source_layout"):
        return record.model_copy(update={"source_layout": pub_source})  # our file: already recorded
    canonical = {  # what to_published writes for these keys (the parameters are normalised already)
        "available_tools": [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in record.tools
        ],
        "expected_tool_calls": [{"name": s.call.name, "arguments": s.call.arguments} for s in record.gt],
        "expected_responses": gt_turns(record.gt),
    }
    kept: dict[str, Any] = {
        key: raw[key] for key in _VERBATIM_KEYS if key in raw and raw[key] != canonical[key]
    }
    ours = [k for k in raw if k not in _IMPORTED_KEYS] == _OUR_KEYS
    if not ours:  # a foreign line: remember which keys it had, in its order
        kept["keys"] = list(raw)
    return record.model_copy(update={"source_layout": kept or None})


def read_records(path: Path | str, limit: int | None = None) -> list[Record]:
    """Every record of a JSONL file in the published layout; blank lines are ignored; ids must be unique.
    ``limit``: only the first N records are parsed (a pipeline's ``limit``; lines after them are not read).

    The file is streamed line by line (universal newlines: ``\n``, ``\r\n``, ``\r``): reading the full
    dataset whole and splitting it took ~0.3 s before the first record, even for a ``limit`` of 60; and
    a U+2028 inside a JSON string is text, not the end of a line. Records that spell a tool alike share
    one object of it (``_tool``)."""
    path = Path(path)
    records: list[Record] = []
    seen: dict[str, int] = {}
    shared: SharedTools = {}
    try:
        with path.open(encoding="utf-8", errors="surrogateescape") as handle:
            for lineno, line in enumerate(handle, start=1):
                if limit is not None and len(records) >= limit:
                    break
                if not line.strip():
                    continue
                _check_utf8(line, path, lineno)
                record = parse_line(line.removesuffix("\n"), path, lineno, shared)
                if record.id in seen:
                    raise LayoutError(
                        f"{path}, line {lineno}, record {record.id!r}: field id: duplicate of line "
                        f"{seen[record.id]}"
                    )
                seen[record.id] = lineno
                records.append(record)
    except (OSError, UnicodeDecodeError) as exc:
        raise LayoutError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None
    return records


def _check_utf8(line: str, path: Path, lineno: int) -> None:
    """A line read with ``surrogateescape`` holds lone surrogates exactly where its bytes are not UTF-8:
    say which line and column (a streamed decoder's own byte position counts within its read chunk)."""
    try:
        line.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LayoutError(
            f"{path}, line {lineno}, column {exc.start + 1}: not UTF-8 (save the file as UTF-8)"
        ) from None


def records_text(lines: Iterable[str]) -> str:
    return "".join(line + "\n" for line in lines)


def write_records(path: Path | str, records: Iterable[Record], layout: LayoutChoice = "ours") -> None:
    """All records, one per line, atomically; the same records give byte-identical files."""
    from agentjudge.atomic import write_text

    write_text(path, records_text(dumps_record(r, layout) for r in records))
