"""What ``agentjudge run`` prints at its end, from its ``RunResult``: the per-model table (and the fleets'
per endpoint), the failures by model and reason, the failed units, the stopped models, the cost cap, what to
do next; or the dry run's estimate; or that there was nothing to do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agentjudge.runner.result import DryRunPlan, RunResult, SampledPlan


def print_ending(console: Console, result: RunResult) -> None:
    if result.status == "dry_run":
        assert result.plan is not None
        print_plan(console, result.plan)
    elif result.up_to_date:
        console.print(
            f"nothing to do: every unit of this configuration is done and the files in "
            f"{escape(str(result.rundir))} are current (--force-new starts over)",
            soft_wrap=True,
        )
    else:
        print_closing(console, result)


def print_table(console: Console, table: Any) -> None:
    """A table in full: on a terminal as wide as the terminal; in a log or a pipe as wide as its content
    (at the fixed log width, rich cut long model names to the same prefix, e.g. two ``baseline/always…``)."""
    if console.is_terminal:
        console.print(table)
        return
    width = console.measure(table, options=console.options.update_width(10_000)).maximum
    Console(file=console.file, width=max(console.width, width)).print(table)


def print_closing(console: Console, result: RunResult) -> None:
    """The end of a run: the tables, failures by model and reason, the failed units with their attempts,
    stopped models, the cost cap, what to do next."""
    from agentjudge.models.failures import FailureLog
    from agentjudge.runner.summary import failed_units_text, unpriced_notes

    rows = [dict(row) for row in result.per_model]
    print_table(console, summary_table(rows))
    for line in unpriced_notes(rows):
        console.print(escape(line), highlight=False, soft_wrap=True)
    fleets = endpoint_table(rows)
    if fleets is not None:
        print_table(console, fleets)
    log = FailureLog()
    for group in result.failures:
        log.counts[(group.model, group.reason)] = group.count
        log.examples[(group.model, group.reason)] = group.example
    if log:
        console.print(escape(log.report()), highlight=False, soft_wrap=True)
        kinds = {row["model"]: row["kind"] for row in rows}
        planted = sorted(m for (m, reason) in log.counts if reason == "parse" and kinds.get(m) == "simjudge")
        if planted:
            console.print(
                f"  ({escape(', '.join(planted))}: simulated judges, whose parse failures are planted on "
                "purpose at their profile's rate (agentjudge/judges/simjudge_profiles.yaml), to show how "
                "unreadable answers are counted: excluded and reported, never given a verdict)",
                highlight=False,
                soft_wrap=True,
            )
    failed_rows = [dict(row) for row in result.failed_units]
    for line in failed_units_text(failed_rows, str(result.rundir / "run_summary.json")):
        console.print(escape(line), highlight=False, soft_wrap=True)
    for stopped in result.stopped_models:
        # the error of an unreachable model already says how to check it; the others get the advice here
        check = "" if stopped.reason == "connection" else " (agentjudge run ... --dry-run --probe checks it)"
        console.print(
            f"{escape(stopped.model)}: stopped ({stopped.reason}); {stopped.units_not_run} unit(s) "
            f"not run. Fix the set-up{check}, then re-run.",
            highlight=False,
            soft_wrap=True,
        )
    cap = result.cost_cap
    if cap is not None:
        console.print(
            f"[yellow]stopped at the cost cap[/yellow] (${cap.spent_usd:.4f} spent of ${cap.cap_usd:.4f} in "
            f"this invocation); {cap.units_left} unit(s) left - re-run with a --max-cost for the rest.",
            soft_wrap=True,
        )
    if result.failed or result.not_run:
        console.print(
            f"{result.failed} unit(s) failed, {result.not_run} not run; re-run the same command to retry "
            f"them. Results so far: {escape(str(result.rundir))}",
            soft_wrap=True,
        )
    else:
        console.print(f"done: {escape(str(result.rundir))}")


def summary_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """The end-of-run table of ``runner.summary.summary_rows``, with a total row."""
    from agentjudge.runner.summary import cost_text, retries_text

    table = Table(title="This run, per model")
    for col in (
        "model",
        "role",
        "kind",
        "done",
        "failed",
        "calls",
        "requests",
        "retries",
        "cache hits",
        "parse fail",
        "tokens",
        "cached share",
        "cost $",
        "saved $",
    ):
        table.add_column(col, justify="left" if col in ("model", "role", "kind") else "right")
    total: dict[str, Any] = {
        "done": 0,
        "failed": 0,
        "calls": 0,
        "requests": 0,
        "cache_hits": 0,
        "parse_failures": 0,
        "tokens": 0,
        "cost_usd": 0.0,
        "unknown_cost_calls": 0,
        "unseen_cost_requests": 0,
        "cached_prompt_tokens": 0,
        "prompt_tokens": 0,
        "cache_saved_usd": 0.0,
    }
    retries_total: dict[str, int] = {}
    for row in rows:
        for key in total:
            total[key] += row[key] or 0
        for kind, n in row["retries_by_kind"].items():
            retries_total[kind] = retries_total.get(kind, 0) + n
        table.add_row(
            escape(row["model"]),
            row["role"],
            row["kind"],
            str(row["done"]),
            str(row["failed"]),
            str(row["calls"]),
            str(row["requests"]),
            retries_text(row["retries_by_kind"]),
            "-" if row["cache_hits"] is None else str(row["cache_hits"]),
            str(row["parse_failures"]),
            str(row["tokens"]),
            _share(row["cached_prompt_tokens"], row["prompt_tokens"]),
            cost_text(row["cost_usd"], row["unknown_cost_calls"] + row["unseen_cost_requests"]),
            f"{row['cache_saved_usd']:.4f}",
        )
    table.add_row(
        "total",
        "",
        "",
        *(str(total[k]) for k in ("done", "failed", "calls", "requests")),
        retries_text(retries_total),
        *(str(total[k]) for k in ("cache_hits", "parse_failures", "tokens")),
        _share(total["cached_prompt_tokens"], total["prompt_tokens"]),
        cost_text(total["cost_usd"], int(total["unknown_cost_calls"] + total["unseen_cost_requests"])),
        f"{total['cache_saved_usd']:.4f}",
        style="bold",
    )
    return table


def endpoint_table(rows: Sequence[Mapping[str, Any]]) -> Table | None:
    """The fleets' requests per endpoint (None when no model lists ``api_bases``): the ``endpoints`` of
    ``summary_rows``."""
    table = Table(title="This run, per endpoint (fleets)")
    for col in ("model", "endpoint", "ok", "failed", "share of ok"):
        table.add_column(col, justify="left" if col in ("model", "endpoint") else "right")
    fleets = [row for row in rows if "endpoints" in row]
    for row in fleets:
        counts = row["endpoints"]
        total_ok = sum(c["ok"] for c in counts.values())
        for label, c in counts.items():
            table.add_row(
                escape(row["model"]), escape(label), str(c["ok"]), str(c["failed"]), _share(c["ok"], total_ok)
            )
    return table if fleets else None


def _share(part: float, whole: float) -> str:
    """Cached share of the prompt tokens sent to the provider ("-" when nothing was sent)."""
    return f"{part / whole:.0%}" if whole else "-"


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.2f}"


def print_plan(console: Console, plan: DryRunPlan) -> None:
    """The dry run: calls, tokens and the four prices per model, the totals, the notes; a sampled run's
    grids beside the full one."""
    from agentjudge.runner.dryrun import COST_COLUMNS, COST_LABELS

    rows = plan.rows
    what = "calls a new run would make (--force-new)" if plan.start_over else "calls still to make"
    table = Table(title=f"Dry run of {plan.pipeline}: {what} (nothing is spent or written)")
    columns = ("model", "role", "kind", "calls", "prompt tokens", "cached share", "completion tokens")
    for col in (*columns, *COST_LABELS.values()):
        table.add_column(col, justify="left" if col in ("model", "role", "kind") else "right")
    totals = {col: sum(r[col] for r in rows if r[col] is not None) for col in COST_COLUMNS}
    for r in rows:
        share = r["cached_prompt_tokens"] / r["prompt_tokens"] if r["prompt_tokens"] else 0.0
        table.add_row(
            escape(r["model"]),
            r["role"],
            r["kind"],
            f"{r['calls']:,}",
            f"{r['prompt_tokens']:,}",
            f"{share:.0%}",
            f"{r['completion_tokens']:,}",
            *(_money(r[col]) for col in COST_COLUMNS),
        )
    prompt = sum(r["prompt_tokens"] for r in rows)
    cached = sum(r["cached_prompt_tokens"] for r in rows)
    table.add_row(
        "total",
        "",
        "",
        f"{sum(r['calls'] for r in rows):,}",
        f"{prompt:,}",
        f"{cached / prompt:.0%}" if prompt else "0%",
        f"{sum(r['completion_tokens'] for r in rows):,}",
        *(_money(totals[c]) for c in COST_COLUMNS),
        style="bold",
    )
    console.print(table)
    console.print(escape(plan.total_line), soft_wrap=True)
    if plan.expected_line is not None:
        console.print(escape(plan.expected_line), soft_wrap=True)
    for note in plan.notes:
        console.print(escape("- " + note), soft_wrap=True)
    if plan.sampled is not None:
        _print_sampled(console, plan.sampled)


def _print_sampled(console: Console, sampled: SampledPlan) -> None:
    from agentjudge.runner.dryrun import COST_COLUMNS

    table = Table(
        title=f"Sampled grid: 95 % CIs of ±{sampled.target_ci_pp:g} pp per cell (pipeline key sampling)"
    )
    for col in ("grid", "judge calls", "generator calls", "list $", "cached $", "batch $", "batch+cache $"):
        table.add_column(col, justify="left" if col == "grid" else "right")
    (_, full), *_ = sampled.grids
    for i, (label, t) in enumerate(sampled.grids):
        share = f" ({100 * t['judge'] / full['judge']:.0f} %)" if full["judge"] and i else ""
        table.add_row(
            label, f"{t['judge']:,}{share}", f"{t['generator']:,}", *(_money(t[c]) for c in COST_COLUMNS)
        )
    console.print(table)
    for line in sampled.notes:
        console.print(escape("- " + line), soft_wrap=True)
