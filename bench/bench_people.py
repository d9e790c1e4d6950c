"""How many labels does a judge's agreement with people need, direct vs prediction-powered (PPI++)?

Method. One planted population shaped like the paper's (``tests/planted_people.py``): 3,808 base scenarios
of six topologies, each with three difficulties and one generator output per difficulty, four metric
verdicts per output; a person who agrees with the reference on ~93 % of metric verdicts on the sample
design below (the paper's 92.7 %), a judge that agrees with the reference on ~85 % of them. The quantity:
the judge's agreement with people, Y = 1 − |h − v|, over every output's four metrics (pooled), and per
metric.

For each number of labelled outputs n (50, 100, 200, 400) and each replicate, the labels are drawn by
``human-sample``'s own function (``select_sample``: per topology 14 imperfect / 6 perfect outputs of 20,
all difficulties) and the estimators are the ones ``agentjudge.stats.ppi_table`` computes: the direct
estimate with its cluster bootstrap (1,000 resamples over base scenarios, expanded percentile) and PPI++
with the reference as proxy (f = 1 − |p − v|), both weighted by the inverse of each output's inclusion
probability (n_h / N_h per topology × imperfect stratum). Printed: the mean 95 % half-width of each,
their ratio, the coverage of the population's true agreement, the mean error, and the labels each needs
for ±3 pp from that n taken as a pilot (median over replicates), with their ratio. Then the check of the
budget: labelling the number the n = 100 pilots asked for, the half-width actually reached.

Run: python bench/bench_people.py [--reps 200] [--scenarios 3808] [--seed 0] [--target 3]
(about 3–5 minutes on 2 shared cores with the defaults).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from planted_people import Planted, plant  # noqa: E402

from agentjudge.stats import ClusterBootstrap, ppi_table, stratum_inclusion  # noqa: E402
from agentjudge.stats.label_sample import select_sample  # noqa: E402
from agentjudge.types import DIFFICULTIES, METRICS, TOPOLOGIES  # noqa: E402

UNIT = ["record_id", "generator", "generator_trial"]
SIZES = (50, 100, 200, 400)


def frames(pl: Planted) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(outputs: one row per output with the columns ``select_sample`` reads; items: one row per output ×
    metric with the person's label Y (filled in per replicate), the proxy f and the base scenario)."""
    _, s, d, g, m = pl.p.shape
    sid, did, gid = (a.ravel() for a in np.meshgrid(np.arange(s), np.arange(d), np.arange(g), indexing="ij"))
    p = pl.p[0].reshape(-1, m)
    outputs = pd.DataFrame(
        {
            "record_id": [f"s{i:05d}-{DIFFICULTIES[j]}" for i, j in zip(sid, did, strict=True)],
            "base_id": [f"s{i:05d}" for i in sid],
            "topology": [TOPOLOGIES[t] for t in pl.topology[sid]],
            "difficulty": [DIFFICULTIES[j] for j in did],
            "generator": [f"gen{k}" for k in gid],
            "generator_trial": 0,
            **{f"p_{metric}": p[:, k] for k, metric in enumerate(METRICS)},
        }
    )
    outputs["row"] = np.arange(len(outputs))
    items = outputs.loc[np.repeat(outputs.index, m), ["row", "base_id", *UNIT]].reset_index(drop=True)
    items["judge"] = "judge"
    items["metric"] = np.tile(list(METRICS), len(outputs))
    items["h_agree"] = pl.y[0].reshape(-1)
    items["f"] = pl.f[0].reshape(-1)
    return outputs, items


def one_draw(outputs: pd.DataFrame, items: pd.DataFrame, n: int, seed: int, target: float) -> pd.DataFrame:
    """The human-sample draw of n outputs with this seed, and ``ppi_table``'s rows (pooled and per metric)."""
    sample = select_sample(outputs, n, seed, difficulty=None)
    labelled = np.zeros(len(outputs), dtype=bool)
    labelled[sample["row"].to_numpy()] = True
    imperfect = (outputs[[f"p_{m}" for m in METRICS]].to_numpy() < 1).any(axis=1)
    strata = outputs["topology"].to_numpy() + np.where(imperfect, "/imperfect", "/perfect")
    pi = stratum_inclusion(strata, labelled)
    lab_items = labelled[items["row"].to_numpy()]
    frame = items.assign(
        y=np.where(lab_items, items["h_agree"], np.nan), pi=np.where(lab_items, pi[items["row"]], np.nan)
    )
    boot = ClusterBootstrap(frame.loc[lab_items, "base_id"].unique(), resamples=1000, seed=seed)
    return ppi_table(
        frame, ["judge", "metric"], inclusion="pi", pool="metric", unit=UNIT, target=target, boot=boot
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=200, help="replicates (label draws) per n")
    ap.add_argument("--scenarios", type=int, default=3808)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", type=float, default=3.0, help="half-width of the label budget, in pp")
    args = ap.parse_args()
    target = args.target / 100
    t0 = time.perf_counter()
    pl = plant(1, args.scenarios, seed=args.seed)
    outputs, items = frames(pl)
    truth = {m: float(items.loc[items["metric"] == m, "h_agree"].mean()) for m in METRICS}
    truth["all"] = float(items["h_agree"].mean())
    imperfect = pl.imperfect[0].ravel()
    agree_hp = (pl.h == pl.p)[0].reshape(-1, len(METRICS))
    design = 0.7 * agree_hp[imperfect].mean() + 0.3 * agree_hp[~imperfect].mean()
    param = 0.7 * agree_hp[imperfect, 1].mean() + 0.3 * agree_hp[~imperfect, 1].mean()
    print(
        f"population: {args.scenarios} scenarios × 3 difficulties × 1 output × 4 metrics = {len(items)} "
        f"verdicts; imperfect outputs {100 * imperfect.mean():.1f} %\n"
        f"  reference = person on {100 * agree_hp.mean():.1f} % of verdicts over the population, "
        f"{100 * design:.1f} % on the sample design (14/6 per topology; the paper's 92.7 %); "
        f"parameters {100 * param:.1f} %\n"
        f"  judge = reference on {100 * (pl.v == pl.p).mean():.1f} % of verdicts; "
        f"true agreement of the judge with people (mean 1 − |h − v|) {100 * truth['all']:.2f} %",
        flush=True,
    )
    runs: dict[int, pd.DataFrame] = {}
    for n in SIZES:
        parts = []
        for r in range(args.reps):
            parts.append(
                one_draw(outputs, items, n, seed=args.seed * 100_000 + n * 1000 + r, target=target).assign(
                    rep=r
                )
            )
        runs[n] = pd.concat(parts, ignore_index=True)
        print(f"  n = {n}: {args.reps} draws, {time.perf_counter() - t0:.0f} s", flush=True)

    rows = []
    for n, run in runs.items():
        t = run[run["metric"] == "all"]
        d_hw = ((t["direct_hi"] - t["direct_lo"]) / 2).mean()
        p_hw = ((t["ppi_hi"] - t["ppi_lo"]) / 2).mean()
        rows.append(
            {
                "labels": n,
                "direct ±pp": 100 * d_hw,
                "PPI ±pp": 100 * p_hw,
                "width ratio": d_hw / p_hw,
                "cover direct": 100
                * ((t["direct_lo"] <= truth["all"]) & (truth["all"] <= t["direct_hi"])).mean(),
                "cover PPI": 100 * ((t["ppi_lo"] <= truth["all"]) & (truth["all"] <= t["ppi_hi"])).mean(),
                "err direct pp": 100 * (t["direct"].mean() - truth["all"]),
                "err PPI pp": 100 * (t["ppi"].mean() - truth["all"]),
                "λ": t["lam"].mean(),
                "eff. n": t["effective_n"].median(),
                f"need ±{args.target:g} direct": t["labels_direct"].median(),
                f"need ±{args.target:g} PPI": t["labels_ppi"].median(),
                "need ratio": t["labels_direct"].median() / t["labels_ppi"].median(),
            }
        )
    table = pd.DataFrame(rows)
    print(
        f"\nA judge's agreement with people, all metrics pooled ({args.reps} draws per n, means;\n"
        "budgets: medians over the draws, each draw a pilot; labels = labelled outputs of 4 verdicts)"
    )
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))

    per_metric = runs[200][runs[200]["metric"] != "all"].groupby("metric", sort=False)
    print(f"\nPer metric, from pilots of 200 labels: labels needed for ±{args.target:g} pp (medians)")
    pm = per_metric.agg(
        direct=("labels_direct", "median"), ppi=("labels_ppi", "median"), lam=("lam", "mean")
    ).reset_index()
    pm["ratio"] = pm["direct"] / pm["ppi"]
    print(pm.to_string(index=False, float_format=lambda v: f"{v:.2f}"))

    pilot = runs[100][runs[100]["metric"] == "all"]
    print(
        "\nBudget check: label as many outputs as the n = 100 pilots asked for (medians), "
        f"{args.reps} draws each"
    )
    for name, col, lo, hi in (
        ("direct", "labels_direct", "direct_lo", "direct_hi"),
        ("PPI", "labels_ppi", "ppi_lo", "ppi_hi"),
    ):
        need = int(pilot[col].median())
        if not np.isfinite(pilot[col].median()) or need > len(outputs):
            print(f"  {name}: {pilot[col].median()} labels — out of reach in this population")
            continue
        got = pd.concat(
            [one_draw(outputs, items, need, seed=7_000_000 + r, target=target) for r in range(args.reps)]
        )
        got = got[got["metric"] == "all"]
        reached = 100 * ((got[hi] - got[lo]) / 2).mean()
        print(f"  {name}: {need} labels → mean half-width ±{reached:.2f} pp (target ±{args.target:g})")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
