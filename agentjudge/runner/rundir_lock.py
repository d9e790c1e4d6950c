"""One ``agentjudge run`` per run folder at a time: an OS advisory lock on ``RUNDIR/run.lock``.

Why: two invocations on one folder would both do all the work (SQLite keeps the files consistent, but with a
real judge every call is paid twice). The lock is ``fcntl.flock`` on a file in the folder, so the kernel drops
it with the process that holds it: a run killed with SIGKILL leaves a ``run.lock`` that blocks nothing, and
the next run (a resume) takes it over. The file holds who holds it (pid, host, start time, as JSON) for the
message the second invocation prints; it is removed when the holder ends normally.

Only ``run`` takes the lock. Verbs that read a run folder (``report``, ``batches``, ``human-sample``, ...)
never ask for it and keep working while a run holds the folder.

Forked children (the worker and offline processes) inherit the lock's file descriptor; each closes its copy
right after the fork (``os.register_at_fork``), so the lock lives exactly as long as the process that took
it, not as long as its last child.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from pathlib import Path

from agentjudge.errors import InputError
from agentjudge.rundir.lock import LOCK_FILE, describe_holder, read_holder

_HELD: set[int] = set()  # descriptors of the locks this process holds (closed in forked children)


def _close_in_child() -> None:
    for fd in list(_HELD):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_close_in_child)


class RunFolderBusy(InputError):
    """Another process holds the run folder; the message names it (pid, host, start time)."""


class RunFolderLock:
    """``acquire()`` takes ``RUNDIR/run.lock`` or raises ``RunFolderBusy``; ``release()`` gives it back."""

    def __init__(self, rundir: Path) -> None:
        self.rundir = Path(rundir)
        self.path = self.rundir / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock (the folder must exist). A lock file removed or replaced between its opening and
        its locking (a holder ending at that moment) is opened again, so two processes never each hold a
        lock on a different file of the same name."""
        if self._fd is not None:
            return
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise RunFolderBusy(self._busy_message()) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the file we locked is no longer the folder's lock file: take the new one
        self._fd = fd
        _HELD.add(fd)
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(holder, allow_nan=False) + "\n").encode("utf-8"), 0)

    def release(self) -> None:
        """Remove the lock file and drop the lock (the file goes first, while it is still held, so no other
        process can have locked it in between)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        _HELD.discard(fd)
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(fd)

    def _busy_message(self) -> str:
        who = describe_holder(read_holder(self.path))
        return (
            f"{self.rundir} is in use by another `agentjudge run` ({who}); one run per folder at a time. "
            "Wait for it to end, or stop it (its finished units are kept) and re-run; "
            "`agentjudge report` and the other verbs that only read the folder work meanwhile"
        )

    def __enter__(self) -> RunFolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
