"""Column names of the run folder's tables, in file order: the contract of ARCHITECTURE.md in one place.

The runner's exporter builds its Arrow schemas from these, the infer/score verbs write them, the report
reads them; other tools rely on the names, so extend rather than rename.
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
JUDGMENT_COLUMNS: tuple[str, ...] = (
    "record_id", "base_id", "domain", "topology", "difficulty", "generator", "generator_trial", "judge",
    "condition", "prompt_format", "cot", "default_mode", "temperature", "trial", "metric", "reference",
    "verdict", "parse_ok", "scoring_mode", "rationale", "judge_error", "source",
)  # fmt: skip
# ``source``: "synthetic" (our generator) or "imported" (tasks people wrote elsewhere, e.g. BFCL); added after
# the first release, so readers treat a missing column as all "synthetic".
# Written by the exporter after JUDGMENT_COLUMNS; optional for readers (run folders from before it lack it).
JUDGMENT_OPTIONAL_COLUMNS: tuple[str, ...] = ("structured_output",)
