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
from agentjudge.stats.bootstrap import expanded_alpha

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


def simulate(n: int, k: int, rng: np.random.Generator, crn: bool = False) -> pd.DataFrame:
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
        d = Draws.sample(rng, cid.size)
        for cell, (cond, cot, free, d05, temp) in CELLS.items():
            if not crn:  # independent mistakes in every cell: the harder case for a paired CI
                d = Draws.sample(rng, cid.size)
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
) -> dict[str, tuple[float, np.ndarray]]:
    """(estimate, bootstrap draws) of every statistic, with the report's paired cluster bootstrap."""
    gd = boot.ratio(df, ["judge", "cell"], "mu", cluster_col=cluster_col)
    keys = {
        (str(j), str(c)): i for i, (j, c) in enumerate(zip(gd.keys["judge"], gd.keys["cell"], strict=True))
    }
    out: dict[str, tuple[float, np.ndarray]] = {}

    def diff(name: str, a: tuple[str, str], b: tuple[str, str]) -> None:
        i, j = keys[a], keys[b]
        out[name] = (gd.estimate[i] - gd.estimate[j], gd.draws[:, i] - gd.draws[:, j])

    i = keys[("careful", "without")]
    out["alignment (careful, without GT)"] = (gd.estimate[i], gd.draws[:, i])
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
    out["soft jury − best judge (without GT)"] = (
        g2.estimate[i] - g2.estimate[j],
        g2.draws[:, i] - g2.draws[:, j],
    )
    return out


def truths(k: int, population: int, batches: int, seed: int, crn: bool) -> dict[str, tuple[float, float]]:
    """(estimand, its Monte-Carlo SE) from ``batches`` independent populations of ``population`` scenarios."""
    runs: dict[str, list[float]] = {}
    for b in range(batches):
        df = simulate(population, k, np.random.default_rng([10_000 + seed, k, b]), crn)
        df["base_id"] = df["base_id"].astype(str)
        boot = ClusterBootstrap([str(i) for i in range(population)], resamples=1, seed=0)
        for name, (est, _) in statistics(df, boot, "base_id").items():
            runs.setdefault(name, []).append(est)
    return {n: (float(np.mean(v)), float(np.std(v, ddof=1) / np.sqrt(len(v)))) for n, v in runs.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--clusters", type=int, default=60)
    ap.add_argument("--resamples", type=int, default=500)
    ap.add_argument("--population", type=int, default=4_000, help="scenarios per truth batch")
    ap.add_argument("--batches", type=int, default=5, help="truth batches (truth = their mean)")
    ap.add_argument("--levels", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--row-bootstrap-reps", type=int, default=100, help="replicates that also get a row CI")
    ap.add_argument("--crn", action="store_true", help="common random numbers across cells (as the judge)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    alphas = {"percentile": 0.05, "expanded": expanded_alpha(args.clusters)}
    rows = []
    for k in args.levels:
        truth = truths(k, args.population, args.batches, args.seed, args.crn)
        ests: dict[str, list[float]] = {n: [] for n in truth}
        hits: dict[tuple[str, str], list[float]] = {}
        widths: dict[str, list[float]] = {n: [] for n in truth}
        rng = np.random.default_rng([args.seed, k])
        for rep in range(args.reps):
            df = simulate(args.clusters, k, rng, args.crn)
            df["base_id"] = df["base_id"].astype(str)
            boot = ClusterBootstrap([str(i) for i in range(args.clusters)], args.resamples, seed=rep)
            for name, (est, draws) in statistics(df, boot, "base_id").items():
                ests[name].append(est)
                for label, alpha in alphas.items():
                    lo, hi = percentile_ci(draws, alpha)
                    hits.setdefault((name, label), []).append(float(lo[0] <= truth[name][0] <= hi[0]))
                    if label == "expanded":
                        widths[name].append(float(hi[0] - lo[0]))
            if rep < args.row_bootstrap_reps:
                df["row_id"] = df["base_id"] + ":" + df["row"].astype(str)
                rboot = ClusterBootstrap(df["row_id"].unique(), args.resamples, seed=rep)
                for name, (_, draws) in statistics(df, rboot, "row_id").items():
                    lo, hi = percentile_ci(draws)
                    hits.setdefault((name, "row"), []).append(float(lo[0] <= truth[name][0] <= hi[0]))
        for name, (true, true_se) in truth.items():
            e = np.asarray(ests[name])
            se = np.sqrt(e.var(ddof=1) / len(e) + true_se**2)
            rows.append(
                {
                    "statistic": name,
                    "k": k,
                    "true (pp)": 100 * true,
                    "bias (pp)": 100 * (e.mean() - true),
                    "bias/SE": (e.mean() - true) / se if se > 0 else np.nan,
                    "cover % (report CI)": 100 * np.mean(hits[(name, "expanded")]),
                    "cover % (plain pct)": 100 * np.mean(hits[(name, "percentile")]),
                    "cover % (row CI)": 100 * np.mean(hits.get((name, "row"), [np.nan])),
                    "CI width (pp)": 100 * float(np.mean(widths[name])),
                }
            )
    table = pd.DataFrame(rows)
    pd.set_option("display.width", 220)
    pd.set_option("display.max_colwidth", 46)
    print(
        f"{args.reps} replicates × {args.clusters} base scenarios per effect level k; "
        f"{args.resamples} cluster resamples; truth from {args.batches} × {args.population:,} scenarios; "
        f"{'common' if args.crn else 'independent'} random numbers across cells.\nReport CI = expanded "
        f"percentile (tails {100 * alphas['expanded'] / 2:.2f} %); plain pct = 2.5/97.5 percentiles; "
        f"row CI = plain percentile resampling verdict rows (first "
        f"{min(args.row_bootstrap_reps, args.reps)} replicates). "
        f"Monte-Carlo SE of a 95 % coverage: ±{100 * np.sqrt(0.95 * 0.05 / args.reps):.1f} pp."
    )
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    bad = table[(table["cover % (report CI)"] < 93) | (table["cover % (report CI)"] > 97)]
    print(
        f"\ncells outside 93–97 % (report CI): {len(bad)} of {len(table)}; "
        f"wall {time.perf_counter() - t0:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
