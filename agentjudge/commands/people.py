"""The human-validation verbs: ``human-sample`` and ``human-agree``, shells over ``agentjudge.api``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentjudge.commands._app import guarded, within


def human_sample(
    rundir: Annotated[Path, typer.Argument()],
    n: Annotated[int, typer.Option(help="Records to sample, stratified by topology.")] = 120,
    seed: Annotated[int, typer.Option()] = 0,
    out: Annotated[Path | None, typer.Option(help="CSV path (default RUNDIR/human/sample.csv).")] = None,
    difficulty: Annotated[
        str, typer.Option(help="Difficulty to sample (the published protocol: hard).")
    ] = "hard",
) -> None:
    """Write a stratified sample of scored predictions for human annotators."""
    within(n=(n, 1), seed=(seed, 0))
    raise typer.Exit(
        guarded(lambda: sample_cli(rundir=rundir, n=n, seed=seed, out=out, difficulty=difficulty))
    )


def sample_cli(rundir: Path, n: int, seed: int, out: Path | None, difficulty: str = "hard") -> int:
    """Write the annotators' CSV; exit 2 on an unusable run folder or output path."""
    from agentjudge import api
    from agentjudge.commands._app import error

    try:
        sample = api.human_sample(rundir, n=n, seed=seed, out=out, difficulty=difficulty)
    except api.InputError as exc:
        error(str(exc))
        return 2
    rows = len(sample.rows)
    print(
        f"wrote {rows} rows to {sample.out} ({difficulty} difficulty, {sample.mode} scores; per topology "
        f"{sample.per_topology})"
    )
    if rows < n:
        print(f"note: only {rows} of the {n} requested rows were available")
    return 0


def human_agree(
    rundir: Annotated[Path, typer.Argument()],
    labels: Annotated[Path, typer.Argument(help="The sample CSV with the annotators' agree columns filled.")],
    resamples: Annotated[int, typer.Option()] = 1000,
    seed: Annotated[int, typer.Option()] = 0,
) -> None:
    """Agreement of the programmatic reference with human labels, per metric and topology, with CIs."""
    from agentjudge.limits import MAX_RESAMPLES

    within(resamples=(resamples, 1, MAX_RESAMPLES), seed=(seed, 0))
    raise typer.Exit(guarded(lambda: agree_cli(rundir=rundir, labels=labels, resamples=resamples, seed=seed)))


def agree_cli(rundir: Path, labels: Path, resamples: int, seed: int) -> int:
    """Print and write RUNDIR/human/agreement.csv; exit 2 on a bad labels file."""
    from agentjudge import api
    from agentjudge.commands._app import error

    try:
        agreement = api.human_agree(rundir, labels, resamples=resamples, seed=seed)
    except api.InputError as exc:
        error(str(exc))
        return 2
    for r in agreement.table.itertuples(index=False):
        print(
            f"{r.scope:9s} {r.group:20s} {100 * r.agreement:5.1f} % [{100 * r.ci_lo:5.1f}, "
            f"{100 * r.ci_hi:5.1f}]"
            f"  n={r.n_labels} missing={r.missing}"
        )
    print(f"wrote {agreement.out} (published overall 92.7 %, parameter structure lowest at 82.5 %)")
    return 0
