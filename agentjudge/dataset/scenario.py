"""Build one base scenario: seeded state, a GT trace produced by executing calls, tools, and a QueryPlan.

``build_scenario`` picks, for the requested topology, an instantiation of a generic template over the
domain's tools (``shapes.py`` holds the six templates), executes each call on a fresh environment so
every recorded output is real, and describes the request as a ``QueryPlan`` for the realiser.
Everything is seeded from sha256 of the scenario key, so the same inputs give the same record.
"""

from __future__ import annotations

import hashlib
import random
import re
from datetime import date
from typing import Any

from agentjudge import DATASET_VERSION
from agentjudge.dataset import resolve, rules
from agentjudge.dataset.domains import COMMON_ASIDES, Context, load_domain
from agentjudge.dataset.plan import PlanStep, QueryPlan
from agentjudge.dataset.shapes import TEMPLATES, Ctx, Infeasible
from agentjudge.dataset.world import DomainEnvironment, domain_title, fresh_copy, initial_state, tool_schemas
from agentjudge.types import Record, Topology

MAX_ATTEMPTS = 12
TRIALS_PER_STATE = 4
MIN_INFERABLE = 2  # what a hard query must leave to the reader (gates_semantic.MIN_HARDENING)


def inferable(steps: list[PlanStep], today: date | None = None) -> int:
    """How many things a hard query can leave the reader to work out: each look-up whose output a later
    step needs (said as a description, the look-up is the reader's to infer) and each date the user
    supplies that can be said relative to ``today`` (a contract extended by half a year is said as a
    date). Stating values as facts or adding asides changes nothing an agent must infer, so neither
    counts; a scenario with fewer than two is built again another way."""
    stated = {repr(x.value) for p in steps for x in p.slots if x.source == "query"}
    needed = {
        x.from_step
        for p in steps
        for x in p.slots
        if x.source == "step" and x.from_step is not None and repr(x.value) not in stated
    }
    reads = sum(1 for p in steps if p.op in ("search", "get", "list") and p.step in needed)
    dates = {
        str(x.value)
        for p in steps
        for x in p.slots
        if x.source == "query"
        and x.kind == "date"
        and (today is None or resolve.relative_phrases(date.fromisoformat(str(x.value)[:10]), today))
    }
    return reads + len(dates)


def _sub_seed(key: str, attempt: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{key}|{attempt}".encode()).digest()[:4], "big") & 0x7FFFFFFF


def _pick_tools(ctx: Ctx, rng: random.Random) -> list[str]:
    """GT tools plus same-domain distractors (same-entity tools weighted up), 8-19 in all, shuffled."""
    dom = ctx.dom
    # an optional step's tool is offered even when the step is not needed: not calling it is the test
    gt_names = list(dict.fromkeys([*(s.call.name for s in ctx.gt), *filter(None, [ctx.condition_tool])]))
    gt_entities = {t.entity for t in dom.tools if t.name in gt_names}
    lo = max(8, len(gt_names) + 3)
    hi = min(19, len(dom.tools))
    n = rng.randint(lo, hi) if hi >= lo else hi
    keyed = []
    for t in dom.tools:
        if t.name in gt_names:
            continue
        weight = 3.0 if t.entity in gt_entities else 1.0
        keyed.append((rng.random() ** (1.0 / weight), t.name))
    keyed.sort(reverse=True)
    names = gt_names + [name for _, name in keyed[: n - len(gt_names)]]
    rng.shuffle(names)
    return names


def build_scenario(domain: str, topology: Topology, seed: int, index: int) -> tuple[Record, QueryPlan]:
    """One base scenario, deterministic for (domain, topology, seed, index); queries stay empty."""
    dom = load_domain(domain)
    template = TEMPLATES[topology]
    key = f"{domain}|{topology}|{seed}|{index}"
    # Drawn once per scenario (not per attempt) so retries do not bias how often the condition holds.
    holds = random.Random(f"{key}|condition").random() < 0.5
    errors: list[str] = []
    for attempt in range(MAX_ATTEMPTS):
        sub = _sub_seed(key, attempt)
        base = initial_state(dom, sub)
        for trial in range(TRIALS_PER_STATE):  # re-drawing choices is cheaper than re-generating the state
            rng = random.Random(f"{key}|{attempt}|{trial}|plan")
            env = DomainEnvironment(
                domain, sub, state=fresh_copy(base) if trial < TRIALS_PER_STATE - 1 else base
            )
            ctx = Ctx(dom, env, rng)
            try:
                template(ctx, holds)
                if (found := inferable(ctx.plan, ctx.ref_date)) < MIN_INFERABLE:
                    raise Infeasible(f"a hard query could make the reader work out only {found} thing(s)")
                if pointless := rules.unsettled(dom, ctx.gt, env.state["entities"], ctx.ref_date):
                    raise Infeasible(f"the request undoes its own change: {pointless[0]}")
                if barred := rules.ruled_out(dom, ctx.gt, sub, env.state["entities"], ctx.ref_date):
                    raise Infeasible(f"a step its records rule out: {barred[0]}")
                if wrong := rules.misnamed(dom, ctx.gt, env.state["entities"], ctx.ref_date):
                    raise Infeasible(
                        f"a note or subject the request's other records do not allow: {wrong[0]}"
                    )
                if clash := rules.together(dom, ctx.done()):
                    raise Infeasible(f"changes one request does not make together: {clash[0]}")
                # a note or message a later change of the request contradicts (noted, then waved through)
                done, specs = ctx.done(), {t.name: t for t in dom.tools}
                if any(rules.contradicted(specs[s.call.name], s.call.arguments, done) for s in ctx.gt):
                    raise Infeasible("a note or message beside a change that contradicts it")
            except Infeasible as exc:
                errors.append(str(exc))
                continue
            return _assemble(ctx, domain, topology, sub, index, rng)
    raise RuntimeError(
        f"domain {domain!r}, topology {topology!r}, index {index}: no feasible scenario in "
        f"{MAX_ATTEMPTS * TRIALS_PER_STATE} attempts; last reasons: {errors[-3:]}"
    )


SCENARIO_RATE = 0.75  # requests with a scenario sentence (when one fits); the rest start with the request
DOMAIN_ASIDE_RATE = 0.6  # an aside about these records rather than the requester's own circumstances


def actions(ctx: Ctx) -> list[tuple[str, set[str]]]:
    """What the request changes: (tool, the values it sets) per GT step that is not a read."""
    return ctx.done()


matches = rules.matches


def _named_by_kind(ctx: Ctx) -> set[str]:
    """Kinds of which the request names exactly one record, and names it by its kind's noun afterwards, so
    an aside may say "the passenger" ("the owner" of an asset is an employee the request never calls so;
    a new ticket is "the new ticket"; two tickets make "the ticket" ambiguous)."""
    count: dict[str, int] = {}
    plain: set[str] = set()
    for ref in ctx.referents.values():
        count[ref.noun] = count.get(ref.noun, 0) + 1
        if ref.how in ("search", "stated") or (
            ref.how == "relation" and ref.relation.lower() == ref.noun.lower()
        ):
            plain.add(ref.noun)
    return {k for k, e in ctx.dom.entities.items() if e.noun in plain and count.get(e.noun) == 1}


def _fits(
    ctx: Ctx,
    c: Context,
    done: list[tuple[str, set[str]]],
    play: dict[str, list[str]],
    before: dict[str, Any],
    everything: list[tuple[str, set[str]]] | None = None,
) -> bool:
    """Whether a scenario or aside is context for this request (see ``Context``); ``before``: the world's
    records before the request changed them."""
    day = ctx.ref_date
    everything = done if everything is None else everything
    if c.tools and not any(matches(e, done) for e in c.tools):
        return False
    # a scenario that names the values of a change contradicts the request when it makes that change
    # with another value ("a lightning storm" and an outage report caused by vegetation)
    for tool, said in everything:
        named = [e.partition("=")[2] for e in c.tools if e.partition("=")[0] == tool]
        if named and all(named) and not set(named) & said:
            return False
    if c.kinds and not set(c.kinds) & _named_by_kind(ctx):
        return False
    if c.dates is not None and not c.dates.allows(day):
        return False
    # an optional step the request says is not needed ("the passenger does not need a written notice"):
    # no aside about that kind of step ("the passenger asked us to keep them posted")
    if ctx.condition_holds is False and any(e.partition("=")[0] == ctx.condition_tool for e in c.tools):
        return False
    return rules.context_fits(ctx.dom, c, everything, play, before, ctx.env.state["entities"], day)


def _changes(ctx: Ctx, step: PlanStep) -> bool:
    name = ctx.gt[step.step].call.name
    return next(t for t in ctx.dom.tools if t.name == name).op not in ("search", "get", "list", "aggregate")


def _context(ctx: Ctx, rng: random.Random, sub: int, topology: Topology) -> tuple[str, str, list[str]]:
    """(persona, scenario, asides) for this request: a role whose work every change is, a scenario about
    one of its changes, an aside about its records or the requester ("" / [] when none fits)."""
    dom = ctx.dom
    done = actions(ctx)
    play = rules.in_play(dom, ctx.gt)
    before = initial_state(dom, sub)["entities"]
    # never a role the request names ("customer-success manager here … notify the contact's
    # customer-success manager" reads as writing to oneself)
    named = {n.lower() for r in ctx.referents.values() for n in (r.noun, r.relation) if n}
    roles = [
        p.role
        for p in dom.personas
        if done
        and all(any(matches(e, [a]) for e in p.tools) for a in done)
        and not any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", p.role.lower()) for n in named)
    ]
    persona = rng.choice(roles) if roles else ""
    # a scenario explains the goal: the last change the request makes (every one of a fan-out's, whose
    # changes are equals), never only an optional step or a side change
    changes = [(a, p) for a, p in zip(done, [p for p in ctx.plan if _changes(ctx, p)], strict=True)]
    main = [a for a, p in changes if not p.conditional]
    goal = main if topology == "fan_out" else main[-1:]
    # a fan-out's changes are equals: its scenario explains each of them ("the annual pay review" is no
    # reason for an onboarding task beside the new grade)
    scenarios = [
        c.text
        for c in dom.scenarios
        if _fits(ctx, c, goal, play, before, done)
        and all(any(matches(e, [a]) for e in c.tools) for a in goal)
    ]
    scenario = rng.choice(scenarios) if scenarios and rng.random() < SCENARIO_RATE else ""
    # an aside that names the requester's own team as someone else ("Compliance officer here … Compliance
    # flagged this one to us") would make them two parties
    own = [
        c.text
        for c in dom.asides
        if _fits(ctx, c, done, play, before) and not rules.names_own_team(c.text, persona)
    ]
    # the requester's own aside never tells a second story beside a timed scenario ("results came back this
    # morning" / "on my list for a couple of days"), never says the item waited beside a change made as
    # events happen (an outage report), never speaks of their own rank as another's ("standing in for my
    # team lead" from a team lead)
    common = [
        a for a in COMMON_ASIDES if rules.common_aside_problem(dom, a, scenario, [persona], done) is None
    ]
    aside = rng.choice(own) if own and rng.random() < DOMAIN_ASIDE_RATE else rng.choice(common)
    return persona, scenario, [aside]


def _assemble(
    ctx: Ctx, domain: str, topology: Topology, sub: int, index: int, rng: random.Random
) -> tuple[Record, QueryPlan]:
    dom = ctx.dom
    persona, scenario, asides = _context(ctx, rng, sub, topology)
    schemas = tool_schemas(domain)
    tools = [schemas[name] for name in _pick_tools(ctx, rng)]
    cond: dict[str, Any] = {}
    if topology == "optional_enrichment":
        cond = {
            "condition_text": ctx.condition_text,
            "condition_holds": ctx.condition_holds,
            "condition_about": ctx.condition_about,
        }
    record = Record(
        id=f"{dom.slug}-{index:04d}",
        domain=dom.slug,
        scenario=scenario,
        topology=topology,
        queries={},
        system_prompt=dom.system_prompt,
        tools=tools,
        gt=ctx.gt,
        condition_holds=cond.get("condition_holds"),
        seed=sub,
        version=DATASET_VERSION,
    )
    plan = QueryPlan(
        domain=domain,
        domain_title=domain_title(domain),
        persona=persona,
        scenario=scenario,
        reference_date=ctx.env.state["reference_date"],
        steps=ctx.plan,
        referents=list(ctx.referents.values()),
        asides=asides,
        **cond,
    )
    return record, plan
