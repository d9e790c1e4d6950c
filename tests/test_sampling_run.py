"""A sampled run (pipeline key ``sampling``, ``--target-ci``; issue 38): the key and the flag, the stages as
rounds of the grid, what a re-run adds, the run folder's record, the report's first screen, and a run
killed in its second stage that ends identical to an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from test_resume import LOG_ENV
from test_runner import make_record

from agentjudge import api
from agentjudge.commands.run import run_cli
from agentjudge.rundir.records import write_records
from agentjudge.rundir.units import store_meta, store_units
from agentjudge.runner.pipeline import (
    PipelineError,
    config_hash,
    hashed_config,
    load_pipeline,
    with_target,
)
from agentjudge.runner.sampling.spec import Sampling
from agentjudge.runner.sampling.stages import RECORD_KEY, SampledGrid
from agentjudge.runner.store import UnitKey

TESTS = Path(__file__).resolve().parent
N = 40


def _pipeline(folder: Path, **fields: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_records(
        folder / "records.jsonl", [make_record(i, "linear" if i % 3 else "fan_out") for i in range(N)]
    )
    data = {
        "name": "sampled",
        "dataset": "records.jsonl",
        "difficulties": ["easy", "hard"],
        "generators": ["sim/weak", "sim/perfect"],
        "judges": ["simjudge/careful", "baseline/rule"],
        "conditions": ["with_gt", "without_gt"],
        "scoring": "both",
        "cache": "cache.sqlite",
        "sampling": {"target_ci_pp": 8.0, "pilot": 10},
        **fields,
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _record(rundir: Path) -> dict[str, Any]:
    return json.loads((rundir / "sampling.json").read_text())


def _judged(rundir: Path) -> pd.DataFrame:
    return pd.read_parquet(rundir / "judgments.parquet")


def test_key_and_flag_are_validated(tmp_path: Path) -> None:
    path = _pipeline(tmp_path / "p", sampling={"target_ci_pp": 1.0, "pilots": 3})
    with pytest.raises(PipelineError, match=r"key `sampling.pilots`: unknown key"):
        load_pipeline(path)
    path = _pipeline(tmp_path / "q", sampling={"target_ci_pp": 0})
    with pytest.raises(PipelineError, match=r"sampling.target_ci_pp"):
        load_pipeline(path)
    pipe = load_pipeline(_pipeline(tmp_path / "r"))
    for bad in (-1.0, 0.0, float("nan"), float("inf"), 101.0):
        with pytest.raises(PipelineError, match=r"--target-ci .*: .*sampling.target_ci_pp"):
            with_target(pipe, bad)
    assert with_target(pipe, 2.5).sampling == Sampling(target_ci_pp=2.5, pilot=10)
    for bad in ("-1", "nan", "inf"):  # the command line: exit 2, one line naming the flag, nothing written
        rc = run_cli(_pipeline(tmp_path / f"c{bad}"), tmp_path / f"out{bad}", target_ci=float(bad))
        assert rc == 2
        assert not (tmp_path / f"out{bad}").exists()


def test_sampling_leaves_the_config_hash_and_an_unsampled_dump_alone(tmp_path: Path) -> None:
    sampled = load_pipeline(_pipeline(tmp_path / "p"))
    plain = sampled.model_copy(update={"sampling": None})
    assert config_hash(sampled) == config_hash(plain)
    assert "sampling" not in hashed_config(sampled)
    assert "sampling" not in plain.model_dump(mode="json")  # meta.json of an unsampled run as before
    assert sampled.model_dump(mode="json")["sampling"]["target_ci_pp"] == 8.0


def test_sampled_run_judges_prefixes_and_a_rerun_only_adds(tmp_path: Path, capsys: Any) -> None:
    pipeline, rundir = _pipeline(tmp_path / "p"), tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    record = _record(rundir)
    order = record["order"]
    assert sorted(order) == sorted(f"test-{i:04d}" for i in range(N))
    judged = _judged(rundir)
    for cell in record["cells"]:
        assert record["pilot"] <= cell["n"] <= N
        assert cell["stages"] == sorted(cell["stages"]) and cell["stages"][-1] == cell["n"]
        rows = judged[
            (judged["judge"] == cell["judge"])
            & (judged["generator"] == cell["generator"])
            & (judged["difficulty"] == cell["difficulty"])
            & (judged["condition"] == cell["condition"])
        ]
        assert set(rows["base_id"]) == set(order[: cell["n"]])  # a prefix of the one order
    planned = record["judge_units"]["planned"]
    assert planned == len(judged) // 8  # 4 metrics x 2 scoring modes per unit
    assert planned <= record["judge_units"]["full_grid"] == 2 * 2 * 2 * 2 * N
    meta = json.loads((rundir / "meta.json").read_text())
    assert meta["sampling"]["judge_units"]["planned"] == planned
    capsys.readouterr()

    assert run_cli(pipeline, rundir) == 0  # the same target: nothing to do
    assert "nothing to do" in capsys.readouterr().out

    assert run_cli(pipeline, rundir, target_ci=3.0) == 0  # tighter: only adds
    tighter = _record(rundir)
    before = {(c["judge"], c["generator"], c["difficulty"], c["condition"]): c["n"] for c in record["cells"]}
    for c in tighter["cells"]:
        assert c["n"] >= before[(c["judge"], c["generator"], c["difficulty"], c["condition"])]
    assert tighter["order"] == order
    again = _judged(rundir)
    key = ["record_id", "generator", "judge", "condition", "metric", "scoring_mode"]
    merged = judged.merge(again, on=key, suffixes=("", "_now"))
    assert len(merged) == len(judged)  # every verdict of the first run is still there, unchanged
    assert (merged["verdict"].fillna(-1) == merged["verdict_now"].fillna(-1)).all()

    assert run_cli(pipeline, rundir, target_ci=20.0) == 0  # looser: keeps what was judged
    assert _record(rundir)["cells"] == tighter["cells"]


def test_another_order_is_refused_and_an_unsampled_rerun_judges_everything(
    tmp_path: Path, capsys: Any
) -> None:
    pipeline, rundir = _pipeline(tmp_path / "p"), tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    other = _pipeline(tmp_path / "q", sampling={"target_ci_pp": 8.0, "pilot": 10, "seed": 7})
    capsys.readouterr()
    assert run_cli(other, rundir) == 2
    out = capsys.readouterr().err
    assert "sampled with seed 0 and pilot 10" in " ".join(out.split())
    unsampled = _pipeline(tmp_path / "u", sampling=None)
    assert run_cli(unsampled, rundir) == 0
    assert not (rundir / "sampling.json").exists()
    assert len(_judged(rundir)) == 2 * 2 * 2 * 2 * N * 8


def test_first_screen_says_the_run_was_sampled(tmp_path: Path) -> None:
    from agentjudge.commands.report import report_cli

    pipeline, rundir = _pipeline(tmp_path / "p"), tmp_path / "run"
    assert api.run(pipeline, rundir).status == "complete"
    assert report_cli(rundir, resamples=200, seed=0) == 0
    text = (rundir / "report" / "report.md").read_text()
    first = text.split("## Everything else")[0]
    assert "SAMPLED run" in first and "**Sampled run**" in first
    record = _record(rundir)
    share = 100 * record["judge_units"]["planned"] / record["judge_units"]["full_grid"]
    assert f"({share:.1f} %)" in first
    assert "finite-population corrected" in first


def test_cells_judged_in_full_before_count_as_complete(tmp_path: Path) -> None:
    """A judge added to a run whose other judges judged every scenario: their cells stay complete, only
    the new judge's cells start at the pilot (what an imported run extended by a judge needs)."""
    pipe = load_pipeline(_pipeline(tmp_path / "p"))
    from agentjudge.runner.run import load_dataset

    grid = SampledGrid.build(pipe.sampling, pipe, load_dataset(pipe))  # type: ignore[arg-type]
    old = [
        UnitKey("judge", f"{b}:{d}", d, g, 0, "baseline/rule", c, "v", "", 0)
        for b in grid.order
        for d in ("easy", "hard")
        for g in ("sim/weak", "sim/perfect")
        for c in ("with_gt", "without_gt")
    ]
    assert grid.open({}, old)
    for cell, n in grid.sizes.items():
        assert n == (N if cell[0] == "baseline/rule" else 10)
        assert (cell in grid.complete) == (cell[0] == "baseline/rule")
    again = SampledGrid.build(pipe.sampling, pipe, load_dataset(pipe))  # type: ignore[arg-type]
    assert not again.open({RECORD_KEY: grid.dump()}, [])  # the record is taken up as it is
    assert again.sizes == grid.sizes and again.complete == grid.complete


# ------------------------------------------------------------------------------------ SIGKILL
def _stages(store: Path) -> tuple[int, int]:
    """Stages begun and the logging judge's units done so far (a run may be writing the store)."""
    try:
        meta = store_meta(store)
        done = store_units(
            store, ["stage"], [("stage", "==", "judge"), ("judge", "==", "logger"), ("status", "==", "done")]
        )
    except sqlite3.Error:
        return 0, 0
    if meta is None or done is None:
        return 0, 0
    plan = meta.get(RECORD_KEY)
    return (len(json.loads(plan)["history"]) if plan else 0), len(done)


def test_sigkill_in_the_second_stage_then_resume_equals_uninterrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logger = {"model": "test_resume:make_logging_judge", "name": "logger", "concurrency": 2,
              "extra": {"delay": 0.02}}  # fmt: skip
    pipeline = _pipeline(
        tmp_path / "p", generators=["sim/weak"], judges=[logger], difficulties=["easy", "hard"],
        sampling={"target_ci_pp": 4.0, "pilot": 10},
    )  # fmt: skip
    monkeypatch.setenv(LOG_ENV, str(tmp_path / "ref.log"))
    assert api.run(pipeline, tmp_path / "ref").status == "complete"
    ref = _record(tmp_path / "ref")
    assert ref["stages"] >= 2, "the design must go beyond its pilot for this test"
    pilot_units = 10 * 2 * 2

    rundir = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    env[LOG_ENV] = str(tmp_path / "run.log")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentjudge", "run", str(pipeline), "--out", str(rundir)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        stages, done = _stages(rundir / "run.sqlite")
        if stages >= 2 and done >= pilot_units + 4:
            break
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read()!r}"  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert not (rundir / "judgments.parquet").exists()
    done = subprocess.run(
        [sys.executable, "-m", "agentjudge", "run", str(pipeline), "--out", str(rundir)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("predictions.parquet", "scores.parquet", "judgments.parquet", "sampling.json"):
        assert (rundir / name).read_bytes() == (tmp_path / "ref" / name).read_bytes(), name


def test_dry_run_prices_the_sampled_grid_beside_the_full_one(tmp_path: Path, capsys: Any) -> None:
    from agentjudge.runner.pipeline import Pipeline
    from agentjudge.runner.sampling.estimate import expected_sizes, prior_variances

    pipeline, rundir = _pipeline(tmp_path / "p"), tmp_path / "run"
    assert run_cli(pipeline, rundir, dry_run=True) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Sampled grid" in out and "sampled, at most" in out and "sampled, expected" not in out
    assert not rundir.exists()  # a dry run writes nothing
    pipe: Pipeline = load_pipeline(pipeline)
    spec = pipe.sampling
    assert spec is not None
    bound, sources = expected_sizes(spec, pipe, N, {})
    assert sources == {"this cell": 0, "same judge": 0, "bound": len(bound)}
    # with N = 40 scenarios the bound of a ±8 pp target at the largest variance is most of them
    assert all(spec.pilot <= n <= N for n in bound.values())
    assert run_cli(pipeline, rundir) == 0  # a run of the same judges: its verdicts are the prior
    priors = prior_variances([rundir], pipe)
    assert set(priors) >= set(bound)
    expected, sources = expected_sizes(spec, pipe, N, priors)
    assert sources["this cell"] == len(expected)
    assert all(expected[c] <= bound[c] for c in bound)
    assert run_cli(pipeline, rundir, dry_run=True, force_new=True) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "sampled, expected" in out and f"{len(expected)} from this cell" in out
