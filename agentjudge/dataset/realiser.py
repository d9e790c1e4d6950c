"""Render a QueryPlan into the easy / medium / hard user queries, deterministically.

The three queries share tools and GT; only the wording changes, so difficulty effects are attributable.
Each is one request a person would write, planned before it is worded:

- what the person knows: every record the request is about is a ``Referent`` — found by a value they
  know ("the employee with email address x"), quoted by id ("order ORD-1"), a relation of another record
  ("the customer's personal shopper"), the children of one ("every work order of the Beacon Hill
  substation") or made on the way ("the new access request");
- what they want: the changes (and any read they want to see) — the *goal*;
- what they mention first: a record is introduced by its description the first time it is named and
  referred to briefly after that ("the employee", "its", "those tickets"), never the other way round.

easy: every step asked for in the GT's order, values plain (ISO dates, digits).
medium: the goal first, then the look-ups it needs behind an explicit dependency cue ("Before that,
you'll need to …", "… once you've looked up …"); dates written out, small numbers in words.
hard: only the goal is asked for; each look-up whose result it needs is left to the reader, who gets the
record's description instead ("send the personal shopper of the customer on order ORD-1 …"); dates are
given relative to a stated "today" (stated only then).

Medium and hard may add one aside after the request, at the same rate (so it does not tell the difficulty
apart): context the request does not need (who is away, what deadline, what just happened to these
records), chosen by the builder to fit the request's records and changes.

Texts written into a note, message subject or notification are always in quotes. Phrase banks are sized
so that no sentence appears in more than 5 % of one difficulty's queries (``bench/query_stats.py``
prints the most frequent one). Every value form emitted here is one that ``resolve.recoverable`` reads
back, and Gate 2 checks the rendered text, so a wording bug is caught, not shipped.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import re
import string
from typing import Any

from agentjudge.dataset import grammar, mentions, resolve
from agentjudge.dataset.domains import load_domain
from agentjudge.dataset.grammar import join, sentence
from agentjudge.dataset.plan import PlanStep, QueryPlan, Referent, Slot
from agentjudge.types import Difficulty

SHORT_WORDS = frozenset({"low", "new", "raw", "red", "off", "on", "yes", "no", "all", "any", "top"})
# how a person writes a word of a code value: acronyms upper-case, products and languages capitalised
# ("MFA bypass", "Salesforce", "Spanish"); values are read back case-blind, so the GT value is unchanged
ENUM_WORDS = {
    **{w: w.upper() for w in ("mfa", "usb", "tls", "nps", "csat", "dpa", "msa", "nda", "mro", "sim", "sap")},
    **{w: w.upper() for w in ("5gb", "20gb", "ce", "c1", "g1", "g2", "g3", "g4", "g5")},
    "github": "GitHub",
    **{w: w.capitalize() for w in ("jira", "salesforce", "workday")},
    **{w: w.capitalize() for w in ("english", "french", "german", "spanish")},
}
READS = ("search", "get", "list")


class RenderError(ValueError):
    """A plan that cannot be worded (a phrasing names a placeholder with no slot, a step with no referent)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _placeholders(phrasing: str) -> list[str]:
    """Placeholder names in order of appearance (a list: set order changes with PYTHONHASHSEED)."""
    return list(dict.fromkeys(name for _, name, _, _ in string.Formatter().parse(phrasing) if name))


def _strip_article(text: str) -> str:
    return re.sub(r"^(a|an|the)\s+", "", text.strip(), flags=re.IGNORECASE)


# ---------------------------------------------------------------- phrase banks
# Every fixed phrase is one of many, so none reaches 5 % of one difficulty's queries.

# no article before a bare role: "Procurement officer here.", never "A procurement officer here."
GREETINGS = (
    "Hi, {persona} here.",
    "Hello, this is {persona_a}.",
    "Hey there, {persona} speaking.",
    "Good morning, {persona} here.",
    "Quick one from {persona_a}.",
    "{persona_C} here.",
    "Hi, I'm {persona_a}.",
    "Hello, {persona} here with a request.",
    "Hey, {persona} here.",
    "Morning, {persona} here.",
    "Good afternoon, {persona} here.",
    "Hello, I'm {persona_a} and could use a hand.",
    "Hello, {persona} here.",
)
# Closings of four words or fewer may repeat; a longer one is a sentence a reader notices when it comes back,
# so the long ones are many and rare (bench/query_stats.py: no sentence of five or more words in more than
# 1 % of one difficulty's queries)
SHORT_CLOSINGS = (
    "Thanks!",
    "Thank you.",
    "Appreciate it.",
    "Thanks a lot.",
    "Many thanks.",
    "Cheers.",
    "Thanks in advance.",
    "That's all for now.",
    "Much appreciated.",
    "Thanks for handling this.",
    "I owe you one.",
    "Thanks so much.",
    "That's it from me.",
    "Cheers, and thanks.",
    "Happy to answer questions.",
    "That should be everything.",
    "Grateful for the help.",
    "Much obliged.",
    "Thanks heaps.",
    "Ta very much.",
    "Appreciate the help.",
    "Thanks for this.",
    "Cheers for that.",
)
LONG_CLOSINGS = (
    "Let me know once it's done.",
    "Ping me when that's finished.",
    "A quick confirmation afterwards would help.",
    "Please confirm when you're done.",
    "Let me know if anything looks off.",
    "Shout if something blocks you.",
    "Let me know how it goes.",
    "Send me a short note when it's done.",
    "Let me know if you need anything else from me.",
    "Ping me if anything is unclear.",
    "Thanks for sorting this out.",
    "Reply here once it's done.",
    "Thank you for your help.",
    "Give me a shout when it's sorted.",
    "A short reply when it's through would be great.",
    "Let me know if there's a problem with any of it.",
    "Drop me a line once that's in.",
    "Thanks, that would save me a lot of time.",
    "I'll look at how it went later on.",
    "Let me know if something doesn't add up.",
    "Flag anything that looks wrong to you.",
    "Tell me if you hit a snag.",
    "Thanks for picking this up so quickly.",
    "I'd be grateful for a quick confirmation.",
    "Say if you need more from me.",
    "Thanks, and let me know when it's finished.",
)
CLOSINGS = SHORT_CLOSINGS + LONG_CLOSINGS
ANCHORS = (  # each must be read back by resolve.find_anchor ("today is", "it's", "it is", "today's date is")
    "Today is {day}.",
    "For reference, today is {day}.",
    "Note that it's {day}.",
    "Today's date is {day}.",
    "Just so you know, today is {day}.",
    "Bear in mind it's {day}.",
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
EASY_FIRSTS = ("First", "To start", "To begin", "First of all", "Before anything else")
EASY_THENS = ("Then", "Next", "After that", "Once that's done", "Following that", "After this")
EASY_LASTS = ("Finally", "Lastly", "To finish", "Last of all", "To wrap up")
EASY_PROSE = ("Please ", "Could you ", "I'd like you to ", "Can you ", "I need you to ")
# medium: the goal, then what it needs behind a dependency cue (gates_semantic.BACKWARD_CUES reads each)
MEDIUM_GOALS = (
    "Please ",
    "I need you to ",
    "Could you ",
    "Can you ",
    "I'd like you to ",
    "The goal is to ",
    "What I'm after: ",
    "Would you ",
    "Go ahead and ",
    "",
    "",
)
MEDIUM_BEFORE = (
    "Before that, you'll need to ",
    "To do that, you'll first have to ",
    "For that, first ",
    "Before you can do that, ",
    "To get there, you'll have to ",
    "You'll need to do some groundwork first: ",
    "That means you'll first need to ",
    "Ahead of that, ",
)
MEDIUM_ONCE = ("once you've ", "after you've ", "as soon as you've ")
HARD_LEADS = (
    "Can you ",
    "I'd like you to ",
    "Please ",
    "Could you ",
    "Would you ",
    "Go ahead and ",
    "Kindly ",
    "I'm hoping you can ",
    "I need you to ",
    "",
)
# a third request: never a bare "And …", and no "then" (see _join_asks)
HARD_MORE = ("also, ", "in addition, ", "as well as that, ", "on top of that, ")
QUESTION_LEADS = ("Can you ", "Could you ", "Would you ", "Is it possible to ")
# the condition of optional_enrichment's extra step: said as a fact, never as one more request ("Also, …")
ABSENT_FORMS = ("{cond}.", "{cond}, by the way.", "Just so you know, {cond}.", "Note that {cond}.")
# the reason after the request it explains: its subject then refers back to a record the request introduced
HOLDS_FORMS = ("{ask}, since {cond}", "{ask}, as {cond}", "{ask}, because {cond}", "{ask}: {cond}")


# ---------------------------------------------------------------- the renderer


class _Renderer:
    """One query in the making: the RNG, the records named so far (and how), the values said so far."""

    def __init__(self, plan: QueryPlan, difficulty: Difficulty, rng: random.Random) -> None:
        self.plan = plan
        self.difficulty = difficulty
        self.rng = rng
        self.today = dt.date.fromisoformat(plan.reference_date[:10])
        self.refs: dict[str, Referent] = {r.key: r for r in plan.referents}
        self.mentioned: set[str] = set()
        self.focus: str | None = None  # the record the last clause was about ("its" points at it)
        # records last named through another one said after them ("the supplier on purchase order PO-1"):
        # the nearest noun is that other record, so "its" would not point at them
        self.trailing: set[str] = set()
        self.said: dict[str, str] = {}
        self.relative = False  # a date was said relative to today: the query must say what today is
        self.last_verb = ""
        nouns = [r.noun for r in plan.referents if r.how != "children"]
        self.shared = {n for n in nouns if nouns.count(n) > 1}

    # ------------------------------------------------------------ values

    def value(self, slot: Slot) -> str:
        """A user-supplied value in this difficulty's form; at hard a date or number said before becomes
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
            return join([self._format(item, kind) for item in value])
        if isinstance(value, dict):
            return join([self._format(item, kind) for item in value.values()])
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
        if kind == "enum":  # "postal mail", "one shift": a person does not type the underscore
            said = " ".join(ENUM_WORDS.get(w, w) for w in text.replace("_", " ").split(" "))
            # "follow-up", "de-energized": a prefix a person joins with a hyphen, not a space
            return re.sub(r"\b(de|non|pre) (?=\w)", r"\1-", said.replace("follow up", "follow-up"))
        return text

    def _number(self, value: float) -> str:
        if isinstance(value, float) and not value.is_integer():
            return f"{value:,}" if self.difficulty != "easy" else str(value)
        n = int(value)
        if self.difficulty == "easy" or n < 0:
            return str(n)
        words = resolve.number_to_words(n)
        if words and n <= (20 if self.difficulty == "medium" else 99) and self.rng.random() < 0.7:
            return words
        return f"{n:,}"

    def _date(self, date: dt.date) -> str:
        if self.difficulty == "easy":
            return date.isoformat()
        if self.difficulty == "medium":
            return resolve.format_date_long(date, with_weekday=self.rng.random() < 0.3)
        options = resolve.relative_phrases(date, self.today)
        if not options:
            return resolve.format_date_long(date)
        self.relative = True
        return REL_OPEN + self.rng.choice(options) + REL_CLOSE

    def date_attribute(self, noun: str, slot: Slot) -> str:
        """A dated attribute of a new record: "a needed-by date of March 3, 2026", "a needed-by date
        three days from today" (never "needed-by date in three days")."""
        said = self.value(slot)
        if said.startswith(REL_OPEN):
            phrase = said[1:-1]
            if phrase.startswith("in "):
                return f"{grammar.a(noun)} {REL_OPEN}{_from_today(phrase)}{REL_CLOSE}"
            if phrase.endswith(" ago"):
                return f"the {noun} set to {said}"
            if phrase.endswith(" from today"):
                return f"{grammar.a(noun)} {said}"
            return f"{grammar.a(noun)} of {said}"
        if said.startswith(("that same", "the same")):
            return f"{grammar.a(noun)} on {said}"
        return f"{grammar.a(noun)} of {said}"

    def slot(self, step: PlanStep, arg: str) -> Slot:
        for s in step.slots:
            if s.arg == arg:
                return s
        raise RenderError(f"step {step.step}: no slot {arg!r}")

    def query_slots(self, step: PlanStep) -> list[Slot]:
        return [s for s in step.slots if s.source == "query" and s.kind != "id"]

    # ------------------------------------------------------------ referring expressions

    def ref(self, key: str | None) -> Referent:
        if key is None or key not in self.refs:
            raise RenderError(f"no referent {key!r} in the plan")
        return self.refs[key]

    def np(self, key: str | None) -> str:
        """How the record is named here: introduced by its description the first time, briefly after."""
        r = self.ref(key)
        if r.key in self.mentioned and r.noun not in self.shared:
            self.trailing.discard(r.key)
            return self.short(r)
        text = self.intro(r)
        self.mentioned.add(r.key)
        return text

    def intro(self, r: Referent) -> str:
        rng = self.rng
        if r.how == "stated":
            return f"{r.noun} {r.value}"
        if r.how == "search":
            forms = list(r.phrases) or _search_forms(r)
            value = r.value if r.field_gen != "enum" else self._format(r.value, "enum")
            return rng.choice(forms).format(value=value, noun=r.noun, field=r.field_noun)
        if r.how == "relation":
            src = self.ref(r.source)
            if src.key in self.mentioned and src.noun not in self.shared:
                if self._pronoun_for(src):  # "flag the customer to their manager"
                    return f"{'their' if src.person else 'its'} {r.relation}"
                return f"{self.short(src)}'s {mentions.unrepeated(src.noun, r.relation)}"
            inner = self.np(src.key)
            if r.relation.lower() == r.noun.lower():  # "the customer on order ORD-1", "the owner of …"
                # "the customer on order ORD-1" (a record written on a document), "the production line
                # of machine MCH-1" (a machine is not a document: "the line on machine …" reverses them)
                on = src.how == "stated" and src.noun.split()[-1] in _DOCUMENTS
                self.trailing.add(r.key)
                return f"the {r.noun} {'on' if on else 'of'} {inner}"
            self.trailing.add(r.key)
            return f"the {r.relation} of {inner}"
        if r.how == "children":
            src = self.ref(r.source)
            inner = self.np(src.key)
            return rng.choice(
                [
                    f"every {r.noun} of {inner}",
                    f"all the {r.plural} linked to {inner}",
                    f"every {r.noun} linked to {inner}",
                ]
            )
        return grammar.a(f"new {r.noun}")  # created: named in the clause that makes it

    def short(self, r: Referent) -> str:
        if r.how == "relation" and not r.names_kind and r.relation.lower() != r.noun.lower():
            return f"the {r.relation}"
        if r.how == "relation":
            return f"the {r.relation}"
        if r.how == "children":
            return f"those {r.plural}"
        if r.how == "created":
            return f"the new {r.noun}"
        return f"the {r.noun}"

    def _pronoun_for(self, r: Referent) -> bool:
        """Whether "its" / "their" points at ``r``: it is the record the last clause was about, and it was
        not last named through another record said after it ("the supplier on purchase order PO-1 to its
        account buyer": the nearest noun is the order, which has a buyer of its own; "the supplier's
        account buyer" says which)."""
        return self.focus == r.key and r.how != "children" and r.key not in self.trailing

    def poss(self, key: str | None, head: str) -> str:
        """ "the employee's email" after the employee was named, "its email" when it is the focus, "the
        email of <description>" before."""
        r = self.ref(key)
        if r.key in self.mentioned and r.noun not in self.shared:
            if self._pronoun_for(r):
                return f"{'their' if r.person else 'its'} {head}"
            return f"{self.short(r)}'s {mentions.unrepeated(r.noun, head)}"
        return f"the {head} of {self.np(r.key)}"

    def each(self, key: str | None) -> str:
        """The records of a listed set, one by one: "each of those tickets" / "every ticket of …"."""
        r = self.ref(key)
        if r.key in self.mentioned:
            return self.rng.choice([f"each of those {r.plural}", f"every one of those {r.plural}"])
        return self.np(r.key)

    # ------------------------------------------------------------ clauses

    def verb(self, options: list[str]) -> str:
        """A look-up verb, not the one the last look-up used ("located the technician and then located
        the asset" reads as a template)."""
        fresh = [v for v in options if v != self.last_verb] or options
        self.last_verb = self.rng.choice(fresh)
        return self.last_verb

    def clause(self, step: PlanStep) -> str:
        """The imperative for one step (loop bodies once), naming its records as ``np`` decides."""
        rng = self.rng
        op = step.op
        text: str
        if op == "search":
            text = self.verb(["look up ", "find ", "locate "]) + self.np(step.yields)
        elif op == "get" and step.yields is None:
            # a read asked for its own sake is one the requester wants to see ("show me the subscriber's
            # details"), not a bare "check", which asks for a verdict with no criterion
            reads = [("pull up", "full record"), ("show me", "details"), ("open", "full record")]
            verb, head = rng.choice(reads)
            text = f"{verb} {self.poss(step.target, head)}"
        elif op == "get":
            rel = self.ref(step.yields)
            owner = self.ref(step.target)
            named = owner.key in self.mentioned and owner.noun not in self.shared
            about = self.poss(step.target, rel.relation)
            self.mentioned.add(rel.key)
            if not named:  # "the passenger of booking BKG-1": the booking is the nearest noun
                self.trailing.add(rel.key)
            text = self.verb(["look up ", "find "]) + about  # one finds out who, not "find out X"
        elif op == "list":
            text = self.verb(["list ", "pull up ", "find "]) + self.np(step.yields)
        elif op == "get_each":
            text = rng.choice(["pull up the full record of ", "open the record of "]) + self.each(step.target)
        elif op == "aggregate":
            set_ = self.np(step.target)
            field = step.field_noun
            forms = [f"add up the {field} of {set_}", f"work out the combined {field} of {set_}"]
            if "total" not in field:
                forms.append(f"work out the total {field} of {set_}")
            text = rng.choice(forms)
        elif op == "update":
            text = self._update(step)
        elif op == "annotate":
            note = f'"{self.slot(step, "note").value}"'
            where = self.each(step.target) if step.each else self.np(step.target)
            text = rng.choice(
                [
                    f"add a note to {where} saying {note}",
                    f"put the note {note} on {where}",
                    f"log a note on {where}: {note}",
                ]
            )
        elif op == "message":
            # a template is a name, quoted like any text the user picks ("the "ticket received" message")
            template = self.value(self.slot(step, "template"))
            channel = self.value(self.slot(step, "channel"))
            who = self.np(step.target)
            article = grammar.a(template).split(" ", 1)[0]
            forms = [
                f'send {who} the "{template}" message by {channel}',
                f'send {who} {article} "{template}" message via {channel}',
            ]
            if "post" not in channel and "mail" not in channel.replace("email", ""):  # one posts a letter
                forms.append(f'message {who} by {channel} using the "{template}" template')
            text = rng.choice(forms)
        elif op == "notify":
            text = self._notify(step)
        elif op == "create":
            text = self._create(step)
        elif op == "assign":
            text = self._assign(step)
        else:  # pragma: no cover - Op is a closed Literal
            raise RenderError(f"step {step.step}: unknown op {op!r}")
        if op in ("list", "get", "get_each", "aggregate"):  # a filter the user gives ("open orders only")
            extra = [f"{_strip_article(x.noun)} {self.value(x)}" for x in self.query_slots(step)]
            text += f" with {join(extra)}" if extra else ""
        # "its" points at the record the clause was about; after a listing the nearest noun is the parent
        # while the clause was about its children, so nothing is in focus
        # a relation just looked up is the nearest noun: "find the job's production line and then look up
        # its line supervisor"
        found_here = op in ("search", "create") or (op == "get" and step.yields is not None)
        self.focus = step.yields if found_here else None if op == "list" else step.target
        return text

    def _update(self, step: PlanStep) -> str:
        slot = next(iter(self.query_slots(step)), None)
        if slot is None:
            raise RenderError(f"step {step.step}: an update with no value")
        field = step.field_noun
        said = self.value(slot)
        if (m := re.match(r"(.+) in (\w+)$", field)) is not None and slot.kind == "number":
            field, said = m.group(1), f"{said} {m.group(2)}"  # "set the load limit … to 10 MW"
        if step.each:
            where = self.each(step.target)
            return self.rng.choice(
                [
                    f"set the {field} of {where} to {said}",
                    f"change the {field} of {where} to {said}",
                    f"update {where} so the {field} {grammar.be(field)} set to {said}",
                ]
            )
        whose = self.poss(step.target, field)
        return self.rng.choice(
            [
                f"set {whose} to {said}",
                f"change {whose} to {said}",
                f"update {whose} to {said}",
                f"make sure {whose} {grammar.be(field)} set to {said}",
            ]
        )

    def _notify(self, step: PlanStep) -> str:
        subject = f'"{self.slot(step, "subject").value}"'
        about_key = step.about[0] if step.about else None
        target = self.refs.get(step.target or "")
        about_ref = self.refs.get(about_key or "")
        # the recipient is a relation ("the customer's success manager") of the record the notification is
        # about, or of the parent of the set it is about: name that record first and the recipient by
        # "their …" / "its …", never "… of the customer about the customer"
        owner = target.source if target is not None and target.how == "relation" else None
        of_about = (
            owner is not None
            and owner == about_key
            and target is not None
            and target.key not in self.mentioned
        )
        of_set = (
            owner is not None
            and about_ref is not None
            and about_ref.how == "children"
            and about_ref.source == owner
        )
        first_about = about_key is not None and _found_before(self.plan, about_key, step.target, self.refs)
        if first_about or of_about:
            about = self.np(about_key)
            self.focus = owner if of_about or of_set else None
            who = self.np(step.target)
            return self.rng.choice(
                [
                    f"send a notification titled {subject} about {about} to {who}",
                    f"flag {about} to {who} in a notification titled {subject}",
                ]
            )
        who = self.np(step.target)
        about = self.np(about_key) if about_key else "it"
        return self.rng.choice(
            [
                f"notify {who} about {about}, with the subject {subject}",  # the comma: not {about}'s subject
                f"send {who} a notification titled {subject} about {about}",
            ]
        )

    def _create(self, step: PlanStep) -> str:
        r = self.ref(step.yields)
        links = sorted(step.about, key=lambda k: _found_at(self.refs.get(k)))
        preps = _link_prepositions(self.plan.domain, r.noun) if len(links) > 1 else {}
        # "a booking for the passenger … on the flight …"; one link: "for …"
        for_ = " ".join(f"{preps.get(self.ref(k).noun, 'for')} {self.np(k)}" for k in links)
        attrs = []
        for s in self.query_slots(step):
            noun = _strip_article(s.noun)
            if s.kind == "date":
                attrs.append(self.date_attribute(noun, s))
            elif s.kind == "text" and " " in str(s.value).strip():  # a text the user dictates: quoted
                attrs.append(f'the {noun} "{s.value}"')
            elif s.kind == "number":  # "2,455 customers affected", "a weight of 12 kg", "a quantity of 388"
                attrs.append(_amount(noun, self.value(s), s.value))
            else:  # "the urgency set to urgent", never the form-field "urgency urgent"
                attrs.append(f"the {noun} set to {self.value(s)}")
        self.mentioned.add(r.key)
        verbs = ["create ", "open ", "set up "]
        if r.noun.split()[-1] in _RAISED:  # one raises a ticket or a request, not a survey or an audit
            verbs.append("raise ")
        verb = self.rng.choice(verbs)
        new = grammar.a(f"new {r.noun}") if verb != "raise " else grammar.a(r.noun)
        body = f"{verb}{new}" + (f" {for_}" if for_ else "")
        if attrs:  # after "for <description>" a comma keeps "with" on the new record, not the description
            body += ("," if for_ else "") + f" with {join(attrs)}"
        return body

    def _assign(self, step: PlanStep) -> str:
        who_key = step.about[0] if step.about else None
        if who_key is not None and _found_before(self.plan, who_key, step.target, self.refs):
            who = self.np(who_key)
            what = self.np(step.target)
            return f"make {who} the {step.field_noun} of {what}"
        what = self.np(step.target)
        who = self.np(who_key)
        return self.rng.choice([f"assign {what} to {who}", f"hand {what} over to {who}"])


@functools.cache
def _link_prepositions(domain: str, noun: str) -> dict[str, str]:
    """The domain's prepositions for the records a new ``noun`` links (its create tool's ``links``), by the
    linked records' nouns."""
    if not domain:
        return {}
    dom = load_domain(domain)
    for tool in dom.tools:
        if tool.op == "create" and dom.entities[tool.entity].noun == noun and tool.links:
            return {dom.entities[kind].noun: prep for kind, prep in tool.links.items()}
    return {}


def _found_at(r: Referent | None) -> int:
    return -1 if r is None or r.step is None else r.step


def _found_before(plan: QueryPlan, a: str, b: str | None, refs: dict[str, Referent]) -> bool:
    """Whether record ``a`` is found by an earlier step than record ``b`` and independently of it (two
    branches of a fan-in): then a query that names both must name ``a`` first, as the GT finds it first."""
    ra, rb = refs.get(a), refs.get(b or "")
    if not (ra and rb and ra.step is not None and rb.step is not None and ra.step < rb.step):
        return False
    deps = {
        p.step: {x.from_step for x in p.slots if x.source == "step" and x.from_step is not None}
        for p in plan.steps
    }
    seen, todo = set(), [rb.step]
    while todo:  # does b's finder depend on a's?
        for u in deps.get(todo.pop(), set()):
            if u not in seen:
                seen.add(u)
                todo.append(u)
    return ra.step not in seen


def _search_forms(r: Referent) -> list[str]:
    """Generic ways to name a record by a field value, per kind of value."""
    if r.field_gen == "email":
        return ["the {noun} with email address {value}", "the {noun} whose email address is {value}"]
    if r.field_gen == "person":
        return ["the {noun} named {value}", "the {noun} {value}", "our {noun} {value}"]
    if r.field_gen == "phone":
        return ["the {noun} with phone number {value}", "the {noun} whose phone number is {value}"]
    field = r.field_noun
    if str(r.value).lower().startswith(field.lower() + "-"):  # "the part SKU-9239", not "with SKU SKU-9239"
        return ["the {noun} {value}"]
    if field.lower().startswith(r.noun.lower() + " "):  # the machine's "machine asset code": "its asset code"
        own = field[len(r.noun) + 1 :]
        return [
            "the {noun} with " + own + " {value}",
            "the {noun} whose " + own + " " + grammar.be(own) + " {value}",
        ]
    return [
        "the {noun} with {field} {value}",
        "the {noun} whose {field} " + grammar.be(field) + " {value}",
        "the {noun} with the {field} {value}",
    ]


_UNITS = frozenset({"minutes", "hours", "days", "weeks"})
_DOCUMENTS = frozenset(
    {"order", "booking", "appointment", "ticket", "case", "claim", "job", "shipment", "payment", "request"}
    | {"policy", "invoice", "contract", "matter", "alert", "incident", "reservation", "report", "pickup"}
)
_RAISED = frozenset({"ticket", "incident", "request", "case", "claim", "alert", "complaint", "requisition"})


def _amount(noun: str, said: str, value: Any) -> str:
    """A number said with its field the way a person says an amount, never "number of days 5"."""
    one = _is_number(value) and float(value) == 1

    def count(words: str) -> str:
        first, _, rest = words.partition(" ")
        return f"{said} {grammar.singular(first) if one else first}" + (f" {rest}" if rest else "")

    if (m := re.match(r"number of (.+)", noun)) is not None:  # "number of customers affected"
        if m.group(1) in _UNITS:  # a length of time, never a bare "and 12 days" among other attributes
            return f"a duration of {count(m.group(1))}"
        return count(m.group(1))
    if (m := re.match(r"(.+) in (\w+)$", noun)) is not None:  # "weight in kg", "duration in minutes"
        unit = m.group(2)
        return f"{grammar.a(m.group(1))} of {said} {grammar.singular(unit) if one else unit}"
    if noun.split()[0] in _UNITS:  # "minutes lost", "hours logged"
        return count(noun)
    return f"{grammar.a(noun)} of {said}"


def _from_today(phrase: str) -> str:
    """ "in three days" → "three days from today", "in a week" → "a week from today"."""
    return phrase[3:] + " from today"


# ---------------------------------------------------------------- which steps are said


def _merge_loops(plan: QueryPlan) -> list[PlanStep]:
    """loop_like unrolls one request per item; say it once (consecutive steps on the same set)."""
    merged: list[PlanStep] = []
    for step in plan.steps:
        if (
            merged
            and step.each
            and merged[-1].each
            and merged[-1].target == step.target
            and merged[-1].op == step.op
        ):
            continue
        merged.append(step)
    return merged


def _needed(plan: QueryPlan, step: PlanStep) -> bool:
    """A look-up is needed when a later step takes from its output a value the user does not state."""
    stated = {repr(s.value) for p in plan.steps for s in p.slots if s.source == "query"}
    return any(
        slot.source == "step" and slot.from_step == step.step and repr(slot.value) not in stated
        for other in plan.steps
        for slot in other.slots
    )


def _lookup(plan: QueryPlan, step: PlanStep) -> bool:
    """A read whose result the request needs: a hard query leaves it to the reader (unless the user has a
    value of their own to give it, such as a filter, which only a request for the read can carry)."""
    own = [s for s in step.slots if s.source == "query" and s.kind != "id" and step.op != "search"]
    return step.op in READS and not step.conditional and _needed(plan, step) and not own


# ---------------------------------------------------------------- context sentences


def _persona_forms(plan: QueryPlan) -> dict[str, str]:
    persona_a = plan.persona.strip()
    persona = _strip_article(persona_a)
    return {
        "persona": persona,
        "persona_a": persona_a,
        "persona_C": persona[:1].upper() + persona[1:],
    }


def _opening(plan: QueryPlan, r: _Renderer) -> list[str]:
    """Who is asking and what is going on: greeting (with the persona) first, then the scenario (each
    only when the request has one: a role whose work every change is, a scenario about one of them)."""
    scenario = sentence(plan.scenario) if plan.scenario.strip() else ""
    if r.rng.random() < 0.45 or not plan.persona.strip():
        return [scenario] if scenario else []
    return [x for x in (r.rng.choice(GREETINGS).format(**_persona_forms(plan)), scenario) if x]


def _anchor(r: _Renderer) -> str:
    day = resolve.format_date_long(r.today, with_weekday=True)
    return r.rng.choice(ANCHORS).format(day=day)


def _closing(r: _Renderer) -> str:
    draw = r.rng.random()
    if draw < 0.3:
        return ""
    return r.rng.choice(SHORT_CLOSINGS if draw < 0.88 else LONG_CLOSINGS)


ASIDE_RATE = 0.35  # medium and hard alike: an aside must not tell the difficulty apart


def _aside(plan: QueryPlan, r: _Renderer) -> str:
    """Context for the request, after it (it may speak of "the passenger" the request introduced)."""
    asides = [a for a in plan.asides if a.strip()]
    if not asides or r.rng.random() >= ASIDE_RATE:
        return ""
    return sentence(r.rng.choice(asides))


def _reason_adds(plan: QueryPlan, step: PlanStep) -> bool:
    """Whether the condition says more than the text the step writes or the template it sends. It does
    not when half the written words are in it: "the consignee is closed on Fridays" repeats the note
    "consignee closed on Fridays", "we are waiting on a reply" the "awaiting user reply" message, "the
    owner has to take action" the "action required" one. A reason left out costs nothing (the quoted text
    says what is sent); a reason that repeats it reads as machine text."""
    cond = _content_words(plan.condition_text or "")
    written = " ".join(
        str(s.value) for s in step.slots if s.source == "query" and (s.kind == "text" or s.arg == "template")
    )
    words = _content_words(written.replace("_", " "))
    said = [w for w in words if any(_same_word(w, c) for c in cond)]
    return not words or len(said) / len(words) < 0.5


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP}


def _same_word(a: str, b: str) -> bool:
    """One word up to inflection or prefix: "update"/"updated", "waiting"/"awaiting", "action"/"actions"."""
    return a[:5] == b[:5] or (min(len(a), len(b)) >= 4 and (a in b or b in a))


_STOP = frozenset(
    {
        "the",
        "a",
        "an",
        "is",
        "are",
        "has",
        "have",
        "was",
        "to",
        "of",
        "on",
        "at",
        "for",
        "and",
        "by",
        "in",
        "any",
        "be",
        "been",
        "their",
        "they",
        "we",
        "our",
        "it",
    }
)


def _condition(plan: QueryPlan, r: _Renderer) -> str:
    """The condition with the record it speaks of named as the request names it: the domain writes "the
    employee wants …", and when the request introduced that employee only as "the owner of the asset …",
    "the employee" would point at nobody, so it becomes "the owner". Said after the request introduced it."""
    cond = (plan.condition_text or "").strip().rstrip(".")
    ref = r.refs.get(plan.condition_about or "")
    if not cond or ref is None or ref.key not in r.mentioned or ref.how == "children":
        return cond
    short = r.short(ref)
    if short == f"the {ref.noun}":
        return cond
    return re.sub(rf"\bthe {re.escape(ref.noun)}(?![\w-])", short, cond)


def _conditional(plan: QueryPlan, r: _Renderer, step: PlanStep, ask: str) -> str:
    """optional_enrichment's extra step with the condition that asks for it, the reason after the request
    (a reason that only repeats the note or the template is left out: the quoted text says it)."""
    cond = _condition(plan, r)
    if not cond or not _reason_adds(plan, step):
        return ask
    return r.rng.choice(HOLDS_FORMS).format(cond=cond, ask=ask)


def _absent(plan: QueryPlan, r: _Renderer) -> str | None:
    """optional_enrichment whose condition does not hold: the query says so (every difficulty), as a
    fact after the request, never as a further request."""
    if not plan.condition_text or any(s.conditional for s in plan.steps):
        return None
    return sentence(r.rng.choice(ABSENT_FORMS).format(cond=_condition(plan, r)))


# ---------------------------------------------------------------- the three difficulties


def _render_easy(plan: QueryPlan, r: _Renderer) -> str:
    clauses = []
    for step in _merge_loops(plan):
        clause = r.clause(step)
        clauses.append(_conditional(plan, r, step, clause) if step.conditional else clause)
    style = r.rng.randrange(4)
    if style == 0:
        body = (
            r.rng.choice(EASY_LEADS)
            + " "
            + " ".join(f"{i + 1}) {sentence(c)}" for i, c in enumerate(clauses))
        )
    elif style == 1:
        body = " ".join(f"Step {i + 1}: {sentence(c)}" for i, c in enumerate(clauses))
    elif style == 2 or len(clauses) > 3:
        parts = [f"{r.rng.choice(EASY_FIRSTS)}, {clauses[0]}"]
        parts += [f"{r.rng.choice(EASY_THENS)}, {c}" for c in clauses[1:-1]]
        if len(clauses) > 1:
            parts.append(f"{r.rng.choice(EASY_LASTS)}, {clauses[-1]}")
        body = " ".join(sentence(p) for p in parts)
    else:
        lead = r.rng.choice(EASY_PROSE)
        body = lead + join(clauses[:-1], ",") + (", and then " if len(clauses) > 1 else "") + clauses[-1]
        body = sentence(body + ("?" if lead in ("Could you ", "Can you ") else ""))
    parts = [*_opening(plan, r), body, _absent(plan, r) or "", _closing(r)]
    return " ".join(p for p in parts if p)


def _join_asks(asks: list[str]) -> str:
    """Requests in one sentence: "a and b", but "a with x and y, and b" when a request has an "and" of its
    own (a run of "and … and send …" hides where one request ends). Never "and then": a look-up the
    reader is left to do may come first in the GT, and "then" would state an order it breaks."""
    if len(asks) > 1 and any(" and " in a for a in asks):
        return ", ".join(asks[:-1]) + ", and " + asks[-1]
    return join(asks)


def _split(plan: QueryPlan, steps: list[PlanStep]) -> int:
    """Where the goal starts: after the look-ups the GT does first (at least one, and a goal left)."""
    k = 0
    while k < len(steps) - 1 and steps[k].op in READS and _needed(plan, steps[k]):
        k += 1
    return k


def _render_medium(plan: QueryPlan, r: _Renderer) -> str:
    steps = _merge_loops(plan)
    k = _split(plan, steps)
    if k == 0:  # nothing to put behind a dependency cue: goal-first is the only reordering (rare)
        k = 1
    prereqs, goals = steps[:k], steps[k:]
    # the goal names its records by description, so it introduces them; the look-ups then refer back
    plain = [s for s in goals if not s.conditional] or goals[:1]
    goal_clauses = [_conditional(plan, r, s, r.clause(s)) if s.conditional else r.clause(s) for s in plain]
    lead = r.rng.choice(MEDIUM_GOALS)
    goal = lead + _join_asks(goal_clauses)
    before = [r.clause(step) for step in prereqs]
    extra = [sentence(_conditional(plan, r, s, r.clause(s))) for s in goals if s not in plain]
    # "…, once you've …" only after one short request: after a long one the first step comes last
    if (
        len(goal_clauses) == 1
        and len(goal.split()) <= 24
        and r.rng.random() < 0.35
        and all(b.split()[0] in ("look", "find", "locate", "pull", "list", "check", "open") for b in before)
    ):
        try:
            done = join([grammar.participle(b) for b in before], "and then")
            body = sentence(
                goal.rstrip("?")
                + ", "
                + r.rng.choice(MEDIUM_ONCE)
                + done
                + ("?" if lead in QUESTION_LEADS else "")
            )
        except KeyError:
            body = ""
    else:
        body = ""
    if not body:
        # "groundwork" is more than one look-up
        cue = r.rng.choice([c for c in MEDIUM_BEFORE if len(before) > 1 or "groundwork" not in c])
        body = (
            sentence(goal + ("?" if lead in QUESTION_LEADS else ""))
            + " "
            + sentence(cue + join(before, "and then"))
        )
    parts = [*_opening(plan, r), body, *extra, _absent(plan, r) or "", _aside(plan, r), _closing(r)]
    return " ".join(p for p in parts if p)


def _render_hard(plan: QueryPlan, r: _Renderer) -> str:
    asks = []
    for step in _merge_loops(plan):
        if _lookup(plan, step):
            continue  # the reader works it out from the description the goal gives
        clause = r.clause(step)
        asks.append((step, clause))
    sentences: list[str] = []
    plain = [c for s, c in asks if not s.conditional]
    extra = [(s, c) for s, c in asks if s.conditional]
    if plain:
        lead = r.rng.choice(HARD_LEADS)
        first = plain[:2] if len(plain) > 2 else plain
        sentences.append(sentence(lead + _join_asks(first) + ("?" if lead in QUESTION_LEADS else "")))
        if len(plain) > 2:
            sentences.append(sentence(r.rng.choice(HARD_MORE) + _join_asks(plain[2:])))
    for step, clause in extra:
        sentences.append(sentence(_conditional(plan, r, step, clause)))
    if (note := _absent(plan, r)) is not None:
        sentences.append(note)
    context = _opening(plan, r)
    if r.relative:  # a date said relative to today: say what today is, after the greeting and scenario
        context.append(_anchor(r))
    sentences.append(_aside(plan, r))
    return " ".join(x for x in (*context, *sentences, _closing(r)) if x)


def render_queries(plan: QueryPlan, seed: int) -> dict[Difficulty, str]:
    """The three queries of one plan. Same (plan, seed) → same text; another seed → other wording."""
    if not plan.referents:
        raise RenderError("the plan names no records (build it with build_scenario)")
    keys = {r.key for r in plan.referents}
    for step in plan.steps:
        for key in [step.target, step.yields, *step.about]:
            if key is not None and key not in keys:
                raise RenderError(
                    f"step {step.step} ({step.op}) is about {key!r}, a record the plan does not name"
                )
    out: dict[Difficulty, str] = {}
    for d, render in (("easy", _render_easy), ("medium", _render_medium), ("hard", _render_hard)):
        text = render(plan, _Renderer(plan, d, random.Random(f"{seed}:{d}")))  # type: ignore[arg-type]
        out[d] = _resolve_references(plan, _tidy(text))  # type: ignore[index]
    return out


def _resolve_references(plan: QueryPlan, text: str) -> str:
    """ "that X" / "those Xs" said before any X was introduced becomes "the X" / "the Xs" (a safety net:
    the realiser introduces before it refers)."""
    if not plan.domain:
        return text
    voc = mentions.vocab(plan.domain)
    values = [
        str(x.value)
        for p in plan.steps
        for x in p.slots
        if x.source == "query" and isinstance(x.value, str) and (" " in x.value or "_" in x.value)
    ]
    spans = [plan.scenario, *plan.asides, plan.persona, plan.condition_text or ""]
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
# subject "please review today".
REL_OPEN, REL_CLOSE = "\x02", "\x03"
_ON_RELATIVE = re.compile(r"\b(?:on|for) (?=\x02(?!this coming))")
_A_AN = re.compile(r"\b([Aa])(?= (?:(?!one\b|once\b)[aeioAEIO][a-z]|u(?:p|rg|nder|n(?!i))[a-z]))")
_TO_IN = re.compile(r"\b(to|by|until|before|is|are) \x02in (a|\w+(?:-\w+)?) (days?|weeks?)\x03")


def _tidy(text: str) -> str:
    """Whitespace, punctuation spacing, and "to in three days" → "to three days from today"."""
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
    text = re.sub(r"\?\.", "?", text)
    return re.sub(r"\.\.+", ".", text)
