"""The seam between *what* a scenario asks for and *how* it is said.

The builder (``scenario.py``) decides tools, state and the executed GT trace, and describes the request as a
``QueryPlan``: the records the request is about (``Referent``: how the person knows each one — a value
they can search by, an id they quote, a relation of another record, the children of one, a record made
on the way) and per GT step what is done to which of them, with the argument values the user must supply.
The realiser (``realiser.py``) renders a plan into easy/medium/hard queries. Gate 2 checks the rendered
text, not the plan, so an LLM rewrite is checked the same way as a deterministic one.
"""

from __future__ import annotations

from typing import Any, Literal

from agentjudge.types import Strict

Op = Literal[
    "search",
    "get",
    "list",
    "update",
    "assign",
    "create",
    "notify",
    "annotate",
    "message",
    "aggregate",
    "get_each",
]


class Slot(Strict):
    """One argument value of one GT step and where the user's request has to supply it from."""

    arg: str
    value: Any
    source: Literal["query", "step"]  # "step": produced by an earlier call's output
    from_step: int | None = None
    noun: str  # how a person names it: "the customer's email", "the maintenance window start"
    kind: Literal["text", "id", "number", "date", "enum", "bool", "list"] = "text"


class Referent(Strict):
    """A record (or a set of records) the request is about, and how the person knows it.

    ``how``: ``search`` — by a value of one of its fields (``field_noun``/``value``: "the employee with
    email address x"); ``stated`` — by its id, which the person quotes ("order ORD-1"); ``relation`` — as
    ``source``'s ``relation`` ("the customer's personal shopper"); ``children`` — every record of its kind
    that points at ``source`` ("every work order of the substation"); ``created`` — made by a step of the
    request ("the new access request")."""

    key: str
    noun: str
    plural: str
    how: Literal["search", "stated", "relation", "children", "created"]
    step: int | None = None  # the GT step that finds, lists or makes it (None: stated)
    value: Any = None
    field_noun: str = ""
    field_gen: str = ""
    phrases: list[str] = []  # the domain's own ways to name a record by this field ("the {value} substation")
    source: str | None = None
    relation: str = ""
    names_kind: bool = False  # the relation noun says the kind ("desk-side technician" is a technician)
    person: bool = False  # a person ("their line manager"), not a thing ("its line code")


class Relation(Strict):
    """A look-up that follows a reference: the employee's (``source``) desk-side technician (``noun``), a
    technician (``target``)."""

    source: str
    noun: str
    target: str


class Listing(Strict):
    """A look-up that lists a record's children: every ticket (``child``/``plural``) of the employee."""

    child: str
    plural: str
    parent: str


class PlanStep(Strict):
    step: int  # index into Record.gt
    phrasings: list[str]  # plain imperative phrasings with {arg} placeholders (the GT step description)
    slots: list[Slot]
    conditional: bool = False  # optional_enrichment's extra step
    relation: Relation | None = None
    listing: Listing | None = None
    # what the step does to which referent (the realiser's input)
    op: Op = "get"
    target: str | None = None  # the referent acted on (a set for list-wide ops)
    yields: str | None = None  # the referent it finds, lists or makes
    about: list[str] = []  # notify: the referents the notification is about; create: the records it links
    field_noun: str = ""  # update / aggregate / assign: the field's noun
    field_gen: str = ""
    each: bool = False  # loop_like's body: once per listed record


class QueryPlan(Strict):
    domain: str = ""  # slug: the realiser reads its own text with the domain's nouns (``mentions``)
    domain_title: str
    persona: str  # who is asking: "a service-desk lead" ("": no role of the domain makes every change)
    scenario: str  # a sentence of context about the request's changes ("": none fits)
    reference_date: str  # ISO date "today" for the request; hard queries may express dates relative to it
    steps: list[PlanStep]
    referents: list[Referent] = []
    # optional_enrichment: the condition as said to the user, and whether it holds in this record
    condition_text: str | None = None
    condition_holds: bool | None = None
    # the record the condition speaks of (its subject: "the employee wants …"), so the query can call it
    # what the request calls it ("the owner", when only "the owner of the asset" was introduced)
    condition_about: str | None = None
    # context for the request a medium or hard query may add after it (who is away, what deadline, what
    # just happened to these records): it changes nothing an agent must do
    asides: list[str] = []
