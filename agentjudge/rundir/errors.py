"""The one error of reading a run folder, and the one-line forms of what went wrong."""

from __future__ import annotations

from pydantic import ValidationError

from agentjudge.errors import InputError


class RunFolderError(InputError):
    """A run folder, or one of its files, that cannot be read. The message is one line that names the file
    (or folder) and says what to do; a command prints it and exits 2."""


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line (pyarrow's and pydantic's run to several)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def validation_problem(exc: ValidationError) -> str:
    """A validation error's first problem in one line: "field units.judge.done: ..." (and how many more)."""
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return (f"field {where}: {message}" if where else message) + more
