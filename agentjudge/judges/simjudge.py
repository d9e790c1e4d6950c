"""Simulated judges ``simjudge/<profile>``: the reference, snapped, with planted and documented mistakes.

Why: every estimator of the report (GT gain, anchoring, temperature, chain-of-thought, format and
0.5-default deltas, κ, jury, the guide's margins) must be shown to find an effect of KNOWN size, and the
offline quickstart must have something in every research-question section. A simulated judge is an
oracle plus planted noise (rules in ``simjudge_profiles.yaml``), labelled simulated everywhere; it measures
no model.

``planted_verdicts`` is the one vectorised rule; the judge applies it to the four metrics of one request,
and ``bench/bench_estimators.py`` applies it to millions of rows to check bias and CI coverage — the same
code, so the bench validates what the quickstart plants.

Determinism: the random numbers of a request come from sha256(profile, record, generator output, trial)
(common random numbers across conditions and prompt variants); the scenario effect from sha256(base id).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml
from pydantic import Field

from agentjudge.types import (
    DIFFICULTIES,
    METRICS,
    Difficulty,
    JudgeRequest,
    JudgeResult,
    Metric,
    ModelSettings,
    Strict,
)

# libyaml's safe loader where PyYAML has it (several times faster; what dataset/domains uses too)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

PREFIX = "simjudge/"
PROFILES_PATH = Path(__file__).with_name("simjudge_profiles.yaml")
Prob = float


class SimJudgeProfile(Strict):
    """One planted operating point; field meanings in simjudge_profiles.yaml."""

    description: str
    error: dict[Metric, dict[Difficulty, Prob]]
    lenient_share: float = Field(ge=0, le=1)
    gt_gain: float = Field(ge=0, le=1)
    anchoring: float = Field(ge=0, le=1)
    temperature_noise: float = Field(ge=0, le=1)
    default_temperature: float = Field(ge=0, le=2)
    cot_gain: float = Field(ge=-1, le=1)
    freeform_penalty: float = Field(ge=-1, le=5)
    freeform_sd: float = Field(ge=0, le=1)
    hedge_05: float = Field(ge=0, le=1)
    parse_failure: dict[str, Prob]
    item_sd: float = Field(ge=0, le=2)

    def error_matrix(self) -> np.ndarray:
        """(4 metrics × 3 difficulties) base error rates, in METRICS × DIFFICULTIES order."""
        return np.array([[self.error[m][d] for d in DIFFICULTIES] for m in METRICS], dtype=float)


class _ProfilesFile(Strict):
    profiles: dict[str, SimJudgeProfile]


@lru_cache(maxsize=4)
def load_profiles(path: Path = PROFILES_PATH) -> dict[str, SimJudgeProfile]:
    """Read and validate the profiles; every profile defines every metric × difficulty and both formats."""
    try:
        parsed = _ProfilesFile.model_validate(
            yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
        )
    except Exception as exc:  # pydantic / yaml errors: name the file
        raise ValueError(f"{path}: invalid simulated-judge profiles: {exc}") from exc
    for name, prof in parsed.profiles.items():
        for m in METRICS:
            missing = set(DIFFICULTIES) - set(prof.error.get(m, {}))
            if missing:
                raise ValueError(f"{path}: profile {name!r}: error.{m} lacks {sorted(missing)}")
            if any(not 0 <= v <= 1 for v in prof.error[m].values()):
                raise ValueError(f"{path}: profile {name!r}: error.{m} must be probabilities in [0, 1]")
        if set(prof.parse_failure) != {"json", "freeform"}:
            raise ValueError(f"{path}: profile {name!r}: parse_failure needs exactly json and freeform")
    return parsed.profiles


@dataclass
class Draws:
    """Uniform (and one normal) random numbers, one per verdict row; see ``draws_for``."""

    err: np.ndarray
    up: np.ndarray
    anchor: np.ndarray
    hedge: np.ndarray
    parse: np.ndarray
    noise: np.ndarray

    @classmethod
    def sample(cls, rng: np.random.Generator, n: int) -> Draws:
        u = rng.random((5, n))
        return cls(u[0], u[1], u[2], u[3], u[4], rng.standard_normal(n))


def item_effect(z: np.ndarray | float, sd: float) -> np.ndarray:
    """Scenario multiplier of the error rate: log-normal with mean 1 (so base rates stay the mean)."""
    return np.exp(sd * np.asarray(z, dtype=float) - sd * sd / 2)


def planted_verdicts(
    p: SimJudgeProfile,
    truth: np.ndarray,
    metric: np.ndarray,
    difficulty: np.ndarray,
    z: np.ndarray,
    gt_shown: np.ndarray,
    shown_level: np.ndarray,
    cot: np.ndarray,
    freeform: np.ndarray,
    default05: np.ndarray,
    temperature: np.ndarray,
    d: Draws,
) -> np.ndarray:
    """Verdicts (NaN = parse failure) for rows of: truth level in {0, 0.5, 1}, metric / difficulty index,
    scenario z, GT shown (bool), the level the shown GT implies, prompt factors and temperature (NaN = the
    model default). All arrays broadcast to one length. The rules are in simjudge_profiles.yaml."""
    return planted(p, truth, metric, difficulty, z, gt_shown, shown_level, cot, freeform, default05,
                   temperature, d).verdict  # fmt: skip


@dataclass
class Planted:
    """``planted_verdicts``' verdicts with which of the profile's rules fired on each row, in the order they
    apply: the error rate ``rate``, a wrong verdict (``wrong``, one level ``up`` or down), the shown GT's
    level copied (``anchored``), the 0.5-default's ``hedged`` 0.5, and a ``failed`` parse. What the
    simulated judge's rationale says, so a reader of one item sees why its verdict differs from the
    reference."""

    verdict: np.ndarray
    rate: np.ndarray
    wrong: np.ndarray
    up: np.ndarray
    anchored: np.ndarray
    hedged: np.ndarray
    failed: np.ndarray


def planted(
    p: SimJudgeProfile,
    truth: np.ndarray,
    metric: np.ndarray,
    difficulty: np.ndarray,
    z: np.ndarray,
    gt_shown: np.ndarray,
    shown_level: np.ndarray,
    cot: np.ndarray,
    freeform: np.ndarray,
    default05: np.ndarray,
    temperature: np.ndarray,
    d: Draws,
) -> Planted:
    """``planted_verdicts`` with the rules that fired (``Planted``): the one implementation of the rule."""
    truth = np.asarray(truth, dtype=float)
    temp = np.where(np.isnan(temperature), p.default_temperature, temperature)
    e = p.error_matrix()[metric, difficulty] * item_effect(z, p.item_sd)
    e = e * np.where(gt_shown, 1 - p.gt_gain, 1.0) * np.where(cot, 1 - p.cot_gain, 1.0)
    e = e * np.where(freeform, 1 + p.freeform_penalty, 1.0) + p.temperature_noise * temp
    e = np.clip(e, 0.0, 0.95)
    wrong = d.err < e
    go_up = np.where(truth >= 1.0, False, np.where(truth <= 0.0, True, d.up < p.lenient_share))
    verdict = np.where(wrong, truth + np.where(go_up, 0.5, -0.5), truth)
    anchored = gt_shown & (d.anchor < p.anchoring)
    verdict = np.where(anchored, shown_level, verdict)
    wrong_now = verdict != truth
    hedge = np.where(wrong_now, d.hedge < p.hedge_05, (verdict != 0.5) & (d.hedge < p.hedge_05 / 4))
    verdict = np.where(default05 & hedge, 0.5, verdict)
    verdict = np.where(freeform, np.clip(verdict + p.freeform_sd * d.noise, 0.0, 1.0), verdict)
    fail_rate = np.where(freeform, p.parse_failure["freeform"], p.parse_failure["json"])
    failed = d.parse < fail_rate
    n = np.broadcast(truth, e).shape
    return Planted(
        np.where(failed, np.nan, verdict),
        np.broadcast_to(e, n),
        np.broadcast_to(wrong, n),
        np.broadcast_to(go_up, n),
        np.broadcast_to(anchored, n),
        np.broadcast_to(default05 & hedge, n),
        np.broadcast_to(failed, n),
    )


def rationale(
    profile_name: str, metric: str, truth: float, shown: float, p: Planted, i: int, freeform_sd: float = 0.0
) -> str:
    """Why simulated judge ``profile_name`` gave row ``i``'s verdict on ``metric``: which planted rule fired
    (simjudge_profiles.yaml), or that none did; the reference level it started from; ``freeform_sd``: the
    free-form prompt's noise on the level (0: a JSON prompt, three levels)."""
    what = f"simulated judge {profile_name} (not a model), {metric}: reference level {truth:g}; "
    rate = f"planted error rate {float(p.rate[i]):.2f} here"
    steps = []
    if p.wrong[i]:
        steps.append(f"a planted error fired ({rate}): one level {'up' if p.up[i] else 'down'}")
    if p.anchored[i]:
        steps.append(f"anchoring fired: it copied the shown GT's tool overlap ({shown:g})")
    if p.hedged[i]:
        steps.append("the 0.5-default hedge fired: 0.5")
    if not steps:
        steps.append(f"no planted error fired ({rate})")
    if freeform_sd:
        steps.append(f"the free-form prompt's noise moved it (sd {freeform_sd:g})")
    return what + "; then ".join(steps) + "."


def _seed(*parts: object) -> int:
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "little")


def scenario_z(base_id: str) -> float:
    """The scenario's shared difficulty for simulated judges (same for every profile and condition)."""
    return float(np.random.default_rng(_seed("scenario", base_id)).standard_normal())


def _snap(x: float) -> float:
    return float(np.floor(np.clip(x, 0.0, 1.0) * 2 + 0.5) / 2)


class SimulatedJudge:
    """``simjudge/<profile>``: reads the reference (like the oracle) and plants the profile's mistakes."""

    needs_reference = True

    def __init__(self, name: str, profile_name: str, profile: SimJudgeProfile) -> None:
        self.name = name
        self.profile_name = profile_name
        self.profile = profile

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        if request.reference is None or "strict" not in request.reference:
            raise ValueError(
                f"{self.name} needs JudgeRequest.reference['strict'] for {request.task.record_id}; the "
                "runner passes it to judges with needs_reference=True"
            )
        ref = request.reference["strict"]
        calls = [c.model_dump(mode="json") for c in request.calls]
        rng = np.random.default_rng(_seed(self.profile_name, request.task.record_id, calls, request.trial))
        shown = 0.0
        if request.gt is not None:
            called = {c.name for c in request.calls}
            expected = {step.call.name for step in request.gt}
            union = called | expected
            shown = _snap(len(called & expected) / len(union)) if union else 1.0
        v = request.variant
        n = len(METRICS)
        draws = Draws.sample(rng, n)
        draws.parse[:] = draws.parse[0]  # a parse failure loses the whole answer, not one metric
        rules = planted(
            self.profile,
            truth=np.array([_snap(ref[m]) for m in METRICS]),
            metric=np.arange(n),
            difficulty=np.full(n, DIFFICULTIES.index(request.task.difficulty)),
            z=np.full(n, scenario_z(request.task.base_id)),
            gt_shown=np.full(n, request.gt is not None),
            shown_level=np.full(n, shown),
            cot=np.full(n, v.cot),
            freeform=np.full(n, v.prompt_format == "freeform"),
            default05=np.full(n, v.default_mode == "0.5"),
            temperature=np.full(n, np.nan if request.temperature is None else request.temperature),
            d=draws,
        )
        verdicts = rules.verdict
        failed = bool(np.isnan(verdicts).any())
        if failed:  # planted on purpose: a judge's answers sometimes cannot be read
            note = (
                f"simulated judge {self.profile_name} (not a model): a planted parse failure fired (rate "
                f"{self.profile.parse_failure['freeform' if v.prompt_format == 'freeform' else 'json']:g}, "
                "simjudge_profiles.yaml): no verdict, counted like any judge's parse failure"
            )
            rationales: dict[str, str] = {**dict.fromkeys(METRICS, note), "overall": note}
        else:
            truth = [_snap(ref[m]) for m in METRICS]
            noise = self.profile.freeform_sd if v.prompt_format == "freeform" else 0.0
            rationales = {
                m: rationale(self.profile_name, m, truth[i], shown, rules, i, noise)
                for i, m in enumerate(METRICS)
            }
            rationales["overall"] = (
                f"simulated judge {self.profile_name}: the reference with planted errors "
                "(simjudge_profiles.yaml); not a model"
            )
        return JudgeResult(
            verdicts={m: (None if failed else float(verdicts[i])) for i, m in enumerate(METRICS)},
            rationales=rationales,
            parse_ok=not failed,
            raw_output=f"{self.name}: " + ("SIMULATED PARSE FAILURE" if failed else rationales["overall"]),
        )


def make_simulated_judge(settings: ModelSettings) -> SimulatedJudge:
    """The judge named ``simjudge/<profile>``; its name is the display name."""
    profile = settings.model.removeprefix(PREFIX)
    profiles = load_profiles()
    if not settings.model.startswith(PREFIX) or profile not in profiles:
        raise ValueError(f"unknown simulated judge {settings.model!r}; known: {', '.join(sorted(profiles))}")
    return SimulatedJudge(settings.display_name, profile, profiles[profile])
