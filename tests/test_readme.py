"""The plug-in example of docs/plugins.md is real code: loaded as a module, run through the registry."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from test_plugin_example import example_block

from agentjudge.models.client import ModelClient
from agentjudge.registry.factory import make_judge
from agentjudge.types import GTStep, JudgeRequest, ModelSettings, Task, ToolCall, ToolSchema

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_plugin_example_runs_through_the_registry(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    _, code = example_block()
    (tmp_path / "mypkg_readme_judges.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mypkg_readme_judges", raising=False)

    judge = make_judge(ModelSettings(model="mypkg_readme_judges:make", name="names"), ModelClient())
    tool = ToolSchema(name="get_user", description="d", parameters={"type": "object", "properties": {}})
    task = Task(
        record_id="r:easy", base_id="r", difficulty="easy", query="q", system_prompt="s", tools=[tool]
    )
    calls = [ToolCall(name="get_user"), ToolCall(name="delete_all")]
    result = asyncio.run(judge(JudgeRequest(task=task, calls=calls, gt=None, condition="without_gt")))
    assert judge.name == "names" and result.parse_ok
    # one of two calls to an offered tool and well formed; the look-up before the change; a change made
    assert result.verdicts == {"tool": 0.5, "param": 0.5, "seq": 1.0, "cov": 1.0}
    gt = [
        GTStep(call=ToolCall(name="get_user"), output=None),
        GTStep(call=ToolCall(name="update_user"), output=None),
    ]
    result = asyncio.run(judge(JudgeRequest(task=task, calls=calls, gt=gt, condition="with_gt")))
    # tools: 1 shared of 3 named; the one expected tool called comes in order; 1 of 2 expected calls made
    assert result.verdicts == {"tool": 0.5, "param": 0.5, "seq": 1.0, "cov": 0.5}


def test_readme_plugin_example_followed_literally_as_a_user(tmp_path: Path) -> None:
    """As a user would: mypkg/judges.py in a fresh folder, named in a pipeline next to it and with
    --judge, run by the installed `agentjudge` script from that folder (no PYTHONPATH)."""
    import os
    import subprocess

    import yaml

    _, code = example_block()
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "judges.py").write_text(code, encoding="utf-8")
    records = README.parent / "data" / "mini" / "records.jsonl"
    pipeline = {
        "name": "plugin",
        "dataset": str(records),
        "limit": 2,
        "difficulties": ["easy"],
        "generators": ["sim/perfect"],
        "judges": [{"model": "mypkg.judges:make", "name": "names"}],
        "conditions": ["without_gt"],
    }
    (tmp_path / "pipeline.yaml").write_text(yaml.safe_dump(pipeline), encoding="utf-8")
    script = Path(sys.executable).with_name("agentjudge")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["AGENTJUDGE_CACHE"] = str(tmp_path / "cache.sqlite")
    for args in (
        ["run", "pipeline.yaml", "--out", "run1"],
        ["run", "pipeline.yaml", "--out", "run2", "--judge", "mypkg.judges:make"],
    ):
        done = subprocess.run(
            [str(script), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "No module named" not in done.stdout + done.stderr
    import pandas as pd

    assert set(pd.read_parquet(tmp_path / "run1" / "judgments.parquet").judge) == {"names"}
    assert set(pd.read_parquet(tmp_path / "run2" / "judgments.parquet").judge) == {"mypkg.judges:make"}
