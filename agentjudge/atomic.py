"""Every file agentjudge writes is written whole or not at all: the one way files and folders are replaced.

Why: a verb that rewrote its output in place on a full disk destroyed the previous good file and left a
truncated CSV that read without error (or a 0-byte parquet), and a report folder half written. Here a
file is written under a temporary name in the same folder (``.NAME.tmp-PID``), flushed to the disk
(``fsync``) and renamed over its target; a folder is written as a temporary folder beside its target and
swapped in with two renames. On any failure (a full disk, Ctrl-C, a bug in the writer) the temporary file
or folder is removed and the target is exactly what it was; an ``OSError`` that names no file (pyarrow's
and pandas' often do not) is given the target's path, so the one line a person reads says where.

``replacing(path)`` yields the temporary path to write (any writer that takes a path: pandas, pyarrow,
matplotlib); ``replacing_files(paths)`` does so for files that belong together (all written, then all
renamed: a failure in any leaves every target as it was); ``write_text`` and ``write_texts`` (a set) are the
common cases; ``replacing_folder(path)`` yields a temporary folder. What a killed
writer left (its process is gone) is removed by the next write of the same target
(``remove_dead_leftovers``).

Appends (a JSON-lines file growing as units finish, a label file) are not replaced: their readers drop a
torn last line instead.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

TMP_MARK = ".tmp-"  # a temporary name: "." + the target's name + TMP_MARK + the writer's pid (+ a suffix)


def temp_path(path: Path) -> Path:
    """The temporary name this process writes ``path`` under (in the same folder: the rename is atomic)."""
    return path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}")


def _prefix(path: Path) -> str:
    return f".{path.name}{TMP_MARK}"


@contextlib.contextmanager
def replacing(path: Path | str) -> Iterator[Path]:
    """Write ``path`` whole: yields the temporary path to write; when the block ends, the file is fsynced
    and renamed over ``path``. If the block (or the flush) fails, the temporary file is removed, ``path`` is
    untouched, and the error (named with ``path`` when it names no file) is raised."""
    with replacing_files([path]) as (tmp,):
        yield tmp


@contextlib.contextmanager
def replacing_files(paths: Sequence[Path | str]) -> Iterator[list[Path]]:
    """``replacing`` for files that belong together: yields their temporary paths; when the block ends,
    every one is fsynced, then each is renamed over its target. A failure before the renames leaves every
    target as it was."""
    targets = [Path(p) for p in paths]
    temps = [temp_path(p) for p in targets]
    current = targets[0] if targets else Path(".")
    try:
        for target in targets:
            current = target
            target.parent.mkdir(parents=True, exist_ok=True)
            remove_dead_leftovers(target.parent, _prefix(target))
        current = targets[0] if targets else current  # the block's error: the file it names, else the first
        yield temps
        for target, tmp in zip(targets, temps, strict=True):
            current = target
            fsync_file(tmp)
        for target, tmp in zip(targets, temps, strict=True):
            current = target
            os.replace(tmp, target)
    except BaseException as exc:
        for tmp in temps:
            _remove(tmp)
        for target, tmp in zip(targets, temps, strict=True):  # say the target, not its temporary name
            if isinstance(exc, OSError) and exc.filename == str(tmp):
                current, exc.filename = target, None
        renamed = named(exc, current)
        if renamed is exc:
            raise
        raise renamed from exc
    for folder in {t.parent for t in targets}:
        fsync_folder(folder)


def write_text(path: Path | str, text: str) -> None:
    """``text`` as UTF-8 with ``\\n`` line ends, written whole (``replacing``)."""
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")


def write_texts(files: dict[Path, str]) -> None:
    """Several text files that belong together, written whole and all or none (``replacing_files``)."""
    with replacing_files(list(files)) as temps:
        for (target, text), tmp in zip(files.items(), temps, strict=True):
            try:
                tmp.write_text(text, encoding="utf-8", newline="\n")
            except OSError as exc:
                raise named(exc, target) from exc


@contextlib.contextmanager
def replacing_folder(path: Path | str) -> Iterator[Path]:
    """Write the folder ``path`` whole: yields an empty temporary folder beside it; when the block ends, its
    files are fsynced and it takes ``path``'s place (the old folder is moved aside, the new one renamed in,
    the old one removed: a reader sees the old folder or the new one, or for a moment none). On a failure
    the temporary folder is removed and ``path`` is untouched."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_leftovers(target.parent, _prefix(target))
    tmp = temp_path(target)
    old = tmp.with_name(tmp.name + ".old")
    _remove(tmp)
    try:
        tmp.mkdir()
        yield tmp
        for folder, _, files in os.walk(tmp):
            for name in files:
                fsync_file(Path(folder) / name)
            fsync_folder(Path(folder))
        if target.exists():
            os.rename(target, old)
        os.rename(tmp, target)
    except BaseException as exc:
        _remove(tmp)
        if old.exists() and not target.exists():
            os.rename(old, target)
        renamed = named(exc, target)
        if renamed is exc:
            raise
        raise renamed from exc
    fsync_folder(target.parent)
    _remove(old)


def named(exc: BaseException, path: Path) -> BaseException:
    """``exc``, or for an ``OSError`` that names no file an ``OSError`` of the same errno (read from the
    text where a library put it there: pyarrow's "[errno 28] ...") naming ``path``."""
    if not isinstance(exc, OSError) or exc.filename:
        return exc
    number = exc.errno
    if number is None and (found := _ERRNO.search(str(exc))):
        number = int(found.group(1))
    reason = os.strerror(number) if number is not None else (exc.strerror or str(exc))
    return OSError(number, reason, str(path))


_ERRNO = re.compile(r"\[errno (\d+)\]", re.IGNORECASE)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_folder(path: Path) -> None:
    """Make a rename in ``path`` durable (where the file system allows a folder to be synced)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists() or path.is_symlink():
            path.unlink()


def remove_dead_leftovers(folder: Path, prefix: str) -> None:
    """Remove what a killed writer left in ``folder``: names ``prefix``PID (and ``prefix``PID followed by a
    suffix, such as a spill folder ``.tables`` or a swapped-out ``.old``) whose process PID no longer
    exists. A live process's are left alone: another writer of the same target may be using them (or an
    unrelated process has the same id: they are then removed by a later write). Process ids are this
    machine's: a folder written by two machines at once (a shared disk) could lose the other's file."""
    for leftover in folder.glob(f"{prefix}*"):
        rest = leftover.name[len(prefix) :]
        digits = rest[: len(rest) - len(rest.lstrip("0123456789"))]
        if digits and not _alive(int(digits)):
            _remove(leftover)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process; a number no process id can be
        return False
    except PermissionError:
        return True  # somebody else's process
    return True
