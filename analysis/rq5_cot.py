"""RQ5: does chain-of-thought (or thinking) change alignment? Paired deltas CoT on − off."""

from __future__ import annotations

from agentjudge.analysis._context import Context, Section

from ._common import variant_advice, variant_section


def analyze(ctx: Context) -> Section:
    return variant_section(
        ctx,
        "rq5",
        "RQ5: chain-of-thought",
        "cot",
        lacking="RQ5: this run has one chain-of-thought setting; " + variant_advice("cot"),
        explain="Alignment with chain-of-thought minus without, same judges and scenarios, paired "
        "bootstrap CI. "
        "Published: +0.11 pp on average.",
    )
