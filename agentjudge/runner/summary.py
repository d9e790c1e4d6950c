"""The end-of-run table: per model, what this invocation did and what it cost.

Two sources, on purpose: the runner's own tallies (units done/failed, parse failures, tokens of the results)
cover every model, including simulated and baseline ones that never reach the model client; the client's
counters (calls including re-asks and cache hits, money actually spent, prompt tokens the provider served
from its prefix cache and the money that saved) cover the models that call an API.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from agentjudge.models.fleet import redact_url
from agentjudge.runner.engine import ModelTally
from agentjudge.runner.models import model_kind
from agentjudge.runner.pipeline import Pipeline
from agentjudge.types import ModelSettings


def summary_rows(pipe: Pipeline, tallies: dict[str, ModelTally], client_stats: Any) -> list[dict[str, Any]]:
    per_model = getattr(client_stats, "per_model", {}) or {}
    rows = []
    for role, models in (("generator", pipe.generators), ("judge", pipe.judges)):
        for settings in models:
            name = settings.display_name
            tally = tallies.get(name, ModelTally())
            stats = per_model.get(name)
            rows.append(
                {
                    "model": name,
                    "role": role,
                    "kind": model_kind(settings.model),
                    "done": tally.done,
                    "failed": tally.failed,
                    # In-process models (sim/, baseline/) make one "call" per unit and have no cache.
                    "calls": stats.calls if stats is not None else tally.done + tally.failed,
                    "cache_hits": stats.cache_hits if stats is not None else None,
                    "parse_failures": tally.parse_failures,
                    "tokens": tally.prompt_tokens + tally.completion_tokens,
                    "cost_usd": stats.cost_usd if stats is not None else tally.cost_usd,
                    # prompt tokens the provider served from its prefix cache, and what that saved
                    "cached_prompt_tokens": stats.cached_prompt_tokens if stats is not None else 0,
                    "prompt_tokens": stats.prompt_tokens if stats is not None else tally.prompt_tokens,
                    "cache_saved_usd": stats.cache_saved_usd if stats is not None else 0.0,
                }
            )
            if settings.api_bases:  # a fleet: requests answered / failed per endpoint
                rows[-1]["endpoints"] = endpoint_counts(settings, client_stats)
    return rows


def endpoint_counts(settings: ModelSettings, client_stats: Any) -> dict[str, dict[str, int]]:
    """``{redacted endpoint URL: {"ok": n, "failed": n}}`` for every endpoint of a fleet, idle ones too."""
    seen = (getattr(client_stats, "per_endpoint", {}) or {}).get(settings.display_name, {})
    out = {}
    for url in settings.api_bases or []:
        label = redact_url(url)
        count = seen.get(label)
        out[label] = {"ok": count.ok if count else 0, "failed": count.failed if count else 0}
    return out


def endpoint_table(pipe: Pipeline, client_stats: Any) -> Table | None:
    """The fleets' requests per endpoint (None when no model lists ``api_bases``)."""
    table = Table(title="This run, per endpoint (fleets)")
    for col in ("model", "endpoint", "ok", "failed", "share of ok"):
        table.add_column(col, justify="left" if col in ("model", "endpoint") else "right")
    fleets = [s for s in (*pipe.generators, *pipe.judges) if s.api_bases]
    for settings in fleets:
        counts = endpoint_counts(settings, client_stats)
        total_ok = sum(c["ok"] for c in counts.values())
        for label, c in counts.items():
            table.add_row(
                escape(settings.display_name), escape(label), str(c["ok"]), str(c["failed"]),
                _share(c["ok"], total_ok),
            )  # fmt: skip
    return table if fleets else None


def _share(part: float, whole: float) -> str:
    """Cached share of the prompt tokens sent to the provider ("-" when nothing was sent)."""
    return f"{part / whole:.0%}" if whole else "-"


def summary_table(pipe: Pipeline, tallies: dict[str, ModelTally], client_stats: Any) -> Table:
    table = Table(title="This run, per model")
    for col in (
        "model",
        "role",
        "kind",
        "done",
        "failed",
        "calls",
        "cache hits",
        "parse fail",
        "tokens",
        "cached share",
        "cost $",
        "saved $",
    ):
        table.add_column(col, justify="left" if col in ("model", "role", "kind") else "right")
    total = {
        "done": 0,
        "failed": 0,
        "calls": 0,
        "cache_hits": 0,
        "parse_failures": 0,
        "tokens": 0,
        "cost_usd": 0.0,
        "cached_prompt_tokens": 0,
        "prompt_tokens": 0,
        "cache_saved_usd": 0.0,
    }
    for row in summary_rows(pipe, tallies, client_stats):
        for key in total:
            total[key] += row[key] or 0
        table.add_row(
            escape(row["model"]),
            row["role"],
            row["kind"],
            str(row["done"]),
            str(row["failed"]),
            str(row["calls"]),
            "-" if row["cache_hits"] is None else str(row["cache_hits"]),
            str(row["parse_failures"]),
            str(row["tokens"]),
            _share(row["cached_prompt_tokens"], row["prompt_tokens"]),
            f"{row['cost_usd']:.4f}",
            f"{row['cache_saved_usd']:.4f}",
        )
    table.add_row(
        "total",
        "",
        "",
        *(str(total[k]) for k in ("done", "failed", "calls", "cache_hits", "parse_failures", "tokens")),
        _share(total["cached_prompt_tokens"], total["prompt_tokens"]),
        f"{total['cost_usd']:.4f}",
        f"{total['cache_saved_usd']:.4f}",
        style="bold",
    )
    return table
