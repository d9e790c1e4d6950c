"""Scenario construction primitives: one function per generic operation, each making one GT call.

``Ctx.call`` executes a call (so outputs are real), records the GT step with its dependencies, and
records the matching PlanStep: one Slot per argument, query-sourced values that a person would state
(names, emails, codes, dates, amounts, enum values) and step-sourced values taken from earlier outputs.
Every change follows the domain's rules (``rules.py``): a value a person in the role would set from the
record's current state, a note or subject that fits its record, a new record only on records it may point
at. Anything the sampled state cannot support raises ``Infeasible``; the builder then retries another seed.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from functools import cache
from typing import Any, Literal

from agentjudge.dataset import rules
from agentjudge.dataset.domains import CHANNELS, DomainSpec, EntitySpec, ToolSpec, load_domain
from agentjudge.dataset.env import ToolError
from agentjudge.dataset.plan import Listing, Op, PlanStep, Referent, Relation, Slot
from agentjudge.dataset.world import DomainEnvironment
from agentjudge.types import GTStep, ToolCall

SlotKind = Literal["text", "id", "number", "date", "enum", "bool", "list"]
KIND: dict[str, SlotKind] = {
    "person": "text",
    "email": "text",
    "phone": "text",
    "code": "id",
    "choice": "text",
    "enum": "enum",
    "date": "date",
    "amount": "number",
    "int": "number",
    "bool": "bool",
    "ref": "id",
}


class Infeasible(Exception):
    """This template cannot be instantiated on this sampled state; try another seed."""


class Index:
    """A domain's tools grouped by operation and entity, so templates can ask 'what can I do with X'."""

    def __init__(self, dom: DomainSpec) -> None:
        self.dom = dom
        self.by: dict[tuple[str, str], list[ToolSpec]] = {}
        for t in dom.tools:
            self.by.setdefault((t.op, t.entity), []).append(t)
        self.lists_of: dict[str, list[ToolSpec]] = {}  # parent kind -> list tools over its children
        for t in dom.tools:
            if t.op == "list":
                parent = dom.entities[t.entity].fields[t.field or ""].entity or ""
                self.lists_of.setdefault(parent, []).append(t)

    def tools(self, op: str, kind: str) -> list[ToolSpec]:
        return self.by.get((op, kind), [])

    def refs(self, kind: str) -> list[tuple[str, str]]:
        """(field, target kind) for each ref field of ``kind``."""
        return [(n, f.entity or "") for n, f in self.dom.entities[kind].fields.items() if f.gen == "ref"]

    def creates_from(self, kind: str) -> list[tuple[ToolSpec, str]]:
        """Create tools whose only supplied reference is one field pointing at ``kind``."""
        out = []
        for t in self.dom.tools:
            if t.op != "create":
                continue
            ent = self.dom.entities[t.entity]
            refs = [f for f in t.fields if ent.fields[f].gen == "ref"]
            if len(refs) == 1 and ent.fields[refs[0]].entity == kind:
                out.append((t, refs[0]))
        return out


@cache
def index_for(slug: str) -> Index:
    return Index(load_domain(slug))


class Ctx:
    """One scenario under construction: the environment, the rng, the GT so far and its plan."""

    def __init__(self, dom: DomainSpec, env: DomainEnvironment, rng: random.Random) -> None:
        self.dom, self.env, self.rng = dom, env, rng
        self.ix = index_for(dom.slug)
        self.gt: list[GTStep] = []
        self.plan: list[PlanStep] = []
        self.used: set[str] = set()
        self.ending: set[str] = set()  # tools a chain should end with, when one applies (shapes)
        self.ref_date = date.fromisoformat(env.state["reference_date"])
        self.condition_text: str | None = None
        self.condition_holds: bool | None = None
        self.condition_about: str | None = None  # the referent the condition speaks of
        self.condition_tool: str | None = None  # the tool of optional_enrichment's extra step
        # the records the request is about, keyed by id (a listed set: "set<step>"), in order of finding
        self.referents: dict[str, Referent] = {}

    def known(self, kind: str, rid: str) -> str:
        """The referent key of record ``rid``; a record nothing found yet is one the person quotes by id."""
        if rid not in self.referents:
            ent = self.dom.entities[kind]
            self.found(Referent(key=rid, noun=ent.noun, plural=ent.plural, how="stated", value=rid))
        return rid

    def found(self, referent: Referent) -> str:
        """Register a record a step finds (the first way a record is found is how the person knows it)."""
        people = {
            e.noun for e in self.dom.entities.values() if any(f.gen == "person" for f in e.fields.values())
        }
        if referent.key not in self.referents:
            self.referents[referent.key] = referent.model_copy(update={"person": referent.noun in people})
        return referent.key

    def set_of(self, ids: list[str]) -> str | None:
        """The listed set whose records are ``ids`` (loop bodies, aggregates, notifications about them)."""
        for key, ref in self.referents.items():
            if ref.how == "children" and ref.value == ids:
                return key
        return None

    def table(self, kind: str) -> dict[str, dict[str, Any]]:
        return self.env.state["entities"][kind]

    def row(self, kind: str, rid: str) -> dict[str, Any]:
        return self.env.state["entities"][kind][rid]

    def changeable(self, t: ToolSpec, rid: str) -> bool:
        """Whether a person would make ``t``'s change (update or assign) to record ``rid`` now."""
        return rules.changeable(
            self.dom,
            t.entity,
            t.field or "",
            self.row(t.entity, rid),
            self.ref_date,
            self.env.state["entities"],
        )

    def fits(self, t: ToolSpec, text: str, kind: str, rid: str) -> bool:
        """Whether a note or notification subject of ``t`` fits record ``rid`` of ``kind``."""
        return rules.text_fits(
            t.fits.get(text), self.dom, kind, self.row(kind, rid), self.ref_date, self.env.state["entities"]
        )

    def texts_for(self, t: ToolSpec, ids: list[str], bulk: bool = False) -> list[str]:
        """The texts of ``t`` that fit every record of ``ids`` (and may go on all of them, for ``bulk``),
        never one a change made so far contradicts (``never_after``), and one that reports a change
        (``follows``: "case reassigned to you") only once that change is made."""
        out = []
        done = self.done()
        play = rules.in_play(self.dom, self.gt)
        for text in t.texts:
            fit = t.fits.get(text)
            if bulk and not (fit is not None and fit.bulk):
                continue
            if not rules.named_fits(fit, self.dom, play, self.env.state["entities"], self.ref_date):
                continue
            if any(rules.matches(e, done) for e in t.never_after.get(text, [])):
                continue
            if text in t.follows and not any(rules.matches(e, done) for e in t.follows[text]):
                continue
            kinds = [(rules.kind_of(self.dom, rid) or "", rid) for rid in ids]
            if all(k and self.fits(t, text, k, rid) for k, rid in kinds):
                out.append(text)
        return out

    def done(self) -> list[tuple[str, set[str]]]:
        """The changes made so far: (tool, the values it set) per GT step that is not a read."""
        specs = {t.name: t for t in self.dom.tools}
        return [
            (s.call.name, rules.step_values(t, s.call.arguments))
            for s in self.gt
            if (t := specs[s.call.name]).op not in ("search", "get", "list", "aggregate")
        ]

    def templates_for(self, t: ToolSpec, asked: bool = False) -> list[str]:
        """The templates of message tool ``t`` that fit the request so far: one that follows a change only
        once that change is made ("leave decision" after the decision; never an "order update" alone), or,
        ``asked`` (an optional step whose reason is the person's own wish), one they may ask for any time."""
        done = self.done()
        return [
            c
            for c in t.choices
            if (
                c not in t.follows
                or (asked and c in t.standing)
                or any(rules.matches(e, done) for e in t.follows[c])
            )
            and not any(rules.matches(e, done) for e in t.never_after.get(c, []))
        ]

    def accepts(self, t: ToolSpec, field: str, rid: str) -> bool:
        """Whether a new record of ``t`` may point at ``rid`` through ``field`` (a booking on a flight that
        still flies)."""
        f = self.dom.entities[t.entity].fields[field]
        target = f.entity or ""
        return not f.accepts or rules.holds(
            self.dom, target, f.accepts, self.row(target, rid), self.ref_date, self.env.state["entities"]
        )

    def call(
        self,
        t: ToolSpec,
        args: dict[str, Any],
        slots: list[Slot],
        phrasings: list[str],
        conditional: bool = False,
        relation: Relation | None = None,
        listing: Listing | None = None,
        op: Op = "get",
        target: str | None = None,
        yields: str | None = None,
        about: list[str] | None = None,
        field_noun: str = "",
        field_gen: str = "",
        each: bool = False,
    ) -> Any:
        try:
            out = self.env.execute(ToolCall(name=t.name, arguments=args))
        except ToolError as exc:
            raise Infeasible(f"{t.name}: {exc}") from exc
        fill = {s.arg: s.value for s in slots if s.source == "query"}
        text = phrasings[0].format(**fill)
        self.gt.append(
            GTStep(
                call=ToolCall(name=t.name, arguments=args),
                output=out,
                depends_on=sorted({s.from_step for s in slots if s.from_step is not None}),
                description=text[:1].upper() + text[1:] + ".",
            )
        )
        self.plan.append(
            PlanStep(
                step=len(self.gt) - 1,
                phrasings=phrasings,
                slots=slots,
                conditional=conditional,
                relation=relation,
                listing=listing,
                op=op,
                target=target,
                yields=yields,
                about=about or [],
                field_noun=field_noun,
                field_gen=field_gen,
                each=each,
            )
        )
        self.used.add(t.name)
        return out

    def unused(self, tools: list[ToolSpec]) -> list[ToolSpec]:
        return [t for t in tools if t.name not in self.used]


def _id_slot(ent: EntitySpec, value: Any, frm: int | None, arg: str | None = None) -> Slot:
    if frm is None:  # an id the user states (e.g. an order number)
        return Slot(arg=arg or ent.id_key, value=value, source="query", noun=f"the {ent.noun} id", kind="id")
    return Slot(
        arg=arg or ent.id_key, value=value, source="step", from_step=frm, noun=f"the {ent.noun} id", kind="id"
    )


def new_value(
    ctx: Ctx,
    ent: EntitySpec,
    fname: str,
    avoid: set[Any] | frozenset[Any] = frozenset(),
    record: dict[str, Any] | None = None,
    row: dict[str, Any] | None = None,
    bulk: bool = False,
) -> Any:
    """A value a person would state for a field, never one in ``avoid`` (the current values), so that
    an update always changes the state and a wrong value is visible in the end state. A field with a
    lifecycle moves only where the rules let every current value move ("contained" after "triaging",
    never after "false positive"; with ``bulk``, a move made on every listed record at once); an office
    date falls on a working day; an extension lies after the current date; an amount or count changes by
    at most half or double (nobody cuts a price from 481 to 135); a value that depends on another record
    fits it (``given``: a hail claim only under a motor or home policy, read from ``record``, the new
    record's references so far)."""
    f = ent.fields[fname]
    rng = ctx.rng
    pool: list[Any]
    if f.gen == "enum" and f.next and avoid:
        moves = [set(rules.targets(f, v, bulk) or ()) for v in avoid]
        pool = [v for v in f.values if all(v in m for m in moves)]
    elif f.gen in ("enum", "choice"):
        pool = list(f.values)
    elif f.gen == "date" and f.later:
        current = [date.fromisoformat(str(v)[:10]) for v in avoid]
        if not current or min(current) < ctx.ref_date:
            raise Infeasible(f"{fname}: an extension of a date that has lapsed")
        start = max(current)
        pool = [(start + timedelta(days=d)).isoformat() for d in range(30, 181, 7)]
    elif f.gen == "date":
        # within the field's own window (a date of loss lies in the past, a due date ahead), preferring two
        # to thirty days from today where the window allows; a window that reaches the future gets a future
        # date (a stored delivery date may be past, but nobody moves a delivery to five days ago)
        window = range(int(f.min), int(f.max) + 1)
        ahead = f.max >= 2
        days = (
            [d for d in window if (2 <= d <= 30 if ahead else -30 <= d <= -2)]
            or [d for d in window if d]
            or list(range(2, 31))
        )
        pool = [(ctx.ref_date + timedelta(days=d)).isoformat() for d in days]
    elif f.gen == "amount":
        step = 50 if f.max >= 1000 else 5
        pool = [float(k * step) for k in range(int(f.min // step) + 1, int(f.max // step) + 1)]
    elif f.gen == "int":
        pool = list(range(int(f.min), int(f.max) + 1))
    elif f.gen == "bool":
        pool = [True, False]
    else:
        raise Infeasible(f"no stated value for field {fname!r} ({f.gen})")
    if f.gen == "date" and f.workdays:
        pool = [v for v in pool if date.fromisoformat(v).weekday() not in rules.WEEKEND]
    numbers = [v for v in avoid if isinstance(v, int | float) and not isinstance(v, bool) and v > 0]
    if f.gen in ("amount", "int") and len(numbers) == 1:
        near = [v for v in pool if 0.5 * numbers[0] <= v <= 2 * numbers[0]]
        pool = near or pool
    if record is not None and f.new:  # a visit booked in a room is in person
        pool = [v for v in pool if v in f.new]
    have = row if row is not None else record or {}
    kind = next(k for k, e in ctx.dom.entities.items() if e is ent)
    entities = ctx.env.state["entities"]
    for key, allowed in f.given.items():
        on = rules.given_by(ctx.dom, kind, key, have, entities)
        if on is not None:
            pool = [v for v in pool if v in allowed.get(str(on), [])]
    for gname, g in ent.fields.items():  # and the other way round: no cabin a seat already chosen forbids
        if fname in g.given and have.get(gname) is not None:
            pool = [v for v in pool if have[gname] in g.given[fname].get(str(v), [])]
    # a date no further out than the record's priority allows, a priority the record's date allows
    # (``by``: read on ``row``, the record an update changes, or ``record``, a new one's values so far)
    pool = [v for v in pool if not rules.too_far(ent, {**have, fname: v}, ctx.ref_date)]
    pool = [v for v in pool if v not in avoid]
    if not pool:
        raise Infeasible(f"no value of {fname!r} a person would set from {sorted(map(str, avoid))}")
    return rng.choice(pool)


# ---------------------------------------------------------------- one call each
# Each primitive makes one call and says what it does to which referent (``PlanStep.op/target/yields``);
# its one phrasing is the GT step's description ("Look up the employee with email address x.").


def do_search(ctx: Ctx, kind: str, rid: str | None = None) -> tuple[str, int]:
    cands = ctx.unused(ctx.ix.tools("search", kind))
    if not cands:
        raise Infeasible(f"no unused search tool for {kind}")
    t = ctx.rng.choice(cands)
    ent = ctx.dom.entities[kind]
    rid = rid or ctx.rng.choice(list(ctx.table(kind)))
    f = t.field or ""
    fs = ent.fields[f]
    value = ctx.table(kind)[rid][f]
    noun = fs.noun
    # "the room's room code" reads as a slip: a field noun that already names the record stands alone
    said = f"the {noun}" if noun.lower().startswith(ent.noun.lower() + " ") else f"the {ent.noun}'s {noun}"
    slot = Slot(arg=f, value=value, source="query", noun=said, kind=KIND[fs.gen])
    ctx.found(
        Referent(
            key=rid,
            noun=ent.noun,
            plural=ent.plural,
            how="search",
            step=len(ctx.gt),
            value=value,
            field_noun=noun,
            field_gen=fs.gen,
            phrases=list(fs.phrases),
        )
    )
    out = ctx.call(
        t, {f: value}, [slot], [f"look up the {ent.noun} with {noun} {{{f}}}"], op="search", yields=rid
    )
    return out[ent.id_key], len(ctx.gt) - 1


def do_get(ctx: Ctx, kind: str, rid: str, frm: int | None, ref_field: str | None = None) -> dict[str, Any]:
    t = ctx.ix.tools("get", kind)[0]
    ent = ctx.dom.entities[kind]
    me = ctx.known(kind, rid)
    stated = f"{ent.noun} {{{ent.id_key}}}" if frm is None else f"the {ent.noun}"
    relation = None
    yields = None
    if ref_field is None:
        say = f"pull up the full record of {stated}"
    else:
        fs = ent.fields[ref_field]
        target = ctx.dom.entities[fs.entity or ""]
        say = f"look up the {fs.noun} of {stated}"
        relation = Relation(source=ent.noun, noun=fs.noun, target=target.noun)
        tid = ctx.table(kind)[rid][ref_field]
        from agentjudge.dataset.mentions import names_kind

        yields = ctx.found(
            Referent(
                key=tid,
                noun=target.noun,
                plural=target.plural,
                how="relation",
                step=len(ctx.gt),
                source=me,
                relation=fs.noun,
                names_kind=names_kind(fs.noun, target.noun),
            )
        )
    return ctx.call(
        t,
        {ent.id_key: rid},
        [_id_slot(ent, rid, frm)],
        [say],
        relation=relation,
        op="get",
        target=me,
        yields=yields,
    )


def do_list(ctx: Ctx, t: ToolSpec, pid: str, frm: int | None) -> list[str]:
    child = ctx.dom.entities[t.entity]
    pkind = child.fields[t.field or ""].entity or ""
    parent = ctx.dom.entities[pkind]
    me = ctx.known(pkind, pid)
    stated = f"{parent.noun} {{{parent.id_key}}}" if frm is None else f"the {parent.noun}"
    listing = Listing(child=child.noun, plural=child.plural, parent=parent.noun)
    key = f"set{len(ctx.gt)}"
    out = ctx.call(
        t,
        {parent.id_key: pid},
        [_id_slot(parent, pid, frm)],
        [f"list the {child.plural} of {stated}"],
        listing=listing,
        op="list",
        target=me,
        yields=key,
    )
    ctx.found(
        Referent(
            key=key,
            noun=child.noun,
            plural=child.plural,
            how="children",
            step=len(ctx.gt) - 1,
            value=out[child.ids_key],
            source=me,
        )
    )
    return out[child.ids_key]


def _target(ctx: Ctx, kind: str, rid: str, each: bool) -> str:
    """The referent a change acts on: the record, or for a loop body the listed set it belongs to."""
    if each:
        for key, ref in ctx.referents.items():
            if ref.how == "children" and rid in (ref.value or []):
                return key
    return ctx.known(kind, rid)


def do_update(
    ctx: Ctx,
    t: ToolSpec,
    rid: str,
    frm: int | None,
    value: Any = None,
    each: bool = False,
    conditional: bool = False,
) -> None:
    ent = ctx.dom.entities[t.entity]
    f = t.field or ""
    fs = ent.fields[f]
    if not ctx.changeable(t, rid):
        raise Infeasible(f"{t.name}: {rid} is not in a state a person would change its {fs.noun} in")
    if value is None:
        value = new_value(ctx, ent, f, {ctx.table(t.entity)[rid][f]}, row=ctx.table(t.entity)[rid])
    which = f"each of those {ent.plural}" if each else f"the {ent.noun}"
    say = f"set the {fs.noun} of {which} to {{{f}}}"
    slot = Slot(arg=f, value=value, source="query", noun=f"the new {fs.noun}", kind=KIND[fs.gen])
    ctx.call(
        t,
        {ent.id_key: rid, f: value},
        [_id_slot(ent, rid, frm), slot],
        [say],
        conditional,
        op="update",
        target=_target(ctx, t.entity, rid, each),
        field_noun=fs.noun,
        field_gen=fs.gen,
        each=each,
    )


def do_annotate(
    ctx: Ctx,
    t: ToolSpec,
    rid: str,
    frm: int | None,
    note: str | None = None,
    each: bool = False,
    conditional: bool = False,
) -> None:
    ent = ctx.dom.entities[t.entity]
    if note is None:
        fitting = ctx.texts_for(t, [rid])
        if not fitting:
            raise Infeasible(f"{t.name}: no note fits {rid}")
        note = ctx.rng.choice(fitting)
    elif not ctx.fits(t, note, t.entity, rid):
        raise Infeasible(f"{t.name}: {note!r} does not fit {rid}")
    which = f"each of those {ent.plural}" if each else f"the {ent.noun}"
    slot = Slot(arg="note", value=note, source="query", noun="the note text", kind="text")
    ctx.call(
        t,
        {ent.id_key: rid, "note": note},
        [_id_slot(ent, rid, frm), slot],
        [f'add a note to {which} saying "{{note}}"'],
        conditional,
        op="annotate",
        target=_target(ctx, t.entity, rid, each),
        each=each,
    )


# A reason that names how the person wants to hear ("by email", "in writing") fixes the channel.
CHANNEL_CUES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("email", ("email",)),
    ("by text", ("sms",)),
    ("writing", ("email", "postal_mail")),
    ("written", ("email", "postal_mail")),
)


def do_message(
    ctx: Ctx,
    t: ToolSpec,
    rid: str,
    frm: int | None,
    conditional: bool = False,
    template: str | None = None,
    reason: str = "",
) -> None:
    """``template``/``reason``: optional_enrichment's message, tied to the condition that asks for it."""
    ent = ctx.dom.entities[t.entity]
    offered = tuple(t.channels or CHANNELS)
    channels = offered
    for cue, fits in CHANNEL_CUES:
        if cue in reason:
            channels = tuple(c for c in fits if c in offered)
            break
    if named := rules.preferred_channels(t, ctx.row(t.entity, rid)):
        channels = tuple(c for c in channels if c in named)
    if not channels:
        raise Infeasible(f"{t.name}: the reason asks for a channel it does not send by")
    channel = ctx.rng.choice(channels)
    if template is None:  # the reason of an optional step names its own template
        fitting = ctx.templates_for(t)
        if not fitting:
            raise Infeasible(f"{t.name}: no template follows from what the request changes")
        template = ctx.rng.choice(fitting)
    slots = [
        _id_slot(ent, rid, frm),
        Slot(arg="channel", value=channel, source="query", noun="the delivery channel", kind="enum"),
        Slot(arg="template", value=template, source="query", noun="the message template", kind="enum"),
    ]
    ctx.call(
        t,
        {ent.id_key: rid, "channel": channel, "template": template},
        slots,
        [f"send the {ent.noun} the {{template}} message by {{channel}}"],
        conditional,
        op="message",
        target=ctx.known(t.entity, rid),
    )


def do_get_each(ctx: Ctx, t: ToolSpec, rid: str, frm: int) -> None:
    ent = ctx.dom.entities[t.entity]
    ctx.call(
        t,
        {ent.id_key: rid},
        [_id_slot(ent, rid, frm)],
        [f"pull up the full record of each of those {ent.plural}"],
        op="get_each",
        target=_target(ctx, t.entity, rid, True),
        each=True,
    )


def do_create(ctx: Ctx, t: ToolSpec, refs: dict[str, tuple[str, int | None]]) -> tuple[str, int]:
    """Create an entity; ``refs`` maps each reference field to (id, producing step)."""
    ent = ctx.dom.entities[t.entity]
    args: dict[str, Any] = {}
    slots: list[Slot] = []
    stated: list[str] = []
    for_: list[str] = []
    links: list[str] = []
    for f in t.fields:
        fs = ent.fields[f]
        if fs.gen == "ref":
            rid, frm = refs[f]
            if not ctx.accepts(t, f, rid):
                raise Infeasible(f"{t.name}: a new {ent.noun} may not point at {rid}")
            args[f] = rid
            target = ctx.dom.entities[fs.entity or ""]
            slots.append(_id_slot(target, rid, frm, arg=f))
            links.append(ctx.known(fs.entity or "", rid))
            for_.append(f"the {target.noun}" if frm is not None else f"{target.noun} {{{f}}}")
        else:
            args[f] = new_value(ctx, ent, f, record=args)
            slots.append(Slot(arg=f, value=args[f], source="query", noun=f"the {fs.noun}", kind=KIND[fs.gen]))
            stated.append(f"{fs.noun} {{{f}}}")
    with_ = stated[0] if len(stated) == 1 else ", ".join(stated[:-1]) + " and " + stated[-1]
    who = f" for {' and '.join(for_)}" if for_ else ""
    for f in t.fields:  # a new alert's owner is its host's owner
        derived = ent.fields[f].same_as
        if derived and ent.fields[f].gen == "ref":
            via, _, other = derived.partition(".")
            linked = ctx.table(ent.fields[via].entity or "").get(str(args.get(via)))
            if via in args and linked is not None and linked[other] != args[f]:
                raise Infeasible(f"{t.name}: {args[f]} is not {args[via]}'s {other}")
    out = ctx.call(t, args, slots, [f"create a new {ent.noun}{who} with {with_}"], op="create", about=links)
    zid = out[ent.id_key]
    ctx.plan[-1] = ctx.plan[-1].model_copy(update={"yields": zid})
    ctx.found(Referent(key=zid, noun=ent.noun, plural=ent.plural, how="created", step=len(ctx.gt) - 1))
    return zid, len(ctx.gt) - 1


def do_notify(
    ctx: Ctx, t: ToolSpec, sid: str, sfrm: int | None, refs: list[str], rfrm: int, about: str
) -> None:
    ent = ctx.dom.entities[t.entity]
    fitting = ctx.texts_for(t, refs)  # "VIP on board" only about a gold or platinum passenger
    if not fitting:
        raise Infeasible(f"{t.name}: no subject fits {refs}")
    subject = ctx.rng.choice(fitting)
    slots = [
        _id_slot(ent, sid, sfrm),
        Slot(arg="subject", value=subject, source="query", noun="the notification subject", kind="text"),
        Slot(arg="reference_ids", value=refs, source="step", from_step=rfrm, noun=about, kind="list"),
    ]
    what = ctx.set_of(refs) or (refs[0] if len(refs) == 1 and refs[0] in ctx.referents else None)
    ctx.call(
        t,
        {ent.id_key: sid, "subject": subject, "reference_ids": refs},
        slots,
        [f'notify the {ent.noun} about {about} with the subject "{{subject}}"'],
        op="notify",
        target=ctx.known(t.entity, sid),
        about=[what] if what else [],
    )


def do_assign(ctx: Ctx, t: ToolSpec, zid: str, zfrm: int, tid: str, tfrm: int) -> None:
    ent = ctx.dom.entities[t.entity]
    f = t.field or ""
    target = ctx.dom.entities[ent.fields[f].entity or ""]
    if not ctx.changeable(t, zid) or ctx.row(t.entity, zid)[f] == tid:
        raise Infeasible(f"{t.name}: {zid} cannot be handed to {tid}")
    ctx.call(
        t,
        {ent.id_key: zid, f: tid},
        [_id_slot(ent, zid, zfrm), _id_slot(target, tid, tfrm, arg=f)],
        [f"assign the {ent.noun} to the {target.noun}"],
        op="assign",
        target=ctx.known(t.entity, zid),
        about=[ctx.known(ent.fields[f].entity or "", tid)],
        field_noun=ent.fields[f].noun,
    )


def do_aggregate(ctx: Ctx, t: ToolSpec, ids: list[str], frm: int) -> None:
    ent = ctx.dom.entities[t.entity]
    noun = ent.fields[t.field or ""].noun
    slot = Slot(
        arg=ent.ids_key, value=ids, source="step", from_step=frm, noun=f"those {ent.plural}", kind="list"
    )
    ctx.call(
        t,
        {ent.ids_key: ids},
        [slot],
        [f"add up the {noun} of those {ent.plural}"],
        op="aggregate",
        target=ctx.set_of(ids),
        field_noun=noun,
    )
