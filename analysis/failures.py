"""Parse and transport failures per judge, condition and prompt variant.

A failure is never replaced by a default verdict: it is excluded from alignment and counted here, split
into transport/provider errors (judge_error set) and answers that could not be parsed.
"""

from __future__ import annotations

import pandas as pd
from agentjudge.analysis._context import Context, Section


def analyze(ctx: Context) -> Section:
    sec = Section(key="failures", title="Parse and transport failures")
    df = ctx.df
    tmp = pd.DataFrame(
        {
            "judge": df["judge"],
            "condition": df["condition"],
            "prompt_format": df["prompt_format"],
            "cot": df["cot"],
            "default_mode": df["default_mode"],
            "temperature": df["temperature"],
            "failed": ~df["ok"].to_numpy(),
            "transport": df["has_error"].to_numpy() & ~df["ok"].to_numpy(),
        }
    )
    g = tmp.groupby(
        ["judge", "condition", "prompt_format", "cot", "default_mode", "temperature"],
        observed=True,
        dropna=False,
    )
    t = pd.DataFrame(
        {"verdict_rows": g.size(), "failed": g["failed"].sum(), "transport_errors": g["transport"].sum()}
    ).reset_index()
    t = t[t["verdict_rows"] > 0]
    t["parse_failures"] = t["failed"] - t["transport_errors"]
    t["failure_rate"] = t["failed"] / t["verdict_rows"]
    sec.tables["parse_failures"] = t
    total, failed = int(t["verdict_rows"].sum()), int(t["failed"].sum())
    sec.text.append(
        f"{failed:,} of {total:,} metric verdicts ({100 * failed / total:.2f} %) failed "
        f"({int(t['transport_errors'].sum()):,} transport/provider errors, "
        f"{int(t['parse_failures'].sum()):,} "
        "unparseable answers); they are excluded from every alignment and never defaulted."
    )
    worst = t.sort_values("failure_rate", ascending=False).head(1)
    if failed and len(worst):
        w = worst.iloc[0]
        sec.text.append(
            f"Highest failure rate: {w['judge']} / {w['condition']} / {w['prompt_format']}: "
            f"{100 * w['failure_rate']:.1f} %."
        )
    _structured_output(ctx.df, sec)
    return sec


def _structured_output(df: pd.DataFrame, sec: Section) -> None:
    """Parse-failure rate of answered calls with and without ``structured_output`` (the JSON Schema sent
    as response_format), per judge; only when some judgments used it."""
    if "structured_output" not in df.columns or not df["structured_output"].fillna(False).astype(bool).any():
        return
    answered = ~df["has_error"].to_numpy()
    tmp = pd.DataFrame(
        {
            "judge": df["judge"].astype(str).to_numpy()[answered],
            "structured_output": df["structured_output"].fillna(False).astype(bool).to_numpy()[answered],
            "parse_failed": ~df["ok"].to_numpy()[answered],
        }
    )
    t = (
        tmp.groupby(["judge", "structured_output"])
        .agg(verdict_rows=("parse_failed", "size"), parse_failures=("parse_failed", "sum"))
        .reset_index()
    )
    t["parse_failure_rate"] = t["parse_failures"] / t["verdict_rows"]
    sec.tables["structured_output"] = t
    for judge, rows in t.groupby("judge"):
        rates = {
            bool(r.structured_output): f"{100 * r.parse_failure_rate:.1f} % of {r.verdict_rows:,}"
            for r in rows.itertuples()
        }
        sec.text.append(
            f"{judge}: unparseable verdicts with structured output {rates.get(True, 'n/a')}, "
            f"without {rates.get(False, 'n/a')}."
        )
