"""Speed-ups that reach into other projects' internals (litellm, httpx, pyarrow, CPython's collector), fenced.

Each module here makes the runner faster without changing anything it writes: the same predictions, scores,
judgments and report, byte for byte (``tests/test_fast_paths_off.py`` runs the quick start both ways). Each
one depends on how a library behaves inside, which a new release may change; each falls back to the plain
path when what it looks for is not there. README.md beside this file lists them with what they patch, why
(the measured gain) and how they fall back.

One switch turns every one of them off: ``AGENTJUDGE_NO_FAST_PATHS=1`` in the environment (any value but
empty or ``0``). Core code never reads the variable: it asks a function of this package, which answers
with the plain behaviour when the switch is set. Set it before the process starts: a path installed once
per process (the httpx wrapper, litellm's warm-up) is not taken back when the variable changes later.
"""

from __future__ import annotations

import os

OFF_SWITCH = "AGENTJUDGE_NO_FAST_PATHS"


def enabled() -> bool:
    """Whether the fast paths are on (the default): ``AGENTJUDGE_NO_FAST_PATHS`` unset, empty or ``0``."""
    return os.environ.get(OFF_SWITCH, "").strip() in ("", "0")
