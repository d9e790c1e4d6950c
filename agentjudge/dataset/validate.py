"""`agentjudge validate FILE`: both gates on any file in the published layout.

Works on our own files and on downloaded ones (which lack dependency edges and environments; the checks
that need them are skipped and say so in ``gates_run``). Exit codes: 0 every record passes, 1 some fail,
2 the file cannot be read (the message names file, line, record and field; never a traceback).
"""

from __future__ import annotations

import multiprocessing as mp
import signal
from pathlib import Path
from typing import Any

from agentjudge.fastpaths.heap import freeze
from agentjudge.types import DIFFICULTIES, GateFinding, Record, ValidationReport

PARALLEL_ABOVE = 400
MAX_DETAIL_LINES = 200  # per-record reasons printed; the summary always counts everything


def check_record(record: Record) -> ValidationReport:
    """run_gates, with a crash inside a gate recorded as a finding (``gate_error``), not swallowed."""
    from agentjudge.dataset.gates import run_gates

    try:
        return run_gates(record)
    except Exception as exc:  # a gate bug or a record shape no gate foresaw: count it as a failure
        return ValidationReport(
            gates_run=[],
            findings=[GateFinding(gate="gate1", code="gate_error", detail=f"{type(exc).__name__}: {exc}")],
        )


def check_records(records: list[Record], processes: int | None = None) -> list[ValidationReport]:
    return _map(check_record, records, processes)


def counted(records: list[Record]) -> str:
    """The counting words of the report and README: base scenarios, and records = scenario x difficulty."""
    levels = [d for d in DIFFICULTIES if any(r.queries.get(d) for r in records)]
    n_queries = sum(1 for r in records for d in DIFFICULTIES if r.queries.get(d))
    over = f"1 difficulty: {levels[0]}" if len(levels) == 1 else f"{len(levels)} difficulties"
    noun = "base scenario" if len(records) == 1 else "base scenarios"
    return f"{len(records)} {noun} ({n_queries} records over {over})"


def read_dataset(path: Path) -> list[Record]:
    """The records of ``path`` for a verb that reads a dataset; an unreadable or empty file raises a
    ``LayoutError`` (an ``InputError``: the verb exits 2) naming the file."""
    from agentjudge.rundir.records import LayoutError, read_records

    records = read_records(path)
    if not records:
        raise LayoutError(f"{path}: no records in the file")
    return records


def gate1_failures(records: list[Record]) -> dict[str, list[str]]:
    """Records that fail Gate 1, as ``{id: ["gate1:code detail", ...]}``: ``run`` and ``infer`` refuse
    them (a record whose tool schema is invalid cannot be graded), or skip them with ``--skip-invalid``.
    An agent's recorded conversation (``source="traces"``) is not checked: it is judged as it was recorded,
    and Gate 1's grounding cannot see the values an earlier tool output gave the agent."""
    out: dict[str, list[str]] = {}
    checked = [r for r in records if r.source != "traces"]
    for record, findings in zip(checked, _map(_check_gate1, checked), strict=True):
        bad = [f"gate1:{f.code} {f.detail}" for f in findings if f.gate == "gate1"]
        if bad:
            out[record.id] = bad
    return out


def _check_gate1(record: Record) -> list[GateFinding]:
    """Gate 1 only; a crash inside it is a finding (``gate_error``), as in ``check_record``."""
    from agentjudge.dataset.gates import gate1_findings

    try:
        return gate1_findings(record)
    except Exception as exc:  # noqa: BLE001 - counted as a failure, never swallowed
        return [GateFinding(gate="gate1", code="gate_error", detail=f"{type(exc).__name__}: {exc}")]


_FORKED: tuple[Any, list[Record]] | None = None  # (fn, records) that _map's forked children inherit
_SPAN = 64  # records per task sent to a child: a few hundred ms of gate work, findings back in one pickle


def _map(fn: Any, records: list[Record], processes: int | None = None) -> list[Any]:
    """``fn`` over the records, in order, on both cores above ``PARALLEL_ABOVE`` records.

    The children are forked after ``fn`` and the records are set aside in ``_FORKED``, so they inherit
    both: a task is two integers (a span of record indices) and only the findings come back pickled.
    Sending the records themselves cost more than checking them (each one pickled and rebuilt as pydantic
    models in the child: two processes took twice the CPU of one and longer than one on the wall)."""
    global _FORKED
    procs = processes if processes is not None else min(2, mp.cpu_count())
    if len(records) <= PARALLEL_ABOVE or procs <= 1:
        return [fn(r) for r in records]
    first = fn(records[0])  # before forking: the gates' modules are imported and their caches begun once
    spans = [(i, min(i + _SPAN, len(records))) for i in range(1, len(records), _SPAN)]
    _FORKED = (fn, records)
    try:
        # each child freezes the heap it inherits: its collections then skip the records (measured: Gate 1
        # of the full dataset took 4.7 s with them scanned, 2.5 s frozen)
        with mp.get_context("fork").Pool(procs, initializer=_child) as pool:
            return [first, *(out for part in pool.imap(_map_span, spans) for out in part)]
    finally:
        _FORKED = None


def _child() -> None:
    """A pool child: Ctrl-C is the parent's to handle (it ends the pool; a child would print a traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    freeze()


def _map_span(span: tuple[int, int]) -> list[Any]:
    """In a forked child of ``_map``: ``fn`` over the inherited records of one span."""
    assert _FORKED is not None, "_map_span runs only in a child forked by _map"
    fn, records = _FORKED
    return [fn(r) for r in records[span[0] : span[1]]]


def gate1_message(path: Path | str, failing: dict[str, list[str]], total: int) -> str:
    """One line per failing record (at most 10) and what to do about it."""
    lines = [
        f"{path}: {len(failing)} of {total} record(s) fail Gate 1 (run `agentjudge validate {path}`); "
        "fix them or pass --skip-invalid to leave them out"
    ]
    for rid, findings in list(failing.items())[:10]:
        lines.append(f"{path}: record {rid}: {findings[0]}")
    if len(failing) > 10:
        lines.append(f"... and {len(failing) - 10} more record(s)")
    return "\n".join(lines)
