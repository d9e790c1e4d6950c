"""Programmatic scorer: the deterministic reference every judge is compared with.

E = expected (GT) calls, G = generated calls, each an ordered list of (tool, arguments).
Names: Es/Gs = sets of tool names; Em/Gm = multisets (collections.Counter); ek/gk = key sets of one call.

| metric    | paper (published reference)                   | strict (project default)                      |
|-----------|-----------------------------------------------|-----------------------------------------------|
| p_tool    | max(0, 1-(|Gs-Es|+|Es-Gs|)/max(|Es|,1))       | same over multisets, denominator max(len E,1) |
| p_cov     | |Gs&Es|/|Es|; 1 if E empty                    | |Gm&Em|/len E; 1 if E empty                   |
| p_seq     | #{i: G[i].tool==E[i].tool}/len E;             | #{i: ...}/max(len E, len G, 1);               |
|           | 1 whenever E is empty (even if G is not)      | 1 if both empty                               |
| p_param   | mean over G (denominator max(len G,1)) vs the | each E call matched to the first unused G     |
|           | LAST E call of that tool: gk==ek 1, gk>ek     | call of its tool; required key missing 0,     |
|           | 0.5, else (missing key, unknown tool) 0;      | gk==ek 1, else 0.5 (lenient: extras allowed   |
|           | 1 if G empty                                  | by the schema -> 1); mean over pairs; 0 if    |
|           |                                               | no pair; 1 if both empty                      |
| rounding  | the four above rounded to 4 decimals          | none                                          |
| p_value   | both modes: strict matching; per pair the share of E's argument values reproduced   |
|           | in G (strings case/whitespace folded, numbers rel. tol. 1e-6, lists/dicts            |
|           | recursively); a pair whose E call has no arguments counts 1; mean over pairs;         |
|           | 0 if no pair; 1 if both empty                                                         |
| p_seq_dag | both modes: share of GT edges u->v (default: consecutive pairs) whose matched G      |
|           | calls come in that order; 1 if there are no edges                                     |

The quirks of the published function that ``paper`` mode keeps on purpose, so that its
numbers are the paper's numbers on every input:
- tool names are SETS in p_tool and p_cov: a loop_like record's repeated tool counts once, so a missing or
  extra repeat costs nothing there;
- p_seq divides by len E only: extra trailing calls are free; and it is 1.0 whenever E is empty, even when
  calls were made where none were expected;
- p_param keys the expected calls by tool name and the LAST expected call of a name wins (the published code
  fills a dict, so a later repeat overwrites an earlier one): with E = G = [get{id}, get{id,verbose}] the
  first generated call is compared with {id,verbose} and scores 0.0, the second scores 1.0, p_param 0.5;
- p_param is a mean over GENERATED calls, so an unknown extra call costs (scores 0) and an empty G scores 1.0;
- argument values are never compared; a key set that has every expected key plus extras scores 0.5 even
  when the schema allows the extras; a missing optional key scores 0.0;
- the four scores are rounded to 4 decimals (Python ``round(x, 4)``); p_value and p_seq_dag are ours and are
  not rounded.
``tests/test_scoring_paper.py`` transcribes the published code independently of this module and checks
that ``paper`` mode equals it on thousands of generated cases.

Decisions where the spec leaves room (documented so that reports can cite them):
- strict "missing required key": required = the tool schema's ``required`` list when the tool's schema is
  known (intersected with the expected call's keys: the GT is the reference, so a GT call that omits a
  schema-required key never makes its exact copy score 0); when the schema is unknown (tools not given, or the
  tool is absent from them), all of the expected call's keys.
- lenient (strict p_param only): a pair whose generated keys are all expected keys plus extras that the tool
  schema's ``properties`` allow scores 1 instead of 0.5; a missing optional key still scores 0.5; with the
  schema unknown no extra key is allowed.
- strict p_param / p_value with E empty and G empty: 1 (nothing to get wrong); E empty, G not empty: 0.
- records whose GT has two or more calls and no dependency at all (published files without
  ``dependency_edges``) have unknown dependencies: ``prepare`` then takes the GT order as a chain.
- p_seq_dag matching: expected calls in index order (GT dependencies point backwards), each takes the first
  unused G call of its tool positioned after all its predecessors' matches, else the first unused one
  (an edge from the latest predecessor then fails); an unmatched endpoint fails the edge. A stray extra call
  before the right one does not break an edge; the matching is greedy, not an optimal assignment.
- numbers: a numeric string in G ("42") matches the number 42 (single-shot generators often quote numbers);
  booleans match only booleans.
- accepted values (imported records, ``GTStep.accepted``): p_value counts a GT argument as reproduced when G's
  value matches ANY accepted value, and when G leaves out an argument the answer marks optional ("" among
  its accepted values); ``value_matches`` says which accepted value each argument matched. The paper/strict
  p_tool, p_param, p_seq, p_cov and p_seq_dag do not read accepted values. On imported records without
  dependencies (BFCL "parallel": call order means nothing), p_value pairs repeated calls of one tool by the
  values they reproduce instead of by position; the other metrics keep their published pairing.

Speed: ``prepare`` precomputes everything that depends on the record only; ``score_prepared`` works on plain
``(name, arguments)`` tuples, so bulk scoring (``score_many``) constructs no pydantic objects.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agentjudge.types import Prediction, Record, Score, ScoringMode, ToolCall, ToolSchema

METRIC_FIELDS: tuple[str, ...] = ("p_tool", "p_param", "p_seq", "p_cov", "p_value", "p_seq_dag")
REL_TOL = 1e-6
ABS_TOL = 1e-9

PlainCall = tuple[str, dict[str, Any]]
Number = int | float
_UNSET: Any = object()


class PreparedRecord:
    """Everything about E that scoring needs, computed once per record (GT and tools are shared by the
    three difficulty variants and by every generator, so one record is scored thousands of times)."""

    __slots__ = (
        "names",
        "args",
        "keys",
        "required",
        "allowed",
        "set_e",
        "n",
        "preds",
        "edges",
        "last_keys",
        "items",
        "checks",
        "unique",
        "gt_state",
        "accepted",
        "unordered",
    )

    def __init__(
        self,
        expected: Sequence[PlainCall],
        edges: Iterable[tuple[int, int]] | None,
        tools: Sequence[ToolSchema] | None,
        accepted: Sequence[dict[str, list[Any]] | None] | None = None,
        unordered: bool = False,
    ) -> None:
        self.unordered = unordered  # independent calls whose order means nothing (BFCL parallel)
        self.accepted: tuple[dict[str, list[Any]] | None, ...] = (
            tuple(accepted) if accepted is not None else (None,) * len(expected)
        )
        self.names: tuple[str, ...] = tuple(name for name, _ in expected)
        self.args: tuple[dict[str, Any], ...] = tuple(args for _, args in expected)
        self.keys: tuple[frozenset[str], ...] = tuple(frozenset(a) for a in self.args)
        self.n = len(self.names)
        schemas = {t.name: t.parameters for t in tools} if tools is not None else {}
        req: list[frozenset[str]] = []
        allowed: list[frozenset[str]] = []
        for name, keys in zip(self.names, self.keys, strict=True):
            params = schemas.get(name)
            if params is None:
                req.append(keys)
                allowed.append(keys)
            else:
                req.append(frozenset(params.get("required") or ()) & keys)
                allowed.append(frozenset((params.get("properties") or {}).keys()) | keys)
        self.required = tuple(req)
        self.allowed = tuple(allowed)
        self.set_e = frozenset(self.names)
        # paper p_param: expected key sets by tool name, a later repeat overwriting an earlier one
        self.last_keys: dict[str, frozenset[str]] = dict(zip(self.names, self.keys, strict=True))
        if edges is None:
            edge_list = [(i - 1, i) for i in range(1, self.n)]
        else:
            edge_list = sorted(set(edges))
            for u, v in edge_list:
                if not (0 <= u < self.n and 0 <= v < self.n) or u == v:
                    raise ValueError(f"edge {u}->{v} is out of range for {self.n} expected calls")
        self.edges: tuple[tuple[int, int], ...] = tuple(edge_list)
        preds: list[list[int]] = [[] for _ in range(self.n)]
        for u, v in self.edges:
            preds[v].append(u)
        self.preds = tuple(tuple(p) for p in preds)
        # per call: (key, GT value, whether Python == on a same-typed value already implies values_match)
        self.items: tuple[tuple[tuple[str, Any, bool], ...], ...] = tuple(
            tuple((k, v, _eq_implies_match(v)) for k, v in a.items()) for a in self.args
        )
        # per call: the items that dict equality alone cannot vouch for (numbers and booleans: 1 == True)
        self.checks = tuple(
            tuple(
                (k, v, not isinstance(v, list | dict)) for k, v, eq in it if not eq or isinstance(v, Number)
            )
            for it in self.items
        )
        self.unique = len(self.set_e) == self.n  # no repeated tool: matching needs no bookkeeping
        self.gt_state: Any = _UNSET  # (GT end state, GT write steps), filled by outcome() on first use


def _eq_implies_match(v: Any) -> bool:
    """True when ``v == g`` for a ``g`` of the same type guarantees ``values_match(v, g)``: scalars, and
    containers without numbers or booleans inside (``[1] == [True]`` holds in Python, not here)."""
    if isinstance(v, list):
        return all(_eq_implies_match(x) and not isinstance(x, int | float) for x in v)
    if isinstance(v, dict):
        return all(_eq_implies_match(x) and not isinstance(x, int | float) for x in v.values())
    return True


def prepare(record: Record) -> PreparedRecord:
    """Precompute a record's scoring data (its GT edges and tool schemas). Every topology with two or more
    calls has edges, so a record with none has UNKNOWN dependencies (a published file without
    ``dependency_edges``): p_seq_dag then reads the GT order as a chain, the only order it can trust."""
    edges = record.edges
    known = bool(edges) or record.source == "imported"  # imported: independent calls, known to have none
    return PreparedRecord(
        [(s.call.name, s.call.arguments) for s in record.gt],
        edges if known else None,
        record.tools,
        [s.accepted for s in record.gt],
        unordered=record.source == "imported" and not edges,
    )


def _fold(s: str) -> str:
    return " ".join(s.split()).casefold()


def _as_number(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int | float):
        return float(x)
    if isinstance(x, str):
        try:
            return float(x.strip())
        except ValueError:
            return None
    return None


def values_match(expected: Any, generated: Any) -> bool:
    """Whether a generated argument value reproduces the GT value (see the module table)."""
    if isinstance(expected, bool) or isinstance(generated, bool):
        return isinstance(expected, bool) and isinstance(generated, bool) and expected == generated
    if isinstance(expected, int | float) or isinstance(generated, int | float):
        a, b = _as_number(expected), _as_number(generated)
        if a is None or b is None or math.isnan(a) or math.isnan(b):
            return False
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(expected, str) and isinstance(generated, str):
        return expected == generated or _fold(expected) == _fold(generated)
    if isinstance(expected, list | tuple) and isinstance(generated, list | tuple):
        return len(expected) == len(generated) and all(
            values_match(a, b) for a, b in zip(expected, generated, strict=True)
        )
    if isinstance(expected, dict) and isinstance(generated, dict):
        return expected.keys() == generated.keys() and all(
            values_match(v, generated[k]) for k, v in expected.items()
        )
    return bool(expected is None and generated is None)


def accepted_match(alternative: Any, generated: Any) -> bool:
    """Whether a generated value matches one accepted alternative (BFCL nesting: a dict-typed argument's
    alternative is a dict of accepted-value lists; a key whose list holds "" may be left out)."""
    from agentjudge.dataset.resolve import is_nested_alternative

    if is_nested_alternative(alternative):
        if not isinstance(generated, dict) or not generated.keys() <= alternative.keys():
            return False
        return all(
            ("" in alts) if key not in generated else _which(alts, generated[key]) is not None
            for key, alts in alternative.items()
        )
    if isinstance(alternative, list) and isinstance(generated, list):
        return len(alternative) == len(generated) and all(
            accepted_match(a, g) for a, g in zip(alternative, generated, strict=True)
        )
    return values_match(alternative, generated)


def _which(alternatives: list[Any], generated: Any) -> int | None:
    """Index of the first accepted alternative the generated value matches ("" never matches a value)."""
    for k, alt in enumerate(alternatives):
        if not (isinstance(alt, str) and alt == "") and accepted_match(alt, generated):
            return k
    return None


def _accepted_hit(prep: PreparedRecord, i: int, key: str, g: Any) -> bool:
    accepted = prep.accepted[i]
    if accepted is None or key not in accepted:
        return False
    if g is _MISSING:
        return "" in accepted[key]
    return _which(accepted[key], g) is not None


def _value_pairs(
    prep: PreparedRecord, generated: Sequence[PlainCall], pairs: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """For p_value on unordered records: the same number of pairs per tool, but each expected call takes
    the unused generated call of its tool that reproduces most of its values (ties: the earliest)."""
    taken: set[int] = set()
    out: list[tuple[int, int]] = []
    for i, _ in pairs:
        best, best_hits = -1, -1.0
        for j, (name, _args) in enumerate(generated):
            if name != prep.names[i] or j in taken:
                continue
            hits = _pair_totals(prep, generated, [(i, j)], False)[1]
            if hits > best_hits:
                best, best_hits = j, hits
        taken.add(best)
        out.append((i, best))
    return out


def value_matches(record: Record, calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """For each GT call matched to a generated call (strict pairing): per GT argument, which accepted value
    the generated one matched (its index in the accepted list; 0 for a record without accepted values),
    "omitted" when it was left out and the answer allows that, or None when it matched nothing."""
    prep = prepare(record)
    generated = [(c.name, c.arguments) for c in calls]
    pairs, _, _ = _match(prep, [name for name, _ in generated])
    if prep.unordered and not prep.unique:
        pairs = _value_pairs(prep, generated, pairs)
    out: list[dict[str, Any]] = []
    for i, j in pairs:
        g_args = generated[j][1]
        accepted = prep.accepted[i] or {}
        per_key: dict[str, int | str | None] = {}
        for key, v in prep.args[i].items():
            g = g_args.get(key, _MISSING)
            alts = accepted.get(key)
            if alts is None:
                per_key[key] = 0 if g is not _MISSING and values_match(v, g) else None
            elif g is _MISSING:
                per_key[key] = "omitted" if "" in alts else None
            else:
                per_key[key] = _which(alts, g)
        out.append({"expected": i, "generated": j, "tool": prep.names[i], "arguments": per_key})
    return out


def _match(prep: PreparedRecord, names_g: Sequence[str]) -> tuple[list[tuple[int, int]], float, int]:
    """Strict pairs (each expected call -> the first unused generated call of its tool), p_seq_dag, and the
    number of positions where G and E name the same tool."""
    if prep.unique:
        first = {name: j for j, name in enumerate(names_g)}
        if len(first) == len(names_g):  # no repeated tool on either side: the common case, no bookkeeping
            match = [first.get(name, -1) for name in prep.names]
            pairs = [(i, j) for i, j in enumerate(match) if j >= 0]
            positional = sum(1 for i, j in pairs if i == j)  # tools are unique, so same position = same tool
            if not prep.edges:
                return pairs, 1.0, positional
            ok = 0
            for u, v in prep.edges:
                if 0 <= match[u] < match[v]:
                    ok += 1
            return pairs, ok / len(prep.edges), positional
    positional = 0
    for a, b in zip(prep.names, names_g, strict=False):
        if a == b:
            positional += 1
    positions: dict[str, list[int]] = {}
    for j, name in enumerate(names_g):
        if name in positions:
            positions[name].append(j)
        else:
            positions[name] = [j]
    pairs = []
    n_edges = len(prep.edges)
    if prep.unique:
        match = [-1] * prep.n
        for i, name in enumerate(prep.names):
            pos = positions.get(name)
            if pos is None:
                continue
            pairs.append((i, pos[0]))
            if n_edges:
                chosen = pos[0]
                if len(pos) > 1:  # repeated in G: take the first occurrence after the predecessors
                    after = max((match[u] for u in prep.preds[i]), default=-1)
                    for j in pos:
                        if j > after:
                            chosen = j
                            break
                match[i] = chosen
    else:
        used: dict[str, int] = {}
        for i, name in enumerate(prep.names):
            pos = positions.get(name)
            if pos is None:
                continue
            k = used.get(name, 0)
            if k < len(pos):
                pairs.append((i, pos[k]))
                used[name] = k + 1
        match = _dag_match(prep, positions) if n_edges else []
    if not n_edges:
        return pairs, 1.0, positional
    ok = 0
    for u, v in prep.edges:
        if 0 <= match[u] < match[v]:
            ok += 1
    return pairs, ok / n_edges, positional


def _dag_match(prep: PreparedRecord, positions: dict[str, list[int]]) -> list[int]:
    """Order-respecting matching for repeated tools: each expected call (in index order) takes the first
    unused generated call of its tool after its predecessors' matches, else the first unused one."""
    taken: set[int] = set()
    match: list[int] = [-1] * prep.n
    for v, name in enumerate(prep.names):
        cands = positions.get(name)
        if not cands:
            continue
        after = max((match[u] for u in prep.preds[v]), default=-1)
        chosen = -1
        for j in cands:
            if j in taken:
                continue
            if chosen < 0:
                chosen = j
            if j > after:
                chosen = j
                break
        if chosen >= 0:
            taken.add(chosen)
            match[v] = chosen
    return match


_MISSING = object()


def _pair_totals(
    prep: PreparedRecord, generated: Sequence[PlainCall], pairs: list[tuple[int, int]], lenient: bool
) -> tuple[float, float]:
    """Sums over matched pairs of the strict key-set score and of the share of GT values reproduced."""
    param = value = 0.0
    keys, required, items, args_e = prep.keys, prep.required, prep.items, prep.args
    for i, j in pairs:
        g_args = generated[j][1]
        if g_args == args_e[i]:  # the common case: a faithful copy; only numbers/booleans need a look
            param += 1.0
            it = items[i]
            if not it:
                value += 1.0
                continue
            miss = 0
            for k, v, scalar in prep.checks[i]:
                g = g_args[k]
                if scalar and type(g) is type(v) and v == v:  # equal, same type, not NaN
                    continue
                if not values_match(v, g) and not _accepted_hit(prep, i, k, g):
                    miss += 1
            value += 1.0 - miss / len(it)
            continue
        gk = g_args.keys()
        if gk >= required[i]:
            ek = keys[i]
            if gk == ek or (lenient and gk >= ek and gk <= prep.allowed[i]):
                param += 1.0
            else:
                param += 0.5
        it = items[i]
        if not it:
            value += 1.0
            continue
        hit = 0
        for k, v, safe in it:
            g = g_args.get(k, _MISSING)
            if g is _MISSING:
                if _accepted_hit(prep, i, k, g):  # an argument the answer marks optional
                    hit += 1
                continue
            if (safe and type(v) is type(g) and v == g) or values_match(v, g) or _accepted_hit(prep, i, k, g):
                hit += 1
        value += hit / len(it)
    return param, value


def score_prepared(
    prep: PreparedRecord, generated: Sequence[PlainCall], mode: ScoringMode, lenient: bool = False
) -> tuple[float, float, float, float, float, float]:
    """The hot path: (p_tool, p_param, p_seq, p_cov, p_value, p_seq_dag) for plain (name, args) calls."""
    names_g = [c[0] for c in generated]
    n_e, n_g = prep.n, len(names_g)
    pairs, p_seq_dag, positional = _match(prep, names_g)
    n_pairs = len(pairs)
    both_empty = n_e == 0 and n_g == 0
    if pairs:
        param_total, value_total = _pair_totals(prep, generated, pairs, lenient)
        if prep.unordered and not prep.unique:
            value_total = _pair_totals(prep, generated, _value_pairs(prep, generated, pairs), lenient)[1]
        p_value = value_total / n_pairs
    else:
        param_total = 0.0
        p_value = 1.0 if both_empty else 0.0
    if mode == "strict":
        # multiset sizes: |Gm & Em| = n_pairs, |Gm - Em| = n_g - n_pairs, |Em - Gm| = n_e - n_pairs
        p_tool = 1.0 - (n_g + n_e - 2 * n_pairs) / (n_e or 1)
        if p_tool < 0.0:
            p_tool = 0.0
        p_cov = n_pairs / n_e if n_e else 1.0
        p_seq = 1.0 if both_empty else positional / (n_e if n_e > n_g else n_g or 1)
        p_param = param_total / n_pairs if pairs else (1.0 if both_empty else 0.0)
    elif mode == "paper":
        set_e = prep.set_e
        set_g = set(names_g)
        n_se = len(set_e)
        shared = len(set_g & set_e)  # |G∖E| = |Gs| − shared, |E∖G| = |Es| − shared: one set operation
        p_tool = max(0.0, 1.0 - (len(set_g) + n_se - 2 * shared) / (n_se or 1))
        p_cov = shared / n_se if n_se else 1.0
        p_seq = positional / n_e if n_e else 1.0
        if n_g == 0:
            p_param = 1.0
        else:
            total = 0.0
            last = prep.last_keys
            for name, args in generated:
                ek = last.get(name)
                if ek is None:
                    continue
                gk = args.keys()
                if gk == ek:
                    total += 1.0
                elif gk >= ek:
                    total += 0.5
            p_param = total / n_g
        p_tool, p_param, p_seq, p_cov = round(p_tool, 4), round(p_param, 4), round(p_seq, 4), round(p_cov, 4)
    else:
        raise ValueError(f"unknown scoring mode {mode!r} (expected 'paper' or 'strict')")
    return p_tool, p_param, p_seq, p_cov, p_value, p_seq_dag


def score_many(
    items: Iterable[tuple[PreparedRecord, Sequence[PlainCall]]], mode: ScoringMode, lenient: bool = False
) -> list[tuple[float, float, float, float, float, float]]:
    """Bulk scoring over (prepared record, plain calls) pairs; no pydantic objects are built."""
    return [score_prepared(prep, gen, mode, lenient) for prep, gen in items]


def score_calls(
    expected: list[ToolCall],
    generated: list[ToolCall],
    mode: ScoringMode,
    *,
    edges: list[tuple[int, int]] | None = None,
    tools: list[ToolSchema] | None = None,
    lenient: bool = False,
) -> dict[str, float]:
    """All six scores of one prediction; ``edges`` None means the GT is a chain (consecutive pairs)."""
    prep = PreparedRecord([(c.name, c.arguments) for c in expected], edges, tools)
    values = score_prepared(prep, [(c.name, c.arguments) for c in generated], mode, lenient)
    return dict(zip(METRIC_FIELDS, values, strict=True))


def _default_env_factory(record: Record) -> Any:
    from agentjudge.dataset.world import environment_for

    return environment_for(record)


def gt_trace(record: Record, env_factory: Callable[[Record], Any] | None) -> tuple[Any, tuple[int, ...]]:
    """(GT end state, indices of the GT steps that change the state); (None, ()) without an environment.
    A step is a write when executing it changes the snapshot: no tool metadata needed, any environment."""
    from agentjudge.dataset.env import ToolError

    env = (env_factory or _default_env_factory)(record)
    if env is None:
        return None, ()
    writes: list[int] = []
    before = env.snapshot()  # copied again after a write only
    for i, step in enumerate(record.gt):
        try:
            env.execute(step.call)
        except ToolError as exc:
            raise ValueError(
                f"record {record.id}: GT step {i} ({step.call.name}) fails to execute: {exc}"
            ) from exc
        if not _in_state(env, before):
            writes.append(i)
            before = env.snapshot()
    return before, tuple(writes)


def _in_state(env: Any, state: Any) -> bool:
    """Whether ``env`` is in ``state`` (a snapshot): compared in place by an environment that can
    (``DomainEnvironment.state_equals``), else through a snapshot. Copying the world only to compare it
    was a large share of scoring's time (at the end state of every prediction and after every GT step)."""
    equals = getattr(env, "state_equals", None)
    return bool(equals(state) if equals is not None else env.snapshot() == state)


def gt_end_state(record: Record, env_factory: Callable[[Record], Any] | None = None) -> dict[str, Any] | None:
    """The snapshot after executing the GT calls on a fresh environment; None without an environment."""
    state: dict[str, Any] | None = gt_trace(record, env_factory)[0]
    return state


def _gt_prepared(
    record: Record, env_factory: Any, prepared: PreparedRecord | None
) -> tuple[Any, tuple[int, ...]]:
    if prepared is not None and prepared.gt_state is not _UNSET:
        return prepared.gt_state
    trace = gt_trace(record, env_factory)
    if prepared is not None:
        prepared.gt_state = trace
    return trace


def replayed_calls(prediction: Prediction) -> list[ToolCall]:
    """The calls that reached the environment, in order: an interactive prediction's executed steps (its
    failed calls included: the environment saw them), else the planned calls."""
    if prediction.trajectory is not None:
        return [s.call for s in prediction.trajectory.steps if s.executed]
    return list(prediction.calls or [])


def outcome(
    record: Record,
    calls: Sequence[ToolCall],
    *,
    env_factory: Callable[[Record], Any] | None = None,
    prepared: PreparedRecord | None = None,
) -> tuple[bool | None, float | None, list[int]]:
    """Execute ``calls`` from the record's initial state: (state_match, writes_done, GT write steps done).

    ``writes_done`` is the share of the GT's state-changing steps that some successful call reproduced
    exactly (same tool, every GT argument value matched; each call counts once); None when the GT changes
    nothing or there is no environment. A call the environment rejects (ToolError) counts for nothing."""
    from agentjudge.dataset.env import ToolError

    target, writes = _gt_prepared(record, env_factory, prepared)
    if target is None:
        return None, None, []
    env = (env_factory or _default_env_factory)(record)
    succeeded: list[ToolCall] = []
    for call in calls:
        try:
            env.execute(call)
        except ToolError:
            continue
        succeeded.append(call)
    done: list[int] = []
    used: set[int] = set()
    for i in writes:
        gt = record.gt[i].call
        for j, call in enumerate(succeeded):
            if j in used or call.name != gt.name:
                continue
            if all(
                k in call.arguments and values_match(v, call.arguments[k]) for k, v in gt.arguments.items()
            ):
                used.add(j)
                done.append(i)
                break
    share = len(done) / len(writes) if writes else None
    return _in_state(env, target), share, done


def state_match(
    record: Record,
    calls: Sequence[ToolCall],
    *,
    env_factory: Callable[[Record], Any] | None = None,
    prepared: PreparedRecord | None = None,
) -> bool | None:
    """tau-bench's state-based check: do the predicted calls leave the record's environment in the state
    the GT calls leave it in? None when the record has no executable environment. A predicted call the
    environment rejects (ToolError) fails and changes nothing; a failing GT call means a broken record.
    With ``prepared``, the GT end state is computed once per record and kept there (same env factory)."""
    return outcome(record, calls, env_factory=env_factory, prepared=prepared)[0]


def score_prediction(
    record: Record,
    prediction: Prediction,
    mode: ScoringMode,
    *,
    lenient: bool = False,
    prepared: PreparedRecord | None = None,
    with_state: bool = True,
    state: tuple[bool | None, float | None] | bool | None = None,
    env_factory: Callable[[Record], Any] | None = None,
) -> Score:
    """Score one prediction. Failed predictions (``calls`` None) are not scored: the caller counts them.
    ``state`` passes (state_match, writes_done) computed earlier (e.g. once for both modes; a bare bool is
    state_match alone); ``with_state=False`` skips both (None). The §6 metrics are on every call made;
    the outcome executes the calls that reached the environment (``replayed_calls``)."""
    if prediction.calls is None:
        raise ValueError(
            f"prediction {prediction.record_id} / {prediction.generator} / trial {prediction.trial} failed "
            f"({prediction.error!r}); failures are counted, not scored"
        )
    if prediction.base_id != record.id:
        raise ValueError(
            f"prediction {prediction.record_id} has base_id {prediction.base_id!r}, record is {record.id!r}"
        )
    prep = prepared or prepare(record)
    values = score_prepared(prep, [(c.name, c.arguments) for c in prediction.calls], mode, lenient)
    if isinstance(state, bool):
        state = (state, None)
    if state is None and with_state:
        match, writes, _ = outcome(record, replayed_calls(prediction), env_factory=env_factory, prepared=prep)
        state = (match, writes)
    return Score(
        record_id=prediction.record_id,
        generator=prediction.generator,
        trial=prediction.trial,
        scoring_mode=mode,
        state_match=state[0] if state else None,
        writes_done=state[1] if state else None,
        **dict(zip(METRIC_FIELDS, values, strict=True)),
    )


def score_row(record: Record, difficulty: str, score: Score) -> dict[str, Any]:
    """One row of scores.parquet / the score verb's output (columns: ``rundir.columns.SCORE_COLUMNS``)."""
    return {
        "record_id": score.record_id,
        "base_id": record.id,
        "domain": record.domain,
        "topology": record.topology,
        "difficulty": difficulty,
        "generator": score.generator,
        "trial": score.trial,
        "scoring_mode": score.scoring_mode,
        **{field: getattr(score, field) for field in METRIC_FIELDS},
        "state_match": score.state_match,
        "source": record.source,
        "writes_done": score.writes_done,
    }
