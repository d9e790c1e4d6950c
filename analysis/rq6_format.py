"""RQ6: structured JSON prompt with rubric vs free-form prompt. Paired deltas JSON − free-form (the published
direction: a positive delta means the JSON prompt aligns better), whichever is the run's baseline variant.

Note: the free-form variant returns continuous verdicts, so it is not bound by the three-level ceiling.
"""

from __future__ import annotations

from agentjudge.analysis._context import Context, Section

from ._common import variant_advice, variant_section


def analyze(ctx: Context) -> Section:
    sec = variant_section(
        ctx,
        "rq6",
        "RQ6: prompt format (JSON vs free-form)",
        "prompt_format",
        lacking="RQ6: this run has one prompt format; " + variant_advice("prompt_format"),
        explain="Alignment with the structured JSON prompt minus the free-form prompt (JSON − free-form: "
        "positive = JSON aligns better), paired bootstrap CI. "
        "Free-form verdicts are continuous (clamped to [0,1]), so they are not capped by the three-level "
        "ceiling. Published: JSON is the largest lever (+4.8 to +6.5 pp) but can reverse.",
        first="json",
    )
    return sec
