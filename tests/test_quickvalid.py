"""The quick validity test (quickvalid.py) against jsonschema.

It may answer "valid" only where ``Draft202012Validator`` reports nothing but ``required`` and
``additionalProperties`` errors (what the rule baseline leaves out), so the baseline's verdicts and
rationales are the same with it and without it; with ``complete=True`` only where ``Draft7Validator``
(Gate 1's) reports nothing at all, so Gate 1's findings are the same. And it must answer "valid" for the
dataset's own correct calls, or it saves nothing.
"""

from __future__ import annotations

import copy
import functools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator, Draft202012Validator

from agentjudge.generators.simulated import make_simulated_generator
from agentjudge.judges import baselines
from agentjudge.quickvalid import surely_valid
from agentjudge.rundir.records import read_records
from agentjudge.runner.offline import drive
from agentjudge.runner.work import Dataset
from agentjudge.types import ModelSettings, Record

MINI = Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl"
LEFT_OUT = ("required", "additionalProperties")


def reported(schema: dict[str, Any], value: Any) -> list[str]:
    """What the baseline's ``_validate`` reports: jsonschema's messages but the two left out."""
    try:
        return [
            e.message for e in Draft202012Validator(schema).iter_errors(value) if e.validator not in LEFT_OUT
        ]
    except Exception as exc:  # noqa: BLE001 - the baseline reports an unusable schema
        return [f"unusable: {type(exc).__name__}"]


def gate1_reported(schema: dict[str, Any], value: Any) -> list[str]:
    """What Gate 1 finds in a GT call's arguments: every Draft 7 error."""
    try:
        return [e.message for e in Draft7Validator(schema).iter_errors(value)]
    except Exception as exc:  # noqa: BLE001 - a crash is a finding too, and never quickly valid
        return [f"unusable: {type(exc).__name__}"]


POOL: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 2.5, -0.5, 10**12, float("inf"), float("nan"), "", "a", "FF-1234",
    "2024-05-01", "x" * 300, "open", "Open", [], ["a"], ["a", "a"], ["a", "b"], [1, True], [1, 1.0],
    [{"k": 1}], {}, {"k": 1}, {"a": "b", "c": [1]}, (1, 2),
]  # fmt: skip


def mutants(value: Any, rng: random.Random, n: int) -> list[Any]:
    """``value`` and ``n`` variants: a leaf replaced by a pool value, a key dropped or added, a list grown."""
    out = [value]
    for _ in range(n):
        mutant = copy.deepcopy(value)
        holder, key = _random_slot(mutant, rng)
        if holder is None:
            out.append(rng.choice(POOL))
            continue
        action = rng.random()
        if isinstance(holder, dict) and action < 0.15:
            holder.pop(key, None)
        elif isinstance(holder, dict) and action < 0.3:
            holder[f"extra_{rng.randrange(3)}"] = rng.choice(POOL)
        elif isinstance(holder, list) and action < 0.3:
            holder.append(copy.deepcopy(holder[key]) if rng.random() < 0.5 else rng.choice(POOL))
        else:
            holder[key] = copy.deepcopy(rng.choice(POOL))
        out.append(mutant)
    return out


def _random_slot(value: Any, rng: random.Random) -> tuple[Any, Any]:
    slots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            slots.append((node, k))
            walk(v)

    walk(value)
    return rng.choice(slots) if slots else (None, None)


def _dataset_tools() -> tuple[list[Record], dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]]:
    """Every distinct parameter schema of the mini dataset (a tool name may have several across records),
    with the arguments of the GT calls made under it."""
    records = read_records(MINI)
    tools: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for record in records:
        own = {t.name: f"{t.name} {json.dumps(t.parameters, sort_keys=True)}" for t in record.tools}
        for tool in record.tools:
            tools.setdefault(own[tool.name], (tool.parameters, []))
        for step in record.gt:
            tools[own[step.call.name]][1].append(step.call.arguments)
    return records, tools


def test_the_datasets_correct_calls_are_quickly_valid_and_their_mutants_never_wrongly() -> None:
    _, tools = _dataset_tools()
    rng = random.Random(7)
    judged = quick = complete_quick = 0
    for name, (schema, calls) in sorted(tools.items()):
        check, complete = surely_valid(schema), surely_valid(schema, complete=True)
        assert check is not None and complete is not None, f"{name}: a keyword quickvalid does not handle"
        for arguments in calls:
            assert gate1_reported(schema, arguments) == [], (
                f"{name}: a GT call the gates let through is invalid"
            )
            assert check(arguments) and complete(arguments), f"{name}: a correct GT call is not quickly valid"
            for mutant in mutants(arguments, rng, 6)[1:]:
                judged += 1
                if check(mutant):
                    quick += 1
                    assert reported(schema, mutant) == [], f"{name}: called valid, jsonschema says otherwise"
                if complete(mutant):
                    complete_quick += 1
                    assert gate1_reported(schema, mutant) == [], f"{name}: called valid, Draft 7 disagrees"
    # the mutants are a mix: the test would not notice a quick test that never says valid, or always does
    assert judged > 1_000 and 0.2 < quick / judged < 0.9, (judged, quick)
    assert 0.02 < complete_quick / judged < quick / judged, (judged, complete_quick)  # stricter, some valid


CASES: list[tuple[dict[str, Any], Any, bool]] = [
    ({"type": "integer"}, 3, True),
    ({"type": "integer"}, 3.0, True),  # 2020-12: a float without a fraction is an integer
    ({"type": "integer"}, 3.5, False),
    ({"type": "integer"}, True, False),  # bool is not a number in JSON Schema
    ({"type": "number"}, False, False),
    ({"type": ["string", "null"]}, None, True),
    ({"type": "object", "properties": {"n": {"minimum": 1}}}, {"n": True}, True),  # bounds skip non-numbers
    ({"type": "object", "properties": {"n": {"minimum": 1}}}, {"n": 0}, False),
    ({"maximum": 5}, 5, True),
    ({"maximum": 5}, 5.01, False),
    ({"minimum": 0}, float("nan"), False),  # jsonschema reports nothing, but nothing is lost by asking it
    ({"pattern": "^FF-[0-9]{4}$"}, "FF-1234", True),
    ({"pattern": "[0-9]"}, "x9", True),  # search, not match
    ({"pattern": "^[0-9]$"}, "x9", False),
    ({"pattern": "^[0-9]$"}, 9, True),  # patterns apply to strings only
    ({"enum": ["open", "closed"]}, "open", True),
    ({"enum": ["open", "closed"]}, "Open", False),
    ({"enum": [1, 2]}, 1, False),  # numbers in an enum: jsonschema decides (True and 1 differ there)
    ({"maxLength": 3}, "abcd", False),
    ({"minLength": 1}, "", False),
    ({"minItems": 1, "maxItems": 2}, ["a"], True),
    ({"maxItems": 1}, ["a", "b"], False),
    ({"uniqueItems": True}, ["a", "b"], True),
    ({"uniqueItems": True}, ["a", "a"], False),
    ({"uniqueItems": True}, [1, True], False),  # not strings: jsonschema decides
    ({"uniqueItems": False}, ["a", "a"], True),
    ({"items": {"type": "string"}}, ["a", 1], False),
    ({"items": {"type": "string"}}, "not a list", True),
    ({"type": "object", "required": ["a"], "additionalProperties": False}, {"b": 1}, True),  # left out
    ({"type": "object", "properties": {"a": {"type": "string"}}}, {"a": 1}, False),
    ({"type": "object", "properties": {"a": {"type": "string"}}}, {"b": 1}, True),
    ({"type": "array"}, (1, 2), False),  # not a JSON value: never quickly valid
    ({"description": "anything", "format": "email"}, "not an email", True),  # no format checker
]
COMPLETE_CASES: list[tuple[dict[str, Any], Any, bool]] = [
    ({"type": "object", "required": ["a"]}, {"a": 1}, True),
    ({"type": "object", "required": ["a"]}, {"b": 1}, False),
    ({"type": "object", "required": ["a"]}, ["a"], False),  # not an object: the type fails, not required
    ({"required": ["a"]}, ["a"], True),  # required applies to objects only
    ({"type": "object", "properties": {"a": {}}, "additionalProperties": False}, {"a": 1}, True),
    ({"type": "object", "properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "b": 2}, False),
    ({"type": "object", "additionalProperties": False}, {}, True),
    ({"type": "object", "additionalProperties": False}, {"a": 1}, False),
    ({"type": "object", "additionalProperties": True}, {"a": 1}, True),
    ({"items": {"type": "object", "required": ["k"]}}, [{"k": 1}, {}], False),
    ({"properties": {"o": {"properties": {"x": {}}, "additionalProperties": False}}}, {"o": {"y": 1}}, False),
]


@pytest.mark.parametrize(("schema", "value", "expected"), CASES)
def test_each_keyword_as_jsonschema_reads_it(schema: dict[str, Any], value: Any, expected: bool) -> None:
    check = surely_valid(schema)
    assert check is not None
    assert check(value) is expected
    if expected:
        assert reported(schema, value) == []


@pytest.mark.parametrize(("schema", "value", "expected"), COMPLETE_CASES)
def test_complete_also_holds_required_and_closed_objects(
    schema: dict[str, Any], value: Any, expected: bool
) -> None:
    check = surely_valid(schema, complete=True)
    assert check is not None
    assert check(value) is expected
    assert (gate1_reported(schema, value) == []) is expected  # here, exactly Draft 7's answer


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}},
        {"anyOf": [{"type": "string"}]},
        {"type": "object", "additionalProperties": {"type": "string"}},  # its errors are "type" errors
        {"type": "object", "required": True},  # jsonschema fails on it: the baseline says so
        {"minimum": "5"},
        {"maxLength": True},
        {"pattern": "("},
        {"type": "text"},
        {"enum": "abc"},
        {"items": [{"type": "string"}]},
        {"prefixItems": [{"type": "string"}]},
        {"properties": {"a": False}},
        {"x-vendor": 1},  # jsonschema ignores it; left to jsonschema all the same
        {"type": [["string"]]},  # unhashable: never raised from here (the baseline says "unusable")
        {"pattern": "a{4294967296}"},  # re raises OverflowError, not re.error
        functools.reduce(lambda inner, _: {"items": inner}, range(5_000), {"type": "string"}),  # too deep
        [],
    ],
)
def test_what_it_does_not_handle_is_left_to_jsonschema(schema: Any) -> None:
    assert surely_valid(schema) is None
    assert surely_valid(schema, complete=True) is None


def _random_schema(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    kinds = ["string", "integer", "number", "boolean", "null", "array", "object"]
    if rng.random() < 0.8:
        schema["type"] = rng.choice(kinds) if rng.random() < 0.8 else rng.sample(kinds, 2)
    for keyword, make in (
        ("enum", lambda: rng.sample(["a", "b", "FF-1234", "open", 1, True, None], 3)),
        ("pattern", lambda: rng.choice(["^a", "[0-9]", "^FF-[0-9]{4}$", "x*"])),
        ("minLength", lambda: rng.choice([0, 1, 2, 2.5])),
        ("maxLength", lambda: rng.choice([0, 1, 3, 300])),
        ("minimum", lambda: rng.choice([-1, 0, 1, 0.5, 10**12])),
        ("maximum", lambda: rng.choice([0, 1, 2.5, 10**12])),
        ("minItems", lambda: rng.choice([0, 1, 2])),
        ("maxItems", lambda: rng.choice([0, 1, 2])),
        ("uniqueItems", lambda: rng.random() < 0.7),
        ("required", lambda: rng.sample(["a", "b", "k"], 2)),
        ("additionalProperties", lambda: rng.random() < 0.5),
        ("default", lambda: rng.choice(POOL[:10])),
    ):
        if rng.random() < 0.2:
            schema[keyword] = make()
    if depth < 2 and rng.random() < 0.4:
        schema["items"] = _random_schema(rng, depth + 1)
    if depth < 2 and rng.random() < 0.5:
        schema["properties"] = {
            name: _random_schema(rng, depth + 1) for name in rng.sample(["a", "b", "k"], 2)
        }
    return schema


def test_random_schemas_and_values_never_quickly_valid_where_jsonschema_reports() -> None:
    rng = random.Random(11)
    said_valid = complete_valid = 0
    for _ in range(400):
        schema = _random_schema(rng)
        check, complete = surely_valid(schema), surely_valid(schema, complete=True)
        assert check is not None and complete is not None  # only handled keywords and values are drawn
        for value in [*POOL, *mutants({"a": "a", "b": [1, "a"], "k": {"k": 1}}, rng, 10)]:
            if check(value):
                said_valid += 1
                assert reported(schema, value) == [], (schema, value)
            if complete(value):
                complete_valid += 1
                assert gate1_reported(schema, value) == [], (schema, value)
    assert (
        said_valid > 2_000 and complete_valid > 1_000
    )  # valid answers are given: the checks are not vacuous


JSONSCHEMA_WORDS = (
    "is not of type",
    "does not match",
    "is not one of",
    "is too",
    "is less than",
    "is greater",
)


def test_rule_verdicts_are_the_same_with_and_without_the_quick_test(monkeypatch: pytest.MonkeyPatch) -> None:
    records = read_records(MINI)
    data = Dataset(records)
    generators = [
        make_simulated_generator(ModelSettings(model=f"sim/{p}")).bind(data.by_base)
        for p in ("weak", "mid", "strong")
    ]
    predictions = [
        (task, drive(gen(task, trial)).calls or [])
        for record in records
        for task in (data.task(record, d) for d in ("easy", "medium", "hard"))
        for gen in generators
        for trial in (0, 1)
    ]

    def verdicts() -> list[Any]:
        for memo in (baselines._INFOS, baselines._BY_ID, baselines._ERRORS, baselines._FACTS):
            memo.clear()
        return [baselines.rule_verdicts(task, calls) for task, calls in predictions]

    quick = verdicts()
    monkeypatch.setattr(baselines, "surely_valid", lambda schema: None)
    slow = verdicts()
    assert quick == slow
    # jsonschema's own messages occur in this sample (not only missing or unexpected keys): the quick test
    # was asked about calls it must not call valid
    assert sum(any(m in r["param"] for m in JSONSCHEMA_WORDS) for _, r in slow) >= 10
    for memo in (baselines._INFOS, baselines._BY_ID, baselines._ERRORS, baselines._FACTS):
        memo.clear()  # no info compiled without the quick test outlives this test
