"""Every module the project imports is the standard library, the project itself, or a declared dependency.

Why: a package installed by hand makes local runs (and CI on the same machine) green while a fresh machine
fails before running a test. This check reads `pyproject.toml` and every import under the project's code,
tests and benches, so an undeclared import fails here, on any machine, not only on a new one.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("agentjudge", "analysis", "tests", "bench")

# Distributions whose import name cannot be derived from the distribution name, for when the distribution
# is declared (e.g. in an optional extra) but not installed here, so its metadata cannot be asked.
IMPORT_NAME_OF = {
    "scikit-learn": {"sklearn"},
    "pyyaml": {"yaml"},
    "llama-cpp-python": {"llama_cpp"},
    "pillow": {"PIL"},
    "python-dateutil": {"dateutil"},
    "ppi-python": {"ppi_py"},
}


def _dist_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;@]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def declared_distributions(pyproject: Path) -> set[str]:
    """Distribution names in `dependencies` and every optional extra."""
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    return {_dist_name(r) for r in requirements}


def importable_names(distributions: set[str]) -> set[str]:
    """Top-level module names the declared distributions provide (installed metadata, else the name)."""
    names: set[str] = set()
    for dist in distributions:
        names.add(dist.replace("-", "_"))
        names |= IMPORT_NAME_OF.get(dist, set())
    for module, dists in md.packages_distributions().items():
        if any(_dist_name(d) in distributions for d in dists):
            names.add(module)
    return names


def local_modules(root: Path) -> set[str]:
    """Top-level names the repository itself provides: its packages and the modules tests/benches import
    from their own folder or a folder of theirs (pytest and `python bench/x.py` put that folder on the
    path: tests/hostile/ imports its harness)."""
    names = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names |= {p.stem for p in root.glob("*.py")}
    for folder in ("tests", "bench"):
        names |= {p.stem for p in (root / folder).rglob("*.py")}
    return names


def imported_modules(source: str) -> set[str]:
    """Top-level modules named by absolute imports and by `importlib.import_module("literal")` calls."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            found.add(node.args[0].value.split(".")[0])
    return found


def undeclared_imports(root: Path) -> dict[str, str]:
    """Module → first file importing it, for every module that is neither stdlib, local, nor declared."""
    allowed = set(sys.stdlib_module_names) | local_modules(root)
    allowed |= importable_names(declared_distributions(root / "pyproject.toml"))
    missing: dict[str, str] = {}
    for folder in SCANNED:
        if not (root / folder).is_dir():
            continue
        for path in sorted((root / folder).rglob("*.py")):
            for module in sorted(imported_modules(path.read_text(encoding="utf-8"))):
                if module not in allowed:
                    missing.setdefault(module, str(path.relative_to(root)))
    return missing


def test_every_import_is_declared() -> None:
    missing = undeclared_imports(ROOT)
    assert not missing, (
        "imported but not declared in pyproject.toml (add to dependencies or [dev]): "
        + ", ".join(f"{module} ({path})" for module, path in sorted(missing.items()))
    )


def _tree(tmp_path: Path, code: str, deps: list[str], dev: list[str]) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'x'\nversion = '0'\n"
        f"dependencies = {deps!r}\n[project.optional-dependencies]\ndev = {dev!r}\n"
    )
    (tmp_path / "agentjudge").mkdir()
    (tmp_path / "agentjudge" / "__init__.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "helper_mod.py").write_text("X = 1\n")
    (tmp_path / "tests" / "test_x.py").write_text(code)
    return tmp_path


def test_checker_reports_an_undeclared_import(tmp_path: Path) -> None:
    code = (
        "import json\nimport yaml\nfrom agentjudge import x\nimport helper_mod\n"
        "def f():\n    import not_a_real_pkg_q9.sub\n"
        "import importlib\nimportlib.import_module('another_missing_mod')\n"
    )
    root = _tree(tmp_path, code, deps=["pyyaml>=6"], dev=[])
    assert undeclared_imports(root) == {
        "not_a_real_pkg_q9": "tests/test_x.py",
        "another_missing_mod": "tests/test_x.py",
    }


def test_checker_uses_extras_and_import_names(tmp_path: Path) -> None:
    code = "import sklearn\nimport hypothesis\nimport llama_cpp\n"
    root = _tree(tmp_path, code, deps=[], dev=["scikit-learn>=1.4", "hypothesis", "llama-cpp-python[server]"])
    assert undeclared_imports(root) == {}


def test_checker_flags_what_only_another_tree_declares(tmp_path: Path) -> None:
    code = "import sklearn\nimport hypothesis\nimport llama_cpp\n"
    root = _tree(tmp_path, code, deps=[], dev=["scikit-learn>=1.4"])
    assert undeclared_imports(root) == {"hypothesis": "tests/test_x.py", "llama_cpp": "tests/test_x.py"}
