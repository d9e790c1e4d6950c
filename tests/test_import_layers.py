"""The package imports in one direction: no import cycle, and no layer imports a layer above it.

Every import counts, also those inside functions and under ``TYPE_CHECKING``: a lazy import still makes
the two modules depend on each other, it only hides it from the interpreter. The layer order is the one
ARCHITECTURE.md states in "Layers" (lowest first); a module belongs to the group with the longest matching
prefix, so a verb module that lives in a lower package (``dataset/generate.py``) is placed on its own.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Packages along the data flow, lowest first. A module belongs to the group with the longest matching prefix.
LAYERS: list[list[str]] = [
    [
        "agentjudge",
        "agentjudge.types",
        "agentjudge.errors",
        "agentjudge.atomic",
        "agentjudge.fastpaths",
        "agentjudge.fserrors",
        "agentjudge.limits",
        "agentjudge.memo",
        "agentjudge.provenance",
        "agentjudge.quickvalid",
        "agentjudge.resources",
        "agentjudge.strict_json",
    ],
    ["agentjudge.models", "agentjudge.stats", "agentjudge.rundir"],
    ["agentjudge.dataset"],
    ["agentjudge.scoring"],
    ["agentjudge.generators", "agentjudge.judges"],
    ["agentjudge.registry"],
    ["agentjudge.runner"],
    ["agentjudge.analysis"],
    ["agentjudge.report", "agentjudge.viewer", "agentjudge.people", "agentjudge.tracks"],
    ["agentjudge.api"],
    ["agentjudge.commands", "agentjudge.__main__"],
]

# Source folder → the dotted name it imports as (the repository's analysis/ is agentjudge.analysis: setup.py).
SOURCES: dict[str, str] = {"agentjudge": "agentjudge", "analysis": "agentjudge.analysis"}


def modules(root: Path, packages: tuple[str, ...] | dict[str, str]) -> dict[str, Path]:
    """Dotted module name → file, for every ``.py`` under the given source folders (a folder → its dotted
    name, or a tuple of folders that import under their own names)."""
    sources = packages if isinstance(packages, dict) else {p: p for p in packages}
    found: dict[str, Path] = {}
    for folder, dotted in sources.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = [*dotted.split("."), *path.relative_to(root / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def import_graph(root: Path, packages: tuple[str, ...] | dict[str, str]) -> dict[str, set[str]]:
    """module → the project modules it imports (anywhere in its body), self-imports dropped."""
    mods = modules(root, packages)

    def owner(name: str) -> str | None:  # "a.b.c" → the longest known module prefix
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {owner(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*here[: len(here) - node.level + 1], *([base] if base else [])])
                targets |= {
                    owner(f"{base}.{a.name}") if f"{base}.{a.name}" in mods else owner(base)
                    for a in node.names
                }
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer_of(module: str, layers: list[list[str]]) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for i, group in enumerate(layers):
        for prefix in group:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), i)
    return None if best is None else best[1]


def upward_imports(graph: dict[str, set[str]], layers: list[list[str]]) -> list[str]:
    """Every import of a module on a higher layer than its importer's: "a (layer i) imports b (layer j)"."""
    found = []
    for a in sorted(graph):
        la = layer_of(a, layers)
        for b in sorted(graph[a]):
            lb = layer_of(b, layers)
            if la is not None and lb is not None and lb > la:
                found.append(f"{a} (layer {la + 1}) imports {b} (layer {lb + 1})")
    return found


@pytest.fixture(scope="module")
def project_graph() -> dict[str, set[str]]:
    return import_graph(ROOT, SOURCES)


def package_of(module: str) -> str:
    """The package a module counts in for the package-level graph: ``agentjudge.X`` (a subpackage, or a
    top-level module on its own)."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """package → the other packages its modules import."""
    found: dict[str, set[str]] = {}
    for a, targets in graph.items():
        found.setdefault(package_of(a), set()).update(
            package_of(b) for b in targets if package_of(b) != package_of(a)
        )
    return found


def test_no_import_cycles(project_graph: dict[str, set[str]]) -> None:
    assert cycles(project_graph) == []


def test_no_package_import_cycles(project_graph: dict[str, set[str]]) -> None:
    """Packages import one way too: no package reaches a package that reaches it back (a cycle between
    packages is a cycle of responsibilities even when no two modules import each other)."""
    assert cycles(package_graph(project_graph)) == []


def test_every_module_has_a_layer(project_graph: dict[str, set[str]]) -> None:
    unplaced = [m for m in project_graph if m.startswith("agentjudge") and layer_of(m, LAYERS) is None]
    assert unplaced == [], "place these in LAYERS and in ARCHITECTURE.md's Layers"


def test_no_layer_imports_a_higher_one(project_graph: dict[str, set[str]]) -> None:
    assert upward_imports(project_graph, LAYERS) == []


def test_architecture_states_the_same_layers() -> None:
    """ARCHITECTURE.md's numbered Layers list names the same modules, in the same order, as LAYERS."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    stated = []
    for line in section.splitlines():
        if re.match(r"^\d+\. ", line):
            paths = re.findall(r"`(agentjudge/[\w/]*(?:\.py)?)`", line)
            names = [p.removesuffix(".py").removesuffix("/").replace("/", ".") for p in paths]
            stated.append([n.removesuffix(".__init__") for n in names])
    assert stated == LAYERS


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, body in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    return tmp_path


def test_checker_finds_a_lazy_cycle_and_an_upward_import(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low.py": "def f():\n    from pkg.high import g\n",  # lazy, upward, closes the cycle
            "pkg/high.py": "from . import low\nfrom .sub import leaf\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/leaf.py": "import os\n",
        },
    )
    graph = import_graph(root, ("pkg",))
    assert graph["pkg.high"] == {"pkg.low", "pkg.sub.leaf"}
    assert cycles(graph) == [["pkg.high", "pkg.low"]]
    layers = [["pkg", "pkg.low", "pkg.sub"], ["pkg.high"]]
    assert upward_imports(graph, layers) == ["pkg.low (layer 1) imports pkg.high (layer 2)"]
    assert layer_of("pkg.sub.leaf", layers) == 0 and layer_of("other", layers) is None


def test_checker_finds_a_cycle_between_packages_without_a_module_cycle(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/a/__init__.py": "",
            "app/a/one.py": "from app.b import two\n",
            "app/a/three.py": "",
            "app/b/__init__.py": "",
            "app/b/two.py": "",
            "app/b/four.py": "from app.a import three\n",
        },
    )
    graph = import_graph(root, ("app",))
    assert cycles(graph) == []
    assert cycles(package_graph(graph)) == [["app.a", "app.b"]]


def layout_report(root: Path = ROOT, rev: str | None = None) -> str:
    """The package tree with line counts, the import graph between packages and its cycles, the largest
    modules; with ``rev``, also the largest modules of that revision (``git show``). Printed by
    ``python tests/test_import_layers.py [--before REV]``."""
    import subprocess
    from collections import Counter

    mods = modules(root, SOURCES)
    lines = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in mods.items()}
    per_package: Counter[str] = Counter()
    files: Counter[str] = Counter()
    for m, n in lines.items():
        per_package[package_of(m)] += n
        files[package_of(m)] += 1
    out = ["## Packages (layer, files, lines)", ""]
    for i, group in enumerate(LAYERS, start=1):
        for name in group:
            if name in per_package:
                out.append(f"{i:>2}  {name:<28} {files[name]:>3} files {per_package[name]:>6} lines")
    out += [
        "",
        f"total: {len(lines)} modules, {sum(lines.values()):,} lines",
        "",
        "## Imports between packages",
        "",
    ]
    graph = package_graph(import_graph(root, SOURCES))
    for name in sorted(graph):
        if graph[name]:
            out.append(f"{name} -> {', '.join(sorted(graph[name]))}")
    out += ["", f"package-level cycles: {cycles(graph) or 'none'}", "", "## Largest modules", ""]
    out += [
        f"{n:>6}  {mods[m].relative_to(root)}" for m, n in sorted(lines.items(), key=lambda kv: -kv[1])[:12]
    ]
    if rev is not None:
        names = subprocess.run(
            ["git", "ls-tree", "-r", "--name-only", rev], cwd=root, capture_output=True, text=True, check=True
        ).stdout.split()
        sizes = []
        for name in names:
            if name.endswith(".py") and name.split("/")[0] in SOURCES:
                text = subprocess.run(
                    ["git", "show", f"{rev}:{name}"], cwd=root, capture_output=True, text=True, check=True
                ).stdout
                sizes.append((len(text.splitlines()), name))
        out += ["", f"## Largest modules at {rev}", ""]
        out += [f"{n:>6}  {name}" for n, name in sorted(sizes, reverse=True)[:12]]
    return "\n".join(out)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="The package layout, its import graph and module sizes.")
    parser.add_argument("--before", metavar="REV", help="also the largest modules at this git revision")
    print(layout_report(rev=parser.parse_args().before))
