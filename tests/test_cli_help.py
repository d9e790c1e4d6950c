"""`--help` shows on/off flags without a value placeholder (typer's rich help would print `<bool>`)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentjudge.cli import app


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
