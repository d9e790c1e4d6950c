"""Synthetic run folders for tests and benchmarks of the statistics and the report.

Why it exists: the analyses must be built and timed before real runs exist, and a paper-scale table
(1.29 M rows) is needed to measure the report's speed. Every table produced here has exactly the columns
of docs/formats.md and is clearly SYNTHETIC: generators are named ``sim/...`` and meta.json
says ``"synthetic": true``. Verdicts are plausible (noisy snapped references, a leniency bias without GT),
not meaningful results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentjudge import strict_json
from agentjudge.atomic import replacing, write_text
from agentjudge.rundir.columns import JUDGMENT_COLUMNS
from agentjudge.rundir.meta import FORMAT_VERSION
from agentjudge.types import DIFFICULTIES, METRICS, TOPOLOGIES

DOMAINS = (
    "itsm",
    "hr",
    "crm",
    "finance",
    "retail",
    "travel",
    "health",
    "legal",
    "logistics",
    "banking",
    "insurance",
    "telecom",
    "education",
    "energy",
    "realestate",
)


@dataclass
class Variant:
    """One judging variant of the grid (condition + prompt + temperature) and how many trials."""

    condition: str = "with_gt"
    prompt_format: str = "json"
    cot: bool = False
    default_mode: str = "1.0"
    temperature: float = float("nan")
    trials: int = 1


@dataclass
class SyntheticSpec:
    n_base: int = 60
    generators: dict[str, float] = field(default_factory=lambda: {"sim/strong": 0.8, "sim/weak": 0.45})
    judges: dict[str, int] = field(
        default_factory=lambda: {"judge-a": 1, "judge-b": 2, "baseline/majority": 3}
    )
    variants: list[Variant] = field(
        default_factory=lambda: [Variant(condition="with_gt"), Variant(condition="without_gt")]
    )
    scoring_modes: tuple[str, ...] = ("strict",)
    generator_trials: int = 1
    failure_rate: float = 0.02
    seed: int = 0
    keep_judgments: int | None = None  # keep a random subset of this many judgments (4 metric rows each)


def _references(spec: SyntheticSpec, rng: np.random.Generator) -> pd.DataFrame:
    """One row per (base, difficulty, generator, generator_trial, metric) with a continuous reference."""
    base_ids = [f"{DOMAINS[i % len(DOMAINS)]}-{i:04d}" for i in range(spec.n_base)]
    gens = list(spec.generators)
    idx = pd.MultiIndex.from_product(
        [range(spec.n_base), range(3), range(len(gens)), range(spec.generator_trials), range(4)],
        names=["b", "d", "g", "gt", "m"],
    ).to_frame(index=False)
    strength = np.array([spec.generators[g] for g in gens])[idx["g"].to_numpy()]
    topo_pen = (idx["b"].to_numpy() % 6) * 0.03
    p_perfect = np.clip(strength - 0.12 * idx["d"].to_numpy() - topo_pen, 0.05, 0.97)
    perfect = rng.random(len(idx)) < p_perfect
    partial = rng.choice([0.0, 0.25, 1 / 3, 0.5, 2 / 3, 0.75, 0.8], size=len(idx))
    ref = np.where(perfect, 1.0, partial)
    b = idx["b"].to_numpy()
    out = pd.DataFrame(
        {
            "base_id": pd.Categorical(np.array(base_ids, dtype=object)[b]),
            "domain": pd.Categorical(np.array([s.split("-")[0] for s in base_ids], dtype=object)[b]),
            "topology": pd.Categorical(np.array(TOPOLOGIES, dtype=object)[b % 6]),
            "difficulty": pd.Categorical(
                np.array(DIFFICULTIES, dtype=object)[idx["d"].to_numpy()], categories=list(DIFFICULTIES)
            ),
            "generator": pd.Categorical(np.array(gens, dtype=object)[idx["g"].to_numpy()]),
            "generator_trial": idx["gt"].to_numpy(),
            "metric": pd.Categorical(
                np.array(METRICS, dtype=object)[idx["m"].to_numpy()], categories=list(METRICS)
            ),
            "reference": ref,
        }
    )
    out["record_id"] = pd.Categorical(out["base_id"].astype(str) + ":" + out["difficulty"].astype(str))
    return out


def _judge(
    ref: pd.DataFrame,
    judge: str,
    tier: int,
    var: Variant,
    trial: int,
    mode: str,
    spec: SyntheticSpec,
    rng: np.random.Generator,
) -> pd.DataFrame:
    n = len(ref)
    r = ref["reference"].to_numpy()
    noise_sd = 0.12 + 0.06 * tier + (0.05 if var.condition != "with_gt" else 0.0)
    noise_sd += 0.02 * (0.0 if np.isnan(var.temperature) else var.temperature)
    noise_sd -= 0.01 if var.cot else 0.0
    noise_sd += 0.04 if var.prompt_format == "freeform" else 0.0
    lenient = 0.25 if var.condition == "without_gt" else 0.05
    if var.default_mode == "0.5":
        lenient -= 0.15
    x = r + rng.normal(0.0, noise_sd, n) + lenient * (1 - r)
    if var.prompt_format == "freeform":
        verdict = np.clip(x, 0.0, 1.0)
    else:
        verdict = np.floor(np.clip(x, 0, 1) * 2 + 0.5) / 2
    fail = rng.random(n) < spec.failure_rate
    verdict[fail] = np.nan
    out = ref.copy()
    out["judge"] = judge
    out["condition"] = var.condition
    out["prompt_format"] = var.prompt_format
    out["cot"] = var.cot
    out["default_mode"] = var.default_mode
    out["temperature"] = var.temperature
    out["trial"] = trial
    out["scoring_mode"] = mode
    out["verdict"] = verdict
    out["parse_ok"] = ~fail
    out["rationale"] = np.where(fail, "", "synthetic verdict")
    out["judge_error"] = pd.array([None] * n, dtype="string")
    out["source"] = "synthetic"
    return out


def make_judgments(spec: SyntheticSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (judgments, references) with the judgments columns of docs/formats.md."""
    rng = np.random.default_rng(spec.seed)
    ref = _references(spec, rng)
    parts = []
    for mode in spec.scoring_modes:
        mref = ref.copy()
        if mode == "paper":
            mref["reference"] = np.clip(mref["reference"] + 0.05, 0, 1)
        for judge, tier in spec.judges.items():
            for var in spec.variants:
                for t in range(var.trials):
                    parts.append(_judge(mref, judge, tier, var, t, mode, spec, rng))
    jd = pd.concat(parts, ignore_index=True)
    if spec.keep_judgments is not None:
        # rows come in blocks of the four metrics of one judgment (metric is the innermost axis)
        units = len(jd) // 4
        if spec.keep_judgments > units:
            raise ValueError(f"keep_judgments={spec.keep_judgments} exceeds the {units} judgments generated")
        keep = np.sort(rng.choice(units, size=spec.keep_judgments, replace=False))
        rows = (keep[:, None] * 4 + np.arange(4)[None, :]).ravel()
        jd = jd.iloc[rows].reset_index(drop=True)
    for col in ("judge", "condition", "prompt_format", "default_mode", "scoring_mode"):
        jd[col] = jd[col].astype("category")
    return jd, ref


def write_run(rundir: Path, spec: SyntheticSpec) -> pd.DataFrame:
    """Write judgments/scores/predictions parquet and meta.json; returns the judgments table."""
    rundir.mkdir(parents=True, exist_ok=True)
    jd, ref = make_judgments(spec)
    cols = list(JUDGMENT_COLUMNS)
    with replacing(rundir / "judgments.parquet") as tmp:
        jd[cols].to_parquet(tmp, index=False)
    keys = ["record_id", "base_id", "domain", "topology", "difficulty", "generator", "generator_trial"]
    sc = ref.pivot_table(index=keys, columns="metric", values="reference", observed=True).reset_index()
    renames: dict[str, str] = {m: f"p_{m}" for m in METRICS}
    renames["generator_trial"] = "trial"
    sc = sc.rename(columns=renames)
    sc.columns.name = None
    scores = []
    for mode in spec.scoring_modes:
        s = sc.copy()
        if mode == "paper":
            for m in METRICS:
                s[f"p_{m}"] = np.clip(s[f"p_{m}"] + 0.05, 0, 1)
        s["scoring_mode"] = mode
        s["p_value"] = s["p_param"]
        s["p_seq_dag"] = s["p_seq"]
        s["state_match"] = s[[f"p_{m}" for m in METRICS]].min(axis=1) == 1.0
        scores.append(s)
    with replacing(rundir / "scores.parquet") as tmp:
        pd.concat(scores, ignore_index=True).to_parquet(tmp, index=False)
    pred = sc[["record_id", "base_id", "difficulty", "generator", "trial"]].copy()
    pred["calls_json"] = '[{"name": "lookup", "arguments": {"id": "X-1"}}]'
    pred["raw_output"] = pred["calls_json"]
    pred["error"] = pd.array([None] * len(pred), dtype="string")
    pred["simulated"] = True
    pred["prompt_tokens"] = 0
    pred["completion_tokens"] = 0
    pred["cost_usd"] = 0.0
    pred["cached"] = False
    with replacing(rundir / "predictions.parquet") as tmp:
        pred.to_parquet(tmp, index=False)
    meta: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "synthetic": True,
        "seed": spec.seed,
        "pipeline": {"name": "synthetic", "data": None},
        "judges": {
            j: {"tier": t, "kind": "baseline" if j.startswith("baseline/") else "llm", "simulated": False}
            for j, t in spec.judges.items()
        },
        "generators": {g: {"tier": None, "kind": "simulated", "simulated": True} for g in spec.generators},
    }
    write_text(rundir / "meta.json", strict_json.dumps(meta, indent=2))
    return jd
