"""The six topology templates, written once over generic operations so they work in every domain.

Each template picks tools and entity instances with the scenario's rng and makes its calls through the
primitives in ``_calls.py``; the resulting dependency graph has the template's shape by construction
(``topologies.check_shape`` confirms it). A template raises ``Infeasible`` when the sampled state or the
domain's tools cannot support the drawn variant; the builder retries with the next seed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

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
from agentjudge.dataset.domains import ToolSpec
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
    """Calls that act on one entity and end a chain: (category, action) pairs."""
    ix = ctx.ix
    acts: list[tuple[str, Action]] = []
    if about is not None and frm is not None:  # tell a person about the record their id came from
        noun = ctx.dom.entities[about[0]].noun
        for t in ctx.unused(ix.tools("notify", kind)):

            def notify(t: ToolSpec = t, f: int = frm, ref: str = about[1]) -> None:
                do_notify(ctx, t, rid, f, [ref], f, f"that {noun}")

            acts.append(("notify", notify))
    for t in ctx.unused(ix.tools("update", kind)):
        acts.append(("update", partial(do_update, ctx, t, rid, frm)))
    for t in ctx.unused(ix.tools("annotate", kind)):
        acts.append(("annotate", partial(do_annotate, ctx, t, rid, frm)))
    for t in ctx.unused(ix.tools("message", kind)):
        acts.append(("message", partial(do_message, ctx, t, rid, frm)))
    for t, ref in ix.creates_from(kind):
        if t.name not in ctx.used:

            def create(t: ToolSpec = t, ref: str = ref) -> None:
                do_create(ctx, t, {ref: (rid, frm)})

            acts.append(("create", create))
    return acts


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
        if t.name not in ctx.used and (not then_last or _has_terminal(ctx, t.entity)):

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
    for kind in ctx.dom.entities:
        if not ctx.ix.tools("get", kind):
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
    kinds = [k for k in _searchable(ctx) if len(_leaves(ctx, k, "")[0]) >= 2]
    if not kinds:
        raise Infeasible("no entity with two independent follow-ups")
    # a root with a dated follow-up first: the search is the one look-up a hard query can leave implicit,
    # and a date said relative to today is the second thing a hard query can make the reader work out
    dated = [k for k in kinds if _leaves(ctx, k, "")[2]]
    kind = ctx.rng.choice(dated or kinds)
    rid = ctx.rng.choice(list(ctx.table(kind)))
    leaves, reads, with_date = _leaves(ctx, kind, rid)
    _, frm = do_search(ctx, kind, rid)
    picked = ctx.rng.sample(range(len(leaves)), min(len(leaves), ctx.rng.choice([2, 2, 3])))
    if all(i < reads for i in picked) and len(leaves) > reads:  # at least one branch changes state
        picked[ctx.rng.randrange(len(picked))] = ctx.rng.randrange(reads, len(leaves))
    if with_date and not with_date & set(picked):
        picked[ctx.rng.randrange(len(picked))] = ctx.rng.choice(sorted(with_date))
    for i in sorted(set(picked), key=picked.index):
        leaves[i](frm)


def _leaves(ctx: Ctx, kind: str, rid: str) -> tuple[list[Callable[[int], Any]], int, set[int]]:
    """Calls that need only an id of ``kind`` (one per tool), for fan_out's branches; the read-only
    ones first, with their count, and the indices of those whose value is a date."""
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
        if ent.fields[t.field or ""].gen == "date":
            dated.add(len(leaves))
        leaves.append(partial(do_update, ctx, t, rid))
    for t in ix.tools("annotate", kind):
        leaves.append(partial(do_annotate, ctx, t, rid))
    for t in ix.tools("message", kind):
        leaves.append(partial(do_message, ctx, t, rid))
    for t, ref in ix.creates_from(kind):

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
        rids = [r for r in rids if _children(ctx, branch[1], r)]
        if not rids:
            raise Infeasible("no parent with children")
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


def _producer(
    ctx: Ctx, kind: str, budget: int, avoid: list[str]
) -> list[Callable[[], tuple[str, int]]] | None:
    """Ways to obtain an id of ``kind`` from the query alone, as (search) or (search|stated id -> get ref).

    ``avoid``: the sink's and the other branches' kinds. A branch never reaches its id through a record
    of one of those kinds: "pull up employee EMP-1 for their technician; find the employee with email x;
    notify the technician about that employee" names two employees, and "that employee" is ambiguous."""
    ix, opts = ctx.ix, []
    for _ in ix.tools("search", kind)[:1]:
        opts.extend([lambda: do_search(ctx, kind)] * 3)
    for w in ctx.dom.entities:
        if w == kind or w in avoid or not ix.tools("get", w):
            continue
        for field, target in ix.refs(w):
            if target != kind:
                continue

            def by_id(w: str = w, field: str = field) -> tuple[str, int]:
                rid = ctx.rng.choice(list(ctx.table(w)))
                return do_get(ctx, w, rid, None, ref_field=field)[field], len(ctx.gt) - 1

            if not _is_person(ctx, w):
                opts.append(by_id)
            if budget >= 2 and ix.tools("search", w):

                def via_search(w: str = w, field: str = field) -> tuple[str, int]:
                    rid, s = do_search(ctx, w)
                    return do_get(ctx, w, rid, s, ref_field=field)[field], len(ctx.gt) - 1

                opts.append(via_search)
    return opts or None


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
        if all(prods):
            break
    else:
        raise Infeasible("no fan-in sink whose inputs can all be produced")
    order = list(range(len(kinds)))
    rng.shuffle(order)
    got: dict[int, tuple[str, int]] = {}
    for j in order:
        got[j] = rng.choice(prods[j] or [])()
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


def optional_enrichment(ctx: Ctx, holds: bool) -> None:
    ix, rng = ctx.ix, ctx.rng
    cond = [t for t in ctx.dom.tools if t.condition and t.op in ("annotate", "message", "update")]
    if not cond:
        raise Infeasible("domain has no conditional tool")
    ct = rng.choice(cond)
    kind = ct.entity
    ctx.used.add(ct.name)  # the main chain must not use the conditional tool itself
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
    ctx.used.discard(ct.name)
    assert ct.condition is not None
    ctx.condition_holds = holds
    ctx.condition_about = eid if eid in ctx.referents else None
    if not holds:
        ctx.condition_text = rng.choice(ct.condition.absent)
        return
    # the step says what the reason asks for: holds[i] is the reason for texts[i] (a note) or choices[i]
    # (a message template), so "travelling with a cello" gets the musical-instrument remark
    i = rng.randrange(len(ct.condition.holds))
    reason = ctx.condition_text = ct.condition.holds[i]
    pool = ct.texts if ct.op == "annotate" else ct.choices
    if ct.op in ("annotate", "message") and i >= len(pool):
        raise ValueError(
            f"domain {ctx.dom.slug!r}, tool {ct.name!r}: condition.holds[{i}] has no matching "
            f"{'texts' if ct.op == 'annotate' else 'choices'}[{i}]"
        )
    if ct.op == "annotate":
        do_annotate(ctx, ct, eid, hang, note=pool[i], conditional=True)
    elif ct.op == "message":
        do_message(ctx, ct, eid, hang, conditional=True, template=pool[i], reason=reason)
    else:
        do_update(ctx, ct, eid, hang, conditional=True)


def loop_like(ctx: Ctx, holds: bool) -> None:
    ix, rng, dom = ctx.ix, ctx.rng, ctx.dom
    combos = []
    for parent, lts in ix.lists_of.items():
        for lt in lts:
            for op in ("update", "annotate", "get"):
                for bt in ix.tools(op, lt.entity):
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
    counts = Counter(rec[lt.field or ""] for rec in ctx.table(lt.entity).values())
    eligible = [p for p in ctx.table(parent) if 2 <= counts.get(p, 0) <= top]
    if not eligible:
        raise Infeasible("no parent with 2-4 children")
    pid = rng.choice(eligible)
    frm: int | None = None
    if with_search:
        _, frm = do_search(ctx, parent, pid)
    ids = do_list(ctx, lt, pid, frm)
    li = len(ctx.gt) - 1
    child = dom.entities[lt.entity]
    value: Any = None
    note = rng.choice(bt.texts) if bt.op == "annotate" else None
    if bt.op == "update":
        current = {ctx.table(lt.entity)[i][bt.field or ""] for i in ids}
        value = new_value(ctx, child, bt.field or "", current)
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
