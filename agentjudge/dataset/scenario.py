"""Build one base scenario: seeded state, a GT trace produced by executing calls, tools, and a QueryPlan.

``build_scenario`` picks, for the requested topology, an instantiation of a generic template over the
domain's tools (``_templates.py`` holds the six templates), executes each call on a fresh environment so
every recorded output is real, and describes the request as a ``QueryPlan`` for the rewriter.
Everything is seeded from sha256 of the scenario key, so the same inputs give the same record.
"""

from __future__ import annotations

import hashlib
import random
from datetime import date
from typing import Any

from agentjudge import DATASET_VERSION
from agentjudge.dataset.domains import load_domain
from agentjudge.dataset.plan import PlanStep, QueryPlan
from agentjudge.dataset.shapes import TEMPLATES, Ctx, Infeasible
from agentjudge.dataset.world import DomainEnvironment, domain_title, fresh_copy, initial_state, tool_schemas
from agentjudge.types import Record, Topology

MAX_ATTEMPTS = 12
TRIALS_PER_STATE = 4
MIN_INFERABLE = 2  # what a hard query must leave to the reader (gates_semantic.MIN_HARDENING)


def inferable(steps: list[PlanStep]) -> int:
    """How many things a hard query can leave the reader to work out: each look-up whose output a later
    step needs (said as a description, the look-up is the reader's to infer) and each date the user
    supplies (said relative to today). Stating values as facts or adding distractors changes nothing an
    agent must infer, so neither counts; a scenario with fewer than two is built again another way."""
    stated = {repr(x.value) for p in steps for x in p.slots if x.source == "query"}
    needed = {
        x.from_step
        for p in steps
        for x in p.slots
        if x.source == "step" and x.from_step is not None and repr(x.value) not in stated
    }
    reads = sum(1 for p in steps if p.op in ("search", "get", "list") and p.step in needed)
    dates = {repr(x.value) for p in steps for x in p.slots if x.source == "query" and x.kind == "date"}
    return reads + len(dates)


def _sub_seed(key: str, attempt: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{key}|{attempt}".encode()).digest()[:4], "big") & 0x7FFFFFFF


def _pick_tools(ctx: Ctx, rng: random.Random) -> list[str]:
    """GT tools plus same-domain distractors (same-entity tools weighted up), 8-19 in all, shuffled."""
    dom = ctx.dom
    gt_names = list(dict.fromkeys(s.call.name for s in ctx.gt))
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
                if (found := inferable(ctx.plan)) < MIN_INFERABLE:
                    raise Infeasible(f"a hard query could make the reader work out only {found} thing(s)")
            except Infeasible as exc:
                errors.append(str(exc))
                continue
            return _assemble(ctx, domain, topology, sub, index, rng)
    raise RuntimeError(
        f"domain {domain!r}, topology {topology!r}, index {index}: no feasible scenario in "
        f"{MAX_ATTEMPTS * TRIALS_PER_STATE} attempts; last reasons: {errors[-3:]}"
    )


def _assemble(
    ctx: Ctx, domain: str, topology: Topology, sub: int, index: int, rng: random.Random
) -> tuple[Record, QueryPlan]:
    dom = ctx.dom
    # only a context sentence that can be said on this record's "today" ("Monday morning at the service
    # desk" on a Monday)
    scenario = rng.choice(dom.scenarios_for(date.fromisoformat(ctx.env.state["reference_date"])))
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
        persona=rng.choice(dom.personas),
        scenario=scenario,
        reference_date=ctx.env.state["reference_date"],
        steps=ctx.plan,
        referents=list(ctx.referents.values()),
        distractors=rng.sample(dom.distractors, min(2, len(dom.distractors))),
        **cond,
    )
    return record, plan
