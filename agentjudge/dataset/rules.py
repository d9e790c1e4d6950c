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
from typing import Any

from agentjudge.dataset.domains import DomainSpec, EntitySpec, FieldSpec, TextFit, ToolSpec
from agentjudge.types import Record

WEEKEND = (5, 6)


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
        if ent.fields[name].gen == "date":
            day = _date(value)
            state = None if day is None else "future" if day > today else "past" if day < today else "today"
            if state not in allowed:
                return False
        elif value not in allowed:
            return False
    return True


def changeable(
    dom: DomainSpec, kind: str, fname: str, row: dict[str, Any], today: dt.date, entities: dict[str, Any]
) -> bool:
    """Whether a person would change ``fname`` of this record at all: its ``when`` holds, a lifecycle
    value is not final, a date to be extended has not lapsed."""
    f = dom.entities[kind].fields[fname]
    if not holds(dom, kind, f.when, row, today, entities):
        return False
    if f.next and not f.next.get(str(row.get(fname)), []):
        return False
    lapsed = f.later and ((day := _date(row.get(fname))) is None or day < today)
    return not lapsed


def targets(f: FieldSpec, current: Any) -> list[Any] | None:
    """The enum values a person moves ``current`` to (None: the field has no lifecycle, any other value)."""
    if f.gen != "enum" or not f.next:
        return None
    return list(f.next.get(current, []))


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
    return holds(dom, kind, fit.when, row, today, entities)


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


# ---------------------------------------------------------------- reading a record


def violations(record: Record) -> list[tuple[str, str]]:
    """(category, detail) for every step of the record's GT that breaks a rule of its domain. Categories:
    ``transition`` (a lifecycle move the field does not allow, or no change), ``state`` (the record is not
    in a state where the field changes), ``lapsed`` (an extension of a lapsed date, or not later),
    ``bulk`` (one value set, or one note written, on every listed record where that makes no sense),
    ``accepts`` (a new record pointing at a record it may not: a booking on a cancelled flight), ``fit`` (a
    note or subject that does not fit its record), ``weekend`` (an office date on a Saturday or Sunday),
    ``world`` (records in play that contradict each other: an alert's owner who is not its host's owner),
    ``domain`` (an outside party with an e-mail address on the company's own domain). Empty for a record
    that is not one of ours."""
    from agentjudge.dataset.world import make_environment

    env = make_environment(record)
    if env is None:
        return []
    dom = env.dom
    today = dt.date.fromisoformat(env.state["reference_date"])
    entities = env.state["entities"]
    specs = {t.name: t for t in dom.tools}
    out: list[tuple[str, str]] = []
    out += _world(dom, record, entities)
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
        try:
            env.execute(step.call)
        except Exception:  # noqa: BLE001 - Gate 1's replay reports it; the rules read what replays
            break
        if t.op == "create" and isinstance(step.output, dict):
            row = entities[t.entity].get(step.output.get(ent.id_key))
            if row is not None:
                out += [("world", f"{where}: {x}") for x in agrees(dom, t.entity, row, entities)]
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
    if not holds(dom, t.entity, f.when, before, today, entities):
        out.append(("state", f"{where}: {ent.noun} {before[ent.id_key]} is {_said(f.when, before)}"))
    current, new = before.get(fname), a.get(fname)
    if f.gen == "date" and f.later and not allowed(f, current, new, today):
        out.append(("lapsed", f"{where}: {f.noun} {current} -> {new} (today {today})"))
    elif f.gen == "date" and f.workdays and (day := _date(new)) is not None and day.weekday() in WEEKEND:
        out.append(("weekend", f"{where}: {f.noun} {new} is a {day:%A}"))
    elif f.gen != "date" and not allowed(f, current, new, today):
        out.append(("transition", f"{where}: {f.noun} {current} -> {new}"))
    if via is not None and (not f.bulk or (f.bulk_via and via not in f.bulk_via)):
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
            via, _, other = key.partition(".")
            linked = entities.get(ent.fields[via].entity or "", {}).get(a.get(via))
            if linked is not None and value not in table.get(str(linked.get(other)), []):
                out.append(
                    ("accepts", f"{where}: {f.noun} {value} under {via} {a.get(via)} ({linked.get(other)})")
                )
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


def _world(dom: DomainSpec, record: Record, entities: dict[str, Any]) -> list[tuple[str, str]]:
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
            for fname, f in dom.entities[kind].fields.items():
                if f.domains and str(row.get(fname, "")).endswith("@" + dom.email_domain):
                    out.append(
                        ("domain", f"{leaf}: {dom.entities[kind].noun} {row[fname]} on the company's domain")
                    )
    return out
