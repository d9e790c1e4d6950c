"""How the queries of a records file read: the figures issue 37 reports before and after its realiser.

    python bench/query_stats.py data/full/records.jsonl [--manifest data/full/manifest.json]

Prints, for the whole file:
- per difficulty, the most frequent sentence and the share of that difficulty's queries containing it
  (the phrase bank's goal: no sentence in more than 5 % of one difficulty's queries);
- the share of hard queries that state today's date although no GT value is a date;
- the records with a domain's internal title ("Healthcare") in one of their queries;
- per topology and difficulty, the share of look-ups (search/get/list steps whose output a later step
  needs) the query leaves implicit, and the share of record ids among the GT's arguments it does not state;
- what the hard query leaves the reader to work out that easy states (``gates_semantic.hardening``), and
  the share of hard queries with fewer than two such things;
- regenerations per reason, from the manifest beside the file (or ``--manifest``).

Look-ups are read with today's ``gates_semantic.explicit_steps``, so a "before" file is read the same way
as an "after" one.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import re
from collections import Counter
from pathlib import Path

from agentjudge.dataset import resolve
from agentjudge.dataset.gates_semantic import (
    READ_OPS,
    _ids_in_play,
    _necessary,
    _spec,
    explicit_steps,
    hardening,
)
from agentjudge.dataset.world import domain_title
from agentjudge.rundir.records import read_records
from agentjudge.types import DIFFICULTIES, TOPOLOGIES, Record

_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(])")


def sentences(query: str) -> list[str]:
    return [s.strip() for s in _SPLIT.split(query.strip()) if s.strip()]


def _one(record: Record) -> dict:
    out: dict = {"topology": record.topology, "sentences": {}, "lookups": {}, "ids": {}}
    reads = [
        i
        for i in range(len(record.gt))
        if (sp := _spec(record, i)) is not None and sp.op in READ_OPS and _necessary(record, i, "")
    ]
    ids = _ids_in_play(record)
    gt_ids = sorted(
        {
            str(v)
            for s in record.gt
            for v in resolve.leaves(s.call.arguments)
            if isinstance(v, str) and v in ids
        }
    )
    for d in DIFFICULTIES:
        q = record.queries.get(d, "")
        out["sentences"][d] = sorted(set(sentences(q)))
        named = explicit_steps(record, q)
        out["lookups"][d] = (sum(1 for i in reads if not named[i]), len(reads))
        out["ids"][d] = (sum(1 for v in gt_ids if v not in q), len(gt_ids))
    dated = any(
        isinstance(v, str) and resolve.ISO_DATE.match(v[:10])
        for s in record.gt
        for v in resolve.leaves(s.call.arguments)
    )
    out["needless_date"] = resolve.find_anchor(record.queries.get("hard", "")) is not None and not dated
    title = domain_title(record.domain)
    rx = re.compile(r"(?<![\w-])" + re.escape(title) + r"(?![\w-])")
    out["title"] = any(rx.search(q) for q in record.queries.values())
    ops = hardening(record, record.queries.get("easy", ""), record.queries.get("hard", ""))
    out["ops"] = [o.split(":")[0] for o in ops]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path)
    parser.add_argument("--manifest", type=Path, default=None)
    args = parser.parse_args()
    records = read_records(args.records)
    with mp.get_context("fork").Pool(min(2, mp.cpu_count())) as pool:
        rows = pool.map(_one, records, chunksize=64)
    n = len(rows)
    print(f"{args.records}: {n} records × {len(DIFFICULTIES)} difficulties\n")

    print("most frequent sentence per difficulty (share of that difficulty's queries containing it):")
    for d in DIFFICULTIES:
        counts = Counter(s for row in rows for s in row["sentences"][d])
        text, k = counts.most_common(1)[0]
        print(f"  {d:7s} {k / n:6.2%}  {text!r}")

    hard_dates = sum(r["needless_date"] for r in rows)
    print(f"\nhard queries stating today's date with no date in the GT: {hard_dates} ({hard_dates / n:.1%})")
    titled = sum(r["title"] for r in rows)
    print(f"records with a domain's internal title in a query: {titled}")

    print(
        f"\n{'topology':22s}"
        + "".join(f"{'implicit ' + d:>16s}" for d in DIFFICULTIES)
        + "".join(f"{'ids withheld ' + d:>20s}" for d in DIFFICULTIES)
    )
    for t in [*TOPOLOGIES, "all"]:
        sel = [r for r in rows if t == "all" or r["topology"] == t]
        cells = []
        for key, width in (("lookups", 16), ("ids", 20)):
            for d in DIFFICULTIES:
                k = sum(r[key][d][0] for r in sel)
                m = sum(r[key][d][1] for r in sel)
                cells.append(f"{k / m:{width}.1%}" if m else f"{'-':>{width}s}")
        print(f"{t:22s}" + "".join(cells))

    print("\nwhat hard leaves to infer that easy states (gates_semantic.hardening), per topology:")
    print(f"{'topology':22s}{'mean':>8s}{'< 2':>8s}  kinds")
    for t in [*TOPOLOGIES, "all"]:
        sel = [r for r in rows if t == "all" or r["topology"] == t]
        kinds = Counter(k for r in sel for k in r["ops"])
        mean = sum(len(r["ops"]) for r in sel) / len(sel) if sel else 0.0
        low = sum(len(r["ops"]) < 2 for r in sel) / len(sel) if sel else 0.0
        print(f"{t:22s}{mean:8.2f}{low:8.1%}  {dict(sorted(kinds.items()))}")

    manifest = args.manifest or args.records.parent / "manifest.json"
    if manifest.is_file():
        gates = json.loads(manifest.read_text()).get("gates", {})
        reasons = gates.get("regenerations_by_reason", {})
        print(
            f"\nregenerations ({manifest}): {gates.get('regenerations', 0)} in "
            f"{gates.get('records_regenerated', 0)} records, by reason {reasons}"
        )


if __name__ == "__main__":
    main()
