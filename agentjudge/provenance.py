"""Which code produced a file: the commit of the checkout the package runs from.

Kept apart from the runner so the report can say which code built it without importing the grid."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """HEAD of the checkout the package runs from, or "unknown" (installed wheel, no git). Asked once per
    process: the run's meta, the export stamp and the no-op check all need it."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
