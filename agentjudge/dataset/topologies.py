"""The six DAG shapes as predicates over a GT dependency graph.

``check_shape`` is what Gate 1 calls to confirm a record's declared topology; it is deliberately strict
(e.g. fan_out is a star, diamond is one source and one sink joined by parallel branches) so a mislabelled
record is caught, while still accepting every variant the builder produces.
"""

from __future__ import annotations

import networkx as nx

from agentjudge.types import Record, Topology


def dag_for(record: Record) -> nx.DiGraph:
    """Nodes are GT step indices (attribute ``tool``), edges u->v mean step v consumes step u's output."""
    g = nx.DiGraph()
    for i, step in enumerate(record.gt):
        g.add_node(i, tool=step.call.name)
    g.add_edges_from(record.edges)
    return g


def _is_path(g: nx.DiGraph, nodes: list[int]) -> bool:
    """``nodes`` (in order) are joined exactly by the consecutive edges inside ``g``."""
    sub = g.subgraph(nodes)
    want = {(nodes[i], nodes[i + 1]) for i in range(len(nodes) - 1)}
    return set(sub.edges) == want


def check_shape(graph: nx.DiGraph, topology: Topology, tool_names: list[str]) -> str | None:
    """None when ``graph`` has the declared shape, else a short reason."""
    n = graph.number_of_nodes()
    if not 2 <= n <= 5:
        return f"{n} calls; every topology needs 2-5"
    if not nx.is_directed_acyclic_graph(graph):
        return "dependency graph has a cycle"
    if not nx.is_weakly_connected(graph):
        return "dependency graph is not connected"
    nodes = sorted(graph.nodes)
    indeg, outdeg = dict(graph.in_degree), dict(graph.out_degree)
    roots = [v for v in nodes if indeg[v] == 0]
    sinks = [v for v in nodes if outdeg[v] == 0]
    if topology == "linear":
        order = list(nx.topological_sort(graph))
        return None if _is_path(graph, order) else "not a single chain"
    if topology == "fan_out":
        if len(roots) != 1 or outdeg[roots[0]] < 2:
            return "fan_out needs one root feeding at least two calls"
        if any(indeg[v] != 1 or outdeg[v] != 0 for v in nodes if v != roots[0]):
            return "fan_out branches must depend only on the root and feed nothing"
        return None
    if topology == "fan_in":
        if len(sinks) != 1 or indeg[sinks[0]] < 2:
            return "fan_in needs one sink fed by at least two calls"
        if any(outdeg[v] != 1 for v in nodes if v != sinks[0]):
            return "fan_in branches must each feed exactly one later call (no shared upstream)"
        return None
    if topology == "diamond":
        if len(roots) != 1 or len(sinks) != 1 or n < 4:
            return "diamond needs one source, one sink and at least two middle calls"
        src, snk = roots[0], sinks[0]
        middle = [v for v in nodes if v not in (src, snk)]
        for v in middle:
            if set(graph.predecessors(v)) != {src} or set(graph.successors(v)) != {snk}:
                return "diamond middle calls must each go from the source to the sink"
        return None if not graph.has_edge(src, snk) else "diamond source must not feed the sink directly"
    if topology == "optional_enrichment":
        order = list(nx.topological_sort(graph))
        if _is_path(graph, order):
            return None  # condition absent (or the extra step hangs off the chain's end)
        leaves = [v for v in sinks if indeg[v] == 1]
        for leaf in leaves:
            rest = [v for v in order if v != leaf]
            parent = next(iter(graph.predecessors(leaf)))
            if len(rest) >= 2 and _is_path(graph, rest) and parent != rest[-1]:
                return None
        return "optional_enrichment needs a chain plus at most one extra step hanging off it"
    if topology == "loop_like":
        counts: dict[str, int] = {}
        for v in nodes:
            counts[tool_names[v]] = counts.get(tool_names[v], 0) + 1
        tool, reps = max(counts.items(), key=lambda kv: kv[1])
        if reps < 2:
            return "loop_like needs one tool called at least twice"
        body = [v for v in nodes if tool_names[v] == tool]
        preds = {tuple(sorted(graph.predecessors(v))) for v in body}
        if len(preds) != 1 or len(next(iter(preds))) != 1 or any(outdeg[v] for v in body):
            return "loop_like repeats must each consume the same earlier list and feed nothing"
        head = [v for v in nx.topological_sort(graph) if v not in body]
        if not head or not _is_path(graph, head) or next(iter(preds))[0] != head[-1]:
            return "loop_like needs a chain that ends in the list the repeats iterate over"
        return None
    return f"unknown topology {topology!r}"
