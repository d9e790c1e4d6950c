"""Command-line interface. Each verb is a thin shell over one library function, imported lazily so
``agentjudge --help`` stays fast and never imports litellm.

Exit codes (docs/cli.md, "Exit codes"): 0 success; 1 the work ran but some units/records failed or the cost
cap stopped it; 2 bad input, a failed preflight or a file-system error (one line naming the path, never a
traceback); 130 interrupted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

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

# True only under the console script / ``python -m agentjudge`` (``main``): the process then ends with the
# verb, so ``run`` may keep pandas and numpy out of the export (fastpaths/lean_export.py); a caller in-process
# (CliRunner, a notebook calling ``app``) keeps pyarrow's pandas support intact.
_STANDALONE = False

PROBE = typer.Option("--probe", help="Preflight: also make one 1-token call per API model.", metavar=FLAG)
SKIP_INVALID = typer.Option(
    "--skip-invalid", help="Leave out records failing Gate 1 (default: refuse).", metavar=FLAG
)


def _guarded(call: Callable[[], int]) -> int:
    """Run a verb; a file-system error that escaped it (disk full, locked database, ...) is exit 2 with
    one line naming the path, Ctrl-C is exit 130."""
    from agentjudge.fserrors import FS_ERRORS, describe

    try:
        return call()
    except FS_ERRORS as exc:
        typer.echo(f"error: {describe(exc)}", err=True)
        return 2
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130


def _at_least(**flags: tuple[int, int]) -> None:
    """Numeric flags checked before a verb starts: ``--flag VALUE`` below its minimum is exit 2 with one line
    and nothing written (a bootstrap seed must be >= 0, a count or a number of resamples >= 1)."""
    for name, (value, minimum) in flags.items():
        if value < minimum:
            typer.echo(f"error: --{name.replace('_', '-')} {value}: must be >= {minimum}", err=True)
            raise typer.Exit(2)


cache_app = typer.Typer(
    cls=_FlagHelpGroup, help="Inspect or clear the model-call cache.", no_args_is_help=True
)
app.add_typer(cache_app, name="cache")
import_app = typer.Typer(
    cls=_FlagHelpGroup,
    help="Import tasks written elsewhere as records in the published layout.",
    no_args_is_help=True,
)
app.add_typer(import_app, name="import")


@app.command()
def generate(
    out: Annotated[Path, typer.Option(help="Output folder for records.jsonl and manifest.json.")],
    size: Annotated[
        str, typer.Option(help="mini (small balanced set) or full (3,808 base scenarios).")
    ] = "mini",
    seed: Annotated[int, typer.Option(help="Master seed; same seed gives byte-identical files.")] = 0,
    llm: Annotated[
        str | None, typer.Option(help="Model (litellm string) that writes scenario texts and rewrites.")
    ] = None,
    api_base: Annotated[str | None, typer.Option(help="API base for --llm.")] = None,
) -> None:
    """Synthesize the dataset: tools, executed GT traces, three difficulty queries, both gates."""
    from agentjudge.commands.generate import generate_cli

    raise typer.Exit(
        _guarded(lambda: generate_cli(out=out, size=size, seed=seed, llm=llm, api_base=api_base))
    )


@app.command()
def validate(path: Annotated[Path, typer.Argument(help="records.jsonl in the published layout.")]) -> None:
    """Run Gate 1 and Gate 2 on a file; exit 0 all pass, 1 some fail, 2 unreadable input."""
    from agentjudge.dataset.validate import validate_cli

    raise typer.Exit(_guarded(lambda: validate_cli(path)))


@app.command()
def audit(
    data: Annotated[Path, typer.Argument(help="records.jsonl in the published layout.")],
    n: Annotated[int, typer.Option("--n", help="How many records to print.")] = 60,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    difficulty: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated difficulties, cycled over the sample; every sampled record must have "
            "them. Default: hard, or the hardest query a record has (imported human-written records: "
            "their only query)."
        ),
    ] = None,
) -> None:
    """Print a topology-stratified sample (query, tools, GT, checklist) for a person to grade."""
    from agentjudge.dataset.audit import audit_cli

    raise typer.Exit(_guarded(lambda: audit_cli(data, n=n, seed=seed, difficulty=difficulty)))


@app.command()
def infer(
    data: Annotated[Path, typer.Argument(help="records.jsonl")],
    generator: Annotated[
        str, typer.Option(help="Generator: sim/<profile>, a litellm model, module:factory.")
    ],
    out: Annotated[Path, typer.Option(help="predictions .jsonl or .parquet")],
    difficulty: Annotated[list[str] | None, typer.Option(help="Repeatable; default all three.")] = None,
    trials: Annotated[int, typer.Option(min=1)] = 1,
    api_base: Annotated[str | None, typer.Option()] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not read the call cache.", metavar=FLAG)
    ] = False,
    probe: Annotated[bool, PROBE] = False,
    skip_invalid: Annotated[bool, SKIP_INVALID] = False,
) -> None:
    """Run one generator over a dataset and write its predictions (a stage of its own)."""
    from agentjudge.runner.infer import infer_cli

    raise typer.Exit(
        _guarded(
            lambda: infer_cli(
                data=data,
                generator=generator,
                out=out,
                difficulties=difficulty,
                trials=trials,
                api_base=api_base,
                no_cache=no_cache,
                probe=probe,
                skip_invalid=skip_invalid,
            )
        )
    )


@app.command()
def score(
    data: Annotated[Path, typer.Argument(help="records.jsonl")],
    predictions: Annotated[Path, typer.Argument(help="predictions .jsonl or .parquet")],
    out: Annotated[Path, typer.Option(help="scores .parquet or .csv")],
    mode: Annotated[str, typer.Option(help="paper, strict or both")] = "both",
    lenient: Annotated[
        bool, typer.Option(help="strict mode: schema-allowed extra keys score 1.0", metavar=FLAG)
    ] = False,
    value_matches: Annotated[
        Path | None,
        typer.Option(help="also write .jsonl: which accepted value each argument matched (p_value)"),
    ] = None,
) -> None:
    """Score predictions with the programmatic scorer (§6)."""
    from agentjudge.scoring.files import score_cli

    raise typer.Exit(
        _guarded(
            lambda: score_cli(
                data=data,
                predictions=predictions,
                out=out,
                mode=mode,
                lenient=lenient,
                value_matches_out=value_matches,
            )
        )
    )


@app.command()
def run(
    pipeline: Annotated[Path, typer.Argument(help="Pipeline YAML, e.g. pipelines/quickstart.yaml")],
    out: Annotated[Path, typer.Option(help="Run folder (resumable).")],
    judge: Annotated[
        list[str] | None,
        typer.Option(help="REPLACE the pipeline's judges with this one (repeatable); see --add-judge."),
    ] = None,
    add_judge: Annotated[
        list[str] | None,
        typer.Option(
            help="Add a judge to the pipeline's (repeatable); also into an existing run folder of the "
            "pipeline, where only the added judges' units run."
        ),
    ] = None,
    generator: Annotated[
        list[str] | None, typer.Option(help="Replace the pipeline's generators (repeatable).")
    ] = None,
    api_base: Annotated[
        str | None, typer.Option(help="API base for models given with --judge/--add-judge/--generator.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count calls and estimate cost; spend nothing.", metavar=FLAG)
    ] = False,
    max_cost: Annotated[
        float | None,
        typer.Option(
            help="Hard cap on money spent by this invocation (USD); no call is sent that could pass it."
        ),
    ] = None,
    force_new: Annotated[
        bool, typer.Option("--force-new", help="Start over although the config changed.", metavar=FLAG)
    ] = False,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not read the call cache.", metavar=FLAG)
    ] = False,
    probe: Annotated[bool, PROBE] = False,
    skip_invalid: Annotated[bool, SKIP_INVALID] = False,
    target_ci: Annotated[
        float | None,
        typer.Option(
            "--target-ci",
            metavar="PP",
            help="Sample: judge as few base scenarios as give every cell a 95 % CI of half-width <= PP "
            "percentage points (pipeline key `sampling`).",
        ),
    ] = None,
) -> None:
    """Infer, score and judge every cell of a pipeline grid; resumes where it stopped."""
    from agentjudge.runner.grid import run_cli

    raise typer.Exit(
        _guarded(
            lambda: run_cli(
                pipeline=pipeline,
                out=out,
                judges=judge,
                add_judges=add_judge,
                generators=generator,
                api_base=api_base,
                dry_run=dry_run,
                max_cost=max_cost,
                force_new=force_new,
                no_cache=no_cache,
                probe=probe,
                skip_invalid=skip_invalid,
                target_ci=target_ci,
                lean_export=_STANDALONE,  # only if the process ends with the verb (fastpaths/lean_export.py)
            )
        )
    )


@app.command()
def report(
    rundir: Annotated[Path, typer.Argument(help="A run folder written by `agentjudge run`.")],
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples (>= 1000 for publication).")] = 1000,
    seed: Annotated[int, typer.Option()] = 0,
    ci: Annotated[
        str,
        typer.Option(help="Interval: expanded percentile (default) or the plain percentile (the paper's)."),
    ] = "expanded",
) -> None:
    """Write RUNDIR/report/: report.md, report.html, tables/*.csv, figures/*.png."""
    from agentjudge.report.write import report_cli

    _at_least(resamples=(resamples, 1), seed=(seed, 0))

    raise typer.Exit(_guarded(lambda: report_cli(rundir=rundir, resamples=resamples, seed=seed, ci=ci)))


@app.command()
def batches(
    rundir: Annotated[Path, typer.Argument(help="Run folder of `agentjudge run` (its run.sqlite).")],
) -> None:
    """Provider batches of a run (models with batch: true): id, model, state, counts, units."""
    from agentjudge.runner.batches import batches_cli

    raise typer.Exit(_guarded(lambda: batches_cli(rundir)))


@app.command()
def view(
    rundir: Annotated[
        Path, typer.Argument(help="A run folder written by `agentjudge run` (read, never written).")
    ],
    port: Annotated[int, typer.Option(help="Port to listen on (0: a free one, printed).")] = 0,
    host: Annotated[
        str, typer.Option(help="Address to listen on (127.0.0.1: this machine only).")
    ] = "127.0.0.1",
) -> None:
    """Browse a run item by item in the browser: filter verdicts, open an item, compare judges."""
    from agentjudge.viewer.server import view_cli

    _at_least(port=(port, 0))
    if port > 65535:
        typer.echo(f"error: --port {port}: must be <= 65535", err=True)
        raise typer.Exit(2)
    raise typer.Exit(_guarded(lambda: view_cli(rundir=rundir, host=host, port=port)))


@app.command()
def compare(
    rundirs: Annotated[
        list[Path], typer.Argument(help="Two or more run folders written by `agentjudge run`.")
    ],
    out: Annotated[Path, typer.Option(help="Folder for report.md, report.html, tables/, figures/.")] = Path(
        "compare"
    ),
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option()] = 0,
    ci: Annotated[
        str,
        typer.Option(help="Interval: expanded percentile (default) or the plain percentile (the paper's)."),
    ] = "expanded",
) -> None:
    """One first screen across runs (judges labelled by run), with paired deltas where records overlap."""
    from agentjudge.report.compare import compare_cli

    _at_least(resamples=(resamples, 1), seed=(seed, 0))

    raise typer.Exit(
        _guarded(lambda: compare_cli(rundirs=rundirs, out=out, resamples=resamples, seed=seed, ci=ci))
    )


@app.command("human-sample")
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
    from agentjudge.people.validation import sample_cli

    _at_least(n=(n, 1), seed=(seed, 0))

    raise typer.Exit(
        _guarded(lambda: sample_cli(rundir=rundir, n=n, seed=seed, out=out, difficulty=difficulty))
    )


@app.command("human-agree")
def human_agree(
    rundir: Annotated[Path, typer.Argument()],
    labels: Annotated[Path, typer.Argument(help="The sample CSV with the annotators' agree columns filled.")],
    resamples: Annotated[int, typer.Option()] = 1000,
    seed: Annotated[int, typer.Option()] = 0,
) -> None:
    """Agreement of the programmatic reference with human labels, per metric and topology, with CIs."""
    from agentjudge.people.validation import agree_cli

    _at_least(resamples=(resamples, 1), seed=(seed, 0))

    raise typer.Exit(
        _guarded(lambda: agree_cli(rundir=rundir, labels=labels, resamples=resamples, seed=seed))
    )


@app.command()
def taubench(
    data: Annotated[
        Path, typer.Argument(help="τ-bench historical trajectories JSON (e.g. gpt-4o-airline.json).")
    ],
    out: Annotated[
        Path, typer.Option(help="Output folder: episodes.parquet, judgments.parquet, summary.md.")
    ],
    judge: Annotated[
        list[str] | None,
        typer.Option(help="Judges (repeatable); default: baseline/always-1, rule, gt-rule, ceiling."),
    ] = None,
    condition: Annotated[
        list[str] | None, typer.Option(help="with_gt and/or without_gt (default both).")
    ] = None,
    api_base: Annotated[str | None, typer.Option(help="API base for --judge models.")] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not read the call cache.", metavar=FLAG)
    ] = False,
    probe: Annotated[bool, PROBE] = False,
) -> None:
    """τ-bench track: judge real multi-turn agent trajectories and relate verdicts to τ-bench's reward."""
    from agentjudge.tracks.taubench import taubench_cli

    raise typer.Exit(
        _guarded(
            lambda: taubench_cli(
                data=data,
                out=out,
                judges=judge,
                api_base=api_base,
                conditions=condition,
                no_cache=no_cache,
                probe=probe,
            )
        )
    )


@import_app.command("bfcl")
def import_bfcl(
    tasks: Annotated[Path, typer.Argument(help="BFCL task file, e.g. BFCL_v4_multiple.json (JSON Lines).")],
    answers: Annotated[
        Path, typer.Argument(help="Its accepted answers, e.g. BFCL_v4_multiple.possible_answer.json.")
    ],
    out: Annotated[Path, typer.Option(help="Output folder for records.jsonl and manifest.json.")],
    category: Annotated[
        str | None, typer.Option(help="Category name for ids/origin; default: from the file name.")
    ] = None,
) -> None:
    """BFCL tasks + accepted answers → records (human query, every accepted value kept, no environment)."""
    from agentjudge.tracks.bfcl import import_cli

    raise typer.Exit(_guarded(lambda: import_cli(tasks=tasks, answers=answers, out=out, category=category)))


@import_app.command("agentjudgebench")
def import_agentjudgebench(
    release: Annotated[
        Path,
        typer.Argument(
            help="The downloaded release (its root or data/), or the pipeline's judge outputs "
            "(judge_<judge>.jsonl files or <gen>/judged_by_<judge>/ folders)."
        ),
    ],
    out: Annotated[Path, typer.Option(help="A new run folder for the imported run.")],
    records: Annotated[
        Path | None,
        typer.Option(
            help="Base records (published layout) for the run instead of the release's own "
            "data/main/records.jsonl, checked against it; needed when the release has none."
        ),
    ] = None,
) -> None:
    """The AgentJudgeBench paper's generator outputs and judge verdicts as a run folder (report, view,
    --add-judge)."""
    from agentjudge.tracks.agentjudgebench.importer import import_cli

    raise typer.Exit(_guarded(lambda: import_cli(release, records, out)))


@cache_app.command("stats")
def cache_stats(
    path: Annotated[
        Path | None, typer.Option(help="Cache file (default: $AGENTJUDGE_CACHE, else ~/.cache/agentjudge).")
    ] = None,
) -> None:
    """Entries, size and hit counts of the call cache."""
    from agentjudge.models.cache import stats_cli

    raise typer.Exit(_guarded(lambda: stats_cli(path)))


@cache_app.command("clear")
def cache_clear(
    path: Annotated[
        Path | None,
        typer.Option(help="Cache file (default: $AGENTJUDGE_CACHE or ~/.cache/agentjudge/calls.sqlite)."),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Only entries of this model.")] = None,
) -> None:
    """Delete cached model answers (all, or one model's)."""
    from agentjudge.models.cache import clear_cli

    raise typer.Exit(_guarded(lambda: clear_cli(path, model=model)))


def main() -> None:
    """The ``agentjudge`` console script: the command line, in a process that ends with the verb."""
    global _STANDALONE
    _STANDALONE = True
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
