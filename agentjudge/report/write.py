"""``agentjudge report RUNDIR``: run every analysis and write report.md, report.html, tables/, figures/.

One analysis that fails does not hide the others: its section says it failed (with the error) and the
command exits 1, so a broken analysis is visible, never silently dropped.
"""

from __future__ import annotations

import html
import math
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pandas as pd

from agentjudge import __version__
from agentjudge.analysis import SECTIONS, Context, RunFolderError, Section, load_context, to_png
from agentjudge.analysis.first_screen import Screen
from agentjudge.analysis.first_screen import build as build_screen
from agentjudge.atomic import replacing_folder
from agentjudge.errors import InputError
from agentjudge.limits import MAX_RESAMPLES, check_range
from agentjudge.provenance import git_commit
from agentjudge.report.html import (
    figure_html,
    linked_table_html,
    md_table,
    page,
    paragraphs_html,
    table_html,
    view_note,
)

# the sections a run without any GT shows on its first screen, in this order
WITHOUT_REFERENCE = ("no_reference", "against_people")


def _run_analyses(ctx: Context, names: tuple[str, ...] | None = None) -> tuple[list[Section], int]:
    sections, failed = [], 0
    nothing_parsed = not bool(ctx.df["ok"].any())
    why = _no_verdict_why(ctx) if nothing_parsed else ""
    for entry in SECTIONS:
        name = entry.key
        if names is not None and name not in names:
            continue
        if entry.only_when is not None and not any(ctx.rundir.glob(entry.only_when)):
            continue
        if entry.rows == "referenced" and not ctx.referenced:  # no GT anywhere: said once, by no_reference
            continue
        if entry.rows == "unreferenced" and (ctx.unreferenced is None or ctx.unreferenced.empty):
            continue
        if nothing_parsed and name != "failures":  # every statistic would be undefined: say so once
            sec = Section(key=name, title=entry.title)
            sec.lacking = f"n/a — {why} (see Parse and transport failures)."
            sections.append(sec)
            continue
        try:
            sections.append(entry.analyze(ctx))
        except Exception as exc:  # one broken analysis must not hide the rest; it is reported and exit=1
            failed += 1
            sec = Section(key=name, title=f"{name}: FAILED")
            sec.text.append(f"This analysis raised {type(exc).__name__}: {exc}")
            sec.text.append("```\n" + traceback.format_exc(limit=-4) + "```")
            sections.append(sec)
    return sections, failed


def _no_verdict_why(ctx: Context) -> str:
    """Why a run has no verdict to analyse, by what its failed rows were: transport and provider errors
    (by their reasons: connection, auth, ...) or answers that could not be parsed."""
    df = ctx.df
    failed = ~df["ok"].to_numpy()
    transport = int((df["has_error"].to_numpy() & failed).sum())
    unparsed = int(failed.sum()) - transport
    reasons: dict[str, int] = {}
    for units in ctx.progress.judge_units.values():
        for reason, n in units.reasons:
            reasons[reason] = reasons.get(reason, 0) + n
    parts = []
    if transport:
        by = ", ".join(f"{r} {n:,}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
        parts.append(
            f"{transport:,} verdict rows failed in the call" + (f" (failed units: {by})" if by else "")
        )
    if unparsed:
        parts.append(f"{unparsed:,} answers could not be parsed")
    lead = "no verdict yet" if ctx.progress.unfinished else "no verdict in this run"
    return f"{lead}: " + "; ".join(parts) if parts else lead


def _level(value: object) -> str:
    return "model default" if isinstance(value, float) and math.isnan(value) else str(value)


def _summary(ctx: Context) -> list[str]:
    df = ctx.data
    meta = ctx.meta
    pipeline = meta.get("pipeline", {}) if isinstance(meta.get("pipeline"), dict) else {}
    dataset = (
        pipeline.get("dataset") or pipeline.get("data") or meta.get("data") or "not recorded in meta.json"
    )
    modes = sorted(df["scoring_mode"].astype(str).unique())
    prim = ctx.df
    failed = int((~prim["ok"]).sum())
    lines = [
        f"- run folder: `{ctx.rundir}`"
        + (" — **SYNTHETIC data (for testing the report)**" if meta.get("synthetic") else ""),
        f"- dataset: {dataset}; {df['base_id'].nunique():,} base scenarios, {df['record_id'].nunique():,} "
        "records",
        f"- scoring mode(s): {', '.join(modes)} (research questions use **{ctx.scoring_mode}**); every "
        f"verdict row exists once per scoring mode ({len(df):,} rows over {len(modes)} mode(s))",
        f"- verdict rows in the {ctx.scoring_mode} mode: {len(prim):,}; failed (parse or transport): "
        f"{failed:,} ({100 * failed / max(len(prim), 1):.2f} %)",
        "- judges: " + ", ".join(ctx.judge_label(j) for j in ctx.judges),
        "- generators: " + ", ".join(ctx.generator_label(g) for g in ctx.generators),
        "- baseline prompt variant: "
        + ", ".join(f"{k}={_level(v)}" for k, v in ctx.baseline_variant.items()),
        "- record sources: "
        + ", ".join(
            f"{s} {n:,} base scenarios"
            for s, n in df.groupby("source", observed=True)["base_id"].nunique().items()
        ),
        f"- bootstrap: {ctx.boot.resamples} resamples of {len(ctx.boot.clusters):,} base scenarios, "
        f"seed {ctx.boot.seed}",
    ]
    for key in ("config_hash", "git_commit", "package_version"):
        if key in meta:
            lines.append(f"- {key}: {meta[key]}")
    # the run's commit says which code made the run; the report may be built later, by other code
    lines.append(f"- report built by: git_commit {git_commit()}, package_version {__version__}")
    return lines


def _first_screen(ctx: Context, sections: list[Section]) -> tuple[Screen, int]:
    """The first screen, or a screen saying it failed (exit 1), never a silent omission."""
    try:
        return build_screen(ctx, {s.key: s for s in sections}), 0
    except Exception as exc:  # a bug here must not hide the sections below
        screen = Screen()
        screen.p(f"The first screen FAILED: {type(exc).__name__}: {exc}")
        screen.p("```\n" + traceback.format_exc(limit=-4) + "```")
        return screen, 1


def render(
    title: str,
    screen: Screen,
    sections: list[Section],
    summary: list[str],
    out: Path,
    viewer: str | None = None,
) -> tuple[list[str], list[str]]:
    """Markdown lines and HTML body parts; writes tables/*.csv and figures/*.png under ``out``. ``viewer``:
    the run folder `agentjudge view` serves this report from (its first screen's names link to their items
    there); None (a ``compare`` join): no links."""
    unfinished = [str(p) for k, p in screen.blocks if k == "unfinished"]
    if unfinished:  # the first line says it: the figures below cover part of the grid
        title += " — UNFINISHED"
    md = [f"# {title}", ""]
    body = [f"<h1>{html.escape(title)}</h1>"]
    if unfinished:
        md += [*(f"> **{line}**  " for line in unfinished), ""]
        body.append(
            "<div class='banner unfinished'>"
            + "<br>".join(_code(html.escape(line)) for line in unfinished)
            + "</div>"
        )
    banner = [str(p) for k, p in screen.blocks if k == "banner"]
    if banner:
        md += [*(f"> **{line}**  " for line in banner), ""]
        body.append("<div class='banner'>" + "<br>".join(html.escape(line) for line in banner) + "</div>")
    pending: list[str] = []  # consecutive paragraph / list lines, rendered together (one <ul> per list)
    noted = False  # the note on following the viewer links, under the first linked table
    for kind, payload in [*screen.blocks, ("end", "")]:
        if kind != "p" and pending:
            body.append(paragraphs_html(pending))
            pending = []
        if kind == "h":
            md += ["", f"### {payload}", ""]
            body.append(f"<h3>{html.escape(str(payload))}</h3>")
        elif kind == "p":
            md += [str(payload)] if str(payload).startswith("- ") else [str(payload), ""]
            pending.append(str(payload))
        elif kind == "table":
            name, table = cast(tuple[str, pd.DataFrame], payload)
            md += ["", md_table(table, max_rows=len(table)), "", f"*(`tables/{name}.csv`)*", ""]
            if viewer is not None and "judge" in table.columns:  # entries open their items in the viewer
                first = linked_table_html(table, classes="first") + (view_note(viewer) if not noted else "")
                noted = True
            else:
                first = table.to_html(index=False, escape=True, border=0, classes="first")
            body.append(f"<div class='wide'>{first}</div>")
    for name, df in screen.csv.items():
        df.to_csv(out / "tables" / f"{name}.csv", index=False)
    md += ["", "## Everything else", ""]
    md.append(
        "Each section below is folded in report.html (with its figures); its complete tables are in "
        "`tables/*.csv`."
    )
    body.append("<h2>Everything else (folded; complete tables in tables/*.csv)</h2>")
    for sec in sections:
        inner: list[str] = []
        first = (sec.lacking or (sec.text[0] if sec.text else "")).removeprefix("- ")  # not "— - …"
        md.append(f"- **{sec.title}** — {_clip(first, 220)}")
        if sec.figures:  # report.md shows no figure itself: it names them, each a link to its file
            md.append("  figures: " + ", ".join(f"[{name}](figures/{name}.png)" for name in sec.figures))
        if sec.lacking:
            inner.append(f"<p class='lack'>{html.escape(sec.lacking)}</p>")
        inner.append(paragraphs_html(sec.text))
        for name, fig in sec.figures.items():
            png = to_png(fig)
            (out / "figures" / f"{name}.png").write_bytes(png)
            inner.append(figure_html(name, png))
        for name, table in sec.tables.items():
            table.to_csv(out / "tables" / f"{name}.csv", index=False)
            inner.append(table_html(name, table))
        body.append(
            f"<details><summary>{html.escape(sec.title)}</summary><div class='sec'>{''.join(inner)}</div>"
            "</details>"
        )
    md += ["", "## Run details", "", *summary, ""]
    body.append(f"<details><summary>Run details</summary>{paragraphs_html(summary)}</details>")
    return md, body


def _code(escaped: str) -> str:
    """`a command` of an escaped line as <code>a command</code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)


def _clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(" ,;:—-")
    return cut + " …"


def write_report(
    ctx: Context,
    out: Path,
    title: str = "agentjudge report",
    add: Callable[[Screen], None] | None = None,
    names: tuple[str, ...] | None = None,
    sources: list[str] | None = None,
    served: bool = False,
) -> int:
    """Write the report files of the ``names`` analyses under ``out`` (a new folder: the callers swap it in
    whole, ``atomic.replacing_folder``); returns how many failed. ``served``: ``out`` becomes RUNDIR/report/,
    the folder ``agentjudge view`` serves, so the first screen links its entries to the viewer.
    ``add`` appends blocks to the first screen (``compare`` adds its paired deltas). ``sources``: the run
    mixes record sources, so no pooled first screen is written -- it points to one report per source."""
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    sections, failed = _run_analyses(ctx, names)
    if sources:  # the first screen is the split by source (the sources section's own lines)
        screen, screen_failed = Screen(), 0
        screen.blocks.append(("h", "Record sources (never pooled; one full report per source)"))
        for sec in sections:
            screen.p(*sec.text)
    elif not ctx.referenced:  # no record has GT: the first screen is what can be known without one
        screen, screen_failed = Screen(), 0
        screen.blocks.append(("banner", "No record of this run has GT: no reference exists (see below)."))
        for sec in sections:  # the verdicts alone, then (once people labelled some) the judges against them
            if sec.key in WITHOUT_REFERENCE and not sec.lacking:
                screen.blocks.append(("h", sec.title))
                screen.p(*sec.text)
                for name, table in sec.tables.items():
                    screen.table(name, table)
    else:
        screen, screen_failed = _first_screen(ctx, sections)
        if ctx.unreferenced is not None and not ctx.unreferenced.empty:
            n = ctx.unreferenced["base_id"].astype(str).nunique()
            screen.blocks.append(
                (
                    "banner",
                    f"{n:,} base scenario(s) have no GT: their verdicts are not in the figures above "
                    "(no reference exists); the section no_reference reports them.",
                )
            )
    if add is not None:
        add(screen)
    screen.blocks[:0] = [("unfinished", line) for line in ctx.progress.unfinished]
    # the viewer serves RUNDIR/report/ (not a compare folder, nor a source's own report beneath it)
    viewer = str(ctx.rundir) if served and "runs" not in ctx.meta else None
    md, body = render(title, screen, sections, _summary(ctx), out, viewer)
    (out / "report.md").write_text("\n".join(md))
    (out / "report.html").write_text(page(title, "\n".join(body)))
    return failed + screen_failed


REPORT_FILES = ("report.md", "report.html", "tables", "figures")  # what write_report writes in its folder


def report_folder_problem(out: Path) -> str | None:
    """Why ``out`` cannot take a report, or None. The report is written beside its folder and swapped in
    whole, so a folder holding anything but an earlier report (its files, its per-source folders) is
    refused rather than replaced."""
    from agentjudge.fserrors import out_path_problem

    if (problem := out_path_problem(out, "dir")) is not None:
        return problem
    if not out.is_dir():
        return None
    other = sorted(
        p.name
        for p in out.iterdir()
        if p.name not in REPORT_FILES and not (p.is_dir() and (p / "report.md").is_file())
    )
    if other:
        listed = ", ".join(other[:3]) + (", …" if len(other) > 3 else "")
        return (
            f"{out}: holds files that are not a report ({listed}); a report replaces its folder whole: "
            "move them, or give another folder"
        )
    return None


@dataclass(frozen=True)
class Written:
    """What ``write_run_report`` wrote: the report folder, how many analysis sections failed, and one line
    per record source whose own report could not be written (and why)."""

    out: Path
    failed: int
    missing: tuple[str, ...]
    unfinished: tuple[str, ...] = ()


def write_run_report(rundir: Path, resamples: int, seed: int, ci: str = "expanded") -> Written:
    """RUNDIR/report/ (one report per record source when the run mixes them), written beside it and swapped
    in whole: a failure (a full disk) leaves the previous report as it was. An unusable run folder or output
    path raises an ``InputError`` (``RunFolderError``) before anything is written."""
    rundir = Path(rundir)
    check_range("--resamples", resamples, 1, MAX_RESAMPLES)
    ctx = load_context(rundir, resamples=resamples, seed=seed, ci=ci)
    out = rundir / "report"
    if (problem := report_folder_problem(out)) is not None:
        raise InputError(problem)
    sources = [str(s) for s in ctx.data["source"].cat.categories if (ctx.data["source"] == s).any()]
    missing: list[str] = []  # one line per source whose own report cannot be written, and why
    with replacing_folder(out) as tmp:  # the old report stays whole until the new one is complete
        if len(sources) > 1:  # never pool synthetic and imported records: one full report per source
            subs: dict[str, Context] = {}
            for source in sources:
                try:
                    subs[source] = load_context(rundir, resamples=resamples, seed=seed, ci=ci, source=source)
                except RunFolderError as exc:  # e.g. this source has only trajectory-condition rows
                    missing.append(f"No {source} report: {exc}")
            if not subs:
                raise RunFolderError(f"no source can be reported on ({'; '.join(missing)})")

            def add(screen: Screen) -> None:
                if missing:
                    screen.p(*missing)

            failed = write_report(ctx, tmp, names=("sources",), sources=sources, add=add, served=True)
            for source, sub in subs.items():
                failed += write_report(sub, tmp / source)
        else:
            failed = write_report(ctx, tmp, served=True)
    return Written(out, failed, tuple(missing), ctx.progress.unfinished)
