"""Semantic gate checks (issue 10): real built records pass, and each corruption is caught by its code.

Records come from the builder at fixed coordinates (deterministic), so the tests need no data file."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

import pytest

from agentjudge.dataset import mentions
from agentjudge.dataset.gates import run_gates
from agentjudge.dataset.gates_semantic import (
    SEMANTIC_CODES,
    alternatives,
    explicit_steps,
    hardening,
    named_at,
    semantic_findings,
)
from agentjudge.dataset.generate import Job, make_one
from agentjudge.dataset.realiser import render_queries
from agentjudge.dataset.scenario import build_scenario
from agentjudge.dataset.world import make_environment
from agentjudge.rundir.records import parse_line
from agentjudge.types import Record, Topology


@cache
def shipped(domain: str, topology: Topology, index: int) -> Record:
    """The record ``generate`` would ship for these coordinates (seed 0), gates passed."""
    outcome = make_one(Job(domain, topology, index), 0)
    assert outcome.line is not None, outcome.error
    return parse_line(outcome.line)


def codes(record: Record) -> Counter[str]:
    findings, ran = semantic_findings(record)
    assert ran
    return Counter(f.code for f in findings)


def with_query(record: Record, difficulty: str, text: str) -> Record:
    return record.model_copy(update={"queries": {**record.queries, difficulty: text}})


def test_shipped_records_pass_every_semantic_check() -> None:
    for domain, topology in [
        ("itsm", "diamond"),
        ("hr", "linear"),
        ("legal", "fan_in"),
        ("mfg", "loop_like"),
    ]:
        record = shipped(domain, topology, 0)
        assert codes(record) == Counter(), record.queries
        assert "gate2:semantic" in run_gates(record).gates_run


def _diamond_with_alternative() -> tuple[Record, int, str, set[str]]:
    """An itsm diamond whose recipient (the employee's desk-side technician) has a rival: the assignee
    of one of the listed tickets, read straight from the initial state, where the record offers
    get_ticket (the tool a reader would use to find that assignee)."""
    for index in range(40):
        record = shipped("itsm", "diamond", index)
        names = [s.call.name for s in record.gt]
        offered = {t.name for t in record.tools}
        if (
            "notify_technician" not in names
            or "list_employee_tickets" not in names
            or "get_ticket" not in offered
        ):
            continue
        env = make_environment(record)
        assert env is not None
        state = env.state["entities"]
        notify = record.gt[names.index("notify_technician")]
        recipient = notify.call.arguments["technician_id"]
        assignees = {state["ticket"][t]["assignee_id"] for t in notify.call.arguments["reference_ids"]}
        if assignees - {recipient}:
            return record, names.index("notify_technician"), recipient, assignees - {recipient}
    pytest.skip("no itsm diamond with a rival technician in the first 40 indices")


def test_ambiguous_reference_when_the_relation_is_dropped() -> None:
    record, _, recipient, rivals = _diamond_with_alternative()
    env = make_environment(record)
    assert env is not None
    assert rivals <= alternatives(record, recipient, "technician", env.state)
    assert "desk-side technician" in record.queries["hard"]
    corrupted = with_query(
        record, "hard", record.queries["hard"].replace("desk-side technician", "usual contact")
    )
    found = [f for f in semantic_findings(corrupted)[0] if f.code == "ambiguous_reference"]
    assert found and found[0].difficulty == "hard" and "desk-side technician" in found[0].detail


def test_no_antecedent_on_hand_written_text() -> None:
    voc = mentions.vocab("itsm")
    bad = "Please alert the technician to those tickets (subject: follow-up)."
    assert [(d.phrase, d.why) for d in mentions.dangling(bad, voc)] == [
        ("the technician", "never_introduced"),
        ("those tickets", "demonstrative"),
    ]
    good = (
        "The employee's full name is Umar Jensen. The technician in question is the employee's desk-side "
        "technician. The tickets I mean are every ticket linked to that employee. Please alert the "
        "technician to those tickets."
    )
    assert mentions.dangling(good, voc) == []
    assert [d.why for d in mentions.dangling("Add up the hours for them.", voc)] == ["pronoun"]


def test_no_antecedent_when_the_introducing_description_is_cut() -> None:
    """The hard query introduces the tickets by description ("every ticket linked to the employee …");
    with that description replaced by "those tickets" they point at nothing."""
    record, *_ = _diamond_with_alternative()
    hard = record.queries["hard"]
    cut = re.sub(
        r"(?:every ticket|all the tickets) (?:linked to|of) the employee"
        r"(?: \w+ \w+| named \w+ \w+| with [^,.?]*)?",
        "those tickets",
        hard,
        count=1,
    )
    assert cut != hard
    assert codes(with_query(record, "hard", cut))["no_antecedent"] >= 1


def test_a_definite_reference_before_its_introduction_is_caught() -> None:
    """ "Update each work order … Plus, pull up every work order on the substation": the medium defect of
    the audit (a record referred to before it is introduced), read back on hand-written text."""
    voc = mentions.vocab("grid")
    bad = (
        "Set the priority of the work order to deferred. Before that, find the substation called Beacon Hill "
        "and list every work order of the substation."
    )
    assert [(d.phrase, d.why) for d in mentions.dangling(bad, voc)] == [
        ("the work order", "before_introduction")
    ]
    good = (
        "Set every work order of the substation called Beacon Hill to deferred. Before that, find the "
        "substation and list its work orders."
    )
    assert mentions.dangling(good, voc) == []


def test_a_role_relation_does_not_introduce_the_kind_it_points_at() -> None:
    voc = mentions.vocab("grid")
    # "area supervisor" is a crew lead, but the query never says so: "the crew lead" points at nothing
    bad = (
        "Find the substation whose station code is SS-1. Pull up the substation's record to find its area "
        "supervisor. Send the crew lead a notification."
    )
    assert [(d.phrase, d.why) for d in mentions.dangling(bad, voc)] == [("the crew lead", "never_introduced")]
    # a relation noun that names the kind does introduce it; so does a stated link
    assert mentions.dangling("Find its assigned crew lead. Page the crew lead.", voc) == []
    linked = (
        "Substation SUB-1 is the one. The crew lead in question is the substation's area supervisor. Page "
        "the crew lead."
    )
    assert mentions.dangling(linked, voc) == []


@pytest.mark.parametrize(
    ("domain", "relation", "kind"),
    [
        ("grid", "area supervisor", "crew lead"),
        ("airline", "assigned service contact", "crew member"),
    ],
)
def test_no_antecedent_when_a_role_recipient_is_named_by_its_kind(
    domain: str, relation: str, kind: str
) -> None:
    """The audit's two defects (grid-0163, airline-0001, medium): "send the crew lead a notification"
    after a separate "find its area supervisor". The realiser names the recipient by the relation; putting
    the bare kind noun back in its place must fail the gate."""
    # the recipient as the realiser names it ("the substation's area supervisor", "the area supervisor of
    # the substation with …"), replaced by the bare kind noun
    recipient = re.compile(
        rf"the \w+'s {relation}|the {relation}(?: of [^,?]*?(?= about| a notification| know))?"
    )
    for topology in ("linear", "diamond", "fan_out"):
        for index in range(12):
            record = shipped(domain, topology, index)  # type: ignore[arg-type]
            medium = record.queries["medium"]
            if not recipient.search(medium):
                continue
            assert codes(record)["no_antecedent"] == 0
            old = recipient.sub(f"the {kind}", medium)
            found = [
                (f.difficulty, f.detail)
                for f in semantic_findings(with_query(record, "medium", old))[0]
                if f.code == "no_antecedent"
            ]
            assert ("medium", f"'{kind}': never introduced") in found, old
            return
    pytest.fail(f"no {domain} medium query names the {relation!r} in the indices searched")


def test_order_contradiction_when_independent_calls_are_listed_backwards() -> None:
    record = shipped("legal", "fan_in", 0)
    names = [s.call.name for s in record.gt]
    first, second = record.gt[0].call.arguments, record.gt[1].call.arguments
    assert record.gt[1].depends_on == [] and record.gt[0].depends_on == [], names
    (a,), (b,) = first.values(), second.values()
    sink = record.gt[2].call.arguments
    query = (
        f"First, find the record for {b}. Then find the record for {a}. Finally open a matter for both "
        f"with matter type {sink['matter_type']}."
    )
    assert codes(with_query(record, "easy", query))["order_contradiction"] == 1
    in_order = query.replace(str(b), "\0").replace(str(a), str(b)).replace("\0", str(a))
    assert codes(with_query(record, "easy", in_order))["order_contradiction"] == 0
    backwards = (
        f"The goal is to open a matter with matter type {sink['matter_type']}. Before that, find the "
        f"record for {b}. And before that, find the record for {a}."
    )
    assert codes(with_query(record, "medium", backwards))["order_contradiction"] == 0


def test_unrequested_step_when_a_lookup_is_neither_asked_nor_needed() -> None:
    """A read of a stated case whose only use is values the query already gives (the ids it would yield)
    is asked for or it is an unrequested step. (The builder now reaches records from descriptions, so the
    record is a shipped fan_in whose first step reads the case, and the queries are written here.)"""
    for index in range(60):
        record = shipped("support", "fan_in", index)
        names = [step.call.name for step in record.gt]
        if names == ["get_case", "find_agent_by_email", "notify_agent"]:
            break
    else:
        raise AssertionError("no support fan_in reads a case first in the first 60 indices")
    case = record.gt[0].call.arguments["support_case_id"]
    notify = record.gt[-1].call.arguments
    email = record.gt[1].call.arguments["email"]
    subject, (about,) = notify["subject"], notify["reference_ids"]
    tail = (
        f'send the support agent with email address {email} a notification titled "{subject}" about '
        f"customer contact {about}"
    )
    asked = f"Look up the customer contact of support case {case}, then {tail}."
    not_asked = f"Support case {case} is the one. Please {tail}."
    assert codes(with_query(record, "hard", asked))["unrequested_step"] == 0
    found = [
        f for f in semantic_findings(with_query(record, "hard", not_asked))[0] if f.code == "unrequested_step"
    ]
    assert len(found) == 1 and "get_case" in found[0].detail


def test_not_harder_when_hard_is_the_easy_query() -> None:
    record = shipped("itsm", "diamond", 0)
    assert len(hardening(record, record.queries["easy"], record.queries["hard"])) >= 2
    flat = with_query(record, "hard", record.queries["easy"])
    assert codes(flat)["not_harder"] == 1
    assert hardening(record, record.queries["easy"], record.queries["easy"]) == []


def test_facts_and_asides_do_not_make_a_query_harder() -> None:
    """The audit's insurance-0199 case: the id given, every step and value named as in easy, plus values
    said as facts and an aside. None of that changes what an agent must infer: not harder."""
    for index in range(40):
        record = shipped("insurance", "linear", index)
        if record.gt[0].call.name == "get_claim":
            break
    else:
        record = shipped("insurance", "linear", 0)
    easy = record.queries["easy"]
    aside = "The office fire drill is scheduled for Wednesday."
    facts = " ".join(
        f"The value is {v}." for st in record.gt for v in st.call.arguments.values() if isinstance(v, str)
    )
    padded = f"{facts} {easy} {aside}"
    assert hardening(record, easy, padded) == []
    assert codes(with_query(record, "hard", padded))["not_harder"] == 1


def test_not_harder_counts_what_hard_leaves_to_infer() -> None:
    """Per record kind of hardening: each implicit look-up, each date given relative to today."""
    record = shipped("itsm", "diamond", 0)
    ops = hardening(record, record.queries["easy"], record.queries["hard"])
    assert all(op.split(":")[0] in ("implicit_lookup", "relative_date", "id_withheld") for op in ops), ops
    assert sum(op.startswith("implicit_lookup") for op in ops) >= 2


def test_explicit_steps_counts_named_lookups_only() -> None:
    record = shipped("itsm", "diamond", 0)
    easy, hard = (explicit_steps(record, record.queries[d]) for d in ("easy", "hard"))
    assert all(easy)
    assert sum(hard) < sum(easy)  # hard leaves the look-ups implicit
    assert hard[-1]  # ... but always names what it wants done


def test_explicit_steps_reads_a_record_named_by_its_role() -> None:
    """ "Find out the asset's owner", then "look up the owner's desk-side technician": the employee look-up
    is asked for although the query never says "employee" (the asset gives it its role)."""
    for index in range(30):
        record = shipped("itsm", "linear", index)
        easy = record.queries["easy"]
        if re.search(r"\bowner\b", easy) and "employee" not in easy.lower():
            assert all(explicit_steps(record, easy)), easy
            return
    pytest.fail("no itsm linear easy query names the employee as the asset's owner in 30 indices")


def test_explicit_steps_reads_the_object_of_the_look_up() -> None:
    """ "Check the details of the supplier called X" asks for the details, not for the supplier search;
    "pull up the asset owner's full record" reads the record, not the asset owner."""
    record = shipped("supply", "fan_out", 0)
    search = next(i for i, st in enumerate(record.gt) if st.call.name.startswith("find_"))
    value = next(iter(record.gt[search].call.arguments.values()))
    noun = "supplier" if "supplier" in record.gt[search].call.name else "part"
    asked = f"Please look up the {noun} with code {value} and pull up its details."
    not_asked = f"Please check the details of the {noun} with code {value}."
    assert explicit_steps(record, asked)[search]
    assert not explicit_steps(record, not_asked)[search]


def test_foreign_records_are_skipped_not_passed_silently() -> None:
    record = shipped("itsm", "linear", 0).model_copy(update={"seed": None})
    assert semantic_findings(record) == ([], False)
    assert "gate2:semantic" not in run_gates(record).gates_run


def test_codes_are_documented_in_gates() -> None:
    from agentjudge.dataset import gates

    for code in SEMANTIC_CODES:
        assert code in (gates.__doc__ or "")


# ------------------------------------------------------------------ phrase bank


def _sample_queries() -> list[str]:
    """Every mini plan worded with ten seeds: 60 x 10 x 3 queries."""
    from agentjudge.dataset.generate import plan_jobs, sub_seed
    from agentjudge.dataset.world import list_domains

    out: list[str] = []
    for job in plan_jobs("mini", sorted(list_domains())):
        s = sub_seed(0, job, 0)
        _, plan = build_scenario(job.domain, job.topology, s, job.index)
        for k in range(10):  # the generator words each record with its own sub-seed; so do we
            out += render_queries(plan, s + k).values()
    return out


def _opener(query: str) -> str:
    return " ".join(query.split()[:3]).lower()


def _closer(query: str) -> str:
    sentences = re.split(r"(?<=[.!?)])\s+", query.strip())
    return sentences[-1].lower()


def test_no_sentence_in_more_than_five_percent_of_one_difficultys_queries() -> None:
    """The phrase bank is varied: no sentence (a greeting, a closing, a dependency cue, a lead) appears in
    more than 5 % of the queries of one difficulty; the 20 most frequent are printed with their shares."""
    from agentjudge.dataset.generate import plan_jobs, sub_seed
    from agentjudge.dataset.world import list_domains

    by_difficulty: dict[str, list[str]] = {"easy": [], "medium": [], "hard": []}
    scenarios: set[str] = set()  # a record's context, fixed per record (its share: bench/query_stats.py)
    for job in plan_jobs("mini", sorted(list_domains())):
        s = sub_seed(0, job, 0)
        _, plan = build_scenario(job.domain, job.topology, s, job.index)
        scenarios.add(plan.scenario)
        for k in range(10):  # the generator words each record with its own sub-seed; so do we
            for d, q in render_queries(plan, s + k).items():
                by_difficulty[d].append(q)
    split = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(])")
    for d, queries in by_difficulty.items():
        n = len(queries)
        counts = Counter(x for q in queries for x in set(split.split(q)) if x not in scenarios)
        top = [(text, count / n) for text, count in counts.most_common(20)]
        print(f"\n20 most frequent {d} sentences over {n} queries:")
        for text, share in top:
            print(f"  {share:6.2%}  {text}")
        assert top[0][1] <= 0.05, (d, top[0])


# ------------------------------------------------------------------ audit verb


def test_audit_prints_a_topology_stratified_gradable_sample(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from typer.testing import CliRunner

    from agentjudge.commands import app
    from agentjudge.types import TOPOLOGIES

    runner = CliRunner()
    mini = Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl"
    result = runner.invoke(
        app, ["audit", str(mini), "--n", "12", "--seed", "3", "--difficulty", "hard,medium"]
    )
    assert result.exit_code == 0, result.output
    headers = re.findall(r"^## \d+\. (\S+):(\w+)  \((\w+), (\w+)\)$", result.output, re.M)
    assert len(headers) == 12
    assert Counter(t for _, _, t, _ in headers) == Counter({t: 2 for t in TOPOLOGIES})
    assert Counter(d for _, d, _, _ in headers) == Counter({"hard": 6, "medium": 6})
    assert len({rid for rid, _, _, _ in headers}) == 12  # drawn without replacement
    assert result.output.count("EASY VERSION (for the not-harder question):") == 6  # beside each hard one
    for key in (
        "QUERY:",
        "TOOLS:",
        "GT (in order):",
        "[ambiguous]",
        "[no-antecedent]",
        "[order-contradiction]",
        "[unrequested-step]",
        "[unnatural]",
        "[not-harder]",
        "[domain-logic]",
        "[context-misfit]",
        "[world-contradiction]",
    ):
        assert result.output.count(key) == 12, key
    again = runner.invoke(
        app, ["audit", str(mini), "--n", "12", "--seed", "3", "--difficulty", "hard,medium"]
    )
    assert again.output == result.output
    other = runner.invoke(
        app, ["audit", str(mini), "--n", "12", "--seed", "4", "--difficulty", "hard,medium"]
    )
    assert other.output != result.output
    bad = runner.invoke(app, ["audit", str(mini), "--difficulty", "extreme"])
    assert bad.exit_code == 2 and "--difficulty" in bad.output
    missing = runner.invoke(app, ["audit", str(tmp_path / "none.jsonl")])
    assert missing.exit_code == 2 and "Traceback" not in missing.output


def test_no_antecedent_in_an_optional_steps_reason_clause(monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's reason-clause defect: "since the patient asked to be reminded before the appointment" in
    a query that introduces no appointment. The reason is read as part of the request, so the gate checks
    it; putting the old wording back into a shipped record without an appointment must fail the gate, even
    while the old wording is still one of the domain's reason texts (as it was before the fix)."""
    from agentjudge.dataset import gates_semantic

    domain = gates_semantic._domain("health").model_copy(deep=True)
    tool = next(t for t in domain.tools if t.name == "send_patient_reminder")
    tool.condition.holds[1] = "the patient asked to be reminded before the appointment"
    monkeypatch.setattr(gates_semantic, "_domain", lambda slug: domain)
    assert "appointment" in mentions.vocab("health").kinds
    # the realiser now leaves out a reason that repeats the template ("asked for a reminder" beside the
    # "appointment reminder" message), so the old reason is planted after the request it explains
    for index in range(40):
        record = shipped("health", "optional_enrichment", index)
        for difficulty, query in record.queries.items():
            if '"appointment reminder"' not in query:
                continue
            if re.search(r"\bappointments?\b", query.lower().replace("appointment reminder", "")):
                continue  # an appointment is introduced: the old wording would have been fine here
            assert codes(record)["no_antecedent"] == 0
            old = re.sub(
                r'("appointment reminder" (?:message|template)[^.]*)\.',
                r"\1, since the patient asked to be reminded before the appointment.",
                query,
                count=1,
            )
            assert old != query
            found = [
                (f.difficulty, f.detail)
                for f in semantic_findings(with_query(record, difficulty, old))[0]
                if f.code == "no_antecedent"
            ]
            assert found == [(difficulty, "'appointment': never introduced")]
            return
    pytest.fail("no health optional_enrichment query sends an appointment reminder without an appointment")


def test_a_reasons_subject_is_bridged_but_its_other_nouns_are_read() -> None:
    voc = mentions.vocab("health")
    reasons = ["the patient asked to be reminded before the appointment"]
    query = (
        "Pull up clinician CLN-1. Message the clinician, since the patient asked to be reminded before "
        "the appointment."
    )
    text = mentions.blank_reason_subjects(query, reasons, voc)
    assert len(text) == len(query)
    assert [(d.phrase, d.why) for d in mentions.dangling(text, voc)] == [
        ("the appointment", "never_introduced")
    ]
    assert [d.phrase for d in mentions.dangling(query, voc)] == ["the patient", "the appointment"]


# ------------------------------------------------------------------ how the query reads (issue 37)


def _with_text(domain: str, topology: str, needle: str) -> Record:
    for index in range(40):
        record = shipped(domain, topology, index)  # type: ignore[arg-type]
        if needle in record.queries["hard"]:
            return record
    pytest.fail(f"no {domain} {topology} hard query contains {needle!r} in 40 indices")


def test_unquoted_text_when_a_note_loses_its_quotes() -> None:
    """ "record on the shipment that consignee closed on Fridays": the note's words run into the request."""
    candidates = [shipped("logistics", t, i) for t in ("loop_like", "optional_enrichment") for i in range(20)]  # type: ignore[arg-type]
    record = next(r for r in candidates if any("note" in st.call.arguments for st in r.gt))
    note = next(st.call.arguments["note"] for st in record.gt if "note" in st.call.arguments)
    hard = record.queries["hard"]
    assert f'"{note}"' in hard and codes(record)["unquoted_text"] == 0
    bare = hard.replace(f'"{note}"', note)
    found = [f for f in semantic_findings(with_query(record, "hard", bare))[0] if f.code == "unquoted_text"]
    assert [(f.difficulty, note in f.detail) for f in found] == [("hard", True)]


def test_domain_title_in_a_query() -> None:
    record = shipped("health", "linear", 0)
    assert codes(record)["domain_title"] == 0
    titled = with_query(
        record, "medium", "I'm a clinic front-desk coordinator in Healthcare. " + record.queries["medium"]
    )
    assert codes(titled)["domain_title"] == 1
    # the same word as part of an ordinary phrase is no title ("insurance plan" in a health query)
    plain = with_query(record, "medium", record.queries["medium"] + " The healthcare team is busy.")
    assert codes(plain)["domain_title"] == 0


def test_date_contradiction_when_the_context_names_another_weekday() -> None:
    """itsm-0046 of the audit: "today is Saturday, November 7" and "Monday morning at the service desk"."""
    import datetime as dt

    from agentjudge.dataset import resolve

    for index in range(60):
        record = shipped("itsm", "fan_out", index)
        hard = record.queries["hard"]
        today = resolve.find_anchor(hard)
        if today is not None and today.weekday() != 0:
            break
    else:
        pytest.fail("no itsm fan_out hard query states a day other than a Monday in 60 indices")
    assert codes(record)["date_contradiction"] == 0
    said = with_query(record, "hard", "Monday morning at the service desk and the queue is long. " + hard)
    found = [f for f in semantic_findings(said)[0] if f.code == "date_contradiction"]
    assert len(found) == 1 and dt.date.strftime(today, "%A").lower() in found[0].detail
    # a weekday in the past or ahead is no claim about today
    fine = with_query(record, "hard", "The outage was last Monday morning. " + hard)
    assert codes(fine)["date_contradiction"] == 0


def test_date_contradiction_when_the_scenario_cannot_be_said_today() -> None:
    """The builder picks only a scenario that fits the record's date; a record whose scenario does not
    (the Monday scenario on another day) fails, whatever the query says about the date."""
    monday = "Monday morning at the service desk, and the queue grew over the weekend after a network outage."
    for index in range(60):
        record = shipped("itsm", "linear", index)
        import datetime as dt

        from agentjudge.dataset.world import make_environment

        env = make_environment(record)
        assert env is not None
        if dt.date.fromisoformat(env.state["reference_date"]).weekday() != 0 and record.scenario != monday:
            break
    else:
        pytest.fail("no itsm linear record off a Monday in 60 indices")
    moved = record.model_copy(
        update={
            "scenario": monday,
            "queries": {
                d: q.replace(record.scenario.rstrip("."), monday.rstrip("."))
                for d, q in record.queries.items()
            },
        }
    )
    # one per query, and one more where a query also states a weekday the scenario contradicts
    assert codes(moved)["date_contradiction"] >= 3


def test_agreement_of_a_field_noun_and_its_verb() -> None:
    """ "update the supplier so its payment terms is net 45": a plural field noun takes "are"."""
    from agentjudge.dataset.grammar import be, is_plural

    assert is_plural("payment terms") and be("payment terms") == "are"
    assert not is_plural("status") and not is_plural("duration in minutes") and is_plural("minutes lost")
    record = shipped("supply", "fan_out", 0)
    good = "Please make sure the supplier's payment terms are net 45. " + record.queries["hard"]
    bad = "Please make sure the supplier's payment terms is net 45. " + record.queries["hard"]
    assert codes(with_query(record, "hard", good))["agreement"] == 0
    found = [f for f in semantic_findings(with_query(record, "hard", bad))[0] if f.code == "agreement"]
    assert len(found) == 1 and "'are'" in found[0].detail


def test_every_template_slot_agrees_with_every_field_noun() -> None:
    """The realiser's own "… is/are <value>" slots, filled with every field noun of every domain: each
    generated query passes the agreement check, and a plural field is said with "are" somewhere."""
    from agentjudge.dataset.world import list_domains

    plural_seen = 0
    for domain in list_domains():
        for topology in ("fan_out", "loop_like"):
            for index in range(3):
                record = shipped(domain, topology, index)  # type: ignore[arg-type]
                assert codes(record)["agreement"] == 0, record.queries
                plural_seen += sum(" are " in q for q in record.queries.values())
    assert plural_seen


def test_a_relation_said_without_repeating_its_owner_still_names_the_look_up() -> None:
    """ "look up the production line's supervisor" asks for the line's "line supervisor" (the realiser
    does not say "line" twice); another relation noun does not."""
    record = shipped("mfg", "diamond", 0)
    step = next(i for i, s in enumerate(record.gt) if s.call.name == "get_production_line")
    easy = record.queries["easy"]
    assert "the production line's supervisor" in easy
    assert named_at(record, easy)[step] is not None
    other = easy.replace("the production line's supervisor", "the production line's caretaker")
    assert named_at(record, other)[step] is None
