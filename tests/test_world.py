"""The world behind the queries: changes a person in the role would ask for, records that agree with each
other, context tied to the request, tools whose descriptions say what their parameters do, and "its"
pointing at the record the GT takes. Every check runs over every domain, and each is shown to fail on the
defect it is about (planted, or as the previous data had it)."""

from __future__ import annotations

import datetime as dt
import re
from functools import cache

import pytest

from agentjudge.dataset import rules, toolschemas
from agentjudge.dataset.domains import COMMON_ASIDES, load_domain
from agentjudge.dataset.gates_semantic import _possessives
from agentjudge.dataset.plan import QueryPlan
from agentjudge.dataset.realiser import render_queries
from agentjudge.dataset.scenario import actions, build_scenario, matches
from agentjudge.dataset.world import initial_state, list_domains
from agentjudge.types import TOPOLOGIES, GTStep, Record, ToolCall, ToolSchema

DOMAINS = list_domains()


@cache
def built() -> list[tuple[Record, QueryPlan]]:
    """Four requests per domain and topology; a key with no feasible request is skipped, as the generator
    moves on to the next (one of the 360 today: an mfg world whose lines hold no machines in one state)."""
    out = []
    for d in DOMAINS:
        for t in TOPOLOGIES:
            for i in range(4):
                try:
                    out.append(build_scenario(d, t, 31, i))
                except RuntimeError:
                    continue
    assert len(out) >= 0.98 * len(DOMAINS) * len(TOPOLOGIES) * 4
    return out


# ---------------------------------------------------------------- the rules of each domain


def test_the_gt_of_every_domain_follows_its_rules() -> None:
    """No lifecycle move the field forbids, no change to a record not in a state for it, no extension of
    a lapsed date, no bulk change that makes no sense on every listed record, no new record on a record
    it may not point at, no note or subject that does not fit, no office date on a weekend, no records
    that contradict each other, no outside party on the company's mail domain."""
    found = {(r.id, v) for r, _ in built() for v in rules.violations(r)}
    assert found == set()
    changed = sum(1 for r, _ in built() for s in r.gt if s.call.name.startswith(("update", "set", "change")))
    assert changed > 100  # the check saw many changes


@pytest.mark.parametrize(
    ("domain", "entity", "field", "current", "new", "ok"),
    [
        ("secops", "alert", "status", "false_positive", "contained", False),  # contain a false positive
        ("secops", "alert", "status", "triaging", "contained", True),
        ("insurance", "claim", "status", "paid", "reported", False),
        ("finance", "account", "account_status", "closed", "dormant", False),
        ("health", "appointment", "status", "cancelled", "confirmed", False),
        ("itsm", "ticket", "status", "resolved", "in_progress", False),  # no reopening
        ("legal", "matter", "status", "closed", "open", False),
        ("telecom", "subscriber", "contract_end", "2026-01-01", "2026-06-01", False),  # lapsed (today below)
        ("telecom", "subscriber", "contract_end", "2026-04-01", "2026-03-20", False),  # not later
        ("telecom", "subscriber", "contract_end", "2026-04-01", "2026-06-01", True),
        ("itsm", "ticket", "due_date", "2026-03-02", "2026-03-07", False),  # a Saturday
        ("itsm", "ticket", "due_date", "2026-03-02", "2026-03-06", True),
    ],
)
def test_a_change_is_one_the_rules_allow(
    domain: str, entity: str, field: str, current: str, new: str, ok: bool
) -> None:
    f = load_domain(domain).entities[entity].fields[field]
    assert rules.allowed(f, current, new, dt.date(2026, 2, 16)) is ok


def test_bulk_and_state_rules_read_a_record() -> None:
    """A planted record: the builder's loop over leave requests, its start date set on every one of them
    ("move three leave requests to one start date") and a closed case given a new priority are flagged."""
    record = next(r for r, _ in built() if r.domain == "hr" and r.topology == "loop_like")
    body = [s for s in record.gt if s.depends_on and s.call.name != record.gt[0].call.name][1:]
    assert len(body) >= 2
    moved = [
        s.model_copy(
            update={
                "call": ToolCall(
                    name="move_leave_start_date",
                    arguments={
                        "leave_request_id": s.call.arguments["leave_request_id"],
                        "start_date": "2027-01-04",
                    },
                )
            }
        )
        for s in body
    ]
    planted = record.model_copy(update={"gt": [*record.gt[: len(record.gt) - len(body)], *moved]})
    assert {c for c, _ in rules.violations(planted)} >= {"bulk"}


@pytest.mark.parametrize(
    ("domain", "entity", "field", "current", "new", "together"),
    [
        ("logistics", "shipment", "status", "in_transit", "delivered", False),  # each is delivered alone
        ("logistics", "shipment", "status", "in_transit", "held", True),  # a depot's loads held together
        ("itsm", "asset", "lifecycle_status", "in_use", "retired", False),  # nobody retires all one uses
        ("itsm", "asset", "lifecycle_status", "in_use", "spare", False),  # a person still uses them
        ("itsm", "asset", "lifecycle_status", "in_repair", "spare", True),  # a batch back from repair
        ("mfg", "job", "status", "paused", "running", False),  # jobs restart one at a time
        ("itsm", "asset", "lifecycle_status", "spare", "retired", False),  # stock is written off item by item
        ("logistics", "shipment", "status", "booked", "picked_up", False),  # each collection is its own
        ("insurance", "claim", "status", "under_review", "denied", False),  # each claim is decided alone
        ("finance", "account", "account_status", "active", "frozen", True),  # no bulk_next: every move
        ("mfg", "machine", "machine_status", "maintenance", "idle", False),  # each is signed off alone
        ("legal", "matter", "status", "on_hold", "open", False),  # each matter is taken up on its own
        ("legal", "matter", "status", "open", "closed", False),  # a live matter is closed on its own
        ("insurance", "policy", "policy_status", "suspended", "active", False),  # each reinstated alone
    ],
)
def test_a_bulk_change_makes_only_the_moves_made_on_many_records_at_once(
    domain: str, entity: str, field: str, current: str, new: str, together: bool
) -> None:
    """Every case is a move one record may make; only some are made on every listed record in one go."""
    f = load_domain(domain).entities[entity].fields[field]
    assert rules.allowed(f, current, new, dt.date(2026, 2, 16))
    assert (new in (rules.targets(f, current, bulk=True) or [])) is together


def test_a_letter_goes_by_the_way_its_recipient_asked_to_hear() -> None:
    """ "Change the preferred contact method … to phone. Message the policyholder by email" (the reading's
    insurance-0185): a letter goes by the channel its recipient prefers at that point of the request, and
    none follows a request to be phoned."""
    from agentjudge.dataset.world import make_environment

    dom = load_domain("insurance")
    t = next(t for t in dom.tools if t.name == "send_policyholder_letter")
    assert rules.preferred_channels(t, {"preferred_contact": "post"}) == ["postal_mail"]
    assert rules.preferred_channels(t, {"preferred_contact": "phone"}) == []
    key = dom.entities[t.entity].id_key
    checked = changed_first = 0
    for i in range(80):
        try:
            record, _ = build_scenario("insurance", "optional_enrichment", 91, i)
        except RuntimeError:
            continue
        env = make_environment(record)
        assert env is not None
        set_before = False
        for step in record.gt:  # replayed, so each letter sees the preference as the request left it
            if step.call.name == t.name:
                row = env.state["entities"][t.entity][step.call.arguments[key]]
                assert not (set_before and row["preferred_contact"] == "phone"), record.id
                named = rules.preferred_channels(t, row)
                assert not named or step.call.arguments["channel"] in named, (record.id, row)
                checked += 1
                changed_first += set_before
            set_before |= step.call.name == "set_contact_preference"
            env.execute(step.call)
    assert checked >= 5 and changed_first >= 1  # letters seen, some after the preference was set


def test_a_loop_that_retires_every_asset_of_a_person_is_flagged() -> None:
    """The builder's loop over a person's assets only brings a batch back from repair; planted to retire
    them all (as the independent reading found: "retire every asset of Grace Iyer", laptop and phone in
    use), the same record is flagged ``bulk``."""
    from agentjudge.dataset.world import make_environment

    record = next(
        r
        for r, _ in (build_scenario("itsm", "loop_like", 31, i) for i in range(8, 30))
        if any(s.call.name == "update_asset_status" for s in r.gt)
    )
    assets = make_environment(record).state["entities"]["asset"]  # type: ignore[union-attr]
    steps = [s for s in record.gt if s.call.name == "update_asset_status"]
    assert len(steps) >= 2
    assert {assets[s.call.arguments["asset_id"]]["lifecycle_status"] for s in steps} == {"in_repair"}
    assert rules.violations(record) == []

    def retire(step: GTStep) -> GTStep:
        arguments = {**step.call.arguments, "lifecycle_status": "retired"}
        return step.model_copy(update={"call": step.call.model_copy(update={"arguments": arguments})})

    planted = record.model_copy(
        update={"gt": [retire(s) if s.call.name == "update_asset_status" else s for s in record.gt]}
    )
    found = rules.violations(planted)
    assert {c for c, _ in found} == {"bulk"}, found


def test_records_in_one_world_agree() -> None:
    """Every ``same_as`` holds (an alert's owner is its host's owner, a service order's subscriber owns its
    device), office dates fall on working days, outside parties write from their own domains, and a
    seeded value is one the field starts with (no flight forty days out is boarding), and a finished
    record's ``past`` date lies before today (no completed work order scheduled for next week)."""
    pasts = 0
    for slug in DOMAINS:
        dom = load_domain(slug)
        for seed in range(12):
            state = initial_state(dom, seed)
            today = dt.date.fromisoformat(state["reference_date"])
            ents = state["entities"]
            for kind, table in ents.items():
                spec = dom.entities[kind]
                for row in table.values():
                    assert rules.agrees(dom, kind, row, ents) == [], (slug, seed, row)
                    for name, f in spec.fields.items():
                        if f.workdays and row[name] is not None:  # None: no date on it (``only``)
                            assert dt.date.fromisoformat(row[name]).weekday() < 5, (slug, name, row[name])
                        if f.domains:
                            assert row[name].split("@")[1] in f.domains, (slug, row[name])
                        if f.seeded:
                            assert row[name] in f.seeded, (slug, name, row[name])
                        if f.past and row[name] is not None and all(row[k] in v for k, v in f.past.items()):
                            pasts += 1
                            assert dt.date.fromisoformat(row[name]) < today, (slug, name, row)
    assert pasts > 100  # many finished records hold a date that must lie behind them
    assert any(
        f.same_as for d in DOMAINS for e in load_domain(d).entities.values() for f in e.fields.values()
    )


# ---------------------------------------------------------------- context tied to the request


def test_scenario_persona_and_aside_fit_what_the_request_changes() -> None:
    for record, plan in built():
        dom = load_domain(record.domain)
        ctx_actions = [(s.call.name, _values(s.call.arguments)) for s in record.gt]
        done = [(name, vals) for name, vals in ctx_actions if _changes(dom, name)]
        if plan.scenario:  # about the goal: the last change (every change of a fan-out), not an optional step
            scenario = next(c for c in dom.scenarios if c.text == plan.scenario)
            main = [
                (s.call.name, _values(s.call.arguments))
                for s, p in zip(record.gt, plan.steps, strict=True)
                if _changes(dom, s.call.name) and not p.conditional
            ]
            goal = main if record.topology == "fan_out" else main[-1:]
            # a fan-out's changes are equals: its scenario explains each ("the annual pay review" is no
            # reason for an onboarding task beside a new grade)
            assert all(any(matches(e, [a]) for e in scenario.tools) for a in goal), (record.id, plan.scenario)
            assert scenario.dates is None or scenario.dates.allows(dt.date.fromisoformat(plan.reference_date))
        if plan.persona:
            persona = next(p for p in dom.personas if p.role == plan.persona)
            assert all(any(matches(e, [a]) for e in persona.tools) for a in done), (record.id, plan.persona)
        (aside,) = plan.asides
        if aside not in COMMON_ASIDES:
            fit = next(c for c in dom.asides if c.text == aside)
            assert any(matches(e, done) for e in fit.tools), (record.id, aside)


def _changes(dom: object, name: str) -> bool:
    spec = next(t for t in dom.tools if t.name == name)  # type: ignore[attr-defined]
    return spec.op not in ("search", "get", "list", "aggregate")


def _values(args: dict[str, object]) -> set[str]:
    return {str(v) for v in args.values() if isinstance(v, str | int | float)}


def test_build_actions_is_what_the_context_is_matched_against() -> None:
    """``scenario.actions`` (the builder's reading of a request's changes) agrees with the GT."""
    for record, _ in built()[:40]:
        dom = load_domain(record.domain)
        from agentjudge.dataset._calls import Ctx
        from agentjudge.dataset.world import DomainEnvironment

        ctx = Ctx(dom, DomainEnvironment(record.domain, record.seed or 0), None)  # type: ignore[arg-type]
        ctx.gt = record.gt
        assert [name for name, _ in actions(ctx)] == [
            s.call.name for s in record.gt if _changes(dom, s.call.name)
        ]


# ---------------------------------------------------------------- tool descriptions


@pytest.mark.parametrize("slug", DOMAINS)
def test_every_tool_description_names_only_what_its_parameters_can_do(slug: str) -> None:
    assert toolschemas.domain_description_problems(slug) == []


def test_a_description_that_promises_more_than_the_parameters_is_found() -> None:
    """The three defects of the previous data, planted back into today's schemas."""
    schemas = toolschemas.tool_schemas("itsm")
    tickets = schemas["list_employee_tickets"]
    params = {**tickets.parameters, "properties": dict(tickets.parameters["properties"])}
    params["properties"].pop("status")
    params["properties"]["priority"] = {"type": "string", "enum": ["low", "high"]}
    bad = ToolSchema(name=tickets.name, description=tickets.description, parameters=params)
    assert toolschemas.description_problems("itsm", bad) == [
        "says 'filtered by status' but its filter is priority"
    ]
    sms = toolschemas.tool_schemas("telecom")["send_subscriber_sms"]
    offered = {**sms.parameters, "properties": {**sms.parameters["properties"]}}
    offered["properties"]["channel"] = {"type": "string", "enum": ["email", "sms", "postal_mail"]}
    problems = toolschemas.description_problems("telecom", sms.model_copy(update={"parameters": offered}))
    assert problems and "sends by" in problems[0]


def test_a_kind_named_after_one_of_its_roles_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """telecom's agents were all "account managers", also the agent handling a service order: a
    notification tool "to an account manager" then misleads whoever reads the schema."""
    dom = load_domain("telecom")
    agent = dom.entities["agent"].model_copy(update={"noun": "account manager"})
    old = dom.model_copy(update={"entities": {**dom.entities, "agent": agent}})
    monkeypatch.setattr(toolschemas, "load_domain", lambda slug: old)
    schema = toolschemas.tool_schemas("telecom")["notify_agent"].model_copy(
        update={
            "description": "Send an internal notification to an account manager about one or more records."
        }
    )
    (problem,) = toolschemas.description_problems("telecom", schema)
    assert "handling agent" in problem


# ---------------------------------------------------------------- "its" after a chain of two records


def test_a_possessive_after_a_chain_names_the_record_the_gt_takes() -> None:
    """ "about the supplier on purchase order PO-1 to its account buyer": "its" can be the order, which
    has a buyer of its own, while the GT takes the supplier's. Over every domain, an "its"/"their" before
    a relation the GT reads follows the record it is read from; the realiser says "the supplier's account
    buyer" after such a chain."""
    checked = 0
    for record, plan in built():
        queries = render_queries(plan, 5)
        assert _possessives(record, queries) == [], (record.id, queries)
        checked += any(re.search(r"\b(?:its|their) ", q) for q in queries.values())
    assert checked > 50
    for record, plan in built():
        if record.domain != "supply":
            continue
        for d, q in render_queries(plan, 5).items():
            m = re.search(r"the supplier on purchase order PO-\d+ to the supplier's account buyer", q)
            if m:
                planted = q.replace("the supplier's account buyer", "its account buyer")
                (finding,) = _possessives(record, {d: planted})
                assert "account buyer" in finding.detail
                return
    for slug in ("supply",):
        for index in range(60):
            record, plan = build_scenario(slug, "linear", 700 + index, index)
            for d, q in render_queries(plan, index).items():
                if "the supplier's account buyer" in q and "the supplier on purchase order" in q:
                    planted = q.replace("the supplier's account buyer", "its account buyer")
                    assert _possessives(record, {d: planted}), planted
                    return
    pytest.fail("no supply query names the supplier on a purchase order and then its account buyer")


def test_a_message_follows_the_change_it_reports() -> None:
    """ "send the employee the 'leave decision' email" with no decision in the request, an "order update"
    with no order, an optional "upgrade confirmation" with no upgrade: a template that reports a change goes
    only with that change (an optional step may send one the person asks for at any time, its reason says
    so)."""
    checked = 0
    for record, plan in built():
        dom = load_domain(record.domain)
        specs = {t.name: t for t in dom.tools}
        done: list[tuple[str, set[str]]] = []
        for step, ps in zip(record.gt, plan.steps, strict=True):
            t = specs[step.call.name]
            if t.op == "message":
                template = step.call.arguments["template"]
                asked = ps.conditional and template in t.standing  # "the shipper asked for a delivery update"
                if template in t.follows and not asked:
                    assert any(matches(e, done) for e in t.follows[template]), (record.id, template, done)
                checked += 1
            if _changes(dom, t.name):
                done.append((t.name, rules.step_values(t, step.call.arguments)))
    assert checked >= 5


def test_a_subject_that_reports_a_change_goes_with_that_change() -> None:
    """ "case reassigned to you" with nothing reassigned (the reading's support-0173): a notification
    subject a domain ties to a change (``follows``) is sent only after the request makes it."""
    dom = load_domain("support")
    specs = {t.name: t for t in dom.tools}
    assert specs["notify_agent"].follows == {"case reassigned to you": ["assign_case"]}
    notified = 0
    for topology in TOPOLOGIES:
        for i in range(40):
            try:
                record, _ = build_scenario("support", topology, 31, i)
            except RuntimeError:
                continue
            done: list[tuple[str, set[str]]] = []
            for step in record.gt:
                t = specs[step.call.name]
                subject = step.call.arguments.get("subject")
                if t.op == "notify":
                    notified += 1
                    if subject in t.follows:
                        assert any(matches(e, done) for e in t.follows[subject]), (record.id, subject)
                if _changes(dom, t.name):
                    done.append((t.name, rules.step_values(t, step.call.arguments)))
    assert notified >= 30  # many notifications read


def test_an_amount_changes_by_at_most_half_or_double() -> None:
    checked = 0
    extra = [
        build_scenario(d, t, 41, i)[0]
        for d in ("retail", "finance", "telecom", "grid", "insurance", "supply", "mfg")
        for t in ("fan_out", "linear", "optional_enrichment")
        for i in range(20)
    ]
    for record in [r for r, _ in built()] + extra:
        dom = load_domain(record.domain)
        for step in record.gt:
            t = next(x for x in dom.tools if x.name == step.call.name)
            if t.op != "update" or dom.entities[t.entity].fields[t.field or ""].gen not in ("amount", "int"):
                continue
            before, after = step.output[f"previous_{t.field}"], step.output[t.field or ""]
            if before and before > 0:
                assert 0.5 * before <= after <= 2 * before, (record.id, t.name, before, after)
                checked += 1
    assert checked >= 5


def test_a_claims_loss_fits_its_policy() -> None:
    """A travel policy covers no hail damage: a planted claim of the wrong kind breaks ``given``."""
    for index in range(40):
        record, _ = build_scenario("insurance", "fan_in", 300 + index, index)
        claims = [i for i, s in enumerate(record.gt) if s.call.name == "file_claim"]
        if claims:
            break
    else:
        pytest.fail("no insurance fan_in files a claim in 40 indices")
    (i,) = claims
    assert rules.violations(record) == []
    env_product = initial_state(load_domain("insurance"), record.seed or 0)["entities"]["policy"][
        record.gt[i].call.arguments["policy_id"]
    ]["product"]
    allowed = (
        load_domain("insurance").entities["claim"].fields["loss_type"].given["policy_id.product"][env_product]
    )
    wrong = next(v for v in ("hail_damage", "water_leak", "collision", "theft", "fire") if v not in allowed)
    step = record.gt[i]
    planted_step = step.model_copy(
        update={"call": ToolCall(name=step.call.name, arguments={**step.call.arguments, "loss_type": wrong})}
    )
    planted = record.model_copy(update={"gt": [*record.gt[:i], planted_step, *record.gt[i + 1 :]]})
    assert "accepts" in {c for c, _ in rules.violations(planted)}, env_product
