"""File-system errors as one line naming the path, exit code 2, checked before any work where possible.

Why: an output path that is a file, a read-only folder, a full disk or a locked database is the user's to
fix, and a 50-line traceback hides which path. Each writing verb checks its output path first
(``out_path_problem``: nothing is created, so a refused run leaves nothing behind), and the CLI turns
any ``FS_ERRORS`` that still escapes (e.g. the disk filling up mid-run) into ``describe(exc)``.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from typing import Literal

FS_ERRORS: tuple[type[BaseException], ...] = (OSError, sqlite3.Error)


def _nearest_existing(path: Path) -> Path:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def out_path_problem(path: Path, kind: Literal["dir", "file"]) -> str | None:
    """Why ``path`` cannot be written as a folder (``dir``) or a file, or None. Creates nothing."""
    path = Path(path)
    if kind == "dir" and path.exists() and not path.is_dir():
        return f"{path}: exists and is not a folder"
    if kind == "file" and path.is_dir():
        return f"{path}: is a folder, expected a file name"
    existing = _nearest_existing(path if kind == "dir" else path.parent)
    if not existing.is_dir():
        return f"{path}: {existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{path}: folder {existing} is not writable"
    if kind == "file" and path.exists() and not os.access(path, os.W_OK):
        return f"{path}: file is not writable"
    return None


def describe(exc: BaseException, path: Path | str | None = None, *, resumable: bool = False) -> str:
    """``PATH: reason`` from an OSError or sqlite3 error (``path`` when the error names none). On a full
    disk it says so and what to do; ``resumable``: the verb keeps finished units (``run``, ``infer``), so
    a re-run goes on where it stopped; otherwise the verb's earlier files were left as they were (every
    file is written whole or not at all: ``agentjudge.atomic``)."""
    where = getattr(exc, "filename", None) or path or "(unknown path)"
    if isinstance(exc, sqlite3.Error):
        reason = f"database error: {exc}"
        if "locked" in str(exc):
            reason += " (another process is using it; wait for it or use another --out)"
    else:
        assert isinstance(exc, OSError)
        reason = exc.strerror or str(exc)
    if _disk_full(exc, Path(where) if where != "(unknown path)" else None):
        reason += (
            " (the disk is full: free some space, then re-run the same command; finished units are kept)"
            if resumable
            else " (the disk is full: free some space, then run it again; the earlier files were left as "
            "they were)"
        )
    return f"{where}: {reason}"


FULL_BELOW = (
    1 << 20
)  # bytes free under which a failed write is taken for a full disk (SQLite says "I/O error")


def _disk_full(exc: BaseException, path: Path | None) -> bool:
    """The error says the disk is full (ENOSPC, SQLite's "database or disk is full"), or it is a write
    error on a file system with almost nothing free (SQLite reports a full disk as "disk I/O error")."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if "disk is full" in str(exc) or "No space left" in str(exc):
        return True
    if path is None or not ("I/O error" in str(exc) or isinstance(exc, OSError) and exc.errno == errno.EIO):
        return False
    try:
        stat = os.statvfs(_nearest_existing(path))
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < FULL_BELOW
