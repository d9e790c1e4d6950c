"""Per topology and difficulty: how explicit each query is, and the semantic findings.

Issues 10 and 37 ask that hard be really harder than easy; this prints, for a records file, per topology
and difficulty: the share of GT steps the query asks for in words (``gates_semantic.explicit_steps``), the
share of look-ups (search/get/list steps whose output a later step needs) it leaves implicit, and the share
of the GT's record ids it does not state (ids withheld); then the count of each semantic reason code (run
on an unchanged builder's output, that count is the "before" figure).

    python bench/explicit_steps.py data/full/records.jsonl
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
from collections import Counter
from pathlib import Path

from agentjudge.dataset import resolve
from agentjudge.dataset.gates_semantic import (
    READ_OPS,
    SEMANTIC_CODES,
    _ids_in_play,
    _necessary,
    _spec,
    explicit_steps,
    semantic_findings,
)
from agentjudge.rundir.records import read_records
from agentjudge.types import DIFFICULTIES, TOPOLOGIES, Record

Counts = dict[str, tuple[int, int]]
Row = tuple[str, Counts, list[tuple[str, str | None]], Counts, Counts]


def _one(record: Record) -> Row:
    named: Counts = {}
    implicit: Counts = {}
    withheld: Counts = {}
    lookups = [
        i
        for i in range(len(record.gt))
        if (sp := _spec(record, i)) is not None and sp.op in READ_OPS and _necessary(record, i, "")
    ]
    ids = _ids_in_play(record)
    gt_ids = {
        str(v) for s in record.gt for v in resolve.leaves(s.call.arguments) if isinstance(v, str) and v in ids
    }
    for d in DIFFICULTIES:
        query = record.queries.get(d, "")
        flags = explicit_steps(record, query)
        named[d] = (sum(flags), len(flags))
        implicit[d] = (sum(1 for i in lookups if not flags[i]), len(lookups))
        withheld[d] = (sum(1 for v in gt_ids if v not in query), len(gt_ids))
    findings, _ = semantic_findings(record)
    return record.topology, named, [(f.code, f.difficulty) for f in findings], implicit, withheld


def _table(what: str, part: Counter[tuple[str, str]], whole: Counter[tuple[str, str]]) -> None:
    """One share per topology and difficulty (and over all topologies)."""
    print(f"{'topology':22s}" + "".join(f"{d:>10s}" for d in DIFFICULTIES) + f"   (share of {what})")
    for t in [*TOPOLOGIES, "all"]:
        keys = TOPOLOGIES if t == "all" else [t]
        cells = []
        for d in DIFFICULTIES:
            k = sum(part[(x, d)] for x in keys)
            n = sum(whole[(x, d)] for x in keys)
            cells.append(f"{k / n:10.1%}" if n else f"{'-':>10s}")
        print(f"{t:22s}" + "".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("records", type=Path)
    args = parser.parse_args()
    records = read_records(args.records)
    with mp.get_context("fork").Pool(min(2, mp.cpu_count())) as pool:
        rows = pool.map(_one, records, chunksize=64)
    named: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    shares: dict[str, tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]] = {
        "look-ups left implicit": (Counter(), Counter()),
        "record ids withheld": (Counter(), Counter()),
    }
    findings: Counter[str] = Counter()
    records_with: Counter[str] = Counter()
    by_difficulty: Counter[tuple[str, str | None]] = Counter()
    for topology, per_d, found, implicit, withheld in rows:
        for d, (k, n) in per_d.items():
            named[(topology, d)] += k
            total[(topology, d)] += n
        for what, per in (("look-ups left implicit", implicit), ("record ids withheld", withheld)):
            for d, (k, n) in per.items():
                shares[what][0][(topology, d)] += k
                shares[what][1][(topology, d)] += n
        findings.update(code for code, _ in found)
        records_with.update({code for code, _ in found})
        by_difficulty.update(found)
    print(f"{args.records}: {len(records)} records\n")
    _table("GT steps named explicitly", named, total)
    for what, (part, whole) in shares.items():
        print()
        _table(what, part, whole)
    print(
        f"\n{'reason code':22s}{'findings':>10s}{'records':>10s}" + "".join(f"{d:>8s}" for d in DIFFICULTIES)
    )
    for code in SEMANTIC_CODES:
        per = "".join(f"{by_difficulty[(code, d)]:8d}" for d in DIFFICULTIES)
        print(f"{code:22s}{findings[code]:10d}{records_with[code]:10d}{per}")


if __name__ == "__main__":
    main()
