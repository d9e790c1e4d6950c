"""What a domain expert reading a request checks against its records, one test per class of defect an
independent reading found, over every domain, each shown to fail on the defect it is about (planted, or
the builder's own check switched off):

- a background sentence or aside asserts only what the records of the request show ("repairs finished and
  machines are coming back" for machines that were running, "sold-out pieces" for a product running low,
  "moving desks" for a remote worker, "one of our larger contracts by value" for a small one, "travels with
  us most weeks" at the lowest tier, "reliable until now" beside a note of late deliveries);
- records agree with the records they point at, seeded ones too (a water-leak claim on a travel policy;
  an overdraft limit on a savings account; a card on a savings account);
- the requester's role is one that makes every change of the request (a station controller does not
  answer a passenger's complaint);
- an optional step said not to be needed is said of its record, with its tool on offer (not a stray
  "there are no special handling instructions" beside a dock closure)."""

from __future__ import annotations

import datetime as dt
import re
from functools import cache

import pytest

from agentjudge.dataset import rules, scenario
from agentjudge.dataset.domains import COMMON_ASIDES, asserted, load_domain
from agentjudge.dataset.plan import QueryPlan
from agentjudge.dataset.realiser import render_queries
from agentjudge.dataset.scenario import build_scenario
from agentjudge.dataset.world import initial_state, list_domains
from agentjudge.types import TOPOLOGIES, Record, ToolCall

DOMAINS = list_domains()


def _rendered(record: Record, plan: QueryPlan) -> Record:
    return record.model_copy(update={"queries": render_queries(plan, record.seed or 0)})


def _builds() -> list[tuple[Record, QueryPlan]]:
    """Six requests per domain and topology (a key with no feasible request is skipped, as the generator
    moves on to the next)."""
    out = []
    for d in DOMAINS:
        for t in TOPOLOGIES:
            for i in range(6):
                try:
                    out.append(build_scenario(d, t, 57, i))
                except RuntimeError:
                    continue
    return out


@cache
def built() -> list[tuple[Record, QueryPlan]]:
    return [(_rendered(record, plan), plan) for record, plan in _builds()]


# ---------------------------------------------------------------- context asserts what the records show


def test_every_scenario_and_aside_fits_the_records_of_its_request() -> None:
    """Over every domain: no scenario or aside that asserts a state its records do not have (before the
    request, or after it for what the request itself does), that goes with none of its changes, or that
    contradicts one of them."""
    checked = 0
    for record, plan in built():
        assert rules.context_problems(record) == [], (record.id, plan.scenario, plan.asides)
        dom = load_domain(record.domain)
        said = " ".join(record.queries.values())
        tied = [
            c
            for c in [*dom.scenarios, *dom.asides]
            if (c.text == record.scenario or c.text in said)
            and (c.when or c.if_named or asserted(dom, c.text))
        ]
        checked += bool(tied)
    assert checked > 40  # the check read many sentences tied to a state


def test_a_scenario_that_says_when_goes_with_no_aside_that_says_how_long() -> None:
    """ "A batch of lab results came back this morning." beside "It's been on my list for a couple of
    days." tells two stories (the independent reading's health-0190): when the scenario places its event
    in time, the requester's aside does not; and the reader (``rules.context_problems``) finds the pair
    when it is planted in a built request."""
    timed = [a for a in COMMON_ASIDES if rules.two_stories("overnight", a)]
    assert "It's been on my list for a couple of days." in timed and len(timed) < len(COMMON_ASIDES) / 3
    both = 0
    for record, plan in built():
        if rules.two_stories(plan.scenario, "today"):
            both += 1
            assert not set(plan.asides) & set(timed), (record.id, plan.scenario, plan.asides)
            if both == 1:  # plant the pair: the reader must see it
                hard = record.queries["hard"] + " It's been on my list for a couple of days."
                planted = record.model_copy(update={"queries": {**record.queries, "hard": hard}})
                assert any("each say when" in why for _, why in rules.context_problems(planted))
    assert both >= 5  # many scenarios say when


def test_an_aside_never_names_the_requesters_own_team_as_another_party() -> None:
    """ "Compliance officer here … Compliance flagged this one to us." (the reading's legal-0230): the
    requester and the team an aside speaks of would be two parties. The builder never picks such an aside,
    and the reader finds one planted under a role the query says."""
    assert rules.names_own_team("Compliance flagged this one to us.", "a compliance officer")
    assert not rules.names_own_team("Compliance flagged this one to us.", "a claims manager")
    named = 0
    for record, plan in built():
        # the domain's asides (a common one is the requester's own: "My shift ends soon" under a shift
        # manager speaks of their own shift)
        own = {c.text for c in load_domain(record.domain).asides}
        for aside in own & set(plan.asides):
            assert not rules.names_own_team(aside, plan.persona), (record.id, plan.persona, aside)
        named += bool(plan.asides and re.search(r"[a-z]{5,}", plan.persona))
    assert named > 50  # many requests have a role with a team word and an aside
    legal = load_domain("legal")
    team_aside = next(c for c in legal.asides if rules.names_own_team(c.text, "a compliance officer"))
    role = next(p.role for p in legal.personas if rules.names_own_team(team_aside.text, p.role))
    record = next(r for r, plan in built() if r.domain == "legal" and plan.persona == role)
    planted = record.model_copy(
        update={"queries": {**record.queries, "hard": f"{record.queries['hard']} {team_aside.text}"}}
    )
    assert any("own team" in why for _, why in rules.context_problems(planted))


def test_with_the_builders_check_off_the_reader_finds_misfits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The builder picks context with ``rules.context_fits``; with it answering yes to everything (as the
    builder did before), the same requests carry context their records contradict, and the reader
    (``rules.context_problems``) finds them."""
    with monkeypatch.context() as m:
        m.setattr(scenario.rules, "context_fits", lambda *a, **k: True)
        loose = _builds()
    found = [x for record, plan in loose for x in rules.context_problems(_rendered(record, plan))]
    assert len(found) >= 20, found


def _state(slug: str, kind: str, values: dict[str, object]) -> tuple[dict, str, dt.date]:
    """A world of ``slug`` with the first record of ``kind`` given ``values``; (entities, its id, today)."""
    state = initial_state(load_domain(slug), 3)
    rid = next(iter(state["entities"][kind]))
    state["entities"][kind][rid].update(values)
    return state["entities"], rid, dt.date.fromisoformat(state["reference_date"])


def _context(slug: str, text: str):  # noqa: ANN202 - a domain's Context
    dom = load_domain(slug)
    return next(c for c in [*dom.scenarios, *dom.asides] if c.text == text)


@pytest.mark.parametrize(
    ("slug", "text", "kind", "wrong", "right", "done"),
    [
        # the independent reading's findings, each as it was and as it may be said
        (
            "itsm",
            "Several people are moving desks and their workstations need to be ready.",
            "employee",
            {"work_location": "remote"},
            {"work_location": "headquarters"},
            [("notify_technician", {"workstation to prepare"})],
        ),
        (
            "retail",
            "Customers keep asking when sold-out pieces will be back.",
            "product",
            {"availability": "low_stock"},
            {"availability": "backordered"},
            [("set_restock_date", {"2026-03-02"})],
        ),
        (
            "mfg",
            "Repairs on the moulding cell finished and machines are coming back.",
            "machine",
            {"machine_status": "running"},
            {"machine_status": "down"},
            [("set_machine_status", {"idle"})],
        ),
        (
            "legal",
            "The contract is one of our larger ones by value.",
            "contract",
            {"annual_value": 13230.87},
            {"annual_value": 180000.0},
            [("set_renewal_date", {"2026-05-04"})],
        ),
        (
            "airline",
            "The passenger travels with us most weeks.",
            "passenger",
            {"status_tier": "blue"},
            {"status_tier": "platinum"},
            [("create_booking", {"economy"})],
        ),
        (
            "supply",
            "The supplier has been reliable until now.",
            "supplier",
            {"approval_status": "approved"},
            {"approval_status": "approved"},
            [("add_supplier_note", {"late deliveries three months running"})],
        ),
    ],
)
def test_what_the_independent_reading_found_is_caught(
    slug: str, text: str, kind: str, wrong: dict, right: dict, done: list
) -> None:
    c = _context(slug, text)
    dom = load_domain(slug)
    bad, rid, today = _state(slug, kind, wrong)
    good, _, _ = _state(slug, kind, right)
    play = {kind: [rid]}
    assert not rules.context_fits(dom, c, done, play, bad, bad, today)
    if slug == "supply":  # the note contradicts the aside; another change does not
        assert rules.context_fits(dom, c, [("update_po_status", {"delayed"})], play, good, good, today)
    else:
        assert rules.context_fits(dom, c, done, play, good, good, today)


def test_a_state_the_request_itself_makes_may_be_said() -> None:
    """ "The new collection sold out its first batch" fits a product the request marks backordered (the
    sentence says why), and a date said to slip ("delays") fits only a date the request moves later."""
    dom = load_domain("retail")
    c = _context("retail", "The new collection sold out its first batch within days.")
    before, rid, today = _state("retail", "product", {"availability": "in_stock"})
    after, _, _ = _state("retail", "product", {"availability": "backordered"})
    done = [("set_product_availability", {"backordered"})]
    assert rules.context_fits(dom, c, done, {"product": [rid]}, before, after, today)
    assert not rules.context_fits(dom, c, done, {"product": [rid]}, before, before, today)
    sup = load_domain("supply")
    c = _context(
        "supply", "A key supplier warned about delays and the planners are re-sequencing purchase orders."
    )
    before, po, today = _state(
        "supply", "purchase_order", {"status": "confirmed", "delivery_date": "2026-03-10"}
    )
    later, _, _ = _state("supply", "purchase_order", {"status": "confirmed", "delivery_date": "2026-03-20"})
    sooner, _, _ = _state("supply", "purchase_order", {"status": "confirmed", "delivery_date": "2026-03-05"})
    done = [("change_po_delivery_date", {"2026-03-20"})]
    assert rules.context_fits(sup, c, done, {"purchase_order": [po]}, before, later, today)
    assert not rules.context_fits(sup, c, done, {"purchase_order": [po]}, before, sooner, today)


def test_a_note_or_subject_that_asserts_a_state_is_tied_to_it() -> None:
    """A domain whose subject says "VIP" of a record it may be sent about at any tier does not load."""
    from agentjudge.dataset.domains import DomainSpec

    dom = load_domain("airline")
    notify = next(t for t in dom.tools if t.name == "notify_crew_member")
    fits = {**notify.fits, "VIP on board": notify.fits["VIP on board"].model_copy(update={"when": {}})}
    tools = [t.model_copy(update={"fits": fits}) if t is notify else t for t in dom.tools]
    with pytest.raises(ValueError, match="VIP on board"):
        DomainSpec.model_validate(dom.model_copy(update={"tools": tools}).model_dump())


# ---------------------------------------------------------------- records agree with what they point at


def test_seeded_records_agree_with_the_records_they_point_at() -> None:
    """Every seeded record of every domain: a value ``given`` by another record fits it, a field ``only``
    some records have is null on the others, a reference points where ``accepts`` allows."""
    kinds = set()
    for slug in DOMAINS:
        dom = load_domain(slug)
        for seed in range(10):
            state = initial_state(dom, seed)
            ents, today = state["entities"], dt.date.fromisoformat(state["reference_date"])
            for kind, table in ents.items():
                for row in table.values():
                    assert rules.consistent(dom, kind, row, ents, today) == [], (slug, seed, kind, row)
                    kinds.add((slug, kind))
    assert {("insurance", "claim"), ("finance", "account"), ("finance", "card_request")} <= kinds


@pytest.mark.parametrize(
    ("slug", "kind", "values", "target", "target_values", "problem"),
    [
        ("insurance", "claim", {"loss_type": "water_leak"}, "policy", {"product": "travel"}, "loss_type"),
        ("finance", "account", {"product": "savings", "overdraft_limit": 2577.87}, None, {}, "overdraft"),
        ("finance", "card_request", {"card_type": "debit"}, "account", {"product": "savings"}, "account_id"),
    ],
)
def test_a_record_that_contradicts_what_it_points_at_is_found(
    slug: str, kind: str, values: dict, target: str | None, target_values: dict, problem: str
) -> None:
    dom = load_domain(slug)
    ents = initial_state(dom, 3)["entities"]
    row = dict(next(iter(ents[kind].values())))
    row.update(values)
    if target is not None:
        ref = next(n for n, f in dom.entities[kind].fields.items() if f.entity == target)
        ents[target][row[ref]].update(target_values)
    found = rules.consistent(dom, kind, row, ents)
    assert any(problem in x for x in found), found


def test_cards_and_overdrafts_only_where_the_product_has_them() -> None:
    """A planted request for a card on a savings account, and an overdraft set on one, break the rules."""
    record = next(r for r, _ in built() if r.domain == "finance")
    assert rules.violations(record) == []
    ents = initial_state(load_domain("finance"), record.seed or 0)["entities"]
    savings = next(a for a, row in ents["account"].items() if row["product"] == "savings")
    owner = ents["account"][savings]["owner_id"]
    planted_calls = [
        ToolCall(
            name="request_card",
            arguments={
                "client_id": owner,
                "account_id": savings,
                "card_type": "debit",
                "delivery": "courier",
            },
        ),
        ToolCall(name="set_overdraft_limit", arguments={"account_id": savings, "overdraft_limit": 500.0}),
    ]
    for call in planted_calls:
        step = record.gt[-1].model_copy(update={"call": call, "depends_on": []})
        planted = record.model_copy(update={"gt": [step]})
        assert {c for c, _ in rules.violations(planted)} & {"accepts", "state"}, call.name


@pytest.mark.parametrize(
    ("slug", "kind", "urgent", "date_field"),
    [
        ("grid", "work_order", {"priority": "emergency"}, "scheduled_date"),
        ("itsm", "ticket", {"priority": "critical"}, "due_date"),
        ("support", "case", {"priority": "urgent"}, "follow_up_date"),
    ],
)
def test_an_urgent_job_is_not_booked_weeks_out(slug: str, kind: str, urgent: dict, date_field: str) -> None:
    """ "a new work order, priority urgent, scheduled three weeks from today": a date further out than the
    record's priority allows is found on a record, and never in what the builder makes."""
    dom = load_domain(slug)
    ents, _, today = _state(slug, kind, {})
    row = {
        **next(iter(ents[kind].values())),
        **urgent,
        date_field: (today + dt.timedelta(days=19)).isoformat(),
    }
    assert rules.too_far(dom.entities[kind], row, today)
    assert not rules.too_far(dom.entities[kind], {**row, date_field: today.isoformat()}, today)
    for record, _ in built():
        if record.domain == slug:
            assert not [v for v in rules.violations(record) if "days out" in v[1]], record.id


# ---------------------------------------------------------------- roles per action


def test_every_persona_names_the_messages_and_notifications_it_sends() -> None:
    """A role sends only the templates and subjects it would: a persona lists notification and message
    tools with their values ("notify_crew_member=schedule change"), never the bare tool."""
    bare = [
        (slug, p.role, entry)
        for slug in DOMAINS
        for p in load_domain(slug).personas
        for entry in p.tools
        if "=" not in entry
        and next(t for t in load_domain(slug).tools if t.name == entry).op in ("notify", "message")
    ]
    assert bare == []


def test_a_station_controller_does_not_answer_a_complaint() -> None:
    dom = load_domain("airline")
    done = [("notify_crew_member", {"frequent flyer with a complaint"})]
    roles = [p.role for p in dom.personas if all(any(rules.matches(e, [a]) for e in p.tools) for a in done)]
    assert "a station operations controller" not in roles
    assert roles


def test_every_request_is_put_in_the_mouth_of_a_role_that_makes_all_its_changes() -> None:
    checked = 0
    for record, plan in built():
        if not plan.persona:
            continue
        dom = load_domain(record.domain)
        specs = {t.name: t for t in dom.tools}
        done = [
            (s.call.name, rules.step_values(specs[s.call.name], s.call.arguments))
            for s in record.gt
            if specs[s.call.name].op not in rules.READS
        ]
        persona = next(p for p in dom.personas if p.role == plan.persona)
        assert all(any(rules.matches(e, [a]) for e in persona.tools) for a in done), (record.id, persona.role)
        checked += 1
    assert checked > 200


# ---------------------------------------------------------------- an optional step said not to be needed


def test_a_step_said_not_to_be_needed_is_said_of_its_record() -> None:
    """ "there are no special handling instructions" beside a dock closure names nothing: each domain's
    statement that an optional step is not needed names the record it is about, and the tool of that step
    is on offer (declining to call it is what the request tests)."""
    for slug in DOMAINS:
        dom = load_domain(slug)
        for t in dom.tools:
            if t.condition is None:
                continue
            noun = dom.entities[t.entity].noun
            for text in t.condition.absent:
                assert re.search(rf"\bthe {re.escape(noun)}\b", text), (slug, t.name, text)
    offered = 0
    for record, _ in built():
        if record.topology == "optional_enrichment" and record.condition_holds is False:
            dom = load_domain(record.domain)
            step_tools = {t.name for t in dom.tools if t.condition is not None}
            assert step_tools & {t.name for t in record.tools}, record.id
            offered += 1
    assert offered > 20


def test_no_aside_about_a_step_the_request_says_is_not_needed() -> None:
    """ "The passenger asked us to keep them posted." beside "the passenger does not need a written notice
    this time" contradicts it: an aside whose changes include the optional step's tool is left out when
    the request says the step is not needed."""
    checked = 0
    for record, plan in built():
        if record.topology != "optional_enrichment" or record.condition_holds is not False:
            continue
        dom = load_domain(record.domain)
        cond = {
            t.name
            for t in dom.tools
            if t.condition is not None
            and t.condition.absent
            and any(a.rstrip(".") in (plan.condition_text or "") for a in t.condition.absent)
        }
        for aside in plan.asides:
            if aside in COMMON_ASIDES:
                continue
            c = next(x for x in dom.asides if x.text == aside)
            assert not {e.partition("=")[0] for e in c.tools} & cond, (record.id, aside)
            checked += 1
    assert checked > 5


# ---------------------------------------------------------------- changes that contradict each other


def test_a_request_never_undoes_its_own_change() -> None:
    """ "set the renewal date … and update its status to terminated": a field set on a record the same
    request leaves in no state for it (a planted GT) is found, and the builder makes none."""
    dom = load_domain("legal")
    for record, _ in built():
        today = dt.date.fromisoformat(
            initial_state(load_domain(record.domain), record.seed or 0)["reference_date"]
        )
        assert rules.unsettled(load_domain(record.domain), record.gt, _end(record), today) == [], record.id
    ents, cid, today = _state("legal", "contract", {"status": "signed", "renewal_date": "2026-03-02"})
    calls = [
        ToolCall(name="set_renewal_date", arguments={"contract_id": cid, "renewal_date": "2026-03-20"}),
        ToolCall(name="set_contract_status", arguments={"contract_id": cid, "status": "terminated"}),
    ]
    steps = [next(iter(built()))[0].gt[0].model_copy(update={"call": c, "depends_on": []}) for c in calls]
    ents["contract"][cid]["status"] = "terminated"  # the world after both calls
    (problem,) = rules.unsettled(dom, steps, ents, today)
    assert "renewal" in problem and "terminated" in problem


def _end(record: Record) -> dict:
    from agentjudge.dataset.world import make_environment

    env = make_environment(record)
    assert env is not None
    for step in record.gt:
        env.execute(step.call)
    return env.state["entities"]


def test_no_message_beside_a_change_it_contradicts() -> None:
    """A renewal quote to the holder of a policy the request suspends, an "upgrade confirmation" after a
    move to economy: a template goes only with the changes it reports, never beside one it contradicts."""
    for record, _ in built():
        assert not [v for v in rules.violations(record) if "contradicts" in v[1]], record.id
    dom = load_domain("insurance")
    letter = next(t for t in dom.tools if t.name == "send_policyholder_letter")
    assert any(
        rules.matches(e, [("set_policy_status", {"suspended"})]) for e in letter.never_after["renewal_notice"]
    )
    airline = next(t for t in load_domain("airline").tools if t.name == "send_passenger_notice")
    assert not any(
        rules.matches(e, [("change_cabin", {"economy"})]) for e in airline.follows["upgrade_confirmation"]
    )


def test_values_of_one_record_agree_with_each_other() -> None:
    """No middle seat in business: a value ``given`` by another field of the same record, seeded or set."""
    dom = load_domain("airline")
    ents, bid, _ = _state("airline", "booking", {"cabin": "business", "seat_preference": "middle"})
    assert any("seat_preference" in x for x in rules.consistent(dom, "booking", ents["booking"][bid], ents))
    for record, _ in built():
        if record.domain == "airline":
            for s in record.gt:
                a = s.call.arguments
                assert not (a.get("cabin") == "business" and a.get("seat_preference") == "middle"), record.id


def test_a_reason_asserts_only_what_the_records_show() -> None:
    """ "since the customer just signed up for the rewards scheme" of a platinum member: an optional step's
    reason that asserts a state (``domains.asserted``) is given only where the records have it."""
    dom = load_domain("retail")
    text = "the customer just signed up for the rewards scheme"
    assert asserted(dom, text) == {"customer.loyalty_tier": {"bronze"}}
    for record, plan in built():
        if record.topology == "optional_enrichment" and record.condition_holds and plan.condition_text:
            dom = load_domain(record.domain)
            world = initial_state(dom, record.seed or 0)
            play = rules.in_play(dom, record.gt)
            for key in asserted(dom, plan.condition_text):
                kind, _, name = key.partition(".")
                end = _end(record)
                for rid in play.get(kind, []):
                    row = end[kind][rid]
                    values = sorted(asserted(dom, plan.condition_text)[key])
                    assert rules.holds(
                        dom, kind, {name: values}, row, dt.date.fromisoformat(world["reference_date"]), end
                    ), (
                        record.id,
                        plan.condition_text,
                    )


@pytest.mark.parametrize("subject", ["supplier meeting to prepare", "price increase announced"])
def test_no_business_as_usual_subject_about_a_suspended_supplier(subject: str) -> None:
    """ "supplier meeting to prepare" or "price increase announced" about a supplier we no longer order
    from (suspended) reads as a world that ignores the record's state; about one we trade with it fits."""
    dom = load_domain("supply")
    fit = next(t for t in dom.tools if t.name == "notify_buyer").fits[subject]
    for status, ok in [("suspended", False), ("approved", True), ("probation", True)]:
        ents, sid, today = _state("supply", "supplier", {"approval_status": status})
        assert rules.text_fits(fit, dom, "supplier", ents["supplier"][sid], today, ents) is ok, status


def test_a_subject_about_several_kinds_reads_each_kinds_own_state() -> None:
    """ "please confirm availability" paged about a work order already completed (review of grid): a crew
    confirms it can take on a job still to do, or help with any outage; ``by_kind`` holds per kind."""
    dom = load_domain("grid")
    fit = next(t for t in dom.tools if t.name == "page_crew_lead").fits["please confirm availability"]
    for status, ok in [("completed", False), ("planned", True), ("on_hold", True)]:
        ents, wid, today = _state("grid", "work_order", {"status": status})
        assert rules.text_fits(fit, dom, "work_order", ents["work_order"][wid], today, ents) is ok, status
    ents, oid, today = _state("grid", "outage_report", {})
    assert rules.text_fits(fit, dom, "outage_report", ents["outage_report"][oid], today, ents)
    assert not rules.text_fits(fit, dom, "feeder", next(iter(ents["feeder"].values())), today, ents)


def test_changes_a_domain_keeps_apart_are_never_made_in_one_request() -> None:
    """A client's risk rating lowered while their review is booked ten days out (the reading of seed 91):
    the rating follows the review, so one request never does both (``apart``); the builder makes none
    and the rule check finds the pair."""
    dom = load_domain("finance")
    both = [("set_client_risk_rating", {"low"}), ("schedule_client_review", {"2026-07-13"})]
    assert rules.together(dom, both) == ["set_client_risk_rating and schedule_client_review"]
    assert rules.together(dom, both[:1]) == [] and rules.together(dom, both[1:]) == []
    for record, _ in built():
        if record.domain == "finance":
            names = {s.call.name for s in record.gt}
            assert not {"set_client_risk_rating", "schedule_client_review"} <= names, record.id


def test_no_text_message_to_the_owner_of_a_stolen_handset() -> None:
    """A plan change for the owner of a handset reported stolen, confirmed by SMS (the reading of seed
    97): the text would reach the thief. A tool a record of the request rules out (``never_with``) is
    found by the rule check on a planted request, not on one about an active handset, and the builder
    makes none."""
    from types import SimpleNamespace

    dom = load_domain("telecom")
    assert dom.tools[[t.name for t in dom.tools].index("send_subscriber_sms")].never_with
    for seed in range(200):
        state = initial_state(dom, seed)
        devices = state["entities"]["device"]
        stolen = [d for d, row in devices.items() if row["device_status"] == "stolen"]
        active = [d for d, row in devices.items() if row["device_status"] == "active"]
        if stolen and active:
            break
    today = dt.date.fromisoformat(state["reference_date"])

    def request(did: str) -> list[SimpleNamespace]:
        owner = devices[did]["owner_id"]
        calls = [("get_device", {"device_id": did}), ("send_subscriber_sms", {"subscriber_id": owner})]
        return [SimpleNamespace(call=SimpleNamespace(name=n, arguments=a), output=None) for n, a in calls]

    assert rules.ruled_out(dom, request(stolen[0]), seed, state["entities"], today)
    assert rules.ruled_out(dom, request(active[0]), seed, state["entities"], today) == []
    for record, _ in built():
        if record.domain == "telecom":
            assert not [v for v in rules.violations(record) if "send_subscriber_sms with" in v[1]], record.id


def test_a_subject_reads_the_other_records_the_request_names() -> None:
    """ "escalation from the account team" about the contact of a case closed a month ago (the reading
    of seed 109): the subject is about the contact, but the case the request went through must still be
    worked (``if_named``). The check sees it on a planted request and not on a live case; the builder
    makes none."""
    from types import SimpleNamespace

    dom = load_domain("support")
    page = "escalation from the account team"
    ents, cid, today = _state("support", "case", {"status": "closed"})
    contact = ents["case"][cid]["contact_id"]

    def request() -> list[SimpleNamespace]:
        calls = [
            ("get_case", {"support_case_id": cid}),
            ("notify_agent", {"support_agent_id": "AGT-1", "subject": page, "reference_ids": [contact]}),
        ]
        return [SimpleNamespace(call=SimpleNamespace(name=n, arguments=a), output=None) for n, a in calls]

    assert rules.misnamed(dom, request(), ents, today)
    ents["case"][cid]["status"] = "open"
    assert rules.misnamed(dom, request(), ents, today) == []
    for record, _ in built():
        if record.domain == "support":
            assert not [v for v in rules.violations(record) if "does not fit" in v[1]], record.id


def test_what_is_done_as_it_happens_has_not_waited_for_days() -> None:
    """An outage report filed beside "It's been on my list for a couple of days." (the reading of seed
    127): a change the domain makes as events happen (``urgent``) never goes with an aside that says the
    item waited; the builder makes none and the reader finds one planted in a built request."""
    dom = load_domain("grid")
    waited = "It's been on my list for a couple of days."
    outage = [("file_outage_report", {"unknown"})]
    assert rules.waited(dom, waited, outage)
    assert not rules.waited(dom, waited, [("reschedule_work_order", set())])
    assert not rules.waited(dom, "I'm between meetings, so I'll keep this short.", outage)
    planted = 0
    for record, plan in built():
        urgent = load_domain(record.domain).urgent
        done = [
            (s.call.name, rules.step_values(t, s.call.arguments))
            for s in record.gt
            if (t := next((x for x in load_domain(record.domain).tools if x.name == s.call.name), None))
        ]
        if not any(rules.matches(e, done) for e in urgent):
            continue
        assert not any(rules.waited(load_domain(record.domain), a, done) for a in plan.asides), record.id
        if not planted:
            hard = f"{record.queries['hard']} {waited}"
            bad = record.model_copy(update={"queries": {**record.queries, "hard": hard}})
            assert any("as events happen" in why for _, why in rules.context_problems(bad))
            planted += 1
    assert planted


def test_a_requester_does_not_stand_in_for_their_own_rank() -> None:
    """ "Customer-support team lead here … I'm standing in for my team lead" (the reading of seed 131): an
    aside never speaks of the requester's own rank as someone else's; the builder picks none and the reader
    finds one planted under a role the query says."""
    standing = "I'm standing in for my team lead, who is out of the office."
    assert rules.names_own_rank(standing, "a customer-support team lead")
    assert not rules.names_own_rank(standing, "a claims handler")
    leads = 0
    for record, plan in built():
        for aside in plan.asides:
            assert not rules.names_own_rank(aside, plan.persona), (record.id, plan.persona, aside)
        if (
            "lead" in plan.persona
            and plan.persona.removeprefix("a ") in " ".join(record.queries.values()).lower()
        ):
            leads += 1
            if leads == 1:
                hard = f"{record.queries['hard']} {standing}"
                bad = record.model_copy(update={"queries": {**record.queries, "hard": hard}})
                assert any("own rank" in why for _, why in rules.context_problems(bad))
    assert leads


def test_a_ticket_priority_fits_its_fault() -> None:
    """ "cannot print to floor printer" raised as critical (the reading of seed 91): a ``given`` may read
    a choice field of the record itself, and every new or seeded ticket agrees with it
    (``rules.consistent`` sees one that does not)."""
    dom = load_domain("itsm")
    table = dom.entities["ticket"].fields["priority"].given["summary"]
    assert "critical" not in table["cannot print to floor printer"]
    for record, _ in built():
        for step in record.gt if record.domain == "itsm" else []:
            a = step.call.arguments
            if step.call.name == "create_incident":
                assert a["priority"] in table[a["summary"]], (record.id, a)
    ents, tid, today = _state(
        "itsm", "ticket", {"summary": "cannot print to floor printer", "priority": "critical"}
    )
    assert rules.consistent(dom, "ticket", ents["ticket"][tid], ents), (
        "the check must see a critical printer ticket"
    )


def test_a_note_that_raises_a_problem_is_not_waved_through_in_the_same_request() -> None:
    """ "liability cap below policy" noted on a contract the same request signs (own reading 15): a note
    the domain says a change contradicts (``never_after``) is found in a planted GT, whichever comes
    first, and the builder makes none (``test_no_message_beside_a_change_it_contradicts``)."""
    dom = load_domain("legal")
    note = next(t for t in dom.tools if t.name == "add_contract_annotation")
    signed = [("set_contract_status", {"signed"})]
    assert (
        rules.contradicted(note, {"note": "liability cap below policy"}, signed)
        == "liability cap below policy"
    )
    assert rules.contradicted(note, {"note": "auto-renewal clause flagged"}, signed) is None
    assert (
        rules.contradicted(note, {"note": "liability cap below policy"}, [("set_renewal_date", set())])
        is None
    )
    # a pager subject too: no rush to contain an alert the request marks a false positive
    page = next(t for t in load_domain("secops").tools if t.name == "page_analyst")
    waved = [("update_alert_status", {"false_positive"})]
    assert rules.contradicted(page, {"subject": "containment needed now"}, waved) == "containment needed now"
    assert rules.contradicted(page, {"subject": "host needs investigation"}, waved) is None
    for slug, tool, text, change in [
        (
            "finance",
            "add_payment_memo",
            "duplicate of an earlier instruction",
            "update_payment_status=released",
        ),
        ("mfg", "add_machine_log", "abnormal vibration observed", "set_machine_status=running"),
        (
            "secops",
            "add_alert_comment",
            "hash matched a known commodity loader",
            "update_alert_status=false_positive",
        ),
        (
            "supply",
            "add_supplier_note",
            "late deliveries three months running",
            "set_supplier_approval=approved",
        ),
    ]:
        t = next(t for t in load_domain(slug).tools if t.name == tool)
        assert change in t.never_after[text], (slug, text)
    # in a whole record: the note first, the signature after it
    record = next(
        r for r, _ in built() if r.domain == "legal" and r.gt[0].call.name == "find_contract_by_reference"
    )
    cid = record.gt[0].output["contract_id"]  # type: ignore[index]
    calls = [
        ToolCall(
            name="add_contract_annotation",
            arguments={"contract_id": cid, "note": "liability cap below policy"},
        ),
        ToolCall(name="set_contract_status", arguments={"contract_id": cid, "status": "signed"}),
    ]
    planted = record.model_copy(
        update={"gt": [record.gt[0], *(record.gt[0].model_copy(update={"call": c}) for c in calls)]}
    )
    found = [d for _, d in rules.violations(planted) if "contradicts" in d]
    assert found and "liability cap below policy" in found[0], rules.violations(planted)


def test_an_aside_does_not_repeat_the_note_the_request_writes() -> None:
    """ "Put the note 'new account contact appointed' on the supplier. The supplier's account contact
    changed recently." (own reading 15): the aside only repeats the note, so it is not said beside it; and
    it says what the new contact has to do with the audit it goes with (the reading of seed 103 found the
    bare remark unrelated to it)."""
    dom = load_domain("supply")
    c = _context("supply", "The supplier's new account contact will arrange the audit on their side.")
    ents, sid, today = _state("supply", "supplier", {"approval_status": "approved"})
    play = {"supplier": [sid]}
    audit = ("schedule_supplier_audit", {"quality"})
    assert rules.context_fits(dom, c, [audit], play, ents, ents, today)
    noted = [audit, ("add_supplier_note", {"new account contact appointed"})]
    assert not rules.context_fits(dom, c, noted, play, ents, ents, today)


def test_an_escalation_background_goes_with_escalation_work_only() -> None:
    """ "Escalations have to be cleared before the weekly operations review" before a notification that
    asks a technician to review an employee (own readings 7 and 15): the background fits ticket work and
    escalation notices, not the generic review subject, which has a background of its own."""
    review = [("notify_technician", {"please review before the operations meeting"})]
    escalation = _context("itsm", "Escalations have to be cleared before the weekly operations review.")
    assert not any(rules.matches(e, review) for e in escalation.tools)
    assert any(
        rules.matches(e, [("notify_technician", {"escalation from the service desk"})])
        for e in escalation.tools
    )
    general = _context("itsm", "The operations meeting is reviewing open items across the desk.")
    assert any(rules.matches(e, review) for e in general.tools)
    for record, plan in built():
        if plan.scenario == escalation.text:
            subjects = {s.call.arguments.get("subject") for s in record.gt}
            assert "please review before the operations meeting" not in subjects, record.id
