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
- how the world behind the queries holds together: the share of queries per difficulty with an aside (a
  sentence of context the request does not need: the domain's asides) and the most repeated one; the most
  repeated sentence of five or more words in the hard queries (goal: none in more than 1 %); office dates
  (due dates, deadlines: fields the domain marks ``workdays``) that fall on a weekend; GT steps that break
  the domain's rules (``rules.violations``: a move the lifecycle forbids, a change to a record not in a
  state for it, an extension of a lapsed date, one value set on every listed record where that makes no
  sense, a new record on a record it may not point at; beside them notes and subjects that do not fit their
  record, records that contradict each other, outside parties on the company's mail domain, scenarios and
  asides that assert a state the records do not have or contradict a change the request makes); and tools
  whose description promises what their parameters cannot do (``toolschemas.description_problems``);
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

from agentjudge.dataset import resolve, rules
from agentjudge.dataset.domains import COMMON_ASIDES, load_domain
from agentjudge.dataset.gates_semantic import (
    READ_OPS,
    _ids_in_play,
    _necessary,
    _possessives,
    _spec,
    explicit_steps,
    hardening,
)
from agentjudge.dataset.toolschemas import description_problems
from agentjudge.dataset.world import domain_title
from agentjudge.rundir.records import read_records
from agentjudge.types import DIFFICULTIES, TOPOLOGIES, Record, ToolSchema

FORBIDDEN = ("transition", "state", "lapsed", "bulk", "accepts", "together")  # changes the rules forbid
LONG = 5  # words: a sentence this long repeated verbatim reads as machine text

_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(])")


def sentences(query: str) -> list[str]:
    return [s.strip() for s in _SPLIT.split(query.strip()) if s.strip()]


def _asides(domain: str) -> frozenset[str]:
    """The domain's asides: context sentences a query may add that the request does not need (its own and
    those of every domain)."""
    dom = load_domain(domain)
    return frozenset(s.strip() for s in [*(c.text for c in dom.asides), *COMMON_ASIDES])


def _office_dates(record: Record) -> int:
    """GT date arguments of fields the domain marks as office dates (``workdays``)."""
    dom = load_domain(record.domain)
    specs = {t.name: t for t in dom.tools}
    n = 0
    for step in record.gt:
        t = specs.get(step.call.name)
        if t is None:
            continue
        fields = dom.entities[t.entity].fields
        n += sum(1 for k in step.call.arguments if k in fields and fields[k].workdays)
    return n


def _one(record: Record) -> dict:
    out: dict = {"topology": record.topology, "sentences": {}, "lookups": {}, "ids": {}}
    asides = _asides(record.domain)
    out["asides"] = {
        d: sorted(s for s in sentences(record.queries.get(d, "")) if s in asides) for d in DIFFICULTIES
    }
    out["violations"] = rules.violations(record)
    out["possessive"] = bool(_possessives(record, {d: q for d, q in record.queries.items() if q}))
    out["office_dates"] = _office_dates(record)
    out["tools"] = sorted(
        {
            (record.domain, t.name, t.description, json.dumps(t.parameters, sort_keys=True))
            for t in record.tools
        }
    )
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

    _world(rows, n)

    manifest = args.manifest or args.records.parent / "manifest.json"
    if manifest.is_file():
        gates = json.loads(manifest.read_text()).get("gates", {})
        reasons = gates.get("regenerations_by_reason", {})
        print(
            f"\nregenerations ({manifest}): {gates.get('regenerations', 0)} in "
            f"{gates.get('records_regenerated', 0)} records, by reason {reasons}"
        )


def _world(rows: list[dict], n: int) -> None:
    """The figures of how the world behind the queries holds together (see the module docstring)."""
    print("\nasides (context sentences the request does not need), share of queries with one:")
    print("  " + "  ".join(f"{d} {sum(bool(r['asides'][d]) for r in rows) / n:.1%}" for d in DIFFICULTIES))
    hard_asides = Counter(s for r in rows for s in r["asides"]["hard"])
    if hard_asides:
        text, k = hard_asides.most_common(1)[0]
        print(f"  most repeated aside in hard: {k} records ({k / n:.2%}) {text!r}")
    long = Counter(s for r in rows for s in r["sentences"]["hard"] if len(s.split()) >= LONG)
    text, k = long.most_common(1)[0]
    over = sum(1 for c in long.values() if c > n / 100)
    print(
        f"most repeated sentence of {LONG}+ words in hard: {k} records ({k / n:.2%}) {text!r}; "
        f"{over} such sentence(s) in more than 1 % of hard queries"
    )
    weekend = sum(1 for r in rows for c, _ in r["violations"] if c == "weekend")
    office = sum(r["office_dates"] for r in rows)
    print(f"office dates on a Saturday or Sunday: {weekend} of {office}")
    cats = Counter(c for r in rows for c, _ in r["violations"])
    forbidden = sum(cats[c] for c in FORBIDDEN)
    records = sum(1 for r in rows if any(c in FORBIDDEN for c, _ in r["violations"]))
    print(
        f"GT steps the domain rules forbid: {forbidden} in {records} records "
        f"({', '.join(f'{c} {cats[c]}' for c in FORBIDDEN)})"
    )
    for c, what in (
        ("fit", "notes and subjects that do not fit their record"),
        ("world", "records that contradict each other"),
        ("domain", "outside parties on the company's mail domain"),
        ("context", "scenarios and asides that assert what the records do not show"),
    ):
        print(
            f"{what}: {cats[c]} in {sum(1 for r in rows if any(x == c for x, _ in r['violations']))} records"
        )
    chained = sum(r["possessive"] for r in rows)
    print(f"records with 'its'/'their' after another record than the one the GT takes it of: {chained}")
    tools = {t for r in rows for t in r["tools"]}
    bad = {}
    for domain, name, desc, params in sorted(tools):
        found = description_problems(
            domain, ToolSchema(name=name, description=desc, parameters=json.loads(params))
        )
        if found:
            bad[(domain, name)] = found[0]
    offering = sum(1 for r in rows if any((t[0], t[1]) in bad for t in r["tools"]))
    print(f"tools whose description and parameters disagree: {len(bad)} (offered in {offering} records)")
    for (domain, name), why in sorted(bad.items()):
        print(f"  {domain} {name}: {why}")


if __name__ == "__main__":
    main()
