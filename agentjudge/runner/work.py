"""The units of a grid and the pure steps between stages (no I/O, no scheduling).

Kept apart from ``grid.py`` so the enumeration of a grid -- which is what a dry run counts, what a resumed
run compares against the store, and what the export joins on -- is one small, testable piece of code.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from typing import Any

from agentjudge.errors import InputError
from agentjudge.memo import exact_key, remembered
from agentjudge.runner.pipeline import Pipeline
from agentjudge.runner.store import UnitKey, temperature_key, temperature_value
from agentjudge.types import (
    METRICS,
    TRAJECTORY_CONDITIONS,
    Condition,
    Difficulty,
    JudgeRequest,
    Metric,
    Prediction,
    PromptVariant,
    Record,
    Score,
    ScoringMode,
    Task,
    ToolCall,
)

_HELD_PER_RECORD = 512  # tasks and expected responses remembered (each process of a run holds its own)
ScoreKey = tuple[str, str, int]  # record_id, generator display name, generator trial


class GridError(InputError):
    """The dataset and the pipeline do not make a runnable grid (bad input, exit code 2)."""


@dataclass
class Gate1Check:
    """Gate 1 over the records a run read (``resume_cache.gate1_check``): ``failing`` as
    ``validate.gate1_failures`` gives it; ``context`` the cache key it is kept under; ``cached`` when it
    came from the store (nothing to write back). Defined here, beside ``Dataset`` that carries it."""

    failing: dict[str, list[str]]
    record_ids: list[str]
    context: str
    cached: bool


@dataclass
class Dataset:
    """The records of one run, indexed the ways the stages need them."""

    records: list[Record]
    skipped_invalid: int = 0  # records left out for failing Gate 1 (--skip-invalid)
    sha256: str = ""  # of the file the records were read from (grid.load_dataset); "" when not from a file
    gate1: Gate1Check | None = None  # of the records read (grid.load_dataset), else None

    def __post_init__(self) -> None:
        self.by_base = {r.id: r for r in self.records}
        # base ids of the records without GT (``Record.gt_known`` false): never scored, judged without GT
        self.no_gt = frozenset(r.id for r in self.records if not r.gt_known)
        self._responses: dict[str, list[dict[str, Any]]] = {}
        self._tasks: dict[tuple[str, str], Task] = {}
        if len(self.by_base) != len(self.records):
            counts = Counter(r.id for r in self.records)
            dups = sorted(base for base, n in counts.items() if n > 1)
            raise GridError(f"dataset: duplicate base scenario id(s) {dups[:5]}")

    def expected_responses(self, record: Record) -> list[dict[str, Any]]:
        """``layout.expected_responses(record)``, built once per record (every judge unit that shows the
        record's GT needs it; building it was a fifth of an offline judge unit's cost)."""
        from agentjudge.rundir.records import expected_responses

        # units come a record at a time: a few records' worth is enough
        return remembered(self._responses, record.id, _HELD_PER_RECORD, lambda: expected_responses(record))

    def locate(self, record_id: str) -> tuple[Record, Difficulty]:
        base, _, difficulty = record_id.rpartition(":")
        return self.by_base[base], difficulty  # type: ignore[return-value]

    def task(self, record: Record, difficulty: Difficulty) -> Task:
        """The task of ``record`` at ``difficulty``; built once per record of this dataset and difficulty
        (every unit of a record asks for it: a paper grid builds ~10^6 judge requests)."""
        if self.by_base.get(record.id) is not record:  # not this dataset's record: built, not remembered
            return _task_of(record, difficulty)
        key = (record.id, difficulty)
        return remembered(self._tasks, key, _HELD_PER_RECORD, lambda: _task_of(record, difficulty))


def _task_of(record: Record, difficulty: Difficulty) -> Task:
    if difficulty not in record.queries:
        raise GridError(f"record {record.id}: no query for difficulty {difficulty!r}")
    return record.task(difficulty)


def swap_partners(records: Iterable[Record]) -> dict[str, str]:
    """For the swapped-GT control: each base id -> the next base id of the same source and topology (sorted,
    wrapping).

    Deterministic so that a resumed run and a fresh run give a judge exactly the same wrong GT.
    """
    by_topology: dict[tuple[str, str], list[str]] = defaultdict(list)
    for record in records:  # never a partner of the other source: an imported task gets an imported GT
        if record.gt_known:  # a record without GT has none to lend, and is never shown another's
            by_topology[(record.source, record.topology)].append(record.id)
    partners: dict[str, str] = {}
    lonely = []
    for (source, topology), ids in sorted(by_topology.items()):
        ids.sort()
        if len(ids) < 2:
            lonely.append(topology if source == "synthetic" else f"{topology} ({source})")
            continue
        for i, base in enumerate(ids):
            partners[base] = ids[(i + 1) % len(ids)]
    if lonely:
        raise GridError(
            f"condition swapped_gt needs at least two records per topology; only one record of "
            f"{', '.join(lonely)} (raise `limit`, or drop swapped_gt from `conditions`)"
        )
    return partners


# memory one planned unit holds while a run plans, runs and exports it (its key, its status, its place in
# the scheduler's queues): ~230 bytes measured in a quickstart run whose generator trials were doubled
# (~140 in its dry run), doubled for the export's peak and the interpreter's growth
BYTES_PER_UNIT = 500


def planned_counts(pipeline: Pipeline, records: int) -> tuple[int, int]:
    """The grid's predict and judge units, counted from the pipeline's axes before any unit is made (the
    most there can be: the trajectory conditions counted for every generator)."""
    predict = records * len(pipeline.difficulties) * len(pipeline.generators) * pipeline.generator_trials
    per_prediction = (
        len(pipeline.judges)
        * len(pipeline.conditions)
        * len(pipeline.prompt_variants)
        * len(pipeline.temperatures)
        * pipeline.trials
    )
    return predict, predict * per_prediction


def check_grid_size(pipeline: Pipeline, records: int, source: str) -> None:
    """Refuse (``GridError``, naming the pipeline file ``source`` and the counts) a grid larger than a run
    can plan: more units than ``limits.MAX_GRID_UNITS``, or more than this process's memory holds at
    ``BYTES_PER_UNIT`` each. Counted, never enumerated: a billion units is refused in microseconds."""
    from agentjudge.limits import MAX_GRID_UNITS, check_fits

    predict, judge = planned_counts(pipeline, records)
    total = predict + judge
    what = (
        f"{source}: the grid has {judge:,} judge units and {predict:,} predict units ({records:,} records x "
        f"{len(pipeline.difficulties)} difficulties x {len(pipeline.generators)} generators x "
        f"{pipeline.generator_trials} generator_trials, each judged by {len(pipeline.judges)} judges x "
        f"{len(pipeline.conditions)} conditions x {len(pipeline.prompt_variants)} prompt variants x "
        f"{len(pipeline.temperatures)} temperatures x {pipeline.trials} trials); make it smaller (fewer "
        "trials, judges or records: `limit`), or split it into several runs"
    )
    if total > MAX_GRID_UNITS:
        raise GridError(f"{what} (at most {MAX_GRID_UNITS:,} units can be planned)")
    try:
        check_fits(total * BYTES_PER_UNIT, what)
    except InputError as exc:
        raise GridError(str(exc)) from None


def predict_units(pipeline: Pipeline, data: Dataset) -> list[UnitKey]:
    return [
        UnitKey("predict", record.record_id(d), d, gen.display_name, t)
        for gen in pipeline.generators
        for record in data.records
        for d in pipeline.difficulties
        for t in range(pipeline.generator_trials)
    ]


GT_CONDITIONS: frozenset[str] = frozenset({"with_gt", "swapped_gt", "trajectory_with_gt"})  # show a GT


def judge_units(
    pipeline: Pipeline,
    predictions: Iterable[UnitKey],
    no_gt: Container[str] = frozenset(),
    episodes: Container[UnitKey] = frozenset(),
    oracles: Container[str] = frozenset(),
) -> list[UnitKey]:
    """Every judge x successful prediction x condition x variant x temperature x trial, except:

    - the trajectory conditions only for a prediction that has outputs to show: one of an interactive
      generator, or one in ``episodes`` (a recorded trace with tool outputs, replayed by ``imported/``);
    - a record in ``no_gt`` (base ids of records without GT, ``Record.gt_known`` false) only under the
      conditions that show no GT, and never by a judge in ``oracles`` (display names of judges that read
      the programmatic reference, which such a record does not have)."""
    interactive = {g.display_name for g in pipeline.generators if g.generation == "interactive"}
    # what does not depend on the prediction, computed once (a paper grid has ~10^6 units)
    per_judge = [
        (judge.display_name, condition, variant.key, temperature_key(temp), trial)
        for judge in pipeline.judges
        for condition in pipeline.conditions
        for variant in pipeline.prompt_variants
        for temp in pipeline.temperatures
        for trial in range(pipeline.trials)
    ]
    single_shot = [c for c in per_judge if c[1] not in TRAJECTORY_CONDITIONS]
    blind = [c for c in per_judge if c[1] not in GT_CONDITIONS and c[0] not in oracles]
    blind_single_shot = [c for c in blind if c[1] not in TRAJECTORY_CONDITIONS]
    units = []
    for p in predictions:
        shown = p.generator in interactive or p in episodes
        if no_gt and p.record_id.rpartition(":")[0] in no_gt:
            rest = blind if shown else blind_single_shot
        else:
            rest = per_judge if shown else single_shot
        units += [
            UnitKey("judge", p.record_id, p.difficulty, p.generator, p.generator_trial, *r) for r in rest
        ]
    return units


def prefix_order(unit: UnitKey) -> tuple[Any, ...]:
    """The order a model works through its units: calls that share a prompt prefix next to each other.

    Judge prompts of one base scenario share its tools (and, per difficulty, its query); per condition and
    variant they share the instructions and the reference; only the calls under review differ between
    generators. So the key is base, difficulty, condition, variant, temperature, trial, and the generator
    last: every judge call on one record is made in one stretch, while the provider's prefix cache (a few
    minutes' lifetime) still holds the record. Predictions of one base (all difficulties) likewise.
    """
    base = unit.record_id.rpartition(":")[0]
    return (
        unit.stage,
        base,
        unit.difficulty,
        unit.condition,
        unit.variant,
        unit.temperature,
        unit.trial,
        unit.generator,
        unit.generator_trial,
        unit.judge,
    )


def compute_scores(
    data: Dataset,
    predictions: dict[UnitKey, Prediction],
    modes: list[ScoringMode],
    lenient: bool,
    on_scored: Callable[[], None] | None = None,
) -> dict[ScoreKey, dict[ScoringMode, Score]]:
    """Programmatic scores of every successful prediction, per scoring mode (§6).

    A prediction whose calls (and calls that reached the environment) are exactly those of an earlier
    prediction of the same base record gets that prediction's scores, under its own ids: a score is a
    function of the record and the calls alone (the environment is seeded by the record), and on a paper
    grid a third of the predictions repeat one (sim/perfect's at every difficulty, and often strong's):
    executing and matching them again took the grid's scoring phase from ~11 to ~13 s on 2 cores."""
    from agentjudge.scoring.scorer import prepare, replayed_calls, score_prediction

    out: dict[ScoreKey, dict[ScoringMode, Score]] = {}
    prepared: dict[str, Any] = {}
    # the scores of the current base record's predictions so far, by _calls_key; its predictions are
    # usually adjacent in key order (but not always: base ids "r" and "r:f" interleave), and the memo is
    # emptied whenever the base record changes, so it never holds another record's scores
    alike: dict[bytes, dict[ScoringMode, Score]] = {}
    current: str | None = None
    for key in sorted(predictions):
        prediction = predictions[key]
        record, _ = data.locate(key.record_id)
        if not record.gt_known:  # nothing to score against: no reference exists (never a default one)
            continue
        if record.id not in prepared:
            prepared[record.id] = prepare(record)
        if record.id != current:
            alike.clear()
            current = record.id
        prep = prepared[record.id]
        same = _calls_key(prediction, replayed_calls) if prediction.base_id == record.id else None
        earlier = alike.get(same) if same is not None else None
        per_mode: dict[ScoringMode, Score] = {}
        if earlier is not None:
            own = {
                "record_id": prediction.record_id,
                "generator": prediction.generator,
                "trial": prediction.trial,
            }
            per_mode = {mode: score.model_copy(update=own) for mode, score in earlier.items()}
        else:
            state: tuple[bool | None, float | None] | None = None
            for mode in modes:  # the end-state check does not depend on the mode: execute it once
                score = score_prediction(
                    record, prediction, mode, lenient=lenient, prepared=prep, state=state
                )
                state = (score.state_match, score.writes_done)
                per_mode[mode] = score
            if same is not None:
                alike[same] = per_mode
        out[(key.record_id, key.generator, key.generator_trial)] = per_mode
        if on_scored is not None:
            on_scored()
    return out


def _calls_key(
    prediction: Prediction, replayed_calls: Callable[[Prediction], list[ToolCall]]
) -> bytes | None:
    """The calls a prediction is scored on, spelled exactly (``memo.exact_key``): its calls and, for an
    interactive one, those that reached the environment (``scoring.replayed_calls``); None when there are
    none to score (failed) or they hold something other than plain values."""
    if prediction.calls is None:
        return None
    replayed = None
    if prediction.trajectory is not None:
        replayed = [(c.name, c.arguments) for c in replayed_calls(prediction)]
    return exact_key(([(c.name, c.arguments) for c in prediction.calls], replayed))


_FIELD: dict[Metric, str] = {"tool": "p_tool", "param": "p_param", "seq": "p_seq", "cov": "p_cov"}


def reference(scores: dict[ScoringMode, Score]) -> dict[ScoringMode, dict[Metric, float]]:
    """The programmatic reference per scoring mode and metric, as oracle baselines receive it."""
    return {mode: {m: float(getattr(s, _FIELD[m])) for m in METRICS} for mode, s in scores.items()}


def judge_request(
    key: UnitKey,
    data: Dataset,
    prediction: Prediction,
    variants: dict[str, PromptVariant],
    partners: dict[str, str],
    ref: dict[ScoringMode, dict[Metric, float]] | None,
    outcome_ref: bool | None = None,
    generator: str | None = None,
) -> JudgeRequest:
    record, difficulty = data.locate(key.record_id)
    condition: Condition = key.condition  # type: ignore[assignment]
    shown: Record | None = None  # the record whose GT the judge sees
    if condition in ("with_gt", "trajectory_with_gt"):
        shown = record
    elif condition == "swapped_gt":
        shown = data.by_base[partners[record.id]]
    # built without validation: every field is already of its type (the dataset's and the store's validated
    # models, the grid's own values); validating copied every list and was a sixth of an offline judge
    # unit's cost. tests/test_judge_request.py holds it equal to the validated request
    return JudgeRequest.model_construct(
        task=data.task(record, difficulty),
        calls=prediction.calls or [],
        gt=shown.gt if shown is not None else None,
        gt_responses=data.expected_responses(shown) if shown is not None else None,
        condition=condition,
        variant=variants[key.variant],
        temperature=temperature_value(key.temperature),
        trial=key.trial,
        reference=ref,
        trajectory=prediction.trajectory if condition in TRAJECTORY_CONDITIONS else None,
        outcome_reference=outcome_ref,
        generator=generator,
    )
