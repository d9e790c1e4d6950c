"""Do the report's estimators find planted effects, and do their 95 % CIs cover the truth 95 % of the time?

Method. A population of base scenarios is simulated: each scenario has a latent quality shared by its
difficulties, generators and metrics, and a latent "hard for judges" z shared by every simulated judge
(so verdicts of one scenario are correlated, as with real judges). References are drawn from it; verdicts
of two simulated judges (``simjudge`` profiles ``careful`` and ``anchored``) come from
``agentjudge.judges.simjudge.planted_verdicts`` — the very function the quickstart's simulated judges use —
with every planted effect scaled by an effect level k ∈ {0, 1, 2}:
gt_gain = 0.25k, anchoring pull = 0.2k, temperature noise = 0.05k per unit T, CoT error cut = 0.2k,
free-form error increase = 0.4k, 0.5-default hedging = 0.25k.

For each replicate (a fresh sample of ``--clusters`` base scenarios), the report's estimators (the shared
cluster bootstrap ``ClusterBootstrap.ratio`` + paired differences, exactly as ``analysis/`` uses them) give
a point estimate and a 95 % percentile CI. The truth of each statistic is the same estimand on a population
of ``--population`` scenarios. Printed per statistic × effect level: the true value, bias (mean estimate −
truth), coverage of the cluster-bootstrap CI, and — for contrast — coverage of a naive row-level bootstrap
(resampling verdict rows as if independent), which is what clustering fixes.

Run: python bench/bench_estimators.py [--reps 300] [--clusters 60] [--resamples 500] [--seed 0]
(default ≈ 2–4 minutes on 2 shared cores). Goal: cluster coverage within 93–97 %.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from agentjudge.judges.simjudge import Draws, load_profiles, planted_verdicts
from agentjudge.stats import ClusterBootstrap, percentile_ci
from agentjudge.stats.align import snap

GENERATORS = {"weak": 0.55, "strong": 0.85}  # P(reference = 1) on easy scenarios of average quality
DIFF_PENALTY = np.array([0.0, 0.1, 0.2])  # easy, medium, hard
METRIC_N = 4
# (condition, cot, freeform, default05, temperature): the cells the statistics below need
CELLS = {
    "without": ("without_gt", False, False, False, np.nan),
    "with": ("with_gt", False, False, False, np.nan),
    "swapped": ("swapped_gt", False, False, False, np.nan),
    "temp1": ("without_gt", False, False, False, 1.0),
    "cot": ("without_gt", True, False, False, np.nan),
    "free": ("without_gt", False, True, False, np.nan),
    "d05": ("without_gt", False, False, True, np.nan),
}


def profiles_at(k: int) -> dict[str, object]:
    base = load_profiles()
    out = {}
    for name in ("careful", "anchored"):
        p = base[name]
        out[name] = p.model_copy(
            update={
                "gt_gain": 0.25 * k,
                "anchoring": 0.2 * k,
                "temperature_noise": 0.05 * k,
                "default_temperature": 0.0,
                "cot_gain": 0.2 * k,
                "freeform_penalty": 0.4 * k,
                "hedge_05": 0.25 * k,
                "parse_failure": {"json": 0.01, "freeform": 0.03},
            }
        )
    return out


def simulate(n: int, k: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` base scenarios × 3 difficulties × generators × 4 metrics, every cell, both judges."""
    profiles = profiles_at(k)
    quality = rng.normal(0, 1.0, n)  # scenario quality (shared by its difficulties/generators/metrics)
    z = rng.standard_normal(n)  # scenario hardness for judges (shared by every judge)
    shape = (n, 3, len(GENERATORS), METRIC_N)
    cid = np.broadcast_to(np.arange(n)[:, None, None, None], shape).ravel()
    diff = np.broadcast_to(np.arange(3)[None, :, None, None], shape).ravel()
    gen = np.broadcast_to(np.arange(len(GENERATORS))[None, None, :, None], shape).ravel()
    met = np.broadcast_to(np.arange(METRIC_N)[None, None, None, :], shape).ravel()
    p_ok = np.array(list(GENERATORS.values()))[gen] - DIFF_PENALTY[diff]
    logit = np.log(p_ok / (1 - p_ok)) + 0.8 * quality[cid]
    perfect = rng.random(cid.size) < 1 / (1 + np.exp(-logit))
    ref = np.where(perfect, 1.0, np.round(rng.random(cid.size) * 4) / 4 * 0.9)
    truth = snap(ref)
    swapped_level = snap(rng.beta(1.0, 3.0, cid.size))  # overlap with another record's GT: mostly low
    frames = []
    for judge, prof in profiles.items():
        d = Draws.sample(rng, cid.size)  # common random numbers across cells (as the judge does)
        for cell, (cond, cot, free, d05, temp) in CELLS.items():
            shown = cond != "without_gt"
            v = planted_verdicts(
                prof,  # type: ignore[arg-type]
                truth,
                met,
                diff,
                z[cid],
                np.full(cid.size, shown),
                truth if cond == "with_gt" else swapped_level,
                np.full(cid.size, cot),
                np.full(cid.size, free),
                np.full(cid.size, d05),
                np.full(cid.size, temp),
                d,
            )
            frames.append(
                pd.DataFrame(
                    {
                        "base_id": cid,
                        "row": np.arange(cid.size),
                        "difficulty": diff,
                        "metric": met,
                        "judge": judge,
                        "cell": cell,
                        "mu": 1 - np.abs(ref - v),
                        "verdict": v,
                        "ref": ref,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def statistics(
    df: pd.DataFrame, boot: ClusterBootstrap, cluster_col: str
) -> dict[str, tuple[float, float, float]]:
    """(estimate, ci_lo, ci_hi) of every statistic, with the report's paired cluster bootstrap."""
    gd = boot.ratio(df, ["judge", "cell"], "mu", cluster_col=cluster_col)
    keys = {
        (str(j), str(c)): i for i, (j, c) in enumerate(zip(gd.keys["judge"], gd.keys["cell"], strict=True))
    }
    out: dict[str, tuple[float, float, float]] = {}

    def diff(name: str, a: tuple[str, str], b: tuple[str, str]) -> None:
        i, j = keys[a], keys[b]
        lo, hi = percentile_ci(gd.draws[:, i] - gd.draws[:, j])
        out[name] = (gd.estimate[i] - gd.estimate[j], lo[0], hi[0])

    i = keys[("careful", "without")]
    lo, hi = percentile_ci(gd.draws[:, i])
    out["alignment (careful, without GT)"] = (gd.estimate[i], lo[0], hi[0])
    diff("GT gain (careful)", ("careful", "with"), ("careful", "without"))
    diff("anchoring: swapped − true GT (anchored)", ("anchored", "swapped"), ("anchored", "with"))
    diff("temperature 1.0 − default (careful)", ("careful", "temp1"), ("careful", "without"))
    diff("CoT − none (careful)", ("careful", "cot"), ("careful", "without"))
    diff("free-form − JSON (careful)", ("careful", "free"), ("careful", "without"))
    diff("0.5-default − 1.0-default (anchored)", ("anchored", "d05"), ("anchored", "without"))
    diff("guide margin: careful − anchored (without GT)", ("careful", "without"), ("anchored", "without"))
    # soft jury (mean verdict of the two judges) − best single judge, without GT
    base = df[df["cell"] == "without"]
    a, b = base[base["judge"] == "careful"], base[base["judge"] == "anchored"]  # same row order (simulate)
    jury_verdict = (a["verdict"].to_numpy() + b["verdict"].to_numpy()) / 2  # NaN if either juror failed
    jury = a[["base_id", "row", "cell"]].assign(
        judge="jury", mu=1 - np.abs(a["ref"].to_numpy() - jury_verdict)
    )
    both = pd.concat([base[["base_id", "row", "judge", "cell", "mu"]], jury], ignore_index=True)
    if cluster_col == "row_id":
        both["row_id"] = both["base_id"].astype(str) + ":" + both["row"].astype(str)
    g2 = boot.ratio(both, ["judge"], "mu", cluster_col=cluster_col)
    names = list(g2.keys["judge"].astype(str))
    best = max(("careful", "anchored"), key=lambda j: g2.estimate[names.index(j)])
    i, j = names.index("jury"), names.index(best)
    lo, hi = percentile_ci(g2.draws[:, i] - g2.draws[:, j])
    out["soft jury − best judge (without GT)"] = (g2.estimate[i] - g2.estimate[j], lo[0], hi[0])
    return out


def truths(k: int, population: int, seed: int) -> dict[str, float]:
    """The estimands on a large population (the Monte-Carlo error is ~1/sqrt(population) of one sample's)."""
    df = simulate(population, k, np.random.default_rng(10_000 + seed + k))
    boot = ClusterBootstrap([str(i) for i in range(population)], resamples=1, seed=0)
    df["base_id"] = df["base_id"].astype(str)
    return {name: est for name, (est, _, _) in statistics(df, boot, "base_id").items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--clusters", type=int, default=60)
    ap.add_argument("--resamples", type=int, default=500)
    ap.add_argument("--population", type=int, default=4_000)
    ap.add_argument("--levels", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--row-bootstrap-reps", type=int, default=100, help="replicates that also get a row CI")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = []
    for k in args.levels:
        truth = truths(k, args.population, args.seed)
        hits: dict[str, list[float]] = {n: [] for n in truth}
        ests: dict[str, list[float]] = {n: [] for n in truth}
        widths: dict[str, list[float]] = {n: [] for n in truth}
        naive: dict[str, list[float]] = {n: [] for n in truth}
        rng = np.random.default_rng([args.seed, k])
        for rep in range(args.reps):
            df = simulate(args.clusters, k, rng)
            df["base_id"] = df["base_id"].astype(str)
            boot = ClusterBootstrap([str(i) for i in range(args.clusters)], args.resamples, seed=rep)
            for name, (est, lo, hi) in statistics(df, boot, "base_id").items():
                ests[name].append(est)
                widths[name].append(hi - lo)
                hits[name].append(float(lo <= truth[name] <= hi))
            if rep < args.row_bootstrap_reps:
                df["row_id"] = df["base_id"] + ":" + df["row"].astype(str)
                rboot = ClusterBootstrap(df["row_id"].unique(), args.resamples, seed=rep)
                for name, (_, lo, hi) in statistics(df, rboot, "row_id").items():
                    naive[name].append(float(lo <= truth[name] <= hi))
        for name in truth:
            e = np.asarray(ests[name])
            rows.append(
                {
                    "statistic": name,
                    "effect level k": k,
                    "true value (pp)": 100 * truth[name],
                    "bias (pp)": 100 * (e.mean() - truth[name]),
                    "bias / SE": (e.mean() - truth[name]) / (e.std(ddof=1) / np.sqrt(len(e))),
                    "coverage cluster CI": 100 * np.mean(hits[name]),
                    "coverage row CI": 100 * np.mean(naive[name]) if naive[name] else np.nan,
                    "mean CI width (pp)": 100 * float(np.mean(widths[name])),
                }
            )
    table = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    pd.set_option("display.max_colwidth", 48)
    print(
        f"{args.reps} replicates × {args.clusters} base scenarios per effect level; {args.resamples} cluster "
        f"resamples; truth from {args.population:,} scenarios; row-CI coverage over the first "
        f"{min(args.row_bootstrap_reps, args.reps)} replicates. Monte-Carlo SE of a coverage of 95 %: "
        f"±{100 * np.sqrt(0.95 * 0.05 / args.reps):.1f} pp."
    )
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    bad = table[(table["coverage cluster CI"] < 93) | (table["coverage cluster CI"] > 97)]
    print(
        f"\ncells outside 93–97 % (cluster CI): {len(bad)} of {len(table)}; wall {time.perf_counter() - t0:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
