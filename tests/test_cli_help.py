"""`--help` shows on/off flags without a value placeholder (typer's rich help would print `<bool>`)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentjudge.commands import app


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        (["run"], ["--dry-run", "--force-new", "--no-cache"]),
        (["infer"], ["--no-cache"]),
        (["taubench"], ["--no-cache"]),
        (["score"], ["--lenient"]),
    ],
)
def test_flags_show_no_value_placeholder(command: list[str], flags: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    for flag in flags:
        line = next(line for line in result.output.splitlines() if f" {flag} " in line)
        assert "<bool>" not in line, line
    # an option that does take a value keeps its type
    if command == ["run"]:
        assert "<float>" in next(line for line in result.output.splitlines() if "--max-cost" in line)


def _command_paths(command: object, path: list[str]) -> list[list[str]]:
    subcommands = getattr(command, "commands", {})
    return [path] + [
        p for name, sub in sorted(subcommands.items()) for p in _command_paths(sub, [*path, name])
    ]


def test_no_help_page_shows_a_bool_placeholder() -> None:
    """typer builds `--help` itself: it too renders as a flag, on every page (top, groups, verbs)."""
    import typer

    paths = _command_paths(typer.main.get_command(app), [])
    assert ["run"] in paths and ["cache", "clear"] in paths and ["import", "bfcl"] in paths
    for path in paths:
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "160"})
        assert result.exit_code == 0, result.output
        assert "<bool>" not in result.output, (path, result.output)
        assert any(line.split()[1:2] == ["--help"] for line in result.output.splitlines() if "│" in line)
