"""A naive, independent reading of SPEC §6 for the strict metrics, p_value and p_seq_dag (tests only).

Written from the spec's sentences and the decisions listed in agentjudge/scoring/scorer.py's docstring, with
plain loops and no import from agentjudge.scoring.scorer, so that a formula bug in the scorer shows up as a
disagreement instead of being computed twice. Slow on purpose: clarity over speed.

Paper mode is not here (its transcription of the published code is tested in tests/test_scoring.py).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

Call = tuple[str, dict[str, Any]]
Schemas = dict[str, dict[str, Any]]  # tool name -> JSON Schema of its parameters


def _number(x: Any) -> float | None:
    """A number, or a string that reads as one; booleans are not numbers."""
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


def same_value(expected: Any, generated: Any) -> bool:
    """Does the generated value reproduce the GT value? Booleans only equal booleans; numbers (or numeric
    strings facing a number) within relative 1e-6 / absolute 1e-9; strings equal after folding case and
    runs of whitespace; lists element by element; dicts key by key; null only equals null."""
    if isinstance(expected, bool) or isinstance(generated, bool):
        return type(expected) is bool and type(generated) is bool and expected == generated
    if isinstance(expected, int | float) or isinstance(generated, int | float):
        a, b = _number(expected), _number(generated)
        if a is None or b is None or math.isnan(a) or math.isnan(b):
            return False
        return abs(a - b) <= max(1e-6 * max(abs(a), abs(b)), 1e-9)
    if isinstance(expected, str) and isinstance(generated, str):
        return (
            " ".join(expected.split()).lower() == " ".join(generated.split()).lower() or expected == generated
        )
    if isinstance(expected, list) and isinstance(generated, list):
        if len(expected) != len(generated):
            return False
        return all(same_value(expected[i], generated[i]) for i in range(len(expected)))
    if isinstance(expected, dict) and isinstance(generated, dict):
        if set(expected) != set(generated):
            return False
        return all(same_value(expected[k], generated[k]) for k in expected)
    return expected is None and generated is None


def strict_pairs(expected: list[Call], generated: list[Call]) -> list[tuple[int, int]]:
    """Each expected call, in order, takes the first generated call of the same tool not taken yet."""
    taken: set[int] = set()
    pairs = []
    for i, (name, _) in enumerate(expected):
        for j, (gname, _) in enumerate(generated):
            if gname == name and j not in taken:
                taken.add(j)
                pairs.append((i, j))
                break
    return pairs


def _key_score(
    e_name: str, e_args: dict[str, Any], g_args: dict[str, Any], schemas: Schemas | None, lenient: bool
) -> float:
    expected_keys = set(e_args)
    generated_keys = set(g_args)
    schema = (schemas or {}).get(e_name)
    if schema is None:
        required = expected_keys
        allowed = expected_keys
    else:
        required = set(schema.get("required") or []) & expected_keys
        allowed = set(schema.get("properties") or {}) | expected_keys
    if not required <= generated_keys:
        return 0.0
    if generated_keys == expected_keys:
        return 1.0
    if lenient and expected_keys <= generated_keys and generated_keys <= allowed:
        return 1.0
    return 0.5


def _dag_positions(expected: list[Call], generated: list[Call], edges: list[tuple[int, int]]) -> list[int]:
    """Where each expected call sits in G for p_seq_dag: in index order, the first unused call of its tool
    after all its predecessors' positions, else the first unused one; -1 when the tool is absent."""
    position = [-1] * len(expected)
    used: set[int] = set()
    for v, (name, _) in enumerate(expected):
        preds = [u for (u, w) in edges if w == v]
        after = max([position[u] for u in preds], default=-1)
        free = [j for j, (gname, _) in enumerate(generated) if gname == name and j not in used]
        if not free:
            continue
        later = [j for j in free if j > after]
        position[v] = later[0] if later else free[0]
        used.add(position[v])
    return position


def strict_scores(
    expected: list[Call],
    generated: list[Call],
    edges: list[tuple[int, int]] | None = None,
    schemas: Schemas | None = None,
    lenient: bool = False,
) -> dict[str, float]:
    """The four strict metrics plus p_value and p_seq_dag; ``edges`` None means a chain."""
    n_e, n_g = len(expected), len(generated)
    both_empty = n_e == 0 and n_g == 0
    e_tools = Counter(name for name, _ in expected)
    g_tools = Counter(name for name, _ in generated)
    extra = sum((g_tools - e_tools).values())
    missing = sum((e_tools - g_tools).values())
    shared = sum((g_tools & e_tools).values())
    p_tool = max(0.0, 1.0 - (extra + missing) / max(n_e, 1))
    p_cov = shared / n_e if n_e else 1.0
    same_place = sum(1 for i in range(min(n_e, n_g)) if expected[i][0] == generated[i][0])
    p_seq = 1.0 if both_empty else same_place / max(n_e, n_g, 1)
    pairs = strict_pairs(expected, generated)
    if pairs:
        keys = [
            _key_score(expected[i][0], expected[i][1], generated[j][1], schemas, lenient) for i, j in pairs
        ]
        shares = []
        for i, j in pairs:
            e_args, g_args = expected[i][1], generated[j][1]
            if not e_args:
                shares.append(1.0)
                continue
            hits = sum(1 for k in e_args if k in g_args and same_value(e_args[k], g_args[k]))
            shares.append(hits / len(e_args))
        p_param = sum(keys) / len(keys)
        p_value = sum(shares) / len(shares)
    else:
        p_param = p_value = 1.0 if both_empty else 0.0
    chain = [(i - 1, i) for i in range(1, n_e)]
    gt_edges = chain if edges is None else sorted(set(edges))
    if gt_edges:
        position = _dag_positions(expected, generated, gt_edges)
        in_order = sum(
            1 for u, v in gt_edges if position[u] >= 0 and position[v] >= 0 and position[u] < position[v]
        )
        p_seq_dag = in_order / len(gt_edges)
    else:
        p_seq_dag = 1.0
    return {
        "p_tool": p_tool,
        "p_param": p_param,
        "p_seq": p_seq,
        "p_cov": p_cov,
        "p_value": p_value,
        "p_seq_dag": p_seq_dag,
    }
