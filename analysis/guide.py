"""Practitioner decision guide (§9): the best judge and the runner-up per (condition, difficulty), and
whether the leader's margin exceeds its paired-bootstrap CI (i.e. the CI of leader − runner-up excludes 0)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from agentjudge.analysis._context import Context, Section, fmt_pp

from agentjudge.stats.codes import codes_for
from agentjudge.types import DIFFICULTIES

from ._common import draws, paired, run_of, share_rows


def tied_txt(row: Any) -> str:
    """The words ' (tied with X)' when other judges have exactly a guide row's runner-up alignment."""
    tied = getattr(row, "runner_up_tied_with", "")
    return f" (tied with {tied})" if isinstance(tied, str) and tied else ""


def analyze(ctx: Context) -> Section:
    sec = Section(key="guide", title="Practitioner decision guide")
    main = ctx.main
    pool = ctx.rankable_judges()
    if len(pool) < 2:
        sec.lacking = (
            f"Guide: needs at least two rankable judges to name a leader and a runner-up (this run has "
            f"{len(pool)}; the oracle and constant judges are never ranked)."
        )
        return sec
    df = main[codes_for(main["judge"], pool) >= 0]
    gd = draws(ctx, df, ["condition", "difficulty", "judge"])
    keys = gd.keys.assign(align=gd.estimate)
    runs = run_of(df)
    rows = []
    for (cond, diff), part in keys.groupby(["condition", "difficulty"], observed=True):
        part = part.dropna(subset=["align"]).sort_values("align", ascending=False)
        if len(part) < 2:
            continue
        i, j = part.index[0], part.index[1]
        a, b = str(part.loc[i, "judge"]), str(part.loc[j, "judge"])
        comparable = runs.get(a) == runs.get(b) or share_rows(df, a, b)
        if comparable and ctx.design is not None:  # a sampled run: the pair on the scenarios both judged
            rows_ab = df[(df["condition"] == cond).to_numpy() & (df["difficulty"] == diff).to_numpy()]
            pair = draws(
                ctx, paired(ctx, rows_ab[rows_ab["judge"].isin([a, b]).to_numpy()], "judge"), ["judge"]
            )
            d = pair.draws[:, pair.lookup(judge=a)] - pair.draws[:, pair.lookup(judge=b)]
            (lo,), (hi,) = gd.interval(d)
        elif comparable:
            d = gd.draws[:, i] - gd.draws[:, j]
            (lo,), (hi,) = gd.interval(d)  # NaN (no warning) when every resample is undefined
        else:  # judges of different runs that graded different outputs: no paired margin
            lo = hi = float("nan")
        # judges below the leader with exactly the runner-up's alignment: naming one alone hides the tie
        same = (part["align"] - part.loc[j, "align"]).abs() < 1e-12
        tied = part[same & (part.index != i) & (part.index != j)]
        rows.append(
            {
                "condition": cond,
                "difficulty": diff,
                "leader": part.loc[i, "judge"],
                "leader_align": part.loc[i, "align"],
                "runner_up": part.loc[j, "judge"],
                "runner_up_align": part.loc[j, "align"],
                "runner_up_tied_with": ", ".join(map(str, tied["judge"])),
                "margin": part.loc[i, "align"] - part.loc[j, "align"],
                "margin_ci_lo": lo,
                "margin_ci_hi": hi,
                "decisive": bool(lo > 0),
                "shares_rows": comparable,
            }
        )
    if not rows:
        sec.lacking = "Guide: no (condition, difficulty) cell has two rankable judges with parsed verdicts."
        return sec
    t = pd.DataFrame(rows)
    order = {d: k for k, d in enumerate(DIFFICULTIES)}
    t = t.sort_values(
        ["condition", "difficulty"], key=lambda s: s.map(order) if s.name == "difficulty" else s
    )
    sec.tables["guide"] = t
    sec.text.append(
        "The guide ranks rankable judges only: " + ", ".join(ctx.judge_label(j) for j in pool) + " (the "
        "oracle and constant judges are never ranked)."
    )
    for r in t.itertuples(index=False):
        verdict = (
            "the margin's CI excludes 0 (significant)"
            if r.decisive
            else "n/a (no shared rows between the two runs)"
            if not r.shares_rows
            else "the margin's CI contains 0 (within noise)"
        )
        sec.text.append(
            f"- {str(r.condition).replace('_', ' ')}, {r.difficulty}: {r.leader} "
            f"{100 * r.leader_align:.1f} %, "
            f"{r.runner_up} {100 * r.runner_up_align:.1f} %{tied_txt(r)}; margin "
            f"{fmt_pp(r.margin, r.margin_ci_lo, r.margin_ci_hi)}"
            f" — {verdict}."
        )
    return sec
