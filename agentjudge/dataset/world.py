"""Executable domains: seeded per-record state, JSON-Schema tools, and the environment that runs them.

Every tool is one of ten generic operations over the entities a domain file declares; the state is a
few dozen small dicts rebuilt from ``(domain, seed)``, so a record carries no state of its own and any
list of calls can be replayed against the exact initial state the GT was produced from (tau-bench's
end-state comparison). Outputs are plain JSON values; bad calls raise ``ToolError`` with a readable reason.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, timedelta
from functools import cache, lru_cache
from typing import Any

from agentjudge.dataset.domains import DomainSpec, EntitySpec, FieldSpec, ToolSpec, domain_files, load_domain
from agentjudge.dataset.env import ToolEnvironment, ToolError
from agentjudge.dataset.toolschemas import check_args, first_enum, tool_schemas
from agentjudge.types import Record, ToolCall


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FIRST = _words(
    "Amara Ben Carla Dmitri Elena Farid Grace Hiro Ines Jonas Keisha Liam Maya Nikhil Olga Pedro "
    "Quinn Rosa Samir Tara Umar Vera Wei Ximena Yusuf Zoe Aaron Bianca Chloe Diego Esther Felix Gita "
    "Hannah Ivan Julia Kofi Lena Mateo Nadia"
)
LAST = _words(
    "Okafor Lindqvist Moreau Petrov Haddad Tanaka Silva Novak Schmidt Mensah Rossi Kowalski Nguyen "
    "Fischer Ortega Brennan Iyer Larsen Dubois Costa Yilmaz Walsh Keller Adeyemi Park Varga Jensen "
    "Romano Bauer Castillo Ahmed Holm Quispe Sato Murphy Weber Greco Ibrahim Lund Reyes"
)
BASE_DATE = date(2026, 1, 5)


@cache
def _slugs() -> tuple[str, ...]:
    return tuple(p.stem for p in domain_files())


def list_domains() -> list[str]:
    """The fifteen domain slugs, sorted (one per YAML file in ``domains/``)."""
    return list(_slugs())


def domain_title(slug: str) -> str:
    """The human title of a domain, e.g. "IT service management"."""
    return load_domain(slug).title


# ---------------------------------------------------------------- state


Gen = Callable[[random.Random, int, dict[str, Any], dict[str, list[str]], set[str]], Any]


def _compile_field(f: FieldSpec, email_domain: str, person_field: str | None) -> Gen:
    """One fast generator per field: (rng, reference ordinal, record so far, ids by kind, used) -> value.

    Built once per domain because state generation runs for every build and every replay."""
    g = f.gen
    vals = list(f.values)
    if g == "person":

        def person(
            rng: random.Random, ref: int, rec: dict[str, Any], ids: dict[str, list[str]], used: set[str]
        ) -> Any:
            while True:
                name = f"{FIRST[int(rng.random() * len(FIRST))]} {LAST[int(rng.random() * len(LAST))]}"
                if name not in used:
                    used.add(name)
                    return name

        return person
    if g == "email":
        if person_field is None:
            raise ValueError("an email field needs an earlier person field in the same entity")
        pf = person_field
        if f.domains:  # an outside party: a customer's own mail provider, a supplier's company domain
            pool = list(f.domains)
            return lambda rng, ref, rec, ids, used: (
                f"{rec[pf].lower().replace(' ', '.')}@{pool[int(rng.random() * len(pool))]}"
            )
        return lambda rng, ref, rec, ids, used: f"{rec[pf].lower().replace(' ', '.')}@{email_domain}"
    if g in ("phone", "code"):

        def code(
            rng: random.Random, ref: int, rec: dict[str, Any], ids: dict[str, list[str]], used: set[str]
        ) -> Any:
            while True:
                v = (
                    f"+1-555-{rng.randrange(100, 1000)}-{rng.randrange(1000, 10000)}"
                    if g == "phone"
                    else f"{f.prefix}-{rng.randrange(1000, 10000)}"
                )
                if v not in used:
                    used.add(v)
                    return v

        return code
    if g == "enum":
        start = list(f.seeded) or vals  # a flight leaving in three weeks is not boarding yet
        return lambda rng, ref, rec, ids, used: start[int(rng.random() * len(start))]
    if g == "choice":  # unique within the state while the pool lasts (search keys must be unique)

        def choice(
            rng: random.Random, ref: int, rec: dict[str, Any], ids: dict[str, list[str]], used: set[str]
        ) -> Any:
            free = [v for v in vals if v not in used] or vals
            v = free[int(rng.random() * len(free))]
            used.add(v)
            return v

        return choice
    lo, hi = f.min, f.max
    if g == "date":
        if f.workdays:  # office work: a Saturday moves to the Friday before, a Sunday to the Monday after

            def workday(
                rng: random.Random, ref: int, rec: dict[str, Any], ids: dict[str, list[str]], used: set[str]
            ) -> Any:
                day = date.fromordinal(ref + int(lo) + int(rng.random() * (hi - lo + 1)))
                return (day + timedelta(days=(0, 0, 0, 0, 0, -1, 1)[day.weekday()])).isoformat()

            return workday
        return lambda rng, ref, rec, ids, used: date.fromordinal(
            ref + int(lo) + int(rng.random() * (hi - lo + 1))
        ).isoformat()
    if g == "amount":
        return lambda rng, ref, rec, ids, used: round(lo + rng.random() * (hi - lo), 2)
    if g == "int":
        return lambda rng, ref, rec, ids, used: int(lo) + int(rng.random() * (hi - lo + 1))
    if g == "bool":
        return lambda rng, ref, rec, ids, used: rng.random() < 0.5
    target = f.entity or ""

    def ref_(
        rng: random.Random, ref: int, rec: dict[str, Any], ids: dict[str, list[str]], used: set[str]
    ) -> Any:
        pool = ids[target]
        return pool[int(rng.random() * len(pool))]

    return ref_


Derived = tuple[str, str, str, str]  # (field, via field, target kind, target field): ``same_as``
# (field, via field, target kind, target field, values by the target's value): ``given``
Given = tuple[str, str, str, str, dict[str, list[str]]]


def _compile_kind(dom: DomainSpec, kind: str, spec: EntitySpec) -> tuple[Any, ...]:
    """How one kind's records are seeded: (kind, spec, id key, field generators, ``same_as``, ``given``,
    ``only``, ``accepts`` as (ref field, target kind, the enum values the target must have), ``by``,
    ``past``)."""
    person = next((n for n, f in spec.fields.items() if f.gen == "person"), None)
    gens = [(n, _compile_field(f, dom.email_domain, person)) for n, f in spec.fields.items()]
    derived: list[Derived] = []
    given: list[Given] = []
    for n, f in spec.fields.items():
        if f.same_as:
            via, _, other = f.same_as.partition(".")
            derived.append((n, via, spec.fields[via].entity or "", other))
        for key, table in f.given.items():
            via, _, other = key.partition(".")
            given.append((n, via, (spec.fields[via].entity or "") if other else "", other, table))
    only = [(n, f.only) for n, f in spec.fields.items() if f.only]
    soon = [(n, f, key, table) for n, f in spec.fields.items() for key, table in f.by.items()]
    past = [(n, f) for n, f in spec.fields.items() if f.past]
    # a seeded record points only where a new one may (a card on a card account, a booking on a flight
    # that flies): the enum values of ``accepts``
    accepts = [
        (
            n,
            f.entity or "",
            {k: v for k, v in f.accepts.items() if dom.entities[f.entity or ""].fields[k].gen == "enum"},
        )
        for n, f in spec.fields.items()
        if f.gen == "ref" and f.accepts
    ]
    return (kind, spec, spec.id_key, gens, derived, given, only, accepts, soon, past)


@cache
def _compiled(slug: str) -> list[tuple[Any, ...]]:
    dom = load_domain(slug)
    return [_compile_kind(dom, kind, spec) for kind, spec in dom.entities.items()]


def initial_state(dom: DomainSpec, seed: int) -> dict[str, Any]:
    """The domain's world for one record: entities keyed by kind then id, an action log, id counters."""
    rng = random.Random(seed)
    ref_date = BASE_DATE + timedelta(days=rng.randrange(330))
    ref = ref_date.toordinal()
    ents: dict[str, dict[str, dict[str, Any]]] = {}
    ids: dict[str, list[str]] = {}
    used: set[str] = set()
    for kind, spec, id_key, gens, derived, given, only, accepts, soon, past in _compiled(dom.slug):
        lo = 10 ** (spec.digits - 1)
        table: dict[str, dict[str, Any]] = {}
        pools = {
            fname: [r for r, row in ents[target].items() if all(row[k] in v for k, v in want.items())]
            for fname, target, want in accepts
        }
        for n in sorted(rng.sample(range(lo, lo * 9), spec.count)):  # lo*9.. is left for created ids
            rid = f"{spec.prefix}-{n}"
            rec: dict[str, Any] = {id_key: rid}
            for fname, gen in gens:
                rec[fname] = gen(rng, ref, rec, ids, used)
            for fname, pool in pools.items():
                if pool and rec[fname] not in pool:
                    rec[fname] = pool[int(rng.random() * len(pool))]
            for fname, via, target, other in derived:  # an alert's owner is its host's owner
                rec[fname] = ents[target][rec[via]][other]
            for fname, via, target, other, allowed in given:  # no water leak under a travel policy
                on = ents[target][rec[via]][other] if target else rec[via]
                fitting = allowed.get(str(on), [])
                if fitting and rec[fname] not in fitting:
                    rec[fname] = fitting[int(rng.random() * len(fitting))]
            for fname, cond in only:  # no overdraft limit on a savings account
                if any(rec[k] not in v for k, v in cond.items()):
                    rec[fname] = None
            for fname, f, key, limits in soon:  # an emergency job is not booked three weeks out
                limit = limits.get(str(rec[key]))
                if rec[fname] is None or limit is None:  # None: no date on this record (``only``)
                    continue
                if date.fromisoformat(rec[fname]).toordinal() - ref > limit:
                    day = date.fromordinal(ref + int(f.min) + int(rng.random() * (limit - int(f.min) + 1)))
                    rec[fname] = (
                        day - timedelta(days=max(0, day.weekday() - 4) if f.workdays else 0)
                    ).isoformat()
            for fname, f in past:  # a completed job was scheduled on a day that has passed
                if rec[fname] is None or date.fromisoformat(rec[fname]).toordinal() < ref:
                    continue
                if all(rec[k] in v for k, v in f.past.items()):
                    day = date.fromordinal(ref - 1 - int(rng.random() * 30))
                    rec[fname] = (
                        day - timedelta(days=max(0, day.weekday() - 4) if f.workdays else 0)
                    ).isoformat()
            table[rid] = rec
        ents[kind] = table
        ids[kind] = list(table)
    return {"reference_date": ref_date.isoformat(), "entities": ents, "log": [], "counter": 0}


def fresh_copy(state: dict[str, Any]) -> dict[str, Any]:
    """A fast copy of a state that no call has touched yet (records hold only scalars; the log is empty)."""
    return {
        "reference_date": state["reference_date"],
        "log": [],
        "counter": state["counter"],
        "entities": {
            k: {r: rec.copy() for r, rec in table.items()} for k, table in state["entities"].items()
        },
    }


def copy_state(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: copy_state(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [copy_state(v) for v in obj]
    return obj


# ---------------------------------------------------------------- environment


class DomainEnvironment:
    """The executable tools of one record over its own copy of the domain state."""

    def __init__(
        self, slug: str, seed: int, tool_names: list[str] | None = None, state: dict[str, Any] | None = None
    ) -> None:
        """``state`` lets the builder pass a copy of ``initial_state(domain, seed)`` it already made."""
        self.dom = load_domain(slug)
        self.slug = slug
        self.state = initial_state(self.dom, seed) if state is None else state
        specs = {t.name: t for t in self.dom.tools}
        names = list(specs) if tool_names is None else tool_names
        self.tools = {n: specs[n] for n in names if n in specs}

    def snapshot(self) -> dict[str, Any]:
        return copy_state(self.state)  # type: ignore[no-any-return,unused-ignore]

    def state_equals(self, state: dict[str, Any]) -> bool:
        """``snapshot() == state`` without copying the state first (``scoring.outcome`` compares every
        prediction's end state with the GT's: the copy was a fifth of scoring's time or more)."""
        return bool(self.state == state)

    def _table(self, kind: str) -> dict[str, dict[str, Any]]:
        return self.state["entities"][kind]

    def _fetch(self, kind: str, rid: str) -> dict[str, Any]:
        rec = self._table(kind).get(rid)
        if rec is None:
            raise ToolError(f"no {self.dom.entities[kind].noun} with id {rid!r}")
        return rec

    def _new_id(self, prefix: str, digits: int = 4) -> str:
        """Created ids live above every seeded id (seeded ids use the range below 9 * 10**(digits-1))."""
        self.state["counter"] += 1
        return f"{prefix}-{9 * 10 ** (digits - 1) + self.state['counter']}"

    def execute(self, call: ToolCall) -> Any:
        t = self.tools.get(call.name)
        if t is None:
            raise ToolError(f"unknown tool {call.name!r}")
        params = tool_schemas(self.slug)[call.name].parameters
        check_args(call.arguments, params, call.name)
        return getattr(self, f"_op_{t.op}")(t, self.dom.entities[t.entity], dict(call.arguments))

    def _op_search(self, t: ToolSpec, ent: EntitySpec, a: dict[str, Any]) -> Any:
        f = t.field or ""
        want = str(a[f]).strip().casefold()
        for rid, rec in self._table(t.entity).items():
            if str(rec[f]).casefold() == want:
                return {ent.id_key: rid, f: rec[f]}
        raise ToolError(f"no {ent.noun} with {ent.fields[f].noun} {a[f]!r}")

    def _op_get(self, t: ToolSpec, ent: EntitySpec, a: dict[str, Any]) -> Any:
        rec = self._fetch(t.entity, a[ent.id_key])
        keep = a.get("fields")
        return {k: v for k, v in rec.items() if not keep or k == ent.id_key or k in keep}

    def _op_list(self, t: ToolSpec, ent: EntitySpec, a: dict[str, Any]) -> Any:
        parent_kind = ent.fields[t.field or ""].entity or ""
        pid = a[self.dom.entities[parent_kind].id_key]
        self._fetch(parent_kind, pid)
        status = t.filter or first_enum(ent)
        ids = [
            rid
            for rid, rec in self._table(t.entity).items()
            if rec[t.field or ""] == pid and (status is None or status not in a or rec[status] == a[status])
        ][: a.get("limit", 50)]
        return {ent.ids_key: ids, "count": len(ids)}

    def _op_update(self, t: ToolSpec, ent: EntitySpec, a: dict[str, Any]) -> Any:
        rec = self._fetch(t.entity, a[ent.id_key])
        f = t.field or ""
        if ent.fields[f].gen == "ref":
            self._fetch(ent.fields[f].entity or "", a[f])
        prev, rec[f] = rec[f], a[f]
        if "reason" in a:
            self.state["log"].append(
                {"op": "audit", "tool": t.name, "id": rec[ent.id_key], "reason": a["reason"]}
            )
        return {ent.id_key: rec[ent.id_key], f: rec[f], f"previous_{f}": prev, "updated": True}

    _op_assign = _op_update

    def _op_create(self, t: ToolSpec, ent: EntitySpec, a: dict[str, Any]) -> Any:
        for fname, f in ent.fields.items():  # references first: a rejected call must not consume an id
            if fname in a and f.gen == "ref":
                self._fetch(f.entity or "", a[fname])
        rid = self._new_id(ent.prefix, ent.digits)
        rec: dict[str, Any] = {ent.id_key: rid}
        for fname, f in ent.fields.items():
            if fname in a:
                rec[fname] = a[fname]
            else:  # fields the caller does not supply get a deterministic default
                rec[fname] = f.values[0] if f.values else (False if f.gen == "bool" else None)
        self._table(t.entity)[rid] = rec
        return {ent.id_key: rid, "created": True, **{n: a[n] for n in t.fields}}

    def _op_notify(self, t: ToolSpec, ent: EntitySpec, a: dict[str, Any]) -> Any:
        self._fetch(t.entity, a[ent.id_key])
        nid = self._new_id("NTF")
        self.state["log"].append(
            {
                "op": "notify",
                "id": nid,
                "to": a[ent.id_key],
                "subject": a["subject"],
                "refs": list(a["reference_ids"]),
            }
        )
        return {"notification_id": nid, ent.id_key: a[ent.id_key], "status": "queued"}

    def _op_annotate(self, t: ToolSpec, ent: EntitySpec, a: dict[str, Any]) -> Any:
        self._fetch(t.entity, a[ent.id_key])
        nid = self._new_id("NOTE")
        self.state["log"].append(
            {
                "op": "note",
                "id": nid,
                "on": a[ent.id_key],
                "note": a["note"],
                "visibility": a.get("visibility", "internal"),
            }
        )
        return {"note_id": nid, ent.id_key: a[ent.id_key], "created": True}

    def _op_message(self, t: ToolSpec, ent: EntitySpec, a: dict[str, Any]) -> Any:
        self._fetch(t.entity, a[ent.id_key])
        mid = self._new_id("MSG")
        self.state["log"].append(
            {
                "op": "message",
                "id": mid,
                "to": a[ent.id_key],
                "channel": a["channel"],
                "template": a["template"],
            }
        )
        return {"message_id": mid, ent.id_key: a[ent.id_key], "status": "sent"}

    def _op_aggregate(self, t: ToolSpec, ent: EntitySpec, a: dict[str, Any]) -> Any:
        vals = [self._fetch(t.entity, rid)[t.field or ""] for rid in a[ent.ids_key]]
        nd = a.get("round_to", 2)
        f = t.field or ""
        return {"count": len(vals), f"total_{f}": round(sum(vals), nd), f"max_{f}": round(max(vals), nd)}


@lru_cache(maxsize=64)
def _pristine_state(slug: str, seed: int) -> dict[str, Any]:
    """``initial_state`` of one record's world, never handed out itself: environments get a
    ``fresh_copy`` of it. Scoring builds an environment per prediction (5 generators x 3 difficulties of a
    record share the seed, in a row): generating the world is ~0.2 ms, copying it ~0.01 ms."""
    return initial_state(load_domain(slug), seed)


def make_environment(record: Record) -> DomainEnvironment | None:
    """A fresh environment at the record's initial state; None when the record is not one of ours."""
    if record.seed is None or record.domain not in _slugs():
        return None
    state = fresh_copy(_pristine_state(record.domain, record.seed))  # records hold scalars only
    return DomainEnvironment(record.domain, record.seed, [t.name for t in record.tools], state=state)


def environment_for(record: Record) -> ToolEnvironment | None:
    """A fresh environment at the record's initial state, or None when the record is not ours
    (e.g. a downloaded AgentJudgeBench file has no domain engine or seed). Callers that only run calls
    and compare states use this protocol view of ``make_environment``."""
    return make_environment(record)
