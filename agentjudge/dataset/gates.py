"""Quality gates: Gate 1 checks the trace, Gate 2 checks each difficulty's query. No LLM.

Every finding carries a stable reason code, so the generator can count regenerations per reason and a
user running ``agentjudge validate`` on any file gets the same vocabulary:

gate1  schema_invalid       a tool's ``parameters`` is not a valid JSON Schema object
       arg_schema           a GT argument fails its tool's schema (types, required keys, enums)
       unknown_tool         a GT call names a tool the record does not offer
       dangling_dependency  a step depends on an index that is not an earlier step
       cycle                the dependency graph has a cycle
       topology_shape       the DAG does not have the declared topology's shape
       ungrounded_value     an argument value is neither in any query nor in an output of a step it depends on
       replay_mismatch      executing the trace in the record's environment does not reproduce the outputs
gate2  insufficient         (per difficulty) a value the user must supply is not recoverable from this query
       ungrounded           (per difficulty) the query leans on context it never gives: a date the user
                            must supply is given relative to a "today" the query never states
       unnatural_length     (per difficulty) the query is too short or too long to be a person's request
       schema_field_in_query, raw_json_in_query, tool_name_in_query (the last at medium/hard only)
       ambiguous_reference, no_antecedent, order_contradiction, unrequested_step, not_harder: one right
                            answer per query and a hard query that is harder (``gates_semantic``; records
                            of our own domains only, ``gate2:semantic`` in ``gates_run`` when it ran)
       unquoted_text, domain_title, date_contradiction, agreement: the query reads as a person's request
                            (a dictated text in quotes, no internal domain title, context that fits the
                            date, field nouns agreeing with their verb; also ``gates_semantic``)

Imported records (``source="imported"``, e.g. BFCL) are checked the same way, with what their format
adds: any accepted value may ground an argument and one the answer marks optional ("") needs none; their
``dag_type`` is read off the structure, so the topology-shape check is skipped. A record whose only query is a
person's own (``human_query``) has no medium/hard rewrites to check, skips the naturalness checks, and its
values may be chosen by meaning (see ``_grounded``) or stated by common knowledge the query leaves unsaid
(``knowledge.explain``: arithmetic, places, constants, synonyms, formats); none of that applies to our
generated records.

Records read from published files have no dependency edges (the layout reader leaves them empty and
``version`` unset); for those a value may come from any earlier output and the shape check is skipped.
"""

from __future__ import annotations

import json
import re
from typing import Any

import networkx as nx
from jsonschema import Draft7Validator
from jsonschema.exceptions import SchemaError

from agentjudge.dataset import knowledge, resolve, topologies, wording
from agentjudge.memo import exact_key
from agentjudge.quickvalid import Check, surely_valid
from agentjudge.types import DIFFICULTIES, Difficulty, GateFinding, Record, ValidationReport

GATES_RUN = ["gate1", "gate2"]
MIN_WORDS = 8
MAX_WORDS = 320
GATE1_CODES = (
    "schema_invalid",
    "arg_schema",
    "unknown_tool",
    "dangling_dependency",
    "cycle",
    "topology_shape",
    "ungrounded_value",
    "replay_mismatch",
)
GATE2_CODES = (
    "insufficient",
    "ungrounded",
    "unnatural_length",
    "schema_field_in_query",
    "raw_json_in_query",
    "tool_name_in_query",
)
_TOKEN = re.compile(r"(?<![\w-])[A-Za-z_][A-Za-z0-9_]*(?![\w-])")  # identifier-shaped words
_DOTTED = re.compile(r"(?<![\w.-])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?![\w-])")
_RAW_JSON = re.compile(r"[{\[]\s*\"[^\"\n]{1,80}\"\s*:|\[\s*\{|\{\s*\}|\"\s*:\s*[\[{\"\d]")


_Compiled = tuple[Draft7Validator, Check | None]  # the validator, and the quick test (quickvalid.py) if any
_VALIDATORS: dict[bytes | str, _Compiled | str] = {}


def _validator(schema: dict[str, Any]) -> _Compiled | str:
    """A compiled validator for a schema with its quick test, or the reason the schema is invalid. Cached
    by content: domains reuse their tools across thousands of records and checking a schema against the
    metaschema is the slow part."""
    key = exact_key(schema) or repr(schema)
    cached = _VALIDATORS.get(key)
    if cached is None:
        if len(_VALIDATORS) > 20000:  # foreign files with unique schemas per record: bound the memory
            _VALIDATORS.clear()
        cached = _VALIDATORS[key] = _compile(schema)
    return cached


def _compile(schema: dict[str, Any]) -> _Compiled | str:
    try:
        Draft7Validator.check_schema(schema)
    except SchemaError as exc:
        return f"not valid JSON Schema: {exc.message}"
    if schema.get("type") != "object" or not isinstance(schema.get("properties", {}), dict):
        return 'parameters must be {"type": "object", "properties": {...}}'
    return Draft7Validator(schema), surely_valid(schema, complete=True)


def _edges_known(record: Record) -> bool:
    return bool(record.edges) or record.version is not None or len(record.gt) <= 1


def _dep_outputs(record: Record, index: int) -> list[Any]:
    step = record.gt[index]
    if _edges_known(record):
        return [record.gt[u].output for u in step.depends_on if 0 <= u < index]
    return [s.output for s in record.gt[:index]]


def _grounded_in_outputs(value: Any, outputs: list[Any]) -> bool:
    return any(resolve.in_output(value, out) for out in outputs)


def _arg_leaves(record: Record) -> list[tuple[int, str, Any]]:
    """(step, argument path, leaf value) for every checkable argument leaf of the trace."""
    out: list[tuple[int, str, Any]] = []
    for i, step in enumerate(record.gt):
        for arg, value in step.call.arguments.items():
            out += [(i, arg, leaf) for leaf in resolve.leaves(value) if resolve.is_checkable(leaf)]
    return out


def _user_supplied(record: Record) -> list[tuple[int, str, Any]]:
    """Argument leaves not produced by a step they depend on: the user's request must supply them."""
    out: list[tuple[int, str, Any]] = []
    seen: set[tuple[int, str, str]] = set()
    for i, arg, leaf in _arg_leaves(record):
        key = (i, arg, repr(leaf))
        if key not in seen and not _grounded_in_outputs(leaf, _dep_outputs(record, i)):
            seen.add(key)
            out.append((i, arg, leaf))
    return out


def _grounded(record: Record, i: int, arg: str, leaf: Any, texts: list[str]) -> bool:
    """Whether a user-supplied argument leaf can be read from one of ``texts`` (the queries)."""
    context = record.system_prompt
    if any(resolve.recoverable(leaf, t, context) for t in texts):
        return True
    accepted = record.gt[i].accepted
    # imported records keep every accepted value: grounded when the answer marks the argument
    # optional or when any accepted value (not only the one the GT call shows) is recoverable
    if (
        accepted
        and arg in accepted
        and any(resolve.alternatives_recoverable(accepted[arg], t, context) for t in texts)
    ):
        return True
    return record.human_query and (
        _chosen_by_meaning(record, i, arg, leaf)
        or _named_in_description(record, i, arg, leaf, texts)
        or any(_misspelt_in(leaf, t) for t in texts)
        or any(knowledge.explain(leaf, t, arg, _param_schema(record, i, arg)) for t in texts)
    )


def _param_schema(record: Record, i: int, arg: str) -> dict[str, Any] | None:
    tool = next((t for t in record.tools if t.name == record.gt[i].call.name), None)
    schema = (tool.parameters.get("properties") or {}).get(arg) if tool else None
    return schema if isinstance(schema, dict) else None


def _misspelt_in(value: Any, text: str) -> bool:
    """People misspell ("Chcicago", "airtificial intelligence"): a value made of words, each of five or
    more letters within one edit of a word of the query (shorter words exactly), the part before a comma
    for "City, ST". Only for human-written queries: our rewrites never misspell, and one edit turns one
    identifier into another ("ORD-7781" / "ORD-7782"), which is why only letters count."""
    if not isinstance(value, str):
        return False
    head = value.split(",")[0].strip().lower()
    if not re.fullmatch(r"[a-z]+(?: [a-z]+){0,3}", head):
        return False
    words = set(re.findall(r"[a-z]+", text.lower()))
    return all(w in words or (len(w) >= 5 and any(_one_edit(w, q) for q in words)) for w in head.split())


def _one_edit(a: str, b: str) -> bool:
    if abs(len(a) - len(b)) > 1 or a == b:
        return a == b
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:k] + long[k + 1 :] == short for k in range(len(long)))


def _chosen_by_meaning(record: Record, i: int, arg: str, leaf: Any) -> bool:
    """In a person's own query, a value left at the schema's default (declared, or stated in the
    description), a "no preference" value, or a member of the schema's closed list that a word of the query
    points at ("scientific fiction" → genre "Sci-fi") is chosen by meaning rather than copied; arg_schema
    still checks membership. Never applied to our generated records, whose rewrites must state every value."""
    tool = next((t for t in record.tools if t.name == record.gt[i].call.name), None)
    schema = (tool.parameters.get("properties") or {}).get(arg) if tool else None
    if isinstance(leaf, str) and leaf.strip().lower() in ("dontcare", "any"):
        return True  # "no preference": the query grounds it by not stating one
    if not isinstance(schema, dict):
        return False
    if "default" in schema and schema["default"] == record.gt[i].call.arguments.get(arg):
        return True
    said = re.escape(str(leaf))
    description = str(schema.get("description", ""))
    if re.search(
        rf"(?:default(?:s)?(?: value)?(?: is| to|:)?|please use)\s+['\"]?{said}(?![\w.])", description, re.I
    ):
        return True  # the description states the default ("If user doesn't specify, please use 100")
    if isinstance(leaf, bool) or not any(leaf in enum for enum in _enums(schema)):
        return False
    return _some_evidence(leaf, record.queries.values())


# fmt: off
_STOP = frozenset(("the", "and", "for", "with", "any", "all", "not", "but", "you", "your", "from", "this",
                   "that", "are", "was"))
# fmt: on


def _some_evidence(value: Any, texts: Any) -> bool:
    """An enum member counts as chosen by the query's words only when one of its words shares its first
    three letters with a word of the query ("Sci-fi" / "scientific", "Family Counselor" / "family
    therapist"), or when it is a number (an ID picked from a closed list). Without any such overlap any
    enum member would pass for any query, which a mismatched-query control shows."""
    if isinstance(value, int | float):
        return True
    words = {w[:3] for w in re.findall(r"[a-z]{3,}", str(value).lower()) if w not in _STOP}
    return any(
        words & {w[:3] for w in re.findall(r"[a-z]{3,}", str(t).lower()) if w not in _STOP} for t in texts
    )


def _named_in_description(record: Record, i: int, arg: str, leaf: Any, texts: list[str]) -> bool:
    """A code the parameter's description spells out ("1 for Bangkok, 2 for Chiang Mai") is grounded when
    the query names what it stands for ("in Bangkok")."""
    tool = next((t for t in record.tools if t.name == record.gt[i].call.name), None)
    schema = (tool.parameters.get("properties") or {}).get(arg) if tool else None
    if not isinstance(schema, dict) or isinstance(leaf, bool):
        return False
    said = re.escape(str(leaf))
    pattern = rf"(?<![\w.]){said}\s*(?:for|=|:|means|is)\s+([A-Za-z][A-Za-z' ]*?)\s*(?:[,.;)]|\band\b|$)"
    for match in re.finditer(pattern, str(schema.get("description", ""))):
        if any(wording.text_recoverable(match.group(1), t) for t in texts):
            return True
    return False


def _enums(schema: Any) -> list[list[Any]]:
    if isinstance(schema, list):
        return [e for item in schema for e in _enums(item)]
    if not isinstance(schema, dict):
        return []
    found = [schema["enum"]] if isinstance(schema.get("enum"), list) else []
    for key in ("properties", "items", "anyOf", "oneOf"):
        sub = schema.get(key)
        found += _enums(list(sub.values()) if key == "properties" and isinstance(sub, dict) else sub)
    return found


def _f(gate: str, code: str, detail: str, difficulty: Difficulty | None = None) -> GateFinding:
    return GateFinding(gate=gate, code=code, difficulty=difficulty, detail=detail)  # type: ignore[arg-type]


# ---------------------------------------------------------------- gate 1


def _gate1_schemas(record: Record) -> list[GateFinding]:
    findings: list[GateFinding] = []
    tools = {t.name: t for t in record.tools}
    for tool in record.tools:
        v = _validator(tool.parameters)
        if isinstance(v, str):
            findings.append(_f("gate1", "schema_invalid", f"tool {tool.name!r}: {v}"))
    for i, step in enumerate(record.gt):
        offered = tools.get(step.call.name)
        if offered is None:
            findings.append(
                _f("gate1", "unknown_tool", f"step {i} calls {step.call.name!r}, not among the tools")
            )
            continue
        v = _validator(offered.parameters)
        if isinstance(v, str):
            continue
        validator, quick = v
        if quick is not None and quick(step.call.arguments):  # nothing for jsonschema to report
            continue
        for err in sorted(validator.iter_errors(step.call.arguments), key=lambda e: list(e.absolute_path)):
            where = "/".join(str(p) for p in err.absolute_path) or "(arguments)"
            findings.append(_f("gate1", "arg_schema", f"step {i} {step.call.name}.{where}: {err.message}"))
    return findings


def _gate1_graph(record: Record) -> list[GateFinding]:
    findings: list[GateFinding] = []
    n = len(record.gt)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    for v, step in enumerate(record.gt):
        for u in step.depends_on:
            if not 0 <= u < n:
                findings.append(
                    _f("gate1", "dangling_dependency", f"step {v} depends on step {u}, which does not exist")
                )
            elif u == v:
                findings.append(_f("gate1", "cycle", f"step {v} depends on itself"))
            else:
                graph.add_edge(u, v)
    try:
        cycle = nx.find_cycle(graph)
        findings.append(_f("gate1", "cycle", "dependency cycle " + " -> ".join(str(u) for u, _ in cycle)))
    except nx.NetworkXNoCycle:
        for u, v in graph.edges:
            if u > v:
                findings.append(_f("gate1", "dangling_dependency", f"step {v} depends on later step {u}"))
    if findings or not _edges_known(record) or record.source == "imported":
        return findings  # imported: dag_type is read off the structure, not built from our templates
    shape = _topology_shape(record)
    if shape:
        findings.append(_f("gate1", "topology_shape", f"{record.topology}: {shape}"))
    return findings


def _topology_shape(record: Record) -> str | None:
    """What keeps the GT's dependency graph from having the record's declared shape (None: it has it)."""
    return topologies.check_shape(
        topologies.dag_for(record), record.topology, [s.call.name for s in record.gt]
    )


def _gate1_grounding(record: Record, supplied: list[tuple[int, str, Any]]) -> list[GateFinding]:
    findings: list[GateFinding] = []
    queries = [q for q in record.queries.values() if q]
    for i, arg, leaf in supplied:
        if not _grounded(record, i, arg, leaf, queries):
            findings.append(
                _f(
                    "gate1",
                    "ungrounded_value",
                    f"step {i} {record.gt[i].call.name}.{arg} = {leaf!r} is in no query and in no "
                    "output of a step it depends on",
                )
            )
    return findings


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _gate1_replay(record: Record) -> tuple[list[GateFinding], bool]:
    """(findings, ran). Skipped (ran=False) when the record has no executable environment."""
    from agentjudge.dataset.env import ToolError
    from agentjudge.dataset.world import environment_for

    try:
        env = environment_for(record)
    except ImportError:
        return [], False
    if env is None:
        return [], False
    for i, step in enumerate(record.gt):
        try:
            output = env.execute(step.call)
        except ToolError as exc:
            return [
                _f("gate1", "replay_mismatch", f"step {i} {step.call.name} raised on replay: {exc}")
            ], True
        if _canonical(output) != _canonical(step.output):
            return [
                _f(
                    "gate1",
                    "replay_mismatch",
                    f"step {i} {step.call.name}: replayed output differs from the recorded one",
                )
            ], True
    return [], True


# ---------------------------------------------------------------- gate 2


def _identifier_like(name: str) -> bool:
    """Field/tool names that betray a schema: snake_case, dotted.names, lowerCamelCase or a CamelCase of
    three or more parts. Plain words ("email", "Weather") and one-hump names read as proper nouns
    ("McDonald", "YouTube") are ordinary words a person writes, not code copied into the query."""
    if "_" in name or "." in name.strip("."):
        return True
    humps = len(re.findall(r"[a-z0-9][A-Z]", name))
    return humps >= 2 or (humps == 1 and name[:1].islower())


def _gate2_naturalness(record: Record, d: Difficulty, query: str) -> list[GateFinding]:
    findings: list[GateFinding] = []
    if record.human_query:
        return findings  # a person wrote it: "would a person write this?" is answered (length, JSON, names)
    words = len(query.split())
    if not MIN_WORDS <= words <= MAX_WORDS:
        findings.append(_f("gate2", "unnatural_length", f"{words} words (bounds {MIN_WORDS}-{MAX_WORDS})", d))
    if _RAW_JSON.search(query):
        findings.append(_f("gate2", "raw_json_in_query", "the query contains JSON syntax", d))
    tokens = set(_TOKEN.findall(query))
    arg_values = {str(leaf) for _, _, leaf in _arg_leaves(record)}
    fields = {name for t in record.tools for name in _field_names(t.parameters)}
    for name in sorted((fields & tokens) - arg_values):
        if _identifier_like(name):
            findings.append(_f("gate2", "schema_field_in_query", f"names the schema field {name!r}", d))
    if d != "easy":
        for tool in sorted({t.name for t in record.tools} & (tokens | set(_DOTTED.findall(query)))):
            if _identifier_like(tool):
                findings.append(_f("gate2", "tool_name_in_query", f"names the tool {tool!r}", d))
    return findings


_FIELD_NAMES: dict[str, frozenset[str]] = {}


def _field_names(schema: dict[str, Any]) -> frozenset[str]:
    key = repr(schema)
    names = _FIELD_NAMES.get(key)
    if names is None:
        if len(_FIELD_NAMES) > 20000:
            _FIELD_NAMES.clear()
        names = _FIELD_NAMES[key] = frozenset(_property_names(schema))
    return names


def _property_names(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    names: list[str] = []
    props = schema.get("properties")
    if isinstance(props, dict):
        for key, sub in props.items():
            names.append(key)
            names += _property_names(sub)
    if isinstance(schema.get("items"), dict):
        names += _property_names(schema["items"])
    return names


def _gate2_sufficiency(
    record: Record, d: Difficulty, query: str, supplied: list[tuple[int, str, Any]]
) -> list[GateFinding]:
    """Every value the user must supply is recoverable from this query. A date that is missing while the
    query speaks in relative terms without saying what "today" is counts as ``ungrounded``."""
    findings: list[GateFinding] = []
    context = record.system_prompt
    unanchored = resolve.has_unanchored_relative_date(query, context)
    for i, arg, leaf in supplied:
        if _grounded(record, i, arg, leaf, [query]):
            continue
        name = f"step {i} {record.gt[i].call.name}.{arg} = {leaf!r}"
        is_date = isinstance(leaf, str) and bool(
            resolve.ISO_DATE.match(leaf) or resolve.ISO_DATETIME.match(leaf)
        )
        if is_date and unanchored:
            findings.append(
                _f(
                    "gate2",
                    "ungrounded",
                    f"{name}: the query says {unanchored!r} but never what today's date is",
                    d,
                )
            )
        else:
            findings.append(_f("gate2", "insufficient", f"{name} cannot be recovered from the query", d))
    return findings


# ---------------------------------------------------------------- entry point


def gate1_findings(record: Record) -> list[GateFinding]:
    """Gate 1 alone (schemas, graph, grounding, replay): what ``run`` and ``infer`` refuse a record for;
    a quarter of ``run_gates``'s time (Gate 2's wording checks are not needed to run a grid)."""
    supplied = _user_supplied(record)
    findings = _gate1_schemas(record) + _gate1_graph(record) + _gate1_grounding(record, supplied)
    return findings + _gate1_replay(record)[0]


def run_gates(record: Record) -> ValidationReport:
    """Both gates on one record; an empty ``findings`` list means the record may be shipped."""
    supplied = _user_supplied(record)
    findings = _gate1_schemas(record) + _gate1_graph(record) + _gate1_grounding(record, supplied)
    replay, ran = _gate1_replay(record)
    findings += replay
    gates_run = ["gate1:schemas", "gate1:graph", "gate1:grounding"] + (["gate1:replay"] if ran else [])
    for d in DIFFICULTIES:
        query = record.queries.get(d)
        if record.human_query and d not in record.queries:
            continue  # a person's own query is the record's only one; no rewrites to check
        if not query or not query.strip():
            findings.append(_f("gate2", "insufficient", f"the record has no {d} query", d))
            continue
        findings += _gate2_sufficiency(record, d, query, supplied) + _gate2_naturalness(record, d, query)
        gates_run.append(f"gate2:{d}")
    from agentjudge.dataset.gates_semantic import semantic_findings

    semantic, ran_semantic = semantic_findings(record)
    findings += semantic
    gates_run += ["gate2:semantic"] if ran_semantic else []
    return ValidationReport(gates_run=gates_run, findings=findings)
