"""``agentjudge cache stats`` and ``cache clear``: shells over ``agentjudge.api``'s ``cache_stats`` and
``cache_clear``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentjudge.commands._app import guarded


def cache_stats(
    path: Annotated[
        Path | None, typer.Option(help="Cache file (default: $AGENTJUDGE_CACHE, else ~/.cache/agentjudge).")
    ] = None,
) -> None:
    """Entries, size and hit counts of the call cache."""
    raise typer.Exit(guarded(lambda: stats_cli(path)))


def stats_cli(path: Path | None = None) -> int:
    """Entries, size, per-model entries and hits. 2 if the file given is missing or not a cache."""
    from rich.console import Console
    from rich.table import Table

    from agentjudge import api
    from agentjudge.commands._app import error

    console = Console(soft_wrap=True)
    try:
        stats = api.cache_stats(path)
    except api.InputError as exc:
        error(str(exc))
        return 2
    if not stats.exists:
        if path is not None:  # a file was named: its absence is an error
            error(f"--path {stats.path}: no such cache file")
            return 2
        console.print(f"[yellow]No cache at {stats.path} (nothing has been cached yet).[/yellow]")
        return 0
    console.print(
        f"Cache {stats.path}: {stats.entries} entries, {human_bytes(stats.size_bytes)}, "
        f"{stats.hits} hits served"
    )
    table = Table("model", "entries", "hits")
    for model, row in stats.per_model.items():
        table.add_row(model, str(row["entries"]), str(row["hits"]))
    console.print(table)
    return 0


def cache_clear(
    path: Annotated[
        Path | None,
        typer.Option(help="Cache file (default: $AGENTJUDGE_CACHE or ~/.cache/agentjudge/calls.sqlite)."),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Only entries of this model.")] = None,
) -> None:
    """Delete cached model answers (all, or one model's)."""
    raise typer.Exit(guarded(lambda: clear_cli(path, model=model)))


def clear_cli(path: Path | None = None, model: str | None = None) -> int:
    """Delete entries and say how many."""
    from rich.console import Console

    from agentjudge import api
    from agentjudge.commands._app import error

    console = Console(soft_wrap=True)
    try:
        cleared = api.cache_clear(path, model=model)
    except api.InputError as exc:
        error(str(exc))
        return 2
    if not cleared.exists:
        if path is not None:  # a file was named: its absence is an error
            error(f"--path {cleared.path}: no such cache file; nothing to clear")
            return 2
        console.print(f"[yellow]No cache at {cleared.path}; nothing to clear.[/yellow]")
        return 0
    scope = f" of model {model}" if model else ""
    console.print(f"Deleted {cleared.deleted} cached answers{scope} from {cleared.path}.")
    return 0


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
