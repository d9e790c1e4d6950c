"""Simulated generators ``sim/<profile>``: the GT perturbed by a seeded error profile (profiles.yaml).

Why: a whole grid — scoring, judging, statistics, reports — must run offline and reproducibly, with generators
whose error rates are known and controllable (weak to perfect, rising with difficulty). The output of a
simulated generator is labelled ``simulated=True`` everywhere; the profiles are not models.

Determinism: each prediction's random stream is seeded by sha256(record_id, generator name, trial), so results
do not depend on run order, concurrency or which other records are in the run.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field

from agentjudge.types import Difficulty, ModelSettings, Prediction, Record, Strict, Task, ToolCall, ToolSchema

# libyaml's safe loader where PyYAML has it (several times faster; what dataset/domains uses too)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

PROFILES_PATH = Path(__file__).with_name("profiles.yaml")
ERROR_TYPES: tuple[str, ...] = (
    "drop_call",
    "add_distractor_call",
    "swap_valid",
    "swap_invalid",
    "nonexistent_tool",
    "drop_required_key",
    "add_extra_key",
    "wrong_value",
    "repeat_call",
)
_NAME_SUFFIXES = ("details", "v2", "lookup", "record", "info")
_INVENTED_KEYS = ("note", "comment", "priority_hint", "dry_run", "format")


class ErrorRates(Strict):
    """Probabilities of each error type at one difficulty (units and order: see profiles.yaml)."""

    drop_call: float = Field(ge=0, le=1)
    add_distractor_call: float = Field(ge=0, le=1)
    swap_valid: float = Field(ge=0, le=1)
    swap_invalid: float = Field(ge=0, le=1)
    nonexistent_tool: float = Field(ge=0, le=1)
    drop_required_key: float = Field(ge=0, le=1)
    add_extra_key: float = Field(ge=0, le=1)
    wrong_value: float = Field(ge=0, le=1)
    repeat_call: float = Field(ge=0, le=1)


class Profile(Strict):
    description: str
    rates: dict[Difficulty, ErrorRates]


class ProfilesFile(Strict):
    error_types: dict[str, str]
    profiles: dict[str, Profile]


def load_profiles(path: Path = PROFILES_PATH) -> dict[str, Profile]:
    """Read and validate a profiles file; every profile must define all three difficulties."""
    try:
        parsed = ProfilesFile.model_validate(yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER))
    except Exception as exc:  # pydantic / yaml errors: name the file
        raise ValueError(f"{path}: invalid profiles file: {exc}") from exc
    if set(parsed.error_types) != set(ERROR_TYPES):
        raise ValueError(f"{path}: error_types must document exactly {sorted(ERROR_TYPES)}")
    for name, prof in parsed.profiles.items():
        missing = {"easy", "medium", "hard"} - set(prof.rates)
        if missing:
            raise ValueError(f"{path}: profile {name!r} lacks rates for {sorted(missing)}")
    return parsed.profiles


@lru_cache(maxsize=1)
def _builtin_profiles() -> dict[str, Profile]:
    return load_profiles(PROFILES_PATH)


def profile_names() -> list[str]:
    """The built-in profiles, as ``sim/<name>`` model strings take them."""
    return sorted(_builtin_profiles())


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from the parts' text; stable across processes (unlike ``hash``)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


# ---- value helpers ---------------------------------------------------------------------------------------


def _placeholder(prop: dict[str, Any]) -> Any:
    """A type-appropriate value for a JSON Schema property."""
    if prop.get("enum"):
        return prop["enum"][0]
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    defaults: dict[str, Any] = {"integer": 1, "number": 1.0, "boolean": False, "array": [], "object": {}}
    return defaults.get(str(kind), "sample")


def _wrong(value: Any, prop: dict[str, Any], rng: random.Random) -> Any:
    """A different value of the same type (another enum member when the schema lists them)."""
    others = [v for v in prop.get("enum") or [] if v != value]
    if others:
        return rng.choice(others)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.randint(1, 9)
    if isinstance(value, float):
        return round(value + max(1.0, abs(value) * 0.5), 2)
    if isinstance(value, str):
        digits = [i for i, ch in enumerate(value) if ch.isdigit()]
        if digits:
            i = rng.choice(digits)
            return value[:i] + str((int(value[i]) + rng.randint(1, 9)) % 10) + value[i + 1 :]
        return f"{value} alt" if value.strip() else "unknown"
    if isinstance(value, list):
        if not value:
            return [_placeholder(prop.get("items") or {})]
        out = list(value)
        i = rng.randrange(len(out))
        out[i] = _wrong(out[i], prop.get("items") or {}, rng)
        return out
    if isinstance(value, dict):
        if not value:
            return {"value": "unknown"}
        out_d = dict(value)
        key = rng.choice(sorted(out_d))
        out_d[key] = _wrong(out_d[key], (prop.get("properties") or {}).get(key, {}), rng)
        return out_d
    return "unknown"  # None or an exotic JSON value: any string differs


# ---- order helpers ---------------------------------------------------------------------------------------


def _respects(order: list[int], edges: list[tuple[int, int]]) -> bool:
    pos = {node: i for i, node in enumerate(order)}
    return all(pos[u] < pos[v] for u, v in edges if u in pos and v in pos)


def _swapped(order: list[int], p: int, q: int) -> list[int]:
    out = list(order)
    out[p], out[q] = out[q], out[p]
    return out


def _swap_candidates(
    order: list[int], names: list[str], edges: list[tuple[int, int]], valid: bool
) -> list[tuple[int, int]]:
    """Position pairs whose swap keeps (valid) or breaks (not valid) the dependency order. Pairs of the same
    tool are skipped: swapping two loop items is invisible to the tool sequence."""
    out = []
    for p in range(len(order)):
        for q in range(p + 1, len(order)):
            if names[order[p]] == names[order[q]]:
                continue
            if _respects(_swapped(order, p, q), edges) == valid:
                out.append((p, q))
    return out


# ---- the perturbation ------------------------------------------------------------------------------------


def perturb(
    record: Record, difficulty: Difficulty, profile: Profile, rng: random.Random
) -> tuple[list[ToolCall], list[str]]:
    """The perturbed calls and the list of error types applied (in order), for tests and diagnostics."""
    rates = profile.rates[difficulty]
    schemas: dict[str, ToolSchema] = {t.name: t for t in record.tools}
    offered = set(schemas)
    names = [s.call.name for s in record.gt]
    edges = record.edges
    log: list[str] = []
    order = list(range(len(record.gt)))
    for kind, valid in (("swap_valid", True), ("swap_invalid", False)):
        if rng.random() < getattr(rates, kind):
            cands = _swap_candidates(order, names, edges, valid)
            if cands:
                order = _swapped(order, *rng.choice(cands))
                log.append(kind)
    out: list[ToolCall] = []
    for idx in order:
        if rng.random() < rates.drop_call:
            log.append("drop_call")
            continue
        gt_call = record.gt[idx].call
        name, args = gt_call.name, copy.deepcopy(gt_call.arguments)
        params = schemas[name].parameters if name in schemas else {}
        props: dict[str, Any] = params.get("properties") or {}
        if rng.random() < rates.nonexistent_tool:
            fresh = [f"{name}_{s}" for s in _NAME_SUFFIXES if f"{name}_{s}" not in offered]
            if fresh:
                name = rng.choice(fresh)
                log.append("nonexistent_tool")
        if rng.random() < rates.drop_required_key:
            # the scorer's rule: the schema's required keys when the tool is known, else the GT call's keys
            required = (
                sorted(set(params.get("required") or []) & set(args))
                if gt_call.name in schemas
                else sorted(args)
            )
            if required:
                del args[rng.choice(required)]
                log.append("drop_required_key")
        if rng.random() < rates.add_extra_key:
            optional = sorted(set(props) - set(args))
            invented = [k for k in _INVENTED_KEYS if k not in props and k not in args]
            if optional and (rng.random() < 0.5 or not invented):
                key = rng.choice(optional)
                args[key] = _placeholder(props[key])
                log.append("add_extra_key")
            elif invented:
                args[rng.choice(invented)] = "auto"
                log.append("add_extra_key")
        gt_keys = sorted(set(args) & set(gt_call.arguments))
        if rng.random() < rates.wrong_value and gt_keys:
            key = rng.choice(gt_keys)
            args[key] = _wrong(args[key], props.get(key) or {}, rng)
            log.append("wrong_value")
        call = ToolCall(name=name, arguments=args)
        out.append(call)
        if rng.random() < rates.repeat_call:
            out.append(call.model_copy(deep=True))
            log.append("repeat_call")
    if rng.random() < rates.add_distractor_call:
        used = set(names)
        distractors = sorted(n for n in offered if n not in used)
        if distractors:
            tool = schemas[rng.choice(distractors)]
            tprops = tool.parameters.get("properties") or {}
            args = {k: _placeholder(tprops.get(k) or {}) for k in tool.parameters.get("required") or []}
            out.insert(rng.randint(0, len(out)), ToolCall(name=tool.name, arguments=args))
            log.append("add_distractor_call")
    return out, log


def apply_profile(
    record: Record, difficulty: Difficulty, profile: Profile, rng: random.Random
) -> list[ToolCall]:
    """The calls a simulated generator with ``profile`` produces for ``record`` at ``difficulty``."""
    return perturb(record, difficulty, profile, rng)[0]


class SimulatedGenerator:
    """A Generator over the GT. Tasks carry no GT, so the runner must ``bind`` the records first."""

    def __init__(self, name: str, profile_name: str, profile: Profile) -> None:
        self.name = name
        self.profile_name = profile_name
        self.profile = profile
        self._records: dict[str, Record] | None = None

    def bind(self, records: dict[str, Record]) -> SimulatedGenerator:
        """Give the generator the records (keyed by base id) whose GT it perturbs; returns self."""
        self._records = records
        return self

    def predict(self, task: Task, trial: int) -> Prediction:
        """Synchronous core of ``__call__`` (no I/O happens)."""
        if self._records is None:
            raise RuntimeError(f"{self.name}: simulated generator used before bind(records) was called")
        record = self._records.get(task.base_id)
        if record is None:
            raise KeyError(
                f"{self.name}: task {task.record_id} has base id {task.base_id!r}, not among bound records"
            )
        rng = random.Random(stable_seed(task.record_id, self.name, trial))
        calls = apply_profile(record, task.difficulty, self.profile, rng)
        raw = json.dumps([{"name": c.name, "arguments": c.arguments} for c in calls], ensure_ascii=False)
        return Prediction.for_task(
            task,
            self.name,
            trial,
            calls=calls,
            raw_output=raw,
            simulated=True,
        )

    async def __call__(self, task: Task, trial: int) -> Prediction:
        return self.predict(task, trial)


def make_simulated_generator(settings: ModelSettings) -> SimulatedGenerator:
    """``sim/<profile>`` -> a SimulatedGenerator with that profile of profiles.yaml."""
    model = settings.model
    if not model.startswith("sim/"):
        raise ValueError(f"not a simulated generator: {model!r} (expected sim/<profile>)")
    profile_name = model.removeprefix("sim/")
    profiles = _builtin_profiles()
    if profile_name not in profiles:
        known = ", ".join(f"sim/{p}" for p in profiles)
        raise ValueError(f"unknown simulated profile {model!r}; known profiles: {known}")
    return SimulatedGenerator(settings.display_name, profile_name, profiles[profile_name])
