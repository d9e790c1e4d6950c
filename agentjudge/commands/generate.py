"""``agentjudge generate``: the verb's shell over ``dataset.generate.generate`` (checks, the --llm
preflight, the printed summary, the exit code)."""

from __future__ import annotations

import time
from pathlib import Path

from agentjudge.dataset.generate import SIZES, GenerationError, generate


def generate_cli(out: Path, size: str, seed: int, llm: str | None, api_base: str | None) -> int:
    """Exit code: 0 written, 1 a scenario could not be made to pass (nothing written), 2 bad arguments."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(soft_wrap=True)
    if size not in SIZES:
        console.print(f"[red]error:[/] --size must be one of {', '.join(SIZES)}, got {size!r}")
        return 2
    from agentjudge.fserrors import out_path_problem

    if (problem := out_path_problem(out, "dir")) is not None:
        console.print(f"[red]error:[/] --out {escape(problem)}")
        return 2
    if llm is not None:  # fail fast on a model that cannot work, never fall back to the deterministic text
        from agentjudge.registry.preflight import ModelUse, preflight
        from agentjudge.types import ModelSettings

        problems = preflight([ModelUse("generator", ModelSettings(model=llm, api_base=api_base), "--llm")])
        if problems:
            for line in problems:
                console.print(f"[red]error:[/] {escape(line)}")
            console.print(f"preflight: {len(problems)} problem(s); nothing was generated or written.")
            return 2
    from agentjudge.models.client import ModelCallError

    started = time.perf_counter()
    try:
        manifest = generate(out, size, seed, llm=llm, api_base=api_base)
    except ModelCallError as exc:
        console.print(f"[red]--llm {escape(str(llm))} stopped, nothing written:[/] {escape(str(exc))}")
        return 1
    except GenerationError as exc:
        console.print(f"[red]generation failed, nothing written:[/] {escape(str(exc))}")
        return 1
    except Exception as exc:  # a bug in the builder or here: say where, write nothing, no traceback wall
        console.print(f"[red]internal error, nothing written:[/] {type(exc).__name__}: {escape(str(exc))}")
        return 1
    elapsed = time.perf_counter() - started
    table = Table(title=f"{manifest['n_records']} base scenarios → {out}/records.jsonl ({elapsed:.1f} s)")
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
    reasons = (manifest.get("rewrites") or {}).get("failed", {}) or {}
    call_failures = {
        k: n for k, n in reasons.get("failed_attempts_by_reason", {}).items() if "model_error" in k
    }
    if call_failures:
        console.print(
            f"[yellow]some LLM calls failed {call_failures}; those queries kept the deterministic text[/]"
        )
        return 1
    return 0
