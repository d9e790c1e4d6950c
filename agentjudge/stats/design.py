"""A sampled grid: judge a prefix of one random order of base scenarios, as long as each cell needs.

The design (issue 38). One seeded random order of the dataset's N base scenarios, stratified by topology:
each topology's scenarios in a random order of their own, the topologies interleaved so that every
prefix of the order holds each topology's share of the dataset to within less than one scenario
(``stratified_order``). Every cell of the grid (judge × generator × difficulty × condition) judges a prefix
of that order, so two cells share their shorter prefix: a paired comparison stays paired there. A cell's
prefix length is chosen from its own per-scenario variance (``required_n``), first from a pilot prefix
shared by every cell, then from everything judged so far (``runner`` stages, ``agentjudge.runner.sampling``).

What the estimators need (the report, ``bench/bench_sampling.py``):

* design weights: a row of cell c and topology h stands for N_h / n_{c,h} scenarios, the inverse of its
  scenario's chance to be in the cell's prefix (``row_weights``). Within one cell this is the stratified
  mean; pooled over cells of different lengths it weighs each cell as the full grid does (each of its
  cells has the same N scenarios), which an unweighted mean over rows would not.
* the finite-population correction: the target is the value the full grid would give on these N
  scenarios, and a prefix of n of them has a variance (1/n − 1/N)·S², not S²/n. One set of bootstrap
  weights gives that for every prefix length at once: the cluster of rank r is resampled with weight
  1 + g_r (M − 1), M its multiplicity and g_r² = 1 − (2r + 1)/N, since Σ_{r<n} g_r² = n − n²/N
  (``fpc_scale``); beyond rank N/2 no weight can shrink the variance further, and g_r = 0 there keeps
  longer prefixes conservative.
* paired deltas use the prefix both sides judged (``shared_prefix``): the same scenarios, one f = n/N.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pandas as pd

from agentjudge.stats.bootstrap import ALPHA, expanded_alpha
from agentjudge.stats.codes import column_codes, group_codes

#: the columns that name one cell of a sampled grid (its prefix length is chosen per cell)
CELL_COLUMNS: tuple[str, ...] = ("judge", "generator", "difficulty", "condition")
#: the bound of the variance of a mean of values in [0, 1] (Popoviciu): what no cell can exceed
MAX_VARIANCE = 0.25
#: the bound of the variance of a difference of two such means (values in [-1, 1]): a paired gain's
GAIN_MAX_VARIANCE = 1.0


def stratified_order(ids: Sequence[str], strata: Sequence[str], seed: int) -> list[str]:
    """Every id once, in a seeded random order stratified by ``strata`` (one label per id).

    Within a stratum the order is a random permutation (of its ids sorted, so the input's order does not
    matter); which stratum comes next at each position is ``_interleave``'s: every prefix of n ids holds
    n·N_h/N of stratum h to within less than one.
    """
    if len(ids) != len(strata):
        raise ValueError("one stratum label per id")
    rng = np.random.default_rng([int(seed), 38])
    groups: dict[str, list[str]] = {}
    for i, s in sorted(zip(ids, strata, strict=True), key=lambda p: (p[1], p[0])):
        groups.setdefault(s, []).append(i)
    labels = sorted(groups)
    shuffled = [[groups[h][j] for j in rng.permutation(len(groups[h]))] for h in labels]
    taken = [0] * len(labels)
    order = []
    for h in _interleave([len(m) for m in shuffled]):
        order.append(shuffled[h][taken[h]])
        taken[h] += 1
    return order


def _interleave(sizes: list[int]) -> list[int]:
    """A sequence of stratum indices, ``sizes[h]`` of each, whose every prefix of length n holds within
    1 − 1/(2(H − 1)) of n·sizes[h]/N of each stratum (Tijdeman's solution of the chairman assignment
    problem, 1980): at each position, among the strata at least that far behind their share, the one whose
    next member is due first."""
    total, strata = sum(sizes), len(sizes)
    if strata == 1:
        return [0] * total
    slack = 1 / (2 * (strata - 1))
    share = [n / total for n in sizes]
    count = [0] * strata
    out = []
    for n in range(1, total + 1):
        due = [
            ((count[h] + 1 - slack) / share[h], h)
            for h in range(strata)
            if count[h] < sizes[h] and share[h] * n - count[h] >= slack - 1e-9
        ]
        if not due:  # cannot happen (the theorem); the stratum furthest behind, should rounding say so
            due = [(count[h] - share[h] * n, h) for h in range(strata) if count[h] < sizes[h]]
        h = min(due)[1]
        out.append(h)
        count[h] += 1
    return out


def z_value(n: int, alpha: float = ALPHA) -> float:
    """The normal quantile of the report's interval for ``n`` scenarios: its expanded-percentile tails
    (``bootstrap.expanded_alpha``), so a size chosen here is one the report's CI reaches."""
    from scipy import stats as sps

    return float(sps.norm.ppf(1 - expanded_alpha(max(int(n), 1), alpha) / 2))


def half_width(s2: float, n: int, population: int, fpc: bool = True) -> float:
    """Half-width of the 95 % CI of a mean over ``n`` of ``population`` scenarios with per-scenario
    variance ``s2``: z·sqrt((1 − n/N)·s2/n), without the (1 − n/N) when ``fpc`` is false."""
    if n <= 0:
        return math.inf
    shrink = max(0.0, 1.0 - n / population) if fpc else 1.0
    return z_value(n) * math.sqrt(shrink * max(s2, 0.0) / n)


def required_n(s2: float, population: int, target: float, fpc: bool = True) -> int:
    """The fewest scenarios whose CI half-width (``half_width``) is at most ``target`` (a share, 0.01 =
    1 pp); at most ``population``. Solved with z at the answer's own size (the expanded tails shrink as n
    grows), starting from the normal z."""
    if s2 <= 0:
        return 1
    n = population
    z = z_value(population)
    for _ in range(4):  # z depends (weakly) on n: a few rounds settle it
        n0 = (z * z * s2) / (target * target)
        n_new = n0 / (1 + n0 / population) if fpc else n0
        n = min(population, max(2, math.ceil(n_new)))
        z = z_value(n)
    while n < population and half_width(s2, n, population, fpc) > target:
        n += max(1, n // 200)
    return min(n, population)


def bound_n(population: int, target: float, fpc: bool = True, max_variance: float = MAX_VARIANCE) -> int:
    """The scenarios a cell can need at most: ``required_n`` at the largest variance a mean of values in
    [0, 1] can have (``MAX_VARIANCE``, with the sample variance's n/(n − 1)); a paired gain passes
    ``GAIN_MAX_VARIANCE``."""
    return required_n(max_variance * population / max(population - 1, 1), population, target, fpc)


def ratio_residuals(sums: np.ndarray, counts: np.ndarray) -> tuple[float, np.ndarray]:
    """(estimate, residuals) of a ratio Σ sums / Σ counts over scenarios (one entry each): the linearised
    residuals (sum − R·count) / mean count, whose variance S² a mean of n scenarios divides by n (the
    bootstrap's ratio has the same first-order variance). (NaN, no residuals) when nothing was counted."""
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    total = counts.sum()
    if total <= 0 or len(sums) < 2:
        return float("nan"), np.zeros(0)
    r = sums.sum() / total
    return float(r), (sums - r * counts) / counts.mean()


def ratio_variance(sums: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """(estimate, per-scenario variance S²) of a ratio (``ratio_residuals``); variance 0 when nothing
    was counted."""
    r, resid = ratio_residuals(sums, counts)
    return r, float(resid.var(ddof=1)) if len(resid) > 1 else 0.0


def upper_variance(resid: np.ndarray, sd: float) -> float:
    """The residuals' variance s² raised by ``sd`` of its own standard errors, s²·(1 + sd·sqrt((κ − 1)/n))
    with κ their kurtosis: a size computed for it reaches the target even when s² came out low, so the
    next look finds the cell done whatever that look's own estimate (which keeps the stopping rule from
    choosing the cells whose variance it underestimated)."""
    resid = np.asarray(resid, dtype=float)
    n = len(resid)
    if n < 2:
        return MAX_VARIANCE
    s2 = float(resid.var(ddof=1))
    centred = resid - resid.mean()
    m2 = float(np.mean(centred**2))
    kurtosis = float(np.mean(centred**4)) / (m2 * m2) if m2 > 0 else 1.0
    return s2 * (1.0 + sd * math.sqrt(max(kurtosis - 1.0, 0.0) / n))


def fpc_scale(ranks: np.ndarray, population: int) -> np.ndarray:
    """g_r = sqrt(max(0, 1 − (2r + 1)/N)) per cluster of rank r: bootstrap weights 1 + g_r (M − 1) give a
    prefix of n the variance (1/n − 1/N)·S² for every n ≤ N/2 (module docstring)."""
    r = np.asarray(ranks, dtype=float)
    return np.sqrt(np.clip(1.0 - (2.0 * r + 1.0) / population, 0.0, 1.0))


@dataclass
class Design:
    """What an estimator needs of a sampled run: the order, the strata, each cell's prefix length.

    ``cells`` maps (judge, generator, difficulty, condition) to its prefix length n (``population`` for a
    cell judged in full); a cell it does not name counts as judged in full. ``predictions`` maps
    (generator, difficulty) to the prefix predicted and scored.
    """

    order: list[str]
    strata: dict[str, str]  # base id -> topology
    cells: dict[tuple[str, str, str, str], int]
    predictions: dict[tuple[str, str], int] = field(default_factory=dict)
    fpc: bool = True

    def __post_init__(self) -> None:
        self.population = len(self.order)
        self.rank = {b: i for i, b in enumerate(self.order)}
        labels = sorted({self.strata[b] for b in self.order})
        code = {s: k for k, s in enumerate(labels)}
        self.stratum_code = np.array([code[self.strata[b]] for b in self.order], dtype=np.int64)  # by rank
        onehot = np.zeros((self.population, len(labels)), dtype=np.int64)
        onehot[np.arange(self.population), self.stratum_code] = 1
        # cum[n, h]: scenarios of stratum h among the first n of the order
        self.cum = np.vstack([np.zeros((1, len(labels)), dtype=np.int64), np.cumsum(onehot, axis=0)])

    def weight(self, rank: np.ndarray, n: np.ndarray) -> np.ndarray:
        """N_h / n_h of a scenario of rank ``rank`` in a prefix of length ``n``; 0 where rank >= n."""
        rank = np.asarray(rank, dtype=np.int64)
        n = np.clip(np.asarray(n, dtype=np.int64), 0, self.population)
        h = self.stratum_code[np.clip(rank, 0, self.population - 1)]
        inside = self.cum[n, h]
        whole = self.cum[self.population, h]
        return np.where((rank >= 0) & (rank < n) & (inside > 0), whole / np.maximum(inside, 1), 0.0)

    def ranks_of(self, base_ids: pd.Series) -> np.ndarray:
        """Each row's scenario rank in the order (-1 for an id outside it)."""
        codes, values = column_codes(base_ids)
        table = np.array([self.rank.get(str(v), -1) for v in values], dtype=np.int64)
        return table[codes] if len(table) else np.full(len(base_ids), -1, dtype=np.int64)

    def cell_lengths(self, df: pd.DataFrame, cols: Sequence[str] = CELL_COLUMNS) -> np.ndarray:
        """Each row's cell prefix length. With fewer columns than ``CELL_COLUMNS`` (a table that pools
        over the others), the shortest cell matching the columns it has."""
        cols = list(cols)
        codes, keys = group_codes(df, cols)
        if cols == list(CELL_COLUMNS):
            cells = cast(dict[tuple[str, ...], int], self.cells)
            lengths = [cells.get(k, self.population) for k in _tuples(keys)]
        else:
            pos = [CELL_COLUMNS.index(c) for c in cols]
            best: dict[tuple[str, ...], int] = {}
            for key, n in self.cells.items():
                k = tuple(key[p] for p in pos)
                best[k] = min(best.get(k, self.population), n)
            lengths = [best.get(k, self.population) for k in _tuples(keys)]
        return np.asarray(lengths, dtype=np.int64)[codes] if len(df) else np.zeros(0, dtype=np.int64)

    def smallest_cell(self) -> int:
        return min(self.cells.values(), default=self.population)


def _tuples(keys: pd.DataFrame) -> list[tuple[str, ...]]:
    return [tuple(str(v) for v in row) for row in keys.itertuples(index=False)]


def shared_lengths(df: pd.DataFrame, design: Design, factor: str, lengths: np.ndarray) -> np.ndarray:
    """Per row: the prefix every level of ``factor`` present in ``df`` judged in the row's slice (the
    row's cell coordinates but ``factor``): the shortest of their ``lengths``. A paired comparison along
    ``factor`` keeps the rows below it, weighted for that prefix (``Design.weight``)."""
    others = [c for c in CELL_COLUMNS if c != factor and c in df.columns]
    if not len(df):
        return np.zeros(0, dtype=np.int64)
    codes, _ = group_codes(df, others)
    shortest = np.full(int(codes.max()) + 1, design.population, dtype=np.int64)
    np.minimum.at(shortest, codes, lengths)
    return np.asarray(shortest[codes])
