"""Run a pipeline with ``judge_tool_rendering: full`` and ``compact`` and compare the judges' alignment.

    python bench/ablation_compact_tools.py pipelines/ablation_compact_tools.yaml --out runs/compact-tools \
        [--judge MODEL ...] [--api-base URL] [--resamples 1000] [--seed 0] [--ci expanded|percentile]

Writes two run folders (OUT/full, OUT/compact) with the ordinary runner, then prints per judge and overall
the paired alignment difference compact − full with its 95 % bootstrap CI over base scenarios, the number of
paired rows and how many verdicts changed. ``strict`` scoring is used when the run has it.

Honest limit: only judges that read the prompt (LLM judges) can be affected. The offline baselines ignore
it, so with them the difference is exactly zero by construction, and the script says so instead of
presenting that zero as a finding. Likewise a judge that gives one verdict to every row of both runs (a
tiny model copying the format example) is flagged: its zero delta is no evidence either.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import yaml

from agentjudge.commands.run import run_cli
from agentjudge.registry.model_strings import model_kind
from agentjudge.rundir import RunFolder
from agentjudge.runner.pipeline import load_pipeline
from agentjudge.stats.paired_runs import paired_alignment_delta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pipeline", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--judge", action="append", help="replace the pipeline's judges (repeatable)")
    parser.add_argument("--api-base")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--ci",
        choices=("expanded", "percentile"),
        default="expanded",
        help="the interval (the report's --ci)",
    )
    args = parser.parse_args(argv)

    raw = yaml.safe_load(args.pipeline.read_text(encoding="utf-8"))
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {}
    for rendering in ("full", "compact"):
        variant = {**raw, "judge_tool_rendering": rendering}
        dataset = Path(raw["dataset"])
        if not dataset.is_absolute():  # keep the dataset path valid from the copy's folder
            variant["dataset"] = str((args.pipeline.parent / dataset).resolve())
        path = args.out / f"pipeline_{rendering}.yaml"
        path.write_text(yaml.safe_dump(variant, sort_keys=False), encoding="utf-8")
        code = run_cli(path, args.out / rendering, judges=args.judge, api_base=args.api_base)
        if code != 0:
            print(f"run with judge_tool_rendering={rendering} exited {code}", file=sys.stderr)
            return code
        runs[rendering] = RunFolder.open(args.out / rendering).judgments()

    pipe = load_pipeline(args.out / "pipeline_full.yaml")
    judges = args.judge or [m.model for m in pipe.judges]
    reading = [j for j in judges if model_kind(j) not in ("sim", "baseline")]
    mode = "strict" if "strict" in set(runs["full"].scoring_mode) else None
    print(f"alignment, compact - full (scoring {mode or 'as run'}), 95% {args.ci} CI over base scenarios:")
    names = sorted(set(runs["full"].judge))
    for judge in [*names, None]:
        a = runs["full"] if judge is None else runs["full"][runs["full"].judge == judge]
        b = runs["compact"] if judge is None else runs["compact"][runs["compact"].judge == judge]
        d = paired_alignment_delta(
            a, b, resamples=args.resamples, seed=args.seed, scoring_mode=mode, interval=args.ci
        )
        print(
            f"  {judge or 'all judges':<20} full {d.mu_a:.4f}  compact {d.mu_b:.4f}  "
            f"delta {d.delta:+.4f} [{d.ci_lo:+.4f}, {d.ci_hi:+.4f}]  "
            f"pairs {d.pairs}, verdicts changed {d.changed}, unpaired {d.unpaired}"
        )
    for judge in names:
        both = pd.concat(
            [runs["full"][runs["full"].judge == judge], runs["compact"][runs["compact"].judge == judge]]
        )
        if mode:  # each verdict appears once per scoring mode: count it once
            both = both[both.scoring_mode == mode]
        answered = both.verdict.dropna()
        if len(answered) and answered.nunique() == 1:
            print(
                f"NOT EVIDENCE for {judge}: it gave verdict {answered.iloc[0]:g} to all {len(answered)} "
                "answered rows of both runs, whatever it was shown, so its verdicts cannot reveal an "
                "effect of the rendering (a zero delta says nothing about a judge that discriminates)."
            )
    if not reading:
        print(
            "NOT A MEASUREMENT: every judge here is offline (sim/baseline) and none reads the prompt, so "
            "the two runs are identical by construction. Run it with LLM judges (--judge MODEL)."
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
