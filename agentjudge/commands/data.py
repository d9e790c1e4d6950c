"""The dataset verbs: ``generate``, ``validate``, ``audit``, ``infer`` and ``score``, shells over
``agentjudge.api``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentjudge.commands._app import FLAG, NO_CACHE, PROBE, SKIP_INVALID, guarded


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
    raise typer.Exit(guarded(lambda: generate_cli(out=out, size=size, seed=seed, llm=llm, api_base=api_base)))


def generate_cli(out: Path, size: str, seed: int, llm: str | None, api_base: str | None) -> int:
    """Exit code: 0 written, 1 a scenario could not be made to pass (nothing written), 2 bad arguments."""
    from rich.console import Console
    from rich.table import Table

    from agentjudge import api
    from agentjudge.commands._app import error, failed_preflight
    from agentjudge.dataset.generate import GenerationError
    from agentjudge.fserrors import FS_ERRORS, describe
    from agentjudge.models.client import ModelCallError

    console = Console(soft_wrap=True)
    try:
        result = api.generate(out, size=size, seed=seed, llm=llm, api_base=api_base)
    except api.PreflightError as exc:
        return failed_preflight(exc)
    except api.InputError as exc:
        error(str(exc))
        return 2
    except FS_ERRORS as exc:  # the disk filled up: nothing was written (both files, or neither)
        error(describe(exc))
        return 2
    except ModelCallError as exc:
        error(f"--llm {llm} stopped, nothing written: {exc}")
        return 1
    except GenerationError as exc:
        error(f"generation failed, nothing written: {exc}")
        return 1
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a bug in the builder or here: say where, write nothing, no traceback wall
        error(f"internal error, nothing written: {type(exc).__name__}: {exc}")
        return 1
    manifest = result.manifest
    table = Table(
        title=f"{manifest['n_records']} base scenarios → {out}/records.jsonl ({result.seconds:.1f} s)"
    )
    table.add_column("topology")
    table.add_column("records", justify="right")
    for topology, count in manifest["counts"]["topology"].items():
        table.add_row(topology, str(count))
    console.print(table)
    gates = manifest["gates"]
    console.print(
        f"domains: {len(manifest['counts']['domain'])}, "
        f"calls/record {manifest['shape']['calls_per_record']}, "
        f"tools/record {manifest['shape']['tools_per_record']}"
    )
    console.print(
        f"gates: all {gates['records_passed']} shipped records pass; {gates['regenerations']} regenerations "
        f"({gates['records_regenerated']} records): {gates['regenerations_by_reason'] or 'none'}"
    )
    if llm is not None:
        console.print(
            f"LLM rewrites by {llm}: failed (deterministic fallback) {manifest['rewrites']['failed']}"
        )
    console.print(f"sha256 {manifest['sha256']}")
    if result.llm_call_failures:
        console.print(
            f"[yellow]some LLM calls failed {result.llm_call_failures}; those queries kept the "
            "deterministic text[/]"
        )
        return 1
    return 0


def validate(path: Annotated[Path, typer.Argument(help="records.jsonl in the published layout.")]) -> None:
    """Run Gate 1 and Gate 2 on a file; exit 0 all pass, 1 some fail, 2 unreadable input."""
    raise typer.Exit(guarded(lambda: validate_cli(path)))


MAX_DETAIL_LINES = 200  # per-record reasons printed; the summary always counts everything


def validate_cli(path: Path) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from agentjudge import api
    from agentjudge.commands._app import error
    from agentjudge.dataset.validate import counted

    console = Console(soft_wrap=True)
    try:
        result = api.validate(path)
    except api.InputError as exc:
        error(str(exc))
        return 2
    failing = result.failing
    console.print(
        f"{path}: {counted(list(result.records))}; {len(result.records) - len(failing)} pass, "
        f"{len(failing)} fail"
    )
    if result.replay_skipped:
        console.print(f"replay skipped for {result.replay_skipped} records (no executable environment)")
    by_reason = result.findings_by_reason
    if by_reason:
        table = Table(title="findings by reason")
        for col in ("gate", "reason", "findings", "records"):
            table.add_column(col, justify="right" if col in ("findings", "records") else "left")
        for (gate, code), (count, records) in by_reason.items():
            table.add_row(gate, code, str(count), str(records))
        console.print(table)
        printed = 0
        for record, rep in failing:
            for f in rep.findings:
                if printed >= MAX_DETAIL_LINES:
                    break
                where = f"{f.gate}:{f.code}" + (f"[{f.difficulty}]" if f.difficulty else "")
                console.print(f"{escape(record.id)}  {where}  {escape(f.detail)}", soft_wrap=True)
                printed += 1
        total = sum(count for count, _ in by_reason.values())
        if total > printed:
            console.print(f"… {total - printed} more findings not shown (all are counted above)")
    return result.exit_code


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
    raise typer.Exit(guarded(lambda: audit_cli(data, n=n, seed=seed, difficulty=difficulty)))


def audit_cli(path: Path, n: int, seed: int, difficulty: str | None) -> int:
    from agentjudge import api
    from agentjudge.commands._app import error
    from agentjudge.dataset.audit import render

    try:
        picked = api.audit(path, n=n, seed=seed, difficulty=difficulty)
    except api.InputError as exc:
        error(str(exc))
        return 2
    print(picked.header())
    for i, (record, d) in enumerate(picked.picked, 1):
        print(render(record, d, i))
    return 0


def infer(
    data: Annotated[Path, typer.Argument(help="records.jsonl")],
    generator: Annotated[
        str, typer.Option(help="Generator: sim/<profile>, a litellm model, module:factory.")
    ],
    out: Annotated[Path, typer.Option(help="predictions .jsonl or .parquet")],
    difficulty: Annotated[list[str] | None, typer.Option(help="Repeatable; default all three.")] = None,
    trials: Annotated[int, typer.Option(help="Trials per record and difficulty (1 to 1,000).")] = 1,
    api_base: Annotated[str | None, typer.Option()] = None,
    no_cache: Annotated[bool, NO_CACHE] = False,
    probe: Annotated[bool, PROBE] = False,
    skip_invalid: Annotated[bool, SKIP_INVALID] = False,
) -> None:
    """Run one generator over a dataset and write its predictions (a stage of its own)."""
    raise typer.Exit(
        guarded(
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
            ),
            resumable=True,
        )
    )


def infer_cli(
    data: Path,
    generator: str,
    out: Path,
    difficulties: list[str] | None = None,
    trials: int = 1,
    api_base: str | None = None,
    no_cache: bool = False,
    probe: bool = False,
    skip_invalid: bool = False,
) -> int:
    """0 all predictions succeeded, 1 some failed (recorded in the file), 2 bad input (also: a failed
    preflight, records failing Gate 1 without ``--skip-invalid``, an unwritable ``--out``). Everything is
    said on stderr."""
    from rich.console import Console
    from rich.markup import escape

    from agentjudge import api
    from agentjudge.commands._app import error, failed_preflight
    from agentjudge.commands.progress import ConsoleReporter, infer_progress
    from agentjudge.models.failures import FailureLog

    console = Console(stderr=True, soft_wrap=True)
    try:
        result = api.infer(
            data,
            generator,
            out,
            difficulties=difficulties,
            trials=trials,
            api_base=api_base,
            no_cache=no_cache,
            probe=probe,
            skip_invalid=skip_invalid,
            progress=ConsoleReporter(console, bars=infer_progress),
        )
    except api.PreflightError as exc:
        return failed_preflight(exc)
    except api.InputError as exc:
        error(str(exc))
        return 2
    total = result.calls
    console.print(
        f"wrote {result.kept + result.new} predictions to {out}: {result.new} new, {result.failed} failed; "
        f"model calls {total.calls}, cache hits {total.cache_hits} ({total.hit_rate:.0%}), "
        f"retries {total.retries}, "
        f"tokens {total.prompt_tokens} in / {total.completion_tokens} out, cost ${total.cost_usd:.4f}"
        + (f" ({total.unknown_cost_calls} answers without a known price)" if total.unknown_cost_calls else "")
        + (
            f" ({total.unseen_cost_requests} requests timed out or came back unreadable or empty: "
            "maybe billed, not counted)"
            if total.unseen_cost_requests
            else ""
        )
    )
    log = FailureLog()
    for group in result.failures:
        log.counts[(group.model, group.reason)] = group.count
        log.examples[(group.model, group.reason)] = group.example
    if log:
        console.print(escape(log.report()), highlight=False)
    return result.exit_code


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
    """Score predictions with the programmatic scorer."""
    raise typer.Exit(
        guarded(
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


def score_cli(
    data: Path, predictions: Path, out: Path, mode: str, lenient: bool, value_matches_out: Path | None = None
) -> int:
    """Read, score, write, print a summary; 0 on success, 2 on bad input (message on stderr)."""
    from agentjudge import api
    from agentjudge.commands._app import error

    try:
        result = api.score(
            data, predictions, out, mode=mode, lenient=lenient, value_matches=value_matches_out
        )
    except api.InputError as exc:
        error(str(exc))
        return 2
    print(f"scored {result.scored} of {result.predictions} predictions ({', '.join(result.modes)}"
          f"{', lenient' if lenient else ''}) -> {out}")  # fmt: skip
    if value_matches_out is not None:
        print(
            f"which accepted value each argument matched: {result.value_match_lines} predictions -> "
            f"{value_matches_out}"
        )
    for gen in sorted(result.generators):
        if result.failed.get(gen):
            print(
                f"  {gen}: {result.failed[gen]} of {result.generators[gen]} predictions failed (not scored)"
            )
    if result.rows:
        print(result.means().round(3).to_string())
        state = result.state_match()
        if state is not None:
            matched, known, without = state
            print(
                f"state_match: {matched} of {known} scored predictions ({100 * matched / known:.1f} %) "
                "end in the GT's end state when their calls are run in the record's environment"
                + (f"; {without} on records without an environment are not counted" if without else "")
            )
    return 0
