"""Records without GT: what the judges' verdicts say when no reference exists.

An agent's own traces often come without the expected calls (``Record.gt_known`` false). Nothing is scored
on them, so alignment, skill, rankings and the GT gain cannot be computed there, and none is: no default
reference stands in for the missing one. What can be known from the verdicts alone is reported here:

- each judge's verdict distribution per condition and metric (the share of 0, 0.5 and 1; the outcome
  verdict too under a trajectory condition), and its mean verdict with a cluster-bootstrap interval: the
  judge's own, uncalibrated, estimate of the agent's score;
- raw agreement and Cohen's κ between every two judges (verdicts snapped to 0 / 0.5 / 1), with intervals
  (``stats.people.annotator_agreement``, the same estimator as between people).

Whether a judge is right, and how good the agent really is, need people's labels on a sample: the
"Against people" section gives each judge against people and the agent's per-metric score estimated by
prediction-powered inference from them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from agentjudge.analysis._context import VARIANT_FACTORS, Context, Section, same

from agentjudge.stats.bootstrap import ClusterBootstrap
from agentjudge.stats.people import annotator_agreement

LEVEL_NAMES = {0.0: "share_0", 0.5: "share_0.5", 1.0: "share_1"}
ITEM = ("record_id", "generator", "generator_trial")


def main_rows(ctx: Context, rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` in the primary scoring mode, at the baseline prompt variant, first judge and generator
    trial (the slice of every table of the report; a record's verdict rows repeat per scoring mode)."""
    mask = np.array((rows["scoring_mode"] == ctx.scoring_mode).to_numpy(), dtype=bool)
    mask &= (rows["trial"] == rows["trial"].min()).to_numpy()
    mask &= (rows["generator_trial"] == rows["generator_trial"].min()).to_numpy()
    for factor in VARIANT_FACTORS:
        if factor in ctx.baseline_variant and (same(rows[factor], ctx.baseline_variant[factor])).any():
            mask &= same(rows[factor], ctx.baseline_variant[factor])
    out = rows[mask].copy()
    for col in ("judge", "condition", "metric", "base_id", "record_id", "generator"):
        out[col] = out[col].astype(str)
    return out


def verdict_distribution(rows: pd.DataFrame, boot: ClusterBootstrap) -> pd.DataFrame:
    """Per judge × condition × metric: verdicts given, failed, the share of each level among the verdicts
    given (``share_other``: continuous verdicts off the three levels) and the mean verdict with its
    cluster-bootstrap interval over base scenarios."""
    by = ["judge", "condition", "metric"]
    est = boot.ratio(rows, by, "verdict")
    lo, hi = est.interval(est.draws)
    out = est.keys.copy()
    out["verdicts"] = est.n
    out["failed"] = (est.n_rows - est.n) if est.n_rows is not None else 0
    v = rows["verdict"].to_numpy(dtype=float)
    for level, name in LEVEL_NAMES.items():
        counts = rows.assign(_hit=v == level).groupby(by, observed=True, sort=True)["_hit"].sum()
        out[name] = [counts.get(tuple(k), 0) for k in out[by].itertuples(index=False)] / np.maximum(
            out["verdicts"].to_numpy(), 1
        )
    on_levels = out[list(LEVEL_NAMES.values())].sum(axis=1)
    out["share_other"] = np.where(out["verdicts"] > 0, 1.0 - on_levels, np.nan)
    out["mean_verdict"] = est.estimate
    out["mean_lo"], out["mean_hi"] = lo, hi
    return out.reset_index(drop=True)


def judge_agreement(rows: pd.DataFrame, boot: ClusterBootstrap) -> pd.DataFrame:
    """Per condition, every pair of judges and metric (and the metrics pooled, ``all``): raw agreement
    and κ on the outputs both judged, verdicts snapped to the three levels, with intervals."""
    parts = []
    for condition, part in rows.groupby("condition", sort=True):
        if part["judge"].nunique() < 2:
            continue
        snapped = part.assign(verdict=np.round(part["verdict"].to_numpy(dtype=float) * 2) / 2)
        table = annotator_agreement(
            snapped, annotator="judge", item=ITEM, metric="metric", verdict="verdict", boot=boot
        )
        table.insert(0, "condition", condition)
        parts.append(table.rename(columns={"annotator_a": "judge_a", "annotator_b": "judge_b"}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def analyze(ctx: Context) -> Section:
    sec = Section(key="no_reference", title="Records without GT: the judges' verdicts, no reference")
    rows = ctx.unreferenced
    if rows is None or rows.empty:
        sec.lacking = "Every record of this run has GT: every verdict has a reference (sections above)."
        return sec
    main = main_rows(ctx, rows)
    n_records = main["base_id"].nunique()
    judges = sorted(main["judge"].unique())
    calibration = set(ctx.calibration_judges())
    boot = ClusterBootstrap(
        sorted(main["base_id"].unique()),
        resamples=ctx.boot.resamples,
        seed=ctx.boot.seed,
        interval=ctx.boot.interval,
    )
    sec.text.append(
        f"{n_records:,} base scenario(s) of this run have no GT (no expected calls were given): nothing is "
        "scored on them and no reference exists, so alignment, skill, rankings and the GT gain are not "
        "computed for them. The judges graded them without GT only (a judge that reads the reference, the "
        "oracle or a simulated judge, does not grade them)."
    )
    sec.text.append(
        "Known without a reference: each judge's verdict distribution and its mean verdict (the judge's own, "
        "uncalibrated estimate of the agent's score), and agreement and κ between judges. Not known: whether "
        "any judge is right, or the agent's real score: label a sample (`agentjudge label RUNDIR`); the "
        "section Against people then gives each judge against people and the agent's per-metric score "
        "estimated by prediction-powered inference (the judges' verdicts on every record plus the labels)."
    )
    dist = verdict_distribution(main, boot)
    sec.tables["no_reference_verdicts"] = dist
    for judge in judges:
        mine = dist[dist["judge"] == judge]
        label = ctx.judge_label(judge)
        shares = "; ".join(
            f"{r.condition} {r.metric}: mean {r.mean_verdict:.3f} [{r.mean_lo:.3f}, {r.mean_hi:.3f}]"
            for r in mine.itertuples(index=False)
            if r.verdicts
        )
        failed = int(mine["failed"].sum())
        sec.text.append(
            f"- {label}: {shares or 'no verdict parsed'}" + (f"; {failed:,} failed" if failed else "")
        )
    rankable = [j for j in judges if j not in calibration]
    pairs = judge_agreement(main[main["judge"].isin(rankable)], boot)
    if pairs.empty:
        sec.text.append(
            "Agreement between judges: needs at least two judges that are not calibration points "
            f"(this run has {len(rankable)} on these records)."
        )
    else:
        sec.tables["no_reference_agreement"] = pairs
        pooled = pairs[pairs["metric"] == "all"]
        for r in pooled.itertuples(index=False):
            kappa = "κ n/a" if np.isnan(r.kappa) else f"κ {r.kappa:.2f} [{r.kappa_lo:.2f}, {r.kappa_hi:.2f}]"
            sec.text.append(
                f"- {r.condition}: {r.judge_a} vs {r.judge_b}: agreement {100 * r.agreement:.1f} % "
                f"[{100 * r.agreement_lo:.1f}, {100 * r.agreement_hi:.1f}], {kappa} over {r.n_items:,} "
                "metric verdicts both gave"
            )
    return sec
