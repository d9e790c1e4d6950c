"""The README's pipeline-key tables list every field of ``Pipeline`` and ``ModelSettings``, and nothing else.

A field added to the schema without a README row (or a row left behind after a rename) fails here, so a
person reading the README sees every key the validator accepts.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentjudge.runner.pipeline import Pipeline
from agentjudge.types import ModelSettings, PromptVariant

ROOT = Path(__file__).resolve().parents[1]


def _table_after(heading_text: str, text: str) -> list[str]:
    """The first-column keys of the first markdown table after ``heading_text``."""
    start = text.index(heading_text)
    lines = text[start:].splitlines()
    rows: list[str] = []
    in_table = False
    for line in lines[1:]:
        if line.startswith("|"):
            in_table = True
            cell = line.split("|")[1].strip()
            key = re.fullmatch(r"`([a-z_]+)`", cell)
            if key:
                rows.append(key.group(1))
        elif in_table:
            break
    return rows


def test_readme_lists_every_pipeline_key() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    keys = _table_after("### Pipeline keys", text)
    assert keys == list(Pipeline.model_fields), "README pipeline-key table differs from Pipeline's fields"


def test_readme_lists_every_model_key() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    keys = _table_after("Keys of one model entry", text)
    assert keys == list(ModelSettings.model_fields), "README model-key table differs from ModelSettings"


def test_readme_names_every_prompt_variant_key() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `prompt_variants` |"))
    for field in PromptVariant.model_fields:
        assert f"`{field}`" in row


def test_architecture_points_to_the_readme_table() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert "README.md#pipeline-keys" in text
