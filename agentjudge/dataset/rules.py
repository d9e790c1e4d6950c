"""The rules of a domain: which changes a person in the role would ask for, and what agrees with what.

A domain file states them beside its fields and texts (``domains/__init__.py``): the values a lifecycle
field may move to from each value (``next``: a paid claim is never "reported" again), the state a record
must be in for a field to change (``when``: only an open ticket gets a new due date), whether one request
may set a field on every listed record (``bulk``), dates that only move later and not once lapsed
(``later``), office dates on working days (``workdays``), references that must agree (``same_as``: an
alert's owner is its host's owner), the records a new record may point at (``accepts``), and the records a
note or a notification subject fits (``fits``). The planner asks ``targets``/``changeable``/``text_fits``
before it makes a call, so the GT it executes follows the rules; ``violations`` reads any record of ours
the other way round (replaying its GT) and is what the tests and ``bench/query_stats.py`` count.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from agentjudge.dataset.domains import (
    COMMON_ASIDES,
    DIRECTIONS,
    Context,
    DomainSpec,
    EntitySpec,
    FieldSpec,
    TextFit,
    ToolSpec,
    asserted,
    bound,
)
from agentjudge.types import Record

WEEKEND = (5, 6)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


# the words of a role that say its rank or kind of job, not whose team it is ("compliance" officer)
_ROLE_HEADS = frozenset(
    [
        "manager",
        "officer",
        "specialist",
        "coordinator",
        "analyst",
        "assistant",
        "administrator",
        "partner",
        "operator",
        "engineer",
        "planner",
        "agent",
        "supervisor",
        "senior",
        "junior",
        "lead",
        "head",
        "clerk",
        "controller",
        "representative",
        "advisor",
    ]
)

# words that place an event in time: "this morning", "overnight", "for a couple of days", "in the past hour"
_WHEN = re.compile(
    r"\b(this morning|morning stand-up|overnight|yesterday|last night|today|just|this week|"
    r"couple of days|few days|for a while|past hour|recently)\b",
    re.IGNORECASE,
)


# a requester's aside that says the item has waited ("on my list for a couple of days", "a backlog")
_WAITED = re.compile(
    r"\b(couple of days|for a while|few days off|backlog|loose ends|weekly review)\b", re.IGNORECASE
)


def waited(dom: DomainSpec, aside: str, done: list[tuple[str, set[str]]]) -> bool:
    """Whether an aside says the item has waited beside a change made as events happen (``urgent``: an
    outage report filed from a to-do list of a couple of days)."""
    return bool(_WAITED.search(aside)) and any(matches(e, done) for e in dom.urgent)


def names_own_team(text: str, role: str) -> bool:
    """Whether a sentence names the requester's own team as another party ("Compliance officer here …
    Compliance flagged this one to us" makes them two people)."""
    theirs = [w for w in re.findall(r"[a-z][a-z-]{4,}", role.lower()) if w not in _ROLE_HEADS]
    return any(re.search(rf"\b{re.escape(w)}\b", text.lower()) for w in theirs)


def names_own_rank(aside: str, role: str) -> bool:
    """Whether a requester's aside speaks of their own rank as someone else's ("Customer-support team
    lead here … I'm standing in for my team lead")."""
    words = set(re.findall(r"[a-z]+", role.lower())) & _ROLE_HEADS
    return any(re.search(rf"\bmy (?:\w+ )?{w}\b", aside.lower()) for w in words)


def common_aside_problem(
    dom: DomainSpec, aside: str, scenario: str, roles: list[str], done: list[tuple[str, set[str]]]
) -> str | None:
    """Why a requester's own aside (``COMMON_ASIDES``) does not go with this request, else None: the one
    reading the builder picks by and ``context_problems`` checks by."""
    if two_stories(scenario, aside):
        return f"and the scenario {scenario!r} each say when it happened"
    if waited(dom, aside, done):
        return "beside a change made as events happen"
    if own := [r for r in roles if names_own_rank(aside, r)]:
        return f"speaks of the requester's own rank ({own[0]}) as someone else's"
    return None


def two_stories(scenario: str, aside: str) -> bool:
    """Whether a scenario that says when it happened ("results came back this morning") and an aside that
    says how long the requester has had the item ("on my list for a couple of days") tell two stories."""
    return bool(_WHEN.search(scenario) and _WHEN.search(aside))


def _date(value: Any) -> dt.date | None:
    try:
        return dt.date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def holds(
    dom: DomainSpec,
    kind: str,
    when: dict[str, list[str]],
    row: dict[str, Any],
    today: dt.date,
    entities: dict[str, Any] | None = None,
) -> bool:
    """Whether record ``row`` of ``kind`` has the values ``when`` asks for: its own fields ("status") or
    those of a record it points at ("customer_id.loyalty_tier", read in ``entities``); a date's value is
    "future" / "past" (after / before today)."""
    for key, allowed in when.items():
        via, _, name = key.rpartition(".")
        ent, values = dom.entities[kind], row
        if via:
            target = ent.fields[via].entity or ""
            values = (entities or {}).get(target, {}).get(row.get(via)) or {}
            ent = dom.entities[target]
        value = values.get(name)
        if ent.fields[name].gen in ("amount", "int"):  # bounds, all of which hold (">=1000", "<=5000")
            if not isinstance(value, int | float) or not all(_within(value, v) for v in allowed):
                return False
        elif ent.fields[name].gen == "bool":  # "true" / "false"
            if str(value).lower() not in allowed:
                return False
        elif ent.fields[name].gen == "date":  # "future" / "past", and bounds in days from today ("<=60")
            day = _date(value)
            state = None if day is None else "future" if day > today else "past" if day < today else "today"
            states = [a for a in allowed if bound(a) is None and a not in WEEKDAYS]
            days = [a for a in allowed if a in WEEKDAYS]
            if day is None or (states and state not in states):
                return False
            if days and WEEKDAYS[day.weekday()] not in days:
                return False
            if not all(_within((day - today).days, a) for a in allowed if bound(a) is not None):
                return False
        elif value not in allowed:
            return False
    return True


def _within(value: float, text: str) -> bool:
    b = bound(text)
    return b is not None and (value >= b[1] if b[0] == ">=" else value <= b[1])


def changeable(
    dom: DomainSpec, kind: str, fname: str, row: dict[str, Any], today: dt.date, entities: dict[str, Any]
) -> bool:
    """Whether a person would change ``fname`` of this record at all: its ``when`` holds, a lifecycle
    value is not final, a date to be extended has not lapsed."""
    f = dom.entities[kind].fields[fname]
    if not holds(dom, kind, {**f.when, **f.only}, row, today, entities):
        return False
    if f.next and not f.next.get(str(row.get(fname)), []):
        return False
    lapsed = f.later and ((day := _date(row.get(fname))) is None or day < today)
    return not lapsed


def targets(f: FieldSpec, current: Any, bulk: bool = False) -> list[Any] | None:
    """The enum values a person moves ``current`` to (None: the field has no lifecycle, any other value);
    with ``bulk``, on every listed record at once (``bulk_next`` where the field has one)."""
    if f.gen != "enum" or not f.next:
        return None
    if bulk and f.bulk_next:
        return list(f.bulk_next.get(current, []))
    return list(f.next.get(current, []))


def preferred_channels(t: ToolSpec, row: dict[str, Any]) -> list[str]:
    """The channels of message tool ``t`` that the recipient ``row`` says it prefers (``channel_by``:
    "email" names email, "post" names postal_mail); empty when it names none of them (a holder who
    prefers the phone) or the tool reads no preference."""
    if not t.channel_by:
        return []
    preferred = str(row.get(t.channel_by))
    return [c for c in t.channels if c == preferred or c.startswith(preferred)]


def allowed(f: FieldSpec, current: Any, new: Any, today: dt.date) -> bool:
    """Whether ``current`` -> ``new`` is a change the rules allow (the field's ``when`` aside)."""
    if new == current:
        return False
    nxt = targets(f, current)
    if nxt is not None and new not in nxt:
        return False
    if f.gen == "date":
        day, before = _date(new), _date(current)
        if day is None:
            return False
        if f.workdays and day.weekday() in WEEKEND:
            return False
        if f.later and (before is None or before < today or day <= before):
            return False
    return True


def text_fits(
    fit: TextFit | None,
    dom: DomainSpec,
    kind: str,
    row: dict[str, Any],
    today: dt.date,
    entities: dict[str, Any],
) -> bool:
    """Whether a note or subject with ``fit`` may be about record ``row`` of ``kind``."""
    if fit is None:
        return True
    if fit.kinds and kind not in fit.kinds:
        return False
    return holds(dom, kind, fit.by_kind.get(kind, fit.when), row, today, entities)


def named_fits(
    fit: TextFit | None,
    dom: DomainSpec,
    play: dict[str, list[str]],
    entities: dict[str, Any],
    today: dt.date,
) -> bool:
    """Whether the other records a request names (``play``) are in the states a note or subject needs
    (``if_named``: no "escalation from the account team" about the contact of a closed case)."""
    if fit is None or not fit.if_named:
        return True
    for key, values in fit.if_named.items():
        kind, _, name = key.partition(".")
        rows = [entities[kind][r] for r in play.get(kind, []) if r in entities.get(kind, {})]
        if not all(holds(dom, kind, {name: values}, row, today, entities) for row in rows):
            return False
    return True


def misnamed(dom: DomainSpec, gt: list[Any], entities: dict[str, Any], today: dt.date) -> list[str]:
    """The notes and subjects of a request that the other records it names do not allow (``if_named``),
    read on ``entities`` with everything the request names."""
    specs = {t.name: t for t in dom.tools}
    play = in_play(dom, gt)
    out = []
    for step in gt:
        t = specs.get(step.call.name)
        said = step.call.arguments.get("subject") or step.call.arguments.get("note")
        if t is not None and said and not named_fits(t.fits.get(str(said)), dom, play, entities, today):
            out.append(f"{t.name}: {said!r} beside a record it does not fit")
    return out


def step_values(t: ToolSpec, args: dict[str, Any]) -> set[str]:
    """What a change step sets, as the domain's "tool=value" entries name it: the new value, the note,
    the template or subject, a new record's values."""
    said = [args.get(t.field or ""), args.get("note"), args.get("template"), args.get("subject")]
    return {str(v) for v in (args.values() if t.op == "create" else said) if v is not None}


def matches(entry: str, done: list[tuple[str, set[str]]]) -> bool:
    """Whether a "tool" or "tool=value" entry names one of the changes ``done`` ((tool, values) pairs)."""
    name, _, value = entry.partition("=")
    return any(tool == name and (not value or value in values) for tool, values in done)


def kind_of(dom: DomainSpec, rid: Any) -> str | None:
    """The entity kind of an id, by its prefix ("ALR-100200" is an alert)."""
    if not isinstance(rid, str):
        return None
    head, _, digits = rid.partition("-")
    if not digits.isdigit():
        return None
    return next((k for k, e in dom.entities.items() if e.prefix == head), None)


def agrees(dom: DomainSpec, kind: str, row: dict[str, Any], entities: dict[str, Any]) -> list[str]:
    """The ``same_as`` references of record ``row`` that contradict the records they go through."""
    out = []
    for fname, f in dom.entities[kind].fields.items():
        if not f.same_as or row.get(fname) is None:
            continue
        via, _, other = f.same_as.partition(".")
        target = dom.entities[kind].fields[via].entity or ""
        linked = entities.get(target, {}).get(row.get(via))
        if linked is not None and linked.get(other) != row[fname]:
            out.append(f"{fname} {row[fname]} is not {via} {row.get(via)}'s {other} {linked.get(other)}")
    return out


READS = ("search", "get", "list", "aggregate")


def in_play(dom: DomainSpec, gt: list[Any]) -> dict[str, list[str]]:
    """The records a request is about, by kind: the ids its calls take and the ids a listing or a new
    record yields (a record that only shows inside an output, the driver of a shipment nobody asked
    about, is not in play)."""
    from agentjudge.dataset import resolve

    specs = {t.name: t for t in dom.tools}
    out: dict[str, list[str]] = {}
    for step in gt:
        t = specs.get(step.call.name)
        found = resolve.leaves(step.call.arguments)
        if t is not None and t.op in ("list", "create"):
            found += resolve.leaves(step.output)
        for leaf in found:
            kind = kind_of(dom, leaf)
            if kind is not None and leaf not in out.setdefault(kind, []):
                out[kind].append(leaf)
    return out


def context_fits(
    dom: DomainSpec,
    c: Context,
    done: list[tuple[str, set[str]]],
    play: dict[str, list[str]],
    before: dict[str, Any],
    after: dict[str, Any],
    today: dt.date,
) -> bool:
    """Whether what a scenario or aside asserts holds for this request: every record in play of a kind its
    ``when`` names (one at least) had those values before the request; what its words assert
    (``domains.asserted``: "sold-out pieces" only of products that are, or that the request marks, sold
    out) holds of every such record before the request or after it; the request makes none of the
    changes it contradicts (``unless``)."""
    if any(matches(e, done) for e in c.unless):
        return False
    for key, values in c.if_named.items():
        kind, _, name = key.partition(".")
        if not all(
            holds(dom, kind, {name: values}, before[kind][r], today, before)
            for r in play.get(kind, [])
            if r in before.get(kind, {})
        ):
            return False
    states: list[tuple[str, list[str], tuple[dict[str, Any], ...]]]
    states = [(key, values, (before,)) for key, values in c.when.items()]
    for key, said in asserted(dom, c.text).items():  # a date is read as the request leaves it
        kind, _, name = key.partition(".")
        dated = dom.entities[kind].fields[name].gen == "date"
        states.append((key, sorted(said), (after,) if dated else (before, after)))
    for key, values, worlds in states:
        kind, _, name = key.partition(".")
        ids = play.get(kind, [])
        if set(values) <= set(DIRECTIONS):  # "delays": a date the request moves, it moves later
            if not ids or not all(_goes(values, before, after, kind, r, name) for r in ids):
                return False
            continue
        # a record the request makes is read as made
        seen = [[w for w in worlds if r in w.get(kind, {})] or [after] for r in ids]
        if not ids or not all(
            any(r in w.get(kind, {}) and holds(dom, kind, {name: values}, w[kind][r], today, w) for w in ws)
            for r, ws in zip(ids, seen, strict=True)
        ):
            return False
    return True


def _goes(
    directions: list[str], before: dict[str, Any], after: dict[str, Any], kind: str, rid: str, name: str
) -> bool:
    """Whether record ``rid``'s ``name`` changed the way ``directions`` says (or did not change)."""
    old = before.get(kind, {}).get(rid, {}).get(name)
    new = after.get(kind, {}).get(rid, {}).get(name)
    if old is None or new is None or old == new:
        return True
    up = (_date(new) or dt.date.min) > (_date(old) or dt.date.min) if isinstance(old, str) else new > old
    return ("up" if up else "down") in directions


def context_problems(record: Record) -> list[tuple[str, str]]:
    """The scenario and asides of one of our records that assert what its records do not show, or go with
    none of its changes (``context_fits``, read on the world before and after its GT)."""
    from agentjudge.dataset.world import initial_state, make_environment

    env = make_environment(record)
    if env is None:
        return []
    dom = env.dom
    before = initial_state(dom, record.seed or 0)["entities"]
    for step in record.gt:
        try:
            env.execute(step.call)
        except Exception:  # noqa: BLE001 - Gate 1's replay reports it
            break
    done = _done(dom, record.gt)
    play = in_play(dom, record.gt)
    said = " ".join(record.queries.values())
    found = [c for c in dom.scenarios if c.text == record.scenario]
    found += [c for c in dom.asides if c.text in said]
    today = dt.date.fromisoformat(env.state["reference_date"])
    out = [
        ("context", f"{c.text!r} does not fit the records or changes of the request")
        for c in found
        if not context_fits(dom, c, done, play, before, env.state["entities"], today)
        or (c.tools and not any(matches(e, done) for e in c.tools))
    ]
    # the requester's role as the query introduces it ("Hi, compliance officer here.", "this is a …"), not
    # a role the request writes to ("… to the contact's customer-success manager")
    low = said.lower()
    roles = [
        p.role
        for p in dom.personas
        if re.search(
            rf"(?:\b(?:this is|i'm|from) {re.escape(p.role.lower())}\b|"
            rf"\b{re.escape(p.role.lower().removeprefix('a ').removeprefix('an '))} (?:here|speaking)\b)",
            low,
        )
    ]
    out += [
        ("context", f"{c.text!r} names the requester's own team ({role}) as another party")
        for c in dom.asides
        if c.text in said
        for role in roles
        if names_own_team(c.text, role)
    ]
    out += [
        ("context", f"{a!r} {why}")
        for a in COMMON_ASIDES
        if a in said and (why := common_aside_problem(dom, a, record.scenario, roles, done))
    ]
    return out


def too_far(ent: EntitySpec, row: dict[str, Any], today: dt.date) -> list[str]:
    """The date fields of ``row`` that lie further ahead than another of its fields allows (``by``: an
    emergency work order scheduled three weeks out)."""
    out = []
    for fname, f in ent.fields.items():
        day = _date(row.get(fname)) if f.by else None
        for key, table in f.by.items():
            limit = table.get(str(row.get(key)))
            if day is not None and limit is not None and (day - today).days > limit:
                out.append(
                    f"{f.noun} {day} more than {limit} days out for {ent.fields[key].noun} {row.get(key)}"
                )
    return out


def given_by(dom: DomainSpec, kind: str, key: str, row: dict[str, Any], entities: dict[str, Any]) -> Any:
    """The value a ``given`` key reads for record ``row``: a field of the record it points at
    ("policy_id.product") or one of its own ("cabin"); None when it has none."""
    via, _, other = key.partition(".")
    if not other:
        return row.get(via)
    linked = entities.get(dom.entities[kind].fields[via].entity or "", {}).get(row.get(via))
    return None if linked is None else linked.get(other)


def consistent(
    dom: DomainSpec, kind: str, row: dict[str, Any], entities: dict[str, Any], today: dt.date | None = None
) -> list[str]:
    """What of record ``row`` contradicts the records it points at or itself: a value ``given`` another
    record does not allow (a water leak under a travel policy), a field set where ``only`` says it has
    none (an overdraft limit on a savings account), a reference ``accepts`` does not allow (a card on a
    savings account), and (given ``today``) a date further out than its priority allows (``by``)."""
    spec = dom.entities[kind]
    out = too_far(spec, row, today) if today is not None else []
    for fname, f in spec.fields.items():
        value = row.get(fname)
        for key, table in f.given.items():
            on = given_by(dom, kind, key, row, entities)
            if on is not None and value not in table.get(str(on), []):
                out.append(f"{fname} {value} with {key} {on}")
        if f.only and value is not None and any(row.get(k) not in v for k, v in f.only.items()):
            out.append(f"{fname} {value} on a {spec.noun} with {_said(f.only, row)}")
        fixed = {k: v for k, v in f.accepts.items() if dom.entities[f.entity or ""].fields[k].gen == "enum"}
        target = entities.get(f.entity or "", {}).get(value) if fixed else None
        if target is not None and any(target.get(k) not in v for k, v in fixed.items()):
            out.append(f"{fname} {value} is {_said(fixed, target)}")
    return out


# ---------------------------------------------------------------- reading a record


def violations(record: Record) -> list[tuple[str, str]]:
    """(category, detail) for every step of the record's GT that breaks a rule of its domain. Categories:
    ``transition`` (a lifecycle move the field does not allow, or no change), ``state`` (the record is not
    in a state where the field changes, or a record of the request rules the tool out), ``lapsed`` (an
    extension of a lapsed date, or not later), ``bulk`` (one value set, or one note written, on every
    listed record where that makes no sense), ``accepts`` (a new record pointing at a record it may not: a
    booking on a cancelled flight), ``together`` (changes the domain keeps apart, in one request), ``fit``
    (a note or subject that does not fit its record, or the other records the request names),
    ``weekend`` (an office date on a Saturday or Sunday), ``world`` (records in play that contradict each
    other: an alert's owner who is not its host's owner), ``domain`` (an outside party with an e-mail
    address on the company's own domain), ``context`` (a scenario or aside that asserts what the records
    do not show, or contradicts a change the request makes). Empty for a record that is not one of ours."""
    from agentjudge.dataset.world import make_environment

    env = make_environment(record)
    if env is None:
        return []
    dom = env.dom
    today = dt.date.fromisoformat(env.state["reference_date"])
    entities = env.state["entities"]
    specs = {t.name: t for t in dom.tools}
    out: list[tuple[str, str]] = []
    out += _world(dom, record, entities, today)
    out += [("together", f"{x} in one request") for x in together(dom, _done(dom, record.gt))]
    bulk = _bulk_steps(record, specs)
    for i, step in enumerate(record.gt):
        t = specs.get(step.call.name)
        if t is None:
            continue
        a = step.call.arguments
        ent = dom.entities[t.entity]
        where = f"step {i} {t.name}"
        before = dict(entities[t.entity].get(a.get(ent.id_key), {}))
        if t.op in ("update", "assign") and before:
            out += _change(dom, t, before, a, today, entities, where, bulk.get(i))
        elif t.op == "annotate" and before:
            fit = t.fits.get(a.get("note", ""))
            if not text_fits(fit, dom, t.entity, before, today, entities):
                out.append(("fit", f"{where}: note {a.get('note')!r} does not fit {before[ent.id_key]}"))
            if i in bulk and not (fit is not None and fit.bulk):
                out.append(("bulk", f"{where}: note {a.get('note')!r} written on every listed record"))
        elif t.op == "notify":
            fit = t.fits.get(a.get("subject", ""))
            for rid in a.get("reference_ids", []):
                kind = kind_of(dom, rid)
                row = entities.get(kind or "", {}).get(rid)
                if (
                    kind is not None
                    and row is not None
                    and not text_fits(fit, dom, kind, row, today, entities)
                ):
                    out.append(("fit", f"{where}: subject {a.get('subject')!r} does not fit {rid}"))
        elif t.op == "create":
            out += _create(dom, t, ent, a, entities, today, where)
        if t.op in ("message", "annotate", "notify") and (said := contradicted(t, a, _done(dom, record.gt))):
            out.append(("fit", f"{where}: {said!r} beside a change it contradicts"))
        try:
            env.execute(step.call)
        except Exception:  # noqa: BLE001 - Gate 1's replay reports it; the rules read what replays
            break
        if t.op == "create" and isinstance(step.output, dict):
            row = entities[t.entity].get(step.output.get(ent.id_key))
            if row is not None:
                out += [("world", f"{where}: {x}") for x in agrees(dom, t.entity, row, entities)]
                out += [("accepts", f"{where}: {x}") for x in too_far(ent, row, today)]
    out += [("state", x) for x in unsettled(dom, record.gt, entities, today)]
    out += [("state", x) for x in ruled_out(dom, record.gt, record.seed or 0, entities, today)]
    out += [("fit", x) for x in misnamed(dom, record.gt, entities, today)]
    return out + context_problems(record)


def _done(dom: DomainSpec, gt: list[Any]) -> list[tuple[str, set[str]]]:
    specs = {t.name: t for t in dom.tools}
    return [
        (t.name, step_values(t, s.call.arguments))
        for s in gt
        if (t := specs.get(s.call.name)) is not None and t.op not in READS
    ]


def contradicted(t: ToolSpec, args: dict[str, Any], done: list[tuple[str, set[str]]]) -> str | None:
    """The template, note or subject of a message, annotate or notify step that one of the request's
    changes ``done`` contradicts (``never_after``: a renewal notice to the holder of a policy it suspends;
    "liability cap below policy" noted on a contract it signs; "containment needed now" paged about an
    alert it marks a false positive), else None."""
    said = str(args.get({"message": "template", "notify": "subject"}.get(t.op, "note")))
    return said if any(matches(e, done) for e in t.never_after.get(said, [])) else None


def together(dom: DomainSpec, done: list[tuple[str, set[str]]]) -> list[str]:
    """The changes of a request that its domain keeps apart (``apart``: a risk rating changed beside
    booking the review it should follow)."""
    return [" and ".join(pair) for pair in dom.apart if all(matches(e, done) for e in pair)]


def ruled_out(dom: DomainSpec, gt: list[Any], seed: int, after: dict[str, Any], today: dt.date) -> list[str]:
    """Steps whose tool a record of the request rules out (``never_with``: a text message to the owner of
    a handset reported stolen), read on the world as seeded (``seed``) and as the request leaves it."""
    from agentjudge.dataset.world import initial_state

    specs = {t.name: t for t in dom.tools}
    guarded = [(s, specs[s.call.name]) for s in gt if s.call.name in specs and specs[s.call.name].never_with]
    if not guarded:
        return []
    play, seen = in_play(dom, gt), (initial_state(dom, seed)["entities"], after)
    out = []
    for step, t in guarded:
        for key, values in t.never_with.items():
            kind, _, name = key.partition(".")
            hit = [
                r
                for r in play.get(kind, [])
                for w in seen
                if r in w.get(kind, {}) and holds(dom, kind, {name: values}, w[kind][r], today, w)
            ]
            if hit:
                out.append(f"{step.call.name} with {kind} {hit[0]} {name} in {values}")
    return out


def unsettled(dom: DomainSpec, gt: list[Any], after: dict[str, Any], today: dt.date) -> list[str]:
    """Changes the request itself makes pointless: a field it sets on a record that, once the request is
    done, is no longer in a state for that field (a renewal date set on a contract the same request
    terminates; a priority given to a ticket it resolves)."""
    specs = {t.name: t for t in dom.tools}
    out = []
    for step in gt:
        t = specs.get(step.call.name)
        if t is None or t.op not in ("update", "assign"):
            continue
        ent = dom.entities[t.entity]
        f = ent.fields[t.field or ""]
        row = after.get(t.entity, {}).get(step.call.arguments.get(ent.id_key))
        if row is not None and f.when and not holds(dom, t.entity, f.when, row, today, after):
            out.append(f"{t.name}: {ent.noun} {row[ent.id_key]} ends {_said(f.when, row)}")
    return out


def _change(
    dom: DomainSpec,
    t: ToolSpec,
    before: dict[str, Any],
    a: dict[str, Any],
    today: dt.date,
    entities: dict[str, Any],
    where: str,
    via: str | None,
) -> list[tuple[str, str]]:
    """``via``: the listing a bulk change goes through (None: one record)."""
    ent = dom.entities[t.entity]
    fname = t.field or ""
    f = ent.fields[fname]
    out = []
    if not holds(dom, t.entity, {**f.when, **f.only}, before, today, entities):
        out.append(
            ("state", f"{where}: {ent.noun} {before[ent.id_key]} is {_said({**f.when, **f.only}, before)}")
        )
    current, new = before.get(fname), a.get(fname)
    if f.gen == "date" and f.later and not allowed(f, current, new, today):
        out.append(("lapsed", f"{where}: {f.noun} {current} -> {new} (today {today})"))
    elif f.gen == "date" and f.workdays and (day := _date(new)) is not None and day.weekday() in WEEKEND:
        out.append(("weekend", f"{where}: {f.noun} {new} is a {day:%A}"))
    elif f.gen != "date" and not allowed(f, current, new, today):
        out.append(("transition", f"{where}: {f.noun} {current} -> {new}"))
    if too_far(ent, {**before, fname: new}, today) and not too_far(ent, before, today):
        out.append(("state", f"{where}: {'; '.join(too_far(ent, {**before, fname: new}, today))}"))
    if via is not None and (
        not f.bulk
        or (f.bulk_via and via not in f.bulk_via)
        or new not in (targets(f, current, bulk=True) or [new])
    ):
        out.append(("bulk", f"{where}: {f.noun} set to {new} on every {ent.noun} of {via}"))
    return out


def _said(when: dict[str, list[str]], row: dict[str, Any]) -> str:
    return ", ".join(f"{key} {row.get(key)}" for key in when)


def _create(
    dom: DomainSpec,
    t: ToolSpec,
    ent: EntitySpec,
    a: dict[str, Any],
    entities: dict[str, Any],
    today: dt.date,
    where: str,
) -> list[tuple[str, str]]:
    out = []
    for fname in t.fields:
        f = ent.fields[fname]
        value = a.get(fname)
        if f.gen == "ref" and f.accepts:
            target = entities.get(f.entity or "", {}).get(value)
            if target is not None and not holds(dom, f.entity or "", f.accepts, target, today, entities):
                out.append(("accepts", f"{where}: {value} is {_said(f.accepts, target)}"))
        if f.gen == "date" and f.workdays and (day := _date(value)) is not None and day.weekday() in WEEKEND:
            out.append(("weekend", f"{where}: {f.noun} {value} is a {day:%A}"))
        if f.new and value not in f.new:
            out.append(("accepts", f"{where}: a new record with {f.noun} {value}"))
        for key, table in f.given.items():
            on = given_by(dom, t.entity, key, a, entities)
            if on is not None and value not in table.get(str(on), []):
                out.append(("accepts", f"{where}: {f.noun} {value} with {key} {on}"))
    return out


def _bulk_steps(record: Record, specs: dict[str, ToolSpec]) -> dict[int, str]:
    """Steps that change every record of one listing (a loop body), with the list tool they go through:
    one tool, two or more records, each id taken from the same list step's output."""
    groups: dict[tuple[str, int], list[int]] = {}
    for i, step in enumerate(record.gt):
        t = specs.get(step.call.name)
        if t is None or t.op not in ("update", "annotate", "assign"):
            continue
        for u in step.depends_on:
            src = specs.get(record.gt[u].call.name) if 0 <= u < len(record.gt) else None
            if src is not None and src.op == "list":
                groups.setdefault((t.name, u), []).append(i)
    return {i: record.gt[u].call.name for (_, u), steps in groups.items() if len(steps) > 1 for i in steps}


def _world(
    dom: DomainSpec, record: Record, entities: dict[str, Any], today: dt.date
) -> list[tuple[str, str]]:
    """Records in play (ids in the GT) whose references contradict each other, and outside parties on
    the company's own mail domain."""
    from agentjudge.dataset import resolve

    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for step in record.gt:
        for leaf in resolve.leaves(step.call.arguments) + resolve.leaves(step.output):
            kind = kind_of(dom, leaf)
            if kind is None or leaf in seen or leaf not in entities.get(kind, {}):
                continue
            seen.add(leaf)
            row = entities[kind][leaf]
            out += [("world", f"{leaf}: {x}") for x in agrees(dom, kind, row, entities)]
            out += [("world", f"{leaf}: {x}") for x in consistent(dom, kind, row, entities, today)]
            for fname, f in dom.entities[kind].fields.items():
                if f.domains and str(row.get(fname, "")).endswith("@" + dom.email_domain):
                    out.append(
                        ("domain", f"{leaf}: {dom.entities[kind].noun} {row[fname]} on the company's domain")
                    )
    return out
