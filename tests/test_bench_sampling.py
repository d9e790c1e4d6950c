"""``bench/bench_sampling.py``'s replay of a sampled run on a full run's verdicts (``--population-from``)
must size the cells as ``agentjudge run`` does: on every scoring mode, the larger variance counting
(``stages.cell_sums`` hands ``next_sizes`` one entry per mode). A planted case: one cell whose strict
alignment is nearly constant (the pilot's CI is within the target) and whose paper alignment is a fair coin
(it needs ~2,000 more scenarios)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentjudge.runner.sampling.spec import Sampling
from agentjudge.runner.sampling.stages import SIZING_MARGIN, next_sizes
from agentjudge.stats.design import bound_n

ROOT = Path(__file__).resolve().parents[1]
N = 3000


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_sampling_under_test", ROOT / "bench" / "bench_sampling.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def _population() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    cell = {"judge": "j", "generator": "g", "difficulty": "easy", "condition": "with_gt"}
    strict = np.where(rng.random(N) < 0.995, 1.0, 0.75)  # variance ~0.0003: done at the pilot
    paper = (rng.random(N) < 0.5).astype(float)  # variance 0.25: the largest a [0, 1] mean can have
    frames = [
        pd.DataFrame({"scenario": np.arange(N), **cell, "scoring_mode": mode, "mu": mu, "topology": "t"})
        for mode, mu in (("strict", strict), ("paper", paper))
    ]
    return pd.concat(frames, ignore_index=True)


def test_the_replay_sizes_a_cell_on_its_noisier_scoring_mode() -> None:
    bench = _bench()
    df = _population()
    rank = np.arange(N)  # the order is the scenarios' own
    arrays = bench.cell_arrays(df, rank, N)
    key = ("j", "g", "easy", "with_gt")
    spec = Sampling(target_ci_pp=1.0, pilot=200)
    sizes, stages = bench.run_design(spec, arrays, N)
    # a fair coin's variance is the bound's (0.25): the cell grows to what the bound needs at the sizing
    # aim (SIZING_MARGIN of the target), 2,374 of 3,000; strict alone would stop it at the pilot, and the
    # two modes' rows summed as one mode (the old replay) gave 1,465
    assert sizes == {key: bound_n(N, spec.target * SIZING_MARGIN)} == {key: 2374}

    def alone(mode: str) -> dict[Any, int]:  # the design on one mode's sums, stage after stage
        sz = {key: 200}
        while True:
            ss, cc = arrays[key][mode]
            new = next_sizes(spec, N, sz, set(), {key: {mode: (ss[: sz[key]], cc[: sz[key]])}})
            if new == sz:
                return sz
            sz = new

    paper = df[df["scoring_mode"] == "paper"]["mu"].to_numpy()
    assert arrays[key]["paper"][0].tolist() == paper.tolist()
    assert arrays[key]["paper"][1].tolist() == [1.0] * N
    assert alone("strict") == {key: 200}  # strict alone would stop at the pilot
    assert sizes == alone("paper") and stages == 2
