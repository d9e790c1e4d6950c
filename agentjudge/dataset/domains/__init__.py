"""The domain file format and its loader.

A domain is data, not code: a YAML file declares entity kinds (with seeded value generators) and tools,
each tool naming one generic operation (search, get, list, update, ...) that ``env.py`` implements
once. That is what makes fifteen executable domains feasible. Files are parsed once per process and
checked for cross-references here, so a typo fails loudly with the file and the offending name.
"""

from __future__ import annotations

import re
from datetime import date
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import ValidationError, model_validator

from agentjudge.types import Strict

DOMAIN_DIR = Path(__file__).parent

Gen = Literal["person", "email", "phone", "code", "enum", "choice", "date", "amount", "int", "ref", "bool"]
Op = Literal[
    "search", "get", "list", "update", "assign", "create", "notify", "annotate", "message", "aggregate"
]
SEARCHABLE_GENS = ("person", "email", "phone", "code", "choice")
CHANNELS = ("email", "sms", "postal_mail")  # what a message tool can send by
NOTIFY_CHANNELS = ("email", "chat", "pager")  # how an internal notification is delivered
DATE_STATES = ("future", "past")  # a date field's values in a ``when``
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
UPDATABLE_GENS = ("enum", "date", "amount", "int", "bool")
# what a sentence may say of a change to an amount, count or date (``said``): "delays" moves a date up
# (later), "sooner than planned" down (earlier), "higher demand" a reorder point up
DIRECTIONS = ("up", "down")


class FieldSpec(Strict):
    gen: Gen
    noun: str  # how a person names the field: "email address", "priority"
    values: list[str] = []  # enum / choice pools
    entity: str | None = None  # ref: the referenced entity kind
    prefix: str | None = None  # code: "LT" -> "LT-4821"
    min: float = 0.0  # amount / int / date (days from the reference date)
    max: float = 100.0
    # how a person names a record by this field, with {value} ("the {value} substation"); the realiser's
    # generic forms ("the substation with substation name X") are used when a field has none
    phrases: list[str] = []
    # ---- the rules of the domain (``rules.py``): which changes a person in the role would ask for
    # enum with a lifecycle: value -> the values a person moves it to from there; a value that is no key
    # (or maps to []) is final ("closed", "paid"); no ``next``: any value may follow any other
    next: dict[str, list[str]] = {}
    # the record must have these values for this field to be changed (update or assign); a date field's
    # values may be "future" or "past" ("reschedule" only an appointment that has not happened)
    when: dict[str, list[str]] = {}
    bulk: bool = False  # one request may set it to one value on every listed record ("close every ticket")
    bulk_via: list[str] = []  # only over these listings (every booking of a passenger, not of a flight)
    # the moves of ``next`` one request may make on every listed record at once (default: all of them):
    # a depot's shipments are put on hold together, each is delivered on its own; a leaver's kit goes back
    # to spare, nobody retires every asset a person still uses
    bulk_next: dict[str, list[str]] = {}
    later: bool = False  # date: a change moves it later, and never once it has lapsed (an extension)
    workdays: bool = False  # date: office work, seeded and set on Monday-Friday only
    # ref: the value is a field of another record this one points at ("host_id.owner_id": an alert's owner
    # is its host's owner), so records of one task never contradict each other
    same_as: str | None = None
    # ref: the referenced record must have these values (a booking only on a flight that still flies)
    accepts: dict[str, list[str]] = {}
    seeded: list[str] = []  # enum: the values seeded records start with (default: every value)
    new: list[str] = []  # enum: the values a record made by a request takes (default: every value)
    # enum of a new record: the values that fit a record it points at ("policy_id.product": motor ->
    # [collision, theft, hail_damage, fire]; a travel policy has no hail damage)
    given: dict[str, dict[str, list[str]]] = {}
    domains: list[str] = []  # email of an outside party: its own mail domains (default: the company's)
    # the field has a value only on records with these values ("overdraft_limit" only on a checking
    # account); other records hold null, and nobody sets it on them
    only: dict[str, list[str]] = {}
    # date: how many days from today it may lie at most, by another field's value ("scheduled_date" of an
    # emergency work order within two days: nobody books urgent work three weeks out)
    by: dict[str, dict[str, int]] = {}
    # date: seeded before today on records with these values (a completed work order was scheduled on a
    # day that has passed, a returned order was delivered before today), whatever ``min``/``max`` allow
    past: dict[str, list[str]] = {}
    # what words of a sentence assert about this field: a value (or, for an amount or count, a bound such
    # as ">=100000"; for an amount, count or date, a direction "up"/"down" its change takes) -> the phrases
    # that say so ("sold-out" -> backordered, "delays" -> up). A scenario or aside that uses a phrase is
    # said only of records that have the value before or after the request (and whose change, if it makes
    # one, goes that way); a note or subject only where its ``fits`` says so (checked on load)
    said: dict[str, list[str]] = {}


class EntitySpec(Strict):
    noun: str  # "customer"
    plural: str  # "customers"
    prefix: str  # id prefix: "CUS" -> "CUS-10482"
    digits: int = 5
    count: int = 8
    fields: dict[str, FieldSpec]

    @property
    def id_key(self) -> str:
        return f"{self.noun.replace(' ', '_').replace('-', '_')}_id"

    @property
    def ids_key(self) -> str:
        return f"{self.noun.replace(' ', '_').replace('-', '_')}_ids"


class TextFit(Strict):
    """Which records a note or notification subject fits: ``kinds`` the records it may be about (a
    notification; empty: any kind), ``when`` field values that record must have, ``bulk`` whether one
    request may write it on every listed record ("cover arranged" fits many leave requests at once, "medical
    certificate received" only one)."""

    kinds: list[str] = []
    when: dict[str, list[str]] = {}
    # a notification about records of several kinds: the values a record of one kind must have instead of
    # ``when`` ("please confirm availability" about any outage report, but a work order only while open)
    by_kind: dict[str, dict[str, list[str]]] = {}
    # like ``when``, for the other records the request names ("kind.field": values): no "escalation from
    # the account team" about the contact of a case that is closed
    if_named: dict[str, list[str]] = {}
    bulk: bool = False


class ConditionSpec(Strict):
    holds: list[str]  # stated when the extra step is required
    absent: list[str]  # explicit statements that it is not


class ToolSpec(Strict):
    name: str
    op: Op
    entity: str
    field: str | None = (
        None  # search: by-field; list: parent ref field; update/assign: the field; aggregate: summed
    )
    fields: list[str] = []  # create: the fields the caller supplies
    desc: str
    texts: list[str] = []  # annotate notes / notify subjects a user might dictate
    # annotate / notify: the records a text fits ("medical certificate received" only on sick leave;
    # "VIP on board" only about a gold or platinum passenger) and whether it may go on every listed record
    fits: dict[str, TextFit] = {}
    # message: a template sent only after one of these changes in the same request ("leave decision" after
    # a leave request was decided); a template not listed may be sent on its own ("appointment reminder")
    follows: dict[str, list[str]] = {}
    # message / annotate: a template never sent, or a note never written, beside one of these changes
    # ("renewal notice" to the holder of a policy the request suspends; "liability cap below policy" on
    # a contract the request signs)
    never_after: dict[str, list[str]] = {}
    # never used in a request with a record of a kind in these states, before or after it ("kind.field":
    # values): no text message to the owner of a handset reported stolen, which would reach the thief
    never_with: dict[str, list[str]] = {}
    # message: templates a person may ask for on their own, so an optional step whose reason is that wish
    # ("the shipper asked for a delivery update") needs no change before it
    standing: list[str] = []
    filter: str | None = None  # list: the enum field its optional filter is on (default: the first enum)
    # message / notify: the channels it can send by (default: email, sms, postal_mail / email, chat, pager)
    channels: list[str] = []
    # message: the recipient's field that says how they want to hear (``preferred_contact``): a value that
    # names an offered channel ("email"; "post" for postal_mail) is the channel the message goes by, so a
    # request never sets a holder to email and then writes to them by post
    channel_by: str = ""
    # create: how each linked record attaches when a new record has two ("a booking for the passenger …
    # on the flight …", never the list "for the passenger … and the flight …"), keyed by entity
    links: dict[str, str] = {}
    choices: list[str] = []  # message: template names
    condition: ConditionSpec | None = None  # usable as optional_enrichment's conditional step


class DateFit(Strict):
    """The days a scenario sentence can be said on ("Monday morning at the service desk": Mondays only);
    an empty list allows every value."""

    weekdays: list[Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]] = []
    months: list[int] = []
    days: list[int] = []  # [first, last] day of the month

    def allows(self, day: date) -> bool:
        names = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
        return (
            (not self.weekdays or names[day.weekday()] in self.weekdays)
            and (not self.months or day.month in self.months)
            and (not self.days or self.days[0] <= day.day <= self.days[-1])
        )


class Persona(Strict):
    """Who may be asking: a role and the changes that role makes ("tool" or "tool=value": a claims
    handler sends a settlement offer, an underwriting assistant a renewal notice). A request is put in the
    mouth of a persona only when every change it asks for is one of theirs."""

    role: str
    tools: list[str]


class Context(Strict):
    """A sentence of context tied to what the request does: a scenario said before the request, or an
    aside after it (who is away, what deadline, what just happened to these records). It fits a request
    that makes one of ``tools`` ("tool" or "tool=value": the value set, the note written, the template or
    subject sent; empty for an aside that fits any request), whose records of a kind have the values
    ``when`` names ("flight.flight_status": every flight in play, and one at least), on a day ``dates``
    allows."""

    text: str
    tools: list[str] = []
    # a record of one of these kinds is named in the request, by its kind ("the passenger has called twice")
    kinds: list[str] = []
    when: dict[str, list[str]] = {}
    dates: DateFit | None = None
    # changes it contradicts ("the supplier has been reliable until now" beside the note "late deliveries
    # three months running"): never said in a request that makes one
    unless: list[str] = []
    # like ``when``, but only for records of those kinds the request happens to name ("a mast outage"
    # with the device of a subscriber, if one is in play, an active one; none need be)
    if_named: dict[str, list[str]] = {}


# Asides that fit any request in any domain: the requester's own circumstances. No record noun, no date
# word (they must not contradict the request or its dates), no verb a request clause starts with.
COMMON_ASIDES = (
    "I'm covering this desk while a colleague is on leave.",
    "I'm standing in for my team lead, who is out of the office.",
    "My manager asked for this to be sorted before the end of the day.",
    "I'd like this off my plate before I go into a long meeting.",
    "This came up in the morning stand-up.",
    "I'm working through a backlog, so this is one of several like it.",
    "I promised the people involved a quick turnaround.",
    "I'm at an offsite and only reachable by chat.",
    "I'll be offline for a few hours after lunch.",
    "My shift ends soon, which is why I'm asking now.",
    "It's one of the items from our weekly review.",
    "I was asked to handle this while the usual person is away.",
    "I'm new to this team, so bear with me.",
    "I've been meaning to sort this for a while.",
    "I'm tidying up loose ends before my holiday.",
    "A colleague passed this to me this morning.",
    "I'd rather get this done now than forget it.",
    "I'm between meetings, so I'll keep this short.",
    "This is the last item on my list.",
    "My team asked me to raise this with you.",
    "I'm filling in for someone who is off sick.",
    "I've had a few of these in the past hour.",
    "This one came through the team inbox.",
    "I only just picked this up from the queue.",
    "I'm clearing my inbox before the weekly call.",
    "I'm juggling a few urgent things at once.",
    "This was raised at the team huddle.",
    "I'll be on the road for most of the afternoon.",
    "My lead wants an update on this soon.",
    "I'm catching up after a few days off.",
    "Someone from the team flagged this to me.",
    "I'd like to close this out quickly.",
    "It's been on my list for a couple of days.",
    "I'm handling this for a colleague who is travelling.",
    "I'm trying to get ahead before a busy stretch.",
    "I'm working from another site, so chat is best.",
    "This is going into my handover notes.",
    "A colleague asked me to pass this on.",
    "I'm picking this up from the shared mailbox.",
    "I'm trying to keep the queue moving.",
)


class DomainSpec(Strict):
    slug: str
    title: str
    personas: list[Persona]
    system_prompt: str
    email_domain: str
    # context tied to the request (see ``Context``): the builder picks a scenario and the asides that fit
    # the changes the request makes, on the record's "today", so the context never contradicts them
    scenarios: list[Context]
    asides: list[Context]
    entities: dict[str, EntitySpec]
    tools: list[ToolSpec]
    # changes one request never makes together ("tool" or "tool=value" each): a client's risk rating is
    # changed after their review, never beside booking that review
    apart: list[list[str]] = []
    # changes made as events happen (an outage reported, a host isolated): never beside a requester's aside
    # that says the item has waited for days ("It's been on my list for a couple of days.")
    urgent: list[str] = []

    def scenario_fit(self, text: str) -> DateFit | None:
        """The dates a scenario sentence can be said on (None: any date, or not one of ours)."""
        return next((c.dates for c in self.scenarios if c.text == text), None)

    @property
    def context_texts(self) -> list[str]:
        """Every sentence of context a query of this domain may carry (scenarios, asides, personas)."""
        return [
            *(c.text for c in self.scenarios),
            *(c.text for c in self.asides),
            *COMMON_ASIDES,
            *(p.role for p in self.personas),
        ]

    @model_validator(mode="after")
    def _cross_references(self) -> DomainSpec:
        seen: list[str] = []
        for kind, ent in self.entities.items():
            for fname, f in ent.fields.items():
                where = f"entity {kind!r} field {fname!r}"
                if f.gen == "ref" and f.entity not in seen:
                    raise ValueError(f"{where}: ref to {f.entity!r}, which must be declared earlier")
                if f.gen in ("enum", "choice") and not f.values:
                    raise ValueError(f"{where}: {f.gen} needs values")
                if f.gen == "code" and not f.prefix:
                    raise ValueError(f"{where}: code needs a prefix")
            seen.append(kind)
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            raise ValueError("duplicate tool names")
        if not 14 <= len(names) <= 24:
            raise ValueError(f"{len(names)} tools; a domain needs 14-24 for distractors")
        for t in self.tools:
            _check_tool(self, t)
        for kind, ent in self.entities.items():
            for fname, f in ent.fields.items():
                _check_rules(self, ent, fname, f, f"entity {kind!r} field {fname!r}")
        for t in self.tools:
            for template, after in t.follows.items():
                if template not in t.choices and template not in t.texts:
                    raise ValueError(
                        f"tool {t.name!r}: follows names {template!r}, not one of its templates or texts"
                    )
                _check_actions(self, after, f"tool {t.name!r} follows {template!r}")
            for key, values in t.never_with.items():
                kind, _, name = key.partition(".")
                if kind not in self.entities:
                    raise ValueError(f"tool {t.name!r}: never_with {key!r} names no kind")
                _check_when(self, self.entities[kind], {name: values}, f"tool {t.name!r} never_with")
            for template, after in t.never_after.items():
                if template not in t.choices and template not in t.texts:
                    raise ValueError(
                        f"tool {t.name!r}: never_after names {template!r}, not one of its templates or texts"
                    )
                _check_actions(self, after, f"tool {t.name!r} never_after {template!r}")
            if not set(t.standing) <= set(t.choices):
                raise ValueError(f"tool {t.name!r}: standing names a template it does not have")
        for p in self.personas:
            _check_actions(self, p.tools, f"persona {p.role!r}")
        for c in [*self.scenarios, *self.asides]:
            _check_actions(self, c.tools, f"context {c.text!r}")
            _check_actions(self, c.unless, f"context {c.text!r} unless")
            if any(k not in self.entities for k in c.kinds):
                raise ValueError(f"context {c.text!r}: kinds names an unknown kind")
            for key, values in [*c.when.items(), *c.if_named.items()]:
                kind, _, name = key.partition(".")
                if kind not in self.entities:
                    raise ValueError(f"context {c.text!r}: when {key!r} names no kind")
                _check_when(self, self.entities[kind], {name: values}, f"context {c.text!r}")
        _check_actions(self, self.urgent, "urgent")
        for pair in self.apart:
            if len(pair) < 2:
                raise ValueError(f"apart {pair}: names at least two changes")
            _check_actions(self, pair, f"apart {pair}")
        if any(not c.tools for c in self.scenarios):
            raise ValueError("every scenario names the changes it is context for (tools)")
        return self


def _check_actions(dom: DomainSpec, actions: list[str], where: str) -> None:
    """ "tool" or "tool=value" entries name changing tools of the domain (and one of their values)."""
    tools = {t.name: t for t in dom.tools}
    for action in actions:
        name, _, value = action.partition("=")
        t = tools.get(name)
        if t is None or t.op in ("search", "get", "list", "aggregate"):
            raise ValueError(f"{where}: {name!r} is not a tool of the domain that changes something")
        ent = dom.entities[t.entity]
        fields = [ent.fields[n] for n in [t.field or "", *t.fields] if n in ent.fields]
        values = [*t.texts, *t.choices, *(v for f in fields for v in f.values)]
        if value and value not in values:
            raise ValueError(f"{where}: {action!r}: {value!r} is none of the tool's values")


def _check_when(dom: DomainSpec, ent: EntitySpec, when: dict[str, list[str]], where: str) -> None:
    """A ``when`` names fields of the record ("status") or of a record it points at ("customer_id.tier")."""
    for key, allowed in when.items():
        via, _, name = key.rpartition(".")
        owner = ent
        if via:
            ref = ent.fields.get(via)
            if ref is None or ref.gen != "ref":
                raise ValueError(f"{where}: when names {key!r}, but {via!r} is no reference of {ent.noun!r}")
            owner = dom.entities[ref.entity or ""]
        f = owner.fields.get(name)
        if f is None:
            raise ValueError(f"{where}: when names {key!r}, not a field of {owner.noun!r}")
        if f.gen in ("amount", "int", "date"):  # a date: its state, weekdays, or bounds in days from today
            extra = (*DATE_STATES, *WEEKDAYS) if f.gen == "date" else ()
            if not allowed or any(bound(v) is None and v not in extra for v in allowed):
                raise ValueError(f"{where}: when {key!r} must list bounds such as '>=1000' or '<=50'")
            continue
        ok = (
            set(DATE_STATES)
            if f.gen == "date"
            else set(f.values)
            if f.gen in ("enum", "choice")
            else {"true", "false"}
            if f.gen == "bool"
            else set()
        )
        if not allowed or not set(allowed) <= ok:
            raise ValueError(f"{where}: when {key!r} must list values of {sorted(ok) or 'an enum or date'}")


def bound(value: str) -> tuple[str, float] | None:
    """A bound on an amount or count in a ``when`` (">=100000", "<=500"): (operator, number), or None."""
    m = re.fullmatch(r"(>=|<=)(-?\d+(?:\.\d+)?)", value.strip())
    return None if m is None else (m.group(1), float(m.group(2)))


def phrase_in(phrase: str, text: str) -> bool:
    """Whether ``text`` uses ``phrase`` as words of its own (case aside; "down" is not in "download")."""
    return re.search(rf"(?<![\w-]){re.escape(phrase.lower())}(?![\w-])", text.lower()) is not None


def asserted(dom: DomainSpec, text: str) -> dict[str, set[str]]:
    """What ``text`` asserts about records, by the domain's ``said`` phrases: "kind.field" -> the values
    (enum) or bounds (amount, count) a record it speaks of must have. A phrase that several values share
    ("back in service": running or idle) allows any of them."""
    out: dict[str, set[str]] = {}
    for kind, ent in dom.entities.items():
        for fname, f in ent.fields.items():
            hits = [v for v, phrases in f.said.items() if any(phrase_in(p, text) for p in phrases)]
            if hits:
                out[f"{kind}.{fname}"] = set(hits)
    return out


def _owner(dom: DomainSpec, kind: str, key: str) -> str:
    """ "kind.field" of a ``when`` key read on ``kind`` ("customer_id.loyalty_tier" on an order is
    "customer.loyalty_tier")."""
    via, _, name = key.rpartition(".")
    return f"{dom.entities[kind].fields[via].entity if via else kind}.{name}"


def _check_said(dom: DomainSpec, text: str, when: dict[str, list[str]], where: str) -> None:
    """A sentence that asserts a state (``asserted``) is tied to it: its ``when`` on that field lists only
    values the phrase allows (an enum), or the phrase's own bound (an amount or count)."""
    for key, values in asserted(dom, text).items():
        if values <= set(DIRECTIONS):  # a direction is a change's, not a state a record has
            continue
        kind, _, fname = key.partition(".")
        f = dom.entities[kind].fields[fname]
        numeric = f.gen in ("amount", "int")
        allowed = (
            set(values) if numeric else {v for v, ps in f.said.items() if any(phrase_in(p, text) for p in ps)}
        )
        given = set(when.get(key, []))
        if not given or (numeric and not values <= given) or (not numeric and not given <= allowed):
            raise ValueError(
                f"{where}: {text!r} says {key} is {sorted(values)}; its when must say so "
                f"(when {key}: {sorted(given) or 'missing'})"
            )


def _check_rules(dom: DomainSpec, ent: EntitySpec, fname: str, f: FieldSpec, where: str) -> None:
    """The rules of one field name only values and fields that exist, on fields of the right kind."""
    only = {
        "next": f.gen == "enum",
        "bulk_next": f.gen == "enum" and f.bulk and bool(f.next),
        "seeded": f.gen == "enum",
        "new": f.gen == "enum",
        "later": f.gen == "date",
        "past": f.gen == "date",
        "workdays": f.gen == "date",
        "same_as": f.gen == "ref",
        "accepts": f.gen == "ref",
        "domains": f.gen == "email",
    }
    for key, ok in only.items():
        if getattr(f, key) and not ok:
            raise ValueError(f"{where}: {key} does not apply to a {f.gen} field")
    for value, following in f.next.items():
        if value not in f.values or not set(following) <= set(f.values) or value in following:
            raise ValueError(f"{where}: next {value!r} -> {following} must name other values of the field")
    for key, values in f.past.items():
        of = ent.fields.get(key)
        if of is None or of.gen != "enum" or not set(values) <= set(of.values):
            raise ValueError(f"{where}: past {key!r} must name an enum field of the record and its values")
    for value, following in f.bulk_next.items():
        if not set(following) <= set(f.next.get(value, [])):
            raise ValueError(f"{where}: bulk_next {value!r} -> {following} must be moves next allows")
    if not set(f.seeded) <= set(f.values) or not set(f.new) <= set(f.values):
        raise ValueError(f"{where}: seeded values must be values of the field")
    for key, table in f.given.items():
        via, _, other = key.partition(".")
        ref = ent.fields.get(via)
        target = dom.entities[ref.entity or ""] if ref is not None and ref.gen == "ref" else None
        # "<ref field>.<its enum field>", or an enum field of the record itself ("cabin": no middle seat
        # in business)
        of = (target.fields.get(other) if target is not None else None) if other else ref
        if (
            f.gen != "enum"
            or of is None
            or of.gen not in ("enum", "choice")
            or via == fname
            or not set(table) <= set(of.values)
        ):
            raise ValueError(
                f"{where}: given {key!r} must be an enum or choice field or <ref field>.<enum field>"
            )
        if any(not set(v) <= set(f.values) for v in table.values()):
            raise ValueError(f"{where}: given {key!r} lists values the field does not have")
    _check_when(dom, ent, f.when, where)
    if fname in f.when:
        raise ValueError(f"{where}: when cannot name the field itself")
    for key, limits in f.by.items():
        of = ent.fields.get(key)
        if f.gen != "date" or of is None or of.gen != "enum" or not set(limits) <= set(of.values):
            raise ValueError(f"{where}: by {key!r} must name an enum field of {ent.noun!r} on a date field")
    if f.only:
        _check_when(dom, ent, f.only, f"{where} only")
        if fname in f.only or any("." in key for key in f.only):
            raise ValueError(f"{where}: only names other fields of the record itself")
    for value in f.said:
        if f.gen in ("amount", "int", "date") and value in DIRECTIONS:
            continue
        if (bound(value) is None) if f.gen in ("amount", "int", "date") else value not in f.values:
            raise ValueError(f"{where}: said names {value!r}, not a value, bound or direction of the field")
    if f.accepts:
        _check_when(dom, dom.entities[f.entity or ""], f.accepts, f"{where} accepts")
    if f.same_as:
        via, _, other = f.same_as.partition(".")
        ref = ent.fields.get(via)
        target = dom.entities[ref.entity or ""] if ref is not None and ref.gen == "ref" else None
        of = target.fields.get(other) if target is not None else None
        if via == fname or of is None or of.gen != "ref" or of.entity != f.entity:
            raise ValueError(f"{where}: same_as {f.same_as!r} must be <ref field>.<its ref to {f.entity!r}>")


def _check_tool(dom: DomainSpec, t: ToolSpec) -> None:
    where = f"tool {t.name!r}"
    if t.entity not in dom.entities:
        raise ValueError(f"{where}: unknown entity {t.entity!r}")
    ent = dom.entities[t.entity]
    needs_field = {"search", "list", "update", "assign", "aggregate"}
    if t.op in needs_field:
        if t.field not in ent.fields:
            raise ValueError(f"{where}: field {t.field!r} not in entity {t.entity!r}")
        gen = ent.fields[t.field].gen
        ok = {
            "search": gen in SEARCHABLE_GENS,
            "list": gen == "ref",
            "assign": gen == "ref",
            "update": gen in UPDATABLE_GENS,
            "aggregate": gen in ("amount", "int"),
        }[t.op]
        if not ok:
            raise ValueError(f"{where}: op {t.op} cannot use field {t.field!r} (gen {gen})")
    if t.op == "create" and (not t.fields or any(f not in ent.fields for f in t.fields)):
        raise ValueError(f"{where}: create fields must name fields of {t.entity!r}")
    if t.op in ("annotate", "notify") and not t.texts:
        raise ValueError(f"{where}: {t.op} needs texts")
    if t.op == "message" and not t.choices:
        raise ValueError(f"{where}: message needs choices (template names)")
    if t.filter is not None and (
        t.op != "list" or ent.fields.get(t.filter, FieldSpec(gen="int", noun="")).gen != "enum"
    ):
        raise ValueError(f"{where}: filter {t.filter!r} must be an enum field of a list tool's entity")
    pool = CHANNELS if t.op == "message" else NOTIFY_CHANNELS if t.op == "notify" else ()
    if t.channels and not set(t.channels) <= set(pool):
        raise ValueError(f"{where}: channels must be a message or notify tool's, out of {list(pool)}")
    for text in t.texts:  # a note or subject that asserts a state fits only records that have it
        fit = t.fits.get(text, TextFit())
        kinds = [t.entity] if t.op == "annotate" else fit.kinds
        tied = (
            {_owner(dom, k, name): v for k in kinds[:1] for name, v in fit.by_kind.get(k, fit.when).items()}
            if len(kinds) == 1
            else {}
        )
        _check_said(dom, text, tied, f"{where} text")
    for text, fit in t.fits.items():
        if text not in t.texts or any(k not in dom.entities for k in fit.kinds):
            raise ValueError(f"{where}: fits names {text!r}: not one of its texts, or an unknown kind")
        if not set(fit.by_kind) <= set(fit.kinds if t.op == "notify" else []):
            raise ValueError(f"{where}: fits {text!r} by_kind names a kind its notification is not about")
        for kind in fit.kinds if t.op == "notify" else [t.entity]:
            if cond := fit.by_kind.get(kind, fit.when):
                _check_when(dom, dom.entities[kind], cond, f"{where} fits {text!r}")
        for key, values in fit.if_named.items():
            kind, _, name = key.partition(".")
            if kind not in dom.entities:
                raise ValueError(f"{where}: fits {text!r} if_named {key!r} names no kind")
            _check_when(dom, dom.entities[kind], {name: values}, f"{where} fits {text!r} if_named")
        if t.op == "notify" and fit.when and not fit.kinds:
            raise ValueError(f"{where}: fits {text!r} has a when but no kinds to read it on")


def domain_files() -> list[Path]:
    return sorted(DOMAIN_DIR.glob("*.yaml"))


@cache
def load_domain(slug: str) -> DomainSpec:
    """Parse and check one domain file (cached: files are read once per process)."""
    path = DOMAIN_DIR / f"{slug}.yaml"
    if not path.is_file():
        raise KeyError(f"unknown domain {slug!r} (no {path})")
    try:
        raw = yaml.load(
            path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
        dom = DomainSpec.model_validate(raw)
    except (ValidationError, ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: {exc}") from exc
    if dom.slug != slug:
        raise ValueError(f"{path}: slug {dom.slug!r} does not match the file name")
    return dom
