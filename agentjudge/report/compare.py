"""``agentjudge compare RUN_A RUN_B …``: one first screen across runs, and paired deltas where they overlap.

Why: the usual question is "how does my new judge do next to the grid I already ran?". The runs' judgments
are joined (a judge present in several runs is renamed ``judge @ run``), one shared bootstrap plan covers
the union of base scenarios, and the same report (first screen, folded sections) is written for the join.
The paired-delta table compares every judge of one run with every judge of another on the verdict rows
they share (same record, generator, generator trial, condition, prompt variant, temperature, trial,
metric, scoring mode) — a delta over shared rows only, with a CI that resamples shared base scenarios.
If a generator's outputs differ between runs (a real model re-sampled), the delta includes that.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from agentjudge.analysis import (
    CANONICAL_ORDER,
    Context,
    JudgeUnits,
    Progress,
    as_str_category,
    fmt_pp,
    load_context,
    make_context,
    unfinished_line,
)
from agentjudge.analysis.first_screen import Screen
from agentjudge.errors import InputError
from agentjudge.stats import COORDS


def _labels(rundirs: list[Path]) -> list[str]:
    names = [p.resolve().name for p in rundirs]
    counts = Counter(names)
    return [f"{n}#{i + 1}" if counts[n] > 1 else n for i, n in enumerate(names)]


def join_runs(
    contexts: list[Context], labels: list[str], out: Path, resamples: int, seed: int, ci: str = "expanded"
) -> Context:
    """One context over several runs; judges that occur in more than one run get ``@ label``."""
    seen = Counter(j for ctx in contexts for j in ctx.planned_judges())  # no-row-yet judges count too
    frames = []
    judges_meta: dict[str, Any] = {}
    generators_meta: dict[str, Any] = {}
    families = []
    unfinished: list[str] = []
    judge_units: dict[str, JudgeUnits] = {}
    for ctx, label in zip(contexts, labels, strict=True):
        df = ctx.data.copy()
        planned = ctx.planned_judges()
        rename = {j: (f"{j} @ {label}" if seen[j] > 1 else j) for j in planned}
        judge_units.update({rename.get(j, j): u for j, u in ctx.progress.judge_units.items()})
        if ctx.progress.status is not None and ctx.progress.status.state != "complete":
            unfinished.append(unfinished_line(ctx.progress.status, None, f" {label}"))
        df["judge"] = df["judge"].astype(str).map(rename)
        df["run"] = label
        frames.append(df)
        for j, info in ctx.meta.get("judges", {}).items():
            judges_meta[rename.get(j, j)] = {**info, "run": label}
        generators_meta.update(ctx.meta.get("generators", {}))
        pipe = ctx.meta.get("pipeline", {}) if isinstance(ctx.meta.get("pipeline"), dict) else {}
        families.append(f"{pipe.get('prompt_family') or 'agentjudge'} ({label})")
    data = pd.concat([f.astype({c: str for c in f.select_dtypes("category").columns}) for f in frames])
    data = data.reset_index(drop=True)
    for col in CANONICAL_ORDER.keys() | {"judge", "generator", "base_id", "record_id", "scoring_mode"}:
        if col in data:
            data[col] = as_str_category(data[col], CANONICAL_ORDER.get(col))
    for col in ("prompt_format", "default_mode", "domain", "run"):
        data[col] = as_str_category(data[col])
    first = contexts[0].meta.get("pipeline", {})
    meta = {
        "judges": judges_meta,
        "generators": generators_meta,
        "pipeline": {**(first if isinstance(first, dict) else {}), "prompt_family": ", ".join(families)},
        "runs": {label: str(ctx.rundir) for ctx, label in zip(contexts, labels, strict=True)},
    }
    joined = make_context(out, data, meta, None, None, resamples, seed, ci)
    joined.progress = Progress(None, tuple(unfinished), judge_units)
    return joined


def paired_deltas(ctx: Context) -> pd.DataFrame:
    """Alignment(judge a) − alignment(judge b) over their shared verdict rows (judges of different runs)."""
    main = ctx.main
    keep = main[main["judge"].isin(ctx.rankable_judges()).to_numpy()]
    coords = [c for c in COORDS if c in keep.columns]
    runs_of = keep.groupby("judge", observed=True)["run"].first().astype(str).to_dict()
    judges = list(runs_of)
    rows = []
    for i, a in enumerate(judges):
        for b in judges[i + 1 :]:
            if runs_of[a] == runs_of[b]:
                continue
            left = keep[keep["judge"] == a][[*coords, "base_id", "mu"]]
            right = keep[keep["judge"] == b][[*coords, "mu"]]
            both = left.merge(right, on=coords, suffixes=("_a", "_b"))
            both = both.dropna(subset=["mu_a", "mu_b"])
            if both.empty:
                rows.append({"judge_a": a, "judge_b": b, "shared_rows": 0})
                continue
            both["d"] = both["mu_a"] - both["mu_b"]
            both["pair"] = "x"
            gd = ctx.boot.ratio(both, ["pair"], "d")
            lo, hi = gd.interval(gd.draws[:, 0])
            rows.append(
                {
                    "judge_a": a,
                    "run_a": runs_of[a],
                    "judge_b": b,
                    "run_b": runs_of[b],
                    "shared_rows": len(both),
                    "shared_base_scenarios": both["base_id"].nunique(),
                    "delta": gd.estimate[0],
                    "ci_lo": lo[0],
                    "ci_hi": hi[0],
                }
            )
    cols = ["judge_a", "run_a", "judge_b", "run_b", "shared_rows", "shared_base_scenarios", "delta"]
    return pd.DataFrame(rows, columns=[*cols, "ci_lo", "ci_hi"])


def _deltas_block(deltas: pd.DataFrame) -> Callable[[Screen], None]:
    def add(screen: Screen) -> None:
        screen.blocks.append(("h", "Paired deltas across runs (alignment a − b on shared verdict rows)"))
        shared = deltas[deltas["shared_rows"] > 0]
        if shared.empty:
            screen.p("No judge pair across runs shares a verdict row (different records or generators).")
            screen.csv["compare_paired_deltas"] = deltas
            return
        shown = pd.DataFrame(
            {
                "judge a": shared["judge_a"],
                "judge b": shared["judge_b"],
                "Δ pp [95 % CI]": [
                    fmt_pp(d, lo, hi)
                    for d, lo, hi in zip(shared["delta"], shared["ci_lo"], shared["ci_hi"], strict=True)
                ],
                "shared rows": shared["shared_rows"].map("{:,}".format),
                "base scenarios": shared["shared_base_scenarios"],
            }
        )
        screen.table("compare_paired_deltas", shown, deltas)

    return add


def _sources(ctx: Context) -> list[str]:
    """The record sources that have rows in a run, in category order."""
    col = ctx.data["source"]
    return [str(s) for s in col.cat.categories if (col == s).any()]


@dataclass(frozen=True)
class Compared:
    """What ``compare_runs`` wrote: the report folder, failed sections, judge pairs sharing verdict rows."""

    out: Path
    failed: int
    overlapping_pairs: int
    labels: tuple[str, ...]
    unfinished: tuple[str, ...] = ()  # one line per unfinished run (the report's first lines)


def compare_runs(rundirs: list[Path], out: Path, resamples: int, seed: int, ci: str = "expanded") -> Compared:
    """The joined report of two or more runs under ``out``; bad input raises an ``InputError``."""
    from agentjudge.atomic import replacing_folder
    from agentjudge.limits import MAX_RESAMPLES, check_range
    from agentjudge.report.write import report_folder_problem, write_report

    if len(rundirs) < 2:
        raise InputError("compare needs at least two run folders")
    check_range("--resamples", resamples, 1, MAX_RESAMPLES)
    contexts = [load_context(Path(r), resamples=resamples, seed=seed, ci=ci) for r in rundirs]
    sampled = [str(c.rundir) for c in contexts if c.sampling is not None]
    if sampled:  # their design weights and prefixes are per run: a join would pool them unweighted
        raise InputError(
            f"compare does not join sampled runs ({', '.join(sampled)} judged a sample: "
            "sampling.json); report each with `agentjudge report`, whose CIs account for its design"
        )
    labels = _labels([Path(r) for r in rundirs])
    sources_of = {label: _sources(c) for label, c in zip(labels, contexts, strict=True)}
    if len(set().union(*sources_of.values())) > 1:  # report splits by source; compare cannot pool them
        named = "; ".join(f"{label}: {', '.join(s)}" for label, s in sources_of.items())
        raise InputError(
            f"compare does not pool record sources ({named}); compare runs of one source "
            "(run `agentjudge report` on each run folder for its per-source reports)"
        )
    out = Path(out)
    if (problem := report_folder_problem(out)) is not None:
        raise InputError(f"--out {problem}")
    ctx = join_runs(contexts, labels, out, resamples, seed, ci)
    deltas = paired_deltas(ctx)
    with replacing_folder(out) as tmp:  # an earlier comparison stays whole until this one is complete
        failed = write_report(
            ctx, tmp, title="agentjudge compare: " + " vs ".join(labels), add=_deltas_block(deltas)
        )
    overlap = int((deltas["shared_rows"] > 0).sum()) if len(deltas) else 0
    return Compared(out, failed, overlap, tuple(labels), ctx.progress.unfinished)
