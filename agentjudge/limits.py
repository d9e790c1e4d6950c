"""The documented maxima of every count a person gives agentjudge, and the check that a piece of work fits in
the memory this process may use, made before the work is built.

Why: a count has no natural ceiling, and a typo (``generator_trials: 1e9``, ``--resamples 1e9``) built its
grid or its bootstrap plan in memory until the kernel killed the process (21.8 GB once, starving every
other process on the machine). Each count key and flag has a maximum here, far above any real use and
named in docs/pipeline-keys.md and docs/cli.md; and work whose size follows from several counts at once (a
grid's units, a bootstrap's resample plan) is estimated from the counts first and refused when it cannot
fit (``check_fits``), with the count in the message.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

from agentjudge.errors import InputError

MAX_TRIALS = 1_000  # generator_trials, trials (pipeline keys), infer --trials
MAX_RESAMPLES = 100_000  # --resamples of report, compare, human-agree
MAX_CONCURRENCY = 10_000  # concurrency (pipeline and model), endpoint_concurrency
MAX_RETRIES = 100  # a model's max_retries
MAX_REASK = 10  # reask (parse-failure re-asks)
MAX_TURNS = 1_000  # a model's max_turns (interactive generation)
MAX_RECORDS = 10_000_000  # limit (base scenarios read)
MAX_TOKENS = 10_000_000  # a model's max_tokens
MAX_BATCH_REQUESTS = 1_000_000  # batch_max_requests
MAX_BATCH_BYTES = 1 << 40  # batch_max_bytes
MAX_PILOT = 1_000_000  # sampling.pilot
MAX_GRID_UNITS = 200_000_000  # units one run may plan (predict + judge), whatever the memory
MIN_TARGET_CI_PP = 0.01  # --target-ci / sampling.target_ci_pp (percentage points)

# Of the memory this process may use, the share one planned structure may take (the rest is the
# interpreter, the libraries, the run's other data).
USABLE_SHARE = 0.5


def check_range(flag: str, value: int, minimum: int, maximum: int) -> None:
    """A count given by a person, refused (``InputError``, naming ``flag``) outside [minimum, maximum]."""
    if not minimum <= value <= maximum:
        raise InputError(f"{flag} {value}: must be between {minimum:,} and {maximum:,}")


def available_bytes() -> int:
    """What this process may still use: the smallest of the machine's available memory (``MemAvailable``),
    its cgroup's limit and its own address-space limit (``RLIMIT_AS``, less what it has mapped already)."""
    limits = [_meminfo_available()]
    limits.append(_cgroup_limit())
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limits.append(max(0, soft - _mapped_bytes()))
    known = [x for x in limits if x is not None]
    return min(known) if known else 1 << 40


def check_fits(need_bytes: float, what: str) -> None:
    """Refuse (``InputError``) work that needs more than ``USABLE_SHARE`` of ``available_bytes``;
    ``what`` says what it is and why it is that large (the message adds the sizes)."""
    budget = int(available_bytes() * USABLE_SHARE)
    if need_bytes > budget:
        raise InputError(
            f"{what}: that needs ~{_size(need_bytes)} of memory and this process can use {_size(budget)}"
        )


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_limit() -> int | None:
    """cgroup v2's ``memory.max`` less its ``memory.current`` (None: no limit or not readable)."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        current = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        return max(0, int(limit) - current)
    except (OSError, ValueError):
        return None


def _mapped_bytes() -> int:
    """This process's virtual size (what ``RLIMIT_AS`` counts)."""
    try:
        fields = Path("/proc/self/statm").read_text().split()
        return int(fields[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
