"""Executable tool environments (tau-bench style): deterministic functions over a per-record state.

The GT trace is produced by executing calls here, Gate 1 replays it, and the scorer executes a
generator's calls against the same initial state to compare end states (``state_match``).
"""

from __future__ import annotations

from typing import Any, Protocol

from agentjudge.types import ToolCall


class ToolError(Exception):
    """A call the environment rejects (unknown tool, bad argument, missing entity). Its message is data."""


class ToolEnvironment(Protocol):
    def execute(self, call: ToolCall) -> Any:
        """Run one call, mutate the state, return the tool's JSON-serialisable output; raise ToolError."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """A JSON-serialisable copy of the current state, for end-state comparison. (An environment may
        also offer ``state_equals(state) -> bool``, the same comparison without the copy: the scorer uses
        it when present.)"""
        ...
