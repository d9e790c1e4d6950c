"""Against people (§8 human validation, §11): when people have labelled the run (``agentjudge label``), how
the programmatic reference and every judge agree with them.

The reference against people per metric and topology is the paper's human check (there: 92.7 % overall,
parameter structure lowest at 82.5 %, one annotator who saw the GT and the scores); a judge's alignment is
best read against it. Each judge against people is estimated two ways over every output it graded: the
direct mean over the labelled outputs and the prediction-powered one (PPI++), which uses the judge's
agreement with the reference on every output as a proxy and the labels to correct it; both weight the
designed sample's labels by 1/π, since the sample holds imperfect outputs far above their share. Where the
outputs have no reference (a run imported without expected calls), the judges can only be checked
directly, and the agent's own score is estimated from people's labels with the judges' verdicts as proxy.

The figures are ``analysis._people``'s, the same ``agentjudge human-agree`` writes to RUNDIR/human/.
"""

from __future__ import annotations

import math

import pandas as pd
from agentjudge.analysis import _people
from agentjudge.analysis._context import Context, Section, fmt_ci, fmt_pct
from agentjudge.analysis._figures import grouped_bars

from agentjudge.stats.people import POOLED

TARGET = 0.03  # the label budget's half-width: ±3 pp, as human-agree's default
PUBLISHED = (
    "92.7 % overall, parameter structure lowest at 82.5 % (one annotator who saw the GT and the scores)"
)


def analyze(ctx: Context) -> Section:
    sec = Section(key="against_people", title="Against people")
    data = _people.load(ctx.rundir)
    if data is None:
        sec.lacking = (
            "Against people: n/a — nobody has labelled this run (`agentjudge label RUNDIR --annotator NAME`)."
        )
        return sec
    resamples, seed = ctx.boot.resamples, ctx.boot.seed
    sec.text.extend(_people.describe(data))
    _reference(ctx, sec, data, resamples, seed)
    _judges(ctx, sec, data, resamples, seed)
    _agent(ctx, sec, data, resamples, seed)
    pairs = _people.annotators(data, resamples, seed)
    if not pairs.empty:
        sec.tables["people_annotators"] = pairs
        sec.text.append("People against each other (on the outputs both labelled, metrics pooled):")
        for r in pairs[pairs["metric"] == POOLED].itertuples(index=False):
            sec.text.append(
                f"- {r.annotator_a} and {r.annotator_b}: {r.n_items} outputs × metrics, agreement "
                f"{fmt_ci(r.agreement, r.agreement_lo, r.agreement_hi)}, κ {r.kappa:.2f} "
                f"[{r.kappa_lo:.2f}, {r.kappa_hi:.2f}]"
            )
    return sec


def _reference(ctx: Context, sec: Section, data: _people.PeopleData, resamples: int, seed: int) -> None:
    table = _people.reference_vs_people(data, resamples, seed)
    if table.empty:
        sec.text.append(
            "The labelled outputs have no programmatic reference (their records have no GT): what is known "
            "without one is each judge against people and the agent's score as people give it, below."
        )
        return
    sec.tables["people_reference"] = table
    overall = table[table["scope"] == "overall"].iloc[0]
    weighted = (
        ""
        if math.isnan(overall.population)
        else "; over the run (the designed labels weighted by 1/π) "
        + fmt_ci(overall.population, overall.population_lo, overall.population_hi)
    )
    sec.text.append(
        f"The programmatic reference against people (1 − |h − p| on the judges' scale; labels {data.blind}): "
        f"{fmt_ci(overall.agreement, overall.ci_lo, overall.ci_hi)} on the {int(overall.n_labels)} labelled "
        f"metric verdicts{weighted}. Published: {PUBLISHED}. Per metric: "
        + ", ".join(
            f"{r.group} {fmt_ci(r.agreement, r.ci_lo, r.ci_hi)}"
            for r in table[table["scope"] == "metric"].itertuples(index=False)
        )
        + ". A judge's agreement with the reference is best read against this ceiling."
    )
    long = []
    for r in table[table["scope"] != "overall"].itertuples(index=False):
        long.append(
            {
                "group": r.group,
                "estimate": "on the labelled outputs",
                "value": r.agreement,
                "ci_lo": r.ci_lo,
                "ci_hi": r.ci_hi,
            }
        )
        if not math.isnan(r.population):
            long.append(
                {
                    "group": r.group,
                    "estimate": "over the run (weighted)",
                    "value": r.population,
                    "ci_lo": r.population_lo,
                    "ci_hi": r.population_hi,
                }
            )
    frame = pd.DataFrame(long)
    colors = {
        "on the labelled outputs": (0.29, 0.43, 0.88, 1.0),
        "over the run (weighted)": (0.55, 0.7, 0.95, 1.0),
    }
    sec.figures["people_reference"] = grouped_bars(
        frame, "group", "estimate", "value", colors,
        title="The programmatic reference against people, per metric and topology",
        ylabel="agreement (%)", zoom=True, xlabel="metric, then topology",
    )  # fmt: skip


def _judges(ctx: Context, sec: Section, data: _people.PeopleData, resamples: int, seed: int) -> None:
    judges, budget = _people.judges_vs_people(data, resamples, seed, TARGET)
    if judges.empty:
        sec.text.append("No labelled output was graded by a judge of this run.")
        return
    reference = _people.against_reference(data)
    table = judges.merge(reference, on=["judge", "condition", "metric"], how="left")
    table = table.merge(
        budget[["judge", "condition", "labels_direct", "labels_ppi"]].assign(metric=POOLED),
        on=["judge", "condition", "metric"],
        how="left",
    )
    sec.tables["people_judges"] = table
    has_ppi = table["ppi"].notna().any()
    sec.text.append(
        "Each judge against people (1 − |h − v|, metrics pooled), over every output of the frame it graded: "
        + (
            "by PPI (its agreement with the reference on every output as the proxy, corrected by the labels) "
            "and directly (the labels alone), both weighting the designed labels by 1/π; beside it, its "
            "agreement with the reference on the same outputs, and the labelled outputs each estimate would "
            f"need for ±{100 * TARGET:g} pp:"
            if has_ppi
            else "directly (the labels alone, the designed labels weighted by 1/π); without a reference "
            f"there is no proxy for PPI. Labelled outputs needed for ±{100 * TARGET:g} pp:"
        )
    )
    pooled = table[table["metric"] == POOLED]
    for r in pooled.itertuples(index=False):
        if r.condition not in ("with_gt", "without_gt", "trajectory_with_gt", "trajectory_without_gt"):
            continue
        head = f"- {ctx.judge_label(r.judge)}, {r.condition}: "
        if has_ppi and not math.isnan(r.ppi):
            sec.text.append(
                head + f"PPI {fmt_ci(r.ppi, r.ppi_lo, r.ppi_hi)}, "
                f"direct {fmt_ci(r.direct, r.direct_lo, r.direct_hi)} (n = {r.n_labelled}, effective n "
                f"{r.effective_n:.0f}); against the reference {fmt_pct(r.reference)}; labels for "
                f"±{100 * TARGET:g} pp: {_count(r.labels_direct)} direct, {_count(r.labels_ppi)} PPI"
            )
        else:
            sec.text.append(
                head + f"direct {fmt_ci(r.direct, r.direct_lo, r.direct_hi)} (n = {r.n_labelled})"
            )
    if has_ppi:
        main = pooled[pooled["condition"].isin(["with_gt", "without_gt"]) & pooled["ppi"].notna()]
        if not main.empty:
            colors = {"with_gt": (0.29, 0.43, 0.88, 1.0), "without_gt": (0.93, 0.55, 0.2, 1.0)}
            sec.figures["people_judges"] = grouped_bars(
                main.assign(judge=[ctx.judge_label(j) for j in main["judge"]]),
                "judge", "condition", "ppi", colors, lo="ppi_lo", hi="ppi_hi",
                title="Each judge against people (PPI, 95 % CI)", ylabel="agreement (%)", zoom=True,
            )  # fmt: skip


def _agent(ctx: Context, sec: Section, data: _people.PeopleData, resamples: int, seed: int) -> None:
    agent = _people.agent_vs_people(data, resamples, seed, TARGET)
    if agent.empty:
        return
    sec.tables["people_agent_score"] = agent
    sec.text.append(
        "The agent's own score where no reference exists, as people give it (their verdict h, metrics "
        "pooled), by PPI with each judge's verdicts on every output as the proxy, beside that judge's raw "
        f"mean; labelled outputs needed for ±{100 * TARGET:g} pp (direct / PPI):"
    )
    for r in agent[agent["metric"] == POOLED].itertuples(index=False):
        sec.text.append(
            f"- {ctx.generator_label(r.generator)}, proxy {r.proxy} ({r.condition}): PPI "
            f"{fmt_ci(r.ppi, r.ppi_lo, r.ppi_hi)}, direct {fmt_ci(r.direct, r.direct_lo, r.direct_hi)}, the "
            f"judge's mean {fmt_pct(r.proxy_mean)} (n = {r.n_labelled} of {r.n_items}); labels for "
            f"±{100 * TARGET:g} pp: {_count(r.labels_direct)} / {_count(r.labels_ppi)}"
        )


def _count(x: float) -> str:
    if isinstance(x, float) and math.isnan(x):
        return "n/a"
    return "out of reach" if x == math.inf else f"{x:.0f}"
