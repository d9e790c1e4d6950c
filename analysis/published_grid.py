"""An imported run beside the paper: every cell of the main grid recomputed from the released verdicts,
beside the value the paper prints.

Only a run folder written by ``agentjudge import agentjudgebench`` has ``imported_cells.csv`` (the import
recomputes each generator × judge × difficulty × condition cell from the released per-record verdicts and
programmatic scores, and joins the printed grid of ``data/published/``). Two aggregation rules are given:
the publication's (per record, the mean over the four metrics of 1 − |programmatic − verdict|, a metric
the judge gave no value counting 0; failed rows left out) and ours (a metric without a value left out, as
everywhere else in this report). The rest of the report reads the same verdicts through our own
paper-mode scorer (the import counts where it disagrees with the published programmatic scores).
"""

from __future__ import annotations

import pandas as pd
from agentjudge.analysis._context import Context, Section

KNOWN = (
    "The paper itself is inconsistent for QwQ-32B with GT on Llama-3.3-70B: its main grid prints 93.6 "
    "(medium) and 87.5 (hard), its C3 table 92.3 and 84.6 for the same cells (and Gemini-2.5-Pro 90.5 / "
    "86.5 / 82.2 vs 90.7 / 86.4 / 78.9): a recomputation can match at most one of them."
)


def analyze(ctx: Context) -> Section:
    title = "Beside the paper: its main grid recomputed from its released verdicts"
    sec = Section(key="published_grid", title=title)
    path = ctx.rundir / "imported_cells.csv"
    if not path.is_file():
        sec.lacking = "Not an imported run (agentjudge import agentjudgebench writes this comparison)."
        return sec
    cells = pd.read_csv(path)
    shown = cells[
        [
            "generator",
            "judge",
            "difficulty",
            "condition",
            "printed",
            "published_rule",
            "difference",
            "ours_missing_excluded",
            "rows",
            "rows_lost",
        ]
    ].copy()
    for column in ("published_rule", "difference", "ours_missing_excluded"):
        shown[column] = shown[column].round(2)
    sec.tables["published_grid"] = shown
    compared = cells.dropna(subset=["difference"])
    if compared.empty:
        sec.text.append(
            f"{len(cells)} cells recomputed from the released verdicts; none has a printed value to compare "
            "with (generators or judges the paper's grid does not name)."
        )
    else:
        worst = compared.loc[compared["difference"].abs().idxmax()]
        within = int((compared["difference"].abs() <= 0.05).sum())
        sec.text.append(
            f"{len(compared)} cells of the paper's main grid recomputed from its released verdicts under its "
            f"own rule (a metric without a value counts 0; failed rows left out): {within} within ±0.05 pp "
            f"of the printed value (the paper prints one decimal); largest difference "
            f"{worst['difference']:+.2f} pp ({worst['generator']} / {worst['judge']} / "
            f"{worst['difficulty']} / {worst['condition']})."
        )
    sec.text.append(
        "Column `ours_missing_excluded`: the same cells with a metric without a value left out instead, the "
        "rule the rest of this report uses. " + KNOWN
    )
    return sec
