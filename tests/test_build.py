"""The scenario builder: every domain x topology builds, deterministically, with the declared shape,
a GT that replays, arguments that fit the tool schemas, and a plan that covers every argument."""

from __future__ import annotations

import json
import os
import re
import string
import subprocess
import sys
from collections import Counter

import jsonschema
import networkx as nx
import pytest

from agentjudge import DATASET_VERSION
from agentjudge.dataset.domains import load_domain
from agentjudge.dataset.plan import QueryPlan
from agentjudge.dataset.scenario import build_scenario
from agentjudge.dataset.topologies import check_shape, dag_for
from agentjudge.dataset.world import list_domains, make_environment
from agentjudge.types import TOPOLOGIES, Record, Topology

DOMAINS = list_domains()
INDICES = (0, 1, 2)


@pytest.fixture(scope="module")
def built() -> list[tuple[Record, QueryPlan]]:
    return [build_scenario(d, t, 7, i) for d in DOMAINS for t in TOPOLOGIES for i in INDICES]


def test_every_domain_and_topology_builds_with_its_shape(built: list[tuple[Record, QueryPlan]]) -> None:
    assert len(built) == 15 * 6 * len(INDICES)
    for record, _ in built:
        names = [s.call.name for s in record.gt]
        assert check_shape(dag_for(record), record.topology, names) is None, (record.id, names)
        assert 2 <= len(record.gt) <= 5, record.id
        assert all(u < v for u, v in record.edges), record.id
        if record.topology != "loop_like":  # only the unrolled loop repeats a tool
            assert len(set(names)) == len(names), (record.id, names)


def test_record_fields(built: list[tuple[Record, QueryPlan]]) -> None:
    for record, plan in built:
        assert re.fullmatch(r"[a-z]+-\d{4}", record.id)
        assert record.id.startswith(record.domain + "-")
        assert record.queries == {} and record.rewrite_status == {} and record.validation is None
        assert record.version == DATASET_VERSION and isinstance(record.seed, int)
        assert record.system_prompt and plan.scenario == record.scenario
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", plan.reference_date)
        assert plan.domain_title and len(plan.asides) == 1
    # a scenario and a role for most requests (each only when one fits what the request changes)
    assert sum(bool(r.scenario) for r, _ in built) > 0.6 * len(built)
    assert sum(bool(p.persona) for _, p in built) > 0.6 * len(built)


def test_deterministic() -> None:
    for topology in TOPOLOGIES:
        a_rec, a_plan = build_scenario("itsm", topology, 3, 11)
        b_rec, b_plan = build_scenario("itsm", topology, 3, 11)
        assert a_rec.model_dump_json() == b_rec.model_dump_json()
        assert a_plan.model_dump_json() == b_plan.model_dump_json()
    other, _ = build_scenario("itsm", "linear", 3, 12)
    assert other.model_dump_json() != build_scenario("itsm", "linear", 3, 11)[0].model_dump_json()
    assert build_scenario("itsm", "linear", 4, 11)[0].seed != build_scenario("itsm", "linear", 3, 11)[0].seed


def test_deterministic_across_processes() -> None:
    """Seeds come from sha256, never from hash(): a different PYTHONHASHSEED gives the same record."""
    code = (
        "from agentjudge.dataset.scenario import build_scenario;"
        "r, p = build_scenario('legal', 'diamond', 9, 4); print(r.model_dump_json() + p.model_dump_json())"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": h},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for h in ("1", "2")
    }
    record, plan = build_scenario("legal", "diamond", 9, 4)
    assert outs == {record.model_dump_json() + plan.model_dump_json() + "\n"}


def test_tools_count_unique_and_cover_gt(built: list[tuple[Record, QueryPlan]]) -> None:
    counts = []
    for record, _ in built:
        names = [t.name for t in record.tools]
        counts.append(len(names))
        assert 8 <= len(names) <= 19, record.id
        assert len(set(names)) == len(names)
        assert {s.call.name for s in record.gt} <= set(names)
    assert len(set(counts)) > 3  # the count varies between records


def test_gt_arguments_and_outputs_fit_schemas(built: list[tuple[Record, QueryPlan]]) -> None:
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for record, _ in built:
        tools = {t.name: t for t in record.tools}
        for step in record.gt:
            tool = tools[step.call.name]
            jsonschema.Draft202012Validator(tool.parameters, format_checker=checker).validate(
                step.call.arguments
            )
            jsonschema.Draft202012Validator(tool.returns, format_checker=checker).validate(step.output)


def test_replaying_gt_reproduces_outputs(built: list[tuple[Record, QueryPlan]]) -> None:
    for record, _ in built:
        env = make_environment(record)
        assert env is not None
        for step in record.gt:
            assert env.execute(step.call) == step.output, (record.id, step.call)


def test_plan_covers_every_argument(built: list[tuple[Record, QueryPlan]]) -> None:
    for record, plan in built:
        assert [p.step for p in plan.steps] == list(range(len(record.gt)))
        for ps in plan.steps:
            step = record.gt[ps.step]
            assert sorted(s.arg for s in ps.slots) == sorted(step.call.arguments), record.id
            query_args = {s.arg for s in ps.slots if s.source == "query"}
            for slot in ps.slots:
                assert step.call.arguments[slot.arg] == slot.value
                if slot.source == "step":
                    assert slot.from_step in step.depends_on
                    produced = json.dumps(record.gt[slot.from_step or 0].output)
                    for v in slot.value if isinstance(slot.value, list) else [slot.value]:
                        assert json.dumps(v) in produced, (record.id, slot)
            assert ps.phrasings  # the GT step's description
            keys = {r.key for r in plan.referents}
            assert all(k in keys for k in [ps.target, ps.yields, *ps.about] if k is not None), (record.id, ps)
            for phrasing in ps.phrasings:
                fields = {f for _, f, _, _ in string.Formatter().parse(phrasing) if f}
                assert fields <= query_args, (record.id, phrasing)
                phrasing.format(**{a: "x" for a in query_args})
            assert step.description


def test_loop_like_repeats_a_tool(built: list[tuple[Record, QueryPlan]]) -> None:
    for record, _ in built:
        if record.topology == "loop_like":
            assert max(Counter(s.call.name for s in record.gt).values()) >= 2


def test_optional_step_present_exactly_when_condition_holds() -> None:
    seen = set()
    built = 0
    for i in range(30):
        try:  # a key with no feasible request is skipped, as the generator moves on to the next
            record, plan = build_scenario("retail", "optional_enrichment", 1, i)
        except RuntimeError:
            continue
        built += 1
        seen.add(record.condition_holds)
        assert plan.condition_holds == record.condition_holds and plan.condition_text
        conditional = [p for p in plan.steps if p.conditional]
        assert len(conditional) == (1 if record.condition_holds else 0), record.id
        if conditional:
            assert conditional[0].step == len(record.gt) - 1
    assert seen == {True, False} and built >= 25
    other, _ = build_scenario("retail", "linear", 1, 0)
    assert other.condition_holds is None


def test_conditional_step_says_what_its_condition_asks_for() -> None:
    """holds[i] is the reason for texts[i] / choices[i]: "travelling with a cello" gets the instrument
    remark, never an unrelated note."""
    checked = 0
    for slug in DOMAINS:
        tools = {t.name: t for t in load_domain(slug).tools}
        for i in range(8):
            record, plan = build_scenario(slug, "optional_enrichment", 5, i)
            if not record.condition_holds:
                continue
            call = record.gt[-1].call
            spec = tools[call.name]
            assert spec.condition is not None
            k = spec.condition.holds.index(plan.condition_text or "")
            if spec.op == "annotate":
                assert call.arguments["note"] == spec.texts[k], record.id
            elif spec.op == "message":
                assert call.arguments["template"] == spec.choices[k], record.id
                if "email" in (plan.condition_text or ""):
                    assert call.arguments["channel"] == "email", record.id
            checked += 1
    assert checked >= 30


def _records_touched(record: Record) -> dict[str, set[str]]:
    """Entity kind -> the ids of the records the non-final GT calls search for or read."""
    dom = load_domain(record.domain)
    tools = {t.name: t for t in dom.tools}
    seen: dict[str, set[str]] = {}
    for step in record.gt[:-1]:
        t = tools[step.call.name]
        key = dom.entities[t.entity].id_key
        if t.op == "search":
            seen.setdefault(t.entity, set()).add(step.output[key])
        elif t.op == "get":
            seen.setdefault(t.entity, set()).add(step.call.arguments[key])
    return seen


def test_fan_in_branches_never_name_two_records_of_one_kind(built: list[tuple[Record, QueryPlan]]) -> None:
    """A request such as 'notify the technician about that employee' is ambiguous when one branch finds an
    employee by email and the other reads another employee's record to reach the technician."""
    fan_ins = [r for r, _ in built if r.topology == "fan_in"]
    assert len(fan_ins) == 15 * len(INDICES)
    for record in fan_ins:
        for kind, ids in _records_touched(record).items():
            assert len(ids) == 1, (record.id, kind, ids)


def test_nearly_every_gt_changes_state(built: list[tuple[Record, QueryPlan]]) -> None:
    """An end-state comparison says nothing about a read-only GT; only a few linear list -> aggregate
    chains are left read-only (so aggregate tools still appear)."""
    read_only = []
    for record, _ in built:
        ops = {t.name: t.op for t in load_domain(record.domain).tools}
        if all(ops[s.call.name] in ("search", "get", "list", "aggregate") for s in record.gt):
            read_only.append(record)
    assert all(r.topology == "linear" for r in read_only), [r.id for r in read_only]
    assert len(read_only) <= 0.05 * len(built)


def _graph(n: int, edges: list[tuple[int, int]]) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    return g


CHAIN = _graph(3, [(0, 1), (1, 2)])
STAR = _graph(3, [(0, 1), (0, 2)])
FUNNEL = _graph(3, [(0, 2), (1, 2)])
DIAMOND = _graph(4, [(0, 1), (0, 2), (1, 3), (2, 3)])
ENRICHED = _graph(4, [(0, 1), (1, 2), (1, 3)])
LOOP = _graph(4, [(0, 1), (1, 2), (1, 3)])
LOOP_TOOLS = ["search", "list", "update", "update"]
PLAIN = ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    ("graph", "topology", "tools", "ok"),
    [
        (CHAIN, "linear", PLAIN, True),
        (CHAIN, "fan_out", PLAIN, False),
        (CHAIN, "fan_in", PLAIN, False),
        (CHAIN, "diamond", PLAIN, False),
        (CHAIN, "loop_like", PLAIN, False),
        (CHAIN, "optional_enrichment", PLAIN, True),
        (STAR, "fan_out", PLAIN, True),
        (STAR, "linear", PLAIN, False),
        (STAR, "fan_in", PLAIN, False),
        (FUNNEL, "fan_in", PLAIN, True),
        (FUNNEL, "fan_out", PLAIN, False),
        (FUNNEL, "optional_enrichment", PLAIN, False),
        (DIAMOND, "diamond", PLAIN, True),
        (DIAMOND, "linear", PLAIN, False),
        (DIAMOND, "fan_in", PLAIN, False),
        (DIAMOND, "fan_out", PLAIN, False),
        (ENRICHED, "optional_enrichment", PLAIN, True),
        (ENRICHED, "linear", PLAIN, False),
        (LOOP, "loop_like", LOOP_TOOLS, True),
        (LOOP, "loop_like", PLAIN, False),
        (_graph(3, [(0, 1), (0, 2), (1, 2)]), "diamond", PLAIN, False),
        (_graph(3, [(0, 1)]), "linear", PLAIN, False),  # disconnected
        (_graph(6, [(i, i + 1) for i in range(5)]), "linear", PLAIN * 2, False),  # too long
        (_graph(1, []), "linear", PLAIN, False),
    ],
)
def test_check_shape(graph: nx.DiGraph, topology: str, tools: list[str], ok: bool) -> None:
    reason = check_shape(graph, topology, tools)  # type: ignore[arg-type]
    assert (reason is None) == ok, reason


def test_check_shape_rejects_real_records_under_other_shapes(built: list[tuple[Record, QueryPlan]]) -> None:
    strict_pairs: set[tuple[Topology, Topology]] = {
        ("diamond", "linear"),
        ("diamond", "fan_out"),
        ("fan_out", "linear"),
        ("loop_like", "linear"),
        ("fan_in", "linear"),
        ("fan_in", "fan_out"),
        ("linear", "fan_in"),
        ("linear", "diamond"),
    }
    for record, _ in built:
        names = [s.call.name for s in record.gt]
        for actual, declared in strict_pairs:
            if record.topology == actual:
                assert check_shape(dag_for(record), declared, names) is not None, (record.id, declared)


def test_unknown_domain_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="unknown domain 'nope'"):
        build_scenario("nope", "linear", 0, 0)


def test_a_notification_subject_fits_what_it_is_about() -> None:
    """ "reserve change needs sign-off" goes with a claim, never with a new inspection; "VIP on board"
    only with a gold or platinum passenger: a subject goes only with the records its domain ties it to."""
    from agentjudge.dataset import rules

    checked = 0
    for domain in ("insurance", "mfg", "logistics", "supply", "airline"):
        dom = load_domain(domain)
        notify = next(t for t in dom.tools if t.op == "notify")
        for topology in ("diamond", "fan_in", "linear"):
            for index in range(8):
                record, _ = build_scenario(domain, topology, 500 + index, index)  # type: ignore[arg-type]
                assert [v for v in rules.violations(record) if v[0] == "fit"] == [], record.id
                checked += sum(step.call.name == notify.name for step in record.gt)
    assert checked > 20


def test_amounts_are_said_as_amounts_not_as_field_names() -> None:
    """ "number of customers affected 4,051" / "number of days 5" read as a form; say "4,051 customers
    affected", "5 days", "a weight of 12 kg"."""
    from agentjudge.dataset.realiser import _amount

    assert _amount("number of customers affected", "4,051", 4051) == "4,051 customers affected"
    assert _amount("number of days", "one", 1) == "a duration of one day"
    assert _amount("weight in kg", "12", 12) == "a weight of 12 kg"
    assert _amount("minutes lost", "45", 45) == "45 minutes lost"
    assert _amount("quantity", "388", 388) == "a quantity of 388"
    for domain in ("grid", "hr", "mfg"):
        for index in range(6):
            record, plan = build_scenario(domain, "fan_in", 700 + index, index)
            from agentjudge.dataset.realiser import render_queries

            for text in render_queries(plan, index).values():
                assert not re.search(r"\bnumber of [a-z ]+ [\d,]+\b", text), text


def test_a_changed_date_lies_ahead_where_its_field_allows_the_future() -> None:
    """retail-0244 (final audit): "change the delivery date of every order … to five days ago". A stored
    delivery date may be past; a date someone changes it to lies ahead, unless the field only holds past
    dates (a date of loss)."""
    checked = 0
    for slug in DOMAINS:
        dom = load_domain(slug)
        for topology in ("fan_out", "loop_like", "linear"):
            for index in range(4):
                record, plan = build_scenario(slug, topology, 900 + index, index)  # type: ignore[arg-type]
                today = plan.reference_date[:10]
                for step in plan.steps:
                    if step.op != "update":
                        continue
                    tool = next(t for t in dom.tools if t.name == record.gt[step.step].call.name)
                    spec = dom.entities[tool.entity].fields[tool.field or ""]
                    for slot in step.slots:
                        if slot.source == "query" and slot.kind == "date":
                            value = str(slot.value)[:10]
                            assert (value > today) if spec.max >= 2 else (value < today), (record.id, value)
                            checked += 1
    assert checked >= 20
