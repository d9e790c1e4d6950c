"""`agentjudge audit DATA`: a stratified sample of records printed for a person to grade.

The gates read queries with heuristics; a human audit is how we learn whether those heuristics match a
careful reader. This verb prints, for each sampled record at one difficulty, exactly what a judge would
see (the query and the tools) plus the GT trace, followed by the checklist (the one-right-answer
questions, "unnatural", "not harder", and whether the world behind the request makes sense: "domain
logic", "context misfit", "world contradiction"), so the same audit
can be repeated on any split with any seed. Sampling is stratified by topology (round-robin over the six,
each drawn without replacement with a seeded RNG), so small topologies are not crowded out.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentjudge.errors import InputError
from agentjudge.types import DIFFICULTIES, TOPOLOGIES, Difficulty, Record

CHECKLIST = (
    (
        "ambiguous",
        "Does some argument have a second plausible value given only the query and the tools "
        "(e.g. a recipient: the employee's desk technician vs the ticket's assignee) that the query "
        "does not rule out?",
    ),
    (
        "no-antecedent",
        'Is there a reference ("that X", "those Xs", "the X\'s Y", "for them") that points at '
        "nothing the query introduced or states?",
    ),
    (
        "order-contradiction",
        "Does the query state an order for two calls that do not depend on each other, "
        "which the GT does not follow?",
    ),
    (
        "unrequested-step",
        "Is there a GT call that the query neither asks for nor needs (a look-up for a value "
        "the query already gives)?",
    ),
    (
        "unnatural",
        "Would a person not write it this way? E.g. steps shuffled into a list joined by 'Plus, … Besides"
        " that, … Another thing:'; a record referred to before it is introduced ('update each work order'"
        " before any work order was named); a note or message text not in quotes ('record on the shipment"
        " that consignee closed on Fridays'); a reason clause that repeats what it explains ('…, because "
        "the consignee is closed on Fridays'); a parameter name used as a phrase ('to due date in "
        "twenty-nine days'); wrong agreement ('its payment terms is net 45'); context that contradicts "
        "itself or the date ('today is Saturday' and 'Monday morning at the service desk'); an internal "
        "label ('a rep in Retail and e-commerce'); a date stated that nothing in the request uses; a "
        "greeting after the date, or two parentheticals in a row.",
    ),
    (
        "not-harder",
        "(hard only) Is the query no harder for an agent than the easy one? It must leave at least two "
        "things to infer that easy states: a look-up left implicit, a record given by description or "
        "relation instead of its id, a value recoverable only by reasoning (a date relative to today, an "
        "earlier output). Values stated as facts and distracting details do not count. E.g. "
        "insurance-0199: 'It concerns claim CLM-546572. Kindly pull up the full claim record and set the "
        "claim's reserve amount to 25,000 …' gives the id, every step and every value, as easy does.",
    ),
    (
        "domain-logic",
        "Is a change one a person in that role would not ask for, given the records as the GT shows them? "
        "E.g. an alert recorded as a false positive marked 'contained'; a paid claim moved back to "
        "'reported'; a closed account set to 'dormant'; a cancelled appointment confirmed; a contract that "
        "has lapsed extended; one window seat set on every booking of a flight.",
    ),
    (
        "context-misfit",
        "Does a background sentence, notification subject, requester role or aside not fit the records and "
        "changes of this request? E.g. a cardiology team before a knee-pain visit; 'VIP on board' for a "
        "silver-tier passenger; an underwriting assistant sending a settlement offer; an aside about office "
        "plants.",
    ),
    (
        "world-contradiction",
        "Do records of the task contradict each other or the world? E.g. an alert whose owner is not its "
        "host's owner; a service order for another subscriber than the device's owner; an outside "
        "customer with an e-mail address on the company's own domain; an office due date on a Sunday the "
        "query does not mention; a tool whose description promises what its parameters cannot do.",
    ),
)


def sample(
    records: list[Record], n: int, seed: int, difficulties: list[Difficulty]
) -> list[tuple[Record, Difficulty]]:
    """``n`` (record, difficulty) pairs, round-robin over topologies, then over the difficulties given."""
    rng = random.Random(seed)
    pools: dict[str, list[Record]] = {t: [r for r in records if r.topology == t] for t in TOPOLOGIES}
    for pool in pools.values():
        rng.shuffle(pool)
    out: list[tuple[Record, Difficulty]] = []
    k = 0
    while len(out) < n and any(pools.values()):
        for t in TOPOLOGIES:
            if len(out) >= n:
                break
            if pools[t]:
                out.append((pools[t].pop(), difficulties[k % len(difficulties)]))
                k += 1
    return out


def _short(value: Any, limit: int = 220) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(record: Record, d: Difficulty, number: int) -> str:
    lines = [f"## {number}. {record.record_id(d)}  ({record.topology}, {record.domain})", "", "QUERY:"]
    lines += [record.queries.get(d, "(missing)"), ""]
    if d == "hard" and record.queries.get("easy"):  # what "not harder" compares with
        lines += ["EASY VERSION (for the not-harder question):", record.queries["easy"], ""]
    lines += ["TOOLS:"]
    for t in record.tools:
        params = t.parameters.get("properties", {})
        required = set(t.parameters.get("required", []))
        args = ", ".join(f"{k}{'' if k in required else '?'}" for k in params)
        lines.append(f"- {t.name}({args}): {t.description}")
    lines += ["", "GT (in order):"]
    for i, step in enumerate(record.gt):
        deps = f" [uses output of {', '.join(map(str, step.depends_on))}]" if step.depends_on else ""
        lines.append(f"{i}. {step.call.name}({_short(step.call.arguments)}){deps}")
        lines.append(f"   -> {_short(step.output)}")
    lines += ["", "CHECKLIST (answer yes/no; a yes needs a one-line reason):"]
    lines += [f"- [{key}] {question}" for key, question in CHECKLIST]
    return "\n".join(lines) + "\n"


def difficulties_of(record: Record) -> list[Difficulty]:
    """The difficulties a record has a query for (a human-written record: only its one query)."""
    return [d for d in DIFFICULTIES if record.queries.get(d)]


@dataclass(frozen=True)
class AuditSample:
    """The sampled (record, difficulty) pairs of ``path`` for a person to grade, in print order; ``note``
    says how records without the asked difficulty are shown."""

    path: Path
    seed: int
    difficulties: tuple[str, ...]
    picked: tuple[tuple[Record, Difficulty], ...]
    note: str

    def header(self) -> str:
        return (
            f"# Audit of {len(self.picked)} records from {self.path} (seed {self.seed}, difficulties "
            f"{','.join(self.difficulties)}{self.note})\n"
        )


def audit_sample(path: Path, n: int, seed: int, difficulty: str | None) -> AuditSample:
    """``difficulty`` None: each record at hard, or at the hardest query it has when it has no hard one.
    Bad flags or a record without the asked difficulty raise an ``InputError``."""
    from agentjudge.dataset.validate import read_dataset

    wanted = [d.strip() for d in (difficulty or "hard").split(",") if d.strip()]
    bad = [d for d in wanted if d not in DIFFICULTIES]
    if bad or not wanted:
        raise InputError(f"--difficulty {difficulty}: choose from {', '.join(DIFFICULTIES)}")
    if n < 1:
        raise InputError(f"--n {n}: must be >= 1")
    records = read_dataset(path)
    picked = sample(records, n, seed, wanted)  # type: ignore[arg-type]
    lacking = [(r, d) for r, d in picked if d not in difficulties_of(r)]
    if lacking and difficulty is not None:
        record, d = lacking[0]
        has = ", ".join(difficulties_of(record)) or "none"
        human = " (human-written queries: one query, no rewrites)" if record.human_query else ""
        raise InputError(
            f"{path}: {len(lacking)} of {len(picked)} sampled records have no "
            f"{d} query, e.g. record {record.id!r} has only: {has}{human}; leave out --difficulty to audit "
            "each record at the difficulties it has"
        )
    picked = [(r, d if d in difficulties_of(r) else (difficulties_of(r) or [d])[-1]) for r, d in picked]
    note = ""
    if lacking:
        n_human = sum(r.human_query for r, _ in lacking)
        note = (
            f"; {len(lacking)} record(s) without a {','.join(wanted)} query shown at the hardest query they "
            f"have ({n_human} human-written: their only query)"
        )
    return AuditSample(Path(path), seed, tuple(wanted), tuple(picked), note)
