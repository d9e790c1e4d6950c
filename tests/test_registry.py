"""Model string resolution: sim/, baseline/, entry points, module:factory, litellm fallback, clear errors."""

from __future__ import annotations

import importlib.metadata
import sys
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentjudge.generators.llm import LLMGenerator
from agentjudge.models.client import ModelClient
from agentjudge.registry import factory
from agentjudge.registry.factory import ModelResolutionError, make_generator, make_judge
from agentjudge.types import JudgeRequest, JudgeResult, ModelSettings, Prediction, Task

PLUGIN_SOURCE = """
from agentjudge.types import JudgeResult, Prediction


class EchoGenerator:
    def __init__(self, settings, client):
        self.name = "plugin:" + settings.display_name
        self.client = client

    async def __call__(self, task, trial):
        return Prediction(record_id=task.record_id, base_id=task.base_id, difficulty=task.difficulty,
                          generator=self.name, trial=trial, calls=[])


class FixedJudge:
    def __init__(self, settings, client):
        self.name = "fixed"

    async def __call__(self, request):
        return JudgeResult(verdicts={"tool": 1.0, "param": 1.0, "seq": 1.0, "cov": 1.0}, parse_ok=True)


def make_gen(settings, client):
    return EchoGenerator(settings, client)


def make_judge(settings, client):
    return FixedJudge(settings, client)


def not_a_generator(settings, client):
    return 42

not_callable = "just a string"
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A throwaway importable module holding factories; yields its name."""
    name = f"ajplugin_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def settings(model: str) -> ModelSettings:
    return ModelSettings(model=model)


TASK = Task(record_id="x-1:easy", base_id="x-1", difficulty="easy", query="q", system_prompt="s", tools=[])


async def test_module_factory_generator_and_judge(plugin: str) -> None:
    client = ModelClient()
    gen = make_generator(settings(f"{plugin}:make_gen"), client)
    assert gen.name == f"plugin:{plugin}:make_gen"
    assert getattr(gen, "client") is client  # noqa: B009 - the factory received the shared client
    pred = await gen(TASK, 2)
    assert isinstance(pred, Prediction) and pred.trial == 2 and pred.calls == []
    judge = make_judge(settings(f"{plugin}:make_judge"), client)
    request = JudgeRequest(task=TASK, calls=[], gt=None, condition="without_gt")
    assert isinstance(await judge(request), JudgeResult)


def test_module_factory_errors_say_what_to_fix(plugin: str) -> None:
    client = ModelClient()
    with pytest.raises(ModelResolutionError, match="has no callable 'missing'"):
        make_generator(settings(f"{plugin}:missing"), client)
    with pytest.raises(ModelResolutionError, match="has no callable 'not_callable'"):
        make_generator(settings(f"{plugin}:not_callable"), client)
    with pytest.raises(ModelResolutionError, match="returned int, which is not a Generator"):
        make_generator(settings(f"{plugin}:not_a_generator"), client)
    with pytest.raises(ModelResolutionError, match="no module 'no_such_pkg_xyz' is importable"):
        make_generator(settings("no_such_pkg_xyz.sub:factory"), client)
    with pytest.raises(ModelResolutionError, match="ollama/llama3:latest"):
        make_generator(settings("llama3:latest"), client)


def test_litellm_model_is_llm_generator() -> None:
    client = ModelClient()
    gen = make_generator(ModelSettings(model="openai/gpt-4o-mini", name="mini"), client)
    assert isinstance(gen, LLMGenerator) and gen.name == "mini" and gen.client is client


def test_resolution_does_not_import_litellm_or_plugins() -> None:
    code = (
        "import sys; from agentjudge.registry.factory import make_generator; "
        "from agentjudge.models.client import ModelClient; from agentjudge.types import ModelSettings; "
        "make_generator(ModelSettings(model='hosted_vllm/x', api_base='http://h/v1'), ModelClient()); "
        "print('litellm' in sys.modules)"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_importing_the_registry_loads_no_generator_judge_or_client() -> None:
    """The registry only names where things are; building one imports its module then (ARCHITECTURE.md)."""
    code = (
        "import sys, agentjudge.registry.factory; "
        "print(sorted(m for m in sys.modules if m.startswith(('agentjudge.generators', 'agentjudge.judges', "
        "'agentjudge.models', 'agentjudge.runner', 'litellm'))))"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_litellm_model_is_llm_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("agentjudge.judges.llm")

    class LLMJudge:
        def __init__(self, settings: ModelSettings, client: ModelClient) -> None:
            self.name = settings.display_name

        async def __call__(self, request: JudgeRequest) -> JudgeResult:
            raise NotImplementedError

    fake.LLMJudge = LLMJudge  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agentjudge.judges.llm", fake)
    judge = make_judge(settings("ollama/llama3"), ModelClient())
    assert isinstance(judge, LLMJudge) and judge.name == "ollama/llama3"


def _fake_module(monkeypatch: pytest.MonkeyPatch, name: str, attr: str, fn: Any) -> None:
    module = types.ModuleType(name)
    setattr(module, attr, fn)
    monkeypatch.setitem(sys.modules, name, module)


class _Gen:
    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, task: Task, trial: int) -> Prediction:
        raise NotImplementedError


class _Judge:
    needs_reference = True

    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        raise NotImplementedError


def test_sim_and_baseline_dispatch(monkeypatch: pytest.MonkeyPatch) -> None:
    profiles = {"sim/perfect": "perfect"}

    def make_sim(s: ModelSettings) -> _Gen:
        if s.model not in profiles:
            raise KeyError(f"no profile {s.model[4:]!r}; known: perfect")
        return _Gen(s.display_name)

    _fake_module(monkeypatch, "agentjudge.generators.simulated", "make_simulated_generator", make_sim)
    _fake_module(
        monkeypatch,
        "agentjudge.judges.baselines",
        "make_baseline_judge",
        lambda s: (
            _Judge(s.display_name)
            if s.model == "baseline/ceiling"
            else (_ for _ in ()).throw(ValueError("known baselines: ceiling"))
        ),
    )
    client = ModelClient()
    assert make_generator(settings("sim/perfect"), client).name == "sim/perfect"
    assert make_judge(settings("baseline/ceiling"), client).name == "baseline/ceiling"
    with pytest.raises(ModelResolutionError, match="unknown simulated generator 'sim/nope'.*known: perfect"):
        make_generator(settings("sim/nope"), client)
    with pytest.raises(ModelResolutionError, match="unknown baseline judge 'baseline/nope'.*known baselines"):
        make_judge(settings("baseline/nope"), client)
    with pytest.raises(ModelResolutionError, match="simulated generator, not a judge"):
        make_judge(settings("sim/perfect"), client)
    with pytest.raises(ModelResolutionError, match="baseline judge, not a generator"):
        make_generator(settings("baseline/ceiling"), client)


def test_entry_point_loads_only_the_named_plugin(plugin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    eps = [
        importlib.metadata.EntryPoint(
            name="broken", value="no_such_module_abc:factory", group=factory.ENTRY_POINT_GROUP
        ),
        importlib.metadata.EntryPoint(
            name="echo", value=f"{plugin}:make_gen", group=factory.ENTRY_POINT_GROUP
        ),
    ]

    def entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
        return [ep for ep in eps if ep.group == group]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    gen = make_generator(settings("echo"), ModelClient())  # "broken" is listed but never imported
    assert gen.name == "plugin:echo"
    with pytest.raises(ModelResolutionError, match="entry point 'broken'.*failed to load"):
        make_generator(settings("broken"), ModelClient())
