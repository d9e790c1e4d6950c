"""The seam between *what* a scenario asks for and *how* it is said.

The builder (``build.py``) decides tools, state and the executed GT trace, and describes the request as a
``QueryPlan``: per GT step an intent with alternative phrasings and the argument values the user must
supply. The rewriter (``rewrite.py``) renders a plan into easy/medium/hard queries. Gate 2 checks the
rendered text, not the plan, so an LLM rewrite is checked the same way as a deterministic one.
"""

from __future__ import annotations

from typing import Any, Literal

from agentjudge.types import Strict


class Slot(Strict):
    """One argument value of one GT step and where the user's request has to supply it from."""

    arg: str
    value: Any
    source: Literal["query", "step"]  # "step": produced by an earlier call's output
    from_step: int | None = None
    noun: str  # how a person names it: "the customer's email", "the maintenance window start"
    kind: Literal["text", "id", "number", "date", "enum", "bool", "list"] = "text"


class Relation(Strict):
    """A look-up that follows a reference: the employee's (``source``) desk-side technician (``noun``), a
    technician (``target``). A hard query that leaves the look-up implicit still names the relation, so
    the one right recipient is the one the query describes."""

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
    phrasings: list[str]  # alternative imperative phrasings with {arg} placeholders, e.g. "look up {email}"
    slots: list[Slot]
    conditional: bool = False  # optional_enrichment's extra step
    relation: Relation | None = None
    listing: Listing | None = None
    # phrasings without the stated id, for a hard query that states the id as a fact ("Case CAS-1 is the
    # one.") and then asks "check that case's details"
    fact_phrasings: list[str] = []


class QueryPlan(Strict):
    domain: str = ""  # slug: the rewriter reads its own text with the domain's nouns (``mentions``)
    domain_title: str
    persona: str  # who is asking: "a service-desk lead"
    scenario: str  # one or two sentences of context
    reference_date: str  # ISO date "today" for the request; hard queries may express dates relative to it
    steps: list[PlanStep]
    # optional_enrichment: the condition as said to the user, and whether it holds in this record
    condition_text: str | None = None
    condition_holds: bool | None = None
    distractors: list[str] = []  # true but irrelevant details a hard query may add
