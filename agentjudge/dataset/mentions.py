"""Where a query names the records of a domain, and which of those names have nothing to point at.

A person reading "alert the technician to those tickets" asks: which tickets? This module reads a query
the way that person does, with only the domain's vocabulary (entity nouns, their plurals, and the nouns
of the relations between entities such as "desk-side technician"):

- a demonstrative ("that ticket", "those tickets", "each of those tickets") needs the kind to have been
  introduced *earlier* in the query;
- a bare definite ("the employee's work location") needs the kind to be introduced somewhere in the query
  (a goal-first medium query may name the goal before its prerequisites);
- "for them" needs an earlier plural.

A kind is introduced by an indefinite ("a new ticket", "every booking"), by an identifying modifier ("the
passenger with email …", "the supplier record for VND-1", "production line LIN-4", "the room's room code
is …", "the technician in question is …"), or by a relation noun that names the kind ("its desk-side
technician" introduces a technician). A relation noun that names a role but not the kind ("its area
supervisor", a crew lead) introduces nothing: "the crew lead" after it points at no crew lead the reader
was told about, so the realiser names such a record by the relation ("the substation's area supervisor").
The gate (``gates_semantic``) and the realiser share this code, so a wording the realiser emits is read
exactly as the gate reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from agentjudge.dataset.domains import load_domain

_DEMONSTRATIVE = re.compile(
    r"(?:\b(?:that|this|those|these)|\b(?:each|every one|all|any) of (?:those|these))\s+$"
)
_INDEFINITE = re.compile(r"\b(?:a|an|new|another|every|each|all)\s+$")
_DEFINITE = re.compile(r"\bthe\s+$")
_IDENTIFYING = re.compile(
    r"^(?:(?i:'s\s+[\w -]{1,40}?(?:\s+is\b|:))"  # the passenger's email address is x / … email: x
    r"|(?i:(?:\s+(?!so\b|to\b|and\b)[\w-]+){1,3}(?:\s+is\b|:)\s)"  # the room code is RC-1
    # "the depot in Leeds", but not "the crew member in a notification …", which names nobody
    r"|(?i:\s+(?:record\s+)?(?:with|whose|for|named|called|of|on|at|in(?! an?\b)|linked to|in question"
    r"|i mean)\b)"
    r"|(?i:\s+id\b|\s+number\b)"
    r"|\s+[A-Z][A-Z0-9]*-[A-Z0-9-]+"  # production line LIN-47453
    r"|\s+[A-Z][a-z]+)"  # the customer contact Carla Okafor (a name masked by ``mask`` reads "Xxxxx")
)
_NAMED_BEFORE = re.compile(
    r"\bthe\s+[A-Z][\w'-]*\s+(?:(?:[A-Z][\w'-]*|[a-z]{1,3})\s+)*$"
)  # the Lyon to Porto flight
_THEM = re.compile(r"\b(?:for|of|to|on|about) them\b")


@dataclass(frozen=True)
class Vocab:
    """A domain's names for its records: surface form -> kinds, and which forms are plural/relations."""

    kinds: dict[str, frozenset[str]]  # entity noun or plural -> kinds it names
    relations: dict[str, frozenset[str]]  # relation (ref field) noun -> kinds it introduces
    plurals: frozenset[str]
    pattern: re.Pattern[str]
    fields: frozenset[str] = frozenset()  # field nouns that start with a record noun ("device status")


@cache
def vocab(slug: str) -> Vocab:
    dom = load_domain(slug)
    kinds: dict[str, set[str]] = {}
    relations: dict[str, set[str]] = {}
    plurals: set[str] = set()
    for kind, ent in dom.entities.items():
        kinds.setdefault(ent.noun.lower(), set()).add(kind)
        kinds.setdefault(ent.plural.lower(), set()).add(kind)
        plurals.add(ent.plural.lower())
        for f in ent.fields.values():
            if f.gen == "ref" and f.entity and names_kind(f.noun, dom.entities[f.entity].noun):
                # "its desk-side technician" introduces a technician; "its area supervisor" does not
                # introduce "the crew lead" (a reader is never told the supervisor is a crew lead)
                relations.setdefault(f.noun.lower(), set()).add(f.entity)
            elif f.gen == "ref" and f.entity:
                relations.setdefault(f.noun.lower(), set())
    # "the device status" names a field, not a device: matched as one form and skipped
    fields = (
        {
            f.noun.lower()
            for ent in dom.entities.values()
            for f in ent.fields.values()
            if f.gen != "ref" and any(f.noun.lower().startswith(k + " ") for k in kinds)
        }
        - set(kinds)
        - set(relations)
    )
    forms = sorted(set(kinds) | set(relations) | fields, key=lambda s: (-len(s), s))
    pattern = re.compile(r"\b(" + "|".join(re.escape(f) for f in forms) + r")\b")
    return Vocab(
        kinds={k: frozenset(v) for k, v in kinds.items()},
        relations={k: frozenset(v) for k, v in relations.items()},
        plurals=frozenset(plurals),
        pattern=pattern,
        fields=frozenset(fields),
    )


def names_kind(relation_noun: str, kind_noun: str) -> bool:
    """Whether a relation's noun says what kind of record it points at ("assigned crew lead" → crew lead)."""
    return re.search(r"\b" + re.escape(kind_noun.lower()) + r"\b", relation_noun.lower()) is not None


def unrepeated(owner_noun: str, relation_noun: str) -> str:
    """A relation's noun after its owner's without saying a word twice: the production line's "line
    supervisor" is "the production line's supervisor". The realiser writes this form and the gate reads it
    as the same relation."""
    first, _, rest = relation_noun.partition(" ")
    return rest if rest and first.lower() == owner_noun.split()[-1].lower() else relation_noun


@dataclass(frozen=True)
class Dangling:
    """A reference with nothing to point at: its span in the query and why."""

    start: int
    end: int
    phrase: str
    why: str  # "demonstrative" | "before_introduction" | "never_introduced" | "pronoun"


def blank(text: str, spans: list[str]) -> str:
    """``text`` with every occurrence of each context string (scenario, distractors) replaced by spaces,
    so their incidental nouns ("the coffee machine") neither introduce nor dangle; positions are kept."""
    for s in spans:
        s = s.strip().rstrip(".")
        if len(s) >= 8:  # also as a sentence opens it: "the client does not want …" → "The client …"
            for form in {s, s[:1].upper() + s[1:]}:
                text = text.replace(form, " " * len(form))
    return text


def mask(text: str, values: list[str]) -> str:
    """``text`` with each occurrence of the user's own values (a name, a note) turned into a same-length
    placeholder of the same shape ("Beacon Hill" → "Xxxxxx Xxxx"): their words are no record nouns, yet
    "the substation Beacon Hill" still reads as a record named by a proper name."""
    for v in sorted({v.strip() for v in values if len(v.strip()) >= 3}, key=len, reverse=True):
        shape = re.sub(r"[A-Z]", "X", re.sub(r"[a-z0-9]", "x", v))
        text = text.replace(v, shape)
    return text


def blank_reason_subjects(text: str, reasons: list[str], voc: Vocab) -> str:
    """``text`` with the first record noun of each reason clause found in it blanked ("the client" in
    "the client has sent in a supporting invoice", "the contract" in "the contract's liability cap ...").
    A reason's subject is the person or record the request is about, which a reader resolves by bridging
    ("log on the payment that ..., as the client has sent in an invoice": the payment's client); every
    other noun of the reason is read like the rest of the query, so "before the appointment" in a query
    without an appointment dangles."""
    for reason in reasons:
        reason = reason.strip().rstrip(".")
        m = voc.pattern.search(reason.lower())
        if m is None or len(reason) < 8:
            continue
        for form in {reason, reason[:1].upper() + reason[1:]}:
            start = text.find(form)
            while start != -1:
                a, b = start + m.start(), start + m.end()
                text = text[:a] + " " * (b - a) + text[b:]
                start = text.find(form, start + 1)
    return text


def dangling(text: str, voc: Vocab) -> list[Dangling]:
    """References in ``text`` that a reader cannot resolve (see the module docstring)."""
    low = text.lower()
    introduced: set[str] = set()
    pending: list[tuple[int, int, str, frozenset[str]]] = []
    out: list[Dangling] = []
    plural_at: list[int] = []
    for m in voc.pattern.finditer(low):
        form = m.group(1)
        if form in voc.fields:
            continue
        before, after = low[max(0, m.start() - 40) : m.start()], text[m.end() : m.end() + 60]
        rel = voc.relations.get(form)
        possessive = before.endswith("'s ") or re.search(r"\b(?:its|their|his|her)\s+$", before)
        if rel is not None and (form not in voc.kinds or possessive):
            introduced |= rel
            continue
        kinds = voc.kinds[form]
        if form in voc.plurals or re.search(r"\b(?:every|each|all)\s+$", before):
            plural_at.append(m.start())  # "every payment" is as plural as "the payments"
        if _DEMONSTRATIVE.search(before):
            if not kinds & introduced:
                phrase = text[max(0, m.start() - 6) : m.end()].strip()
                out.append(Dangling(m.start(), m.end(), phrase, "demonstrative"))
                introduced |= kinds  # reported once per kind
            continue
        named_before = _NAMED_BEFORE.search(text[max(0, m.start() - 60) : m.start()])
        if _INDEFINITE.search(before) or _IDENTIFYING.match(after) or named_before:
            introduced |= kinds
            continue
        if kinds & introduced:
            continue
        if _DEFINITE.search(before):  # "the X" needs an X introduced before it
            pending.append((m.start(), m.end(), text[max(0, m.start() - 4) : m.end()], kinds))
    for t in _THEM.finditer(low):
        if not any(p < t.start() for p in plural_at):
            out.append(Dangling(t.start(), t.end(), t.group(0), "pronoun"))
    reported: set[frozenset[str]] = set()
    for start, end, phrase, kinds in pending:
        if kinds not in reported:
            reported.add(kinds)
            why = "before_introduction" if kinds & introduced else "never_introduced"
            out.append(Dangling(start, end, phrase, why))
    return sorted(out, key=lambda d: d.start)
