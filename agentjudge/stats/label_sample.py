"""The sample of generator outputs people label, and the inclusion probability of each label.

The published protocol (§8) labels 120 hard outputs, 20 per topology, 14 of them imperfect (some reference
score below 1) and 6 perfect. ``select_sample`` draws that design from any run; ``human-sample`` writes it
to a CSV and ``agentjudge label`` serves it as its queue, in the order ``queue_order`` gives. Because
imperfect outputs are drawn far above their share of a run, an estimate over the run weights each label
by 1/π (§11); ``inclusion`` computes π per stratum from the labels that came from the design, so both the
sample and its weights follow from the one ``stratum_of`` below.

An output without a reference (a run imported without expected calls) cannot be called perfect or not:
it forms a stratum of its own per topology ("unscored"), drawn at the rate of its share of the topology.
Nothing here reads files: the callers join predictions, records and scores into one row per output with
``record_id``, ``generator``, ``trial``, ``topology``, ``difficulty`` and ``p_tool`` … ``p_cov`` (NaN where
no reference exists).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentjudge.stats.ppi import stratum_inclusion
from agentjudge.types import METRICS, TOPOLOGIES

IMPERFECT_SHARE = 14 / 20
SCORE_COLUMNS = tuple(f"p_{m}" for m in METRICS)
#: the kinds of output a topology is split into
KINDS = ("imperfect", "perfect", "unscored")


def output_kind(outputs: pd.DataFrame) -> np.ndarray:
    """Per output: "imperfect" (some reference score below 1), "perfect", or "unscored" (no reference)."""
    scores = (
        outputs[list(SCORE_COLUMNS)].to_numpy(dtype=float, na_value=np.nan)
        if set(SCORE_COLUMNS) <= set(outputs.columns)
        else np.full((len(outputs), len(SCORE_COLUMNS)), np.nan)
    )
    unscored = np.isnan(scores).all(axis=1)
    perfect = (np.nan_to_num(scores, nan=1.0) >= 1.0).all(axis=1)
    return np.where(unscored, "unscored", np.where(perfect, "perfect", "imperfect"))


def stratum_of(outputs: pd.DataFrame) -> pd.Series:
    """The design's stratum of each output: difficulty / topology / kind."""
    kind = output_kind(outputs)
    return pd.Series(
        outputs["difficulty"].astype(str).to_numpy()
        + "/"
        + outputs["topology"].astype(str).to_numpy()
        + "/"
        + kind,
        index=outputs.index,
        name="stratum",
    )


def _pick(
    pool: pd.DataFrame, k: int, rng: np.random.Generator, avoid: frozenset[str] = frozenset()
) -> pd.DataFrame:
    """k rows: distinct records not in ``avoid`` first (one random generator per record), then the rest."""
    if k <= 0 or pool.empty:
        return pool.iloc[:0]
    shuffled = pool.iloc[rng.permutation(len(pool))]
    fresh = ~shuffled["record_id"].astype(str).isin(avoid).to_numpy()
    distinct = shuffled[fresh].drop_duplicates("record_id")
    rest = shuffled.drop(distinct.index)
    return pd.concat([distinct, rest]).iloc[:k]


def select_sample(outputs: pd.DataFrame, n: int, seed: int, difficulty: str | None = "hard") -> pd.DataFrame:
    """The stratified sample (``difficulty`` None: every difficulty): an equal share per topology; within a
    topology ~70 % imperfect and ~30 % perfect outputs (14 + 6 of 20), topping up from the other pool when
    one runs short; unscored outputs take the share of the topology they hold. Adds the column ``stratum``.
    Raises ``ValueError`` when nothing is there to draw."""
    rng = np.random.default_rng(seed)
    pool = outputs if difficulty is None else outputs[outputs["difficulty"].astype(str) == difficulty]
    pool = pool.assign(stratum=stratum_of(pool).to_numpy())
    topologies = [t for t in TOPOLOGIES if (pool["topology"].astype(str) == t).any()]
    if not topologies:
        raise ValueError(
            f"no generator outputs at difficulty {difficulty!r}"
            + (f" (the run has {sorted(outputs['difficulty'].astype(str).unique())})" if len(outputs) else "")
        )
    quota = {
        t: n // len(topologies) + (1 if i < n % len(topologies) else 0) for i, t in enumerate(topologies)
    }
    kind = pd.Series(output_kind(pool), index=pool.index)
    parts = []
    for t in topologies:
        in_t = (pool["topology"].astype(str) == t).to_numpy()
        imp_pool = pool[in_t & (kind == "imperfect").to_numpy()]
        perf_pool = pool[in_t & (kind == "perfect").to_numpy()]
        uns_pool = pool[in_t & (kind == "unscored").to_numpy()]
        want_uns = round(quota[t] * len(uns_pool) / int(in_t.sum()))
        uns = _pick(uns_pool, want_uns, rng)
        scored = quota[t] - len(uns)
        imp = _pick(imp_pool, round(scored * IMPERFECT_SHARE), rng)
        perf = _pick(perf_pool, scored - len(imp), rng, frozenset(imp["record_id"].astype(str)))
        if len(imp) + len(perf) < scored:  # too few perfect ones: top up with imperfect ones
            imp = _pick(imp_pool, scored - len(perf), rng, frozenset(perf["record_id"].astype(str)))
        parts.append(pd.concat([imp, perf, uns]))
    return pd.concat(parts, ignore_index=True)


def queue_order(sample: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The sample in the order a person labels it: a seeded shuffle, so that stopping anywhere leaves a
    sample still stratified at random (each stratum's labelled part is a random subset of it), and the same
    seed gives the same order on every start."""
    order = np.random.default_rng([seed, 48]).permutation(len(sample))
    return sample.iloc[order].reset_index(drop=True)


def inclusion(outputs: pd.DataFrame, designed: np.ndarray) -> np.ndarray:
    """π of each output from its stratum: designed labels in the stratum over the stratum's outputs (NaN in
    a stratum without such a label). ``designed``: per output, whether a label of the designed sample is on
    it. Why per stratum and not per annotator: each annotator's queue is a random subset of each stratum, and
    so is the union of several, whatever their seeds and sizes."""
    return stratum_inclusion(stratum_of(outputs).to_numpy(), np.asarray(designed, dtype=bool))
