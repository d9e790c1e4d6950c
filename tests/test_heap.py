"""fastpaths/heap.py: the collector is paused inside the block and left as it was found after it."""

from __future__ import annotations

import gc

import pytest

from agentjudge.fastpaths.heap import collector_paused


def test_the_collector_is_paused_inside_and_enabled_again_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError, match="bad record"), collector_paused():
        raise ValueError("bad record")
    assert gc.isenabled()  # also after an exception


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # not switched on behind the caller's back
    finally:
        gc.enable()
