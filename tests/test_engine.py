"""Domain files and the executable environment: schemas, determinism, errors, end-state sensitivity."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest

from agentjudge.dataset.domains import DomainSpec, load_domain
from agentjudge.dataset.env import ToolError
from agentjudge.dataset.scenario import build_scenario
from agentjudge.dataset.world import (
    DomainEnvironment,
    domain_title,
    environment_for,
    initial_state,
    list_domains,
    make_environment,
    tool_schemas,
)
from agentjudge.types import TOPOLOGIES, Record, ToolCall


def test_fifteen_domains_with_titles() -> None:
    domains = list_domains()
    assert len(domains) == 15 and len(set(domains)) == 15
    titles = {domain_title(d) for d in domains}
    assert len(titles) == 15 and all(titles)


@pytest.mark.parametrize("slug", list_domains())
def test_domain_tools_are_valid_json_schema(slug: str) -> None:
    dom = load_domain(slug)
    schemas = tool_schemas(slug)
    assert 14 <= len(schemas) <= 24 and len(dom.entities) >= 4
    kinds: set[str] = set()
    for schema in schemas.values():
        jsonschema.Draft202012Validator.check_schema(schema.parameters)
        jsonschema.Draft202012Validator.check_schema(schema.returns)
        assert schema.parameters["type"] == "object" and schema.parameters["required"]
        assert len(schema.description) > 15
        for prop in schema.parameters["properties"].values():
            kinds.add(prop.get("type", ""))
            kinds.update(f"format:{prop['format']}" for _ in [0] if "format" in prop)
    # rich schemas across the domain: every JSON type, formats, enums, nested objects
    assert {"string", "integer", "boolean", "array", "object"} <= kinds
    assert "format:email" in kinds or "format:date" in kinds


@pytest.mark.parametrize("slug", list_domains())
def test_every_condition_reason_has_its_note_or_template(slug: str) -> None:
    """optional_enrichment uses texts[i] / choices[i] for condition.holds[i]; a reason without one
    would make the builder fail."""
    for tool in load_domain(slug).tools:
        if tool.condition is not None and tool.op in ("annotate", "message"):
            pool = tool.texts if tool.op == "annotate" else tool.choices
            assert tool.condition.holds and len(tool.condition.holds) <= len(pool), tool.name
            assert len(set(tool.condition.holds)) == len(tool.condition.holds), tool.name


def test_initial_state_is_deterministic_and_small() -> None:
    dom = load_domain("finance")
    a, b, c = initial_state(dom, 5), initial_state(dom, 5), initial_state(dom, 6)
    assert a == b and a != c
    assert sum(len(t) for t in a["entities"].values()) <= 80


def test_search_keys_are_unique_within_a_state() -> None:
    for slug in list_domains():
        dom = load_domain(slug)
        state = initial_state(dom, 11)
        for tool in dom.tools:
            if tool.op == "search":
                values = [rec[tool.field] for rec in state["entities"][tool.entity].values()]
                assert len(values) == len(set(values)), (slug, tool.name)


def _env() -> DomainEnvironment:
    return DomainEnvironment("itsm", 42)


def _any_id(env: DomainEnvironment, kind: str) -> str:
    return next(iter(env.state["entities"][kind]))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (ToolCall(name="no_such_tool", arguments={}), "unknown tool"),
        (ToolCall(name="get_employee", arguments={}), "missing required argument 'employee_id'"),
        (
            ToolCall(name="get_employee", arguments={"employee_id": "EMP-10000", "x": 1}),
            "unknown argument 'x'",
        ),
        (ToolCall(name="get_employee", arguments={"employee_id": "E1"}), "does not match"),
        (ToolCall(name="get_employee", arguments={"employee_id": "EMP-99999"}), "no employee with id"),
        (
            ToolCall(name="find_employee_by_email", arguments={"email": "nobody@example.com"}),
            "no employee with",
        ),
        (ToolCall(name="estimate_ticket_effort", arguments={"ticket_ids": []}), "at least 1"),
        (ToolCall(name="get_employee", arguments={"employee_id": 7}), "expected string"),
    ],
)
def test_bad_calls_raise_tool_error(call: ToolCall, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        _env().execute(call)


def test_bad_enum_value_is_rejected() -> None:
    env = _env()
    tid = _any_id(env, "ticket")
    with pytest.raises(ToolError, match="not one of"):
        env.execute(ToolCall(name="update_ticket_priority", arguments={"ticket_id": tid, "priority": "P0"}))


def test_operations_change_state_as_described() -> None:
    env = _env()
    tid = _any_id(env, "ticket")
    before = env.snapshot()
    old = before["entities"]["ticket"][tid]["status"]
    new = next(s for s in ("new", "resolved") if s != old)
    out = env.execute(ToolCall(name="update_ticket_status", arguments={"ticket_id": tid, "status": new}))
    assert out == {"ticket_id": tid, "status": new, "previous_status": old, "updated": True}
    assert env.snapshot()["entities"]["ticket"][tid]["status"] == new
    assert before["entities"]["ticket"][tid]["status"] == old  # snapshots are copies
    emp = _any_id(env, "employee")
    created = env.execute(
        ToolCall(
            name="create_access_request",
            arguments={
                "employee_id": emp,
                "system": "jira",
                "access_level": "read",
                "needed_by": "2026-12-01",
            },
        )
    )
    assert created["access_request_id"] in env.state["entities"]["access_request"]
    listed = env.execute(ToolCall(name="list_employee_tickets", arguments={"employee_id": emp}))
    assert listed["count"] == len(listed["ticket_ids"])
    assert all(env.state["entities"]["ticket"][t]["requester_id"] == emp for t in listed["ticket_ids"])


def test_make_environment_only_for_our_records() -> None:
    record, _ = build_scenario("hr", "fan_in", 0, 3)
    assert make_environment(record) is not None
    assert environment_for(record) is not None
    assert make_environment(record.model_copy(update={"seed": None})) is None
    assert make_environment(record.model_copy(update={"domain": "unknown"})) is None


def test_environments_of_one_record_start_from_the_same_untouched_world() -> None:
    """``make_environment`` copies a kept world (``_pristine_state``) instead of generating it again: a
    copy must be exactly the generated world, and calls on one environment must not reach the next."""
    for slug in list_domains():
        dom = load_domain(slug)
        for seed in (0, 7):
            world = initial_state(dom, seed)
            for table in world["entities"].values():  # fresh_copy copies records one level deep
                for rec in table.values():
                    assert all(isinstance(v, (str, int, float, bool, type(None))) for v in rec.values())
    record, _ = build_scenario("hr", "fan_in", 0, 3)
    pristine = initial_state(load_domain("hr"), record.seed or 0)
    first = make_environment(record)
    assert first is not None and first.snapshot() == pristine
    for step in record.gt:  # the GT writes into the first environment's world
        first.execute(step.call)
    assert first.snapshot() != pristine
    second = make_environment(record)
    assert second is not None and second.snapshot() == pristine


def test_environment_exposes_only_the_records_tools() -> None:
    record, _ = build_scenario("telecom", "linear", 0, 1)
    env = make_environment(record)
    assert env is not None
    hidden = next(
        t.name for t in load_domain("telecom").tools if t.name not in {x.name for x in record.tools}
    )
    with pytest.raises(ToolError, match="unknown tool"):
        env.execute(ToolCall(name=hidden, arguments={}))


def _end_state(record: Record, calls: list[ToolCall]) -> dict[str, Any]:
    env = make_environment(record)
    assert env is not None
    for call in calls:
        env.execute(call)
    return env.snapshot()


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_a_changed_mutating_call_changes_the_end_state(topology: str) -> None:
    """tau-bench style: a wrong value in any mutating call must show up in the end state."""
    checked = 0
    for slug in list_domains():
        record, plan = build_scenario(slug, topology, 2, 0)  # type: ignore[arg-type]
        gt_calls = [s.call for s in record.gt]
        target = _end_state(record, gt_calls)
        assert _end_state(record, gt_calls) == target  # replay is deterministic
        for i, ps in enumerate(plan.steps):
            op = next(t.op for t in load_domain(slug).tools if t.name == gt_calls[i].name)
            query_slots = [s for s in ps.slots if s.source == "query"]
            if op in ("search", "get", "list", "aggregate") or not query_slots:
                continue
            slot = query_slots[-1]
            changed = copy.deepcopy(gt_calls)
            schema = tool_schemas(slug)[gt_calls[i].name].parameters["properties"][slot.arg]
            if "enum" in schema:
                changed[i].arguments[slot.arg] = next(v for v in schema["enum"] if v != slot.value)
            elif schema.get("type") == "number" or schema.get("type") == "integer":
                changed[i].arguments[slot.arg] = slot.value + 1
            else:
                changed[i].arguments[slot.arg] = (
                    str(slot.value) + "x" if "format" not in schema else "2030-01-01"
                )
            assert _end_state(record, changed) != target, (record.id, i, slot.arg)
            dropped = gt_calls[:i] + gt_calls[i + 1 :]
            if all(s.from_step != i for p in plan.steps for s in p.slots):
                assert _end_state(record, dropped) != target, (record.id, "dropped", i)
            checked += 1
    assert checked >= 5


def test_domain_file_errors_name_the_problem() -> None:
    raw = load_domain("itsm").model_dump()
    raw["tools"][0]["entity"] = "spaceship"
    with pytest.raises(ValueError, match="unknown entity 'spaceship'"):
        DomainSpec.model_validate(raw)
    raw = load_domain("itsm").model_dump()
    raw["tools"][0]["field"] = "department"  # an enum is not a search key
    with pytest.raises(ValueError, match="cannot use field 'department'"):
        DomainSpec.model_validate(raw)
    raw = load_domain("itsm").model_dump()
    raw["entities"]["employee"]["fieldz"] = {}
    with pytest.raises(ValueError, match="fieldz"):
        DomainSpec.model_validate(raw)


def test_the_scorers_end_state_check_compares_without_copying_the_world(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``scoring.outcome`` asks a DomainEnvironment ``state_equals(gt_end)`` instead of comparing a
    snapshot (a deep copy of the world per prediction, a fifth of scoring's time or more): the same
    answer as the snapshot comparison -- the GT's calls match, the GT up to its first write or no call
    does not -- and no copy."""
    from agentjudge.dataset import world
    from agentjudge.scoring.scorer import outcome, prepare

    record, _ = build_scenario("hr", "fan_in", 0, 3)
    prep = prepare(record)
    gt_calls = [s.call for s in record.gt]
    write = next(
        i
        for i, s in enumerate(record.gt)
        if _end_state(record, gt_calls[: i + 1]) != _end_state(record, gt_calls[:i])
    )
    cases = [gt_calls, gt_calls[:write], []]  # all the GT; the GT up to its first write; nothing
    gt_end = _end_state(record, gt_calls)
    expected = [_end_state(record, calls) == gt_end for calls in cases]
    assert expected == [True, False, False]
    outcome(record, gt_calls, prepared=prep)  # the GT end state is computed (with snapshots) and kept
    copies: list[int] = []
    real_copy = world.copy_state
    monkeypatch.setattr(world, "copy_state", lambda obj: copies.append(1) or real_copy(obj))
    assert [outcome(record, calls, prepared=prep)[0] for calls in cases] == expected
    assert copies == []


def test_the_gt_trace_copies_the_world_after_writes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """``scoring.gt_trace`` (the GT's end state and which steps write) copies a DomainEnvironment's world
    once at the start and after each write, not after every step, and finds what the copy-per-step
    reading finds (an environment without ``state_equals``), over every domain and topology."""
    from agentjudge.dataset import world
    from agentjudge.dataset.world import _slugs, make_environment
    from agentjudge.scoring.scorer import gt_trace

    class SnapshotsOnly:  # the protocol's minimum: every step compared through a copy
        def __init__(self, record: Record) -> None:
            self.env = make_environment(record)

        def execute(self, call: ToolCall) -> Any:
            return self.env.execute(call)  # type: ignore[union-attr]

        def snapshot(self) -> dict[str, Any]:
            return self.env.snapshot()  # type: ignore[union-attr]

    copies: list[int] = []
    real_snapshot = world.DomainEnvironment.snapshot

    def counting(env: world.DomainEnvironment) -> dict[str, Any]:
        copies.append(1)
        return real_snapshot(env)

    monkeypatch.setattr(world.DomainEnvironment, "snapshot", counting)
    seen_reads = 0
    for slug in _slugs():
        for topology in TOPOLOGIES:
            record, _ = build_scenario(slug, topology, 0, 7)
            expected = gt_trace(record, SnapshotsOnly)
            copies.clear()
            assert gt_trace(record, lambda r: make_environment(r)) == expected, (slug, topology)
            assert len(copies) == 1 + len(expected[1])  # the start, then one per write
            seen_reads += len(record.gt) - len(expected[1])
    assert seen_reads > 0  # some GT step only reads: a copy per step would have been more
