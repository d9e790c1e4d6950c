"""``agentjudge run --dry-run``: how many calls, how many tokens and dollars, before spending any.

Nothing is written and no model is constructed. Tokens are counted by each model's tokenizer through
``litellm.token_counter`` (``models.prices.count_tokens``; chars/4 only where litellm fails, and then the
footnote says so) on the exact prompts the run would send (generator messages from
``LLMGenerator.messages``, judge messages from ``judges.prompts.build_messages``), where the judges'
inputs use the GT calls as a stand-in for the predictions that do not exist yet. Completion tokens are
those of a plausible answer: the GT calls for a generator, and for a judge a JSON verdict with one-sentence
rationales (x3 with chain-of-thought). Judge counts assume every prediction succeeds.

Three prices per model, all from litellm's bundled cost map (a model it does not know is "unknown", never
$0): the list price; with prefix caching, replaying the run's calls in the runner's order and pricing the
shared prefixes each call would find cached (``runner.prefixes``) at the cache-read price; and in batch
mode, at litellm's batch prices where it lists them, else the provider's documented 50 % (the footnote says
which), without caching. A fourth, batch + cache, prices the same cached prefixes at the cache-read price
*inside* a batch, only for models whose provider lists that stacking (``tokens.prices``:
``batch_cache_source``); for every other model it equals the batch price, because the cache discount is
not assumed where it is not documented.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from agentjudge.judges.prompts import needs_cache_breakpoint
from agentjudge.models.prices import batch_token_prices, cost_at, count_tokens, pipeline_prices, prices
from agentjudge.registry.model_strings import model_kind, reading_reference
from agentjudge.rundir.units import decode_result, open_readonly
from agentjudge.runner.pipeline import Pipeline
from agentjudge.runner.prefixes import PrefixCache, PromptPieces, split_messages
from agentjudge.runner.result import DryRunPlan, SampledPlan
from agentjudge.runner.store import UnitKey, from_stored
from agentjudge.runner.work import Dataset, judge_units, predict_units, prefix_order
from agentjudge.types import (
    TRAJECTORY_CONDITIONS,
    JudgeRequest,
    ModelSettings,
    Prediction,
    PromptFamily,
    PromptVariant,
    Record,
    ToolStep,
    Trajectory,
)

# A judge answer in the JSON format: four verdicts with a one-sentence justification each and an overall line.
_JUDGE_ANSWER = json.dumps(
    {
        m: {"verdict": 1.0, "justification": "x" * 110}
        for m in ("tool_selection", "parameter_structure", "sequence_accuracy", "query_coverage")
    }
    | {"overall": "x" * 160}
)
_COT_FACTOR = 3
# An interactive agent's closing message: a few sentences of prose.
_FINAL_ANSWER = "x" * 300
_JUDGE_ANSWER_CHARS = len(_JUDGE_ANSWER)


def _generator_pieces(settings: ModelSettings, data: Dataset, key: UnitKey) -> list[tuple[PromptPieces, str]]:
    """The generator's calls as (prompt, plausible answer): (tools sent as a parameter,) the system message,
    the user's query. An interactive episode is one call per GT step, each re-sending the growing
    conversation (the step's call as the answer, the GT output as the tool message), then a final answer."""
    from agentjudge.generators.llm import LLMGenerator, openai_tools

    record, difficulty = data.locate(key.record_id)
    task = data.task(record, difficulty)
    tools = json.dumps(openai_tools(task.tools)) if settings.native_tools else None

    def pieces(messages: list[dict[str, Any]], shared: int) -> PromptPieces:
        prompt = split_messages(messages)
        if tools is not None:  # providers put the tool list before the messages
            return PromptPieces((tools, *prompt.pieces), shared + 1, 0, prompt.messages)
        return PromptPieces(prompt.pieces, shared, 0, prompt.messages)

    # the system message (record prompt, rules, schemas) is the same for every difficulty
    if settings.generation != "interactive":
        messages = LLMGenerator(settings, None).messages(task)  # type: ignore[arg-type]  # no call is made
        return [(pieces(messages, 2), json.dumps([c.model_dump() for c in record.expected_calls]))]
    from agentjudge.generators.interactive import initial_messages, tool_content

    messages = initial_messages(task, settings.native_tools)
    calls: list[tuple[PromptPieces, str]] = []
    shared = 2
    for step in record.gt:
        prompt = pieces(messages, shared)
        answer = json.dumps([step.call.model_dump()])
        calls.append((prompt, answer))
        shared = len(prompt.pieces) - (1 if tools is not None else 0)  # all of it is the next call's prefix
        result = tool_content(step.output, None)
        messages = [
            *messages,
            {"role": "assistant", "content": answer},
            {"role": "tool", "content": result}
            if settings.native_tools
            else {"role": "user", "content": f"Tool results, in call order:\n{step.call.name}: {result}"},
        ]
    calls.append((pieces(messages, shared), _FINAL_ANSWER))
    return calls


def _judge_pieces(
    record: Record,
    key: UnitKey,
    data: Dataset,
    variant: PromptVariant,
    partners: dict[str, str],
    family: PromptFamily = "agentjudge",
    tool_rendering: str = "full",
) -> PromptPieces:
    from agentjudge.judges.prompts import TAG_QUERY, build_messages

    _, difficulty = data.locate(key.record_id)
    if key.condition in TRAJECTORY_CONDITIONS:  # estimated on the GT episode (calls with their outputs)
        from agentjudge.judges.trajectory import build_messages as episode_messages

        steps = [ToolStep(turn=i + 1, call=s.call, output=s.output) for i, s in enumerate(record.gt)]
        episode = Trajectory(messages=[], steps=steps, turns=len(steps) + 1, stop_reason="answered")
        req = JudgeRequest(
            task=data.task(record, difficulty),
            calls=record.expected_calls,
            variant=variant,
            trajectory=episode,
            gt=record.gt if key.condition == "trajectory_with_gt" else None,
            condition=key.condition,
        )
        return split_messages(episode_messages(req))
    gt = None
    if key.condition == "with_gt":
        gt = record.gt
    elif key.condition == "swapped_gt":
        gt = data.by_base[partners[record.id]].gt
    request = JudgeRequest(
        task=data.task(record, difficulty),
        calls=record.expected_calls,
        gt=gt,
        condition=key.condition,  # type: ignore[arg-type]
        variant=variant,
    )
    messages = build_messages(request, family, tool_rendering)  # type: ignore[arg-type]
    # ours marks the end of the record's tools and query for providers that need a breakpoint
    return split_messages(messages, breakpoint_after=TAG_QUERY if family == "agentjudge" else None)


def _shared_strings(prompt: PromptPieces, texts: dict[str, str]) -> PromptPieces:
    """The same prompt with every piece replaced by the first equal string seen (memory, not content)."""
    pieces = tuple(texts.setdefault(p, p) for p in prompt.pieces)
    return PromptPieces(pieces, prompt.shared, prompt.breakpoint, prompt.messages)


def _done_units(rundir: Path) -> set[tuple[Any, ...]]:
    db = open_readonly(rundir / "run.sqlite")
    if db is None:
        return set()
    try:
        rows = db.execute(
            "SELECT stage, record_id, difficulty, generator, generator_trial, judge, condition, variant, "
            "temperature, trial FROM units WHERE status = 'done'"
        ).fetchall()
    finally:
        db.close()
    return {tuple(r) for r in rows}


def _stored_episodes(rundir: Path | None) -> set[UnitKey]:
    """The stored predictions that carry a trajectory (a replayed trace with tool outputs): the runner
    shows them to judges under the trajectory conditions too (``work.judge_units``)."""
    db = open_readonly(rundir / "run.sqlite") if rundir is not None else None
    if db is None:
        return set()
    try:
        rows = db.execute(
            "SELECT record_id, difficulty, generator, generator_trial, result FROM units "
            "WHERE stage = 'predict' AND status = 'done'"
        ).fetchall()  # results are compressed (format version 2): the test is on the decoded text
    finally:
        db.close()
    episodes = set()
    for rid, diff, gen, trial, stored in rows:
        text = decode_result(stored)
        if (
            text is not None
            and '"trajectory"' in text
            and from_stored(Prediction, text).trajectory is not None
        ):
            episodes.add(UnitKey("predict", rid, diff, gen, trial))
    return episodes


def estimate(
    pipe: Pipeline, data: Dataset, partners: dict[str, str], rundir: Path | None, plan: Any = None
) -> list[dict[str, Any]]:
    """Per model: calls still to make, prompt/cached/completion tokens and the four prices. An interactive
    generator is counted along the GT's path (one call per GT step plus a final answer), footnoted.
    ``rundir`` None: every unit (``--force-new`` starts over, so nothing already done counts). ``plan``:
    a sampled grid's (``sampling.stages.SampledGrid``): only the units of its cells' prefixes."""
    done = _done_units(rundir) if rundir is not None else set()
    preds = predict_units(pipe, data)
    judged = judge_units(pipe, preds, data.no_gt, _stored_episodes(rundir), reading_reference(pipe.judges))
    if plan is not None:
        preds, judged = plan.predict_units(preds), plan.judge_units(judged)
    units = [u for u in [*preds, *judged] if u.row() not in done]
    units.sort(key=prefix_order)  # the order the runner makes the calls in: what the cache sees
    variants = {v.key: v for v in pipe.prompt_variants}
    settings = {("predict", m.display_name): m for m in pipe.generators}
    settings |= {("judge", m.display_name): m for m in pipe.judges}
    zero = dict.fromkeys(("calls", "prompt", "read", "written", "completion"), 0)
    tally: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: dict(zero))
    caches: dict[tuple[str, str], PrefixCache] = {}
    counted: dict[str, Any] = {"tokenizer": 0, "chars/4": 0}
    memo: dict[tuple[Any, ...], list[tuple[PromptPieces, str]]] = {}
    texts: dict[str, str] = {}  # one object per distinct piece text (a record's tools recur in every prompt)
    answers: dict[tuple[str, int], int] = {}

    def counter(model: str) -> Any:
        def count(text: str) -> int:
            n, by_tokenizer = count_tokens(model, text=text)
            counted["tokenizer" if by_tokenizer else "chars/4"] += 1
            return n

        return count

    overhead: dict[tuple[str, int], int] = {}
    counts: dict[str, dict[str, int]] = defaultdict(dict)  # per model string: piece -> tokens
    for unit in units:
        who = (unit.stage, unit.generator if unit.stage == "predict" else unit.judge)
        model = settings[who]
        t = tally[who]
        t["calls"] += 1
        if model_kind(model.model) in ("sim", "simjudge", "baseline"):
            continue  # in-process: no tokens, no money
        record, _ = data.locate(unit.record_id)
        if unit.stage == "predict":
            memo_key: tuple[Any, ...] = ("p", unit.record_id, model.native_tools, model.generation)
            if memo_key not in memo:
                memo[memo_key] = [
                    (_shared_strings(prompt, texts), answer)
                    for prompt, answer in _generator_pieces(model, data, unit)
                ]
        else:
            memo_key = ("j", unit.record_id, unit.condition, unit.variant)
            if memo_key not in memo:
                pieces = _judge_pieces(
                    record,
                    unit,
                    data,
                    variants[unit.variant],
                    partners,
                    pipe.prompt_family,
                    pipe.judge_tool_rendering,
                )
                answer = _JUDGE_ANSWER * (_COT_FACTOR if variants[unit.variant].cot else 1)
                memo[memo_key] = [(_shared_strings(pieces, texts), answer)]
        cache = caches.get(who)
        if cache is None:
            cache = caches[who] = PrefixCache(counter(model.model), _tokens=counts[model.model])
        t["calls"] += len(memo[memo_key]) - 1  # an interactive episode: one call per turn
        for prompt, answer in memo[memo_key]:
            depth = prompt.breakpoint if needs_cache_breakpoint(model.model) else prompt.shared
            if prices(model.model).cache_read is None:
                depth = 0
            tokens, read, written = cache.send(prompt, depth)
            if (model.model, prompt.messages) not in overhead:
                empty = [{"role": "user", "content": ""}] * prompt.messages
                overhead[(model.model, prompt.messages)] = count_tokens(model.model, messages=empty)[0]
            t["prompt"] += tokens + overhead[(model.model, prompt.messages)]
            t["read"] += read
            t["written"] += written
            if (model.model, len(answer)) not in answers:
                answers[(model.model, len(answer))] = cache.count(answer)
            t["completion"] += answers[(model.model, len(answer))]
    rows = []
    for (stage, name), model in settings.items():
        kind = model_kind(model.model)
        t = tally[(stage, name)]
        # in-process models cost nothing; nor does a model with no call left to make (a finished plug-in
        # whose price no one knows: $0 still to spend, not "unknown")
        free = kind in ("sim", "simjudge", "baseline") or t["calls"] == 0
        listed = prices(model.model)
        list_cost = listed.list_cost(t["prompt"], t["completion"])
        batch_cost = listed.batch_cost(t["prompt"], t["completion"])
        own = pipeline_prices(model)
        if own is not None:
            # the pipeline's own price wins for the list column (cached/batch stay litellm's, or unknown)
            list_cost = cost_at(own, t["prompt"], t["completion"])
        if model.batch:  # what the runner charges a batch answer (models.prices.batch_token_prices)
            per_token = batch_token_prices(model)
            batch_cost = None if per_token is None else cost_at(per_token, t["prompt"], t["completion"])
        rows.append(
            {
                "model": name,
                "role": "generator" if stage == "predict" else "judge",
                "kind": kind,
                "calls": t["calls"],
                "prompt_tokens": t["prompt"],
                "cached_prompt_tokens": t["read"],
                "completion_tokens": t["completion"],
                "cost_usd": 0.0 if free else list_cost,
                "cost_cached_usd": 0.0
                if free
                else listed.cached_cost(t["prompt"], t["read"], t["written"], t["completion"]),
                "cost_batch_usd": 0.0 if free else batch_cost,
                "cost_batch_cached_usd": 0.0
                if free
                else listed.batch_cached_cost(t["prompt"], t["read"], t["written"], t["completion"]),
                "batch_source": "-" if free else listed.batch_source,
                "batch_cache_source": "-" if free else listed.batch_cache_source,
                "batch": model.batch,
            }
        )
    counted["interactive"] = [m.display_name for m in pipe.generators if m.generation == "interactive"]
    rows.append({"model": "_counted", **counted})  # how the tokens were counted, for the footnote
    return rows


COST_COLUMNS = ("cost_usd", "cost_cached_usd", "cost_batch_usd", "cost_batch_cached_usd")
COST_LABELS = dict(zip(COST_COLUMNS, ("list $", "cached $", "batch $", "batch+cache $"), strict=True))
_STACKING = {
    "litellm": "litellm's cache_read_input_token_cost_batches",
    "documented 50%": "the provider's batch page: cache reads and writes at 50 %",
}


def plan(
    pipe: Pipeline,
    data: Dataset,
    rundir: Path,
    partners: dict[str, str] | None = None,
    start_over: bool = False,
) -> DryRunPlan:
    """The dry run's estimate with its notes; ``start_over`` (``--force-new``): the calls of a run that
    starts over, not of the resumed one (units already done in RUNDIR would be archived and made again)."""
    rows = estimate(pipe, data, partners or {}, None if start_over else rundir)
    counted = rows.pop()
    totals: dict[str, float] = defaultdict(float)
    unknown: dict[str, list[str]] = defaultdict(list)
    sources: dict[str, list[str]] = defaultdict(list)
    stacked: dict[str, list[str]] = defaultdict(list)  # batch+cache source -> models
    for r in rows:
        for col in COST_COLUMNS:
            if r[col] is None:
                unknown[col].append(r["model"])
            else:
                totals[col] += r[col]
        if r["batch_source"] not in ("-", "none"):
            sources[r["batch_source"]].append(r["model"])
        if r["batch_cache_source"] != "-":
            stacked[r["batch_cache_source"]].append(r["model"])
    total_line = (
        f"total: {sum(r['calls'] for r in rows)} calls; ~${totals['cost_usd']:,.2f} at list price, "
        f"~${totals['cost_cached_usd']:,.2f} with prefix caching, ~${totals['cost_batch_usd']:,.2f} in "
        f"batch mode, ~${totals['cost_batch_cached_usd']:,.2f} in batch mode with caching where documented, "
        "for models with a known price"
    )
    expected_line = None
    batch_models = [r["model"] for r in rows if r.get("batch")]
    if batch_models:
        expected = [r["cost_batch_usd"] if r.get("batch") else r["cost_usd"] for r in rows]
        known = sum(v for v in expected if v is not None)
        expected_line = (
            f"expected: ~${known:,.2f} with batch: true for {', '.join(batch_models)} (batch price) "
            "and list price for the rest; --max-cost reserves at the same prices"
        )
    notes = [
        f"prompt family {pipe.prompt_family}, judge tool rendering {pipe.judge_tool_rendering}",
        "judge calls assume every prediction succeeds",
        "tokens counted by litellm.token_counter (the model's tokenizer where litellm has one)"
        + (
            f"; chars/4 for {counted['chars/4']} text(s) litellm could not count"
            if counted["chars/4"]
            else ""
        ),
        "cached $: shared prefixes (>= 1,024 tokens, 128-token steps) at litellm's cache-read price, "
        "assuming a record's calls run within the cache lifetime (the grid order keeps them together)",
        "batch $: without caching; "
        + (
            "; ".join(f"{src} for {', '.join(names)}" for src, names in sorted(sources.items()))
            or "no batch prices"
        ),
        "batch+cache $: the cached prefixes at the in-batch cache price only where the provider lists that "
        "the two discounts stack ("
        + (
            "; ".join(
                f"{_STACKING.get(src, src)} for {', '.join(names)}"
                for src, names in sorted(stacked.items())
                if src != "none"
            )
            or "none of these models"
        )
        + "), assuming the same hits as the cached column (a provider serves cache hits inside a batch on a "
        "best-effort basis)"
        + (
            f"; equal to batch $ for {', '.join(stacked['none'])} (no documented stacking: not assumed)"
            if stacked["none"]
            else ""
        ),
    ]
    if counted["interactive"]:
        notes.append(
            f"interactive generator(s) {', '.join(counted['interactive'])}: an episode is estimated as the "
            "GT's path, one call per GT step (one tool call per turn, its GT output as the tool message) "
            "plus a final answer, each re-sending the growing conversation; an agent that strays or "
            "retries costs more"
        )
    for col, names in unknown.items():
        notes.append(f"{COST_LABELS[col]}: price unknown for {', '.join(names)} (not counted in the total)")
    sampled = None
    if pipe.sampling is not None:
        sampled = _sampled_plan(pipe, data, rundir, partners or {}, start_over, rows)
    return DryRunPlan(
        pipeline=pipe.name,
        start_over=start_over,
        rows=tuple(rows),
        total_line=total_line,
        expected_line=expected_line,
        notes=tuple(notes),
        sampled=sampled,
    )


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Calls per role and the summed prices (None when some model's price is unknown)."""
    out: dict[str, Any] = {
        "judge": sum(r["calls"] for r in rows if r["role"] == "judge"),
        "generator": sum(r["calls"] for r in rows if r["role"] == "generator"),
    }
    for col in COST_COLUMNS:
        values = [r[col] for r in rows]
        out[col] = None if any(v is None for v in values) else sum(values)
    expected = [r["cost_batch_usd"] if r.get("batch") else r["cost_usd"] for r in rows]
    out["expected"] = None if any(v is None for v in expected) else sum(expected)
    return out


def _sampled_plan(
    pipe: Pipeline,
    data: Dataset,
    rundir: Path,
    partners: dict[str, str],
    start_over: bool,
    full_rows: list[dict[str, Any]],
) -> SampledPlan:
    """Beside the full grid's estimate: the sampled grid's (``agentjudge.runner.sampling.estimate``), expected
    from the variances of earlier verdicts of the same judges when there are any, and at most (every
    cell at the largest variance a mean in [0, 1] can have)."""
    from agentjudge.runner.sampling.estimate import expected_sizes, prior_variances
    from agentjudge.runner.sampling.stages import SIZING_MARGIN, SampledGrid

    spec = pipe.sampling
    assert spec is not None
    grid = SampledGrid.build(spec, pipe, data)
    folders = [rundir, *([spec.prior_run] if spec.prior_run is not None else [])]
    priors = prior_variances(folders, pipe)
    cases = [("expected", priors), ("at most", {})] if priors else [("at most", {})]
    grids: list[tuple[str, dict[str, Any]]] = [("full (every scenario)", _totals(full_rows))]
    lines = []
    for label, prior in cases:
        sizes, sources = expected_sizes(spec, pipe, grid.population, prior)
        grid.sizes = sizes
        rows = estimate(pipe, data, partners, None if start_over else rundir, plan=grid)
        rows.pop()
        t = _totals(rows)
        grids.append((f"sampled, {label}", t))
        used = ", ".join(f"{n} from {k}" for k, n in sources.items() if n)
        if label == "expected":
            lines.append(
                f"sampled, expected: each cell's variance from earlier verdicts of the same judges "
                f"({', '.join(str(f) for f in folders)}): {used} (cells; 'same judge': its largest); the "
                "run's own stages decide from its pilot"
            )
        else:
            lines.append(
                "sampled, at most: every cell at the largest per-scenario variance a mean of values in "
                "[0, 1] can have (0.25), so no cell needs more scenarios than this (largest prefix "
                f"{max(sizes.values()):,} of {grid.population:,}): an upper bound, every cell's CI within "
                f"±{spec.target_ci_pp:g} pp"
            )
        if t["expected"] is not None and any(r.get("batch") for r in rows):
            lines.append(
                f"sampled, {label}: ~${t['expected']:,.2f} with the pipeline's batch models in batch mode"
            )
    lines.append(
        f"a cell judges a prefix of one seeded order of the {grid.population:,} base scenarios (pilot "
        f"{min(spec.pilot, grid.population):,}), sized to reach {100 * SIZING_MARGIN:.0f} % of the target "
        + ("with the finite-population correction" if spec.fpc else "without finite-population correction")
    )
    return SampledPlan(target_ci_pp=spec.target_ci_pp, grids=tuple(grids), notes=tuple(lines))
