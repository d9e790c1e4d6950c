"""The six topology templates, written once over generic operations so they work in every domain.

Each template picks tools and entity instances with the scenario's rng and makes its calls through the
primitives in ``_calls.py``; the resulting dependency graph has the template's shape by construction
(``topologies.check_shape`` confirms it). A template raises ``Infeasible`` when the sampled state or the
domain's tools cannot support the drawn variant; the builder retries with the next seed.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from agentjudge.dataset import rules
from agentjudge.dataset._calls import (
    Ctx,
    Infeasible,
    do_aggregate,
    do_annotate,
    do_assign,
    do_create,
    do_get,
    do_get_each,
    do_list,
    do_message,
    do_notify,
    do_search,
    do_update,
    new_value,
)
from agentjudge.dataset.domains import Context, ToolSpec
from agentjudge.types import Topology

# a cursor is what the last call produced: ("ent", kind, id, step, about) or ("list", kind, ids, step, None);
# ``about`` = (kind, id) of the record a ``get`` read the id from (its output carries both ids)
Cursor = tuple[str, str, Any, int, tuple[str, str] | None]
Action = Callable[[], Cursor | None]

__all__ = ["TEMPLATES", "Ctx", "Infeasible"]

READ_ONLY_LINEAR = 0.05  # share of linear chains that end list -> aggregate (the only read-only GTs)


def _children(ctx: Ctx, lt: ToolSpec, pid: str) -> int:
    return sum(1 for rec in ctx.table(lt.entity).values() if rec[lt.field or ""] == pid)


def _terminals(
    ctx: Ctx, kind: str, rid: str, frm: int | None, about: tuple[str, str] | None = None
) -> list[tuple[str, Action]]:
    """Calls that act on one entity and end a chain: (category, action) pairs; only those of the tools
    in ``ctx.ending`` when it names some that apply (an optional message whose template reports a change
    needs that change in the chain)."""
    ix = ctx.ix
    acts: list[tuple[str, Action]] = []
    tools: list[str] = []  # the tool of each action
    if about is not None and frm is not None:  # tell a person about the record their id came from
        noun = ctx.dom.entities[about[0]].noun
        for t in ctx.unused(ix.tools("notify", kind)):
            if not ctx.texts_for(t, [about[1]]):
                continue

            def notify(t: ToolSpec = t, f: int = frm, ref: str = about[1]) -> None:
                do_notify(ctx, t, rid, f, [ref], f, f"that {noun}")

            acts.append(("notify", notify))
            tools.append(t.name)
    # only the changes a person would make to this record as it stands (rules.py)
    for t in ctx.unused(ix.tools("update", kind)):
        if ctx.changeable(t, rid):
            acts.append(("update", partial(do_update, ctx, t, rid, frm)))
            tools.append(t.name)
    for t in ctx.unused(ix.tools("annotate", kind)):
        if ctx.texts_for(t, [rid]):
            acts.append(("annotate", partial(do_annotate, ctx, t, rid, frm)))
            tools.append(t.name)
    for t in ctx.unused(ix.tools("message", kind)):
        if ctx.templates_for(t):
            acts.append(("message", partial(do_message, ctx, t, rid, frm)))
            tools.append(t.name)
    for t, ref in ix.creates_from(kind):
        if t.name not in ctx.used and ctx.accepts(t, ref, rid):

            def create(t: ToolSpec = t, ref: str = ref) -> None:
                do_create(ctx, t, {ref: (rid, frm)})

            acts.append(("create", create))
            tools.append(t.name)
    preferred = [a for a, name in zip(acts, tools, strict=True) if name in ctx.ending]
    return preferred or acts


def _choose(ctx: Ctx, opts: list[tuple[str, Action]]) -> Action:
    """Pick a category uniformly, then an action in it, so tool-rich categories do not dominate."""
    cats = sorted({c for c, _ in opts})
    cat = ctx.rng.choice(cats)
    return ctx.rng.choice([a for c, a in opts if c == cat])


def _has_terminal(ctx: Ctx, kind: str) -> bool:
    ops = ("update", "annotate", "message", "notify")
    return any(ctx.unused(ctx.ix.tools(op, kind)) for op in ops) or any(
        t.name not in ctx.used for t, _ in ctx.ix.creates_from(kind)
    )


def _continuations(
    ctx: Ctx, kind: str, rid: str, frm: int | None, then_last: bool, lists: bool = False
) -> list[tuple[str, Action]]:
    """Calls on one entity whose output carries the chain on (a referenced id, a new id, a list).

    ``lists``: allow list -> aggregate endings. They change no state, so an end-state comparison
    (tau-bench's check) sees nothing; chains use them only when nothing else can end the chain."""
    ix = ctx.ix
    acts: list[tuple[str, Action]] = []
    gets = ctx.unused(ix.tools("get", kind))
    if gets:
        for field, target in ix.refs(kind):
            if not then_last or _has_terminal(ctx, target):

                def follow(field: str = field, target: str = target) -> Cursor:
                    out = do_get(ctx, kind, rid, frm, ref_field=field)
                    return ("ent", target, out[field], len(ctx.gt) - 1, (kind, rid))

                acts.append(("get", follow))
    for t, ref in ix.creates_from(kind):
        if (
            t.name not in ctx.used
            and ctx.accepts(t, ref, rid)
            and (not then_last or _has_terminal(ctx, t.entity))
        ):

            def create(t: ToolSpec = t, ref: str = ref) -> Cursor:
                zid, i = do_create(ctx, t, {ref: (rid, frm)})
                return ("ent", t.entity, zid, i, None)

            acts.append(("create", create))
    if then_last and lists:
        for lt in ctx.unused(ix.lists_of.get(kind, [])):
            if ctx.unused(ix.tools("aggregate", lt.entity)) and _children(ctx, lt, rid):

                def listing(lt: ToolSpec = lt) -> Cursor:
                    return ("list", lt.entity, do_list(ctx, lt, rid, frm), len(ctx.gt) - 1, None)

                acts.append(("list", listing))
    return acts


def _walk(ctx: Ctx, cur: Cursor, steps: int, first: str | None = None, lists: bool = False) -> Cursor:
    """Extend a chain by ``steps`` calls, each consuming only the previous call's output
    (``first``: the category the first call must have; ``lists``: see ``_continuations``)."""
    for i in range(steps):
        last = i == steps - 1
        what, kind, value, frm, about = cur
        if what == "list":
            aggs = ctx.unused(ctx.ix.tools("aggregate", kind))
            if not last or not aggs:
                raise Infeasible("a list can only end a chain with an aggregate")
            do_aggregate(ctx, ctx.rng.choice(aggs), value, frm)
            return cur
        opts = (
            _terminals(ctx, kind, value, frm, about)
            if last
            else _continuations(ctx, kind, value, frm, i == steps - 2, lists)
        )
        if not opts:
            raise Infeasible(f"chain stuck at {kind}")
        if i == 0 and first is not None:
            opts = [(c, a) for c, a in opts if c == first] or opts
        nxt = _choose(ctx, opts)()
        if nxt is not None:
            cur = nxt
    return cur


def _searchable(ctx: Ctx) -> list[str]:
    return [k for k in ctx.dom.entities if ctx.ix.tools("search", k)]


def _is_person(ctx: Ctx, kind: str) -> bool:
    """People are found by name or email; only records (tickets, orders, claims) are quoted by number."""
    return any(f.gen == "person" for f in ctx.dom.entities[kind].fields.values())


def linear(ctx: Ctx, holds: bool) -> None:
    """search -> ... or (stated id) get -> ...: each call consumes only the previous call's output."""
    rng = ctx.rng
    steps = rng.choice([2, 2, 3])
    starts: list[tuple[str, Callable[[], Cursor]]] = []
    for kind in _searchable(ctx):
        rid = rng.choice(list(ctx.table(kind)))
        # only looked at, not run: which kinds of next call this start allows
        for cat in sorted({c for c, _ in _continuations(ctx, kind, rid, None, steps == 2, lists=True)}):

            def by_search(kind: str = kind, rid: str = rid) -> Cursor:
                _, frm = do_search(ctx, kind, rid)
                return ("ent", kind, rid, frm, None)

            starts.append((f"search+{cat}", by_search))
    # the user states a record's id only where it has no other handle (a ticket or service-order number);
    # a machine, contract or host they name by its asset code, reference or hostname
    for kind in ctx.dom.entities:
        if not ctx.ix.tools("get", kind) or ctx.ix.tools("search", kind):
            continue
        for field, target in ctx.ix.refs(kind):
            if ctx.ix.tools("get", target) or ctx.ix.lists_of.get(target) or ctx.ix.creates_from(target):

                def by_id(kind: str = kind, field: str = field, target: str = target) -> Cursor:
                    rid = rng.choice(list(ctx.table(kind)))
                    tid = do_get(ctx, kind, rid, None, ref_field=field)[field]
                    return ("ent", target, tid, 0, (kind, rid))

                starts.append(("stated_id", by_id))
    if not starts:
        raise Infeasible("no entity to start a chain from")
    # list -> aggregate chains change no state (an end-state comparison would see nothing): rare, kept only
    # so that aggregate tools still appear in GT traces
    plain = sorted({c for c, _ in starts if not c.endswith("list")})
    lists = sorted({c for c, _ in starts if c.endswith("list")})
    cat = rng.choice(lists if lists and (not plain or rng.random() < READ_ONLY_LINEAR) else plain)
    cur = rng.choice([f for c, f in starts if c == cat])()
    _walk(ctx, cur, steps, cat.split("+")[1] if "+" in cat else None, lists=cat.endswith("list"))


def fan_out(ctx: Ctx, holds: bool) -> None:
    options = []
    for kind in _searchable(ctx):
        for rid in ctx.table(kind):
            leaves, reads, with_date = _leaves(ctx, kind, rid)
            if len(leaves) >= 2 and len(leaves) > reads:  # at least one branch changes state
                options.append((kind, rid, bool(with_date)))
    if not options:
        raise Infeasible("no record with two independent follow-ups")
    # a root with a dated follow-up first: the search is the one look-up a hard query can leave implicit,
    # and a date said relative to today is the second thing a hard query can make the reader work out
    dated = [o for o in options if o[2]]
    kinds = sorted({k for k, _, _ in dated or options})
    kind = ctx.rng.choice(kinds)
    rid = ctx.rng.choice([r for k, r, _ in dated or options if k == kind])
    leaves, reads, with_date = _leaves(ctx, kind, rid)
    messages = {i for i, leaf in enumerate(leaves) if getattr(leaf, "func", None) is do_message}
    _, frm = do_search(ctx, kind, rid)
    picked = ctx.rng.sample(range(len(leaves)), min(len(leaves), ctx.rng.choice([2, 2, 3])))
    if all(i < reads for i in picked) and len(leaves) > reads:  # at least one branch changes state
        picked[ctx.rng.randrange(len(picked))] = ctx.rng.randrange(reads, len(leaves))
    if with_date and not with_date & set(picked):
        picked[ctx.rng.randrange(len(picked))] = ctx.rng.choice(sorted(with_date))
    # a message last: its template may follow from a change another branch makes ("order update")
    for i in sorted(set(picked), key=lambda i: (i in messages, picked.index(i))):
        leaves[i](frm)


def _leaves(ctx: Ctx, kind: str, rid: str) -> tuple[list[Callable[[int], Any]], int, set[int]]:
    """Calls that need only an id of ``kind`` (one per tool), for fan_out's branches; the read-only
    ones first, with their count, and the indices of those whose value is a date. Only the changes a
    person would make to record ``rid`` as it stands."""
    ix = ctx.ix
    ent = ctx.dom.entities[kind]
    leaves: list[Callable[[int], Any]] = []
    dated: set[int] = set()
    if ix.tools("get", kind):
        leaves.append(partial(do_get, ctx, kind, rid))
    for lt in ix.lists_of.get(kind, []):
        leaves.append(partial(do_list, ctx, lt, rid))
    reads = len(leaves)
    for t in ix.tools("update", kind):
        if not ctx.changeable(t, rid):
            continue
        if ent.fields[t.field or ""].gen == "date":
            dated.add(len(leaves))
        leaves.append(partial(do_update, ctx, t, rid))
    for t in ix.tools("annotate", kind):
        if ctx.texts_for(t, [rid]):
            leaves.append(partial(do_annotate, ctx, t, rid))
    for t in ix.tools("message", kind):
        leaves.append(partial(do_message, ctx, t, rid))
    for t, ref in ix.creates_from(kind):
        if not ctx.accepts(t, ref, rid):
            continue

        def create(frm: int, t: ToolSpec = t, ref: str = ref) -> None:
            do_create(ctx, t, {ref: (rid, frm)})

        if any(ctx.dom.entities[t.entity].fields[f].gen == "date" for f in t.fields):
            dated.add(len(leaves))
        leaves.append(create)
    return leaves, reads, dated


def diamond(ctx: Ctx, holds: bool) -> None:
    ix, rng = ctx.ix, ctx.rng
    combos: list[tuple[str, str, str, tuple[Any, ...], tuple[Any, ...]]] = []  # (X, ref, T, branch, sink)
    for x in _searchable(ctx):
        if not ix.tools("get", x):
            continue
        for field, target in ix.refs(x):
            for st in ix.tools("notify", target):
                for lt in ix.lists_of.get(x, []):
                    combos.append((x, field, target, ("list", lt), ("notify", st, None)))
                for ct, ref in ix.creates_from(x):
                    combos.append((x, field, target, ("create", ct, ref), ("notify", st, None)))
            for ct, ref in ix.creates_from(x):
                for at in ix.tools("assign", ct.entity):
                    if ix.dom.entities[ct.entity].fields[at.field or ""].entity == target:
                        combos.append((x, field, target, ("create", ct, ref), ("assign", at, None)))
    if not combos:
        raise Infeasible("no diamond in this domain")
    x, field, target, branch, sink = rng.choice(combos)
    rids = list(ctx.table(x))
    if branch[0] == "list":
        lt = branch[1]
        rids = [r for r in rids if _children(ctx, lt, r)]
        if sink[0] == "notify":  # a subject that fits every record the notification is about
            kids = {
                r: [c for c, rec in ctx.table(lt.entity).items() if rec[lt.field or ""] == r] for r in rids
            }
            rids = [r for r in rids if ctx.texts_for(sink[1], kids[r])]
    else:
        rids = [r for r in rids if ctx.accepts(branch[1], branch[2], r)]
    if not rids:
        raise Infeasible("no record the diamond can start from")
    rid = rng.choice(rids)
    _, s0 = do_search(ctx, x, rid)
    got: dict[str, Any] = {}

    def left() -> None:
        got["t"] = (do_get(ctx, x, rid, s0, ref_field=field)[field], len(ctx.gt) - 1)

    def right() -> None:
        if branch[0] == "list":
            got["b"] = (do_list(ctx, branch[1], rid, s0), len(ctx.gt) - 1)
        else:
            zid, i = do_create(ctx, branch[1], {branch[2]: (rid, s0)})
            got["b"] = ([zid], i)

    for part in rng.sample([left, right], 2):
        part()
    (tid, ti), (bval, bi) = got["t"], got["b"]
    child = ctx.dom.entities[branch[1].entity]
    if sink[0] == "notify":
        about = f"those {child.plural}" if branch[0] == "list" else f"the new {child.noun}"
        do_notify(ctx, sink[1], tid, ti, bval, bi, about)
    else:
        do_assign(ctx, sink[1], bval[0], bi, tid, ti)


Runner = Callable[[], tuple[str, int]]
# (direct, make): ``make(id, near)`` returns the calls that reach ``id`` or None; ``direct`` when they find
# the record itself (a search), not through another record that points at it
Producer = tuple[bool, Callable[[str, "set[str] | None"], "Runner | None"]]


def _producer(ctx: Ctx, kind: str, budget: int, avoid: list[str]) -> list[Producer]:
    """Ways to obtain a given id of ``kind`` from the query alone, as (search) or (search|stated id -> get
    ref): each takes the id wanted (and, for a notification, the records near what it is about: the
    recipient is found through one of them, or is one of them) and returns the calls, or None when it
    cannot reach that id.

    ``avoid``: the sink's and the other branches' kinds. A branch never reaches its id through a record
    of one of those kinds: "pull up employee EMP-1 for their technician; find the employee with email x;
    notify the technician about that employee" names two employees, and "that employee" is ambiguous."""
    ix = ctx.ix
    opts: list[Producer] = []
    if ix.tools("search", kind):

        def search(tid: str, near: set[str] | None) -> Runner | None:
            if near is not None and tid not in near:
                return None
            return lambda: do_search(ctx, kind, tid)

        opts.extend([(True, search)] * 3)
    for w in ctx.dom.entities:
        if w == kind or w in avoid or not ix.tools("get", w):
            continue
        for field, target in ix.refs(w):
            if target != kind:
                continue

            def holder(tid: str, near: set[str] | None, w: str = w, field: str = field) -> str | None:
                held = [
                    r for r, rec in ctx.table(w).items() if rec[field] == tid and (near is None or r in near)
                ]
                return ctx.rng.choice(held) if held else None

            def by_id(tid: str, near: set[str] | None, w: str = w, field: str = field) -> Runner | None:
                rid = holder(tid, near, w, field)
                if rid is None:
                    return None
                return lambda: (do_get(ctx, w, rid, None, ref_field=field)[field], len(ctx.gt) - 1)

            if not _is_person(ctx, w) and not ix.tools("search", w):
                opts.append((False, by_id))
            if budget >= 2 and ix.tools("search", w):

                def via_search(
                    tid: str, near: set[str] | None, w: str = w, field: str = field
                ) -> Runner | None:
                    rid = holder(tid, near, w, field)
                    if rid is None:
                        return None

                    def run() -> tuple[str, int]:
                        _, s = do_search(ctx, w, rid)
                        return do_get(ctx, w, rid, s, ref_field=field)[field], len(ctx.gt) - 1

                    return run

                opts.append((False, via_search))
    return opts


def _runner(ctx: Ctx, prods: list[Producer], tid: str, near: set[str] | None = None) -> Runner | None:
    """One of the producers that can reach ``tid`` (drawn at random), or None."""
    ways = [r for _, make in prods if (r := make(tid, near)) is not None]
    return ctx.rng.choice(ways) if ways else None


def _near(ctx: Ctx, rid: str) -> set[str]:
    """Records one reference away from ``rid``, either way (the ticket's requester, the alerts on a host)."""
    kind = rules.kind_of(ctx.dom, rid) or ""
    out = {v for f, v in ctx.row(kind, rid).items() if f.endswith("_id") and isinstance(v, str)}
    for table in ctx.env.state["entities"].values():
        for other, rec in table.items():
            if other != rid and rid in rec.values():
                out.add(other)
    return {v for v in out if rules.kind_of(ctx.dom, v) is not None}


def _create_targets(ctx: Ctx, t: ToolSpec, refs: list[str]) -> list[dict[str, str]]:
    """Id tuples a new record of ``t`` may link, one per reference field: records it may point at
    (``accepts``) that agree with each other (``same_as``: a new alert's owner is its host's owner)."""
    ent = ctx.dom.entities[t.entity]
    free = [f for f in refs if (ent.fields[f].same_as or ".").split(".")[0] not in refs]
    out = []
    for _ in range(24):
        pick = {f: ctx.rng.choice(list(ctx.table(ent.fields[f].entity or ""))) for f in free}
        for f in refs:
            if f not in pick:
                via, _, other = (ent.fields[f].same_as or "").partition(".")
                pick[f] = ctx.row(ent.fields[via].entity or "", pick[via])[other]
        if all(ctx.accepts(t, f, pick[f]) for f in refs) and pick not in out:
            out.append(pick)
    return out


def fan_in(ctx: Ctx, holds: bool) -> None:
    rng, dom = ctx.rng, ctx.dom
    sinks: list[tuple[str, ToolSpec, list[str]]] = []
    for t in dom.tools:
        ent = dom.entities[t.entity]
        if t.op == "create":
            refs = [f for f in t.fields if ent.fields[f].gen == "ref"]
            if len(refs) >= 2:
                sinks.append(("create", t, refs))
        elif t.op == "assign":
            sinks.append(("assign", t, []))
        elif t.op == "notify":
            sinks.append(("notify", t, []))
    rng.shuffle(sinks)
    for how, t, refs in sinks:
        ent = dom.entities[t.entity]
        if how == "create":
            kinds = [ent.fields[f].entity or "" for f in refs]
        elif how == "assign":
            kinds = [t.entity, ent.fields[t.field or ""].entity or ""]
        else:
            others = [k for k in _searchable(ctx) if k != t.entity]
            if not others:
                continue
            kinds = [t.entity, rng.choice(others)]
        budget = 4 - len(kinds)  # extra calls allowed beyond one per branch (at most 5 in all)
        prods = [_producer(ctx, k, budget, [t.entity, *kinds]) for k in kinds]
        if not all(prods):
            continue
        runners = _fan_in_runners(ctx, how, t, refs, kinds, prods)
        if runners is not None:
            break
    else:
        raise Infeasible("no fan-in sink whose inputs can all be produced and agree")
    order = list(range(len(kinds)))
    rng.shuffle(order)
    got: dict[int, tuple[str, int]] = {}
    for j in order:
        got[j] = runners[j]()
    if len(ctx.gt) + 1 > 5:
        raise Infeasible("fan_in over five calls")
    names = [s.call.name for s in ctx.gt]
    if len(set(names)) != len(names):  # a repeated tool would read as a loop, and sets would merge it
        raise Infeasible("fan_in branches repeat a tool")
    if how == "create":
        do_create(ctx, t, {f: got[j] for j, f in enumerate(refs)})
    elif how == "assign":
        do_assign(ctx, t, got[0][0], got[0][1], got[1][0], got[1][1])
    else:
        other = dom.entities[kinds[1]]
        do_notify(ctx, t, got[0][0], got[0][1], [got[1][0]], got[1][1], f"that {other.noun}")


def _fan_in_runners(
    ctx: Ctx, how: str, t: ToolSpec, refs: list[str], kinds: list[str], prods: list[list[Producer]]
) -> list[Runner] | None:
    """The calls of each branch, for ids that make one coherent request: a new record's links agree and
    may be linked; an assignment of a record that can still be handed on, to someone else; a notification
    to a person near the record it is about (its analyst, the approver of the leave request whose position
    it is), never to a stranger found through an unrelated record."""
    rng = ctx.rng
    if how == "create":
        for pick in _create_targets(ctx, t, refs):
            runners = [_runner(ctx, prods[j], pick[f]) for j, f in enumerate(refs)]
            if all(runners):
                return [r for r in runners if r is not None]
        return None
    if how == "assign":
        field = t.field or ""
        zids = [z for z in ctx.table(t.entity) if ctx.changeable(t, z)]
        rng.shuffle(zids)
        for zid in zids[:6]:
            first = _runner(ctx, prods[0], zid)
            tids = [x for x in ctx.table(kinds[1]) if x != ctx.row(t.entity, zid)[field]]
            if first is None or not tids:
                continue
            # the new holder is found directly or through a record next to the one handed on (never as
            # the approver of an unrelated leave request)
            close = _near(ctx, zid)
            closer = close | {x for c in close for x in _near(ctx, c)}
            rng.shuffle(tids)
            for direct, make in rng.sample(prods[1], len(prods[1])):
                second = next((r for x in tids[:12] if (r := make(x, None if direct else closer))), None)
                if second is not None:
                    return [first, second]
        return None
    about = [y for y in ctx.table(kinds[1]) if ctx.texts_for(t, [y])]
    rng.shuffle(about)
    for y in about[:6]:
        second = _runner(ctx, prods[1], y)
        if second is None:
            continue
        close = _near(ctx, y)
        closer = close | {x for c in close for x in _near(ctx, c)}
        # found directly, the recipient is a person near the record; found through another record, that
        # record is next to it (every way to every such recipient, so look-ups through a relation keep
        # their share)
        ways = [
            r
            for who in ctx.table(t.entity)
            for direct, make in prods[0]
            if (r := make(who, closer if direct else close)) is not None
        ]
        if ways:
            return [rng.choice(ways), second]
    return None


def optional_enrichment(ctx: Ctx, holds: bool) -> None:
    ix, rng = ctx.ix, ctx.rng
    cond = [t for t in ctx.dom.tools if t.condition and t.op in ("annotate", "message", "update")]
    if not cond:
        raise Infeasible("domain has no conditional tool")
    if holds:  # a message whose templates all report a change needs a chain that can make one
        cond = [t for t in cond if t.op != "message" or _can_follow(ctx, t)] or cond
    ct = rng.choice(cond)
    kind = ct.entity
    ctx.used.add(ct.name)  # the main chain must not use the conditional tool itself
    if holds and ct.op == "message" and ct.follows:  # a chain that ends in a change a template reports
        ctx.ending = {e.partition("=")[0] for after in ct.follows.values() for e in after}
    ways: list[Callable[[], tuple[str, int]]] = []
    if ix.tools("search", kind) or ix.tools("get", kind):

        def direct() -> tuple[str, int]:
            if ix.tools("search", kind):
                rid, s = do_search(ctx, kind)
            else:  # the user states the id (a ticket or order number); the chain starts from its record
                rid = rng.choice(list(ctx.table(kind)))
                do_get(ctx, kind, rid, None)
                s = 0
            _walk(ctx, ("ent", kind, rid, s, None), rng.choice([1, 2]) if _has_terminal(ctx, kind) else 2)
            return rid, s

        ways.append(direct)
    for x in _searchable(ctx):
        if ix.tools("get", x) and any(t == kind for _, t in ix.refs(x)) and _has_terminal(ctx, kind):

            def via_ref(x: str = x) -> tuple[str, int]:
                field = rng.choice([f for f, t in ix.refs(x) if t == kind])
                xid, s = do_search(ctx, x)
                eid = do_get(ctx, x, xid, s, ref_field=field)[field]
                hang = len(ctx.gt) - 1
                _walk(ctx, ("ent", kind, eid, hang, (x, xid)), 1)
                return eid, hang

            ways.append(via_ref)
        if ix.tools("get", x) and any(t == kind for _, t in ix.refs(x)) and _has_terminal(ctx, x):

            def of_changed(x: str = x) -> tuple[str, int]:
                # the change is on the record found, the extra step on the one it points at ("freeze the
                # account and send its owner a notice of the change")
                field = rng.choice([f for f, t in ix.refs(x) if t == kind])
                xid, s = do_search(ctx, x)
                eid = do_get(ctx, x, xid, s, ref_field=field)[field]
                hang = len(ctx.gt) - 1
                _walk(ctx, ("ent", x, xid, s, None), 1)
                return eid, hang

            ways.append(of_changed)
        for t, ref in ix.creates_from(x):
            if t.entity == kind:

                def via_create(x: str = x, t: ToolSpec = t, ref: str = ref) -> tuple[str, int]:
                    xid, s = do_search(ctx, x)
                    eid, hang = do_create(ctx, t, {ref: (xid, s)})
                    if _has_terminal(ctx, kind):
                        _walk(ctx, ("ent", kind, eid, hang, None), 1)
                    return eid, hang

                ways.append(via_create)
    if not ways:
        raise Infeasible(f"no chain reaches {kind}")
    eid, hang = rng.choice(ways)()
    ctx.ending = set()
    ctx.used.discard(ct.name)
    assert ct.condition is not None
    ctx.condition_holds = holds
    ctx.condition_about = eid if eid in ctx.referents else None
    ctx.condition_tool = ct.name
    if not holds:
        ctx.condition_text = rng.choice(ct.condition.absent)
        return
    # the step says what the reason asks for: holds[i] is the reason for texts[i] (a note) or choices[i]
    # (a message template), so "travelling with a cello" gets the musical-instrument remark
    pool = ct.texts if ct.op == "annotate" else ct.choices
    if ct.op in ("annotate", "message") and len(pool) < len(ct.condition.holds):
        raise ValueError(
            f"domain {ctx.dom.slug!r}, tool {ct.name!r}: condition.holds[{len(pool)}] has no matching "
            f"{'texts' if ct.op == 'annotate' else 'choices'}[{len(pool)}]"
        )
    # only a reason whose note fits the record ("a medical certificate was handed in" for sick leave)
    templates = ctx.templates_for(ct, asked=True) if ct.op == "message" else []
    reasons = [
        k
        for k in range(len(ct.condition.holds))
        if (ct.op != "annotate" or ctx.fits(ct, pool[k], ct.entity, eid))
        and (ct.op != "message" or pool[k] in templates)  # an "upgrade confirmation" only after an upgrade
        and _reason_fits(ctx, ct.condition.holds[k], kind, eid)  # "just signed up" of no platinum member
    ]
    if not reasons:
        raise Infeasible(f"{ct.name}: no reason whose note fits {eid}")
    i = rng.choice(reasons)
    reason = ctx.condition_text = ct.condition.holds[i]
    if ct.op == "annotate":
        do_annotate(ctx, ct, eid, hang, note=pool[i], conditional=True)
    elif ct.op == "message":
        do_message(ctx, ct, eid, hang, conditional=True, template=pool[i], reason=reason)
    else:
        do_update(ctx, ct, eid, hang, conditional=True)


def _reason_fits(ctx: Ctx, reason: str, kind: str, eid: str) -> bool:
    """Whether what a reason asserts (``domains.asserted``) holds of the records of the request now."""
    play = rules.in_play(ctx.dom, ctx.gt)
    play[kind] = [*play.get(kind, []), eid]
    world = ctx.env.state["entities"]
    return rules.context_fits(ctx.dom, Context(text=reason), [], play, world, world, ctx.ref_date)


def _can_follow(ctx: Ctx, t: ToolSpec) -> bool:
    """Whether a chain to a record of ``t``'s kind, or to a record that points at one, can end in a change
    one of its templates reports (or a template reports none)."""
    if any(c not in t.follows or c in t.standing for c in t.choices):
        return True
    names = {e.partition("=")[0] for after in t.follows.values() for e in after}
    near = [t.entity] + [
        x
        for x in _searchable(ctx)
        if ctx.ix.tools("get", x) and any(k == t.entity for _, k in ctx.ix.refs(x))
    ]
    ends = {u.name for k in near for u in ctx.ix.tools("update", k)} | {
        u.name for k in near for u, _ in ctx.ix.creates_from(k)
    }
    return bool(names & ends)


def loop_like(ctx: Ctx, holds: bool) -> None:
    ix, rng, dom = ctx.ix, ctx.rng, ctx.dom
    combos = []
    for parent, lts in ix.lists_of.items():
        for lt in lts:
            for op in ("update", "annotate", "get"):
                for bt in ix.tools(op, lt.entity):
                    # only what one request does to every record of a list ("close every ticket", never
                    # "set a window seat on every booking" or "medical certificate received" on each)
                    field = dom.entities[bt.entity].fields[bt.field or ""] if op == "update" else None
                    if field is not None and (
                        not field.bulk or (field.bulk_via and lt.name not in field.bulk_via)
                    ):
                        continue
                    if op == "annotate" and not any(f.bulk for f in bt.fits.values()):
                        continue
                    combos.append((parent, lt, bt))
    # a loop of reads changes no state (an end-state comparison sees nothing): only when nothing else fits
    combos = [c for c in combos if c[2].op != "get"] or combos
    if not combos:
        raise Infeasible("no list tool with a per-item follow-up")
    parent, lt, bt = rng.choice(combos)
    # the parent is found by a value the person knows ("every work order at the Beacon Hill substation"),
    # never handed over by id, wherever it can be searched: a hard query then leaves both the search and
    # the listing to the reader
    with_search = bool(ix.tools("search", parent))
    top = 3 if with_search else 4
    kids: dict[str, list[str]] = {}
    for cid, rec in ctx.table(lt.entity).items():
        kids.setdefault(rec[lt.field or ""], []).append(cid)

    def fits(ids: list[str]) -> bool:  # every listed record is in a state for the change
        if bt.op == "update":  # every record from one state: "close every resolved ticket"
            field = bt.field or ""
            states = {str(ctx.row(bt.entity, c)[field]) for c in ids}
            spec = dom.entities[bt.entity].fields[field]
            lifecycle = bool(spec.next)
            moves = [rules.targets(spec, s, bulk=True) for s in states]
            return (
                all(ctx.changeable(bt, c) for c in ids)
                and (len(states) == 1 or not lifecycle)
                and all(m is None or m for m in moves)
            )
        return bt.op != "annotate" or bool(ctx.texts_for(bt, ids, bulk=True))

    eligible = [p for p in ctx.table(parent) if 2 <= len(kids.get(p, [])) <= top and fits(kids[p])]
    if not eligible:
        raise Infeasible("no parent with 2-4 children that all allow the change")
    pid = rng.choice(eligible)
    frm: int | None = None
    if with_search:
        _, frm = do_search(ctx, parent, pid)
    ids = do_list(ctx, lt, pid, frm)
    li = len(ctx.gt) - 1
    child = dom.entities[lt.entity]
    value: Any = None
    note = rng.choice(ctx.texts_for(bt, ids, bulk=True)) if bt.op == "annotate" else None
    if bt.op == "update":
        current = {ctx.table(lt.entity)[i][bt.field or ""] for i in ids}
        value = new_value(ctx, child, bt.field or "", current, bulk=True)
    for cid in ids:
        if bt.op == "update":
            do_update(ctx, bt, cid, li, value=value, each=True)
        elif bt.op == "annotate":
            do_annotate(ctx, bt, cid, li, note=note, each=True)
        else:
            do_get_each(ctx, bt, cid, li)
        ctx.used.discard(bt.name)


TEMPLATES: dict[Topology, Callable[[Ctx, bool], None]] = {
    "linear": linear,
    "fan_out": fan_out,
    "fan_in": fan_in,
    "diamond": diamond,
    "optional_enrichment": optional_enrichment,
    "loop_like": loop_like,
}
