"""Matplotlib figures of the report (Agg backend): labelled axes, CIs as error bars or bands, and one
colour per judge across every figure (the colour map lives in the Context)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

Color = tuple[float, float, float, float]


def _subplots(
    nrows: int = 1, ncols: int = 1, figsize: tuple[float, float] = (6, 4), **kw: Any
) -> tuple[Figure, Any]:
    """Figure without pyplot's global registry, so figures never leak (no plt.close bookkeeping)."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kw)


def grouped_bars(
    table: pd.DataFrame,
    group: str,
    hue: str,
    value: str,
    colors: dict[str, Color],
    title: str,
    ylabel: str,
    lo: str = "ci_lo",
    hi: str = "ci_hi",
    percent: bool = True,
    zoom: bool = False,
    xlabel: str | None = None,
    labels: dict[str, str] | None = None,
) -> Figure:
    """Bars of ``value`` per ``group`` (x) and ``hue`` (colour), with CI error bars; ``labels`` renames
    legend entries (e.g. to mark simulated or calibration judges) without changing the colours."""
    groups = list(dict.fromkeys(table[group].astype(str)))
    hues = list(dict.fromkeys(table[hue].astype(str)))
    scale = 100.0 if percent else 1.0
    fig, ax = _subplots(1, 1, figsize=(max(6.0, 1.2 * len(groups) * max(1, len(hues)) / 2) + 2.2, 4.2))
    width = 0.8 / max(1, len(hues))
    for i, h in enumerate(hues):
        part = table[table[hue].astype(str) == h].set_index(
            table[table[hue].astype(str) == h][group].astype(str)
        )
        part = part.reindex(groups)
        y = part[value].to_numpy(dtype=float) * scale
        err = None
        if lo in part and hi in part:
            err = np.vstack([y - part[lo].to_numpy(float) * scale, part[hi].to_numpy(float) * scale - y])
            err = np.where(np.isnan(err), 0, err)
        x = np.arange(len(groups)) + (i - (len(hues) - 1) / 2) * width
        ax.bar(x, y, width, yerr=err, capsize=3, label=(labels or {}).get(h, h), color=colors.get(h))
    ax.set_xticks(np.arange(len(groups)), groups, rotation=20, ha="right")
    ax.set_xlabel(xlabel if xlabel is not None else group.replace("_", " "))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.axhline(0, color="black", linewidth=0.6)
    vals = table[value].to_numpy(dtype=float) * scale
    if zoom and np.isfinite(vals).any() and np.nanmin(vals) > 0:
        bottom = float(np.nanmin(vals) - 15)
        bottom = bottom if bottom >= 5 else 0.0  # a few points cut off gain nothing and need a break mark
        ax.set_ylim(bottom, min(100.0, np.nanmax(vals) + 8) if np.nanmax(vals) < 95 else 101)
        if bottom > 0:  # a truncated bar axis is marked, so bar heights are not read as ratios
            _mark_axis_break(ax)
            ax.set_ylabel(f"{ylabel} — axis starts at {bottom:.0f}, not 0")
    # outside the axes: bars of any height stay readable
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return fig


def ranked_dots(
    table: pd.DataFrame,
    order: Sequence[str],
    apart: Sequence[str],
    title: str,
    xlabel: str,
    labels: dict[str, str] | None = None,
) -> Figure:
    """One row per judge, best at the top, in ``order``; per row a dot with its CI whisker for each
    condition (``table``: judge, condition, align, ci_lo, ci_hi, as fractions). Judges in ``apart``
    (calibration points) sit under a rule, in grey. Dots, not bars, so the axis spans the values alone and
    differences of a point or two stay visible; the axis label says where it starts."""
    rows = list(order)
    conds = list(dict.fromkeys(table["condition"].astype(str)))
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")
    fig, ax = _subplots(1, 1, figsize=(8.0, 1.4 + 0.42 * len(rows)))
    step = 0.5 / max(1, len(conds))
    for k, cond in enumerate(conds):
        part = table[table["condition"].astype(str) == cond].set_index(
            table["judge"].astype(str)[table["condition"].astype(str) == cond]
        )
        part = part.reindex(rows)
        y = np.arange(len(rows)) + (k - (len(conds) - 1) / 2) * step
        x = part["align"].to_numpy(float) * 100
        err = np.vstack([x - part["ci_lo"].to_numpy(float) * 100, part["ci_hi"].to_numpy(float) * 100 - x])
        err = np.where(np.isnan(err), 0, err)
        ax.errorbar(x, y, xerr=err, fmt="o", markersize=5, capsize=2.5, color=palette[k % len(palette)],
                    label=cond.replace("_", " "))  # fmt: skip
    ax.set_yticks(np.arange(len(rows)), [(labels or {}).get(r, r) for r in rows], fontsize=8)
    ax.invert_yaxis()  # the best judge on top
    for tick, judge in zip(ax.get_yticklabels(), rows, strict=True):
        if judge in apart:
            tick.set_color("0.45")
    ranked = [r for r in rows if r not in apart]
    if ranked and len(ranked) < len(rows):
        ax.axhline(len(ranked) - 0.5, color="0.5", linewidth=0.8, linestyle="--")
        where = ax.get_yaxis_transform()
        ax.text(1.0, len(ranked) - 0.45, "calibration points (never ranked) ",
                transform=where, ha="right", va="top", fontsize=7, color="0.35")  # fmt: skip
    # the axis spans the ranked judges; a calibration point far from them (always-0.5) would squeeze their
    # differences into a sliver, so it is drawn at the edge with its value written out
    core = table[~table["judge"].astype(str).isin(apart)] if ranked else table
    vals = np.concatenate([core[c].to_numpy(float) * 100 for c in ("align", "ci_lo", "ci_hi")])
    if np.isfinite(vals).any():
        left, right = float(np.nanmin(vals)), float(np.nanmax(vals))
        near = table[["align", "ci_lo", "ci_hi"]].to_numpy(float).ravel() * 100
        near = near[np.isfinite(near) & (near > left - 12) & (near < right + 12)]
        left, right = min(left, float(near.min(initial=left))), max(right, float(near.max(initial=right)))
        pad = max(1.0, 0.05 * (right - left))
        lo_x, hi_x = max(0.0, left - pad), min(100.0, right + pad)
        ax.set_xlim(lo_x, hi_x)
        for k, cond in enumerate(conds):
            part = table[table["condition"].astype(str) == cond]
            for judge, value in zip(
                part["judge"].astype(str), part["align"].to_numpy(float) * 100, strict=True
            ):
                if judge in rows and np.isfinite(value) and not lo_x <= value <= hi_x:
                    row_y = rows.index(judge) + (k - (len(conds) - 1) / 2) * step
                    at, mark = (lo_x, "◀") if value < lo_x else (hi_x, "▶")
                    ax.annotate(f"{mark} {value:.1f}" if value < lo_x else f"{value:.1f} {mark}", (at, row_y),
                                ha="left" if value < lo_x else "right", va="center", fontsize=7,
                                color=palette[k % len(palette)])  # fmt: skip
        xlabel = f"{xlabel} (axis from {lo_x:.0f} %, not 0: dots, not bars)"
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(axis="x", color="0.9", linewidth=0.6)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, title="condition")
    fig.tight_layout()
    return fig


def _mark_axis_break(ax: Any) -> None:
    """The usual broken-axis sign: two short diagonal strokes across the foot of the y axis."""
    for dy in (0.0, 0.025):
        ax.plot([-0.015, 0.015], [dy - 0.012, dy + 0.012], transform=ax.transAxes, color="black",
                linewidth=1.0, clip_on=False)  # fmt: skip


def heatmap(
    matrix: pd.DataFrame,
    title: str,
    cbar: str,
    fmt: str = "{:.1f}",
    scale: float = 100.0,
    xlabel: str = "",
    ylabel: str = "",
    vmin: float | None = None,
    vmax: float | None = None,
) -> Figure:
    """Annotated heatmap of a (rows × columns) table."""
    vals = matrix.to_numpy(dtype=float) * scale
    fig, ax = _subplots(1, 1, figsize=(1.1 * matrix.shape[1] + 3, 0.5 * matrix.shape[0] + 2))
    im = ax.imshow(vals, cmap="viridis", aspect="auto", vmin=vmin, vmax=vmax)
    ax.set_xticks(range(matrix.shape[1]), [str(c) for c in matrix.columns], rotation=30, ha="right")
    ax.set_yticks(range(matrix.shape[0]), [str(r) for r in matrix.index])
    finite = vals[np.isfinite(vals)]
    mid = (finite.min() + finite.max()) / 2 if finite.size else 0
    for (i, j), v in np.ndenumerate(vals):
        if np.isfinite(v):
            ax.text(
                j,
                i,
                fmt.format(v),
                ha="center",
                va="center",
                fontsize=8,
                color="white" if v < mid else "black",
            )
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.colorbar(im, ax=ax, label=cbar)
    fig.tight_layout()
    return fig


def line_panels(
    table: pd.DataFrame,
    panel: str,
    x: str,
    hue: str,
    value: str,
    x_order: Sequence[str],
    colors: dict[str, Color],
    title: str,
    ylabel: str,
    lo: str = "ci_lo",
    hi: str = "ci_hi",
    row: str | None = None,
    labels: dict[str, str] | None = None,
) -> Figure:
    """Small multiples: one panel per ``panel`` (and ``row``) value, lines per ``hue`` with CI bands;
    ``labels`` renames legend entries (e.g. to mark simulated or calibration judges)."""
    panels = list(dict.fromkeys(table[panel].astype(str)))
    rows = list(dict.fromkeys(table[row].astype(str))) if row else [None]
    fig, axes = _subplots(
        len(rows),
        len(panels),
        figsize=(3.4 * len(panels) + 1, 3.0 * len(rows) + 0.6),
        sharey=True,
        squeeze=False,
    )
    xs = np.arange(len(x_order))
    for r, rv in enumerate(rows):
        for c, pv in enumerate(panels):
            ax = axes[r][c]
            part = table[table[panel].astype(str) == pv]
            if row:
                part = part[part[row].astype(str) == rv]
            for h, hp in part.groupby(hue, observed=True):
                hp = hp.set_index(hp[x].astype(str)).reindex(list(x_order))
                y = hp[value].to_numpy(float) * 100
                ax.plot(xs, y, marker="o", color=colors.get(str(h)), label=(labels or {}).get(str(h), str(h)))
                ax.fill_between(
                    xs,
                    hp[lo].to_numpy(float) * 100,
                    hp[hi].to_numpy(float) * 100,
                    color=colors.get(str(h)),
                    alpha=0.15,
                )
            ax.set_xticks(xs, list(x_order))
            ax.set_title(f"{pv}" + (f" · {rv}" if rv else ""), fontsize=9)
            ax.set_xlabel(x)
            if c == 0:
                ax.set_ylabel(ylabel)
    handles, names = axes[0][0].get_legend_handles_labels()
    _bottom_legend(fig, handles, names, title)
    return fig


def _bottom_legend(fig: Figure, handles: list[Any], names: list[str], title: str) -> None:
    """A legend under the panels with as many columns as fit the figure's width (marked judge names are
    long), and room below the panels for its rows."""
    width_in = fig.get_figwidth()
    longest = max((len(n) for n in names), default=1)
    ncol = max(1, min(len(names), int(width_in * 72 / (5.0 * longest + 30))))
    rows = -(-len(names) // ncol) if names else 0
    fig.legend(handles, names, loc="lower center", ncol=ncol, fontsize=8)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, min(0.4, 0.03 + 0.14 * rows / fig.get_figheight()), 1, 0.95))


def scatter_labelled(
    x: np.ndarray, y: np.ndarray, labels: Sequence[str], title: str, xlabel: str, ylabel: str
) -> Figure:
    fig, ax = _subplots(1, 1, figsize=(5.5, 4.2))
    ax.scatter(x, y, color="tab:blue")
    for xi, yi, lab in zip(x, y, labels, strict=True):
        ax.annotate(lab, (xi, yi), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def stacked_shares(
    table: pd.DataFrame,
    index_cols: Sequence[str],
    levels: Sequence[str],
    title: str,
    colors: Sequence[str] = ("tab:red", "tab:orange", "tab:green"),
) -> Figure:
    """Horizontal stacked bars of verdict shares (one bar per row of ``table``)."""
    labels = [" · ".join(str(v) for v in r) for r in table[list(index_cols)].itertuples(index=False)]
    fig, ax = _subplots(1, 1, figsize=(7.5, 0.28 * len(table) + 1.6))
    left = np.zeros(len(table))
    for lev, col in zip(levels, colors, strict=True):
        w = table[lev].to_numpy(float) * 100
        ax.barh(np.arange(len(table)), w, left=left, color=col, label=f"verdict {lev}")
        left += np.nan_to_num(w)
    ax.set_yticks(np.arange(len(table)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("share of verdicts (%)")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)
    fig.tight_layout()
    return fig


def passk_lines(
    table: pd.DataFrame,
    hue: str,
    colors: dict[str, Color],
    title: str,
    panel: str | None = None,
    labels: dict[str, str] | None = None,
) -> Figure:
    """pass^k (solid) and pass@k (dashed) against k, one panel per ``panel`` value, one colour per ``hue``;
    ``labels`` renames legend entries."""
    panels = list(dict.fromkeys(table[panel].astype(str))) if panel else [""]
    fig, axes = _subplots(1, len(panels), figsize=(4.6 * len(panels) + 1, 4), squeeze=False, sharey=True)
    for c, pv in enumerate(panels):
        ax = axes[0][c]
        part_p = table[table[panel].astype(str) == pv] if panel else table
        for h, part in part_p.groupby(hue, observed=True):
            col = colors.get(str(h))
            line = ax.plot(
                part["k"],
                part["pass_hat_k"] * 100,
                marker="o",
                color=col,
                label=(labels or {}).get(str(h), str(h)),
            )[0]
            ax.plot(part["k"], part["pass_at_k"] * 100, marker="x", linestyle="--", color=line.get_color())
        ax.set_xlabel("k (trials)")
        ax.set_xticks(sorted(part_p["k"].unique()))
        ax.set_title(pv, fontsize=9)
        if c == 0:
            ax.set_ylabel("pass^k (solid) / pass@k (dashed), %")
    handles, names = axes[0][0].get_legend_handles_labels()
    _bottom_legend(fig, handles, names, title)
    return fig


def to_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()
