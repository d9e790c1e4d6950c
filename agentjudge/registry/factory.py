"""Model string → Generator / Judge.

Resolution of ``settings.model`` (docs/internals.md, "Model plumbing"), first match wins:

1. ``sim/<profile>``   → ``agentjudge.generators.simulated:make_simulated_generator(settings)``
   (generators only)
2. ``baseline/<name>`` → ``agentjudge.judges.baselines:make_baseline_judge(settings)`` (judges only);
   ``simjudge/<profile>`` → ``agentjudge.judges.simjudge:make_simulated_judge(settings)`` (judges only)
3. an entry point named ``settings.model`` in group ``agentjudge.models`` → ``factory(settings, client)``
4. ``package.module:factory`` → ``factory(settings, client)``
5. anything else is a litellm model → ``LLMGenerator`` / ``LLMJudge``

Only the module that is needed is imported (plugins and litellm load lazily). Every failure is a
``ModelResolutionError`` whose message says what to fix. It builds generators and judges, so it sits above
them (ARCHITECTURE.md, "Layers"), not in ``models/`` beneath them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentjudge.errors import InputError
from agentjudge.types import Generator, Judge, ModelSettings

if TYPE_CHECKING:
    from agentjudge.models.client import ModelClient

ENTRY_POINT_GROUP = "agentjudge.models"
_FACTORY_RE = re.compile(r"^(?P<module>[A-Za-z_][\w.]*):(?P<attr>[A-Za-z_]\w*)$")


class ModelResolutionError(InputError):
    """A model string that names nothing usable."""


def _entry_point(name: str) -> importlib.metadata.EntryPoint | None:
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return ep
    return None


def _load_factory(spec: str) -> Callable[..., Any] | None:
    """``module:factory`` → the callable; None when ``spec`` is not of that shape."""
    match = _FACTORY_RE.match(spec)
    if match is None:
        return None
    module_name, attr = match["module"], match["attr"]
    from agentjudge.registry.model_strings import add_plugin_folders

    add_plugin_folders()  # the current folder, as the plug-in example of docs/plugins.md expects
    top = module_name.split(".")[0]
    if importlib.util.find_spec(top) is None:
        raise ModelResolutionError(
            f"model {spec!r} looks like 'module:factory' but no module {top!r} is importable. "
            "Install or put it on PYTHONPATH; if you meant a litellm model, add the provider prefix "
            f"(e.g. 'ollama/{spec}')."
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelResolutionError(f"model {spec!r}: cannot import module {module_name!r}: {exc}") from exc
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise ModelResolutionError(
            f"model {spec!r}: module {module_name!r} has no callable {attr!r} "
            "(expected a factory(settings, client) returning a Generator or Judge)"
        )
    return factory


def _plugin(settings: ModelSettings, client: ModelClient) -> Any | None:
    """Build from an entry point or ``module:factory``; None when the string is neither."""
    ep = _entry_point(settings.model)
    if ep is not None:
        try:
            factory = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must name itself
            raise ModelResolutionError(
                f"entry point {settings.model!r} (group {ENTRY_POINT_GROUP}) failed to load "
                f"{ep.value!r}: {exc}"
            ) from exc
        return factory(settings, client)
    factory = _load_factory(settings.model)
    return None if factory is None else factory(settings, client)


def _check(obj: Any, protocol: type, what: str, settings: ModelSettings) -> Any:
    if not isinstance(obj, protocol):
        raise ModelResolutionError(
            f"model {settings.model!r}: the factory returned {type(obj).__name__}, which is not a {what} "
            f"(needs a 'name' attribute and an async __call__)"
        )
    return obj


def _imported(settings: ModelSettings, role: str) -> Any:
    """An ``imported/<key>`` generator or judge over the run folder's ``imported.sqlite``."""
    from agentjudge.generators.replay import ImportedGenerator, source_for
    from agentjudge.registry.model_strings import import_folders

    try:
        source = source_for(import_folders())
    except FileNotFoundError as exc:
        raise ModelResolutionError(f"model {settings.model!r}: {exc}") from exc
    if role == "generator":
        return ImportedGenerator(settings, source)
    from agentjudge.judges.replay import ImportedJudge

    return ImportedJudge(settings, source)


def make_generator(settings: ModelSettings, client: ModelClient) -> Generator:
    """The generator named by ``settings.model``."""
    model = settings.model
    if model.startswith(("baseline/", "simjudge/")):
        kind = "baseline" if model.startswith("baseline/") else "simulated"
        raise ModelResolutionError(f"{model!r} is a {kind} judge, not a generator; use it under judges.")
    if model.startswith("imported/"):
        return _check(_imported(settings, "generator"), Generator, "Generator", settings)
    if settings.generation == "interactive" or model.startswith("sim/agent-"):
        return _interactive_generator(settings, client)
    if model.startswith("sim/"):
        try:
            from agentjudge.generators.simulated import make_simulated_generator
        except ImportError as exc:
            raise ModelResolutionError(f"simulated generators are unavailable: {exc}") from exc
        try:
            generator = make_simulated_generator(settings)
        except (KeyError, LookupError, ValueError, FileNotFoundError) as exc:
            raise ModelResolutionError(
                f"unknown simulated generator {model!r}: {exc}. Use sim/<profile> with a profile from "
                "agentjudge/generators/profiles.yaml."
            ) from exc
        return _check(generator, Generator, "Generator", settings)
    plugin = _plugin(settings, client)
    if plugin is not None:
        return _check(plugin, Generator, "Generator", settings)
    from agentjudge.generators.llm import LLMGenerator

    return LLMGenerator(settings, client)


def _interactive_generator(settings: ModelSettings, client: ModelClient) -> Generator:
    """``generation: interactive``: simulated agents (``sim/agent-*``) or an LLM in the episode loop."""
    if settings.model.startswith("sim/"):
        from agentjudge.generators.agent_sim import make_simulated_agent

        try:
            return _check(make_simulated_agent(settings), Generator, "Generator", settings)
        except ValueError as exc:
            raise ModelResolutionError(str(exc)) from exc
    if _plugin_name(settings.model):
        raise ModelResolutionError(
            f"model {settings.model!r}: `generation: interactive` runs litellm models and sim/agent-* "
            "profiles; a plug-in generator runs its own loop (leave generation at single_shot)"
        )
    from agentjudge.generators.interactive import make_interactive_llm_generator

    return make_interactive_llm_generator(settings, client)


def _plugin_name(model: str) -> bool:
    from agentjudge.registry.model_strings import model_kind

    return model_kind(model) == "plugin"


def make_judge(settings: ModelSettings, client: ModelClient) -> Judge:
    """The judge named by ``settings.model``."""
    model = settings.model
    if model.startswith("sim/"):
        raise ModelResolutionError(
            f"{model!r} is a simulated generator, not a judge; use it under generators."
        )
    if model.startswith(("imported/", "imported-baseline/")):
        return _check(_imported(settings, "judge"), Judge, "Judge", settings)
    if model.startswith("baseline/"):
        try:
            from agentjudge.judges.baselines import make_baseline_judge
        except ImportError as exc:
            raise ModelResolutionError(f"baseline judges are unavailable: {exc}") from exc
        try:
            judge = make_baseline_judge(settings)
        except (KeyError, LookupError, ValueError) as exc:
            raise ModelResolutionError(
                f"unknown baseline judge {model!r}: {exc}. Use baseline/<name> with a name defined in "
                "agentjudge/judges/baselines.py."
            ) from exc
        return _check(judge, Judge, "Judge", settings)
    if model.startswith("simjudge/"):
        from agentjudge.judges.simjudge import make_simulated_judge

        try:
            return _check(make_simulated_judge(settings), Judge, "Judge", settings)
        except ValueError as exc:
            raise ModelResolutionError(f"{exc} (profiles: agentjudge/judges/simjudge_profiles.yaml)") from exc
    plugin = _plugin(settings, client)
    if plugin is not None:
        return _check(plugin, Judge, "Judge", settings)
    from agentjudge.judges.llm import LLMJudge

    return LLMJudge(settings, client)


def configure_judge(judge: Judge, *, reask: int, prompt_family: str, tool_rendering: str) -> Judge:
    """Apply a run's judge-wide settings (``reask``, ``prompt_family``, ``judge_tool_rendering``) to the
    judges that have them (LLM judges; baselines and plug-ins without the attribute are left alone). One
    place for it, so the main process and the worker processes (``runner.workers``) configure alike."""
    if reask and hasattr(judge, "reask"):
        judge.reask = reask
    if hasattr(judge, "prompt_family"):
        judge.prompt_family = prompt_family
    if hasattr(judge, "tool_rendering"):
        judge.tool_rendering = tool_rendering
    return judge
