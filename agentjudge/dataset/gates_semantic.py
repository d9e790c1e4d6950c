"""Gate 2, semantic part: does each query have exactly one right answer, and is hard harder than easy?

Run by ``gates.run_gates`` on every record of one of our domains (it needs the domain's vocabulary and
executable state; a foreign file gets no ``gate2:semantic`` entry in ``gates_run``). Reason codes:

ambiguous_reference  a GT argument taken from an earlier output through a relation (the employee's
                     desk-side technician) has an alternative of the same kind that the offered tools yield
                     from the records in play (the ticket's assignee), and the query does not name the
                     relation that picks the GT's value
no_antecedent        "that X" / "those Xs" before any X was introduced, "the X" never introduced at all,
                     or "for them" with no plural before it (``mentions.dangling``)
order_contradiction  two GT calls that do not depend on each other are mentioned in the opposite order
                     (the stated order: mention order, reversed for "… Before that, …" queries)
unrequested_step     a read call whose output the query's request does not need (every value it feeds is
                     stated) and that the query does not ask for
not_harder           (hard only) fewer than two hardening operations relative to easy: fewer steps named
                     explicitly, values only recoverable by reasoning, distracting detail

``explicit_steps`` (which GT steps a query names) is public: the issue's per-topology explicitness table
is computed with it (``bench/explicit_steps.py``).
"""

from __future__ import annotations

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
)
READ_OPS = ("search", "get", "list")
LOOKUP = re.compile(
    r"\b(?:look(?:ing)? up|find|get|fetch|retrieve|search|check|pull up|list|see|locate|identify|read|"
    r"query|show|review|work out)\b"
)
BACKWARD_CUES = re.compile(
    r"\b(?:before that|prior to that|before doing that|ahead of that|to get there, first|for that, first|"
    r"as a first step toward that|leading up to that|even earlier|earlier still|preceding that|"
    r"going back one more step)\b",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_SENTENCES = re.compile(r"\S.*?(?:[.!?](?=\s|$)|$)")  # "mateo.holm@x.example" stays in one sentence
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


def _context_spans(record: Record) -> list[str]:
    """Text whose nouns neither introduce nor dangle. The reason clauses of optional steps ("since the
    patient asked for a reminder") are *not* here: the reader reads them as part of the request, so a
    reason that says "the appointment" when no appointment was introduced is a dangling reference (only
    a reason's subject is let through: see ``mentions.blank_reason_subjects``)."""
    dom = _domain(record.domain)
    values = [
        v
        for step in record.gt
        for v in resolve.leaves(step.call.arguments)
        if isinstance(v, str) and (" " in v or "_" in v)
    ]
    values += [
        v.replace("_", " ") for v in values
    ]  # the user's own words (a note, a template) refer to nothing
    return [*dom.scenarios, *dom.distractors, *dom.personas, record.scenario, *values]


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
    from agentjudge.dataset.engine import make_environment

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

    A look-up is named when one sentence has a look-up verb, the record's noun and what identifies the
    look-up (the searched value; the relation noun; "details"/"record"); a change is named when its own
    values (or, with none, its record's noun) appear."""
    return [pos is not None for pos in named_at(record, query)]


def named_at(record: Record, query: str) -> list[int | None]:
    """Per GT step: where the query names it (character offset), or None (see ``explicit_steps``)."""
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
    query = mentions.blank(query, [*dom.scenarios, *dom.distractors, record.scenario, *said])
    query = mentions.blank(query, [v.replace("_", " ") for v in said])
    sentences = [(m.start(), m.group(0).lower()) for m in _SENTENCES.finditer(query)]
    relations = _relation_args(record)
    low = query.lower()
    searched = [
        str(v)
        for j, st in enumerate(record.gt)
        if (sp := _spec(record, j)) is not None and sp.op == "search"
        for v in resolve.leaves(st.call.arguments)
    ]
    out: list[int | None] = []
    for i, step in enumerate(record.gt):
        spec = _spec(record, i)
        nouns = _step_nouns(record, i)
        if spec is None:
            out.append(None)
        elif spec.op in READ_OPS:
            every: list[str] = []  # all of these in the sentence
            some: list[str] = []  # and, if given, one of these
            if spec.op == "search":
                every = [str(v) for v in resolve.leaves(step.call.arguments)]
            elif spec.op == "get":
                rel = [
                    noun
                    for j, _, v, noun, _ in relations
                    if i in record.gt[j].depends_on
                    and isinstance(step.output, dict)
                    and v in step.output.values()
                ]
                own = [str(v) for v in resolve.leaves(step.call.arguments)]
                every, some = rel[:1], ([] if rel else ["details", "record", *own])
            # a search's sentence ("locate the line record for LN-1") names that search, not a later read
            others = [] if spec.op == "search" else searched
            out.append(
                next(
                    (
                        at + _verb_at(s, nouns)
                        for at, s in sentences
                        if _names_lookup(s, nouns, every, some) and not any(_has_word(s, v) for v in others)
                    ),
                    None,
                )
            )
        else:
            values = _stated_values(record, i)
            found = [p for v in values if (p := _position(original, v)) is not None]
            if values:
                out.append(min(found) if found else None)
            else:
                out.append(next((m.start() for n in nouns if (m := _word_rx(n).search(low))), None))
    return out


def _lookups(sentence: str) -> list[re.Match[str]]:
    """Look-up verbs in a sentence, except "could I get you to …", which asks and looks nothing up."""
    return [m for m in LOOKUP.finditer(sentence) if sentence[m.end() : m.end() + 4] != " you"]


def _verb_at(sentence: str, nouns: tuple[str, ...]) -> int:
    """Offset of the look-up verb that governs one of ``nouns`` ("… change X and list the cases": at
    "list"), so two requests in one sentence keep their order."""
    for m in _lookups(sentence):
        if any(_word_rx(n).search(sentence[m.start() : m.start() + 40]) for n in nouns):
            return m.start()
    return 0


def _has_word(text: str, word: str) -> bool:
    return _word_rx(word).search(text) is not None


def _names_lookup(sentence: str, nouns: tuple[str, ...], every: list[str], some: list[str]) -> bool:
    return (
        bool(_lookups(sentence))
        and any(_has_word(sentence, n) for n in nouns)
        and all(_has_word(sentence, w) or _has_word(sentence, w.replace("_", " ")) for w in every)
        and (not some or any(_has_word(sentence, w) for w in some))
    )


# ---------------------------------------------------------------- the checks


def _f(code: str, detail: str, d: Difficulty | None) -> GateFinding:
    return GateFinding(gate="gate2", code=code, difficulty=d, detail=detail)


def _no_antecedent(record: Record, queries: dict[Difficulty, str]) -> list[GateFinding]:
    voc = mentions.vocab(record.domain)
    spans = _context_spans(record)
    dom = _domain(record.domain)
    reasons = [c for t in dom.tools if t.condition for c in (*t.condition.holds, *t.condition.absent)]
    findings = []
    for d, q in queries.items():
        # subjects first: a note's text may sit inside its reason ("box arrived dented")
        text = mentions.blank(mentions.blank_reason_subjects(q, reasons, voc), spans)
        for ref in mentions.dangling(text, voc):
            findings.append(
                _f("no_antecedent", f"{q[ref.start : ref.end]!r}: {ref.why.replace('_', ' ')}", d)
            )
    return findings


def _order(record: Record, queries: dict[Difficulty, str]) -> list[GateFinding]:
    markers = {i: _stated_values(record, i) for i in range(len(record.gt))}
    reads = {i for i in range(len(record.gt)) if (sp := _spec(record, i)) is not None and sp.op in READ_OPS}
    findings = []
    for d, q in queries.items():
        pairs = _independent_pairs(record, q)
        pos: dict[int, int] = {}
        named = named_at(record, q)
        for i, values in markers.items():
            found = [p for v in values if _occurrences(q, v) == 1 and (p := _position(q, v)) is not None]
            if found:
                pos[i] = min(found)
            elif i in reads and (at := named[i]) is not None:
                pos[i] = at  # a look-up with no value of its own: the sentence that asks for it
        backward = bool(BACKWARD_CUES.search(q))
        for i, j in pairs:
            if i in pos and j in pos and pos[i] != pos[j] and (pos[i] > pos[j]) != backward:
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
    """The hardening operations the hard query applies relative to the easy one (``named``: the
    ``explicit_steps`` of easy and hard, when the caller has them already)."""
    ops = []
    named_easy, named_hard = named or (explicit_steps(record, easy), explicit_steps(record, hard))
    if sum(named_hard) < sum(named_easy):
        ops.append("implicit_steps")
    reworded = False
    for step in record.gt:
        for leaf in resolve.leaves(step.call.arguments):
            if isinstance(leaf, bool) or not resolve.is_checkable(leaf):
                continue
            text = str(leaf)
            if _position(easy, text) is not None and _position(hard, text) is None:
                reworded = True
    if reworded:
        ops.append("values_by_reasoning")
    if _fact_sentences(record, hard) > _fact_sentences(record, easy):
        ops.append("values_as_facts")
    dom = _domain(record.domain)
    if any(x.strip().rstrip(".") in hard and x.strip().rstrip(".") not in easy for x in dom.distractors):
        ops.append("distractors")
    return ops


_REQUEST = re.compile(r"\b(?:please|can you|could you|would you|i'd like|i need|kindly|go ahead)\b", re.I)
_IMPERATIVE = re.compile(
    r"^(?:\d+\)\s*|step \d+:\s*|[^,:]{0,30}[,:]\s*)?(?:and |also |then |plus, )?"
    r"(?:set|change|update|create|open|raise|add|log|record|send|notify|alert|assign|hand|make|message|"
    r"let|schedule|book|mark|move|work out|calculate)\b",
    re.I,
)
_STATES = re.compile(r"\b(?:is|are|concerns|about)\b|:", re.I)


def _fact_sentences(record: Record, query: str) -> int:
    """Sentences that state a value the user supplies without asking for anything ("The hostname is
    WS-1.", "This is about case CAS-2."): a step's input given as a fact about the situation."""
    values = [str(v) for step in record.gt for v in resolve.leaves(step.call.arguments) if isinstance(v, str)]
    dom = _domain(record.domain)
    text = mentions.blank(query, [*dom.scenarios, *dom.distractors, record.scenario])
    count = 0
    for sentence in _SENTENCE.split(text):
        asks = (
            LOOKUP.search(sentence.lower())
            or _REQUEST.search(sentence)
            or _IMPERATIVE.match(sentence.strip())
        )
        if asks or not _STATES.search(sentence):
            continue
        if any(_position(sentence, v) is not None for v in values):
            count += 1
    return count


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
            f"hard applies {ops or 'no'} hardening relative to easy; needs {MIN_HARDENING}",
            "hard",
        )
    ]


def semantic_findings(record: Record) -> tuple[list[GateFinding], bool]:
    """(findings, ran). Skipped for records of no domain of ours (no vocabulary, no state)."""
    if not _ours(record):
        return [], False
    queries = {d: q for d in DIFFICULTIES if (q := record.queries.get(d))}
    named_by = {d: explicit_steps(record, q) for d, q in queries.items()}
    findings = (
        _ambiguous(record, queries)
        + _no_antecedent(record, queries)
        + _order(record, queries)
        + _unrequested(record, queries, named_by)
        + _not_harder(record, queries, named_by)
    )
    return findings, True
