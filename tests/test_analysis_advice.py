"""The report's "add this to your pipeline" advice is a snippet that validates and adds the missing level."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from agentjudge.analysis._common import VARIANT_ADVICE, variant_advice

from agentjudge.runner.pipeline import load_pipeline

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("factor", "levels"),
    [("cot", [False, True]), ("prompt_format", ["json", "freeform"]), ("default_mode", ["1.0", "0.5"])],
)
def test_variant_advice_snippet_validates(tmp_path: Path, factor: str, levels: list[object]) -> None:
    snippet = yaml.safe_load(VARIANT_ADVICE[factor])
    pipeline_yaml = {
        "name": "advice",
        "dataset": str(ROOT / "data" / "mini" / "records.jsonl"),
        "generators": ["sim/weak"],
        "judges": ["baseline/rule"],
        **snippet,
    }
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(pipeline_yaml), encoding="utf-8")
    pipeline = load_pipeline(path)
    assert [getattr(v, factor) for v in pipeline.prompt_variants] == levels
    assert VARIANT_ADVICE[factor] in variant_advice(factor)


def test_old_advice_was_invalid(tmp_path: Path) -> None:
    """The wording this replaces (`cot: [false, true]` inside a variant) is rejected by the schema."""
    from agentjudge.runner.pipeline import PipelineError

    path = tmp_path / "p.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "advice",
                "dataset": str(ROOT / "data" / "mini" / "records.jsonl"),
                "generators": ["sim/weak"],
                "prompt_variants": [{"cot": [False, True]}],
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(PipelineError, match="prompt_variants"):
        load_pipeline(path)
