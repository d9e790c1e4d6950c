"""``agentjudge import traces FILE --out RUNDIR``: an agent's recorded conversations as a run folder.

What it writes into RUNDIR (built beside it and renamed into place, so bad input leaves nothing):

- ``records.jsonl``: one record per conversation, ``source: "traces"``, its id the conversation's ``id``
  (or ``line-N``); the user's turns as its one query (``human_query``: the ``easy`` slot); the tools the
  file gives, or schemas inferred from every call seen in the file, labelled as inferred; the expected
  calls, when given, as its GT (in order, each after the one before: a chain); without them
  ``gt_known: false``: no GT, nothing scored, judged without GT only;
- ``imported.sqlite``: the agent's calls per conversation, its episode where the conversation has tool
  outputs, and where each conversation came from (``generators/replay.py``);
- ``pipeline.yaml``: the agent as the generator ``imported/<key>`` named NAME (kind ``imported``), no
  judges yet, the conditions ``with_gt``/``without_gt`` (and the trajectory ones when a conversation has
  tool outputs), both scoring modes;

and runs that pipeline through the ordinary grid (predict: the agent's recorded calls replayed; score:
where GT exists), so every file of a run folder is there. Judges come next, with ``agentjudge run
RUNDIR/pipeline.yaml --out RUNDIR --add-judge MODEL``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentjudge.tracks.traces.conversation import Trace, TraceError, infer_tool_schemas
from agentjudge.types import Difficulty, GTStep, ModelSettings, Record

FORMATS = ("auto", "openai", "inspect")
RECORDS_FILE = "records.jsonl"
DIFFICULTY: Difficulty = "easy"  # a person's own query sits in the layout's user_message slot (as BFCL's do)


@dataclass(frozen=True)
class TracesImport:
    """What ``import_traces`` made: the run folder, the agent's name, the format read, how many
    conversations (with GT, with tool outputs) and how many tools were inferred."""

    out: Path
    agent: str
    format: str
    conversations: int
    with_gt: int
    with_outputs: int
    calls: int
    inferred_tools: int


def read_traces(path: Path, fmt: str = "auto") -> tuple[str, list[Trace]]:
    """(the format read, the conversations of ``path``); bad input raises ``TraceError``."""
    if fmt not in FORMATS:
        raise TraceError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    if not path.is_file():
        raise TraceError(f"{path}: no such file")
    chosen = _detect(path) if fmt == "auto" else fmt
    if chosen == "inspect":
        from agentjudge.tracks.traces.inspect_log import read_inspect

        traces = read_inspect(path)
    else:
        from agentjudge.tracks.traces.openai import read_openai

        traces = read_openai(path)
    if not traces:
        raise TraceError(f"{path}: no conversation in the file")
    seen: dict[str, int] = {}
    for trace in traces:
        if trace.id in seen:
            unit = "sample" if chosen == "inspect" else "line"
            raise TraceError(
                f"{path}, {unit} {trace.line}: field id: {trace.id!r} is also the id of {unit} "
                f"{seen[trace.id]}"
            )
        seen[trace.id] = trace.line
    return chosen, traces


def _detect(path: Path) -> str:
    """``auto``: ``.eval`` is an Inspect log, ``.jsonl`` OpenAI-style lines; a ``.json`` file whose
    top level is an object with ``eval`` is an Inspect log; anything else is named, with the flag to give."""
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return "inspect"
    if suffix == ".jsonl":
        return "openai"
    if suffix == ".json":
        try:
            with path.open("rb") as handle:
                head = handle.read(4096).lstrip()
        except OSError as exc:
            raise TraceError(f"{path}: cannot read ({exc})") from None
        if head.startswith(b"{") and b'"eval"' in head:
            return "inspect"
    raise TraceError(
        f"{path}: cannot tell its format from the name; give --format openai (one conversation per line) or "
        "--format inspect (an Inspect log)"
    )


def to_records(traces: Sequence[Trace], origin: str, label: str) -> tuple[list[Record], int]:
    """The run's records, and how many tool schemas were inferred (for conversations that gave none: every
    tool seen in the file, from all calls of it, the agent's and the expected ones, ``label`` naming
    where they came from)."""
    observed = [
        (c.name, c.arguments) for t in traces if t.tools is None for c in [*t.calls, *(t.expected or [])]
    ]
    inferred = infer_tool_schemas(observed, label) if observed or any(t.tools is None for t in traces) else []
    records = []
    for t in traces:
        gt = [
            GTStep(call=c, output=None, depends_on=[i - 1] if i else [], description=f"expected call {i + 1}")
            for i, c in enumerate(t.expected or [])
        ]
        records.append(
            Record(
                id=t.id,
                domain="traces",
                scenario=f"a recorded conversation ({origin}, line {t.line})",
                topology="linear",
                queries={DIFFICULTY: t.query},
                system_prompt=t.system_prompt,
                tools=t.tools if t.tools is not None else inferred,
                gt=gt,
                source="traces",
                origin=origin,
                human_query=True,
                gt_known=t.expected is not None,
            )
        )
    return records, len(inferred)


def agent_key(name: str) -> str:
    """The model string's key of an agent's display name (``imported/<key>``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "agent"


def write_folder(
    work: Path,
    traces: Sequence[Trace],
    agent: str,
    fmt: str,
    source: Path,
    *,
    label: str,
    judges: Sequence[ModelSettings] = (),
    conditions: Sequence[str] | None = None,
) -> dict[str, Any]:
    """records.jsonl, imported.sqlite and pipeline.yaml of ``traces`` in the folder ``work``; returns the
    pipeline (``conditions`` None: with and without GT, plus the trajectory ones when some conversation
    has tool outputs)."""
    import yaml

    from agentjudge.generators.replay import SCHEMA, SOURCE_FILE
    from agentjudge.rundir.records import write_records

    records, _ = to_records(traces, source.name, label)
    write_records(work / RECORDS_FILE, records)
    conn = sqlite3.connect(work / SOURCE_FILE, isolation_level=None)
    try:
        conn.executescript(SCHEMA)
        conn.execute("BEGIN")
        for t in traces:
            rid = f"{t.id}:{DIFFICULTY}"
            calls = json.dumps([c.model_dump(mode="json") for c in t.calls], ensure_ascii=False)
            conn.execute("INSERT INTO predictions VALUES (?, ?, ?, NULL)", (agent, rid, calls))
            if t.trajectory is not None:
                conn.execute(
                    "INSERT INTO trajectories VALUES (?, ?, ?)", (agent, rid, t.trajectory.model_dump_json())
                )
            conn.execute(
                "INSERT INTO traces VALUES (?, ?, ?, ?, ?)",
                (rid, str(source), t.line, fmt, json.dumps(t.metadata, ensure_ascii=False, default=str)),
            )
        conn.execute(
            "INSERT OR REPLACE INTO meta VALUES ('traces', ?)",
            (json.dumps({"file": str(source), "format": fmt, "agent": agent}),),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
    if conditions is None:
        conditions = ["with_gt", "without_gt"]
        if any(t.trajectory is not None for t in traces):
            conditions += ["trajectory_with_gt", "trajectory_without_gt"]
    pipeline: dict[str, Any] = {
        "name": "traces-import",
        "description": f"{agent}'s recorded conversations from {source.name} (agentjudge import traces).",
        "dataset": RECORDS_FILE,
        "difficulties": [DIFFICULTY],
        "generators": [{"model": f"imported/{agent_key(agent)}", "name": agent}],
        "judges": [j.model_dump(mode="json", exclude_defaults=True) for j in judges],
        "conditions": list(conditions),
        "scoring": "both",
        "seed": 0,
    }
    (work / "pipeline.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False), encoding="utf-8")
    return pipeline


def built_beside(out: Path, build: Callable[[Path], None]) -> None:
    """``build(work)`` in a new folder beside ``out`` (one rename away, on the same file system), then
    renamed to ``out``: a failure leaves nothing."""
    anchor = next(p for p in (out.parent.absolute(), *out.parent.absolute().parents) if p.is_dir())
    work = Path(tempfile.mkdtemp(prefix=".import-", dir=anchor))
    try:
        build(work)
        if out.exists():
            out.rmdir()
        out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(work, out)
    except OSError as exc:  # named by where the file was going, not by the folder that no longer exists
        shutil.rmtree(work, ignore_errors=True)
        where = str(exc.filename or "")
        if where.startswith(str(work)):
            raise OSError(exc.errno, exc.strerror, str(out) + where[len(str(work)) :]) from None
        raise
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def import_traces(
    path: Path, out: Path, agent: str | None = None, fmt: str = "auto", progress: Any = None
) -> TracesImport:
    """Import ``path`` into the new run folder ``out`` (module docstring); bad input raises ``TraceError``
    (an ``InputError``) with nothing written."""
    from agentjudge.fserrors import out_path_problem
    from agentjudge.runner.run import run_pipeline

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise TraceError(f"{out}: exists and is not empty; give a new folder for the imported traces")
    problem = out_path_problem(out, "dir")
    if problem is not None:
        raise TraceError(f"--out {problem}")
    chosen, traces = read_traces(path, fmt)
    name = agent or path.stem
    if not name.strip():
        raise TraceError("--agent: a name is required (the file's stem is empty)")
    _, inferred = to_records(traces, path.name, "recorded")

    def build(work: Path) -> None:
        write_folder(work, traces, name, chosen, path.resolve(), label="recorded")

    built_beside(out, build)
    result = run_pipeline(out / "pipeline.yaml", out, progress=progress)
    if result.exit_code != 0:
        raise TraceError(
            f"{out}: the imported run did not complete (exit {result.exit_code}); re-run: "
            f"{result.resume_command}"
        )
    return TracesImport(
        out=out,
        agent=name,
        format=chosen,
        conversations=len(traces),
        with_gt=sum(t.expected is not None for t in traces),
        with_outputs=sum(t.trajectory is not None for t in traces),
        calls=sum(len(t.calls) for t in traces),
        inferred_tools=inferred,
    )
