"""``agentjudge report RUNDIR``: run every analysis and write report.md, report.html, tables/, figures/.

One analysis that fails does not hide the others: its section says it failed (with the error) and the
command exits 1, so a broken analysis is visible, never silently dropped.
"""

from __future__ import annotations

import html
import importlib
import math
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from agentjudge.report.context import Context, RunFolderError, Section, load_context
from agentjudge.report.figures import to_png
from agentjudge.report.html import figure_html, md_table, page, paragraphs_html, table_html

ANALYSES: tuple[str, ...] = (
    "headline",
    "guide",
    "rq1_metrics_topologies",
    "rq2_agreement",
    "rq3_convergence",
    "rq4_temperature",
    "rq5_cot",
    "rq6_format",
    "robustness",
    "passk",
    "failures",
)


def _run_analyses(ctx: Context) -> tuple[list[Section], int]:
    sections, failed = [], 0
    for name in ANALYSES:
        analyze: Callable[[Context], Section] = importlib.import_module(f"analysis.{name}").analyze
        try:
            sections.append(analyze(ctx))
        except Exception as exc:  # one broken analysis must not hide the rest; it is reported and exit=1
            failed += 1
            sec = Section(key=name, title=f"{name}: FAILED")
            sec.text.append(f"This analysis raised {type(exc).__name__}: {exc}")
            sec.text.append("```\n" + traceback.format_exc(limit=-4) + "```")
            sections.append(sec)
    return sections, failed


def _level(value: object) -> str:
    return "model default" if isinstance(value, float) and math.isnan(value) else str(value)


def _summary(ctx: Context) -> list[str]:
    df = ctx.data
    meta = ctx.meta
    pipeline = meta.get("pipeline", {}) if isinstance(meta.get("pipeline"), dict) else {}
    dataset = (
        pipeline.get("dataset") or pipeline.get("data") or meta.get("data") or "not recorded in meta.json"
    )
    failed = int((~df["ok"]).sum())
    lines = [
        f"- run folder: `{ctx.rundir}`"
        + (" — **SYNTHETIC data (for testing the report)**" if meta.get("synthetic") else ""),
        f"- dataset: {dataset}; {df['base_id'].nunique():,} base scenarios, {df['record_id'].nunique():,} "
        "records",
        f"- scoring mode(s): {', '.join(sorted(df['scoring_mode'].astype(str).unique()))} "
        f"(research questions use **{ctx.scoring_mode}**)",
        f"- metric verdict rows: {len(df):,}; parse/transport failures: {failed:,} "
        f"({100 * failed / len(df):.2f} %)",
        "- judges: " + ", ".join(ctx.judge_label(j) for j in ctx.judges),
        "- generators: " + ", ".join(ctx.generator_label(g) for g in ctx.generators),
        "- baseline prompt variant: "
        + ", ".join(f"{k}={_level(v)}" for k, v in ctx.baseline_variant.items()),
        f"- bootstrap: {ctx.boot.resamples} resamples of {len(ctx.boot.clusters):,} base scenarios, "
        f"seed {ctx.boot.seed}",
    ]
    for key in ("config_hash", "git_commit", "package_version"):
        if key in meta:
            lines.append(f"- {key}: {meta[key]}")
    return lines


def write_report(ctx: Context, out: Path) -> int:
    """Write all report files under ``out``; returns the number of analyses that failed."""
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    sections, failed = _run_analyses(ctx)
    title = "agentjudge report"
    summary = _summary(ctx)
    md = [f"# {title}", "", *summary, ""]
    body = [f"<h1>{title}</h1>", paragraphs_html(summary)]
    for sec in sections:
        md += [f"## {sec.title}", ""]
        body.append(f"<h2>{html.escape(sec.title)}</h2>")
        if sec.lacking:
            md += [sec.lacking, ""]
            body.append(f"<p class='lack'>{html.escape(sec.lacking)}</p>")
            continue
        md += [*sec.text, ""]
        body.append(paragraphs_html(sec.text))
        for name, fig in sec.figures.items():
            png = to_png(fig)
            (out / "figures" / f"{name}.png").write_bytes(png)
            md += [f"![{name}](figures/{name}.png)", ""]
            body.append(figure_html(name, png))
        for name, table in sec.tables.items():
            table.to_csv(out / "tables" / f"{name}.csv", index=False)
            md += [f"**{name}** (`tables/{name}.csv`)", "", md_table(table), ""]
            body.append(table_html(name, table))
    (out / "report.md").write_text("\n".join(md))
    (out / "report.html").write_text(page(title, "\n".join(body)))
    return failed


def report_cli(rundir: Path, resamples: int, seed: int) -> int:
    """CLI entry: 0 written, 1 written but some analysis failed, 2 unusable run folder."""
    rundir = Path(rundir)
    if resamples < 1:
        print("error: --resamples must be >= 1", file=sys.stderr)
        return 2
    try:
        ctx = load_context(rundir, resamples=resamples, seed=seed)
    except RunFolderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = rundir / "report"
    from agentjudge.fserrors import out_path_problem

    if (problem := out_path_problem(out, "dir")) is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    failed = write_report(ctx, out)
    print(
        f"report written to {out / 'report.html'} and {out / 'report.md'}"
        + (f"; {failed} analysis section(s) FAILED (see the report)" if failed else "")
    )
    return 1 if failed else 0
