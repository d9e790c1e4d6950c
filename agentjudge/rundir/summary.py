"""RUNDIR/run_summary.json: per model what the last invocation did and the requests over all of them, and
every failed unit with why it failed (written by ``runner/summary.py``'s ``run_summary`` at each export)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentjudge.types import Strict

SUMMARY_FILE = "run_summary.json"


class ThisInvocation(Strict):
    done: int = Field(ge=0)
    failed: int = Field(ge=0)
    calls: int = Field(ge=0)
    requests: int = Field(ge=0)  # HTTP requests sent, retries included (in-process models send none)
    retries_by_kind: dict[str, int]


class AllInvocations(Strict):
    requests: int = Field(ge=0)
    retries_by_kind: dict[str, int]


class ModelSummary(Strict):
    role: Literal["generator", "judge"]
    kind: str  # ``registry.model_strings.model_kind``
    this_invocation: ThisInvocation
    all_invocations: AllInvocations
    failed_units: int = Field(ge=0)


class FailedUnit(Strict):
    """A unit stored as failed: its coordinates (empty judge coordinates of a predict unit as null), why,
    the requests of its last run (null when not a model call's failure) and the invocations that ran it."""

    model: str
    stage: Literal["predict", "judge"]
    record_id: str
    generator: str
    generator_trial: int
    judge: str | None
    condition: str | None
    variant: str | None
    temperature: str | None  # the store's text form: "default" or the value's repr
    trial: int
    reason: str  # ``models.failures`` reason: auth, connection, rate_limit, server, timeout, parse, ...
    # the failure's kind (``ModelCallError.kind``, ``parse_error``, ...; null when none was named); absent
    # from a run_summary.json written before it was kept
    kind: str | None = None
    attempts: int | None
    runs: int
    error: str  # the stored error, cut at 300 characters


class RunSummary(Strict):
    per_model: dict[str, ModelSummary]
    failed_units: list[FailedUnit]
