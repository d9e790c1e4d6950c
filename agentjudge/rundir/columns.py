"""Column names of the run folder's tables, in file order: the contract of docs/formats.md in one place.

The runner's exporter builds its Arrow schemas from these, the infer/score verbs write them, ``RunFolder``
reads them (a file lacking a column that is not a later addition is refused); other tools rely on the
names, so extend rather than rename (a rename or removal bumps ``meta.FORMAT_VERSION``).
"""

from __future__ import annotations

PREDICTION_COLUMNS: tuple[str, ...] = (
    "record_id", "base_id", "difficulty", "generator", "trial", "calls_json", "raw_output", "error",
    "simulated", "prompt_tokens", "completion_tokens", "cost_usd", "cached",
    "generation", "turns", "stop_reason", "trajectory_json",  # interactive generation (null single-shot)
    "cached_prompt_tokens",  # prompt tokens the provider served from its prefix cache
)  # fmt: skip
# prediction columns added after the first release: files written before them are still read
LATER_PREDICTION_COLUMNS: tuple[str, ...] = (
    "generation", "turns", "stop_reason", "trajectory_json", "cached_prompt_tokens",
)  # fmt: skip
SCORE_COLUMNS: tuple[str, ...] = (
    "record_id", "base_id", "domain", "topology", "difficulty", "generator", "trial", "scoring_mode",
    "p_tool", "p_param", "p_seq", "p_cov", "p_value", "p_seq_dag", "state_match", "source",
    "writes_done",
)  # fmt: skip
# score columns added after the first release: files written before them are still read
LATER_SCORE_COLUMNS: tuple[str, ...] = ("source", "writes_done")
JUDGMENT_COLUMNS: tuple[str, ...] = (
    "record_id", "base_id", "domain", "topology", "difficulty", "generator", "generator_trial", "judge",
    "condition", "prompt_format", "cot", "default_mode", "temperature", "trial", "metric", "reference",
    "verdict", "parse_ok", "scoring_mode", "rationale", "judge_error", "source",
)  # fmt: skip
# ``source``: "synthetic" (our generator) or "imported" (tasks people wrote elsewhere, e.g. BFCL); added after
# the first release, so readers treat a missing column as all "synthetic".
LATER_JUDGMENT_COLUMNS: tuple[str, ...] = ("source",)
# Written by the exporter after JUDGMENT_COLUMNS; optional for readers (run folders from before it lack it).
JUDGMENT_OPTIONAL_COLUMNS: tuple[str, ...] = ("structured_output",)

# the three tables of a run folder: their files, and the columns a file must have to be read
TABLE_FILES: dict[str, str] = {
    "predictions": "predictions.parquet",
    "scores": "scores.parquet",
    "judgments": "judgments.parquet",
}
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "predictions": tuple(c for c in PREDICTION_COLUMNS if c not in LATER_PREDICTION_COLUMNS),
    "scores": tuple(c for c in SCORE_COLUMNS if c not in LATER_SCORE_COLUMNS),
    "judgments": tuple(c for c in JUDGMENT_COLUMNS if c not in LATER_JUDGMENT_COLUMNS),
}
