"""What a client's calls cost and how they went, per model (and per endpoint of a fleet): the run summary's
and meta.json's counters. Filled by the client as calls are made; read at the end of a run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agentjudge.models.completion import Completion
from agentjudge.models.errors import MAYBE_BILLED_KINDS
from agentjudge.models.fleet import EndpointCount


@dataclass
class ModelStats:
    """Counters for one model. ``calls`` counts ``complete`` invocations (cache hits included)."""

    calls: int = 0
    cache_hits: int = 0
    requests: int = 0  # HTTP attempts actually sent
    failures: int = 0
    retries: int = 0
    retries_by_kind: dict[str, int] = field(default_factory=dict)  # rate_limit, server_error, timeout, ...
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # of prompt_tokens, served from the provider's prefix cache
    cost_usd: float = 0.0
    cache_saved_usd: float = 0.0  # what those cached tokens would have cost more at list price
    unknown_cost_calls: int = 0  # answers whose price litellm does not know (cost counted as 0.0)
    # requests that timed out or came back unreadable or empty (``MAYBE_BILLED_KINDS``): the provider may
    # have billed them, with no usage to count, so ``cost_usd`` is a lower bound
    unseen_cost_requests: int = 0

    @property
    def hit_rate(self) -> float:
        return self.cache_hits / self.calls if self.calls else 0.0

    def add(self, other: ModelStats) -> None:
        for name in self.__dataclass_fields__:
            if name == "retries_by_kind":
                for kind, n in other.retries_by_kind.items():
                    self.retries_by_kind[kind] = self.retries_by_kind.get(kind, 0) + n
            else:
                setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class ClientStats:
    per_model: dict[str, ModelStats] = field(default_factory=dict)
    # fleets only: model display name -> redacted endpoint URL -> requests answered / failed there
    per_endpoint: dict[str, dict[str, EndpointCount]] = field(default_factory=dict)

    def model(self, name: str) -> ModelStats:
        return self.per_model.setdefault(name, ModelStats())

    def endpoint(self, model: str, label: str) -> EndpointCount:
        return self.per_endpoint.setdefault(model, {}).setdefault(label, EndpointCount())

    @property
    def total(self) -> ModelStats:
        out = ModelStats()
        for stats in self.per_model.values():
            out.add(stats)
        return out

    def summary(self) -> dict[str, Any]:
        """Plain dict for logs / meta.json: totals, hit rate and a note when some costs are unknown."""

        def row(s: ModelStats) -> dict[str, Any]:
            out: dict[str, Any] = {
                **asdict(s),
                "hit_rate": round(s.hit_rate, 4),
                "cost_usd": round(s.cost_usd, 6),
            }
            notes = []
            if s.unknown_cost_calls:
                notes.append(f"{s.unknown_cost_calls} answer(s) had no known price; counted as $0")
            if s.unseen_cost_requests:
                notes.append(
                    f"{s.unseen_cost_requests} request(s) timed out or came back unreadable or empty: "
                    "maybe billed"
                )
            if notes:
                out["cost_note"] = "; ".join(notes)
            return out

        out = {"total": row(self.total), "per_model": {k: row(v) for k, v in sorted(self.per_model.items())}}
        if self.per_endpoint:
            out["per_endpoint"] = {
                model: {label: asdict(count) for label, count in endpoints.items()}
                for model, endpoints in sorted(self.per_endpoint.items())
            }
        return out


def count_retry(stats: ModelStats, kind: str) -> None:
    """One more request for a call that failed with ``kind`` (one endpoint, or a fleet's next endpoint)."""
    stats.retries += 1
    stats.retries_by_kind[kind] = stats.retries_by_kind.get(kind, 0) + 1


def note_unseen(stats: ModelStats, kind: str) -> bool:
    """Count a request that may have been billed with no usage to count (``MAYBE_BILLED_KINDS``)."""
    if kind not in MAYBE_BILLED_KINDS:
        return False
    stats.unseen_cost_requests += 1
    return True


def account(stats: ModelStats, completion: Completion) -> None:
    """Add a fresh (not cached) answer's tokens and money to the model's counters."""
    stats.prompt_tokens += completion.usage.prompt_tokens
    stats.completion_tokens += completion.usage.completion_tokens
    stats.cached_prompt_tokens += completion.usage.cached_prompt_tokens
    stats.cost_usd += completion.usage.cost_usd
    stats.cache_saved_usd += completion.usage.cache_saved_usd
    if not completion.cost_known:
        stats.unknown_cost_calls += 1
