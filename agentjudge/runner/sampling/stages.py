"""The stages of a sampled run: which units each stage plans, and how each cell's prefix grows.

Stage 1 (the pilot) judges the first ``pilot`` scenarios of the order (``stats.design.stratified_order``)
in every cell; a cell whose units the run folder already holds for every scenario (a judge added to a
finished run) counts as judged in full. After each stage, every cell's per-scenario variance is estimated
from all it has judged (``stats.design.ratio_residuals``, in each scoring mode of the run, the largest
counts); a cell whose CI would be within the target is done, any other grows to the prefix that reaches
the target with room to spare (``next_sizes``); the run goes on until no cell grows. A stage is an
ordinary round of the grid: predict, score, judge, each resumable and, in batch mode, one batch round.

The current prefix of every cell is kept in run.sqlite's meta (``RECORD_KEY``) as soon as it is decided,
so a run interrupted in a stage plans the same stage again on the next invocation, and one that ends
identical to an uninterrupted one (the decisions depend only on the stored results). A prefix never
shrinks: a re-run with a tighter target only adds scenarios, a looser one keeps what was judged.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentjudge.runner.pipeline import Pipeline
from agentjudge.runner.sampling.spec import Sampling
from agentjudge.runner.store import UnitKey, temperature_key
from agentjudge.runner.work import Dataset, GridError, ScoreKey
from agentjudge.stats.design import (
    GAIN_MAX_VARIANCE,
    MAX_VARIANCE,
    bound_n,
    half_width,
    ratio_residuals,
    required_n,
    stratified_order,
    upper_variance,
)
from agentjudge.types import METRICS, TRAJECTORY_CONDITIONS, Score, ScoringMode

CellKey = tuple[str, str, str, str]  # judge, generator, difficulty, condition
RECORD_KEY = "sampling_plan"  # run.sqlite meta: the design's identity and every cell's current prefix
#: a grown cell is sized to reach this share of the target, and for its upper variance (``UPPER``
#: standard errors above the estimate): the report's bootstrap interval has Monte-Carlo noise (a few % of
#: its width at 1,000 resamples) and expanded tails, and a size read from a noisy variance falls short
SIZING_MARGIN = 0.92
UPPER = 1.0
#: a cell is done when its estimated half-width is at most this share of the target
ACCEPT = 0.94
#: the preferred prompt variant and temperature of the report's headline slice (report.context): the
#: cells are sized on the units the headline reads
_PREFERRED = {"prompt_format": "json", "cot": False, "default_mode": "1.0"}
_GAIN_PAIR = ("with_gt", "without_gt")


@dataclass
class SampledGrid:
    """The sampling design of one run and where it stands (``open``), in the words of the grid's units."""

    spec: Sampling
    order: list[str]
    cells: list[CellKey]
    strata: Mapping[str, str]  # base id -> its stratum (``strata_of``)
    sizes: dict[CellKey, int] = field(default_factory=dict)
    complete: set[CellKey] = field(default_factory=set)
    history: list[dict[CellKey, int]] = field(default_factory=list)
    seed: int = 0

    def __post_init__(self) -> None:
        self.population = len(self.order)
        self.rank = {b: i for i, b in enumerate(self.order)}

    # --- the design and its record -----------------------------------------------------------------
    @classmethod
    def build(cls, spec: Sampling, pipe: Pipeline, data: Dataset) -> SampledGrid:
        if data.no_gt:  # a cell grows until its alignment's CI is tight: alignment needs a reference
            raise GridError(
                "sampling (--target-ci or the pipeline's `sampling`) sizes each cell by the CI of the "
                f"judges' alignment with the programmatic reference; {len(data.no_gt)} record(s) of this run "
                "have no GT, so no reference: run without sampling"
            )
        seed = spec.order_seed(pipe.seed)
        strata = strata_of(data)
        order = stratified_order(list(strata), list(strata.values()), seed)
        return cls(spec=spec, order=order, cells=grid_cells(pipe), strata=strata, seed=seed)

    def identity(self) -> dict[str, Any]:
        """What a re-run must share to continue this design: the order (its seed and the scenarios) and
        the pilot. The target, ``fpc`` and ``applies_to`` may change: prefixes only grow."""
        digest = hashlib.sha256("\n".join(self.order).encode("utf-8")).hexdigest()
        return {"seed": self.seed, "pilot": self.spec.pilot, "order_sha256": digest}

    def open(self, meta: dict[str, str], judged: Iterable[UnitKey]) -> bool:
        """Take up the store's record (``RECORD_KEY`` of ``meta``) or start one; cells new to it start at
        the pilot, or in full when ``judged`` (the store's judge units) covers every scenario of them.
        Returns whether the record changed (the caller writes ``dump()``). Raises GridError when the run
        folder was sampled with another order or pilot."""
        text = meta.get(RECORD_KEY)
        if text:
            record = json.loads(text)
            if record.get("identity") != self.identity():
                old = record.get("identity", {})
                raise GridError(
                    "this run folder was sampled with "
                    f"seed {old.get('seed')} and pilot {old.get('pilot')} over "
                    + (
                        "the same"
                        if old.get("order_sha256") == self.identity()["order_sha256"]
                        else "another"
                    )
                    + f" order of scenarios; this pipeline asks for seed {self.seed} and pilot "
                    f"{self.spec.pilot}: another order would leave judged scenarios out. Keep "
                    "`sampling.seed` and `sampling.pilot` (and the dataset), or pass --force-new to start "
                    "over"
                )
            self.sizes = {_cell(c): int(c[4]) for c in record["sizes"]}
            self.complete = {_cell(c) for c in record.get("complete", [])}
            self.history = [{_cell(c): int(c[4]) for c in stage} for stage in record.get("history", [])]
        new = [c for c in self.cells if c not in self.sizes]
        if not new:
            return False
        covered = self._covered(judged, set(new))
        pilot = min(self.spec.pilot, self.population)
        for cell in new:
            if covered.get(cell, 0) >= self.population:
                self.complete.add(cell)
                self.sizes[cell] = self.population
            else:
                self.sizes[cell] = pilot
        self.history.append(dict(self.sizes))
        return True

    def _covered(self, judged: Iterable[UnitKey], wanted: set[CellKey]) -> dict[CellKey, int]:
        seen: dict[CellKey, set[str]] = defaultdict(set)
        for key in judged:
            cell = (key.judge, key.generator, key.difficulty, key.condition)
            if cell in wanted:
                seen[cell].add(key.record_id.rpartition(":")[0])
        known = set(self.rank)
        return {cell: len(bases & known) for cell, bases in seen.items()}

    def dump(self) -> str:
        return json.dumps(
            {
                "identity": self.identity(),
                "sizes": [[*c, n] for c, n in sorted(self.sizes.items())],
                "complete": [list(c) for c in sorted(self.complete)],
                "history": [[[*c, n] for c, n in sorted(stage.items())] for stage in self.history],
            },
            separators=(",", ":"),
        )

    # --- the units of the current plan -------------------------------------------------------------
    def prediction_lengths(self) -> dict[tuple[str, str], int]:
        """Per (generator, difficulty): the longest prefix any of its cells judges (its predictions)."""
        out: dict[tuple[str, str], int] = {}
        for (_, gen, diff, _), n in self.sizes.items():
            out[(gen, diff)] = max(out.get((gen, diff), 0), n)
        return out

    def predict_units(self, units: Iterable[UnitKey]) -> list[UnitKey]:
        lengths = self.prediction_lengths()
        return [u for u in units if self._rank(u) < lengths.get((u.generator, u.difficulty), 0)]

    def judge_units(self, units: Iterable[UnitKey]) -> list[UnitKey]:
        return [
            u
            for u in units
            if self._rank(u) < self.sizes.get((u.judge, u.generator, u.difficulty, u.condition), 0)
        ]

    def _rank(self, unit: UnitKey) -> int:
        return self.rank.get(unit.record_id.rpartition(":")[0], self.population)

    # --- deciding the next stage -------------------------------------------------------------------
    def decide(self, sums: dict[CellKey, dict[str, tuple[np.ndarray, np.ndarray]]]) -> bool:
        """Grow every cell that its data so far say falls short of the target (``next_sizes``); returns
        whether any grew (the caller then records ``dump()`` and runs the next stage)."""
        new = next_sizes(self.spec, self.population, self.sizes, self.complete, sums)
        if new == self.sizes:
            return False
        self.sizes = new
        self.history.append(dict(new))
        return True

    def headline_slice(self, pipe: Pipeline) -> tuple[str, str]:
        """The (variant key, temperature key) the cells are sized on: the report's headline slice."""
        return headline_slice(pipe)


def strata_of(data: Dataset) -> dict[str, str]:
    """Each base scenario's stratum: its topology, so every prefix keeps the dataset's topology mix; with
    records of several sources (ours and imported ones), source and topology, so it keeps both mixes (a
    report per source then stands on a random part of its own source)."""
    mixed = len({r.source for r in data.records}) > 1
    return {r.id: f"{r.source}:{r.topology}" if mixed else r.topology for r in data.records}


def _cell(row: list[Any]) -> CellKey:
    return (str(row[0]), str(row[1]), str(row[2]), str(row[3]))


def grid_cells(pipe: Pipeline) -> list[CellKey]:
    """Every judge × generator × difficulty × condition of the grid (trajectory conditions only for
    interactive generators, as ``work.judge_units`` plans them)."""
    interactive = {g.display_name for g in pipe.generators if g.generation == "interactive"}
    cells: list[CellKey] = []
    for judge in pipe.judges:
        for gen in pipe.generators:
            for diff in pipe.difficulties:
                for cond in pipe.conditions:
                    if cond in TRAJECTORY_CONDITIONS and gen.display_name not in interactive:
                        continue
                    cells.append((judge.display_name, gen.display_name, diff, cond))
    return cells


def headline_slice(pipe: Pipeline) -> tuple[str, str]:
    """(variant key, temperature key) of the units a cell is sized on, chosen as the report chooses its
    baseline variant: the published default of each prompt factor when some variant has it (JSON, no
    chain-of-thought, 1.0-default), the model's own temperature when the grid has it; else the first
    listed."""
    variants = pipe.prompt_variants
    chosen = None
    for v in variants:
        if all(
            getattr(v, f) == value
            for f, value in _PREFERRED.items()
            if any(getattr(w, f) == value for w in variants)
        ):
            chosen = v
            break
    variant = (chosen or variants[0]).key
    temps = pipe.temperatures
    temperature = temperature_key(None if None in temps else temps[0])
    return variant, temperature


def next_sizes(
    spec: Sampling,
    population: int,
    sizes: dict[CellKey, int],
    complete: set[CellKey],
    sums: dict[CellKey, dict[str, tuple[np.ndarray, np.ndarray]]],
) -> dict[CellKey, int]:
    """Each cell's prefix after a stage. A cell is done when its estimated CI half-width is at most
    ``ACCEPT`` of the target; else it grows to the size that reaches ``SIZING_MARGIN`` of the target at
    the upper variance (``stats.design.upper_variance``, ``UPPER`` standard errors above the estimate),
    at least one scenario more, at most what the largest possible variance needs (``bound_n``) or the
    population. ``sums`` holds, per cell and scoring mode, the per-scenario sums and counts of alignment
    over the cell's prefix (by rank); the largest variance over the modes counts.

    Why the two shares: a size that just reaches the target from a variance estimated on the data would
    leave the next look deciding on noise, and the cells it then stops are those whose variance came out
    low, whose intervals are too narrow (bench/bench_sampling.py measured 93.5 % coverage that way); sized
    for the upper variance and the tighter aim, a grown cell is nearly always done at the next look."""
    aim = spec.target * SIZING_MARGIN
    accept = spec.target * ACCEPT
    ceiling = bound_n(population, aim, spec.fpc)
    # a with − without GT difference can vary up to 4 times as much as a cell's mean
    gain_ceiling = bound_n(population, aim, spec.fpc, GAIN_MAX_VARIANCE)
    need: dict[CellKey, int] = {}

    def grow(cell: CellKey, s2: float, upper: float, ceiling: int = ceiling) -> None:
        n = sizes[cell]
        if half_width(s2, n, population, spec.fpc) <= accept:
            return
        wanted = max(required_n(upper, population, aim, spec.fpc), n + 1)
        need[cell] = max(need.get(cell, n), min(wanted, max(ceiling, n + 1), population))

    for cell, n in sizes.items():
        if cell in complete or n >= population:
            continue
        # a cell of another condition (swapped_gt, the trajectory ones) has no gain: sized as a cell
        if "cells" in spec.applies_to or cell[3] not in _GAIN_PAIR:
            resids = [ratio_residuals(a, c)[1] for a, c in sums.get(cell, {}).values()]
            if resids:
                grow(cell, max(_var(r) for r in resids), max(upper_variance(r, UPPER) for r in resids))
    if "gt_gain" in spec.applies_to:
        for cell in sizes:
            judge, gen, diff, cond = cell
            other = (judge, gen, diff, "without_gt")
            if cond != "with_gt" or other not in sizes or cell in complete or other in complete:
                continue
            resids = _gain_residuals(sums.get(cell, {}), sums.get(other, {}))
            if not resids:
                continue
            s2, upper = max(_var(r) for r in resids), max(upper_variance(r, UPPER) for r in resids)
            for c in (cell, other):
                grow(c, s2, upper, gain_ceiling)
            # one prefix for the pair: the gain is read on the prefix both judged
            both = max(need.get(cell, sizes[cell]), need.get(other, sizes[other]))
            if both > min(sizes[cell], sizes[other]):
                need[cell] = need[other] = both
    out = dict(sizes)
    for cell, n in need.items():
        out[cell] = max(out[cell], n)
    return out


def _var(resid: np.ndarray) -> float:
    return float(resid.var(ddof=1)) if len(resid) > 1 else MAX_VARIANCE


def _gain_residuals(
    with_gt: dict[str, tuple[np.ndarray, np.ndarray]], without: dict[str, tuple[np.ndarray, np.ndarray]]
) -> list[np.ndarray]:
    """Per scoring mode: the per-scenario residuals of the with − without GT difference, on the
    scenarios both conditions have."""
    out = []
    for mode in sorted(set(with_gt) & set(without)):
        (sa, ca), (sb, cb) = with_gt[mode], without[mode]
        k = min(len(sa), len(sb))
        _, ra = ratio_residuals(sa[:k], ca[:k])
        _, rb = ratio_residuals(sb[:k], cb[:k])
        if len(ra) > 1 and len(rb) > 1:
            out.append(ra - rb)
    return out


_FIELD = {"tool": "p_tool", "param": "p_param", "seq": "p_seq", "cov": "p_cov"}


def cell_sums(
    grid: SampledGrid,
    pipe: Pipeline,
    units: Iterator[tuple[UnitKey, str, str | None, str | None, int]],
    scores: dict[ScoreKey, dict[ScoringMode, Score]],
) -> dict[CellKey, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Per cell and scoring mode: the sum of alignment 1 − |reference − verdict| over the headline slice's
    rows of each scenario of the cell's prefix (by rank), and how many rows had a verdict. ``units`` are
    the store's judge rows (``RunStore.iter_raw``); a failed unit or an unparsed metric adds nothing (the
    report leaves such rows out of every mean)."""
    from agentjudge.runner.export import _row_values

    variant, temperature = headline_slice(pipe)
    sums: dict[CellKey, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for key, status, text, _, _ in units:
        if key.variant != variant or key.temperature != temperature or key.trial or key.generator_trial:
            continue
        cell = (key.judge, key.generator, key.difficulty, key.condition)
        n = grid.sizes.get(cell, 0)
        r = grid.rank.get(key.record_id.rpartition(":")[0], grid.population)
        if r >= n:
            continue
        mode_scores = scores.get((key.record_id, key.generator, key.generator_trial))
        if mode_scores is None:
            continue
        modes = tuple(sorted(mode_scores))
        per_mode = sums.setdefault(cell, {})
        for mode in modes:
            if mode not in per_mode:
                per_mode[mode] = (np.zeros(n), np.zeros(n))
        if status != "done" or not text:
            continue
        result = json.loads(text)
        metrics: tuple[str, ...] = METRICS
        state = mode_scores[modes[0]].state_match
        if key.condition in TRAJECTORY_CONDITIONS and state is not None:
            metrics = (*METRICS, "outcome")
        verdicts, _ = _row_values(result, True, metrics, modes)
        i = 0
        for metric in metrics:
            for mode in modes:
                v = verdicts[i]
                i += 1
                if v is None or v != v:
                    continue
                ref = (
                    float(bool(state))
                    if metric == "outcome"
                    else float(getattr(mode_scores[mode], _FIELD[metric]))
                )
                s, c = per_mode[mode]
                s[r] += 1.0 - abs(ref - v)
                c[r] += 1.0
    return sums
