"""Render sections to Markdown and to one self-contained HTML file (figures inlined as base64 PNG)."""

from __future__ import annotations

import base64
import html
import math
import re

import pandas as pd

CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:12px;margin:0.6em 0}td,th{border:1px solid #ccc;padding:2px 6px;
text-align:right}th{background:#f2f2f2}img{max-width:100%}details{margin:0.4em 0}.lack{color:#a60}
.banner{background:#fff3cd;border:1px solid #e0b000;border-left:6px solid #e0a000;padding:6px 10px;
margin:4px 0;font-weight:600}table.first td,table.first th{text-align:left}h3{margin:1.1em 0 0.3em}
summary{cursor:pointer;font-weight:600;margin:0.3em 0}.sec{padding-left:1em;border-left:2px solid #eee}
.wide{overflow-x:auto;max-width:100%}figure{margin:0.6em 0}figcaption{font-size:12px;color:#555}"""

MAX_ROWS_INLINE = 200  # rows of a folded HTML table; the CSV always has every row


def _cell(v: object) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def md_table(df: pd.DataFrame, max_rows: int = MAX_ROWS_INLINE) -> str:
    """A GitHub-flavoured Markdown table (no extra dependency); long tables are cut with a note."""
    shown = df.head(max_rows)
    head = "| " + " | ".join(str(c) for c in shown.columns) + " |"
    sep = "|" + "|".join("---" for _ in shown.columns) + "|"
    body = [
        "| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |"
        for row in shown.itertuples(index=False)
    ]
    more = [f"\n*… {len(df) - max_rows} more rows in the CSV.*"] if len(df) > max_rows else []
    return "\n".join([head, sep, *body, *more])


def _md_inline(text: str) -> str:
    """Escape, then render the two Markdown inline forms the report uses (**bold**, `code`)."""
    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def paragraphs_html(lines: list[str]) -> str:
    parts: list[str] = []
    in_list = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("- "):
            if not in_list:
                parts.append("<ul>")
                in_list = True
            parts.append(f"<li>{_md_inline(stripped[2:])}</li>")
        else:
            if in_list:
                parts.append("</ul>")
                in_list = False
            parts.append(f"<p>{_md_inline(stripped)}</p>")
    if in_list:
        parts.append("</ul>")
    return "\n".join(parts)


def table_html(name: str, df: pd.DataFrame, max_rows: int = MAX_ROWS_INLINE) -> str:
    """A folded table; one wider than the page scrolls inside its own box (``.wide``)."""
    shown = df.head(max_rows).map(_cell) if len(df) else df
    note = f"<p><i>{len(df) - max_rows} more rows in tables/{name}.csv</i></p>" if len(df) > max_rows else ""
    return (
        f"<details><summary>table <code>{html.escape(name)}</code> ({len(df)} rows)</summary>"
        f"<div class='wide'>{shown.to_html(index=False, escape=True, border=0)}</div>{note}</details>"
    )


VIEW_BASE = (
    "../"  # report.html sits in RUNDIR/report/; `agentjudge view` serves it at /report/ and itself at /
)
DIFFICULTY_HEADS = ("easy", "medium", "hard")


def view_link(**filters: str) -> str:
    """The viewer URL (relative to report.html) that lists the verdict rows of these filters."""
    from urllib.parse import urlencode

    return VIEW_BASE + "?" + urlencode({k: v for k, v in filters.items() if v})


def linked_table_html(df: pd.DataFrame, classes: str = "") -> str:
    """A first-screen table whose judge, generator and per-difficulty cells link to the matching rows of
    `agentjudge view` (the items behind the figure): judge → that judge's verdicts; a judge × generator ×
    difficulty cell → that cell's. Cells are escaped; only the links are markup of ours."""
    columns = list(df.columns)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    rows = []
    for record in df.to_dict("records"):
        judge = str(record.get("judge", "")) if "judge" in record else ""
        generator = str(record.get("generator", "")) if "generator" in record else ""
        cells = []
        for column in columns:
            text = html.escape(_cell(record[column]))
            difficulty = next((d for d in DIFFICULTY_HEADS if str(column).startswith(d + ":")), "")
            url = ""
            if column == "judge" and judge:
                url = view_link(judge=judge)
            elif column == "generator" and judge and generator:
                url = view_link(judge=judge, generator=generator)
            elif difficulty and judge:
                url = view_link(judge=judge, generator=generator, difficulty=difficulty)
            cells.append(
                f"<td><a href='{html.escape(url)}' class='view'>{text}</a></td>"
                if url
                else f"<td>{text}</td>"
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cls = f" class='{html.escape(classes)}'" if classes else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def figure_html(name: str, png: bytes) -> str:
    """The figure inlined (the page stands alone), shrunk to the page's width; a wide figure (RQ1's panels)
    is then small, so a caption links the full-size copy the report writes in figures/ beside the page."""
    data = base64.b64encode(png).decode("ascii")
    link = html.escape(f"figures/{name}.png")
    return (
        f'<figure><img alt="{html.escape(name)}" src="data:image/png;base64,{data}">'
        f'<figcaption><a href="{link}">{link}</a> (full size)</figcaption></figure>'
    )


# The first screen's names and cells link to their items in `agentjudge view`, which serves the report at
# /report/ and itself at /: opened from disk, those relative links would open a directory listing, so the
# page turns them into plain text there (and says how to follow them).
FROM_DISK = (
    "<script>if(location.protocol==='file:'){for(const a of document.querySelectorAll('a.view')){"
    "a.removeAttribute('href');a.title='opened from disk: run agentjudge view on the run folder and open "
    "the report from there to follow this link'}for(const n of document.querySelectorAll('.viewnote'))"
    "n.hidden=false}</script>"
)


def view_note(rundir: str) -> str:
    """The line under a linked table: where its links lead, and how to follow them (shown from disk)."""
    return (
        "<p class='viewnote lack' hidden>The names and cells of this table link to their items in the "
        "viewer; opened from disk they cannot: run "
        f"<code>agentjudge view {html.escape(rundir)}</code> and open the report from its page to follow "
        "them.</p>"
    )


def page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body>{body}{FROM_DISK}</body></html>"
    )
