"""Model strings, checked and classified without calling a model.

The registry (``agentjudge.registry.factory``) builds generators and judges; this module only answers two
questions the runner needs *before* anything is spent: is this model string resolvable (so a typo'd
``sim/`` profile is a bad-input error at load time, not a failure an hour in), and what kind of model is
it (``sim``, ``simjudge``, ``baseline``, ``imported``, ``imported-baseline``, ``plugin``, ``litellm`` --
written to meta.json so reports can label simulated and oracle models as such). The rules mirror the
registry's resolution order (``factory.py``'s docstring).
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from collections.abc import Iterable
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Literal

from agentjudge.types import ModelSettings

Kind = Literal["sim", "simjudge", "baseline", "imported", "imported-baseline", "plugin", "litellm"]
_FACTORY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@lru_cache(maxsize=1)
def _entry_points() -> frozenset[str]:
    return frozenset(ep.name for ep in metadata.entry_points(group="agentjudge.models"))


def model_kind(model: str) -> Kind:
    if model.startswith("sim/"):
        return "sim"
    if model.startswith("simjudge/"):
        return "simjudge"
    if model.startswith("baseline/"):
        return "baseline"
    if model.startswith("imported/"):
        return "imported"
    if model.startswith("imported-baseline/"):  # a publication's judge-specific baseline (Prometheus-2)
        return "imported-baseline"
    if model in _entry_points() or _FACTORY.match(model):
        return "plugin"
    return "litellm"


# The names ``baseline/<name>`` accepts, known without importing the judges (jsonschema, the rule checks):
# a pipeline is checked before anything is built, and a run of sim/ generators and constant baselines never
# needs the rest. tests/test_baselines.py holds it equal to the registry (``judges.baselines``).
BASELINE_NAMES = ("always-1", "always-0.5", "always-0", "rule", "ceiling", "gt-rule")


def reading_reference(judges: Iterable[ModelSettings]) -> set[str]:
    """The display names of the ``judges`` that read the programmatic reference, told from their
    model strings without building them: the oracle ``baseline/ceiling`` and the simulated judges
    ``simjudge/*`` (a built judge says so itself: ``needs_reference``; the grid asks it)."""
    return {
        j.display_name
        for j in judges
        if model_kind(j.model) == "simjudge" or j.model.startswith("baseline/ceiling")
    }


def sim_profiles() -> list[str]:
    """Profile names of the simulated generators (agentjudge/generators/profiles.yaml), then those of the
    simulated interactive agents (agent_profiles.yaml)."""
    return [*_single_shot_profiles(), *_agent_profiles()]


# Each file read once per process: the pipeline check and the preflight ask for every model (two YAML files
# parsed and validated each time were ~6 s of re-running 12 failed units); the agents' only when a profile
# is not a single-shot one (their module and file are not needed otherwise).
@functools.cache
def _single_shot_profiles() -> tuple[str, ...]:
    from agentjudge.generators.simulated import load_profiles

    return tuple(sorted(load_profiles()))


@functools.cache
def _agent_profiles() -> tuple[str, ...]:
    from agentjudge.generators.agent_sim import load_agent_profiles

    return tuple(sorted(load_agent_profiles()))


def baseline_names() -> list[str]:
    """Names ``baseline/<name>`` accepts."""
    return sorted(BASELINE_NAMES)


def add_plugin_folders(*folders: str | Path) -> None:
    """Make ``module:factory`` plugins importable the way a user expects: from the current folder and the
    pipeline file's folder (the ``agentjudge`` script, unlike ``python -m``, does not put the current folder
    on the import path). Appended, so installed packages keep precedence."""
    for folder in (Path.cwd(), *folders):
        text = str(Path(folder).resolve())
        if text not in sys.path:
            sys.path.append(text)


_IMPORT_FOLDERS: list[Path] = []


def add_import_folders(*folders: str | Path) -> None:
    """Where ``imported/`` models find their ``imported.sqlite``: the pipeline file's folder (a run folder
    written by ``agentjudge import`` holds both)."""
    for folder in folders:
        path = Path(folder).resolve()
        if path not in _IMPORT_FOLDERS:
            _IMPORT_FOLDERS.insert(0, path)


def import_folders() -> list[Path]:
    return list(_IMPORT_FOLDERS)


def _factory_problem(model: str) -> str | None:
    add_plugin_folders()
    module_name, _, attr = model.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        return f"cannot import module {module_name!r}: {exc}"
    if not callable(getattr(module, attr, None)):
        return f"module {module_name!r} has no callable {attr!r}"
    return None


def model_problem(model: str, role: Literal["generator", "judge"]) -> str | None:
    """Why ``model`` cannot be used in ``role`` (None when it can). Never calls or constructs a model."""
    kind = model_kind(model)
    if kind == "sim":
        if role != "generator":
            return "sim/ models are simulated generators, not judges"
        profile = model.removeprefix("sim/")
        if profile in _single_shot_profiles():
            return None
        profiles = sim_profiles()
        if profile not in profiles:
            return f"unknown simulated profile {profile!r}; known: {', '.join(profiles) or '(none found)'}"
    elif kind == "baseline":
        if role != "judge":
            return "baseline/ models are baseline judges, not generators"
        names = baseline_names()
        name = model.removeprefix("baseline/")
        if name not in names:
            return f"unknown baseline judge {name!r}; known: {', '.join(names)}"
    elif kind == "simjudge":
        from agentjudge.judges.simjudge import load_profiles

        if role != "judge":
            return "simjudge/ models are simulated judges, not generators"
        if model.removeprefix("simjudge/") not in load_profiles():
            return f"unknown simulated judge profile; known: {', '.join(sorted(load_profiles()))}"
    elif kind in ("imported", "imported-baseline"):
        if kind == "imported-baseline" and role != "judge":
            return "imported-baseline/ models are judges, not generators"
        if not any((folder / "imported.sqlite").is_file() for folder in _IMPORT_FOLDERS):
            return (
                "imported/ models replay a folder written by `agentjudge import`: no imported.sqlite next to "
                "the pipeline file"
            )
    elif kind == "plugin" and model not in _entry_points():
        return _factory_problem(model)
    return None
