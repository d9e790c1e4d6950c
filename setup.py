"""Packaging that pyproject.toml cannot express: the repository's top-level ``analysis/``, ``prompts/``,
``pipelines/`` and shipped data are mapped *inside* the package (``agentjudge.analysis``,
``agentjudge/prompts`` …), so a wheel installs no top-level ``analysis`` and carries every file a run needs
(``agentjudge/resources.py`` finds them in either place). Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

MAPPED = {
    "agentjudge.analysis": "analysis",
    "agentjudge.prompts": "prompts",
    "agentjudge.prompts.paper": "prompts/paper",
    "agentjudge.pipelines": "pipelines",
    "agentjudge.data.mini": "data/mini",
    "agentjudge.data.published": "data/published",
    "agentjudge.data.full": "data/full",
}
DATA = {
    "agentjudge": ["**/*.yaml", "**/*.json", "**/*.md", "viewer/static/*", "people/static/*"],
    "agentjudge.prompts": ["*.md"],
    "agentjudge.prompts.paper": ["*.md"],
    "agentjudge.pipelines": ["*.yaml"],
    "agentjudge.data.mini": ["records.jsonl", "manifest.json"],
    "agentjudge.data.published": ["*.csv", "*.md"],
    "agentjudge.data.full": ["manifest.json"],
}

setup(
    packages=[*find_packages(include=["agentjudge", "agentjudge.*"]), *MAPPED],
    package_dir={"": ".", **MAPPED},
    package_data=DATA,
    exclude_package_data={"agentjudge.data.full": ["records.jsonl"]},
)
