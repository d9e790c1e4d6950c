"""Gate 1 / Gate 2: valid records pass, and each kind of corruption is rejected with its reason code.

The hand-built Record/QueryPlan fixture at the top is shared with test_rewrite, test_layout and
test_generate (imported from this module), so those tests need no builder."""

from __future__ import annotations

import os
from typing import Any

import pytest

from agentjudge.dataset import gates
from agentjudge.dataset.env import ToolError
from agentjudge.dataset.gates import run_gates
from agentjudge.dataset.plan import PlanStep, QueryPlan, Referent, Slot
from agentjudge.types import GTStep, Record, ToolCall, ToolSchema


def _tool(name: str, description: str, props: dict[str, Any], required: list[str]) -> ToolSchema:
    return ToolSchema(
        name=name,
        description=description,
        parameters={"type": "object", "properties": props, "required": required},
        returns={"type": "object"},
    )


TOOLS = [
    _tool("find_customer", "Find a customer by email.", {"email": {"type": "string"}}, ["email"]),
    _tool(
        "list_orders",
        "List a customer's orders.",
        {"customer_id": {"type": "string"}, "status": {"type": "string", "enum": ["open", "closed"]}},
        ["customer_id"],
    ),
    _tool(
        "schedule_callback",
        "Schedule a callback about an order.",
        {
            "order_id": {"type": "string"},
            "callback_date": {"type": "string", "format": "date"},
            "priority": {"type": "string", "enum": ["low", "normal", "high"]},
            "attempts": {"type": "integer", "minimum": 1},
        },
        ["order_id", "callback_date", "priority"],
    ),
    _tool(
        "refund_order",
        "Refund an order.",
        {"order_id": {"type": "string"}, "amount": {"type": "number"}},
        ["order_id", "amount"],
    ),
    _tool("send_survey", "Send a satisfaction survey.", {"customer_id": {"type": "string"}}, ["customer_id"]),
    _tool("archive_ticket", "Archive a support ticket.", {"ticket_id": {"type": "string"}}, ["ticket_id"]),
    _tool("get_weather", "Weather for a city.", {"city": {"type": "string"}}, ["city"]),
    _tool("list_agents", "List support agents.", {"team": {"type": "string"}}, []),
]


def linear_record() -> tuple[Record, QueryPlan]:
    """find_customer -> list_orders -> schedule_callback (linear, 3 steps, every value grounded)."""
    gt = [
        GTStep(
            call=ToolCall(name="find_customer", arguments={"email": "dana.kim@example.com"}),
            output={"customer_id": "CUST-0042", "name": "Dana Kim", "tier": "gold"},
            description="Find the customer by email.",
        ),
        GTStep(
            call=ToolCall(name="list_orders", arguments={"customer_id": "CUST-0042", "status": "open"}),
            output={"orders": [{"order_id": "ORD-7781", "total": 129.5}]},
            depends_on=[0],
            description="List the customer's open orders.",
        ),
        GTStep(
            call=ToolCall(
                name="schedule_callback",
                arguments={
                    "order_id": "ORD-7781",
                    "callback_date": "2026-03-19",
                    "priority": "high",
                    "attempts": 3,
                },
            ),
            output={"callback_id": "CB-9001", "scheduled": True},
            depends_on=[1],
            description="Schedule a callback about the open order.",
        ),
    ]
    record = Record(
        id="fixture-0001",
        domain="fixture",
        scenario="A customer wants a call about an order.",
        topology="linear",
        queries={},
        system_prompt="You are a support operations assistant.",
        tools=TOOLS,
        gt=gt,
        seed=7,
        version="test",
    )
    plan = QueryPlan(
        domain_title="Customer Support",
        persona="a support team lead",
        scenario="A customer asked to be called back about her open order",
        reference_date="2026-03-16",
        referents=[
            Referent(
                key="CUST-0042",
                noun="customer",
                plural="customers",
                how="search",
                step=0,
                value="dana.kim@example.com",
                field_noun="email address",
                field_gen="email",
                person=True,
            ),
            Referent(
                key="orders1", noun="order", plural="orders", how="children", step=1, source="CUST-0042"
            ),
            Referent(key="CB-9001", noun="callback", plural="callbacks", how="created", step=2),
        ],
        steps=[
            PlanStep(
                step=0,
                op="search",
                yields="CUST-0042",
                phrasings=["look up the customer with email {email}"],
                slots=[
                    Slot(
                        arg="email",
                        value="dana.kim@example.com",
                        source="query",
                        noun="the customer's email",
                        kind="text",
                    )
                ],
            ),
            PlanStep(
                step=1,
                op="list",
                target="CUST-0042",
                yields="orders1",
                phrasings=["list {customer_id}'s {status} orders"],
                slots=[
                    Slot(
                        arg="customer_id",
                        value="CUST-0042",
                        source="step",
                        from_step=0,
                        noun="the customer",
                        kind="id",
                    ),
                    Slot(arg="status", value="open", source="query", noun="the order status", kind="enum"),
                ],
            ),
            PlanStep(
                step=2,
                op="create",
                yields="CB-9001",
                about=["orders1"],
                phrasings=["book a callback for {order_id} on {callback_date} with {priority} priority"],
                slots=[
                    Slot(
                        arg="order_id",
                        value="ORD-7781",
                        source="step",
                        from_step=1,
                        noun="that open order",
                        kind="id",
                    ),
                    Slot(
                        arg="callback_date",
                        value="2026-03-19",
                        source="query",
                        noun="the callback date",
                        kind="date",
                    ),
                    Slot(arg="priority", value="high", source="query", noun="the priority", kind="enum"),
                    Slot(
                        arg="attempts", value=3, source="query", noun="the number of attempts", kind="number"
                    ),
                ],
            ),
        ],
        asides=["Dana has already called about this order twice"],
    )
    return record, plan


def rendered_linear_record(seed: int = 0) -> Record:
    from agentjudge.dataset.realiser import render_queries

    record, plan = linear_record()
    return record.model_copy(
        update={"queries": render_queries(plan, seed), "rewrite_status": {"medium": "OK", "hard": "OK"}}
    )


# ---- tests ----


def _codes(record: Record) -> set[tuple[str, str | None]]:
    return {(f.code, f.difficulty) for f in run_gates(record).findings}


def _code_set(record: Record) -> set[str]:
    return {f.code for f in run_gates(record).findings}


def _with_args(record: Record, step: int, **changes: Any) -> Record:
    gt = [s.model_copy(deep=True) for s in record.gt]
    args = dict(gt[step].call.arguments)
    for key, value in changes.items():
        if value is _DROP:
            args.pop(key)
        else:
            args[key] = value
    gt[step] = gt[step].model_copy(update={"call": ToolCall(name=gt[step].call.name, arguments=args)})
    return record.model_copy(update={"gt": gt})


def _with_query(record: Record, difficulty: str, text: str) -> Record:
    return record.model_copy(update={"queries": {**record.queries, difficulty: text}})


_DROP = object()


@pytest.mark.parametrize("seed", range(25))
def test_rendered_fixture_passes_both_gates(seed: int) -> None:
    report = run_gates(rendered_linear_record(seed))
    assert report.passed, [f"{f.code} {f.difficulty} {f.detail}" for f in report.findings]
    assert {
        "gate1:schemas",
        "gate1:graph",
        "gate1:grounding",
        "gate2:easy",
        "gate2:medium",
        "gate2:hard",
    } <= set(report.gates_run)


# ------------------------------------------------------------------ gate 1 corruptions


def test_bad_type_is_arg_schema() -> None:
    assert "arg_schema" in _code_set(_with_args(rendered_linear_record(), 2, attempts="three"))


def test_missing_required_key_is_arg_schema() -> None:
    report = run_gates(_with_args(rendered_linear_record(), 2, priority=_DROP))
    found = [f for f in report.findings if f.code == "arg_schema"]
    assert found and "priority" in found[0].detail and "required" in found[0].detail


def test_enum_violation_is_arg_schema() -> None:
    assert "arg_schema" in _code_set(_with_args(rendered_linear_record(), 2, priority="urgent"))


def test_unknown_tool() -> None:
    record = rendered_linear_record()
    gt = list(record.gt)
    gt[1] = gt[1].model_copy(update={"call": ToolCall(name="list_purchases", arguments=gt[1].call.arguments)})
    assert "unknown_tool" in _code_set(record.model_copy(update={"gt": gt}))


def test_invalid_tool_schema() -> None:
    record = rendered_linear_record()
    tools = list(record.tools)
    tools[-1] = tools[-1].model_copy(
        update={"parameters": {"type": "object", "properties": {"x": {"type": "strng"}}}}
    )
    assert "schema_invalid" in _code_set(record.model_copy(update={"tools": tools}))
    tools[-1] = tools[-1].model_copy(update={"parameters": {"type": "string"}})
    assert "schema_invalid" in _code_set(record.model_copy(update={"tools": tools}))


def _with_deps(record: Record, step: int, deps: list[int]) -> Record:
    gt = list(record.gt)
    gt[step] = gt[step].model_copy(update={"depends_on": deps})
    return record.model_copy(update={"gt": gt})


def test_cycle() -> None:
    assert "cycle" in _code_set(_with_deps(rendered_linear_record(), 0, [2]))
    assert "cycle" in _code_set(_with_deps(rendered_linear_record(), 1, [0, 1]))


def test_dangling_dependency() -> None:
    assert "dangling_dependency" in _code_set(_with_deps(rendered_linear_record(), 2, [1, 7]))


def test_topology_shape() -> None:
    record = rendered_linear_record().model_copy(update={"topology": "diamond"})
    report = run_gates(record)
    assert [f.code for f in report.findings] == ["topology_shape"]


def test_missing_dependency_makes_value_ungrounded() -> None:
    # step 2 uses ORD-7781 from step 1's output; without the edge, that value is grounded nowhere
    codes = _code_set(_with_deps(rendered_linear_record(), 2, []))
    assert "ungrounded_value" in codes


def test_value_not_grounded() -> None:
    record = _with_args(rendered_linear_record(), 2, order_id="ORD-0000")
    report = run_gates(record)
    found = [f for f in report.findings if f.code == "ungrounded_value"]
    assert found and "ORD-0000" in found[0].detail
    # the same value missing from every difficulty's query is also insufficient at each difficulty
    assert {("insufficient", d) for d in ("easy", "medium", "hard")} <= _codes(record)


class _FakeEnv:
    def __init__(self, outputs: list[Any], fail_at: int | None = None) -> None:
        self.outputs, self.fail_at, self.i = outputs, fail_at, 0

    def execute(self, call: ToolCall) -> Any:
        if self.i == self.fail_at:
            raise ToolError(f"{call.name}: no such order")
        out, self.i = self.outputs[self.i], self.i + 1
        return out

    def snapshot(self) -> dict[str, Any]:
        return {}


def test_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentjudge.dataset import world

    record = rendered_linear_record()
    outputs = [s.output for s in record.gt]
    monkeypatch.setattr(world, "make_environment", lambda r: _FakeEnv(outputs))
    report = run_gates(record)
    assert report.passed and "gate1:replay" in report.gates_run
    changed = [*outputs[:2], {"callback_id": "CB-1", "scheduled": True}]
    monkeypatch.setattr(world, "make_environment", lambda r: _FakeEnv(changed))
    assert [f.code for f in run_gates(record).findings] == ["replay_mismatch"]
    monkeypatch.setattr(world, "make_environment", lambda r: _FakeEnv(outputs, fail_at=1))
    found = run_gates(record).findings
    assert [f.code for f in found] == ["replay_mismatch"] and "no such order" in found[0].detail
    monkeypatch.setattr(world, "make_environment", lambda r: None)
    report = run_gates(record)
    assert report.passed and "gate1:replay" not in report.gates_run


# ------------------------------------------------------------------ gate 2 corruptions


def test_hard_query_dropping_a_value_is_insufficient() -> None:
    record = rendered_linear_record()
    hard = record.queries["hard"]
    assert "dana.kim@example.com" in hard
    broken = _with_query(record, "hard", hard.replace("dana.kim@example.com", "the address on her profile"))
    found = [f for f in run_gates(broken).findings]
    assert [(f.code, f.difficulty) for f in found] == [("insufficient", "hard")]
    assert "email" in found[0].detail


def test_medium_query_changing_a_date_is_insufficient() -> None:
    record = rendered_linear_record()
    medium = record.queries["medium"].replace("March 19", "March 20")
    assert ("insufficient", "medium") in _codes(_with_query(record, "medium", medium))


def test_relative_date_without_today_is_ungrounded() -> None:
    record = rendered_linear_record()
    text = (
        "The customer's email is dana.kim@example.com; her order status is open. Please book a callback for "
        "her open order in three days with high priority and three tries."
    )
    found = run_gates(_with_query(record, "hard", text)).findings
    assert [(f.code, f.difficulty) for f in found] == [("ungrounded", "hard")]
    assert "in three days" in found[0].detail and "callback_date" in found[0].detail
    anchored = "Today is Monday, March 16, 2026. " + text
    assert _codes(_with_query(record, "hard", anchored)) == set()
    # a relative word elsewhere ("follow-up needed today") is harmless when the date itself is absolute
    easy = record.queries["easy"] + ' Title it "follow-up needed today".'
    assert _codes(_with_query(record, "easy", easy)) == set()


def test_tool_name_in_medium_query() -> None:
    record = rendered_linear_record()
    medium = record.queries["medium"] + " Use schedule_callback for the last part."
    assert ("tool_name_in_query", "medium") in _codes(_with_query(record, "medium", medium))
    # easy queries may name tools (SPEC §4 restricts tool names at medium/hard only)
    easy = record.queries["easy"] + " Use schedule_callback for the last part."
    assert not any(code == "tool_name_in_query" for code, _ in _codes(_with_query(record, "easy", easy)))


def test_raw_json_in_query() -> None:
    record = rendered_linear_record()
    hard = record.queries["hard"] + ' Payload: {"order_id": "ORD-7781", "priority": "high"}'
    codes = _codes(_with_query(record, "hard", hard))
    assert ("raw_json_in_query", "hard") in codes and ("schema_field_in_query", "hard") in codes


def test_schema_field_in_query() -> None:
    record = rendered_linear_record()
    easy = record.queries["easy"] + " Put it in callback_date."
    found = [f for f in run_gates(_with_query(record, "easy", easy)).findings]
    assert [(f.code, f.difficulty) for f in found] == [("schema_field_in_query", "easy")]
    assert "callback_date" in found[0].detail


def test_unnatural_length() -> None:
    record = rendered_linear_record()
    assert ("unnatural_length", "medium") in _codes(_with_query(record, "medium", "Do it."))
    assert ("unnatural_length", "hard") in _codes(
        _with_query(record, "hard", record.queries["hard"] + " ok" * 400)
    )


def test_missing_difficulty_is_insufficient() -> None:
    record = rendered_linear_record()
    queries = {d: q for d, q in record.queries.items() if d != "hard"}
    assert ("insufficient", "hard") in _codes(record.model_copy(update={"queries": queries}))


# ------------------------------------------------------------------ foreign records


def test_foreign_record_without_edges_uses_earlier_outputs_and_skips_shape() -> None:
    record = rendered_linear_record()
    gt = [GTStep(call=s.call, output=s.output, description=s.description) for s in record.gt]
    foreign = record.model_copy(update={"gt": gt, "version": None, "seed": None, "topology": "fan_out"})
    report = run_gates(foreign)
    assert report.passed, report.findings
    # the same record claiming to be ours: missing edges are a defect, not an unknown
    ours = foreign.model_copy(update={"version": "x"})
    assert {"ungrounded_value", "topology_shape"} & _code_set(ours)


def test_reason_codes_are_documented() -> None:
    doc = gates.__doc__ or ""
    for code in gates.GATE1_CODES + gates.GATE2_CODES:
        assert code in doc


def test_missing_plain_value_beside_unanchored_tomorrow_is_insufficient() -> None:
    """An unanchored "tomorrow" explains a missing DATE only: the missing email next to it is still
    ``insufficient`` (the relative-date check must not relabel every missing value as ``ungrounded``)."""
    record = rendered_linear_record()
    text = (
        "Please find the customer who wrote in this morning, pull up her open orders and book a "
        "high-priority callback about the open one for tomorrow, with three tries."
    )
    found = run_gates(_with_query(record, "hard", text)).findings
    by_value = {
        ("email" if "email" in f.detail else "date" if "callback_date" in f.detail else "?"): f for f in found
    }
    assert sorted((f.code, f.difficulty) for f in found) == [("insufficient", "hard"), ("ungrounded", "hard")]
    assert by_value["email"].code == "insufficient" and "dana.kim@example.com" in by_value["email"].detail
    assert by_value["date"].code == "ungrounded" and "tomorrow" in by_value["date"].detail


def test_records_are_checked_in_forked_children_without_being_sent() -> None:
    """Above PARALLEL_ABOVE records the gates run in two forked children that inherit the records and the
    function: a task is a span of indices. Sending the records pickled cost more than checking them. A
    local function (unpicklable) shows nothing is pickled toward the children; the results keep the
    records' order and equal one process's, failing records included."""
    from agentjudge.dataset import validate

    good = rendered_linear_record()
    bad = _with_args(good, 0, email=7)  # a gate1 arg_schema failure
    records = [
        (bad if i % 97 == 5 else good).model_copy(update={"id": f"r-{i:04d}"})
        for i in range(validate.PARALLEL_ABOVE + 60)
    ]
    parent = os.getpid()

    def checked(record: Record) -> tuple[str, list[str], bool]:
        codes = sorted(f"{f.gate}:{f.code}" for f in validate._check_gate1(record))
        return record.id, codes, os.getpid() != parent

    forked = validate._map(checked, records, processes=2)
    assert [r[:2] for r in forked] == [checked(r)[:2] for r in records]
    planted = [r.id for i, r in enumerate(records) if i % 97 == 5]
    assert [rid for rid, codes, _ in forked if "gate1:arg_schema" in codes] == planted
    assert any(in_child for *_, in_child in forked)  # the children did the work
    assert validate._FORKED is None  # nothing is kept for the next call
    failing = validate.gate1_failures(records)
    assert list(failing) == planted
