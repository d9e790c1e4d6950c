"""What a sampled grid will judge, before it runs (``agentjudge run --dry-run`` of a pipeline with
``sampling``).

Each cell's prefix is what the design's first decision would give it (``stages.next_sizes``' rule: the
pilot when the cell's CI is within the target there, else the size that reaches ``SIZING_MARGIN`` of the
target at the upper variance a pilot would show) for a per-scenario variance taken, in this order, from:

1. verdicts of the same judge, generator, difficulty and condition in the run folder's
   judgments.parquet (an earlier invocation of this run: the pilot, or a run with another target), then in
   ``sampling.prior_run``'s; a judge found there on other cells lends its largest variance;
2. the largest variance a mean of values in [0, 1] can have, 0.25 (Popoviciu's inequality): a bound no
   cell can exceed, so the sizes and the price it gives are an upper bound, not a guess.

``expected_sizes`` returns the sizes and says, per cell, which source it used.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from agentjudge.runner.pipeline import Pipeline
from agentjudge.runner.sampling.spec import Sampling
from agentjudge.runner.sampling.stages import (
    ACCEPT,
    SIZING_MARGIN,
    UPPER,
    CellKey,
    grid_cells,
    headline_slice,
)
from agentjudge.stats.design import GAIN_MAX_VARIANCE, MAX_VARIANCE, half_width, required_n

Prior = tuple[float, float]  # a per-scenario variance and its kurtosis
_NONE: Prior = (0.0, 1.0)


def prior_variances(paths: list[Path], pipe: Pipeline) -> dict[CellKey, Prior]:
    """Per cell: the per-scenario variance of alignment and its kurtosis (of the scoring mode with the
    larger variance) in the first of ``paths`` (run folders) whose judgments.parquet has the cell, on the
    headline slice (the baseline prompt variant, the model's temperature, first trials, as the report
    reads it). The with/without-GT gain of a judge, generator and difficulty is under the key (judge,
    generator, difficulty, "gt_gain")."""
    out: dict[CellKey, Prior] = {}
    for folder in paths:
        for cell, prior in _variances(folder, pipe).items():
            out.setdefault(cell, prior)
    return out


def _moments(resid: Any) -> Prior:
    centred = resid - resid.mean()
    m2 = float((centred**2).mean())
    return float(resid.var(ddof=1)), (float((centred**4).mean()) / (m2 * m2) if m2 > 0 else 1.0)


def _variances(folder: Path, pipe: Pipeline) -> dict[CellKey, Prior]:
    import numpy as np
    import pandas as pd

    from agentjudge.rundir import RunFolder, RunFolderError
    from agentjudge.stats.design import ratio_residuals

    cols = [
        *("base_id", "judge", "generator", "difficulty", "condition", "scoring_mode", "reference"),
        *("verdict", "prompt_format", "cot", "default_mode", "temperature", "trial", "generator_trial"),
    ]
    try:
        run = RunFolder.open(folder)
        if not run.has("judgments"):
            return {}
        df = run.judgments(columns=cols)
    except RunFolderError:  # not a run folder (yet): no prior
        return {}
    except Exception:  # noqa: BLE001 - pyarrow raises several types; an unreadable prior is no prior
        return {}
    variant, _ = headline_slice(pipe)
    chosen = next(v for v in pipe.prompt_variants if v.key == variant)
    mask = (
        (df["prompt_format"] == chosen.prompt_format)
        & (df["cot"] == chosen.cot)
        & (df["default_mode"] == chosen.default_mode)
        & (df["trial"] == 0)
        & (df["generator_trial"] == 0)
    )
    first = None if None in pipe.temperatures else pipe.temperatures[0]
    mask &= df["temperature"].isna() if first is None else df["temperature"] == first
    df = df[mask.to_numpy()].assign(mu=lambda x: 1 - (x["reference"] - x["verdict"]).abs())
    out: dict[CellKey, Prior] = {}
    resid: dict[tuple[str, ...], pd.Series] = {}
    keys = ["judge", "generator", "difficulty", "condition", "scoring_mode"]
    for key, part in df.groupby(keys, observed=True):
        cell: CellKey = (str(key[0]), str(key[1]), str(key[2]), str(key[3]))
        per = part.groupby("base_id", observed=True)["mu"].agg(["sum", "count"])
        _, r = ratio_residuals(per["sum"].to_numpy(), per["count"].to_numpy(dtype=np.float64))
        if len(r) > 1:
            out[cell] = max(out.get(cell, _NONE), _moments(r))
            resid[(*cell, str(key[4]))] = pd.Series(r, index=per.index)
    for (judge, gen, diff, cond, mode), a in resid.items():
        b = resid.get((judge, gen, diff, "without_gt", mode))
        if cond == "with_gt" and b is not None:
            d = (a - b).dropna()
            if len(d) > 1:
                gain: CellKey = (judge, gen, diff, "gt_gain")
                out[gain] = max(out.get(gain, _NONE), _moments(d.to_numpy()))
    return out


def expected_sizes(
    spec: Sampling, pipe: Pipeline, population: int, priors: dict[CellKey, Prior]
) -> tuple[dict[CellKey, int], dict[str, int]]:
    """Each cell's expected prefix, and how many cells took their variance from which source ("this
    cell", "same judge", "bound")."""
    aim, accept = spec.target * SIZING_MARGIN, spec.target * ACCEPT
    pilot = min(spec.pilot, population)
    by_judge: dict[str, Prior] = {}
    for (judge, *_, cond), prior in priors.items():
        if cond != "gt_gain":
            by_judge[judge] = max(by_judge.get(judge, _NONE), prior)
    finite = population / max(population - 1, 1)  # the sample variance's n/(n − 1)
    bound: Prior = (MAX_VARIANCE * finite, 1.0)
    gain_bound = GAIN_MAX_VARIANCE * finite  # a with − without GT difference: 4 times a cell's bound
    sizes: dict[CellKey, int] = {}
    sources = {"this cell": 0, "same judge": 0, "bound": 0}

    def size(prior: Prior, known: bool, cap: float = bound[0]) -> int:
        s2, kurtosis = prior
        if half_width(s2, pilot, population, spec.fpc) <= accept:
            return pilot
        if known:  # what a pilot's upper variance would be, never above the bound
            s2 = min(s2 * (1 + UPPER * math.sqrt(max(kurtosis - 1, 0.0) / pilot)), cap)
        return required_n(s2, population, aim, spec.fpc)

    for cell in grid_cells(pipe):
        if cell in priors:
            prior, source = priors[cell], "this cell"
        elif cell[0] in by_judge:
            prior, source = by_judge[cell[0]], "same judge"
        else:
            prior, source = bound, "bound"
        n = pilot
        pair = cell[3] in ("with_gt", "without_gt")
        if "cells" in spec.applies_to or not pair:
            n = max(n, size(prior, source != "bound"))
        if "gt_gain" in spec.applies_to and pair:
            # the gain's own variance when known, else that of a difference of two such means (4 times)
            gain = priors.get((*cell[:3], "gt_gain"))
            if gain is not None:
                n = max(n, size(gain, True, gain_bound))
            else:
                n = max(n, size((4 * prior[0], prior[1]), source != "bound", gain_bound))
        sizes[cell] = min(population, n)
        sources[source] += 1
    return sizes, sources
