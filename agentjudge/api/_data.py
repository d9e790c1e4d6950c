"""``generate``, ``validate``, ``audit`` and ``score``: the dataset, its gates, a sample for a person, the
programmatic scorer."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentjudge.errors import InputError, PreflightError

if TYPE_CHECKING:
    from agentjudge.dataset.audit import AuditSample
    from agentjudge.scoring.files import Scored
    from agentjudge.types import Record, ValidationReport


@dataclass(frozen=True)
class GenerateResult:
    """The dataset written to ``out`` (records.jsonl, manifest.json), its manifest and the seconds taken."""

    out: Path
    manifest: dict[str, Any]
    seconds: float

    @property
    def llm_call_failures(self) -> dict[str, int]:
        """Failed LLM calls by reason (with ``llm``): those queries kept the deterministic text."""
        reasons = (self.manifest.get("rewrites") or {}).get("failed", {}) or {}
        by_reason: dict[str, int] = reasons.get("failed_attempts_by_reason", {})
        return {k: n for k, n in by_reason.items() if "model_error" in k}


def generate(
    out: Path | str, *, size: str = "mini", seed: int = 0, llm: str | None = None, api_base: str | None = None
) -> GenerateResult:
    """Synthesize the dataset into ``out``: tools, executed GT traces, three difficulty queries, both gates
    (``agentjudge generate``); the same seed gives byte-identical files. ``llm``: a litellm model that
    writes scenario texts and rewrites. Raises ``InputError`` (a bad size or output folder, a failed
    preflight of ``llm``) before anything is written; ``GenerationError`` or ``ModelCallError`` when a
    scenario could not be made (nothing written)."""
    from agentjudge.dataset.generate import SIZES
    from agentjudge.dataset.generate import generate as build
    from agentjudge.fserrors import out_path_problem

    out = Path(out)
    if size not in SIZES:
        raise InputError(f"--size must be one of {', '.join(SIZES)}, got {size!r}")
    if (problem := out_path_problem(out, "dir")) is not None:
        raise InputError(f"--out {problem}")
    if llm is not None:  # fail fast on a model that cannot work, never fall back to the deterministic text
        from agentjudge.registry.preflight import ModelUse, preflight
        from agentjudge.types import ModelSettings

        problems = preflight([ModelUse("generator", ModelSettings(model=llm, api_base=api_base), "--llm")])
        if problems:
            raise PreflightError(problems, "nothing was generated or written")
    started = time.perf_counter()
    manifest = build(out, size, seed, llm=llm, api_base=api_base)
    return GenerateResult(out, manifest, time.perf_counter() - started)


@dataclass(frozen=True)
class ValidationResult:
    """Gate 1 and Gate 2 on every record of ``path``: one report per record, in file order."""

    path: Path
    records: tuple[Record, ...]
    reports: tuple[ValidationReport, ...]

    @property
    def failing(self) -> list[tuple[Record, ValidationReport]]:
        return [(r, rep) for r, rep in zip(self.records, self.reports, strict=True) if not rep.passed]

    @property
    def findings_by_reason(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(gate, reason) -> (findings, records), most findings first."""
        by_code: Counter[tuple[str, str]] = Counter()
        records_by_code: dict[tuple[str, str], set[str]] = {}
        for record, rep in self.failing:
            for f in rep.findings:
                by_code[(f.gate, f.code)] += 1
                records_by_code.setdefault((f.gate, f.code), set()).add(record.id)
        ordered = sorted(by_code.items(), key=lambda kv: (-kv[1], kv[0]))
        return {code: (n, len(records_by_code[code])) for code, n in ordered}

    @property
    def replay_skipped(self) -> int:
        """Records whose calls could not be replayed (no executable environment)."""
        return sum(1 for rep in self.reports if rep.gates_run and "gate1:replay" not in rep.gates_run)

    @property
    def exit_code(self) -> int:
        """The command line's: 0 every record passes, 1 some fail."""
        return 1 if self.failing else 0


def validate(path: Path | str) -> ValidationResult:
    """Both gates on a file in the published layout (``agentjudge validate``); our files and downloaded
    ones (the checks that need dependency edges or an environment are skipped and say so). Raises
    ``InputError`` (``LayoutError``) naming file, line, record and field for an unreadable file."""
    from agentjudge.dataset.validate import check_records, read_dataset

    path = Path(path)
    records = read_dataset(path)
    return ValidationResult(path, tuple(records), tuple(check_records(records)))


def audit(path: Path | str, *, n: int = 60, seed: int = 0, difficulty: str | None = None) -> AuditSample:
    """A topology-stratified sample of ``n`` records for a person to grade (``agentjudge audit``);
    ``difficulty``: comma-separated difficulties cycled over the sample (default: hard, or the hardest query
    a record has). ``dataset.audit.render`` writes one sampled record as the verb prints it."""
    from agentjudge.dataset.audit import audit_sample

    return audit_sample(Path(path), n, seed, difficulty)


def score(
    data: Path | str,
    predictions: Path | str,
    out: Path | str,
    *,
    mode: str = "both",
    lenient: bool = False,
    value_matches: Path | str | None = None,
) -> Scored:
    """Score predictions with the programmatic scorer and write ``out`` (``.parquet`` or ``.csv``);
    ``agentjudge score``. ``mode``: paper, strict or both; ``lenient``: strict mode scores schema-allowed
    extra keys 1.0; ``value_matches``: also write which accepted value each argument matched (``.jsonl``).
    Failed predictions are counted, never scored as 0. Raises ``InputError`` before anything is written."""
    from agentjudge.scoring.files import score_files

    matches = None if value_matches is None else Path(value_matches)
    return score_files(Path(data), Path(predictions), Path(out), mode, lenient, matches)
