"""RUNDIR/run.lock: who holds a run folder, as the file says, and whether that process still runs.

``runner/rundir_lock.py`` takes the lock (``fcntl.flock``) and writes its holder's pid, host and start time
into the file as JSON; a normal end removes the file, a killed holder leaves it behind holding nothing.
Readers never take the lock (``report``, the viewer and the other read-only verbs work while a run holds
the folder); ``RunFolder`` only asks whether a run is at work, to say so, and for that it reads the file
and checks the pid instead of probing the lock: a probe would hold the lock for an instant, and a run
starting in that instant would be refused.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

LOCK_FILE = "run.lock"


def read_holder(path: Path) -> dict[str, Any]:
    """The holder's details written in a lock file ({} when absent or unreadable)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def running_holder(rundir: Path) -> dict[str, Any] | None:
    """The details of the run working in ``rundir`` ({} when it has not written them yet), or None when
    none is: no lock file, or one left by a process of this host that no longer exists. A holder on another
    host cannot be checked from here and counts as running (its normal end removes the file). A pid
    reused by another process since the holder was killed reads as running too: a false "in progress",
    never a false "finished"."""
    path = Path(rundir) / LOCK_FILE
    if not path.is_file():
        return None
    holder = read_holder(path)
    pid, host = holder.get("pid"), holder.get("host")
    if not isinstance(pid, int) or isinstance(pid, bool) or host != socket.gethostname():
        return holder
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # another user's process: it exists
        return holder
    return holder


def describe_holder(holder: dict[str, Any]) -> str:
    """ "pid 123 on host h, started 2026-01-01 10:00:00 UTC" (or that the details are not written yet)."""
    if not holder:
        return "it has not written its details yet"
    return (
        f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, "
        f"started {holder.get('started', '?')}"
    )
