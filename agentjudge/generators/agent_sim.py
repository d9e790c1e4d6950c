"""Simulated interactive agents ``sim/agent-<profile>``: the GT plan, executed step by step, reading outputs.

Why: the interactive path (episode, trajectory, outcome references, judges that see outputs) must run
offline and reproducibly, with agents whose error kinds are known (agent_profiles.yaml). The agent is a
script over the messages it has received, so the same code answers in process (``sim/agent-*``) and
behind the loopback HTTP server in the tests (a scripted model that reads real tool messages).

How a value is chosen, per GT argument leaf: when it occurs in the GT output of a step the GT step depends
on, the agent reads the value at the same place in the output it actually received for that step (so an
earlier mistake propagates, as it would for a model); otherwise, when a reader of the query can state it
(``resolve.recoverable``, the test Gate 2 applies), it uses it; otherwise it cannot know it and sends
``"<unknown>"`` and says so in its answer -- on a sound record that never happens for the correct agent.
Steps are sent in GT order; consecutive steps that do not depend on each other go in one turn (parallel
calls). Determinism: seeded by sha256(record_id, generator name, trial); stateless across turns (the
script is replayed over the received outputs), so a resumed episode continues identically.
"""

from __future__ import annotations

import json
import random
from collections.abc import Generator, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field

from agentjudge.types import Difficulty, ModelSettings, Record, Strict, Task, ToolCall

# libyaml's safe loader where PyYAML has it (several times faster; what dataset/domains uses too)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

AGENT_PROFILES_PATH = Path(__file__).with_name("agent_profiles.yaml")
PREFIX = "agent-"
AGENT_ERRORS: tuple[str, ...] = (
    "wrong_entity",
    "stops_early",
    "retries_after_error",
    "repeats_write",
    "hallucinates_id",
)
UNKNOWN = "<unknown>"
FINAL_ANSWER = "Done."
_MISSING: Any = object()
_NON_IDEMPOTENT_OPS = ("create", "notify", "annotate", "message")


class AgentRates(Strict):
    wrong_entity: float = Field(ge=0, le=1)
    stops_early: float = Field(ge=0, le=1)
    retries_after_error: float = Field(ge=0, le=1)
    repeats_write: float = Field(ge=0, le=1)
    hallucinates_id: float = Field(ge=0, le=1)


class AgentProfile(Strict):
    description: str
    rates: dict[Difficulty, AgentRates]


class AgentProfilesFile(Strict):
    error_types: dict[str, str]
    profiles: dict[str, AgentProfile]


def load_agent_profiles(path: Path = AGENT_PROFILES_PATH) -> dict[str, AgentProfile]:
    try:
        parsed = AgentProfilesFile.model_validate(
            yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
        )
    except Exception as exc:  # pydantic / yaml errors: name the file
        raise ValueError(f"{path}: invalid agent profiles file: {exc}") from exc
    if set(parsed.error_types) != set(AGENT_ERRORS):
        raise ValueError(f"{path}: error_types must document exactly {sorted(AGENT_ERRORS)}")
    for name, prof in parsed.profiles.items():
        if not name.startswith(PREFIX):
            raise ValueError(f"{path}: profile {name!r} must start with {PREFIX!r}")
        if set(prof.rates) != {"easy", "medium", "hard"}:
            raise ValueError(f"{path}: profile {name!r} must give rates for easy, medium and hard")
    return parsed.profiles


@lru_cache(maxsize=1)
def agent_profiles() -> dict[str, AgentProfile]:
    return load_agent_profiles()


# ---- reading values out of outputs -------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _paths(node: Any, value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path in ``node`` whose sub-value equals ``value`` (types included: 1 is not True)."""
    if _same(node, value):
        yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, value, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, value, (*prefix, i))


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if not (in_list or (isinstance(node, dict) and isinstance(part, str) and part in node)):
            return _MISSING
        node = node[part]
    return node


class _Episode:
    """The agent's decisions for one episode; ``script`` is a generator replayed over received outputs."""

    def __init__(self, record: Record, difficulty: Difficulty, rates: AgentRates, rng: random.Random) -> None:
        from agentjudge.dataset.world import make_environment
        from agentjudge.scoring.scorer import gt_trace

        self.record, self.rng = record, rng
        self.query, self.context = record.queries[difficulty], record.system_prompt
        self.errors: list[str] = []
        self.unknown: list[str] = []
        self.actual: dict[int, Any] = {}
        n = len(record.gt)
        env = make_environment(record)
        ops = {name: spec.op for name, spec in env.tools.items()} if env is not None else {}
        writes = list(gt_trace(record, None)[1]) if env is not None else []
        derived = [i for i in range(n) if self._derived_keys(i)]
        draw = {kind: rng.random() < getattr(rates, kind) for kind in AGENT_ERRORS}
        self.stop_at = rng.randint(1, n - 1) if draw["stops_early"] and n >= 2 else None
        required = [i for i in range(n) if self._required_keys(i)]
        self.retry_at = rng.choice(required) if draw["retries_after_error"] and required else None
        prefer = [i for i in writes if ops.get(record.gt[i].call.name) in _NON_IDEMPOTENT_OPS] or writes
        self.repeat_at = rng.choice(prefer) if draw["repeats_write"] and prefer else None
        self.hallucinate_at = rng.choice(derived) if draw["hallucinates_id"] and derived else None
        self.wrong_entity = draw["wrong_entity"]

    def _sources(self, i: int) -> list[int]:
        step = self.record.gt[i]
        return sorted(step.depends_on, reverse=True) if self.record.edges else list(range(i - 1, -1, -1))

    def _derived_keys(self, i: int) -> list[str]:
        """Top-level arguments of step i with a string value found in a dependency's GT output."""
        args = self.record.gt[i].call.arguments
        return [
            k
            for k, v in args.items()
            if isinstance(v, str)
            and any(next(_paths(self.record.gt[u].output, v), None) for u in self._sources(i))
        ]

    def _required_keys(self, i: int) -> list[str]:
        call = self.record.gt[i].call
        schema = next((t.parameters for t in self.record.tools if t.name == call.name), {})
        return [k for k in schema.get("required", []) if k in call.arguments]

    def _resolve(self, i: int, key: str, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self._resolve(i, f"{key}.{k}", v) for k, v in value.items()}
        for u in self._sources(i):
            for path in _paths(self.record.gt[u].output, value):
                got = _at(self.actual.get(u, _MISSING), path)
                if got is _MISSING:
                    continue
                if self.wrong_entity and path and isinstance(path[-1], int):
                    siblings = _at(self.actual[u], path[:-1])
                    others = [x for j, x in enumerate(siblings) if j != path[-1] and not _same(x, got)]
                    if others:
                        self.wrong_entity = False
                        self.errors.append("wrong_entity")
                        return self.rng.choice(others)
                return got
        if isinstance(value, list):
            return [self._resolve(i, f"{key}[{j}]", v) for j, v in enumerate(value)]
        from agentjudge.dataset.resolve import recoverable

        if recoverable(value, self.query, self.context):
            return value
        self.unknown.append(f"step {i + 1} {self.record.gt[i].call.name}.{key}")
        return UNKNOWN

    def _call(self, i: int) -> ToolCall:
        gt = self.record.gt[i].call
        args = {k: self._resolve(i, k, v) for k, v in gt.arguments.items()}
        if i == self.hallucinate_at:
            from agentjudge.generators.simulated import _wrong

            key = self.rng.choice(self._derived_keys(i))
            args[key] = _wrong(args[key], {}, self.rng)
            self.errors.append("hallucinates_id")
        return ToolCall(name=gt.name, arguments=args)

    def script(self) -> Generator[list[ToolCall], list[Any], str]:
        """Yields each turn's calls, receives their outputs (``_MISSING``: an error), returns the answer."""
        gt, n, i = self.record.gt, len(self.record.gt), 0
        while i < n:
            if self.stop_at is not None and i >= self.stop_at:
                self.errors.append("stops_early")
                break
            batch = [i]
            special = (self.retry_at, self.repeat_at)
            while (
                batch[-1] not in special
                and batch[-1] + 1 < n
                and (self.stop_at is None or batch[-1] + 1 < self.stop_at)
                and all(u < i for u in gt[batch[-1] + 1].depends_on)
            ):
                batch.append(batch[-1] + 1)
            calls = [self._call(j) for j in batch]
            last = batch[-1]
            if last == self.retry_at:
                self.retry_at = None
                broken = dict(calls[-1].arguments)
                del broken[self.rng.choice(self._required_keys(last))]
                outputs = yield [*calls[:-1], ToolCall(name=calls[-1].name, arguments=broken)]
                self.errors.append("retries_after_error")
                self.actual.update(zip(batch[:-1], outputs[:-1], strict=True))
                outputs = [*outputs[:-1], *(yield [calls[-1]])]
            elif last == self.repeat_at:
                self.errors.append("repeats_write")
                outputs = (yield [*calls, calls[-1]])[: len(calls)]
            else:
                outputs = yield calls
            self.actual.update(zip(batch, outputs, strict=True))
            i = last + 1
        if self.unknown:
            return f"{FINAL_ANSWER} (I could not determine: {'; '.join(self.unknown)})"
        return FINAL_ANSWER


def episode_for(record: Record, difficulty: Difficulty, profile: AgentProfile, seed: int) -> _Episode:
    return _Episode(record, difficulty, profile.rates[difficulty], random.Random(seed))


def observed_turns(messages: list[dict[str, Any]]) -> list[list[Any]]:
    """The outputs the agent received, turn by turn, read from the messages (native tool-call format):
    each assistant turn with calls, then the content of its tool messages (``_MISSING`` for an error)."""
    turns: list[list[Any]] = []
    pending: dict[str, int] = {}
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            turns.append([_MISSING] * len(m["tool_calls"]))
            pending = {tc["id"]: k for k, tc in enumerate(m["tool_calls"])}
        elif m.get("role") == "tool" and turns:
            content = json.loads(m.get("content") or "null")
            k = pending.get(m.get("tool_call_id", ""))
            if k is not None and not (isinstance(content, dict) and set(content) == {"error"}):
                turns[-1][k] = content
    return turns


def next_turn(
    record: Record, difficulty: Difficulty, profile: AgentProfile, seed: int, messages: list[dict[str, Any]]
) -> tuple[list[ToolCall] | None, str, list[str]]:
    """The agent's next turn given the conversation so far: (calls, or None with the final answer text;
    the error kinds injected so far). Pure: replays the script over the outputs in ``messages``."""
    episode = episode_for(record, difficulty, profile, seed)
    script = episode.script()
    try:
        calls = next(script)
        for outputs in observed_turns(messages):
            calls = script.send(outputs)
    except StopIteration as stop:
        return None, str(stop.value), episode.errors
    return calls, "", episode.errors


class SimulatedAgentPolicy:
    """The in-process Policy of a ``sim/agent-*`` generator (interactive.run_episode drives it)."""

    def __init__(self, record: Record, task: Task, profile: AgentProfile, seed: int) -> None:
        self.record, self.difficulty, self.profile, self.seed = record, task.difficulty, profile, seed
        self.turn_no = 0
        self.errors: list[str] = []

    async def __call__(self, messages: list[dict[str, Any]]) -> Any:
        from agentjudge.generators.interactive import PlannedCall, Turn

        self.turn_no += 1
        calls, text, self.errors = next_turn(self.record, self.difficulty, self.profile, self.seed, messages)
        if calls is None:
            return Turn(text)
        return Turn(
            "", [PlannedCall(f"call_{self.turn_no}_{k}", c.name, c.arguments) for k, c in enumerate(calls)]
        )


def make_simulated_agent(settings: ModelSettings) -> Any:
    """``sim/agent-<profile>`` with ``generation: interactive`` -> an InteractiveGenerator (simulated)."""
    from agentjudge.generators.interactive import InteractiveGenerator
    from agentjudge.generators.simulated import stable_seed

    name = settings.model.removeprefix("sim/")
    profiles = agent_profiles()
    if name not in profiles:
        raise ValueError(f"unknown simulated agent {settings.model!r}; known: {', '.join(sorted(profiles))}")
    if settings.generation != "interactive":
        raise ValueError(f"{settings.model!r} is an interactive agent: set `generation: interactive` on it")
    profile = profiles[name]

    def factory(record: Record, task: Task, trial: int) -> SimulatedAgentPolicy:
        return SimulatedAgentPolicy(
            record, task, profile, stable_seed(task.record_id, settings.display_name, trial)
        )

    return InteractiveGenerator(
        settings.display_name, factory, settings.max_turns, native=True, simulated=True
    )
