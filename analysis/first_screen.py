"""The first screen of a report: what a researcher reads before deciding whether to scroll.

Blocks, in order: a banner when anything is simulated or a baseline; what was run (prompt family, scoring
mode, what a row is, counts); the ranking of the rankable judges with CIs and skill, the calibration judges
(oracle and constants, never ranked) as rows under it; the paper-style main table; GT gain per judge and per
metric with paired CIs; the decision guide's recommendation; the published reference figures beside ours
when a real judge is in the run (else one line saying why).

It summarises the other analyses (their tables are passed in) and computes only the ranking and the two
wide tables itself. Every number uses the shared bootstrap plan of the context, so deltas are paired.
Tables are keyed by the columns a later split would add (e.g. a ``source`` column) — every table here is
built from ``_by(...)`` group lists, so a per-source split is one more key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from agentjudge.analysis._context import Context, Section, fmt_ci, fmt_pp

from agentjudge.stats import diff_table
from agentjudge.types import DIFFICULTIES, METRICS

from ._common import draws, judge_kind, paired, rankable_rows, run_of, share_rows
from .guide import tied_txt
from .rq2_agreement import JURY_NA, distinct_pairs

CONSTANTS = (0.0, 0.5, 1.0)
MEANING = {
    "oracle": "the reference snapped to {0, 0.5, 1}: the best any three-level judge can score (an upper "
    "bound; it reads the answer key)",
    "constant": "the same verdict whatever it sees: what a judge gets for the base rate alone",
    "judge-specific baseline": "a fine-tuned evaluator a publication ran beside its judges as a baseline "
    "(imported; never ranked or pooled with them)",
}

# The paper's headline figures (AgentJudgeBench, 2026), shown beside this run's cell where it has one.
PUBLISHED: dict[str, str] = {
    "agreement_with_gt": "79.1 % (κ 0.419)",
    "agreement_without_gt": "92.6 % (κ 0.559)",
    "hard_without_gt_band": "77–82 % (all judges)",
    "jury_vs_best": "jury 82.5 %, does not beat the best single judge",
    "guide_without_gt_hard": "GPT-5.4 79.7 %, Gemini-2.5-Pro 78.8 %",
    "kappa_tier_rho": "ρ = −0.83",
    "temperature": "≤ 0.6 pp",
    "cot": "+0.11 pp on average",
    "json_vs_freeform": "+4.8 to +6.5 pp (can reverse)",
    "default05": "+4.1 to +5.6 pp weak generators, ≤ +1.0 pp strong",
    "weighting_rho": "ρ ≥ 0.832",
    "binary_rho": "ρ = 0.03",
}
PUBLISHED_LABEL = "published, not re-measured here"


@dataclass
class Screen:
    """Ordered blocks: ("banner"|"p"|"h"|"table", payload); tables also go to tables/*.csv by name."""

    blocks: list[tuple[str, object]] = field(default_factory=list)
    csv: dict[str, pd.DataFrame] = field(default_factory=dict)

    def p(self, *lines: str) -> None:
        self.blocks.extend(("p", line) for line in lines)

    def table(self, name: str, shown: pd.DataFrame, full: pd.DataFrame | None = None) -> None:
        self.blocks.append(("table", (name, shown)))
        self.csv[name] = shown if full is None else full


def _pct(x: float) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{100 * x:.1f}"


def _ci(est: float, lo: float, hi: float) -> str:
    if not np.isfinite(est):
        return "n/a"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{100 * est:.1f}"
    return f"{100 * est:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def _pp(est: float, lo: float, hi: float) -> str:
    return "n/a" if not np.isfinite(est) else fmt_pp(est, lo, hi).replace(" pp", "")


def banner(ctx: Context) -> list[str]:
    """One line per kind of stand-in; empty when every model is real."""
    agents = [g for g in ctx.generators if ctx.is_simulated_agent(g)]
    sims = [g for g in ctx.generators if ctx.is_simulated(g) and g not in agents]
    simj = [j for j in ctx.judges if ctx.is_simulated_judge(j)]
    base = [j for j in ctx.judges if ctx.is_baseline(j)]
    out = []
    if ctx.meta.get("synthetic"):
        out.append("SYNTHETIC run folder (made up for testing the report): no figure measures anything.")
    if sims:
        out.append(f"SIMULATED generators (seeded perturbations of the GT, not models): {', '.join(sims)}.")
    if agents:
        out.append(
            "SIMULATED agents (simulated agents acting in the environment with planted errors, not models): "
            + ", ".join(agents)
            + "."
        )
    if simj:
        out.append(
            "SIMULATED judges (the reference with planted, documented mistakes; not models): "
            + ", ".join(simj)
            + "."
        )
    if base:
        out.append(f"BASELINE judges (fixed rules, constants or the oracle; not models): {', '.join(base)}.")
    rec = ctx.sampling
    if rec is not None:
        share = rec.judge_units.planned / max(rec.judge_units.full_grid, 1)
        out.append(
            f"SAMPLED run: {100 * share:.1f} % of the full grid's judge units, sized for 95 % CIs of "
            f"±{rec.target_ci_pp:g} pp (how, below)."
        )
    if out:
        out.append("No figure in this report measures a real model unless its name is a real model's.")
    return out


def _skill_values(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per-row alignment a constant judge would have on the rows the judge was scored on."""
    ref = df["reference"].to_numpy(float)
    ok = df["ok"].to_numpy(bool)
    return {f"const_{c:g}": np.where(ok, 1 - np.abs(ref - c), np.nan) for c in CONSTANTS}


def ranking(ctx: Context, main: pd.DataFrame, judges: list[str] | None = None) -> pd.DataFrame:
    """Rankable judges by alignment pooled over with/without GT, with CI, skill and the gap to the next.
    ``judges``: only these (of the rankable ones)."""
    df = rankable_rows(ctx, main)
    if judges is not None:
        df = df[df["judge"].isin(judges).to_numpy()]
    if df.empty:
        return pd.DataFrame()
    by = ["judge"]
    align = draws(ctx, df, by)
    ceil = ctx.boot.ratio(df, by, "mu_ceiling")
    consts = {k: ctx.boot.ratio(df, by, v) for k, v in _skill_values(df).items()}
    per_cond = draws(ctx, df, ["judge", "condition"])
    rows = []
    for i, judge in enumerate(align.keys["judge"].astype(str)):
        best = max(consts, key=lambda k: np.nan_to_num(consts[k].estimate[i], nan=-1))
        k_est, k_draws = consts[best].estimate[i], consts[best].draws[:, i]
        with np.errstate(invalid="ignore", divide="ignore"):
            skill = (align.estimate[i] - k_est) / (ceil.estimate[i] - k_est)
            skill_draws = (align.draws[:, i] - k_draws) / (ceil.draws[:, i] - k_draws)
        skill_draws = np.where(np.isfinite(skill_draws), skill_draws, np.nan)
        s_lo, s_hi = align.interval(skill_draws)
        lo, hi = align.interval(align.draws[:, i])
        row = {
            "judge": judge,
            "kind": judge_kind(ctx, judge),
            "align": align.estimate[i],
            "ci_lo": lo[0],
            "ci_hi": hi[0],
            "skill": skill if np.isfinite(skill) else np.nan,
            "skill_ci_lo": s_lo[0],
            "skill_ci_hi": s_hi[0],
            "best_constant": best.removeprefix("const_"),
            "n_verdicts": int(align.n[i]),
            "n_failed": int((align.n_rows[i] if align.n_rows is not None else align.n[i]) - align.n[i]),
        }
        for cond in ("with_gt", "without_gt"):
            try:
                j = per_cond.lookup(judge=judge, condition=cond)
                c_lo, c_hi = per_cond.interval(per_cond.draws[:, j])
                row[cond], row[f"{cond}_ci_lo"], row[f"{cond}_ci_hi"] = per_cond.estimate[j], c_lo[0], c_hi[0]
            except KeyError:
                row[cond] = row[f"{cond}_ci_lo"] = row[f"{cond}_ci_hi"] = np.nan
        rows.append(row)
    t = pd.DataFrame(rows).sort_values("align", ascending=False, na_position="last").reset_index(drop=True)
    order = [int(align.lookup(judge=j)) for j in t["judge"]]
    runs = run_of(df)
    gaps, g_lo, g_hi, shared = [], [], [], []
    for pos, i in enumerate(order):
        if pos + 1 >= len(order):
            gaps.append(np.nan)
            g_lo.append(np.nan)
            g_hi.append(np.nan)
            shared.append(True)
            continue
        a, b = t["judge"].iloc[pos], t["judge"].iloc[pos + 1]
        gaps.append(align.estimate[i] - align.estimate[order[pos + 1]])
        # judges of different runs that graded different outputs have no paired difference to resample
        comparable = runs.get(a) == runs.get(b) or share_rows(df, a, b)
        shared.append(comparable)
        if not comparable:
            g_lo.append(np.nan)
            g_hi.append(np.nan)
            continue
        if ctx.design is None:
            d = align.draws[:, i] - align.draws[:, order[pos + 1]]
        else:  # a sampled run: the two judges on the scenarios both judged (each cell's shorter prefix)
            pair = draws(ctx, paired(ctx, df[df["judge"].isin([a, b]).to_numpy()], "judge"), by)
            d = pair.draws[:, pair.lookup(judge=a)] - pair.draws[:, pair.lookup(judge=b)]
        lo, hi = align.interval(d)
        g_lo.append(lo[0])
        g_hi.append(hi[0])
    t["gap_to_next"], t["gap_ci_lo"], t["gap_ci_hi"] = gaps, g_lo, g_hi
    t["shares_rows_with_next"] = shared
    if runs:
        t.insert(2, "run", [runs.get(j, "") for j in t["judge"]])
    t.insert(0, "rank", np.arange(1, len(t) + 1))
    return t


SHOWN_COLUMNS = (
    "rank",
    "judge",
    "kind",
    "alignment % [95 % CI]",
    "with GT % [CI]",
    "without GT % [CI]",
    "skill [CI]",
    "lead over next, pp [CI]",
    "failed / verdict rows",
)


def _ranking_shown(t: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "rank": [str(r) if np.isfinite(a) else "—" for r, a in zip(t["rank"], t["align"], strict=True)],
            "judge": t["judge"],
            "kind": t["kind"],
            "alignment % [95 % CI]": [_ci(*v) for v in zip(t["align"], t["ci_lo"], t["ci_hi"], strict=True)],
            "with GT % [CI]": [
                _ci(*v) for v in zip(t["with_gt"], t["with_gt_ci_lo"], t["with_gt_ci_hi"], strict=True)
            ],
            "without GT % [CI]": [
                _ci(*v)
                for v in zip(t["without_gt"], t["without_gt_ci_lo"], t["without_gt_ci_hi"], strict=True)
            ],
            "skill [CI]": [
                f"{s:.2f} [{lo:.2f}, {hi:.2f}]"
                if np.isfinite(s)
                else ("n/a (no parsed verdict)" if not np.isfinite(a) else "n/a (ceiling = best constant)")
                for s, lo, hi, a in zip(
                    t["skill"], t["skill_ci_lo"], t["skill_ci_hi"], t["align"], strict=True
                )
            ],
            "lead over next, pp [CI]": [
                "— (last)"
                if pos == len(t) - 1
                else "n/a (no shared rows)"
                if not ok
                else "n/a (no parsed verdict)"
                if not np.isfinite(g)
                else _pp(g, lo, hi)
                for pos, (g, lo, hi, ok) in enumerate(
                    zip(
                        t["gap_to_next"],
                        t["gap_ci_lo"],
                        t["gap_ci_hi"],
                        t["shares_rows_with_next"],
                        strict=True,
                    )
                )
            ],
            "failed / verdict rows": [
                f"{f:,} / {n + f:,}" for f, n in zip(t["n_failed"], t["n_verdicts"], strict=True)
            ],
        }
    )


def _with_reasons(ctx: Context, shown: pd.DataFrame) -> pd.DataFrame:
    """The failed rows' cell of each judge with its failed units' reasons (connection, auth, ...): what
    failed is named, not only counted."""
    units = ctx.progress.judge_units
    cells = []
    for judge, cell in zip(shown["judge"], shown["failed / verdict rows"], strict=True):
        u = units.get(str(judge))
        cells.append(f"{cell} ({u.failed:,} failed units: {u.reasons_text()})" if u and u.reasons else cell)
    return shown.assign(**{"failed / verdict rows": cells})


def _unfinished_rows(ctx: Context, main: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The judges not ranked because their units are not all run: with their figures so far (not ranked:
    they cover part of the grid) or, with no verdict row yet, saying so."""
    units = ctx.progress.judge_units
    partial = [j for j in ctx.unfinished_judges() if j in set(ctx.rankable_judges())]
    out = []
    if partial:
        t = ranking(ctx, main, partial)
        if not t.empty:
            shown = _ranking_shown(t)
            shown["rank"] = "—"
            shown["lead over next, pp [CI]"] = "— (unfinished: not ranked)"
            out.append(shown)
    with_rows = set(ctx.judges)
    empty = [j for j in ctx.planned_judges() if j not in with_rows]
    if empty:
        rows = []
        for judge in empty:
            row = dict.fromkeys(columns, "no verdicts yet")
            row["rank"] = "—"
            row["judge"] = judge
            row["kind"] = judge_kind(ctx, judge)
            u = units.get(judge)
            row["failed / verdict rows"] = "0 / 0" + (
                f" ({u.failed:,} failed units: {u.reasons_text()})" if u and u.reasons else ""
            )
            rows.append(row)
        out.append(pd.DataFrame(rows, columns=columns))
    if not out:
        return pd.DataFrame(columns=columns)
    shown = pd.concat(out, ignore_index=True)
    kinds = []
    for judge, kind in zip(shown["judge"], shown["kind"], strict=True):
        u = units.get(str(judge))
        kinds.append(f"{kind} (unfinished: {u.done + u.failed:,} of {u.planned:,} units run)" if u else kind)
    return shown.assign(kind=kinds)[columns]


def _ranking_notes(rank: pd.DataFrame) -> list[str]:
    """Warnings under the ranking: cross-run orders without shared rows, and judges without skill."""
    out = []
    if "run" in rank.columns:
        apart = [
            f"{a} ({ra}) / {b} ({rb})"
            for a, ra, b, rb, ok in zip(
                rank["judge"],
                rank["run"],
                rank["judge"].shift(-1),
                rank["run"].shift(-1),
                rank["shares_rows_with_next"],
                strict=True,
            )
            if not ok
        ]
        if apart:
            out.append(
                "- WARNING: adjacent judges from different runs share no verdict rows (they graded different "
                "records or generator outputs), so their order compares material as much as judges and "
                "has no paired CI: " + "; ".join(apart) + "."
            )
    for r in rank[rank["skill"].notna() & rank["skill_ci_hi"].notna()].itertuples(index=False):
        skill = f"{r.skill:.2f} [{r.skill_ci_lo:.2f}, {r.skill_ci_hi:.2f}]"
        if r.skill_ci_hi < 0 or (r.skill < 0 and r.skill_ci_hi < 0.005):  # CI up to (a rounded) 0 at most
            out.append(
                f"- {r.judge}: skill {skill} is below the base rate — worse than a constant judge that "
                f"always answers {r.best_constant}."
            )
        elif r.skill_ci_lo <= 0 <= r.skill_ci_hi:
            out.append(f"- {r.judge}: skill {skill} ≈ 0 — no better than the base rate (a constant judge).")
    return out


def calibration(ctx: Context, main: pd.DataFrame) -> pd.DataFrame:
    judges = ctx.calibration_judges()
    if not judges:
        return pd.DataFrame()
    df = main[main["judge"].isin(judges).to_numpy()]
    gd = draws(ctx, df, ["judge", "condition"])
    t = gd.table("align")
    t.insert(1, "kind", [judge_kind(ctx, str(j)) for j in t["judge"]])
    return t


def _calibration_rows(
    ctx: Context, main: pd.DataFrame, cal: pd.DataFrame, columns: list[str]
) -> pd.DataFrame:
    """The calibration judges as rows of the shown ranking (rank "—"), under the ranked judges: the oracle
    and the constants are what the figures above them mean against (e.g. always-1 on these rows)."""
    df = main[main["judge"].isin(ctx.calibration_judges()).to_numpy()]
    pooled = draws(ctx, df, ["judge"]).table("align").set_index("judge")
    by_cond = cal.set_index(["judge", "condition"])
    rows = []
    for judge in pooled.index:
        p = pooled.loc[judge]
        row = dict.fromkeys(columns, "—")
        row["judge"] = str(judge)
        row["kind"] = f"{judge_kind(ctx, str(judge))} (calibration)"
        row["alignment % [95 % CI]"] = _ci(p["align"], p["ci_lo"], p["ci_hi"])
        for cond, col in (("with_gt", "with GT % [CI]"), ("without_gt", "without GT % [CI]")):
            if (judge, cond) in by_cond.index:
                c = by_cond.loc[(judge, cond)]
                row[col] = _ci(c["align"], c["ci_lo"], c["ci_hi"])
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def main_table(ctx: Context, main: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """judge × generator × difficulty: with GT, without GT, GT gain (paired CI). Returns (full, shown)."""
    df = rankable_rows(ctx, main)
    by = ["judge", "generator", "difficulty"]
    gd = draws(ctx, df, [*by, "condition"])
    cells = gd.table("align")
    if ctx.design is not None:  # a sampled run: the gain on the scenarios both conditions judged
        gd = draws(ctx, paired(ctx, df, "condition"), [*by, "condition"])
    gain = diff_table(gd, by, "condition", "with_gt", "without_gt", name="gt_gain")
    wide = cells.pivot_table(index=by, columns="condition", values="align", observed=True)
    wide.columns = [f"align_{c}" for c in wide.columns]
    full = wide.reset_index().merge(gain, on=by, how="left")
    shown_rows = []
    for (judge, gen), part in full.groupby(["judge", "generator"], observed=True, sort=False):
        row: dict[str, object] = {"judge": judge, "generator": gen}
        for d in DIFFICULTIES:
            cell = part[part["difficulty"].astype(str) == d]
            if cell.empty:
                continue
            c = cell.iloc[0]
            w, wo = c.get("align_with_gt", np.nan), c.get("align_without_gt", np.nan)
            g = c.get("gt_gain", np.nan)
            row[f"{d}: with / without / gain"] = f"{_pct(w)} / {_pct(wo)} / " + (
                "n/a" if not np.isfinite(g) else f"{100 * g:+.1f}"
            )
        shown_rows.append(row)
    return full, pd.DataFrame(shown_rows)


def gt_gain_per_judge(ctx: Context, main: pd.DataFrame) -> pd.DataFrame:
    df = paired(ctx, rankable_rows(ctx, main), "condition")
    gd = draws(ctx, df, ["judge", "condition"])
    return diff_table(gd, ["judge"], "condition", "with_gt", "without_gt", name="gt_gain")


def gt_gain_per_metric(ctx: Context, main: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = paired(ctx, rankable_rows(ctx, main), "condition")
    by = ["judge", "difficulty", "metric"]
    gd = draws(ctx, df, [*by, "condition"])
    full = diff_table(gd, by, "condition", "with_gt", "without_gt", name="gt_gain")
    shown = []
    for (judge, diff), part in full.groupby(["judge", "difficulty"], observed=True, sort=False):
        row: dict[str, object] = {"judge": judge, "difficulty": diff}
        for m in METRICS:
            cell = part[part["metric"].astype(str) == m]
            if len(cell):
                c = cell.iloc[0]
                row[m] = _pp(c["gt_gain"], c["ci_lo"], c["ci_hi"])
        shown.append(row)
    order = {d: k for k, d in enumerate(DIFFICULTIES)}
    out = pd.DataFrame(shown)
    if len(out):
        out = out.sort_values(
            ["judge", "difficulty"], key=lambda s: s.map(order) if s.name == "difficulty" else s
        )
    return full, out


def _num(x: object) -> float:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")
    return v if math.isfinite(v) else float("nan")


def published_rows(ctx: Context, sections: dict[str, Section], rank: pd.DataFrame) -> pd.DataFrame:
    """Our figure beside the published one, only where this run has the same cell."""
    rows: list[tuple[str, str, str]] = []
    t = sections.get("rq2", Section("rq2", "")).tables
    pairs = t.get("rq2_pairs")
    if pairs is not None and len(pairs):
        for cond in ("with_gt", "without_gt"):
            part, repeats = distinct_pairs(pairs[pairs["condition"].astype(str) == cond])
            if len(part) and part["agreement"].notna().any():
                k = part["kappa"].dropna()
                ktxt = f"κ {k.mean():.3f}" if len(k) else "κ n/a (undefined)"
                rows.append(
                    (
                        f"pairwise judge agreement, {cond.replace('_', ' ')}",
                        f"{100 * part['agreement'].mean():.1f} % ({ktxt}), {len(part)} pair"
                        + ("s" if len(part) != 1 else "")
                        + (
                            f" ({', '.join(repeats)} left out: the same verdicts as "
                            f"{', '.join(twin for twin, _ in repeats.values())})"
                            if repeats
                            else ""
                        ),
                        PUBLISHED[f"agreement_{cond}"],
                    )
                )
    rho = t.get("rq2_kappa_vs_tier")
    if rho is not None and len(rho) and rho["spearman_rho"].notna().any():
        r = rho.dropna(subset=["spearman_rho"]).iloc[0]
        rows.append(
            (f"κ vs tier gap ({r['condition']})", f"ρ = {r['spearman_rho']:.2f}", PUBLISHED["kappa_tier_rho"])
        )
    jury = t.get("rq2_jury_vs_best")
    if jury is not None and len(jury):
        for r in jury.itertuples(index=False):
            rows.append(
                (
                    f"soft jury vs best single judge ({r.condition})",
                    (f"jury {_pct(r.jury)} %" if np.isfinite(r.jury) else f"jury {JURY_NA}")
                    + f", best {r.best_judge} {_pct(r.best_align)} %, Δ "
                    f"{_pp(r.delta, r.ci_lo, r.ci_hi)} pp",
                    PUBLISHED["jury_vs_best"],
                )
            )
    guide = sections.get("guide", Section("guide", "")).tables.get("guide")
    if guide is not None and len(guide):
        g = guide[
            (guide["condition"].astype(str) == "without_gt") & (guide["difficulty"].astype(str) == "hard")
        ]
        if len(g):
            r = g.iloc[0]
            rows.append(
                (
                    "decision guide, without GT, hard: leader, runner-up",
                    f"{r['leader']} {_pct(r['leader_align'])} %, "
                    f"{r['runner_up']} {_pct(r['runner_up_align'])} %{tied_txt(r)}",
                    PUBLISHED["guide_without_gt_hard"],
                )
            )
    for key, sec_key, label in (
        ("temperature", "rq4", "temperature effect (largest |Δ| pooled)"),
        ("cot", "rq5", "chain-of-thought"),
        ("json_vs_freeform", "rq6", "prompt format"),
    ):
        pooled = sections.get(sec_key, Section(sec_key, "")).tables.get(f"{sec_key}_deltas_pooled")
        if pooled is None or not len(pooled):
            continue
        if key == "temperature":
            r = pooled.loc[pooled["delta"].abs().idxmax()]
            rows.append(
                (
                    label,
                    f"{_pp(r['delta'], r['ci_lo'], r['ci_hi'])} pp ({r['condition']}, T={r['level']})",
                    PUBLISHED[key],
                )
            )
            continue
        for r in pooled.itertuples(index=False):  # the sign as the section's own table has it
            rows.append(
                (
                    f"{label}, {r.direction} ({r.condition})",
                    f"{_pp(r.delta, r.ci_lo, r.ci_hi)} pp",
                    PUBLISHED[key],
                )
            )
    d05 = sections.get("rq3", Section("rq3", "")).tables.get("rq3_default_mode")
    if d05 is not None and len(d05):
        part = d05[d05["condition"].astype(str) == "without_gt"].sort_values("strength")
        if len(part) >= 2:
            weak, strong = part.iloc[0], part.iloc[-1]
            rows.append(
                (
                    "0.5-default − 1.0-default, without GT (weakest / strongest generator)",
                    f"{weak['generator']} {_pp(weak['delta'], weak['ci_lo'], weak['ci_hi'])} pp; "
                    f"{strong['generator']} {_pp(strong['delta'], strong['ci_lo'], strong['ci_hi'])} pp",
                    PUBLISHED["default05"],
                )
            )
    hard = sections.get("rq1", Section("rq1", "")).tables.get("rq1_difficulty_curves")
    if hard is not None and len(hard):
        part = hard[
            (hard["condition"].astype(str) == "without_gt")
            & (hard["difficulty"].astype(str) == "hard")
            & hard["judge"].isin(ctx.rankable_judges())
        ]
        per_judge = part.groupby("judge", observed=True)["align"].mean().dropna()
        if len(per_judge):
            rows.append(
                (
                    "alignment without GT, hard tier (range over rankable judges)",
                    f"{_pct(per_judge.min())}–{_pct(per_judge.max())} %",
                    PUBLISHED["hard_without_gt_band"],
                )
            )
    rob = sections.get("robustness", Section("robustness", "")).tables
    wr = rob.get("robust_weighting_rho")
    if wr is not None and len(wr) and "rho_vs_equal" in wr and wr["rho_vs_equal"].notna().any():
        within = ", judges ranked within each run" if "run" in wr else ""
        rows.append(
            (
                f"ranking stability over metric weightings (min ρ vs equal weights{within})",
                f"ρ = {wr['rho_vs_equal'].min():.2f}"
                + ("" if within else f" over {len(ctx.rankable_judges())} rankable judges"),
                PUBLISHED["weighting_rho"],
            )
        )
    return pd.DataFrame(rows, columns=["statistic", "this run", f"paper ({PUBLISHED_LABEL})"])


#: the words of the first screen a reader new to the benchmark would have to look up
TERMS = (
    "Terms: **GT** = the ground-truth trace of tool calls a judge may be shown (with GT / without GT; "
    "swapped GT = another record's). **strict** / **paper** = the programmatic reference's scoring "
    "(paper = the published scorer, strict = its defects fixed; FIDELITY.md). **pp** = percentage points. "
    "**κ** = Cohen's kappa, agreement beyond chance (verdicts snapped to 0 / 0.5 / 1). **ρ** = Spearman rank "
    "correlation. **soft jury** = the mean verdict of the rankable judges. **0.5-default** = a prompt that "
    "tells the judge to answer 0.5 when unsure. **expanded percentile interval** = a bootstrap percentile "
    "interval that reads its bounds further out in the tails when few scenarios are resampled (e.g. the "
    "2.18th and 97.82nd percentiles for 60), so it is wider than the plain 2.5–97.5 one and keeps 95 % "
    "coverage."
)


def build(ctx: Context, sections: dict[str, Section]) -> Screen:
    s = Screen()
    for line in banner(ctx):
        s.blocks.append(("banner", line))
    main = ctx.main
    pipeline = ctx.meta.get("pipeline", {}) if isinstance(ctx.meta.get("pipeline"), dict) else {}
    family = pipeline.get("prompt_family") or "agentjudge"
    prim = ctx.df
    n_failed = int((~prim["ok"]).sum())
    s.p(
        f"Prompt family **{family}**; scoring mode **{ctx.scoring_mode}** (the programmatic reference every "
        "alignment is measured against); prompt variant "
        + ", ".join(
            f"{k}={'model default' if isinstance(v, float) and math.isnan(v) else v}"
            for k, v in ctx.baseline_variant.items()
        )
        + ".",
    )
    if ctx.sampling is not None:
        s.p(sampling_text(ctx, sections))
    unfinished = set(ctx.unfinished_judges())
    rank = ranking(ctx, main, [j for j in ctx.rankable_judges() if j not in unfinished])
    cal = calibration(ctx, main)
    s.blocks.append(("h", "Judge ranking, with the calibration points under it"))
    columns = list(SHOWN_COLUMNS)
    waiting = _unfinished_rows(ctx, main, columns)
    if rank.empty and waiting.empty:
        s.p("No rankable judge in this run (only the oracle and/or constant judges): nothing to rank.")
    else:  # the table first, on the first screen; how to read it right under it
        shown = _ranking_shown(rank) if not rank.empty else pd.DataFrame(columns=columns)
        parts = [shown, waiting]
        if not cal.empty:
            parts.append(_calibration_rows(ctx, main, cal, columns))
        shown = _with_reasons(ctx, pd.concat([p for p in parts if len(p)], ignore_index=True))
        s.table("first_ranking", shown, rank)
        if not waiting.empty:
            s.p(
                "- Not ranked: "
                + ", ".join(map(str, waiting["judge"]))
                + " — their units are not all run yet, so their figures (if any) cover part of the grid; "
                "resume the run to rank them."
            )
        s.p(*_ranking_notes(rank) if not rank.empty else ())
        s.p(
            "Alignment = mean of 1 − |reference − verdict| over metrics and records, pooled over with and "
            "without GT. Skill = (alignment − best constant judge) / (ceiling − best constant judge) on the "
            "same rows: 0 = no better than always answering one level, 1 = the oracle. Lead over next: "
            "paired CI of the difference to the judge ranked below; a CI containing 0 means the order is not "
            "settled. Calibration rows (never ranked, pooled, on a jury or in κ) give the scale: "
            + (
                "; ".join(f"{k}: {v}" for k, v in MEANING.items() if k in set(cal["kind"])) + "."
                if not cal.empty
                else "none in this run; skill uses constants computed from the reference."
            )
        )
    if not cal.empty:
        s.csv["first_calibration"] = cal
        if rank.empty:
            shown = cal.pivot_table(
                index=["judge", "kind"], columns="condition", values="align", observed=True
            )
            shown = shown.map(_pct).reset_index()
            shown.columns.name = None
            s.p(*(f"- {k}: {v}." for k, v in MEANING.items() if k in set(cal["kind"])))
            s.table("first_calibration", shown, cal)
    s.p(
        "A **verdict row** is one judge's verdict on one metric of one generator output under one "
        f"condition, prompt variant, temperature and trial. This run has {len(prim):,} verdict rows in the "
        f"{ctx.scoring_mode} mode ({n_failed:,} failed: unparseable or transport error, excluded and "
        f"counted); the ranking and main table use the {len(main):,} rows of the baseline variant, first "
        f"trial, with and without GT. {_judges_count(ctx)}, "
        f"{len(ctx.generators)} generators, {main['base_id'].nunique():,} base scenarios"
        + (" judged so far" if ctx.progress.unfinished else "")
        + "; 95 % CIs resample "
        f"base scenarios ({ctx.boot.resamples} resamples, seed {ctx.boot.seed}; "
        + (
            f"expanded percentile interval, tails {50 * ctx.boot.alpha:.2f} % each)."
            if ctx.boot.interval == "expanded"
            else "plain percentile interval)."
        ),
        TERMS,
    )
    if rankable_rows(ctx, main)["ok"].any() and set(main["condition"].astype(str)) >= {
        "with_gt",
        "without_gt",
    }:
        full, shown = main_table(ctx, main)
        s.blocks.append(("h", "Main table: alignment % with GT / without GT / GT gain (pp), per difficulty"))
        s.p(
            "Paper layout (judge × generator × difficulty); CIs of every cell in tables/first_main_table.csv."
        )
        s.table("first_main_table", shown, full)
        gains = gt_gain_per_judge(ctx, main)
        s.blocks.append(("h", "GT gain per judge (with GT − without GT, paired 95 % CI)"))
        s.p(
            *(
                f"- {r.judge}: {fmt_pp(r.gt_gain, r.ci_lo, r.ci_hi)}"
                + (  # a measured 0, not an undefined one: say what it means
                    " — the same alignment with and without GT in every resample: its verdicts do not "
                    "depend on the GT"
                    if r.gt_gain == 0 and r.ci_lo == 0 and r.ci_hi == 0
                    else ""
                )
                for r in gains.itertuples(index=False)
            )
        )
        s.csv["first_gt_gain"] = gains
        mfull, mshown = gt_gain_per_metric(ctx, main)
        s.blocks.append(("h", "GT gain per metric (pp [paired 95 % CI]), judge × difficulty"))
        s.table("first_gt_gain_by_metric", mshown, mfull)
    elif not rankable_rows(ctx, main)["ok"].any():
        s.p("Main table and GT gain: no verdict of a rankable judge yet.")
    else:
        s.p("Main table and GT gain: need both with_gt and without_gt and at least one rankable judge.")
    s.blocks.append(("h", "Recommendation (decision guide)"))
    s.p(*_recommendation(ctx, sections, rank))
    pub = published_rows(ctx, sections, rank)
    if len(pub):
        s.blocks.append(("h", f"Beside the paper ({PUBLISHED_LABEL})"))
        if real_judges(ctx):
            s.table("first_published", pub)
        else:
            s.csv["first_published"] = pub
            s.p(
                "Not shown: every judge of this run is simulated, a baseline or a plug-in (a Python class "
                "that may be a rule or a stand-in), and the paper's figures measure real models, so setting "
                "them side by side would compare unlike things (`tables/first_published.csv` has the rows)."
            )
    return s


def real_judges(ctx: Context) -> list[str]:
    """Judges that are real models (litellm) or verdicts imported from a publication: the published
    figures measure real models, so they are shown beside a run that has one. Not a plug-in: its class may
    be anything (a rule, a stand-in), as may the simulated judges and baselines."""
    return [j for j in ctx.judges if judge_kind(ctx, j) in ("judge", "imported")]


def _judges_count(ctx: Context) -> str:
    """``7 judges (4 rankable)``; with the judges that have no verdict row yet counted and named apart."""
    planned = ctx.planned_judges()
    rankable = f"{len(ctx.rankable_judges())} rankable"
    if len(planned) == len(ctx.judges):
        return f"{len(ctx.judges)} judges ({rankable})"
    none = len(planned) - len(ctx.judges)
    return f"{len(planned)} judges, {len(ctx.judges)} with verdict rows ({rankable}), {none} with none yet"


def sampling_text(ctx: Context, sections: dict[str, Section]) -> str:
    """What a sampled run judged and how its CIs account for it, in one paragraph."""
    rec = ctx.sampling
    assert rec is not None
    sampled = [c.n for c in rec.sampled_cells()]
    full = len(rec.cells) - len(sampled)
    n_txt = f"{min(sampled):,}–{max(sampled):,} (median {int(np.median(sampled)):,})" if sampled else "every"
    ju, pu = rec.judge_units, rec.predict_units
    cells = sections.get("headline", Section("headline", "")).tables.get("headline_cells")
    widest = ""
    if cells is not None and len(cells):
        half = 100 * (cells["ci_hi"] - cells["ci_lo"]) / 2
        if half.notna().any():
            widest = f" Widest headline-cell CI: ±{half.max():.2f} pp."
    target = {"cells": "every cell", "gt_gain": "every with/without-GT gain"}
    correction = (
        f"CIs are for the full grid's value on these {rec.population:,} scenarios: finite-population "
        "corrected (a scenario of rank r enters each resample with weight 1 + g·(M − 1), "
        "g² = 1 − (2r + 1)/N)"
        if rec.fpc
        else "CIs are for the population of scenarios the dataset stands for (no finite-population "
        "correction), like an unsampled run's"
    )
    return (
        f"**Sampled run** (pipeline key `sampling`): 95 % CI target ±{rec.target_ci_pp:g} pp for "
        + " and ".join(target.get(a, a) for a in rec.applies_to)
        + f" (judge × generator × difficulty × condition). Each cell judged the first {n_txt} of the "
        f"{rec.population:,} base scenarios in one seeded order stratified by topology ({rec.stages} "
        f"stages from a pilot of {rec.pilot:,}"
        + (f"; {full} cells judged in full before" if full else "")
        + f"): {ju.planned:,} of the full grid's {ju.full_grid:,} judge units "
        f"({100 * ju.planned / max(ju.full_grid, 1):.1f} %), {pu.planned:,} of {pu.full_grid:,} "
        f"predictions. {correction}; pooled figures weigh each row by N_h / n_h (topology h in its cell's "
        "prefix); paired deltas use the scenarios both sides judged (sampling.json)." + widest
    )


def _recommendation(ctx: Context, sections: dict[str, Section], rank: pd.DataFrame) -> list[str]:
    guide = sections.get("guide")
    if guide is None or guide.lacking or "guide" not in guide.tables or guide.tables["guide"].empty:
        why = guide.lacking if guide is not None and guide.lacking else "fewer than two rankable judges"
        return [f"No recommendation: {why}"]
    lines = []
    if len(rank) >= 2:
        top, second = rank.iloc[0], rank.iloc[1]
        kind = {
            "simulated": " (a SIMULATED judge, not a model)",
            "baseline": " (a baseline rule, not a model)",
        }
        name = f"**{top['judge']}**{kind.get(str(top['kind']), '')}"
        if not top["shares_rows_with_next"]:
            lines.append(
                f"Overall: no recommendation between {name} "
                f"({fmt_ci(top['align'], top['ci_lo'], top['ci_hi'])}) and {second['judge']}: they come "
                "from different runs and share no verdict rows, so the "
                f"{100 * top['gap_to_next']:+.1f} pp gap has no paired CI (n/a (no shared rows)) and may "
                "reflect the material graded rather than the judges."
            )
        else:
            settled = top["gap_ci_lo"] > 0
            lines.append(
                f"Overall: {name} ({fmt_ci(top['align'], top['ci_lo'], top['ci_hi'])}); its lead over "
                f"{second['judge']} is {fmt_pp(top['gap_to_next'], top['gap_ci_lo'], top['gap_ci_hi'])} — "
                + ("its CI excludes 0 (significant)." if settled else "its CI contains 0 (not significant).")
            )
    for r in guide.tables["guide"].itertuples(index=False):
        lines.append(
            f"- {str(r.condition).replace('_', ' ')}, {r.difficulty}: {r.leader} {_pct(r.leader_align)} %, "
            f"runner-up {r.runner_up} {_pct(r.runner_up_align)} %{tied_txt(r)}; margin "
            + (
                f"{100 * r.margin:+.1f} pp, CI n/a (no shared rows between their runs): not comparable"
                if not r.shares_rows
                else f"{fmt_pp(r.margin, r.margin_ci_lo, r.margin_ci_hi)} — "
                + ("significant" if r.decisive else "within noise")
            )
        )
    return lines
