"""Render a QueryPlan into the easy / medium / hard user queries (SPEC §5), deterministically.

The three queries share tools and GT; only the wording changes, so difficulty effects are attributable.
- easy: every step stated in order, values written plainly (ISO dates, digits).
- medium: paraphrased (another phrasing), steps out of order with logical cues, some values indirect
  ("March 17, 2026", "five").
- hard: look-ups implicit (their inputs become facts about the situation), values only recoverable by
  reasoning (dates relative to a stated "today", repeated values as "the same one"), distracting detail.
Variety comes from a seeded RNG choosing among the builder's phrasings and this module's openings,
connectives and closings, so no single template dominates. Every value form emitted here is one that
``resolve.recoverable`` reads back; Gate 2 then checks the rendered text, so a wording bug is caught,
not shipped.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
import re
import string
from typing import Any

from agentjudge.dataset import mentions, resolve
from agentjudge.dataset.plan import PlanStep, QueryPlan, Relation, Slot
from agentjudge.types import Difficulty

LOOKUP_VERBS = (
    "look up",
    "find",
    "get",
    "fetch",
    "retrieve",
    "search",
    "check",
    "pull up",
    "list",
    "see",
    "locate",
    "identify",
    "read",
    "query",
    "show",
)


SHORT_WORDS = frozenset({"low", "new", "raw", "red", "off", "on", "yes", "no", "all", "any", "top"})


class RenderError(ValueError):
    """A plan that cannot be worded (a phrasing names a placeholder with no slot)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def _strip_article(text: str) -> str:
    return re.sub(r"^(a|an|the)\s+", "", text.strip(), flags=re.IGNORECASE)


def _placeholders(phrasing: str) -> list[str]:
    """Placeholder names in order of appearance (a list, not a set: the order in which values are
    rendered consumes the RNG, and set order changes with PYTHONHASHSEED between processes)."""
    return list(dict.fromkeys(name for _, name, _, _ in string.Formatter().parse(phrasing) if name))


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


class _Renderer:
    """State for one query: the RNG, which values were already said (for "the same one")."""

    def __init__(self, plan: QueryPlan, difficulty: Difficulty, rng: random.Random) -> None:
        self.plan = plan
        self.difficulty = difficulty
        self.rng = rng
        self.today = dt.date.fromisoformat(plan.reference_date[:10])
        self.said: dict[str, str] = {}
        self.chosen: dict[int, str] = {}  # step -> template used, so medium can pick another
        # look-ups of a role relation ("area supervisor", a crew lead) whose result a later request names
        # by that relation: every one in easy and medium, the ones a hard query asks for explicitly (an
        # implicit one leaves a fact "the crew lead in question is …" instead)
        self.linked: dict[int, Relation] = {}
        if difficulty != "hard":
            for s in plan.steps:
                self.link(s)

    def link(self, step: PlanStep) -> None:
        """Remember a look-up of a relation whose noun does not say what it points at ("its desk-side
        technician" already introduces a technician; "its area supervisor" does not introduce a crew lead)."""
        rel = step.relation
        if rel is not None and not mentions.names_kind(rel.noun, rel.target):
            self.linked[step.step] = rel

    # ------------------------------------------------------------ values

    def value(self, slot: Slot) -> str:
        """A query-sourced value in this difficulty's form. Hard: a date or number said before becomes
        "that same day" / "the same number" (a reference the reader must resolve)."""
        value = slot.value
        key = repr(value)
        if self.difficulty == "hard" and key in self.said:
            return self.said[key]
        text = self._format(value, slot.kind)
        if self.difficulty == "hard" and (self._is_date(value) or _is_number(value)):
            noun = "day" if self._is_date(value) else "number"
            self.said[key] = self.rng.choice([f"that same {noun}", f"the same {noun}"])
        return text

    @staticmethod
    def _is_date(value: Any) -> bool:
        return isinstance(value, str) and bool(
            resolve.ISO_DATE.match(value) or resolve.ISO_DATETIME.match(value)
        )

    def _format(self, value: Any, kind: str) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, list):
            return _join([self._format(item, kind) for item in value])
        if isinstance(value, dict):
            return _join([self._format(item, kind) for item in value.values()])
        if isinstance(value, int | float):
            return self._number(value)
        text = str(value)
        if resolve.ISO_DATE.match(text):
            return self._date(dt.date.fromisoformat(text))
        if (m := resolve.ISO_DATETIME.match(text)) is not None:
            date = self._date(dt.date.fromisoformat(m.group(1)))
            return f"{date} at {resolve.format_time(int(m.group(2)), int(m.group(3)))}"
        if kind == "enum" and len(text) <= 3 and text.isalnum() and text.lower() not in SHORT_WORDS:
            return text.upper()  # "set the business unit to it" reads as a pronoun; "to IT" does not
        if kind == "enum" and self.difficulty != "easy":
            return text.replace("_", " ")
        return text

    def _number(self, value: float) -> str:
        if isinstance(value, float) and not value.is_integer():
            return f"{value:,}" if self.difficulty != "easy" else str(value)
        n = int(value)
        if self.difficulty == "easy" or n < 0:
            return str(n)
        words = resolve.number_to_words(n)
        idioms = [k for k, v in resolve.NUMBER_IDIOMS.items() if v == n]
        if self.difficulty == "hard" and idioms and self.rng.random() < 0.7:
            return self.rng.choice(idioms)
        if words and n <= (20 if self.difficulty == "medium" else 99) and self.rng.random() < 0.7:
            return words
        return f"{n:,}"

    def _date(self, date: dt.date) -> str:
        if self.difficulty == "easy":
            return date.isoformat()
        if self.difficulty == "medium":
            return resolve.format_date_long(date, with_weekday=self.rng.random() < 0.3)
        options = resolve.relative_phrases(date, self.today)
        if options and self.rng.random() < 0.85:
            return REL_OPEN + self.rng.choice(options) + REL_CLOSE
        return resolve.format_date_long(date, with_year=False)

    # ------------------------------------------------------------ steps

    def reference(self, slot: Slot) -> str:
        """How a value produced by an earlier step is referred to (never its literal value)."""
        return slot.noun.strip()

    def phrase(self, step: PlanStep, avoid: str | None = None) -> tuple[str, str]:
        """(chosen template, rendered clause). Prefers phrasings that mention every query-sourced value."""
        if not step.phrasings:
            raise RenderError(f"step {step.step} has no phrasings")
        needed = {s.arg for s in step.slots if s.source == "query"}
        complete = [p for p in step.phrasings if needed <= set(_placeholders(p))] or list(step.phrasings)
        choices = [p for p in complete if p != avoid] or complete
        template = self.rng.choice(choices)
        self.chosen[step.step] = template
        by_arg = {s.arg: s for s in step.slots}
        values: dict[str, str] = {}
        for name in _placeholders(template):
            slot = by_arg.get(name)
            if slot is None:
                raise RenderError(
                    f"step {step.step}: phrasing {template!r} names {{{name}}} but no slot {name!r}"
                )
            values[name] = self.value(slot) if slot.source == "query" else self.reference(slot)
        clause = self._link(step, template.format(**values))
        missing = [s for s in step.slots if s.source == "query" and s.arg not in _placeholders(template)]
        for slot in missing:
            clause += f", with {_strip_article(slot.noun)} {self.value(slot)}"
        return template, clause

    def _found_by(self, slot: Slot) -> list[int]:
        """The linked look-ups whose result this slot's record may be: the recipient itself, or the same
        record passed on by a later step ("about the asset owner" after the owner's record was opened). A
        look-up's result is the id of its relation's kind that a later step takes from it; only a clause
        naming that kind ("the asset owner") is reworded, so a candidate that is not meant changes nothing."""
        if slot.source != "step" or slot.kind not in ("id", "list"):  # the recipient, or what it is about
            return []
        out: list[int] = []
        direct = self.linked.get(slot.from_step) if slot.from_step is not None else None
        if direct is not None and (slot.kind == "list" or slot.noun == f"the {direct.target} id"):
            out.append(slot.from_step or 0)
        value = slot.value[0] if isinstance(slot.value, list) and len(slot.value) == 1 else slot.value
        for src, rel in self.linked.items():
            for other in self.plan.steps:
                for x in other.slots:
                    if x.from_step == src and x.noun == f"the {rel.target} id" and x.value == value:
                        out.append(src)
        return list(dict.fromkeys(out))

    def _link(self, step: PlanStep, clause: str) -> str:
        """A record found through a relation is named by that relation: "send the substation's area
        supervisor a notification", never "send the crew lead …" after "find its area supervisor" (the
        reader is never told the supervisor is a crew lead, nor which crew lead is meant)."""
        for slot in step.slots:
            for src in self._found_by(slot):
                rel = self.linked[src]
                named = f"{self._record(src, rel)}'s {rel.noun}"
                pattern = rf"\b(?:[Tt]he|[Tt]hat) {re.escape(rel.target)}\b(?! id\b)"
                clause = re.sub(pattern, named.replace("\\", "\\\\"), clause)
        return clause

    def _record(self, step: int, rel: Relation) -> str:
        """How the source record of a relation look-up is named: "the substation", or by its own linked
        relation when it was found through one ("the host's owner", then "the host's owner's security
        contact")."""
        by_step = {s.step: s for s in self.plan.steps}
        for slot in by_step[step].slots if step in by_step else []:
            for src in self._found_by(slot) if slot.kind == "id" else []:
                if src != step and self.linked[src].target == rel.source:
                    return f"{self._record(src, self.linked[src])}'s {self.linked[src].noun}"
        return f"the {rel.source}"

    def fact(self, slot: Slot) -> str:
        """A query-sourced value stated as a fact about the situation (hard: the look-up stays implicit)."""
        noun, value = slot.noun.strip(), self.value(slot)
        return f"{noun} is {value}" if self.rng.random() < 0.7 else f"{noun}: {value}"


def _dependents(plan: QueryPlan) -> dict[int, set[int]]:
    """step -> steps that consume its output, from the plan's step-sourced slots."""
    out: dict[int, set[int]] = {s.step: set() for s in plan.steps}
    for step in plan.steps:
        for slot in step.slots:
            if slot.source == "step" and slot.from_step is not None and slot.from_step in out:
                out[slot.from_step].add(step.step)
    return out


def _ancestors(plan: QueryPlan) -> dict[int, set[int]]:
    """step -> every step it really depends on (transitively): through a value the user does not state.
    "Look up order ORD-1 and change its quantity" has no real dependency (the id is given), so a
    medium query must not list the change before the look-up."""
    stated = {repr(x.value) for p in plan.steps for x in p.slots if x.source == "query"}
    direct = {
        s.step: {
            x.from_step
            for x in s.slots
            if x.source == "step" and x.from_step is not None and repr(x.value) not in stated
        }
        for s in plan.steps
    }
    out: dict[int, set[int]] = {}
    for step in sorted(direct):
        out[step] = set()
        for u in direct[step]:
            out[step] |= {u} | out.get(u, set())
    return out


def _needed(plan: QueryPlan, step: PlanStep) -> bool:
    """A look-up is needed when a later step takes from its output a value the user does not state (an
    id the user gives needs no look-up; the hard query then asks for that look-up or leaves it out)."""
    stated = {repr(s.value) for p in plan.steps for s in p.slots if s.source == "query"}
    return any(
        slot.source == "step" and slot.from_step == step.step and repr(slot.value) not in stated
        for other in plan.steps
        for slot in other.slots
    )


def _is_lookup(step: PlanStep) -> bool:
    first = step.phrasings[0].strip().lower() if step.phrasings else ""
    return any(first.startswith(verb) for verb in LOOKUP_VERBS)


def _condition_clause(plan: QueryPlan, r: _Renderer, clause: str) -> str:
    """The extra step of optional_enrichment, tied to the condition that makes it necessary."""
    cond = (plan.condition_text or "").strip().rstrip(".")
    if not cond:
        return clause
    # The condition trails the request: the clause is also embedded after leads such as "I need you to ...",
    # where a leading "since ..." would break the sentence.
    return r.rng.choice([f"{clause}, because {cond}", f"{clause}, since {cond}", f"{clause}, as {cond}"])


def _condition_note(plan: QueryPlan, r: _Renderer) -> str | None:
    """optional_enrichment whose condition does not hold: the query still states the condition (every
    difficulty), so the reader can tell that the extra step is not needed."""
    if not plan.condition_text or any(s.conditional for s in plan.steps):
        return None
    cond = plan.condition_text.strip().rstrip(".")
    return _sentence(r.rng.choice([cond, f"note that {cond}", f"for what it's worth, {cond}"]))


def _merge_loops(plan: QueryPlan) -> list[PlanStep]:
    """loop_like unrolls one request per item ("update each of those tickets"); say it once. Consecutive
    steps with the same phrasings and the same user-supplied values are one request."""
    merged: list[PlanStep] = []
    for step in plan.steps:
        if merged and _loop_key(merged[-1]) == _loop_key(step):
            continue
        merged.append(step)
    return merged


def _loop_key(step: PlanStep) -> tuple[Any, ...]:
    values = tuple(sorted((s.arg, repr(s.value)) for s in step.slots if s.source == "query"))
    return (tuple(step.phrasings), values, step.conditional)


# Phrase banks. Every fixed phrase is one of many, so none reaches 5 % of queries (tests/test_rewrite.py
# prints the most frequent openers and closers with their shares and checks the bound).
GREETINGS = (
    "Hi, {persona} here.",
    "Hello, this is {persona_a}.",
    "Hey there, {persona} speaking.",
    "Good morning, {persona} here.",
    "Quick one from {persona_a}.",
    "Writing as {persona_a} in {title}.",
    "I'm {persona_a} in {title}.",
    "I'm {persona_a} on the {title} side.",
    "{persona_A} in {title} here.",
    "This is {persona_a} from {title}.",
)
SELF_TAGS = (
    "(I work as {persona_a}.)",
    "(I'm {persona_a} here.)",
    "(For context, I'm {persona_a}.)",
    "(My role: {persona}.)",
    "(Asking as {persona_a}.)",
)
CLOSINGS = (
    "Thanks!",
    "Thank you.",
    "Let me know once it's done.",
    "Appreciate it.",
    "Thanks a lot.",
    "Many thanks.",
    "Cheers.",
    "Thanks in advance.",
    "Ping me when that's finished.",
    "Tell me when it's through.",
    "A quick confirmation afterwards would help.",
    "Please confirm when you're done.",
    "That's all for now.",
    "That should be everything.",
    "Much appreciated.",
    "Thanks for handling this.",
    "I owe you one.",
    "Let me know if anything looks off.",
    "Shout if something blocks you.",
    "Thanks, that helps a lot.",
    "Grateful for the help.",
    "Let me know how it goes.",
    "Send me a short note when it's done.",
    "That's it from me.",
)
ANCHORS = (  # each must be read back by resolve.find_anchor ("today is", "it's", "it is", "today's date is")
    "Today is {day}.",
    "For reference, today is {day}.",
    "(It's {day}.)",
    "It is {day} as I write this.",
    "Today's date is {day}.",
    "It's {day} today.",
    "(Today: {day}.)",
    "Note that today is {day}.",
    "Bear in mind it's {day}.",
    "Context: it is {day}.",
    "For the dates below, today is {day}.",
    "Just so you know, today is {day}.",
)
EASY_LEADS = (
    "Please do the following in order:",
    "In order, please:",
    "Here's the sequence:",
    "Steps, in sequence:",
    "Please work through these in order:",
    "What I need, step by step:",
    "In sequence, please:",
    "The to-do list, in order:",
)
EASY_FIRSTS = ("First", "To start", "To begin", "Start here:", "First of all", "Step one")
EASY_THENS = (
    "Then",
    "Next",
    "After that",
    "Once that's done",
    "Following that",
    "After this",
    "Then, please",
)
EASY_LASTS = ("Finally", "Lastly", "To finish", "Last of all", "At the end", "To wrap up")
MEDIUM_GOALS = (
    "What I need is to ",
    "Main thing: ",
    "I need you to ",
    "The goal is to ",
    "Ultimately I want to ",
    "End result: please ",
    "The point is to ",
    "What matters is that you ",
    "In the end, please ",
    "Bottom line: ",
)
MEDIUM_FIRST_CUES = (
    "Before that, ",
    "To get there, first ",
    "Prior to that, ",
    "Before doing that, ",
    "Ahead of that, ",
    "For that, first ",
    "As a first step toward that, ",
    "Leading up to that, ",
)
MEDIUM_MORE_CUES = (  # every cue here and above is one gates_semantic.BACKWARD_CUES reads as "reverse order"
    "And before that, ",
    "Even earlier, ",
    "Earlier still, ",
    "Preceding that, ",
    "And ahead of that, ",
    "Going back one more step, ",
    "Before that step, ",
    "And prior to that, ",
)
MEDIUM_JOINS = (
    "Also, ",
    "And ",
    "Oh, and ",
    "Plus, ",
    "On top of that, ",
    "Besides that, ",
    "As well, ",
    "In addition, ",
    "Alongside that, ",
    "And also ",
    "Additionally, ",
    "Another thing: ",
)
MEDIUM_TAILS = (
    "Do them in whatever order makes sense.",
    "Please sort out the right order yourself.",
    "Work out the sequence yourself.",
    "The sequence is up to you where it matters.",
    "You'll know which has to come first.",
    "",
    "",
    "",
)
HARD_LEADS = (
    "Can you ",
    "I'd like you to ",
    "Please ",
    "Could you ",
    "Would you ",
    "Is it possible to ",
    "Go ahead and ",
    "Can I ask you to ",
    "If you could, ",
    "Kindly ",
    "I'm hoping you can ",
    "Could I get you to ",
)
HARD_MORE = ("and ", "also ", "then ", "after that, ", "and then ", "on top of that, ")
QUESTION_LEADS = (
    "Can you ",
    "Could you ",
    "Would you ",
    "Can I ask you to ",
    "Could I get you to ",
    "Is it possible to ",
)


def _persona_forms(plan: QueryPlan) -> dict[str, str]:
    persona_a = plan.persona.strip()
    persona = _strip_article(persona_a)
    return {
        "persona": persona,
        "persona_a": persona_a,
        "persona_A": persona_a[:1].upper() + persona_a[1:],
        "title": plan.domain_title,
    }


def _opening(plan: QueryPlan, r: _Renderer) -> str:
    scenario = _sentence(plan.scenario.strip())
    forms = _persona_forms(plan)
    style = r.rng.randrange(4)
    if style == 0:
        return scenario
    if style == 1:
        return r.rng.choice(GREETINGS).format(**forms) + " " + scenario
    return scenario + " " + r.rng.choice(SELF_TAGS).format(**forms)


def _anchor(r: _Renderer) -> str:
    day = resolve.format_date_long(r.today, with_weekday=True)
    return r.rng.choice(ANCHORS).format(day=day)


def _closing(r: _Renderer) -> str:
    return "" if r.rng.random() < 0.3 else r.rng.choice(CLOSINGS)


def _render_easy(plan: QueryPlan, r: _Renderer) -> str:
    clauses: list[str] = []
    for step in _merge_loops(plan):
        _, clause = r.phrase(step)
        clauses.append(_condition_clause(plan, r, clause) if step.conditional else clause)
    style = r.rng.randrange(3)
    if style == 0:
        body = " ".join(f"{i + 1}) {_sentence(c)}" for i, c in enumerate(clauses))
        body = r.rng.choice(EASY_LEADS) + " " + body
    elif style == 1:
        body = " ".join(f"Step {i + 1}: {_sentence(c)}" for i, c in enumerate(clauses))
    else:

        def cue(word: str) -> str:
            return word if word.endswith(":") else word + ","

        parts = [f"{cue(r.rng.choice(EASY_FIRSTS))} {clauses[0]}"] if clauses else []
        parts += [f"{cue(r.rng.choice(EASY_THENS))} {c}" for c in clauses[1:-1]]
        if len(clauses) > 1:
            parts.append(f"{cue(r.rng.choice(EASY_LASTS))} {clauses[-1]}")
        body = " ".join(_sentence(p) for p in parts)
    note = _condition_note(plan, r)
    return " ".join(x for x in (_opening(plan, r), body, note, _closing(r)) if x)


def _render_medium(plan: QueryPlan, r: _Renderer, easy_choice: dict[int, str]) -> str:
    steps = _merge_loops(plan)
    rendered: dict[int, str] = {}
    for step in steps:
        _, clause = r.phrase(step, avoid=easy_choice.get(step.step))
        rendered[step.step] = _condition_clause(plan, r, clause) if step.conditional else clause
    order = [s.step for s in steps]
    if r.rng.random() < 0.5 and len(order) > 1:  # goal first, then its prerequisites backwards
        goal, rest = order[-1], order[-2::-1]
        body = _sentence(r.rng.choice(MEDIUM_GOALS) + rendered[goal])
        cues = [r.rng.choice(MEDIUM_FIRST_CUES)]
        cues += [r.rng.choice(MEDIUM_MORE_CUES) for _ in rest[1:]]
        body += " " + " ".join(_sentence(cue + rendered[s]) for cue, s in zip(cues, rest, strict=True))
    else:
        shuffled = _out_of_order(plan, order, r.rng)
        parts = [_sentence(rendered[shuffled[0]])]
        parts += [_sentence(r.rng.choice(MEDIUM_JOINS) + rendered[s]) for s in shuffled[1:]]
        body = " ".join(parts) + " " + r.rng.choice(MEDIUM_TAILS)
    note = _condition_note(plan, r)
    return " ".join(x for x in (_opening(plan, r), body.strip(), note, _closing(r)) if x)


def _out_of_order(plan: QueryPlan, order: list[int], rng: random.Random) -> list[int]:
    """A mention order other than the GT's that never swaps two steps which do not depend on each other:
    a listed order is read as the order to follow, and the GT of independent calls is what it is."""
    anc = _ancestors(plan)

    def keeps_independent(perm: tuple[int, ...]) -> bool:
        return all(
            perm.index(a) < perm.index(b)
            for a, b in itertools.combinations(order, 2)
            if a not in anc.get(b, set())
        )

    perms = [list(p) for p in itertools.permutations(order) if list(p) != order and keeps_independent(p)]
    return rng.choice(perms) if perms else order


def _relation_fact(plan: QueryPlan, step: PlanStep, r: _Renderer) -> str | None:
    """What an implicit look-up contributes in words: which record the later request is about."""
    if step.relation is not None:
        rel = step.relation
        if rel.noun.lower() == rel.target.lower():
            what = f"the {rel.target} on that {rel.source}'s record"
        else:
            what = f"the {rel.source}'s {rel.noun}"
        return r.rng.choice(
            [
                f"the {rel.target} in question is {what}",
                f"the {rel.target} I mean is {what}",
                f"by the {rel.target} I mean {what}",
            ]
        )
    if step.listing is not None:
        ls = step.listing
        return r.rng.choice(
            [
                f"the {ls.plural} in question are all the {ls.plural} linked to that {ls.parent}",
                f"the {ls.plural} I mean are every {ls.child} linked to that {ls.parent}",
                f"by the {ls.plural} I mean all of that {ls.parent}'s {ls.plural}",
            ]
        )
    return None


def _id_fact(slot: Slot, r: _Renderer) -> str:
    noun = slot.noun.strip()
    record = noun[4:-3] if noun.startswith("the ") and noun.endswith(" id") else noun
    return r.rng.choice(
        [
            f"{noun} is {slot.value}",
            f"this is about {record} {slot.value}",
            f"it concerns {record} {slot.value}",
        ]
    )


def _render_hard(plan: QueryPlan, r: _Renderer) -> str:
    dependents = _dependents(plan)
    facts: list[str] = []
    asks: list[str] = []
    for step in _merge_loops(plan):
        implicit = (
            not step.conditional and dependents.get(step.step) and _is_lookup(step) and _needed(plan, step)
        )
        if implicit:
            facts += [r.fact(s) for s in step.slots if s.source == "query"]
            if (relation := _relation_fact(plan, step, r)) is not None:
                facts.append(relation)
            continue
        r.link(step)  # asked for in words: later requests name its result by the relation
        if step.fact_phrasings and all(s.kind == "id" for s in step.slots if s.source == "query"):
            # an id the user gives is said as a fact, and the request refers back to it
            facts += [_id_fact(s, r) for s in step.slots if s.source == "query"]
            kept = [s for s in step.slots if not (s.source == "query" and s.kind == "id")]
            step = step.model_copy(update={"phrasings": step.fact_phrasings, "slots": kept})
        _, clause = r.phrase(step)
        asks.append(_condition_clause(plan, r, clause) if step.conditional else clause)
    sentences = [_sentence(f) for f in facts]
    if asks:
        lead = r.rng.choice(HARD_LEADS)
        ask = lead + _join(asks[:2]) + ("?" if lead in QUESTION_LEADS else "")
        sentences.append(_sentence(ask))
        sentences += [_sentence(r.rng.choice(HARD_MORE) + a) for a in asks[2:]]
    note = _condition_note(plan, r)
    if note:
        sentences.insert(r.rng.randint(0, len(sentences)), note)
    distractors = [d for d in plan.distractors if d.strip()]
    r.rng.shuffle(distractors)
    for extra in distractors[: r.rng.randint(1, 2)]:
        sentences.insert(r.rng.randint(0, len(sentences)), _sentence(extra))
    # Always say what "today" is: relative dates (ours or a distractor's "last Thursday") need it.
    parts = [_opening(plan, r)]
    parts.insert(r.rng.randint(0, 1), _anchor(r))
    return " ".join(x for x in (*parts, " ".join(sentences), _closing(r)) if x)


def render_queries(plan: QueryPlan, seed: int) -> dict[Difficulty, str]:
    """The three queries of one plan. Same (plan, seed) → same text; another seed → other wording."""
    easy = _Renderer(plan, "easy", random.Random(f"{seed}:easy"))
    easy_text = _render_easy(plan, easy)
    medium_text = _render_medium(
        plan, _Renderer(plan, "medium", random.Random(f"{seed}:medium")), easy.chosen
    )
    hard_text = _render_hard(plan, _Renderer(plan, "hard", random.Random(f"{seed}:hard")))
    return {
        "easy": _resolve_references(plan, _tidy(easy_text)),
        "medium": _resolve_references(plan, _tidy(medium_text)),
        "hard": _resolve_references(plan, _tidy(hard_text)),
    }


def _resolve_references(plan: QueryPlan, text: str) -> str:
    """ "that X" / "those Xs" said before any X was introduced (a goal-first medium query names the goal
    before its prerequisites) becomes "the X" / "the Xs", which a reader resolves from what follows."""
    if not plan.domain:
        return text
    voc = mentions.vocab(plan.domain)
    values = [
        str(x.value)
        for p in plan.steps
        for x in p.slots
        if x.source == "query" and isinstance(x.value, str) and (" " in x.value or "_" in x.value)
    ]
    spans = [plan.scenario, *plan.distractors, plan.persona, plan.condition_text or ""]
    spans += values + [v.replace("_", " ") for v in values]
    for _ in range(12):
        bad = [d for d in mentions.dangling(mentions.blank(text, spans), voc) if d.why == "demonstrative"]
        if not bad:
            break
        head = re.sub(
            r"\b(?:([Tt])hat|([Tt])his|([Tt])hose|([Tt])hese)\s+$",
            lambda m: ("T" if (m.group(0)[0] == "T") else "t") + "he ",
            text[: bad[0].start],
        )
        text = head + text[bad[0].start :]
    return text


# Relative dates are wrapped in these marks while rendering, so that only the prepositions in front of
# them are adjusted ("on in three days" → "in three days"), never a user's own text such as a quoted
# subject "route change for today".
REL_OPEN, REL_CLOSE = "\x02", "\x03"
_ON_RELATIVE = re.compile(r"\b(?:on|for) (?=\x02(?!this coming))")
_A_AN = re.compile(r"\b([Aa])(?= (?:(?!one\b|once\b)[aeioAEIO][a-z]|u(?:p|rg|nder|n(?!i))[a-z]))")
_TO_IN = re.compile(r"\b(to|by|until|before) \x02in (a|\w+(?:-\w+)?) (days?|weeks?)\x03")


def _tidy(text: str) -> str:
    """Whitespace, punctuation spacing, and "on in three days" → "in three days"."""
    text = _ON_RELATIVE.sub("", text)
    text = _TO_IN.sub(
        lambda m: f"{m.group(1)} {'one' if m.group(2) == 'a' else m.group(2)} {m.group(3)} from today", text
    )
    text = text.replace(REL_OPEN, "").replace(REL_CLOSE, "")
    # "a onboarding task" → "an onboarding task", outside quoted user text only
    parts = text.split('"')
    text = '"'.join(
        _A_AN.sub(lambda m: m.group(1) + "n", p) if i % 2 == 0 else p for i, p in enumerate(parts)
    )
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.;:?!])", r"\1", text)
    return re.sub(r"\.\.+", ".", text)
