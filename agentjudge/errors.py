"""The exceptions a caller of the library meets, in one family, so the command line maps them once.

``InputError`` is everything the person running agentjudge has to fix: a bad file, a bad flag, a model whose
set-up the preflight refused, an output path that cannot be written, a run folder held by another process.
Its message is one line (a configuration diff may follow on the lines after it) naming the file, the line
or row and the field; the command line prints it and exits 2, never with a traceback. Each package keeps
its own error class (``LayoutError``, ``PipelineError``, ``GridError``, ...) for the places that catch
exactly that; each of them is an ``InputError``.

It is a ``ValueError`` because most of those classes were one before the family existed and callers catch
them as such. Anything else an API call raises is a bug or a model failure, not bad input.
"""

from __future__ import annotations

from collections.abc import Sequence


class InputError(ValueError):
    """Bad input, a failed preflight or a file-system problem: the command line's exit 2."""


class PreflightError(InputError):
    """The preflight found problems before anything ran or was written; ``problems`` has one line each."""

    def __init__(self, problems: Sequence[str], what: str = "nothing was run or written") -> None:
        self.problems = tuple(problems)
        self.what = what
        super().__init__(f"preflight: {len(self.problems)} problem(s); {what}.")
