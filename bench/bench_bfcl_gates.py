"""Gates on real, human-written BFCL tasks: pass rate per file, findings by reason, and a negative control.

Imports each shared BFCL file (multiple, live_multiple, parallel), runs both gates and prints how many records
pass and why the others fail. The negative control gives every record the query of the record half the file
away: a gate that accepts answers not grounded in their query would pass those, so their pass rate is the
false-acceptance side of the false-rejection figure. Records whose GT has no value to ground pass any query
and are counted apart.

    python bench/bench_bfcl_gates.py [--data ../shared/data/bfcl] [--show-failures]
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path

from agentjudge.dataset.bfcl import import_bfcl
from agentjudge.dataset.gates import _user_supplied, run_gates

FILES = ("multiple", "live_multiple", "parallel")


def main() -> None:
    root = Path(__file__).resolve().parents[1]
    default = os.environ.get("AGENTJUDGE_BFCL_DATA", str(root.parent / "shared" / "data" / "bfcl"))
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path(default))
    parser.add_argument("--show-failures", action="store_true")
    args = parser.parse_args()
    if not (args.data / "BFCL_v4_multiple.json").exists():
        raise SystemExit(f"no BFCL files in {args.data} (pass --data or set AGENTJUDGE_BFCL_DATA)")
    for name in FILES:
        records = import_bfcl(
            args.data / f"BFCL_v4_{name}.json", args.data / f"BFCL_v4_{name}.possible_answer.json"
        )
        reasons: Counter[str] = Counter()
        failing = []
        for record in records:
            report = run_gates(record)
            if not report.passed:
                failing.append((record, report))
                reasons.update({f"{f.gate}:{f.code}" for f in report.findings})
        n = len(records)
        passed = n - len(failing)
        print(
            f"{name}: {n} records, {passed} pass ({100 * passed / n:.1f} %); "
            f"records per reason {dict(reasons)}"
        )
        mismatched = trivial = 0
        for k, record in enumerate(records):
            other = record.model_copy(update={"queries": {"easy": records[(k + n // 2) % n].queries["easy"]}})
            if not _user_supplied(other):
                trivial += 1
            elif run_gates(other).passed:
                mismatched += 1
        checked = n - trivial
        print(
            f"  control, another record's query: {mismatched}/{checked} pass "
            f"({100 * mismatched / checked:.1f} %); {trivial} records have no value to ground"
        )
        if args.show_failures:
            for record, report in failing:
                print(f"  {record.id}: {record.queries['easy'][:120]!r}")
                for f in report.findings:
                    if f.gate == "gate1":
                        print(f"      {f.code}: {f.detail[:160]}")


if __name__ == "__main__":
    main()
