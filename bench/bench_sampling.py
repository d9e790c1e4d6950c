"""Does a sampled grid (pipeline key ``sampling``, issue 38) reach the full grid's answers, and do the
report's CIs of a sampled run cover them 95 % of the time?

Part 1, planted effects (default): ``--seeds`` replicates (≥ 200). Each draws a fresh finite population of
``--population`` base scenarios (topologies in the published mix, a scenario quality shared by its
difficulties, generators and metrics and shifted by topology, a scenario hardness shared by both judges)
and the FULL grid on it: two simulated judges (``simjudge`` careful and anchored, their planted GT gain,
anchoring and errors from ``agentjudge.judges.simjudge.planted_verdicts``, the quickstart's own rule) ×
two simulated generators (weak, strong) × 3 difficulties × with/without GT = 24 cells, 4 metrics each.
The truth of every statistic is its value on that full grid. The design then runs exactly as a sampled
``agentjudge run`` decides it: the stratified order (``stats.design.stratified_order``), the pilot, the
stages of ``sampling.stages.next_sizes`` on the per-scenario sums the cells hold so far, until no cell
grows. The judged rows are estimated with the report's own code: ``ClusterBootstrap`` with the design's
finite-population scale and weights, ``analysis._common.paired`` for paired deltas (the prefix both sides
judged), ``draws`` and ``diff_table``. Printed per family of statistics: coverage of the reported 95 % CI,
bias (mean estimate − truth, and over its Monte-Carlo SE), mean and largest half-width, and for contrast
the coverage of the same bootstrap without the finite-population correction. Then the share of judge
units and predictions used, the stages, and how often the sampled ranking of the two judges (pooled,
and per generator × difficulty × condition cell) equals the full grid's.

Part 2, the full split (``--full-split DATA``): real ``agentjudge run`` of 5 simulated generators × {simjudge/
careful, simjudge/anchored, baseline/rule} × 3 difficulties × with/without GT on DATA, once in full and
``--runs`` times sampled (``--target-ci``, seeds 0..runs−1), each reported (``agentjudge report``): the
share of judge units used, the largest headline-cell half-width, the share of headline cells whose
full-grid value lies inside the sampled CI, and how often the sampled ranking of the judges (the first
screen's, and per generator × difficulty × condition) equals the full grid's.

Part 3, resume (``--resume``, with ``--full-split``): the sampled run of seed 0 killed with SIGKILL in its
second stage, re-run with the same command, its parquet files compared byte for byte with the
uninterrupted run's.

Run: python bench/bench_sampling.py [--seeds 200] [--population 3808] [--target 1.0] [--resamples 1000]
     python bench/bench_sampling.py --seeds 0 --full-split data/full/records.jsonl --runs 10 --resume
(Part 1 with 200 seeds: ~10-20 min on 2 shared cores; Part 2 ~1 min per run.)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
from agentjudge.analysis._common import draws, paired

from agentjudge.judges.simjudge import Draws, load_profiles, planted_verdicts
from agentjudge.rundir import RunFolder
from agentjudge.rundir.units import store_meta, store_units
from agentjudge.runner.sampling.spec import Sampling
from agentjudge.runner.sampling.stages import next_sizes
from agentjudge.stats import ClusterBootstrap, diff_table
from agentjudge.stats.align import snap
from agentjudge.stats.design import CELL_COLUMNS, Design, fpc_scale, stratified_order

GENERATORS = {"weak": 0.55, "strong": 0.85}  # P(reference = 1) on easy scenarios of average quality
DIFFICULTIES = ("easy", "medium", "hard")
DIFF_PENALTY = np.array([0.0, 0.1, 0.2])
JUDGES = ("careful", "anchored")
CONDITIONS = ("with_gt", "without_gt")
# the published topology mix (data/full/manifest.json) and a quality shift per topology (logit scale)
TOPOLOGIES = {"diamond": 501, "fan_in": 1049, "fan_out": 399, "linear": 812, "loop_like": 224,
              "optional_enrichment": 823}  # fmt: skip
TOPOLOGY_SHIFT = {"diamond": -0.3, "fan_in": 0.1, "fan_out": 0.0, "linear": 0.3, "loop_like": -0.5,
                  "optional_enrichment": 0.1}  # fmt: skip


# ------------------------------------------------------------------------------------------- part 1
def population(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """The full grid on ``n`` fresh scenarios: one row per judge × generator × difficulty × condition ×
    metric × scenario, with its alignment ``mu`` (NaN on a planted parse failure)."""
    total = sum(TOPOLOGIES.values())
    counts = {t: round(n * c / total) for t, c in TOPOLOGIES.items()}
    counts["fan_in"] += n - sum(counts.values())
    topo = np.repeat(np.array(list(counts)), list(counts.values()))
    rng.shuffle(topo)
    quality = rng.normal(0, 1.0, n) + np.array([TOPOLOGY_SHIFT[t] for t in topo])
    z = rng.standard_normal(n)
    shape = (n, len(DIFFICULTIES), len(GENERATORS), 4)
    cid = np.broadcast_to(np.arange(n)[:, None, None, None], shape).ravel()
    diff = np.broadcast_to(np.arange(3)[None, :, None, None], shape).ravel()
    gen = np.broadcast_to(np.arange(len(GENERATORS))[None, None, :, None], shape).ravel()
    met = np.broadcast_to(np.arange(4)[None, None, None, :], shape).ravel()
    p_ok = np.array(list(GENERATORS.values()))[gen] - DIFF_PENALTY[diff]
    logit = np.log(p_ok / (1 - p_ok)) + 0.8 * quality[cid]
    perfect = rng.random(cid.size) < 1 / (1 + np.exp(-logit))
    ref = np.where(perfect, 1.0, np.round(rng.random(cid.size) * 4) / 4 * 0.9)
    truth = snap(ref)
    profiles = load_profiles()
    frames = []
    for judge in JUDGES:
        d = Draws.sample(rng, cid.size)  # the same random numbers in both conditions, as simjudge's
        for cond in CONDITIONS:
            shown = cond == "with_gt"
            v = planted_verdicts(
                profiles[judge], truth, met, diff, z[cid], np.full(cid.size, shown), truth,
                np.zeros(cid.size, bool), np.zeros(cid.size, bool), np.zeros(cid.size, bool),
                np.full(cid.size, np.nan), d,
            )  # fmt: skip
            frames.append(
                pd.DataFrame(
                    {
                        "scenario": cid,
                        "judge": judge,
                        "generator": np.array(list(GENERATORS))[gen],
                        "difficulty": np.array(DIFFICULTIES)[diff],
                        "condition": cond,
                        "mu": 1 - np.abs(ref - v),
                    }
                )
            )
    df = pd.concat(frames, ignore_index=True)
    df["topology"] = topo[df["scenario"].to_numpy()]
    return df


Arrays = dict[tuple[str, ...], dict[str, tuple[np.ndarray, np.ndarray]]]


def cell_arrays(df: pd.DataFrame, rank: np.ndarray, n: int) -> Arrays:
    """Per cell and scoring mode (the column ``scoring_mode`` when the frame has one, else "strict"):
    per-scenario sums and counts of alignment, indexed by the scenario's rank in the order."""
    modes = df["scoring_mode"] if "scoring_mode" in df.columns else pd.Series("strict", index=df.index)
    out: Arrays = {}
    for key, part in df.assign(_mode=modes).groupby([*CELL_COLUMNS, "_mode"], sort=True):
        r = rank[part["scenario"].to_numpy()]
        ok = part["mu"].notna().to_numpy()
        s = np.bincount(r[ok], weights=part["mu"].to_numpy()[ok], minlength=n)
        c = np.bincount(r[ok], minlength=n).astype(float)
        out.setdefault(tuple(str(k) for k in key[:-1]), {})[str(key[-1])] = (s, c)
    return out


def run_design(spec: Sampling, arrays: Arrays, n: int) -> tuple[dict, int]:
    """The stages a sampled run goes through (pilot, then ``next_sizes`` until no cell grows), on every
    scoring mode's sums as ``stages.cell_sums`` gives them to the run (the largest variance counts)."""
    sizes = {cell: min(spec.pilot, n) for cell in arrays}
    stages = 1
    while True:
        sums = {
            cell: {mode: (s[: sizes[cell]], c[: sizes[cell]]) for mode, (s, c) in modes.items()}
            for cell, modes in arrays.items()
        }
        new = next_sizes(spec, n, sizes, set(), sums)
        if new == sizes:
            return sizes, stages
        sizes, stages = new, stages + 1


def _ratio(df: pd.DataFrame, by: list[str]) -> pd.Series:
    g = df.groupby(by, observed=True)["mu"]
    return g.sum() / g.count()


def truths(full: pd.DataFrame, pair: tuple[str, str]) -> dict[str, dict[tuple[str, ...], float]]:
    """Every statistic's value on the full grid; ``pair``: the two judges of the judge-vs-judge deltas."""
    cells = _ratio(full, list(CELL_COLUMNS))
    out: dict[str, dict[tuple[str, ...], float]] = {"cell": {tuple(map(str, k)): v for k, v in cells.items()}}
    keys = list(cells.index)
    out["gt_gain"] = {
        (j, g, d): cells[(j, g, d, "with_gt")] - cells[(j, g, d, "without_gt")]
        for j, g, d, c in keys
        if c == "with_gt"
    }
    a, b = pair
    out["judge_delta"] = {
        (g, d, c): cells[(a, g, d, c)] - cells[(b, g, d, c)] for j, g, d, c in keys if j == a
    }
    pooled = _ratio(full, ["judge"])
    out["pooled_judge"] = {(j,): pooled[j] for j in pooled.index}
    out["pooled_judge_delta"] = {(f"{a}-{b}",): pooled[a] - pooled[b]}
    jc = _ratio(full, ["judge", "condition"])
    out["pooled_gt_gain"] = {(j,): jc[(j, "with_gt")] - jc[(j, "without_gt")] for j in pooled.index}
    return out


def estimates(
    ctx: Any, df: pd.DataFrame, pair: tuple[str, str]
) -> dict[str, dict[tuple[str, ...], tuple[float, float, float]]]:
    """(estimate, CI low, CI high) of every statistic, as the report computes them."""
    a, b = pair
    out: dict[str, dict[tuple[str, ...], tuple[float, float, float]]] = {}
    cells = draws(ctx, df, list(CELL_COLUMNS))
    lo, hi = cells.interval(cells.draws)
    out["cell"] = {
        tuple(map(str, k)): (cells.estimate[i], lo[i], hi[i])
        for i, k in enumerate(cells.keys.itertuples(index=False))
    }
    gain = diff_table(
        draws(ctx, paired(ctx, df, "condition"), list(CELL_COLUMNS)),
        ["judge", "generator", "difficulty"], "condition", "with_gt", "without_gt",
    )  # fmt: skip
    out["gt_gain"] = {
        (r.judge, r.generator, r.difficulty): (r.delta, r.ci_lo, r.ci_hi) for r in gain.itertuples()
    }
    delta = diff_table(
        draws(ctx, paired(ctx, df, "judge"), list(CELL_COLUMNS)),
        ["generator", "difficulty", "condition"], "judge", a, b,
    )  # fmt: skip
    out["judge_delta"] = {
        (r.generator, r.difficulty, r.condition): (r.delta, r.ci_lo, r.ci_hi) for r in delta.itertuples()
    }
    pooled = draws(ctx, df, ["judge"])
    plo, phi = pooled.interval(pooled.draws)
    out["pooled_judge"] = {
        (str(j),): (pooled.estimate[i], plo[i], phi[i]) for i, j in enumerate(pooled.keys["judge"])
    }
    both = df[df["judge"].isin([a, b]).to_numpy()]
    two = draws(ctx, paired(ctx, both, "judge"), ["judge"])
    i, j = two.lookup(judge=a), two.lookup(judge=b)
    (dlo,), (dhi,) = two.interval(two.draws[:, i] - two.draws[:, j])
    out["pooled_judge_delta"] = {(f"{a}-{b}",): (two.estimate[i] - two.estimate[j], dlo, dhi)}
    pg = diff_table(
        draws(ctx, paired(ctx, df, "condition"), ["judge", "condition"]), ["judge"], "condition", "with_gt",
        "without_gt",
    )  # fmt: skip
    out["pooled_gt_gain"] = {(r.judge,): (r.delta, r.ci_lo, r.ci_hi) for r in pg.itertuples()}
    return out


def real_population(rundir: Path) -> pd.DataFrame:
    """A full run's verdicts as the population: the report's slice (the first prompt variant and
    temperature, first trials, with/without GT), one row per verdict with its alignment, in every scoring
    mode: the design sizes a cell on all of them, as a run does; the statistics are read in the report's
    mode (``attrs["mode"]``: strict when present)."""
    cols = ["base_id", "topology", *CELL_COLUMNS, "scoring_mode", "reference", "verdict", "trial",
            "generator_trial", "prompt_format", "cot", "default_mode", "temperature"]  # fmt: skip
    df = RunFolder.open(rundir).judgments(columns=cols)
    mode = "strict" if (df["scoring_mode"] == "strict").any() else df["scoring_mode"].iloc[0]
    first = df.iloc[0]
    keep = (df["trial"] == 0) & (df["generator_trial"] == 0)
    keep &= df["condition"].isin(CONDITIONS)
    for col in ("prompt_format", "cot", "default_mode"):
        keep &= df[col] == first[col]
    df = df[keep.to_numpy()]
    ids = sorted(df["base_id"].astype(str).unique())
    index = {b: i for i, b in enumerate(ids)}
    out = df[["topology", *CELL_COLUMNS, "scoring_mode"]].astype(str).reset_index(drop=True)
    out["scenario"] = [index[b] for b in df["base_id"].astype(str)]
    out["mu"] = (1 - (df["reference"] - df["verdict"]).abs()).to_numpy()
    out.attrs["ids"] = ids
    out.attrs["mode"] = mode
    return out


def _ranks(ids: list[str], order: list[str]) -> np.ndarray:
    """Each scenario's (index into ``ids``) rank in ``order``."""
    position = {b: i for i, b in enumerate(ids)}
    rank = np.empty(len(ids), dtype=np.int64)
    rank[[position[b] for b in order]] = np.arange(len(ids))
    return rank


def _sampled(
    report: pd.DataFrame,
    ids: list[str],
    topo_of: pd.Series,
    order: list[str],
    rank: np.ndarray,
    sizes: dict[Any, int],
    spec: Sampling,
    resamples: int,
    seed: int,
) -> tuple[SimpleNamespace, SimpleNamespace, pd.DataFrame]:
    """The rows a sampled run with these prefix ``sizes`` judged, with the report's design columns, and
    the report's contexts for them: with the finite-population correction, and without (for contrast)."""
    n_row = np.array([sizes[k] for k in zip(*(report[c] for c in CELL_COLUMNS), strict=True)])
    sampled = report[rank[report["scenario"].to_numpy()] < n_row].copy()
    design = Design(order=order, strata=dict(zip(ids, topo_of, strict=True)), cells=sizes, fpc=spec.fpc)
    sampled["base_id"] = [ids[i] for i in sampled["scenario"].to_numpy()]
    for col in ("base_id", *CELL_COLUMNS):
        sampled[col] = sampled[col].astype("category")
    sampled["_rank"] = rank[sampled["scenario"].to_numpy()]
    sampled["design_weight"] = design.weight(sampled["_rank"].to_numpy(), design.cell_lengths(sampled))
    clusters = sampled["base_id"].cat.categories
    ranks = design.ranks_of(pd.Series(clusters.astype(str)))
    common: dict[str, Any] = {"alpha_clusters": design.smallest_cell(), "weight_col": "design_weight"}
    scale = dict(zip(clusters.astype(str), fpc_scale(ranks, design.population), strict=True))
    ctx = SimpleNamespace(
        design=design, boot=ClusterBootstrap(clusters, resamples, seed, scale=scale, **common)
    )
    plain = SimpleNamespace(design=design, boot=ClusterBootstrap(clusters, resamples, seed, **common))
    return ctx, plain, sampled


def replicate(seed: int, args: argparse.Namespace, spec: Sampling) -> dict[str, Any]:
    if args.population_from is not None:
        full, report = args.real, args.real_report
        ids = full.attrs["ids"]
        pair = (args.pair[0], args.pair[1])
    else:
        full = report = population(args.population, np.random.default_rng([args.seed, seed]))
        ids = [f"s{i:05d}" for i in range(args.population)]
        pair = ("careful", "anchored")
    size = len(ids)
    topo_of = report.drop_duplicates("scenario").set_index("scenario")["topology"].sort_index()
    order = stratified_order(ids, list(topo_of), seed)
    rank = _ranks(ids, order)
    sizes, stages = run_design(spec, cell_arrays(full, rank, size), size)
    ctx, plain, sampled = _sampled(report, ids, topo_of, order, rank, sizes, spec, args.resamples, seed)
    truth = truths(report, pair)
    est = estimates(ctx, sampled, pair)
    est_plain = estimates(plain, sampled, pair)
    # the same order's scenarios, judged to the sizes the design chose on another order: prefixes as
    # long, but chosen without looking at these scenarios (no selection by the stopping rule)
    other = stratified_order(ids, list(topo_of), seed + 1_000_000)
    fixed, _ = run_design(spec, cell_arrays(full, _ranks(ids, other), size), size)
    ctx_f, _, sampled_f = _sampled(report, ids, topo_of, order, rank, fixed, spec, args.resamples, seed)
    cells_f = draws(ctx_f, sampled_f, list(CELL_COLUMNS))
    lo_f, hi_f = cells_f.interval(cells_f.draws)
    est_fixed = {
        tuple(map(str, k)): (cells_f.estimate[i], lo_f[i], hi_f[i])
        for i, k in enumerate(cells_f.keys.itertuples(index=False))
    }
    per_cell = len(sizes) * size
    return {
        "truth": truth,
        "est": est,
        "plain": est_plain,
        "fixed": {"cell": est_fixed},
        "share_judge": sum(sizes.values()) / per_cell,
        "share_predict": sum(
            max(n for (j, g, d, c), n in sizes.items() if (g, d) == gd)
            for gd in {(g, d) for (_, g, d, _) in sizes}
        )
        / (len({(g, d) for (_, g, d, _) in sizes}) * size),
        "stages": stages,
        "sizes": sizes,
    }


def part1(args: argparse.Namespace) -> None:
    spec = Sampling(target_ci_pp=args.target, pilot=args.pilot, fpc=True)
    t0 = time.perf_counter()
    reps = []
    for s in range(args.seeds):
        reps.append(replicate(s, args, spec))
        if (s + 1) % 25 == 0:
            print(f"  {s + 1} replicates, {time.perf_counter() - t0:.0f} s", flush=True)
    rows = []
    for family in reps[0]["truth"]:
        hits, plain_hits, errs, halves = [], [], [], []
        for rep in reps:
            for key, true in rep["truth"][family].items():
                est, lo, hi = rep["est"][family][key]
                _, plo, phi = rep["plain"][family][key]
                hits.append(lo <= true <= hi)
                plain_hits.append(plo <= true <= phi)
                errs.append(est - true)
                halves.append((hi - lo) / 2)
        e = np.asarray(errs)
        se = e.std(ddof=1) / np.sqrt(len(e))
        rows.append(
            {
                "statistic": family,
                "CIs": len(hits),
                "cover % (report CI)": 100 * np.mean(hits),
                "cover % (no FPC)": 100 * np.mean(plain_hits),
                "bias (pp)": 100 * e.mean(),
                "bias/SE": e.mean() / se if se > 0 else np.nan,
                "mean half (pp)": 100 * np.mean(halves),
                "max half (pp)": 100 * np.max(halves),
            }
        )
    table = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    print(
        f"\nPart 1: {args.seeds} replicates; "
        + (
            f"the verdicts of the full run {args.population_from} ({args.population:,} scenarios, "
            f"{len(reps[0]['sizes'])} cells) as the population, a fresh order each replicate"
            if args.population_from is not None
            else f"each a fresh population of {args.population:,} scenarios × 24 cells (2 judges × 2 "
            "generators × 3 difficulties × with/without GT)"
        )
        + f"; target ±{args.target:g} pp, "
        f"pilot {args.pilot}; {args.resamples} resamples. Monte-Carlo SE of a 95 % coverage over "
        f"{args.seeds} replicates: ±{100 * np.sqrt(0.95 * 0.05 / args.seeds):.1f} pp (per CI; families "
        "pool several CIs per replicate, which are correlated)."
    )
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    shares = np.array([r["share_judge"] for r in reps])
    preds = np.array([r["share_predict"] for r in reps])
    stages = np.array([r["stages"] for r in reps])
    sizes = np.array([n for r in reps for n in r["sizes"].values()])
    cells_half = np.array([(hi - lo) / 2 for r in reps for (_, lo, hi) in r["est"]["cell"].values()])
    print(
        f"\njudge units used: {100 * shares.mean():.1f} % of the full grid (min {100 * shares.min():.1f}, "
        f"max {100 * shares.max():.1f}); predictions {100 * preds.mean():.1f} %; stages "
        f"{stages.min()}–{stages.max()} (mean {stages.mean():.2f}); cell prefixes {sizes.min()}–{sizes.max()}"
        f" (median {int(np.median(sizes))}) of {args.population:,}"
    )
    print(
        f"headline-cell half-widths: mean {100 * cells_half.mean():.3f} pp, 99th percentile "
        f"{100 * np.quantile(cells_half, 0.99):.3f} pp, largest {100 * cells_half.max():.3f} pp; above the "
        f"±{args.target:g} pp target: {100 * np.mean(cells_half > args.target / 100):.2f} % of "
        f"{cells_half.size:,} cell CIs"
    )
    by_growth: dict[str, list[bool]] = {"stopped at the pilot": [], "grew": []}
    for r in reps:
        for key, true in r["truth"]["cell"].items():
            _, lo, hi = r["est"]["cell"][key]
            grew = r["sizes"][key] > args.pilot
            by_growth["grew" if grew else "stopped at the pilot"].append(lo <= true <= hi)
    print(
        "cell coverage by what the stopping rule did: "
        + "; ".join(f"{k} {100 * np.mean(v):.2f} % of {len(v):,}" for k, v in by_growth.items() if v)
    )
    # the Monte-Carlo SE of a coverage from the spread of the replicates' own coverages (the CIs of one
    # replicate share its order and population, so they are not independent)
    own = np.array([_cover(r, "est") for r in reps])
    fixed = np.array([_cover(r, "fixed") for r in reps])
    diff = own - fixed
    print(
        f"cell coverage {100 * own.mean():.2f} % ± {100 * _se(own):.2f} (SE over replicates); with the "
        f"sizes the design chose on another order (as long, but not chosen on these scenarios): "
        f"{100 * fixed.mean():.2f} % ± {100 * _se(fixed):.2f}; the stopping rule's selection: "
        f"{100 * diff.mean():+.2f} pp ± {100 * _se(diff):.2f} (paired)"
    )
    pooled_same = np.mean(
        [_order(r["est"]["pooled_judge"]) == _order(r["truth"]["pooled_judge"]) for r in reps]
    )
    cell_same = np.mean([same for r in reps for same in _cell_orders_equal(r)])
    print(
        f"ranking of the judges: the pooled order equals the full grid's in {100 * pooled_same:.1f} % of "
        f"replicates; the order within a generator × difficulty × condition in {100 * cell_same:.1f} % of "
        "them (ties in the full grid, e.g. a condition-blind judge's with and without GT, count as equal "
        "only when the sample ties them too)"
    )


def _cover(rep: dict[str, Any], which: str) -> float:
    """The share of a replicate's headline cells whose full-grid value lies in the CI of ``which``
    ("est": the design's own sizes; "fixed": the sizes chosen on another order)."""
    cis = rep[which]["cell"]
    return float(np.mean([cis[k][1] <= true <= cis[k][2] for k, true in rep["truth"]["cell"].items()]))


def _se(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else float("nan")


def _order(values: dict[tuple[str, ...], Any]) -> list[tuple[str, ...]]:
    """Keys by value, highest first (a value may be an (estimate, lo, hi) triple)."""
    num = {k: (v[0] if isinstance(v, tuple) else v) for k, v in values.items()}
    return sorted(num, key=lambda k: (-num[k], k))


def _cell_orders_equal(rep: dict[str, Any]) -> list[bool]:
    groups: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for key in rep["truth"]["cell"]:
        groups.setdefault(key[1:], []).append(key)
    return [
        _order({k: rep["est"]["cell"][k] for k in keys}) == _order({k: rep["truth"]["cell"][k] for k in keys})
        for keys in groups.values()
    ]


# ------------------------------------------------------------------------------------------- part 2
PIPELINE = """name: bench-sampling
dataset: {data}
difficulties: [easy, medium, hard]
generators: [sim/weak, sim/mid, sim/strong, sim/frontier, sim/perfect]
judges: [simjudge/careful, simjudge/anchored, baseline/rule]
conditions: [with_gt, without_gt]
scoring: both
seed: 0
"""


def _agentjudge(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentjudge", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def _pipeline(work: Path, data: Path, target: float | None, seed: int) -> Path:
    text = PIPELINE.format(data=data.resolve())
    if target is not None:
        text += f"sampling: {{target_ci_pp: {target}, seed: {seed}}}\n"
    path = work / (f"sampled-{seed}.yaml" if target is not None else "full.yaml")
    path.write_text(text)
    return path


def _ranking(rundir: Path) -> list[str]:
    return list(pd.read_csv(rundir / "report" / "tables" / "first_ranking.csv")["judge"])


def _cell_rankings(rundir: Path) -> dict[tuple[str, ...], tuple[str, ...]]:
    t = pd.read_csv(rundir / "report" / "tables" / "headline_cells.csv")
    out = {}
    for key, part in t.groupby(["generator", "difficulty", "condition"]):
        out[tuple(key)] = tuple(part.sort_values("align", ascending=False)["judge"])
    return out


def part2(args: argparse.Namespace) -> None:
    work = (args.work or Path(tempfile.mkdtemp(prefix="bench-sampling-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, AGENTJUDGE_CACHE=str(work / "calls.sqlite"))
    full = work / "full"
    if not (full / "report" / "tables" / "headline_cells.csv").exists():
        for cmd in (["run", str(_pipeline(work, args.full_split, None, 0)), "--out", str(full)],
                    ["report", str(full)]):  # fmt: skip
            done = _agentjudge(cmd, env, work)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    truth = pd.read_csv(full / "report" / "tables" / "headline_cells.csv")
    k = list(CELL_COLUMNS)
    ranking, cell_ranks = _ranking(full), _cell_rankings(full)
    rows = []
    for seed in range(args.runs):
        rundir = work / f"sampled-{seed}"
        t0 = time.perf_counter()
        done = _agentjudge(
            ["run", str(_pipeline(work, args.full_split, args.target, seed)), "--out", str(rundir)], env, work
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        run_s = time.perf_counter() - t0
        done = _agentjudge(["report", str(rundir)], env, work)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        record = RunFolder.open(rundir).sampling()
        assert record is not None, f"{rundir}: no sampling.json"
        cells = pd.read_csv(rundir / "report" / "tables" / "headline_cells.csv")
        m = cells.merge(truth[[*k, "align"]].rename(columns={"align": "full"}), on=k)
        inside = (m["ci_lo"] <= m["full"]) & (m["full"] <= m["ci_hi"])
        half = 100 * (m["ci_hi"] - m["ci_lo"]) / 2
        sampled_cells = _cell_rankings(rundir)
        rows.append(
            {
                "seed": seed,
                "judge units %": 100 * record.judge_units.planned / record.judge_units.full_grid,
                "predictions %": 100 * record.predict_units.planned / record.predict_units.full_grid,
                "stages": record.stages,
                "largest half (pp)": half.max(),
                "cells inside %": 100 * inside.mean(),
                "ranking equal": _ranking(rundir) == ranking,
                "cell rankings equal %": 100
                * np.mean([sampled_cells[c] == r for c, r in cell_ranks.items()]),
                "run s": run_s,
            }
        )
        print(pd.DataFrame(rows[-1:]).to_string(index=False, float_format=lambda v: f"{v:.2f}"), flush=True)
    t = pd.DataFrame(rows)
    print(
        f"\nPart 2: the full split ({args.full_split}), 5 simulated generators × {{simjudge/careful, "
        f"simjudge/anchored, baseline/rule}} × 3 difficulties × with/without GT = 90 cells; target "
        f"±{args.target:g} pp; {args.runs} sampled runs (sampling seeds 0..{args.runs - 1}); load "
        f"{os.getloadavg()}"
    )
    print(t.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    inside = t["cells inside %"]
    print(
        f"mean judge units used {t['judge units %'].mean():.1f} % (goal <= 30 %); largest half-width over "
        f"all runs {t['largest half (pp)'].max():.3f} pp (goal <= {args.target:g}); cells inside the "
        f"sampled CI {inside.mean():.1f} % on average (± {_se(inside.to_numpy()):.1f}, the SE over runs), "
        f"{inside.min():.1f} % at worst (goal >= 94 %); judge ranking equal to the full grid's in "
        f"{int(t['ranking equal'].sum())} of {len(t)} runs; per-cell rankings equal in "
        f"{t['cell rankings equal %'].mean():.1f} % of cells"
    )
    if args.resume:
        part3(args, work, env)


def _stage_of(store: Path) -> tuple[int, int]:
    """(stages decided so far, judge units stored) of a running sampled run."""
    try:
        meta = store_meta(store)
        units = store_units(store, ["stage"], [("stage", "==", "judge")])
    except sqlite3.Error:
        return 0, 0
    if meta is None or units is None:
        return 0, 0
    plan = meta.get("sampling_plan")
    return (len(json.loads(plan)["history"]) if plan else 0), len(units)


def part3(args: argparse.Namespace, work: Path, env: dict[str, str]) -> None:
    reference = work / "sampled-0"
    rundir = work / "resumed-0"
    pipeline = work / "sampled-0.yaml"
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentjudge", "run", str(pipeline), "--out", str(rundir)],
        cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    pilot_units = None
    while proc.poll() is None:
        stages, units = _stage_of(rundir / "run.sqlite")
        if stages >= 2 and pilot_units is None:
            pilot_units = units
        if stages >= 2 and pilot_units is not None and units > pilot_units + 2_000:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait()
    stages, units = _stage_of(rundir / "run.sqlite")
    signal_txt = -proc.returncode if proc.returncode < 0 else "none: the run ended first"
    print(
        f"\nPart 3: killed (signal {signal_txt}) in stage {stages} with {units:,} judge units stored; "
        "re-running the same command"
    )
    done = _agentjudge(["run", str(pipeline), "--out", str(rundir)], env, work)
    print(f"re-run exit {done.returncode}")
    for name in ("predictions.parquet", "scores.parquet", "judgments.parquet", "sampling.json"):
        same = (rundir / name).read_bytes() == (reference / name).read_bytes()
        print(f"  {name}: {'identical' if same else 'DIFFERENT'} to the uninterrupted run's")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=200, help="part 1 replicates (0: skip part 1)")
    ap.add_argument("--population", type=int, default=3808)
    ap.add_argument("--target", type=float, default=1.0, help="target CI half-width, pp")
    ap.add_argument("--pilot", type=int, default=200)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--population-from", type=Path, default=None,
        help="part 1 on a full run folder's verdicts (the same population every replicate; only the "
        "order changes) instead of simulated ones",
    )  # fmt: skip
    ap.add_argument("--pair", nargs=2, default=["simjudge/careful", "simjudge/anchored"],
                    help="with --population-from: the two judges of the judge-vs-judge deltas")  # fmt: skip
    ap.add_argument("--full-split", type=Path, default=None, help="part 2 on this records.jsonl")
    ap.add_argument("--runs", type=int, default=10, help="part 2 sampled runs")
    ap.add_argument("--resume", action="store_true", help="part 3 (needs --full-split)")
    ap.add_argument("--work", type=Path, default=None, help="part 2 run folders (default: a temp dir)")
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()}; cores: {os.cpu_count()}")
    if args.seeds > 0:
        if args.population_from is not None:
            args.real = real_population(args.population_from)
            args.real_report = args.real[(args.real["scoring_mode"] == args.real.attrs["mode"]).to_numpy()]
            args.population = len(args.real.attrs["ids"])
        part1(args)
    if args.full_split is not None:
        part2(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
