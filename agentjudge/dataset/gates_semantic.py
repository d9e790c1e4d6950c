"""Gate 2, semantic part: does each query have exactly one right answer, and is hard harder than easy?

Run by ``gates.run_gates`` on every record of one of our domains (it needs the domain's vocabulary and
executable state; a foreign file gets no ``gate2:semantic`` entry in ``gates_run``). Reason codes:

ambiguous_reference  a GT argument taken from an earlier output through a relation (the employee's
                     desk-side technician) has an alternative of the same kind that the offered tools yield
                     from the records in play (the ticket's assignee), and the query does not name the
                     relation that picks the GT's value; or "its R" / "their R" follows a record other than
                     the one the GT takes R of ("the supplier on purchase order PO-1 to its account buyer")
no_antecedent        "that X" / "those Xs" before any X was introduced, "the X" never introduced at all,
                     or "for them" with no plural before it (``mentions.dangling``)
order_contradiction  two GT calls that do not depend on each other are mentioned in the opposite order
                     (the stated order: mention order, reversed for "… Before that, …" queries)
unrequested_step     a read call whose output the query's request does not need (every value it feeds is
                     stated) and that the query does not ask for
not_harder           (hard only) fewer than two operations that change what the reader must infer, relative
                     to easy: a look-up easy asks for that hard leaves implicit, a record id easy states that
                     hard withholds, a date easy states that hard gives only relative to today (stating
                     values as facts and adding distracting detail change nothing an agent must infer)
unquoted_text        a text to be written into a note, notification or new record ("third party admitted
                     liability") is not marked off by quotes, so the words around it could be part of it
domain_title         the domain's internal title ("Healthcare", "Retail and e-commerce") appears in a query
date_contradiction   the context contradicts the date: the scenario cannot be said on the record's "today"
                     ("Monday morning at the service desk" on a Saturday), or a weekday the query gives for
                     today differs from the weekday of the date it states
agreement            a field noun and its verb disagree in number ("payment terms is")

``explicit_steps`` (which GT steps a query names) is public: the issue's per-topology explicitness table
is computed with it (``bench/explicit_steps.py``).
"""

from __future__ import annotations

import datetime as dt
import re
from functools import cache, lru_cache
from typing import Any

import networkx as nx

from agentjudge.dataset import mentions, resolve
from agentjudge.types import DIFFICULTIES, Difficulty, GateFinding, Record

SEMANTIC_CODES = (
    "ambiguous_reference",
    "no_antecedent",
    "order_contradiction",
    "unrequested_step",
    "not_harder",
    "unquoted_text",
    "domain_title",
    "date_contradiction",
    "agreement",
)
READ_OPS = ("search", "get", "list")
LOOKUP = re.compile(
    r"\b(?:look(?:ing|ed)? up|find|found|get|fetch|retrieve|search|check(?:ed)?|pull(?:ed)? up|"
    r"list(?:ed)?|see|locate(?:d)?|identify|read|query|show|review|open(?:ed)?)\b"
)
# where a request's clause starts: a verb after a clause boundary ("…, and then find", "you'll need to
# look up", "Could you set"); a clause runs to the next one, so "set the shift pattern of the production
# line with line code LN-1" is a change, not a look-up of the production line
_CHANGE_VERBS = (
    r"set|change|update|create|raise|add|log|record|send|notify|alert|assign|hand|make|message|let|"
    r"schedule|book|mark|move|put|email|work out|calculate|flag|file|issue|give|reassign|grant"
)
_CLAUSE_HEAD = re.compile(
    r"(?:^|[,;:.!?()]\s*|\b(?:and|then|to|you|please|also|first|kindly|can|'ve|ve|now)\s+)"
    r"(?P<verb>(?:look(?:ing|ed)? up|find|found|get|fetch|retrieve|search|check(?:ed)?|pull(?:ed)? up|"
    r"list(?:ed)?|see|locate(?:d)?|identify|read|query|show|review|open(?:ed)?|" + _CHANGE_VERBS + r"))\b",
    re.I,
)
# cues that put what follows before what precedes ("Set X. Before that, you'll need to find Y.")
BACKWARD_CUES = re.compile(
    r"\b(?:before that|prior to that|before doing that|ahead of that|to get there|for that, first|"
    r"to do that, you'll first|before you can do that|that means you'll first|you'll need to do some "
    r"groundwork first|once you've|after you've|as soon as you've|"
    r"as a first step toward that|leading up to that|even earlier|earlier still|preceding that|"
    r"going back one more step)\b",
    re.I,
)
MIN_HARDENING = 2


@cache
def _domain(slug: str) -> Any:
    from agentjudge.dataset.domains import load_domain

    return load_domain(slug)


def _ours(record: Record) -> bool:
    """A record built from one of our domain files (the checks need its nouns and its seeded state)."""
    from agentjudge.dataset.domains import DOMAIN_DIR

    return record.seed is not None and (DOMAIN_DIR / f"{record.domain}.yaml").is_file()


def _spec(record: Record, i: int) -> Any:
    dom = _domain(record.domain)
    name = record.gt[i].call.name
    return next((t for t in dom.tools if t.name == name), None)


def _context_spans(record: Record) -> tuple[list[str], list[str]]:
    """(context, values): text whose nouns neither introduce nor dangle — the domain's scenarios,
    asides and personas, blanked — and the user's own multi-word values (a name, a note, a template),
    masked to their shape so that "the substation Beacon Hill" still reads as a record named by a proper
    name. The reason clauses of optional steps ("since the patient asked for a reminder") are *not* here:
    the reader reads them as part of the request, so a reason that says "the appointment" when no
    appointment was introduced is a dangling reference (only a reason's subject is let through: see
    ``mentions.blank_reason_subjects``)."""
    dom = _domain(record.domain)
    values = [
        v
        for step in record.gt
        for v in resolve.leaves(step.call.arguments)
        if isinstance(v, str) and (" " in v or "_" in v)
    ]
    values += [v.replace("_", " ") for v in values]  # the user's own words (a note, a template)
    return [*dom.context_texts, record.scenario], values


def _ancestors(record: Record, query: str) -> list[set[int]]:
    """Per step, the steps it really depends on for this query: an edge counts when the later step takes
    from the earlier one's output a value the query does not state (a stated id needs no look-up first)."""
    g = nx.DiGraph()
    g.add_nodes_from(range(len(record.gt)))
    for v, step in enumerate(record.gt):
        g.add_edges_from((u, v) for u in step.depends_on if 0 <= u < v and _feeds(record, u, v, query))
    return [nx.ancestors(g, v) for v in range(len(record.gt))]


def _feeds(record: Record, u: int, v: int, query: str) -> bool:
    out = record.gt[u].output
    return any(
        resolve.is_checkable(leaf) and resolve.in_output(leaf, out) and not resolve.recoverable(leaf, query)
        for leaf in resolve.leaves(record.gt[v].call.arguments)
    )


def _independent_pairs(record: Record, query: str) -> list[tuple[int, int]]:
    anc = _ancestors(record, query)
    n = len(record.gt)
    return [(i, j) for i in range(n) for j in range(i + 1, n) if i not in anc[j]]


# ---------------------------------------------------------------- relations (ambiguous_reference)


def _relation_args(record: Record) -> list[tuple[int, str, str, str, str]]:
    """(step, arg, value, relation noun, target kind) for each scalar argument that an earlier output
    supplies through a relation field (a ref field of the record that output describes)."""
    dom = _domain(record.domain)
    out: list[tuple[int, str, str, str, str]] = []
    for i, step in enumerate(record.gt):
        for arg, value in step.call.arguments.items():
            if not isinstance(value, str):
                continue
            deps = [
                (spec, record.gt[u].output)
                for u in step.depends_on
                if 0 <= u < i
                and (spec := _spec(record, u)) is not None
                and isinstance(record.gt[u].output, dict)
            ]
            # a value that some dependency returns as its own record id was found directly (a search by
            # email), even if another record happens to point at it too
            if any(out.get(dom.entities[spec.entity].id_key) == value for spec, out in deps):
                continue
            for spec, output in deps:
                fields = dom.entities[spec.entity].fields
                for key, got in output.items():
                    f = fields.get(key)
                    if got == value and f is not None and f.gen == "ref" and f.entity:
                        out.append((i, arg, value, f.noun, f.entity))
                        # "the production line's supervisor" names the line's "line supervisor"
                        owner = dom.entities[spec.entity].noun
                        if (short := mentions.unrepeated(owner, f.noun)) != f.noun:
                            out.append((i, arg, value, f"{owner}'s {short}", f.entity))
    return out


def _ids_in_play(record: Record) -> dict[str, str]:
    """id -> kind for every id of a domain entity in the GT's arguments and outputs."""
    dom = _domain(record.domain)
    prefixes = {ent.prefix + "-": kind for kind, ent in dom.entities.items()}
    found: dict[str, str] = {}
    for step in record.gt:
        for leaf in resolve.leaves(step.call.arguments) + resolve.leaves(step.output):
            if isinstance(leaf, str):
                for prefix, kind in prefixes.items():
                    if leaf.startswith(prefix) and leaf[len(prefix) :].isdigit():
                        found.setdefault(leaf, kind)
    return found


def alternatives(record: Record, value: str, target: str, state: dict[str, Any]) -> set[str]:
    """Other ids of kind ``target`` a reader could reach: ids of that kind already in play, and every
    relation to ``target`` on a record in play whose read tool the record offers (executed = read from
    the initial state, which is what that tool returns)."""
    dom = _domain(record.domain)
    offered = {t.name for t in record.tools}
    readable = {t.entity for t in dom.tools if t.op == "get" and t.name in offered}
    alts: set[str] = set()
    for rid, kind in _ids_in_play(record).items():
        if kind == target:
            alts.add(rid)
        row = state["entities"].get(kind, {}).get(rid)
        if row is None or kind not in readable:
            continue
        for fname, f in dom.entities[kind].fields.items():
            if f.gen == "ref" and f.entity == target and isinstance(row.get(fname), str):
                alts.add(row[fname])
    alts.discard(value)
    return alts


def _ambiguous(record: Record, queries: dict[Difficulty, str]) -> list[GateFinding]:
    rels = _relation_args(record)
    if not rels:
        return []
    from agentjudge.dataset.world import make_environment

    env = make_environment(record)
    if env is None:
        return []
    findings = []
    # one value may be reachable through several relations (the ticket's assignee is also the employee's
    # desk-side technician): naming any one of them picks it
    nouns_of: dict[tuple[int, str, str], list[str]] = {}
    for i, arg, value, noun, _ in rels:
        nouns_of.setdefault((i, arg, value), []).append(noun)
    done: set[tuple[int, str, str]] = set()
    for i, arg, value, noun, target in rels:
        if (i, arg, value) in done:
            continue
        done.add((i, arg, value))
        alts = alternatives(record, value, target, env.state)
        if not alts:
            continue
        for d, q in queries.items():
            if not any(resolve.contains_phrase(q, n) for n in nouns_of[(i, arg, value)]):
                findings.append(
                    _f(
                        "ambiguous_reference",
                        f"step {i} {record.gt[i].call.name}.{arg} = {value!r} is the {noun!r} relation, "
                        f"which the query never names; {len(alts)} other {target}(s) fit, "
                        f"e.g. {sorted(alts)[0]}",
                        d,
                    )
                )
    return findings


@cache
def _relation_targets(slug: str) -> dict[str, frozenset[str]]:
    """Every relation noun of a domain (and its form after its owner: "supervisor" for the production
    line's "line supervisor") -> the kinds it points at."""
    dom = _domain(slug)
    out: dict[str, set[str]] = {}
    for ent in dom.entities.values():
        for f in ent.fields.values():
            if f.gen == "ref" and f.entity:
                for noun in {f.noun.lower(), mentions.unrepeated(ent.noun, f.noun).lower()}:
                    out.setdefault(noun, set()).add(f.entity)
    return {k: frozenset(v) for k, v in out.items()}


def _possessives(record: Record, queries: dict[Difficulty, str]) -> list[GateFinding]:
    """ "its R" / "their R" for a relation the GT reads (R of a record of kind K) must follow a mention of
    a K: after "the supplier on purchase order PO-1 to its account buyer" the nearest record is the order,
    which has a buyer of its own, while the GT takes the supplier's."""
    owners: dict[str, set[str]] = {}
    for i in range(len(record.gt)):
        spec = _spec(record, i)
        if spec is not None and spec.op == "get":
            for noun in _followed(record, i):
                owners.setdefault(noun.lower(), set()).add(spec.entity)
    if not owners:
        return []
    voc = mentions.vocab(record.domain)
    targets = _relation_targets(record.domain)
    spans, values = _context_spans(record)
    findings = []
    for d, q in queries.items():
        text = mentions.mask(mentions.blank(q, spans), values).lower()
        for m in re.finditer(
            r"\b(?:its|their) ("
            + "|".join(re.escape(n) for n in sorted(owners, key=len, reverse=True))
            + r")\b",
            text,
        ):
            before = [x for x in voc.pattern.finditer(text[: m.start()]) if x.group(1) not in voc.fields]
            if not before:
                continue
            form = before[-1].group(1)
            kinds = set(voc.kinds.get(form, frozenset())) | set(targets.get(form, frozenset()))
            if not kinds & owners[m.group(1)]:
                findings.append(
                    _f(
                        "ambiguous_reference",
                        f"{q[m.start() : m.end()]!r} follows {form!r}, but the GT takes the "
                        f"{m.group(1)} of a {'/'.join(sorted(owners[m.group(1)]))}",
                        d,
                    )
                )
                break
    return findings


# ---------------------------------------------------------------- steps named in the text


def _stated_values(record: Record, i: int) -> list[str]:
    """String argument values of step ``i`` that no other step uses: where the query names this step."""
    mine = {str(v) for v in resolve.leaves(record.gt[i].call.arguments) if isinstance(v, str) and len(v) >= 3}
    others = {
        str(v)
        for j, s in enumerate(record.gt)
        if j != i
        for v in resolve.leaves(s.call.arguments)
        if isinstance(v, str)
    }
    deps = [record.gt[u].output for u in record.gt[i].depends_on if 0 <= u < len(record.gt)]
    return sorted(v for v in mine - others if not any(resolve.in_output(v, o) for o in deps))


@lru_cache(maxsize=8192)
def _word_rx(word: str) -> re.Pattern[str]:
    """A whole-word matcher (compiled once: the checks look for the same few hundred words all the time)."""
    return re.compile(r"(?<![\w-])" + re.escape(word.lower()) + r"(?![\w-])")


def _position(query: str, value: str) -> int | None:
    low = query.lower()
    for form in (value.lower(), value.lower().replace("_", " ")):
        m = _word_rx(form).search(low)
        if m:
            return m.start()
    return None


def _occurrences(query: str, value: str) -> int:
    low = query.lower()
    forms = {value.lower(), value.lower().replace("_", " ")}
    return max(len(_word_rx(f).findall(low)) for f in forms)


def _step_nouns(record: Record, i: int) -> tuple[str, ...]:
    spec = _spec(record, i)
    if spec is None:
        return ()
    dom = _domain(record.domain)
    ent = dom.entities[spec.entity]
    # a record found through a role relation is named by it ("the asset's owner" is the employee)
    roles = sorted(
        {
            f.noun.lower()
            for other in dom.entities.values()
            for f in other.fields.values()
            if f.gen == "ref" and f.entity == spec.entity and not mentions.names_kind(f.noun, ent.noun)
        }
    )
    return (ent.noun.lower(), ent.plural.lower(), *roles)


def explicit_steps(record: Record, query: str) -> list[bool]:
    """Per GT step: does the query ask for it in words (not merely state its input as a fact)?

    A look-up is named when a clause headed by a look-up verb asks for it: a search or a listing has the
    record (the listed records) as the verb's object ("find the employee with email x", "list every ticket
    of the employee" — not "check the details of the employee with email x", which asks for the details);
    a read of one record names the record (or "its") and what it is read for (the relation noun, or
    "details"/"record"). A change is named when its own values (or, with none, its record's noun) appear."""
    return [pos is not None for pos in named_at(record, query)]


def named_at(record: Record, query: str) -> list[int | None]:
    """Per GT step: where the query names it (character offset), or None (see ``explicit_steps``).
    A search is named where a look-up clause has its record as object, with or without the searched
    value ("look up the feeder with feeder code FD-1", "Before that, locate the feeder")."""
    dom = _domain(record.domain)
    # the scenario's "review" asks for nothing, and neither does the "appointment reminder" template
    said = [
        str(v)
        for j, st in enumerate(record.gt)
        if (sp := _spec(record, j)) is not None and sp.op not in READ_OPS
        for v in resolve.leaves(st.call.arguments)
        if isinstance(v, str) and (" " in v or "_" in v)
    ]
    original = query
    query = mentions.blank(query, [*dom.context_texts, record.scenario, *said])
    query = mentions.blank(query, [v.replace("_", " ") for v in said])
    query = re.sub(r'"[^"]*"', lambda m: " " * len(m.group(0)), query)  # quoted texts ask for nothing
    clauses = _clauses(query)
    low = query.lower()
    out: list[int | None] = []
    for i, step in enumerate(record.gt):
        spec = _spec(record, i)
        nouns = _step_nouns(record, i)
        if spec is None:
            out.append(None)
        elif spec.op in READ_OPS:
            every: list[str] = []  # all of these in the clause
            some: list[str] = []  # and, if given, one of these
            pronoun = False  # "check its details" names the record it follows on from
            masked: list[str] = []
            if spec.op == "search":
                masked = [str(v) for v in resolve.leaves(step.call.arguments)]
            elif spec.op == "get":
                rel = _followed(record, i)
                own = [str(v) for v in resolve.leaves(step.call.arguments)]
                some = rel or ["details", "record", *own]  # the relation it is read for, or "details"
                pronoun = True
            out.append(
                next(
                    (
                        at
                        for at, verb, text in clauses
                        if _looks_up(verb, text)
                        and _names_lookup(
                            text, nouns, every, some, pronoun, object_=spec.op != "get", masked=masked
                        )
                    ),
                    None,
                )
            )
        else:
            values = _stated_values(record, i)
            found = [p for v in values if (p := _position(original, v)) is not None]
            dated = all(resolve.ISO_DATE.match(v[:10]) for v in values)  # "June 6, 2026": not literal
            if values and (found or not dated):
                out.append(min(found) if found else None)
            else:
                out.append(next((m.start() for n in nouns if (m := _word_rx(n).search(low))), None))
    return out


def _followed(record: Record, i: int) -> list[str]:
    """The relation nouns a ``get`` step is read for: ref fields of its output whose value a later step
    that depends on it uses ("owner" when a notification is about the asset's owner)."""
    dom = _domain(record.domain)
    spec = _spec(record, i)
    out = record.gt[i].output
    if spec is None or not isinstance(out, dict):
        return []
    fields = dom.entities[spec.entity].fields
    used = {
        str(v)
        for j, st in enumerate(record.gt)
        if j > i and i in st.depends_on
        for v in resolve.leaves(st.call.arguments)
    }
    nouns = [
        f.noun
        for key, value in out.items()
        if (f := fields.get(key)) is not None and f.gen == "ref" and str(value) in used
    ]
    # "the production line's supervisor" reads the line's "line supervisor" (the word is not said twice)
    owner = dom.entities[spec.entity].noun
    return nouns + [short for n in nouns if (short := mentions.unrepeated(owner, n)) != n]


def _looks_up(verb: str, clause: str) -> bool:
    """A look-up verb heads the clause ("open the record of …", never "open a new ticket")."""
    return bool(LOOKUP.fullmatch(verb.lower())) and not re.match(r"open(?:ed)?\s+(?:a|an|new)\b", clause)


def _clauses(text: str) -> list[tuple[int, str, str]]:
    """(offset, verb, clause text) for each request clause: from a verb at a clause boundary to the next
    such verb or the end of the sentence."""
    heads = [(m.start("verb"), m.group("verb")) for m in _CLAUSE_HEAD.finditer(text)]
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)", text)]
    out = []
    for k, (at, verb) in enumerate(heads):
        stop = min([e for e in ends if e > at] + [len(text)])
        if k + 1 < len(heads):
            stop = min(stop, heads[k + 1][0])
        out.append((at, verb, text[at:stop].lower()))
    return out


@lru_cache(maxsize=4096)
def _object_rx(noun: str) -> re.Pattern[str]:
    """The noun as a whole word and not a possessive ("the asset owner's record" is no asset owner)."""
    return re.compile(r"(?<![\w-])" + re.escape(noun) + r"(?![\w-])(?!'s)")


def _has_word(text: str, word: str) -> bool:
    return _word_rx(word).search(text) is not None


def _names_lookup(
    clause: str,
    nouns: tuple[str, ...],
    every: list[str],
    some: list[str],
    pronoun: bool = False,
    object_: bool = False,
    masked: list[str] | None = None,
) -> bool:
    """``object_``: the record must be what the verb looks up ("find the supplier named X"), not merely
    named in the clause ("check the details of the supplier named X" asks for the details)."""
    if object_:
        rest = clause.split(None, 1)[1] if " " in clause else ""
        rest = re.sub(r"^(?:up|out)\s+", "", rest)
        for w in (
            masked or []
        ):  # "find the Lyon to Porto flight": the searched value is one word of the phrase
            rest = rest.replace(w.lower(), "x")
        # the verb's object: up to the first preposition ("every account linked to the client" is accounts)
        head = re.split(r"\s(?:linked|of|for|with|whose|on|to|at|in|named|called|that|from|about)\b", rest)[0]
        # "pull up the asset owner's full record" looks up the record, not the asset owner
        head = " ".join(head.split()[:6])
        named = any(_object_rx(n).search(head) for n in nouns)
    else:
        named = any(_has_word(clause, n) for n in nouns) or bool(
            pronoun and re.search(r"\b(?:its|their)\b", clause)
        )
    return (
        named
        and all(_has_word(clause, w) or _has_word(clause, w.replace("_", " ")) for w in every)
        and (not some or any(_has_word(clause, w) for w in some))
    )


# ---------------------------------------------------------------- the checks


def _f(code: str, detail: str, d: Difficulty | None) -> GateFinding:
    return GateFinding(gate="gate2", code=code, difficulty=d, detail=detail)


def _no_antecedent(record: Record, queries: dict[Difficulty, str]) -> list[GateFinding]:
    voc = mentions.vocab(record.domain)
    spans, values = _context_spans(record)
    dom = _domain(record.domain)
    reasons = [c for t in dom.tools if t.condition for c in (*t.condition.holds, *t.condition.absent)]
    findings = []
    for d, q in queries.items():
        # subjects first: a note's text may sit inside its reason ("box arrived dented")
        text = mentions.mask(mentions.blank(mentions.blank_reason_subjects(q, reasons, voc), spans), values)
        for ref in mentions.dangling(text, voc):
            findings.append(
                _f("no_antecedent", f"{q[ref.start : ref.end]!r}: {ref.why.replace('_', ' ')}", d)
            )
    return findings


def stated_order(query: str, at: int) -> tuple[int, int]:
    """Where a mention at offset ``at`` falls in the order the query states: a cue such as "Before that,"
    or "once you've" puts the rest of its sentence ahead of everything said before it, so "Set X. Before
    that, find Y. And before that, find Z. Also do W." states Z, Y, X, W. (rank, offset) keys sort in
    that order."""
    rank = 0
    for k, m in enumerate(BACKWARD_CUES.finditer(query), start=1):
        end = re.search(r"[.!?](?=\s|$)", query[m.start() :])
        stop = m.start() + end.end() if end else len(query)
        if m.start() <= at < stop:
            rank = -k
    return (rank, at)


def _order(record: Record, queries: dict[Difficulty, str]) -> list[GateFinding]:
    markers = {i: _stated_values(record, i) for i in range(len(record.gt))}
    reads = {i for i in range(len(record.gt)) if (sp := _spec(record, i)) is not None and sp.op in READ_OPS}
    findings = []
    for d, q in queries.items():
        pairs = _independent_pairs(record, q)
        pos: dict[int, tuple[int, int]] = {}
        named = named_at(record, q)
        for i, values in markers.items():
            found = [p for v in values if _occurrences(q, v) == 1 and (p := _position(q, v)) is not None]
            if i in reads and (at := named[i]) is not None:
                pos[i] = stated_order(q, at)  # a look-up is where the query asks for it
            elif found:
                pos[i] = stated_order(q, min(found))
        for i, j in pairs:
            if i in pos and j in pos and pos[i] != pos[j] and pos[i] > pos[j]:
                findings.append(
                    _f(
                        "order_contradiction",
                        f"the query puts step {j} {record.gt[j].call.name} before step {i} "
                        f"{record.gt[i].call.name}; the GT, free to choose, does the opposite",
                        d,
                    )
                )
                break
    return findings


def _necessary(record: Record, i: int, query: str) -> bool:
    """A read is necessary when a later step that depends on it takes a value from its output that the
    query does not state."""
    out = record.gt[i].output
    for j, step in enumerate(record.gt):
        if j <= i or i not in step.depends_on:
            continue
        for leaf in resolve.leaves(step.call.arguments):
            if (
                resolve.is_checkable(leaf)
                and resolve.in_output(leaf, out)
                and not resolve.recoverable(leaf, query)
            ):
                return True
    return False


def _unrequested(
    record: Record, queries: dict[Difficulty, str], named_by: dict[Difficulty, list[bool]]
) -> list[GateFinding]:
    findings = []
    reads = [i for i in range(len(record.gt)) if (s := _spec(record, i)) is not None and s.op in READ_OPS]
    if not reads:
        return []
    for d, q in queries.items():
        named = named_by[d]
        for i in reads:
            if not named[i] and not _necessary(record, i, q):
                findings.append(
                    _f(
                        "unrequested_step",
                        f"step {i} {record.gt[i].call.name}: not asked for, and no value it yields is needed",
                        d,
                    )
                )
    return findings


def hardening(
    record: Record, easy: str, hard: str, named: tuple[list[bool], list[bool]] | None = None
) -> list[str]:
    """What the hard query leaves the reader to work out that the easy one states, one entry per
    instance: ``implicit_lookup:<step>`` (a look-up easy asks for, hard leaves to the reader although its
    result is needed), ``id_withheld:<id>`` (a record id easy states, hard describes instead),
    ``relative_date:<date>`` (a date easy states that hard gives only relative to today). Stating values
    as facts and adding distracting detail are not here: they change nothing an agent must infer."""
    ops = []
    named_easy, named_hard = named or (explicit_steps(record, easy), explicit_steps(record, hard))
    for i in range(len(record.gt)):
        spec = _spec(record, i)
        if (
            spec is not None
            and spec.op in READ_OPS
            and named_easy[i]
            and not named_hard[i]
            and _necessary(record, i, hard)
        ):
            ops.append(f"implicit_lookup:{i}")
    ids = _ids_in_play(record)
    stated_ids = {
        str(v)
        for step in record.gt
        for v in resolve.leaves(step.call.arguments)
        if isinstance(v, str) and v in ids and _position(easy, v) is not None
    }
    ops += [f"id_withheld:{v}" for v in sorted(stated_ids) if _position(hard, v) is None]
    seen: set[str] = set()
    anchor = resolve.find_anchor(hard)
    for step in record.gt:
        for leaf in resolve.leaves(step.call.arguments):
            text = str(leaf)
            if text in seen or not isinstance(leaf, str) or not resolve.ISO_DATE.match(text[:10]):
                continue
            seen.add(text)
            day = dt.date.fromisoformat(text[:10])
            absolute = resolve.absolute_dates(hard, default_year=anchor.year if anchor else None)
            if resolve.recoverable(leaf, easy) and resolve.recoverable(leaf, hard) and day not in absolute:
                ops.append(f"relative_date:{text}")
    return ops


def _not_harder(
    record: Record, queries: dict[Difficulty, str], named_by: dict[Difficulty, list[bool]]
) -> list[GateFinding]:
    easy, hard = queries.get("easy"), queries.get("hard")
    if not easy or not hard:
        return []
    ops = hardening(record, easy, hard, (named_by["easy"], named_by["hard"]))
    if len(ops) >= MIN_HARDENING:
        return []
    return [
        _f(
            "not_harder",
            f"hard leaves {len(ops)} thing(s) to infer that easy states ({', '.join(ops) or 'none'}); "
            f"needs {MIN_HARDENING}",
            "hard",
        )
    ]


# ---------------------------------------------------------------- how the query reads


def _written_texts(record: Record) -> list[str]:
    """Texts the user dictates into a record: a note, a notification's subject, a new record's free-text
    field (a ticket summary). Each must be marked off by quotes."""
    dom = _domain(record.domain)
    out: list[str] = []
    for i, step in enumerate(record.gt):
        spec = _spec(record, i)
        if spec is None:
            continue
        fields = dom.entities[spec.entity].fields
        for arg, value in step.call.arguments.items():
            if not isinstance(value, str) or " " not in value.strip():
                continue
            if (
                spec.op in ("annotate", "notify")
                and arg in ("note", "subject")
                or spec.op == "create"
                and arg in fields
                and fields[arg].gen == "choice"
            ):
                out.append(value)
    return list(dict.fromkeys(out))  # a loop writes the same note on every record: one text


def _unquoted(record: Record, queries: dict[Difficulty, str]) -> list[GateFinding]:
    findings = []
    texts = _written_texts(record)
    for d, q in queries.items():
        for text in texts:
            for m in re.finditer(re.escape(text), q):
                before, after = q[max(0, m.start() - 1) : m.start()], q[m.end() : m.end() + 1]
                if before not in ('"', "“", "'") or after not in ('"', "”", "'"):
                    findings.append(_f("unquoted_text", f"{text!r} is not in quotes", d))
                    break
    return findings


@cache
def _title_rx(slug: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + re.escape(_domain(slug).title) + r"(?![\w-])")


def _title(record: Record, queries: dict[Difficulty, str]) -> list[GateFinding]:
    title = _domain(record.domain).title
    rx = _title_rx(record.domain)
    return [
        _f("domain_title", f"names the domain's internal title {title!r}", d)
        for d, q in queries.items()
        if rx.search(q)
    ]


_TODAYISH = re.compile(
    r"(?<!last )(?<!next )(?<!since )(?<!on )(?<!from )(?<!until )(?<!by )(?<!before )(?<!after )"
    r"(?<!every )(?<!coming )\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"(?: (?:morning|afternoon|evening|night))\b",
    re.I,
)


def _dates(record: Record, queries: dict[Difficulty, str]) -> list[GateFinding]:
    """The scenario must fit the record's "today", and a weekday the query gives for today ("Monday
    morning at the service desk") must be the weekday of the date it states."""
    findings = []
    dom = _domain(record.domain)
    fit = dom.scenario_fit(record.scenario)
    if fit is not None:
        from agentjudge.dataset.world import make_environment

        env = make_environment(record)
        today = dt.date.fromisoformat(env.state["reference_date"]) if env is not None else None
        if today is not None and not fit.allows(today):
            for d, q in queries.items():
                if record.scenario.rstrip(".") in q:
                    findings.append(
                        _f(
                            "date_contradiction",
                            f"{record.scenario!r} cannot be said on {today:%A, %B %d}",
                            d,
                        )
                    )
    for d, q in queries.items():
        anchor = resolve.find_anchor(q)
        if anchor is None:
            continue
        named = resolve.WEEKDAYS[anchor.weekday()]
        for m in _TODAYISH.finditer(q):
            if m.group(1).lower() != named:
                findings.append(
                    _f("date_contradiction", f"{m.group(0)!r} but the query says today is a {named}", d)
                )
                break
    return findings


@cache
def _field_nouns_rx(slug: str) -> re.Pattern[str]:
    """Every field noun of the domain followed by "is" or "are" (longest nouns first)."""
    dom = _domain(slug)
    nouns = sorted({f.noun.lower() for ent in dom.entities.values() for f in ent.fields.values()}, key=len)
    alternatives = "|".join(re.escape(n) for n in reversed(nouns))
    return re.compile(r"\b(" + alternatives + r") (is|are)\b")


def _agreement(record: Record, queries: dict[Difficulty, str]) -> list[GateFinding]:
    from agentjudge.dataset.grammar import be

    findings = []
    rx = _field_nouns_rx(record.domain)
    for d, q in queries.items():
        for m in rx.finditer(q.lower()):
            noun, verb = m.group(1), be(m.group(1))
            if m.group(2) != verb:
                findings.append(_f("agreement", f"{q[m.start() : m.end()]!r}: {noun!r} takes {verb!r}", d))
                break
    return findings


def semantic_findings(record: Record) -> tuple[list[GateFinding], bool]:
    """(findings, ran). Skipped for records of no domain of ours (no vocabulary, no state)."""
    if not _ours(record):
        return [], False
    queries = {d: q for d in DIFFICULTIES if (q := record.queries.get(d))}
    named_by = {d: explicit_steps(record, q) for d, q in queries.items()}
    findings = (
        _ambiguous(record, queries)
        + _possessives(record, queries)
        + _no_antecedent(record, queries)
        + _order(record, queries)
        + _unrequested(record, queries, named_by)
        + _not_harder(record, queries, named_by)
        + _unquoted(record, queries)
        + _title(record, queries)
        + _dates(record, queries)
        + _agreement(record, queries)
    )
    return findings, True
