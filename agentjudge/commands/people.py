"""The people verbs: ``human-sample``, ``label`` and ``human-agree``, shells over ``agentjudge.api``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentjudge.commands._app import FLAG, guarded, within

if TYPE_CHECKING:
    from agentjudge.people.agree import PeopleTables


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


def label(
    rundir: Annotated[Path, typer.Argument(help="A run folder written by `agentjudge run` or an import.")],
    annotator: Annotated[
        str, typer.Option(help="Your name: the labels are the judge human/NAME, in RUNDIR/labels/NAME.jsonl.")
    ],
    n: Annotated[int, typer.Option(help="Outputs in the sample, stratified by topology.")] = 120,
    seed: Annotated[int, typer.Option(help="The sample's draw and its order.")] = 0,
    difficulty: Annotated[
        str | None,
        typer.Option(
            help="Difficulty to sample (default: hard, as published; a run with one difficulty: that one)."
        ),
    ] = None,
    port: Annotated[int, typer.Option(help="Port to listen on (0: a free one, printed).")] = 0,
    host: Annotated[
        str, typer.Option(help="Address to listen on (127.0.0.1: this machine only).")
    ] = "127.0.0.1",
    show_reference: Annotated[
        bool,
        typer.Option(
            "--show-reference",
            help="Show the scores and the judges' verdicts (not blind; recorded as such).",
            metavar=FLAG,
        ),
    ] = False,
) -> None:
    """Label a run's outputs in the browser, keyboard only: a person as one more judge (human/NAME)."""
    within(n=(n, 1), seed=(seed, 0), port=(port, 0, 65535))
    raise typer.Exit(
        guarded(
            lambda: label_cli(
                rundir, annotator, n, seed, difficulty, host, port, show_reference=show_reference
            )
        )
    )


def label_cli(
    rundir: Path,
    annotator: str,
    n: int,
    seed: int,
    difficulty: str | None,
    host: str,
    port: int,
    show_reference: bool = False,
) -> int:
    """Serve until Ctrl-C (exit 0); a folder, name or design that cannot be used exits 2."""
    import time
    import warnings

    from agentjudge import api
    from agentjudge.commands._app import error

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the warning is printed below as one line
            labelling = api.label(
                rundir,
                annotator=annotator,
                n=n,
                seed=seed,
                difficulty=difficulty,
                host=host,
                port=port,
                show_reference=show_reference,
            )
    except api.InputError as exc:
        error(str(exc))
        return 2
    if labelling.warning:
        print(f"warning: {labelling.warning}", file=sys.stderr)
    blind = "NOT blind: the scores and the judges' verdicts are shown" if show_reference else "blind"
    print(
        f"labelling {rundir} as human/{annotator}: {labelling.queue} {labelling.difficulty} outputs in the "
        f"sample, {labelling.labelled} labelled and {labelling.skipped} skipped so far ({blind}); labels go "
        f"to {labelling.labels_file}"
    )
    print(f"open {labelling.url}  (Ctrl-C stops; a later start resumes)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        labelling.close()
        print("stopped")
        return 0


def human_agree(
    rundir: Annotated[Path, typer.Argument()],
    labels: Annotated[
        Path | None,
        typer.Argument(
            help="The sample CSV with the annotators' agree columns; without it, RUNDIR/labels/*.jsonl."
        ),
    ] = None,
    resamples: Annotated[int, typer.Option()] = 1000,
    seed: Annotated[int, typer.Option()] = 0,
    target_ci: Annotated[
        float, typer.Option(help="The label budget's target: a CI of +/- this many percentage points.")
    ] = 3.0,
    unweighted: Annotated[
        bool,
        typer.Option(
            "--unweighted",
            help="No inverse-inclusion weights (the published check): figures of the sample.",
            metavar=FLAG,
        ),
    ] = False,
) -> None:
    """People against the programmatic reference (per metric and topology) and every judge, with CIs."""
    from agentjudge.limits import MAX_RESAMPLES

    within(resamples=(resamples, 1, MAX_RESAMPLES), seed=(seed, 0))
    raise typer.Exit(
        guarded(
            lambda: agree_cli(
                rundir=rundir,
                labels=labels,
                resamples=resamples,
                seed=seed,
                target_ci=target_ci,
                unweighted=unweighted,
            )
        )
    )


def agree_cli(
    rundir: Path,
    labels: Path | None,
    resamples: int,
    seed: int,
    target_ci: float = 3.0,
    unweighted: bool = False,
) -> int:
    """Print and write RUNDIR/human/agreement.csv (and, from the run's labels, the judges' tables); exit 2 on
    a bad labels file or a folder without labels."""
    from agentjudge import api
    from agentjudge.commands._app import error

    try:
        agreement = api.human_agree(
            rundir, labels, resamples=resamples, seed=seed, target_ci=target_ci, unweighted=unweighted
        )
    except api.InputError as exc:
        error(str(exc))
        return 2
    if agreement.people is not None:
        _print_people(agreement.people)
        return 0
    for r in agreement.table.itertuples(index=False):
        print(
            f"{r.scope:9s} {r.group:20s} {100 * r.agreement:5.1f} % [{100 * r.ci_lo:5.1f}, "
            f"{100 * r.ci_hi:5.1f}]"
            f"  n={r.n_labels} missing={r.missing}"
        )
    print(f"wrote {agreement.out} (published overall 92.7 %, parameter structure lowest at 82.5 %)")
    return 0


def _pct(x: float) -> str:
    return "  n/a" if x != x else f"{100 * x:5.1f}"


def _print_people(t: PeopleTables) -> None:
    """The tables of ``write_people_tables`` as a person reads them."""
    for line in t.about:
        print(line)
    if not t.agreement.empty:
        print(
            "\nthe reference against people (1 - |h - p|): on the labelled outputs | over the run (weighted)"
        )
        for r in t.agreement.itertuples(index=False):
            print(
                f"  {r.scope:9s} {r.group:20s} {_pct(r.agreement)} % [{_pct(r.ci_lo)}, {_pct(r.ci_hi)}]"
                f" | {_pct(r.population)} % [{_pct(r.population_lo)}, {_pct(r.population_hi)}]"
                f"  n={r.n_labels} missing={r.missing}"
            )
        print("  (published: 92.7 % overall, parameter structure lowest at 82.5 %; one annotator, not blind)")
    else:
        print("\nno labelled output has a reference: agreement.csv not written")
    pooled = t.judges[t.judges["metric"] == "all"]
    print("\neach judge against people (1 - |h - v|), metrics pooled: direct | PPI (the reference as proxy)")
    for r in pooled.itertuples(index=False):
        print(
            f"  {r.judge:28s} {r.condition:11s} n={r.n_labelled:<4d} {_pct(r.direct)} % "
            f"[{_pct(r.direct_lo)}, {_pct(r.direct_hi)}] | {_pct(r.ppi)} % "
            f"[{_pct(r.ppi_lo)}, {_pct(r.ppi_hi)}]"
            + ("" if r.effective_n != r.effective_n else f"  effective n {r.effective_n:.0f}")
        )
    target = f"±{100 * t.target:g} pp"
    print(f"\nlabelled outputs needed for a CI of {target} (from these labels' variances): direct | PPI")
    for r in t.budget.itertuples(index=False):
        print(f"  {r.judge:28s} {r.condition:11s} {_count(r.labels_direct):>14s} | {_count(r.labels_ppi)}")
    if not t.agent.empty:
        print("\nthe agent's score by people where no reference exists (PPI, a judge's verdicts as proxy)")
        for r in t.agent[t.agent["metric"] == "all"].itertuples(index=False):
            print(
                f"  {r.generator:20s} proxy {r.proxy:24s} {r.condition:11s} n={r.n_labelled:<4d} "
                f"judge's mean {_pct(r.proxy_mean)} % | people: direct {_pct(r.direct)} % "
                f"[{_pct(r.direct_lo)}, {_pct(r.direct_hi)}], PPI {_pct(r.ppi)} % [{_pct(r.ppi_lo)}, "
                f"{_pct(r.ppi_hi)}]; labels for {target}: {_count(r.labels_direct)} | {_count(r.labels_ppi)}"
            )
    if not t.annotators.empty:
        print("\nannotators against each other, metrics pooled: agreement, kappa")
        for r in t.annotators[t.annotators["metric"] == "all"].itertuples(index=False):
            print(
                f"  {r.annotator_a} vs {r.annotator_b}: n={r.n_items} {_pct(r.agreement)} % "
                f"[{_pct(r.agreement_lo)}, {_pct(r.agreement_hi)}], kappa {r.kappa:.2f} "
                f"[{r.kappa_lo:.2f}, {r.kappa_hi:.2f}]"
            )
    print("\nwrote " + ", ".join(str(p) for p in t.written))


def _count(x: float) -> str:
    if x != x:
        return "n/a"
    return "out of reach" if x == float("inf") else f"{x:.0f}"
