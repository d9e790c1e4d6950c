"""The typer app and what every verb's shell shares: the flag look of ``--help``, the exit-code guard,
numeric flag checks. The verbs themselves are in the modules beside this one; ``__init__`` registers them.

Exit codes (docs/cli.md, "Exit codes"): 0 success; 1 the work ran but some units/records failed or the cost
cap stopped it; 2 bad input, a failed preflight or a file-system error (one line naming the path, never a
traceback); 130 interrupted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperGroup

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Typer's rich help prints every option's type, so an on/off flag read `--dry-run <bool>` as if it took a
# value; an empty metavar leaves its type column blank (plain click help never shows a flag's metavar).
FLAG = ""


class _FlagHelpGroup(TyperGroup):
    """A command group whose own ``--help``, and that of every command in it, shows no ``<bool>``: typer
    builds the help option itself, so the ``FLAG`` metavar is set on it here, once per command."""

    def get_help_option(self, ctx: Any) -> Any:
        return _flag(super().get_help_option(ctx))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _flag(command.get_help_option(ctx))
        return command


def _flag(option: Any) -> Any:
    if option is not None:
        option.metavar = FLAG
    return option


app = typer.Typer(
    cls=_FlagHelpGroup,
    name="agentjudge",
    help="Benchmark how reliably LLM judges grade agents' tool calls.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
cache_app = typer.Typer(
    cls=_FlagHelpGroup, help="Inspect or clear the model-call cache.", no_args_is_help=True
)
import_app = typer.Typer(
    cls=_FlagHelpGroup,
    help="Import tasks written elsewhere as records in the published layout.",
    no_args_is_help=True,
)

PROBE = typer.Option("--probe", help="Preflight: also make one 1-token call per API model.", metavar=FLAG)
SKIP_INVALID = typer.Option(
    "--skip-invalid", help="Leave out records failing Gate 1 (default: refuse).", metavar=FLAG
)
NO_CACHE = typer.Option("--no-cache", help="Do not read the call cache.", metavar=FLAG)


class Process:
    """True only under the console script / ``python -m agentjudge`` (``main``): the process then ends with
    the verb, so ``run`` may keep pandas and numpy out of its export (fastpaths/lean_export.py); an in-process
    caller (CliRunner, a notebook calling ``app``) keeps pyarrow's pandas support intact."""

    standalone = False


def error(message: str) -> None:
    """An error as every verb prints it: ``error: MESSAGE`` on stderr, as plain text (no markup, no wrapping:
    a path or a key stays on its line), so ``agentjudge VERB … > out.txt`` still shows it."""
    typer.echo(f"error: {message}", err=True)


def guarded(call: Callable[[], int], *, resumable: bool = False) -> int:
    """Run a verb's shell; an ``InputError`` it did not print itself is exit 2 with ``error: MESSAGE``, a
    file-system error that escaped it (disk full, locked database, ...) exit 2 with one line naming the
    path (``resumable``: the verb keeps finished units, and the line says so), Ctrl-C exit 130."""
    from agentjudge.errors import InputError
    from agentjudge.fserrors import FS_ERRORS, describe

    try:
        return call()
    except InputError as exc:
        error(str(exc))
        return 2
    except FS_ERRORS as exc:
        error(describe(exc, resumable=resumable))
        return 2
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130


def within(**flags: tuple[int, int] | tuple[int, int, int]) -> None:
    """Numeric flags checked before a verb starts: ``--flag VALUE`` below its minimum or above its maximum
    (``agentjudge.limits``) is exit 2 with one line and nothing written (a bootstrap seed must be >= 0, a
    count >= 1, resamples at most ``MAX_RESAMPLES``)."""
    for name, bounds in flags.items():
        value, minimum = bounds[0], bounds[1]
        maximum = bounds[2] if len(bounds) == 3 else None
        flag = f"--{name.replace('_', '-')}"
        if value < minimum:
            error(f"{flag} {value}: must be >= {minimum}")
            raise typer.Exit(2)
        if maximum is not None and value > maximum:
            error(f"{flag} {value}: must be <= {maximum}")
            raise typer.Exit(2)


def failed_preflight(exc: Any) -> int:
    """A ``PreflightError`` as every verb with a preflight prints it, on stderr: each problem, then the
    count."""
    for line in exc.problems:
        error(line)
    typer.echo(str(exc), err=True)
    return 2
