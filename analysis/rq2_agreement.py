"""RQ2: do judges agree with each other, does κ fall with the capability-tier gap, does a jury help?"""

from __future__ import annotations

import numpy as np
import pandas as pd
from agentjudge.analysis._context import Context, Section, fmt_ci, fmt_pp
from agentjudge.analysis._figures import heatmap, scatter_labelled

from agentjudge.stats import (
    add_alignment_columns,
    kappa_tier_correlation,
    pairwise_agreement,
    soft_jury,
    verdict_matrix,
)

from ._common import align_ci, draws, figure_labels, paired, rankable_rows


def _kappa_matrix(pairs: pd.DataFrame, judges: list[str]) -> pd.DataFrame:
    m = pd.DataFrame(np.nan, index=judges, columns=judges)
    for r in pairs.itertuples(index=False):
        m.loc[r.judge_a, r.judge_b] = m.loc[r.judge_b, r.judge_a] = r.kappa
    for j in judges:
        m.loc[j, j] = 1.0
    return m


#: two judges that give the same verdict on every one of at least this many shared rows are one judge there
#: (e.g. ``baseline/gt-rule`` without GT is ``baseline/rule``): the second is named and its pairs are left out
#: of the mean agreement, the mean κ and κ vs tier gap, which would otherwise count one judge twice
SAME_JUDGE_MIN_ROWS = 30


def same_verdicts(pairs: pd.DataFrame) -> pd.Series:
    """Pairs whose judges gave the same (snapped) verdict on every shared row, over enough rows to say so."""
    return (pairs["agreement"] == 1.0) & (pairs["n_pairs"] >= SAME_JUDGE_MIN_ROWS)


def distinct_pairs(part: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, tuple[str, int]]]:
    """One condition's pairs between distinct judges: (those pairs, {a judge left out: (the judge whose
    verdicts it repeats, over how many rows)}). Of judges with the same verdicts, the first named stays; every
    pair of one left out goes, its pairs with third judges too (they would count the one judge twice)."""
    repeats: dict[str, tuple[str, int]] = {}
    for r in part[same_verdicts(part).to_numpy()].itertuples(index=False):
        if str(r.judge_a) not in repeats:  # a chain a = b = c keeps a: b and c repeat it
            repeats.setdefault(str(r.judge_b), (str(r.judge_a), int(r.n_pairs)))
    gone = part["judge_a"].astype(str).isin(repeats) | part["judge_b"].astype(str).isin(repeats)
    return part[~gone.to_numpy()], repeats


#: why a jury alignment can be undefined (it never fills a juror's missing verdict)
JURY_NA = "n/a (no verdict row where every juror gave a parsed verdict)"


def _jury(ctx: Context, sec: Section) -> None:
    main = ctx.main
    jurors = ctx.rankable_judges()
    if len(jurors) < 2:
        sec.text.append("Jury: needs at least two judges.")
        return
    cols = ["base_id", "condition", "judge", "mu", "ok", "metric", "verdict", "reference"]
    if ctx.design is not None:
        # a sampled run: the jury exists where every juror judged (each slice's shortest prefix), and
        # the judges beside it are read on the same scenarios, so the jury − best judge delta is paired
        main = paired(ctx, main[main["judge"].isin(jurors).to_numpy()], "judge")
        cols.append("design_weight")
    jury = add_alignment_columns(soft_jury(main, jurors, name="jury"))
    if ctx.design is not None:
        weight = verdict_matrix(main, jurors, "design_weight")[1]
        jury["design_weight"] = np.nanmax(weight, axis=1) if len(weight) else np.zeros(0)
    judge_type = pd.CategoricalDtype([*ctx.judges, "jury"])
    both = pd.concat(
        [main[cols].astype({"judge": judge_type}), jury[cols].astype({"judge": judge_type})],
        ignore_index=True,
    )
    table = align_ci(ctx, both, ["condition", "judge"])
    sec.tables["rq2_jury"] = table
    gd = draws(ctx, both, ["condition", "judge"])
    sec.text.append(
        f"Soft jury = mean verdict of {', '.join(jurors)} (a coordinate where a juror failed is a "
        "jury failure, counted, never filled)."
        + (
            " Sampled run: the jury and the judges beside it are read on the scenarios every juror judged "
            "(each cell's shortest prefix), design-weighted."
            if ctx.design is not None
            else ""
        )
    )
    rows = []
    for cond, part in table[table["judge"] != "jury"].groupby("condition", observed=True):
        cand = part[part["judge"].isin(jurors)].sort_values("align", ascending=False)
        if cand.empty:
            continue
        best = cand.iloc[0]
        i = gd.lookup(condition=cond, judge="jury")
        j = gd.lookup(condition=cond, judge=best["judge"])
        d = gd.draws[:, i] - gd.draws[:, j]
        (lo,), (hi,) = gd.interval(d)  # NaN (no warning) when every resample is undefined
        jr = table[(table["condition"] == cond) & (table["judge"] == "jury")].iloc[0]
        rows.append(
            {
                "condition": cond,
                "jury": jr["align"],
                "best_judge": best["judge"],
                "best_align": best["align"],
                "delta": gd.estimate[i] - gd.estimate[j],
                "ci_lo": lo,
                "ci_hi": hi,
            }
        )
        jury_txt = fmt_ci(jr["align"], jr["ci_lo"], jr["ci_hi"]) if jr["align"] == jr["align"] else JURY_NA
        sec.text.append(
            f"- {cond}: jury {jury_txt} vs best single judge "
            f"{best['judge']} "
            f"{fmt_ci(best['align'], best['ci_lo'], best['ci_hi'])}: Δ {fmt_pp(rows[-1]['delta'], lo, hi)}"
        )
    sec.tables["rq2_jury_vs_best"] = pd.DataFrame(rows)


def analyze(ctx: Context) -> Section:
    sec = Section(key="rq2", title="RQ2: inter-judge agreement, κ vs capability-tier gap, soft jury")
    judges = ctx.rankable_judges()
    names = figure_labels(ctx, judges)
    main = rankable_rows(ctx, ctx.main)
    if len(judges) < 2:
        sec.lacking = (
            f"RQ2: this run has {len(judges)} rankable judge(s) (the oracle and constant judges are left out "
            "of κ and the jury); add at least two judges to the pipeline."
        )
        return sec
    sec.text.append(
        "κ and the jury use rankable judges only (" + ", ".join(judges) + "); κ is n/a where it is "
        "undefined (a judge that gives one verdict level on every shared row has no variance to agree on)."
    )
    design = "design_weight" if ctx.design is not None else None  # a sampled run (stats.design)
    pairs = pairwise_agreement(main, by=("condition",), design=design)
    if pairs.empty:  # e.g. a comparison of runs whose judges graded different outputs
        sec.lacking = "RQ2: no two rankable judges share a verdict row (same record, output and variant)."
        return sec
    lin = pairwise_agreement(main, by=("condition",), weights="linear", design=design)
    pairs["kappa_linear"] = lin["kappa"].to_numpy()
    tiers = ctx.tiers()
    rho_rows = []
    tier_parts = []
    pairs["same_verdicts"] = same_verdicts(pairs).to_numpy()
    for cond, whole in pairs.groupby("condition", observed=True):
        part, repeats = distinct_pairs(whole)
        others = whole.drop(part.index)  # in rq2_pairs with the rest; out of the means and ρ
        sec.tables[f"rq2_kappa_{cond}"] = _kappa_matrix(whole, judges).reset_index(names="judge")
        sec.figures[f"rq2_kappa_{cond}"] = heatmap(
            _kappa_matrix(whole, judges).rename(index=names, columns=names),
            f"Cohen's κ between judges ({cond})",
            "κ",
            fmt="{:.2f}",
            scale=1.0,
            vmin=-0.2,
            vmax=1.0,
        )
        defined = part["kappa"].dropna()
        kappa_txt = (
            f"mean κ {defined.mean():.3f} over {len(defined)} pair(s) where κ is defined"
            if len(defined)
            else "κ n/a (undefined for every pair: constant verdicts)"
        )
        agree = part["agreement"].dropna()
        agree_txt = f"{100 * agree.mean():.1f} %" if len(agree) else "n/a (no shared verdicts)"
        left_out = "".join(
            f"; left out: {judge}, which gives {twin}'s verdict on all {n} shared rows (one judge here: "
            f"its pairs would count {twin} twice)"
            for judge, (twin, n) in repeats.items()
        )
        sec.text.append(
            f"- {cond}: mean raw agreement {agree_txt}, {kappa_txt}; {len(part)} judge "
            + ("pairs" if len(part) != 1 else "pair")
            + f"{left_out}."
        )
        with_gap, rho, p, n = kappa_tier_correlation(part, tiers)
        tier_parts.append(pd.concat([with_gap, kappa_tier_correlation(others, tiers)[0]], ignore_index=True))
        rho_rows.append({"condition": cond, "spearman_rho": rho, "p_value": p, "pairs_with_tiers": n})
        if np.isnan(rho):
            sec.text.append(
                f"  κ vs tier gap ({cond}): needs ≥3 judge pairs with tiers and varying gaps "
                f"(this run has {n}); set tier: on each judge in the pipeline."
            )
        else:
            sec.text.append(f"  κ vs tier gap ({cond}): Spearman ρ = {rho:.2f} (p = {p:.3f}, {n} pairs).")
            sec.figures[f"rq2_tier_{cond}"] = scatter_labelled(
                with_gap["tier_gap"].to_numpy(float),
                with_gap["kappa"].to_numpy(float),
                [
                    f"{names.get(a, a)}|{names.get(b, b)}"
                    for a, b in zip(with_gap["judge_a"], with_gap["judge_b"], strict=True)
                ],
                f"κ vs capability-tier gap ({cond}), ρ = {rho:.2f}",
                "tier gap |tier_a − tier_b|",
                "Cohen's κ",
            )
    sec.tables["rq2_pairs"] = pd.concat(tier_parts, ignore_index=True)
    sec.tables["rq2_kappa_vs_tier"] = pd.DataFrame(rho_rows)
    _jury(ctx, sec)
    return sec
