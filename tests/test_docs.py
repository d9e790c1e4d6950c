"""The documentation stays true: README.md and every page under docs/ are read as a user would run them.

- every ``python`` block parses, and a block after ``<!-- run -->`` runs (in a fresh folder, this checkout
  importable) and exits 0;
- every ``yaml`` block loads; one that is a pipeline validates against ``Pipeline``, and every model entry
  under ``generators`` / ``judges`` against ``ModelSettings``;
- every ``agentjudge VERB --flag`` (shell blocks and inline code) names a real verb and a flag it takes;
- every relative link resolves, anchors included (the repository host's heading slugs);
- the pipeline-key tables list exactly the models' fields, in order;
- the README is at most 250 lines, and its install and test commands are the ones ``.ci/run`` runs;
- no user doc points to files a clone does not have (the shared folder, the spec).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentjudge.runner.pipeline import Pipeline
from agentjudge.types import ModelSettings, PromptVariant

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
USER_DOCS = [
    *PAGES,
    ROOT / "FIDELITY.md",
    ROOT / "prompts" / "README.md",
    *(ROOT / "pipelines").glob("*.yaml"),
]
FENCE = re.compile(r"^```([A-Za-z0-9_-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
RUN_MARKER = "<!-- run -->"


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def blocks(*langs: str) -> Iterator[tuple[Path, int, str, str]]:
    """(page, line, preceding text, code) of every fenced block in one of ``langs``."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group(1) in langs:
                line = text.count("\n", 0, match.start()) + 1
                yield page, line, text[: match.start()], match.group(2)


def _ids(items: list[tuple[Path, int, str, str]]) -> list[str]:
    return [f"{_rel(page)}:{line}" for page, line, _, _ in items]


def test_the_docs_exist_and_the_readme_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert len(pages) >= 10, [p.name for p in pages]
    for page in pages:
        assert f"docs/{page.name}" in readme, f"README.md does not link docs/{page.name}"


def test_the_readme_fits_on_two_screens() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines (at most 250; the rest belongs in docs/)"


def test_the_readme_commands_are_the_ones_ci_runs() -> None:
    readme_shell = [code for page, _, _, code in blocks("bash") if page.name == "README.md"]
    install_and_run, run_tests = readme_shell[0].strip(), readme_shell[1].strip()
    assert install_and_run.startswith("pip install -e '.[dev]' && agentjudge run pipelines/quickstart.yaml")
    assert install_and_run.endswith("agentjudge report runs/quickstart")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line.strip() for line in ci if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-1] == run_tests, f".ci/run ends with {commands[-1]!r}, the README says {run_tests!r}"


PYTHON = list(blocks("python"))


@pytest.mark.parametrize("page,line,before,code", PYTHON, ids=_ids(PYTHON))
def test_python_blocks_parse(page: Path, line: int, before: str, code: str, tmp_path: Path) -> None:
    try:
        ast.parse(code)
    except SyntaxError as error:
        pytest.fail(f"{_rel(page)}:{line}: python block does not parse: {error}")
    if before.rstrip().endswith(RUN_MARKER):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        (tmp_path / "block.py").write_text(code, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(tmp_path / "block.py")],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{_rel(page)}:{line}: {done.stdout}{done.stderr}"


def test_some_python_block_is_run() -> None:
    assert any(before.rstrip().endswith(RUN_MARKER) for _, _, before, _ in PYTHON)


YAML = list(blocks("yaml"))


@pytest.mark.parametrize("page,line,before,code", YAML, ids=_ids(YAML))
def test_yaml_blocks_load_and_validate(page: Path, line: int, before: str, code: str) -> None:
    where = f"{_rel(page)}:{line}"
    data = yaml.safe_load(code)
    assert isinstance(data, dict), f"{where}: a YAML block should be a mapping"
    if "dataset" in data and "generators" in data:
        Pipeline.model_validate(data)
    entries = [e for role in ("generators", "judges") for e in data.get(role, [])]
    assert entries or set(data) - {"generators", "judges"}, f"{where}: nothing to check"
    for entry in entries:
        ModelSettings.model_validate({"model": entry} if isinstance(entry, str) else entry)


def _cli() -> dict[str, set[str]]:
    """'verb' or 'group verb' -> the flags it takes (from the command tree the `agentjudge` script runs)."""
    import typer.main

    from agentjudge.commands import app

    found: dict[str, set[str]] = {}

    def walk(command: Any, path: str) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for name, sub in subcommands.items():
                walk(sub, f"{path} {name}".strip())
            found[path] = {"--help"}
            return
        found[path] = {o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")}
        found[path].add("--help")

    walk(typer.main.get_command(app), "")
    return found


def _invocations(text: str) -> Iterator[list[str]]:
    """Each `agentjudge ...` command in ``text``: continuation lines joined, split at && ; | and comments."""
    text = text.replace("\\\n", " ")
    for line in text.splitlines():
        line = line.split(" #", 1)[0]
        for part in re.split(r"&&|;|\|", line):
            words = part.strip().split()
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):  # VAR=value before a command
                words = words[1:]
            if words[:1] == ["agentjudge"]:
                yield words


def _commands_in_docs() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        shell = "\n".join(m.group(2) for m in FENCE.finditer(text) if m.group(1) in ("bash", "sh", "console"))
        inline = "\n".join(re.findall(r"`(agentjudge [^`]+)`", FENCE.sub("", text)))
        for words in [*_invocations(shell), *_invocations(inline)]:
            found.append((_rel(page), " ".join(words)))
    return found


COMMANDS = _commands_in_docs()


def test_every_command_in_the_docs_names_a_real_verb_and_real_flags() -> None:
    cli = _cli()
    problems = []
    for page, command in COMMANDS:
        try:
            words = shlex.split(command.replace("…", ""))
        except ValueError:  # a placeholder with a lone quote or backslash: words are enough here
            words = command.split()
        if len(words) < 2 or words[1].startswith("-") or words[1].isupper():  # `agentjudge VERB` in prose
            continue
        verb = words[1]
        if verb in ("cache", "import") and len(words) > 2:
            verb = f"{verb} {words[2]}"
        if verb not in cli:
            problems.append(f"{page}: `{command}`: no verb {verb!r}")
            continue
        for word in words[2:]:
            flag = word.split("=", 1)[0]
            if re.fullmatch(r"--[a-z][a-z0-9-]*", flag) and flag not in cli[verb]:
                problems.append(f"{page}: `{command}`: {verb} has no flag {flag}")
    assert len(COMMANDS) > 30, COMMANDS
    assert not problems, "\n".join(problems)


def _slug(heading: str) -> str:
    """The anchor the repository host gives a heading: lower case, punctuation dropped, spaces -> '-'."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def test_every_relative_link_and_anchor_resolves() -> None:
    problems = []
    checked = 0
    readmes = [*sorted((ROOT / "agentjudge").rglob("README.md")), ROOT / "analysis" / "README.md"]
    for page in [*PAGES, ROOT / "ARCHITECTURE.md", ROOT / "FIDELITY.md", *readmes]:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            checked += 1
            if not dest.exists():
                problems.append(f"{_rel(page)}: link {target!r}: {path} does not exist")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                problems.append(f"{_rel(page)}: link {target!r}: no heading #{anchor} in {_rel(dest)}")
    assert checked > 20
    assert not problems, "\n".join(problems)


def _table_after(heading_text: str, text: str) -> list[str]:
    """The first-column keys of the first markdown table after ``heading_text``."""
    lines = text[text.index(heading_text) :].splitlines()
    rows: list[str] = []
    in_table = False
    for line in lines[1:]:
        if line.startswith("|"):
            in_table = True
            key = re.fullmatch(r"`([a-z_]+)`", line.split("|")[1].strip())
            if key:
                rows.append(key.group(1))
        elif in_table:
            break
    return rows


KEYS_PAGE = ROOT / "docs" / "pipeline-keys.md"


def test_the_pipeline_key_table_lists_every_pipeline_field() -> None:
    keys = _table_after("## Keys of a pipeline", KEYS_PAGE.read_text(encoding="utf-8"))
    assert keys == list(Pipeline.model_fields), "docs/pipeline-keys.md differs from Pipeline's fields"


def test_the_model_key_table_lists_every_model_field() -> None:
    keys = _table_after("## Keys of one model entry", KEYS_PAGE.read_text(encoding="utf-8"))
    assert keys == list(ModelSettings.model_fields), "docs/pipeline-keys.md differs from ModelSettings"


def test_the_prompt_variant_row_names_every_variant_key() -> None:
    text = KEYS_PAGE.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `prompt_variants` |"))
    for field in PromptVariant.model_fields:
        assert f"`{field}`" in row


def test_architecture_points_to_the_key_table() -> None:
    assert "docs/pipeline-keys.md" in (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def test_user_docs_speak_of_the_project_alone() -> None:
    problems = []
    for page in USER_DOCS:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\.\./shared|\bSPEC\b|SPEC\.md|§\d", line):
                problems.append(f"{_rel(page)}:{number}: {line.strip()[:100]}")
    assert not problems, "a clone has no ../shared folder or spec:\n" + "\n".join(problems)
