"""Where the files a run needs besides code live: judge prompts, shipped pipelines, the mini split and the
published figures.

Why one module: the repository keeps ``prompts/``, ``pipelines/``, ``data/`` and ``analysis/`` at its top
level (the layout the project was specified with), while an installed wheel carries them inside the package
(``agentjudge/prompts`` …, mapped in pyproject.toml) so nothing lands at the top of site-packages. Every
reader asks here instead of walking up from its own file, so a module can move without breaking a path and a
wheel finds what an editable install finds.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent

# The folders the wheel maps into the package (pyproject.toml, [tool.setuptools] package-dir / package-data).
SHIPPED = ("prompts", "pipelines", "data")


@cache
def shipped_dir(name: str) -> Path:
    """The folder ``name`` (one of ``SHIPPED``): inside the package when installed from a wheel, else the
    repository's top-level folder (a source checkout or an editable install)."""
    if name not in SHIPPED:
        raise ValueError(f"{name!r} is not a shipped folder ({', '.join(SHIPPED)})")
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"the shipped folder {name!r} is missing: looked in {_PACKAGE / name} and {_PACKAGE.parent / name} "
        "(reinstall agentjudge)"
    )


def prompts_dir() -> Path:
    """The judge prompt templates (``prompts/``; ``prompts/paper/`` is the published family)."""
    return shipped_dir("prompts")


def pipelines_dir() -> Path:
    """The shipped pipeline files (``pipelines/*.yaml``)."""
    return shipped_dir("pipelines")


def data_dir() -> Path:
    """The shipped data: ``mini/`` (the 60-scenario split), ``published/`` (the paper's printed figures),
    ``full/manifest.json`` (the full split's checksums)."""
    return shipped_dir("data")


def shipped_pipeline(name: str) -> Path | None:
    """A shipped pipeline by name (``quickstart`` or ``quickstart.yaml``), or None when there is none: so
    ``agentjudge run quickstart`` works from any folder, also from a wheel."""
    stem = name[: -len(".yaml")] if name.endswith(".yaml") else name
    if not stem or "/" in stem or "\\" in stem or stem.startswith("."):
        return None
    path = pipelines_dir() / f"{stem}.yaml"
    return path if path.is_file() else None
