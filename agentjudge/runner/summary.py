"""The end-of-run account: per model, what this invocation did and what it cost; and RUNDIR/run_summary.json.

``requests`` are the HTTP requests actually sent (retries included, cache hits not); ``retries`` are by the
model client's error kind (``rate_limit``, ``server_error``, ``timeout``, ``connection``,
``malformed_response``; a batch model's lines sent again also ``batch_lost``: ``runner.batches``).
``run_summary.json`` adds the same counts summed over every invocation of the run
folder that ended (Ctrl-C included, not a killed process), and every failed unit with its ``attempts``
(requests its last run sent; 0 = not sent, null = not a model-client failure, e.g. a parse failure) and
``runs`` (invocations that ran it). ``cost $`` reads "unknown" (or "≥ x") for answers without a known price,
never a $0 that looks known (``cost_text``, ``unpriced_notes``).

Two sources, on purpose: the runner's own tallies (units done/failed, parse failures, tokens of the results)
cover every model, including simulated and baseline ones that never reach the model client; the client's
counters (calls including re-asks and cache hits, money actually spent, prompt tokens the provider served
from its prefix cache and the money that saved) cover the models that call an API.
"""

from __future__ import annotations

from typing import Any

from agentjudge.models.failures import reason_of_kind
from agentjudge.models.fleet import redact_url
from agentjudge.registry.model_strings import model_kind
from agentjudge.runner.pipeline import Pipeline
from agentjudge.runner.scheduler import ModelTally
from agentjudge.runner.store import StoredFailure
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
                    # HTTP requests sent (retries included); in-process models send none
                    "requests": stats.requests if stats is not None else 0,
                    "retries_by_kind": dict(sorted(stats.retries_by_kind.items()))
                    if stats is not None
                    else {},
                    "cache_hits": stats.cache_hits if stats is not None else None,
                    "parse_failures": tally.parse_failures,
                    "tokens": tally.prompt_tokens + tally.completion_tokens,
                    "cost_usd": stats.cost_usd if stats is not None else tally.cost_usd,
                    # answers sent whose price is not known (litellm has none, the pipeline gives none): not
                    # in ``cost_usd``, which is then a lower bound (the table says "unknown" or "≥")
                    "unknown_cost_calls": stats.unknown_cost_calls if stats is not None else 0,
                    # requests that timed out or came back unreadable or empty: maybe billed, with no usage
                    # to count; ``cost_usd`` is then a lower bound too
                    "unseen_cost_requests": stats.unseen_cost_requests if stats is not None else 0,
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


def cost_text(cost: float, unknown_cost_calls: int) -> str:
    """The cost column: the dollars counted, "unknown" when nothing sent had a known cost, and "≥ x" when
    some requests had none (answers without a known price, requests that may have been billed unseen: not
    counted, so the figure is a lower bound, never a $0 shown as known)."""
    if not unknown_cost_calls:
        return f"{cost:.4f}"
    return "unknown" if cost == 0 else f"≥ {cost:.4f}"


def unpriced_notes(rows: list[dict[str, Any]]) -> list[str]:
    """One line per model whose answers had no known price, and one per model with requests that may have
    been billed unseen, under the end-of-run table."""
    return [
        f"{row['model']}: {row['unknown_cost_calls']} answer(s) had no known price (litellm has none for "
        "this model and the pipeline gives none), so they are not in cost $; set input_cost_per_token and "
        "output_cost_per_token to count them"
        for row in rows
        if row["unknown_cost_calls"]
    ] + [
        f"{row['model']}: {row['unseen_cost_requests']} request(s) timed out or came back unreadable or "
        "empty; the provider may have billed them, with no usage to count, so cost $ is a lower bound"
        for row in rows
        if row["unseen_cost_requests"]
    ]


def retries_text(by_kind: dict[str, int]) -> str:
    """``rate_limit 3, timeout 1`` (``0`` when nothing was retried)."""
    return ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items())) or "0"


def add_totals(earlier: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Requests and retries per model summed over invocations (``earlier`` from the store's meta)."""
    out = {name: {"requests": v.get("requests", 0), "retries_by_kind": dict(v.get("retries_by_kind", {}))}
           for name, v in earlier.items()}  # fmt: skip
    for row in rows:
        entry = out.setdefault(row["model"], {"requests": 0, "retries_by_kind": {}})
        entry["requests"] += row["requests"]
        for kind, n in row["retries_by_kind"].items():
            entry["retries_by_kind"][kind] = entry["retries_by_kind"].get(kind, 0) + n
    return out


def failed_unit_rows(failed: list[StoredFailure]) -> list[dict[str, Any]]:
    """Every failed unit of the store: coordinates, model, reason, kind, attempts, runs, the error (cut)."""
    rows = []
    for key, error, failure, runs in failed:
        rows.append(
            {
                "model": key.judge if key.stage == "judge" else key.generator,
                "stage": key.stage,
                "record_id": key.record_id,
                "generator": key.generator,
                "generator_trial": key.generator_trial,
                "judge": key.judge or None,
                "condition": key.condition or None,
                "variant": key.variant or None,
                "temperature": key.temperature or None,
                "trial": key.trial,
                "reason": reason_of_kind(failure.kind),
                "kind": failure.kind,
                "attempts": failure.attempts,
                "runs": runs,
                "error": (error or "")[:300],
            }
        )
    return rows


def run_summary(
    rows: list[dict[str, Any]], totals: dict[str, Any], failed: list[dict[str, Any]]
) -> dict[str, Any]:
    """RUNDIR/run_summary.json: per model this invocation and all of them, and the failed units."""
    per_model: dict[str, Any] = {}
    for row in rows:
        name = row["model"]
        mine = [f for f in failed if f["model"] == name]
        per_model[name] = {
            "role": row["role"],
            "kind": row["kind"],
            "this_invocation": {
                k: row[k] for k in ("done", "failed", "calls", "requests", "retries_by_kind")
            },
            "all_invocations": totals.get(name, {"requests": 0, "retries_by_kind": {}}),
            "failed_units": len(mine),
        }
    return {"per_model": per_model, "failed_units": failed}


def failed_units_text(failed: list[dict[str, Any]], where: str, limit: int = 10) -> list[str]:
    """The end-of-run lines naming failed units with their attempts (at most ``limit``)."""
    if not failed:
        return []
    lines = [
        f"failed units ({len(failed)}; attempts = requests sent in the unit's last run, runs = invocations):"
    ]
    # the coordinates the always-named ones leave alike are named where the failed units differ in them
    # (a prompt variant, a temperature, a trial), so that no two lines read the same
    labels = {"generator_trial": "generator trial", "variant": "variant", "temperature": "T"}
    labels["trial"] = "trial"
    differing = [c for c in labels if len({f.get(c) for f in failed}) > 1]
    for f in failed[:limit]:
        where_in = " ".join(
            str(v) for v in (f["record_id"], f["generator"], f["judge"], f["condition"]) if v is not None
        )
        where_in += "".join(f" {labels[c]} {f[c]}" for c in differing if f.get(c) is not None)
        attempts = "-" if f["attempts"] is None else str(f["attempts"])
        lines.append(f"  {f['model']}: {where_in}: {f['reason']}, attempts {attempts}, runs {f['runs']}")
    if len(failed) > limit:
        lines.append(f"  ... and {len(failed) - limit} more in {where}")
    return lines
