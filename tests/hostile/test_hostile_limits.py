"""Sizes nobody can plan: every count bounded, a grid larger than the machine can hold refused before it is
enumerated, bootstrap resamples bounded (issue items 7 and 10).

Each case runs the verb in a child process limited to 1 GiB of address space (``harness.child``): before
the fix these verbs grew until the kernel killed them (21.8 GB once, on this machine); here they would die
of the limit instead, and the case checks exit 2, one line naming the key and the count, and the child's
peak resident memory under 1 GiB.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import mini_records, write_pipeline
from harness import GIB, child, child_env, refused

HUGE = "1000000000"


def _env(tmp: Path) -> dict[str, str]:
    return child_env(AGENTJUDGE_CACHE=str(tmp / "calls.sqlite"))


def _small(o_peak: int | None) -> None:
    assert o_peak is not None and o_peak < GIB, o_peak


@pytest.mark.parametrize("dry_run", [True, False])
@pytest.mark.parametrize("key", ["generator_trials", "trials"])
def test_a_count_key_of_a_billion_is_refused_naming_it(tmp_path: Path, key: str, dry_run: bool) -> None:
    pipeline = write_pipeline(tmp_path, **{key: int(HUGE)})
    args = ["run", pipeline, "--out", tmp_path / "run", *(["--dry-run"] if dry_run else [])]
    o = child(*args, env=_env(tmp_path), timeout=60)
    refused(o, str(pipeline), key)
    _small(o.peak)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_grid_larger_than_the_machine_can_plan_is_refused_with_its_count(
    tmp_path: Path, dry_run: bool
) -> None:
    """Every key within its bound, their product ~10^10 units: refused from the counts, before any unit is
    made."""
    pipeline = write_pipeline(
        tmp_path,
        records=60,
        difficulties=["easy", "medium", "hard"],
        generators=["sim/weak", "sim/mid", "sim/strong", "sim/frontier", "sim/perfect"],
        generator_trials=1000,
        judges=["baseline/rule", "baseline/always-1", "baseline/ceiling"],
        conditions=["with_gt", "without_gt", "swapped_gt"],
        trials=1000,
    )
    args = ["run", pipeline, "--out", tmp_path / "run", *(["--dry-run"] if dry_run else [])]
    o = child(*args, env=_env(tmp_path), timeout=60)
    line = refused(o, str(pipeline))
    assert (
        "8,100,000,000" in line
    )  # 180 records x 5 generators x 1000 trials x 3 judges x 3 conditions x 1000
    _small(o.peak)
    assert not (tmp_path / "run").exists()


def test_infer_trials_of_a_billion_is_refused(tmp_path: Path) -> None:
    data = mini_records(tmp_path)
    out = tmp_path / "p.jsonl"
    o = child("infer", data, "--generator", "sim/weak", "--out", out, "--trials", HUGE, env=_env(tmp_path))
    refused(o, "--trials")
    _small(o.peak)
    assert not out.exists()


@pytest.mark.parametrize("verb", ["report", "compare", "human-agree"])
def test_a_billion_resamples_is_refused(tmp_path: Path, finished_run: Path, verb: str) -> None:
    args: list[str | Path] = {
        "report": ["report", finished_run],
        "compare": ["compare", finished_run, finished_run, "--out", tmp_path / "c"],
        "human-agree": ["human-agree", finished_run, tmp_path / "labels.csv"],
    }[verb]
    (tmp_path / "labels.csv").write_text(
        "base_id,topology,agree_tool,agree_param,agree_seq,agree_cov\n"
        "grid-0000,linear,yes,yes,no,yes\nairline-0000,linear,yes,no,yes,yes\n"
    )
    o = child(*args, "--resamples", HUGE, env=_env(tmp_path), timeout=60)
    refused(o, "--resamples")
    _small(o.peak)
    assert not (tmp_path / "c").exists()


def test_a_bootstrap_plan_larger_than_memory_is_refused_before_it_is_drawn(tmp_path: Path) -> None:
    """Within the resamples' bound but over many clusters: the plan's size is checked before numpy is asked
    for it (a child under the 1 GiB limit, so a missing check fails the case instead of the machine)."""
    code = (
        "from agentjudge.stats import ClusterBootstrap\n"
        "from agentjudge.errors import InputError\n"
        "try:\n"
        "    ClusterBootstrap([str(i) for i in range(200_000)], resamples=100_000, seed=0)\n"
        "except InputError as exc:\n"
        "    print('refused:', exc)\n"
    )
    import subprocess

    from harness import _limits

    done = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: _limits(GIB, False, False),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("refused:") and "--resamples" in done.stdout
