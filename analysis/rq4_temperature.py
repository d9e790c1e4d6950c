"""RQ4: does the judge's sampling temperature move alignment? Paired deltas vs the baseline temperature."""

from __future__ import annotations

from agentjudge.analysis._context import Context, Section

from ._common import variant_section


def analyze(ctx: Context) -> Section:
    return variant_section(
        ctx,
        "rq4",
        "RQ4: judge temperature",
        "temperature",
        lacking="RQ4: this run has one temperature; add temperatures: [0.3, 0.7, 1.0] to the pipeline.",
        explain="Alignment at each temperature minus alignment at the baseline temperature ('model "
        "default' = no temperature sent), same judges and scenarios, paired bootstrap CI. "
        "Published: ≤0.6 pp.",
    )
