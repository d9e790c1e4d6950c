"""Per topology and difficulty: the share of GT steps a query names explicitly, and the semantic findings.

Issue 10 asks that hard be really harder than easy; this prints, for a records file, how many GT steps
each difficulty's query asks for in words (``gates_semantic.explicit_steps``), per topology, and the count
of each semantic reason code (run on the unchanged builder's output, that count is the "before" figure).

    python bench/explicit_steps.py data/full/records.jsonl
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
from collections import Counter
from pathlib import Path

from agentjudge.dataset.gates_semantic import SEMANTIC_CODES, explicit_steps, semantic_findings
from agentjudge.dataset.layout import read_records
from agentjudge.types import DIFFICULTIES, TOPOLOGIES, Record

Row = tuple[str, dict[str, tuple[int, int]], list[tuple[str, str | None]]]


def _one(record: Record) -> Row:
    named = {}
    for d in DIFFICULTIES:
        flags = explicit_steps(record, record.queries.get(d, ""))
        named[d] = (sum(flags), len(flags))
    findings, _ = semantic_findings(record)
    return record.topology, named, [(f.code, f.difficulty) for f in findings]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("records", type=Path)
    args = parser.parse_args()
    records = read_records(args.records)
    with mp.get_context("fork").Pool(min(2, mp.cpu_count())) as pool:
        rows = pool.map(_one, records, chunksize=64)
    named: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    findings: Counter[str] = Counter()
    records_with: Counter[str] = Counter()
    by_difficulty: Counter[tuple[str, str | None]] = Counter()
    for topology, per_d, found in rows:
        for d, (k, n) in per_d.items():
            named[(topology, d)] += k
            total[(topology, d)] += n
        findings.update(code for code, _ in found)
        records_with.update({code for code, _ in found})
        by_difficulty.update(found)
    print(f"{args.records}: {len(records)} records\n")
    print(
        f"{'topology':22s}"
        + "".join(f"{d:>10s}" for d in DIFFICULTIES)
        + "   (share of GT steps named explicitly)"
    )
    for t in [*TOPOLOGIES, "all"]:
        keys = TOPOLOGIES if t == "all" else [t]
        cells = []
        for d in DIFFICULTIES:
            k = sum(named[(x, d)] for x in keys)
            n = sum(total[(x, d)] for x in keys)
            cells.append(f"{k / n:10.1%}" if n else f"{'-':>10s}")
        print(f"{t:22s}" + "".join(cells))
    print(
        f"\n{'reason code':22s}{'findings':>10s}{'records':>10s}" + "".join(f"{d:>8s}" for d in DIFFICULTIES)
    )
    for code in SEMANTIC_CODES:
        per = "".join(f"{by_difficulty[(code, d)]:8d}" for d in DIFFICULTIES)
        print(f"{code:22s}{findings[code]:10d}{records_with[code]:10d}{per}")


if __name__ == "__main__":
    main()
