"""The README's plug-in example is real code: load it as a module and run it through the registry."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

from agentjudge.models.client import ModelClient
from agentjudge.models.registry import make_judge
from agentjudge.types import JudgeRequest, ModelSettings, Task, ToolCall, ToolSchema

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_plugin_example_runs_through_the_registry(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```python\n(# mypkg/judges\.py\n.*?)```", text, re.S)
    assert block, "README lost its plug-in example"
    (tmp_path / "mypkg_readme_judges.py").write_text(block.group(1), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mypkg_readme_judges", raising=False)

    judge = make_judge(ModelSettings(model="mypkg_readme_judges:make", name="names"), ModelClient())
    tool = ToolSchema(name="get_user", description="d", parameters={"type": "object", "properties": {}})
    task = Task(
        record_id="r:easy", base_id="r", difficulty="easy", query="q", system_prompt="s", tools=[tool]
    )
    calls = [ToolCall(name="get_user"), ToolCall(name="delete_all")]
    result = asyncio.run(judge(JudgeRequest(task=task, calls=calls, gt=None, condition="without_gt")))
    assert judge.name == "names"
    assert result.verdicts == {"tool": 0.5, "param": None, "seq": None, "cov": 1.0}
    assert not result.parse_ok
    assert "delete_all" in result.rationales["tool"]
