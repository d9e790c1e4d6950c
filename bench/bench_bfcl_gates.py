"""Gates on real, human-written BFCL tasks: pass rate, false-rejection rate and a negative control per file.

Imports each shared BFCL file (multiple, live_multiple, parallel), runs both gates and prints how many records
pass. Every rejection is listed with its reason: a record read as a defect in ``bench/bfcl_readings.tsv``
(by hand: the accepted answer is not grounded in its own query, contradicts it, or breaks its own schema)
is a correct rejection; any other rejection is a false one. FRR = false rejections / (records − defects).
A defect that *passes* is printed too: that would be a false acceptance on real data.

The negative control gives every record the query of the record half the file away: a gate that accepts
answers not grounded in their query would pass those, so the control's pass rate is the false-acceptance side
of the false-rejection figure. Records whose GT has no value to ground pass any query and are counted apart.

``--families`` chooses which families of ``agentjudge.dataset.knowledge`` (the semantic layer) are on;
``--ablation`` prints the figures with none, then with each family added in turn, then with all but one;
``--control-offsets K`` gives each record K different partners in the mismatched control (default 1).

    python bench/bench_bfcl_gates.py [--data DIR] [--families arithmetic,places] [--ablation]

``--data``: a folder of BFCL's released question and answer files (default ``$AGENTJUDGE_BFCL_DATA``, else
``shared/data/bfcl`` beside the checkout).
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path

from agentjudge.dataset import knowledge
from agentjudge.dataset.gates import _user_supplied, run_gates
from agentjudge.tracks.bfcl import import_bfcl
from agentjudge.types import Record

FILES = ("multiple", "live_multiple", "parallel")
READINGS = Path(__file__).with_name("bfcl_readings.tsv")


def load_readings() -> dict[str, tuple[str, str]]:
    """id → (code, reason) for every rejection read by hand; codes starting with D are BFCL defects."""
    out: dict[str, tuple[str, str]] = {}
    for line in READINGS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            rid, code, reason = line.split("\t")
            out[rid] = (code, reason)
    return out


def offsets(n: int, k: int) -> list[int]:
    """Partner offsets for the mismatched-query control: half the file away first, then other distances."""
    out: list[int] = []
    for d in (n // 2, n // 3, n // 5, n // 7, 1, 2, 3, 11, 29, 97):
        if 0 < d < n and d not in out:
            out.append(d)
    return out[:k]


def measure(
    records: list[Record], readings: dict[str, tuple[str, str]], show: bool, n_offsets: int = 1
) -> str:
    defects = {k: v for k, v in readings.items() if v[0].startswith("D")}
    n = len(records)
    rejected = [(r, rep) for r in records if not (rep := run_gates(r)).passed]
    false = [(r, rep) for r, rep in rejected if r.id not in defects]
    n_defects = sum(r.id in defects for r in records)
    passed_defects = [r for r in records if r.id in defects and r.id not in {x.id for x, _ in rejected}]
    mismatched = trivial = 0
    for d in offsets(n, n_offsets):
        for k, record in enumerate(records):
            other = record.model_copy(update={"queries": {"easy": records[(k + d) % n].queries["easy"]}})
            if not _user_supplied(other):
                trivial += 1
            elif run_gates(other).passed:
                mismatched += 1
    checked = n * len(offsets(n, n_offsets)) - trivial
    trivial //= len(offsets(n, n_offsets))
    same, same_checked = same_tool_control(records)
    clean = n - n_defects
    line = (
        f"pass {n - len(rejected)}/{n} ({100 * (n - len(rejected)) / n:.1f} %); defects {n_defects} "
        f"({len(rejected) - len(false)} rejected, {len(passed_defects)} passed); "
        f"FRR {len(false)}/{clean} = {100 * len(false) / clean:.1f} %; "
        f"control {mismatched}/{checked} = {100 * mismatched / checked:.1f} % "
        f"({trivial} with nothing to ground); "
        f"same-tool control {same}/{same_checked} = {100 * same / max(same_checked, 1):.1f} %"
    )
    if show:
        for record in passed_defects:
            line += (
                f"\n  DEFECT PASSED {record.id} [{defects[record.id][0]}]: {record.queries['easy'][:140]!r}"
            )
        for record, report in rejected:
            code, reason = readings.get(record.id, ("?", "not read yet"))
            kind = "defect" if code.startswith("D") else "FALSE REJECTION"
            line += f"\n  {record.id} [{kind} {code}] {reason}\n      query: {record.queries['easy'][:300]!r}"
            for f in report.findings:
                if f.gate == "gate1":
                    line += f"\n      {f.code}: {f.detail[:200]}"
    return line


def same_tool_control(records: list[Record]) -> tuple[int, int]:
    """The harder control: each record given the query of the next record (in file order, cyclically) that
    calls the same tools with other argument values, e.g. two movie searches of different genres. Only
    the values differ, so only grounding can tell the queries apart."""
    passed = checked = 0
    for k, record in enumerate(records):
        tools = [s.call.name for s in record.gt]
        args = [s.call.arguments for s in record.gt]
        partner = next(
            (
                o
                for o in records[k + 1 :] + records[:k]
                if [s.call.name for s in o.gt] == tools and [s.call.arguments for s in o.gt] != args
            ),
            None,
        )
        if partner is None:
            continue
        other = record.model_copy(update={"queries": {"easy": partner.queries["easy"]}})
        if not _user_supplied(other):
            continue
        checked += 1
        passed += run_gates(other).passed
    return passed, checked


def main() -> None:
    root = Path(__file__).resolve().parents[1]
    default = os.environ.get("AGENTJUDGE_BFCL_DATA", str(root.parent / "shared" / "data" / "bfcl"))
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path(default))
    parser.add_argument("--families", default=",".join(knowledge.FAMILIES), help="semantic families on")
    parser.add_argument("--ablation", action="store_true", help="none, then each family added in turn")
    parser.add_argument("--quiet", action="store_true", help="figures only, no list of rejections")
    parser.add_argument(
        "--control-offsets", type=int, default=1, help="partners per record in the mismatched control (1-10)"
    )
    args = parser.parse_args()
    if not (args.data / "BFCL_v4_multiple.json").exists():
        raise SystemExit(f"no BFCL files in {args.data} (pass --data or set AGENTJUDGE_BFCL_DATA)")
    readings = load_readings()
    files = {
        name: import_bfcl(
            args.data / f"BFCL_v4_{name}.json", args.data / f"BFCL_v4_{name}.possible_answer.json"
        )
        for name in FILES
    }
    if args.ablation:
        steps = [list(knowledge.FAMILIES[:k]) for k in range(len(knowledge.FAMILIES) + 1)]
        steps += [[f for f in knowledge.FAMILIES if f != off] for off in knowledge.FAMILIES]
        for on in steps:
            knowledge.ENABLED.clear()
            knowledge.ENABLED.update(on)
            print(f"semantic families: {', '.join(on) or 'none'}")
            for name, records in files.items():
                print(f"  {name}: {measure(records, readings, show=False, n_offsets=args.control_offsets)}")
        return
    knowledge.ENABLED.clear()
    knowledge.ENABLED.update(f for f in args.families.split(",") if f)
    for name, records in files.items():
        print(f"{name}: {measure(records, readings, show=not args.quiet, n_offsets=args.control_offsets)}")
        used: Counter[str] = Counter()
        for record in records:  # which family grounds how many argument values of the passing records
            for i, arg, leaf in _user_supplied(record):
                for text in record.queries.values():
                    schema = next((t for t in record.tools if t.name == record.gt[i].call.name), None)
                    prop = (schema.parameters.get("properties") or {}).get(arg) if schema else None
                    if (family := knowledge.explain(leaf, text, arg, prop)) is not None:
                        used[family] += 1
                        break
        print(f"  values a semantic family can state: {dict(used)}")


if __name__ == "__main__":
    main()
