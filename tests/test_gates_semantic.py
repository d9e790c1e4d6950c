"""Semantic gate checks (issue 10): real built records pass, and each corruption is caught by its code.

Records come from the builder at fixed coordinates (deterministic), so the tests need no data file."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

import pytest

from agentjudge.dataset import mentions
from agentjudge.dataset.build import build_scenario
from agentjudge.dataset.engine import make_environment
from agentjudge.dataset.gates import run_gates
from agentjudge.dataset.gates_semantic import (
    SEMANTIC_CODES,
    alternatives,
    explicit_steps,
    hardening,
    semantic_findings,
)
from agentjudge.dataset.generate import Job, make_one
from agentjudge.dataset.layout import parse_line
from agentjudge.dataset.rewrite import render_queries
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


def test_no_antecedent_when_the_introducing_sentence_is_cut() -> None:
    record, *_ = _diamond_with_alternative()
    hard = record.queries["hard"]
    cut = re.sub(r"[^.?!]*\b(?:tickets in question|tickets I mean|I mean all of)[^.?!]*[.?!]", "", hard)
    assert cut != hard
    assert codes(with_query(record, "hard", cut))["no_antecedent"] >= 1


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
        ("grid", "the substation's area supervisor", "crew lead"),
        ("airline", "the passenger's assigned service contact", "crew member"),
    ],
)
def test_no_antecedent_when_a_role_recipient_is_named_by_its_kind(
    domain: str, relation: str, kind: str
) -> None:
    """The audit's two defects (grid-0163, airline-0001, medium): "send the crew lead a notification"
    after a separate "find its area supervisor". The builder now names the recipient by the relation;
    putting the old kind noun back must fail the gate."""
    for topology in ("linear", "diamond", "fan_out"):
        for index in range(12):
            record = shipped(domain, topology, index)  # type: ignore[arg-type]
            medium = record.queries["medium"]
            said = re.compile(rf"(send|[Nn]otify|[Aa]lert) {re.escape(relation)}")
            if not said.search(medium):
                continue
            assert codes(record)["no_antecedent"] == 0
            old = said.sub(rf"\1 the {kind}", medium, count=1)
            assert old != medium
            found = [
                f
                for f in semantic_findings(with_query(record, "medium", old))[0]
                if f.code == "no_antecedent"
            ]
            assert [(f.difficulty, f.detail) for f in found] == [("medium", f"'{kind}': never introduced")]
            return
    pytest.fail(f"no {domain} medium query notifies {relation!r} in the indices searched")


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
    for index in range(40):
        record = shipped("support", "optional_enrichment", index)
        if record.gt[0].call.name == "get_case" and record.gt[0].depends_on == []:
            break
    else:
        pytest.skip("no stated-case optional_enrichment in the first 40 indices")
    case = record.gt[0].call.arguments["support_case_id"]
    change = record.gt[1].call.arguments
    value = next(v for k, v in change.items() if k != "support_case_id")
    asked = f"Support case {case}: please check its details and set its value to {value}."
    not_asked = f"Support case {case} is the one. Please set its value to {value}."
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


def test_explicit_steps_counts_named_lookups_only() -> None:
    record = shipped("itsm", "diamond", 0)
    easy, hard = (explicit_steps(record, record.queries[d]) for d in ("easy", "hard"))
    assert all(easy)
    assert sum(hard) < sum(easy)  # hard leaves the look-ups implicit
    assert hard[-1]  # ... but always names what it wants done


def test_explicit_steps_reads_a_record_named_by_its_role() -> None:
    """ "Find out the desk-side technician on the asset's owner" asks for the employee look-up: the
    employee is named by the role the asset gives it."""
    for index in range(20):
        record = shipped("itsm", "linear", index)
        easy = record.queries["easy"]
        if (
            re.search(r"(?:on the asset's owner|the asset's owner's)", easy)
            and "employee" not in easy.lower()
        ):
            assert all(explicit_steps(record, easy)), easy
            return
    pytest.fail("no itsm linear easy query names the employee as the asset's owner in 20 indices")


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
    from agentjudge.dataset.engine import list_domains
    from agentjudge.dataset.generate import plan_jobs, sub_seed

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


def test_no_opener_closer_or_filler_phrase_in_more_than_five_percent_of_queries() -> None:
    from agentjudge.dataset import rewrite

    queries = _sample_queries()
    n = len(queries)
    shares: dict[str, list[tuple[str, float]]] = {}
    for name, key in (("openers", _opener), ("closers", _closer)):
        counts = Counter(key(q) for q in queries)
        shares[name] = [(text, count / n) for text, count in counts.most_common(20)]
        print(f"\n20 most frequent {name} over {n} queries:")
        for text, share in shares[name]:
            print(f"  {share:6.2%}  {text}")
    worst = {name: rows[0] for name, rows in shares.items()}
    assert all(share <= 0.05 for _, share in worst.values()), worst
    banks = [
        rewrite.CLOSINGS,
        rewrite.MEDIUM_JOINS,
        rewrite.MEDIUM_GOALS,
        rewrite.MEDIUM_FIRST_CUES,
        rewrite.MEDIUM_MORE_CUES,
        rewrite.HARD_LEADS,
        rewrite.EASY_LEADS,
        tuple(t for t in rewrite.MEDIUM_TAILS if t),
        tuple(a.split("{")[0] for a in rewrite.ANCHORS if len(a.split("{")[0]) > 6),
    ]
    # a bank phrase counts where it is used: starting a sentence (ordinary words such as "Please" or "And"
    # inside a request are not template filler, so only phrases of two words or more are measured)
    phrases = {p.strip() for bank in banks for p in bank if len(p.split()) >= 2}
    filler = {
        p: sum(bool(re.search(r"(?:^|[.!?)]\s+|\()" + re.escape(p), q)) for q in queries) / n for p in phrases
    }
    top = sorted(filler.items(), key=lambda kv: -kv[1])[:20]
    print("\n20 most frequent fixed phrases:")
    for text, share in top:
        print(f"  {share:6.2%}  {text}")
    assert top[0][1] <= 0.05, top[0]


# ------------------------------------------------------------------ audit verb


def test_audit_prints_a_topology_stratified_gradable_sample(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from typer.testing import CliRunner

    from agentjudge.cli import app
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
    for key in (
        "QUERY:",
        "TOOLS:",
        "GT (in order):",
        "[ambiguous]",
        "[no-antecedent]",
        "[order-contradiction]",
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
    for index in range(40):
        record = shipped("health", "optional_enrichment", index)
        for difficulty, query in record.queries.items():
            if "the patient asked for a reminder" not in query:
                continue
            if re.search(r"\bappointments?\b", query.lower()):
                continue  # an appointment is introduced: the old wording would have been fine here
            assert codes(record)["no_antecedent"] == 0
            old = query.replace(
                "the patient asked for a reminder", "the patient asked to be reminded before the appointment"
            )
            found = [
                (f.difficulty, f.detail)
                for f in semantic_findings(with_query(record, difficulty, old))[0]
                if f.code == "no_antecedent"
            ]
            assert found == [(difficulty, "'appointment': never introduced")]
            return
    pytest.fail("no health optional_enrichment query gives 'asked for a reminder' without an appointment")


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
