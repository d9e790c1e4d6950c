"""The code's static checks run with the suite, so CI (which runs the suite) enforces them: ruff's lint and
format, mypy as configured in pyproject.toml, and ``mypy --strict`` on the modules that promise it (the
vocabulary, the statistics and the library API: what other people's code calls).

``.pre-commit-config.yaml`` runs the same commands before a commit; this test is the one that cannot be
skipped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# `mypy --strict` on these (follow-imports=silent: the rest of the package is checked by the configured run)
STRICT = [
    "agentjudge/types.py",
    "agentjudge/errors.py",
    "agentjudge/stats",
    "agentjudge/api",
    "agentjudge/runner/result.py",  # what the API returns
    "agentjudge/runner/events.py",  # what run and infer report while they work
    "agentjudge/rundir",
]


def _run(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_ruff_lint_is_clean() -> None:
    done = _run("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_ruff_format_is_clean() -> None:
    done = _run("ruff", "format", "--check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_mypy_as_configured_is_clean(tmp_path_factory: pytest.TempPathFactory) -> None:
    cache = tmp_path_factory.mktemp("mypy-cache")
    done = _run("mypy", "--cache-dir", str(cache), "agentjudge", "analysis")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_mypy_strict_where_promised(tmp_path_factory: pytest.TempPathFactory) -> None:
    cache = tmp_path_factory.mktemp("mypy-strict-cache")
    targets = [t for t in STRICT if (ROOT / t).exists()]
    assert "agentjudge/types.py" in targets and "agentjudge/stats" in targets
    done = _run("mypy", "--strict", "--follow-imports=silent", "--cache-dir", str(cache), *targets)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
