"""Bad input to every verb: exit 2, one line on stderr naming the file, the line and the field (or the flag
or key), nothing on stdout that reads as an error, no traceback, nothing written (issue items 4, 11, 12,
16, 17 and the corpus's other shapes, verb by verb).

Each case builds its input in ``tmp_path``, runs the verb in this process (``harness.cli``) and checks the
refusal with ``harness.refused``; where a verb would write, the case also checks that nothing was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import MINI, mini_records, tau_episode, tau_file, write_pipeline
from harness import bfcl_files, cli, refused

BINARY = bytes(range(256)) * 16  # not UTF-8, not JSON, not YAML, not Parquet


@dataclass
class Case:
    """One hostile input: the arguments of the verb, what its one line must name, how many stderr lines
    the verb may print (a preflight prints one per problem and a count), what must not exist after."""

    args: list[str | Path]
    naming: tuple[str, ...]
    max_lines: int = 1
    absent: tuple[Path, ...] = ()


CASES: dict[str, Callable[[Path, Any], Case]] = {}


def case(name: str) -> Callable[[Callable[[Path, Any], Case]], Callable[[Path, Any], Case]]:
    def register(fn: Callable[[Path, Any], Case]) -> Callable[[Path, Any], Case]:
        CASES[name] = fn
        return fn

    return register


class Fixtures:
    """The session fixtures a case may use, fetched only when it asks."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.request = request

    @property
    def run(self) -> Path:
        return self.request.getfixturevalue("finished_run")

    def fresh_run(self) -> Path:
        return self.request.getfixturevalue("fresh_run")()

    @property
    def predictions(self) -> tuple[Path, Path]:
        return self.request.getfixturevalue("mini_predictions")


def binary(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(BINARY)
    return path


def text(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------- validate
@case("validate: missing file")  # item 16: the error went to stdout
def _(tmp: Path, fx: Any) -> Case:
    return Case(["validate", tmp / "nope.jsonl"], (str(tmp / "nope.jsonl"),))


@case("validate: binary file")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["validate", binary(tmp / "b.jsonl")], (str(tmp / "b.jsonl"), "line 1"))


@case("validate: empty file")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["validate", text(tmp / "e.jsonl", "")], (str(tmp / "e.jsonl"),))


@case("validate: a folder")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["validate", tmp], (str(tmp),))


@case("validate: a torn last record")
def _(tmp: Path, fx: Any) -> Case:
    lines = MINI.read_text(encoding="utf-8").splitlines(keepends=True)[:3]
    path = text(tmp / "torn.jsonl", "".join(lines[:2]) + lines[2][:200])
    return Case(["validate", path], (str(path), "line 3"))


# ---------------------------------------------------------------------------------------------- audit
@case("audit: missing file")  # item 16
def _(tmp: Path, fx: Any) -> Case:
    return Case(["audit", tmp / "nope.jsonl"], (str(tmp / "nope.jsonl"),))


@case("audit: unknown difficulty")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["audit", mini_records(tmp), "--difficulty", "brutal"], ("brutal",))


# ------------------------------------------------------------------------------------------- generate
@case("generate: unknown size")  # item 16
def _(tmp: Path, fx: Any) -> Case:
    return Case(["generate", "--out", tmp / "d", "--size", "huge"], ("--size",), absent=(tmp / "d",))


@case("generate: --out is a file")  # item 16
def _(tmp: Path, fx: Any) -> Case:
    return Case(["generate", "--out", text(tmp / "f", "x")], ("--out", str(tmp / "f")))


# ---------------------------------------------------------------------------------------------- infer
@case("infer: --out with another suffix")
def _(tmp: Path, fx: Any) -> Case:
    out = tmp / "p.txt"
    return Case(
        ["infer", mini_records(tmp), "--generator", "sim/weak", "--out", out], ("--out",), absent=(out,)
    )


@case("infer: unknown difficulty")
def _(tmp: Path, fx: Any) -> Case:
    out = tmp / "p.jsonl"
    args = ["infer", mini_records(tmp), "--generator", "sim/weak", "--out", out, "--difficulty", "brutal"]
    return Case(args, ("--difficulty", "brutal"), absent=(out,))


@case("infer: an existing output that is binary")
def _(tmp: Path, fx: Any) -> Case:
    out = binary(tmp / "p.jsonl")
    return Case(["infer", mini_records(tmp), "--generator", "sim/weak", "--out", out], (str(out),))


@case("infer: missing records")
def _(tmp: Path, fx: Any) -> Case:
    out = tmp / "p.jsonl"
    return Case(
        ["infer", tmp / "nope.jsonl", "--generator", "sim/weak", "--out", out], (str(tmp / "nope.jsonl"),)
    )


@case("infer: unknown simulated generator")
def _(tmp: Path, fx: Any) -> Case:
    out = tmp / "p.jsonl"
    args = ["infer", mini_records(tmp), "--generator", "sim/nobody", "--out", out]
    return Case(args, ("--generator", "sim/nobody"), max_lines=2, absent=(out,))


# ---------------------------------------------------------------------------------------------- score
def _dup_predictions(tmp: Path, fx: Any) -> tuple[Path, Path]:
    data, preds = fx.predictions
    lines = preds.read_text(encoding="utf-8").splitlines(keepends=True)
    return data, text(tmp / "dup.jsonl", "".join(lines[:12] + lines[5:6]))


@case("score: a prediction twice")  # item 4
def _(tmp: Path, fx: Any) -> Case:
    data, preds = _dup_predictions(tmp, fx)
    out = tmp / "s.csv"
    return Case(["score", data, preds, "--out", out], (str(preds), "line 13", "line 6"), absent=(out,))


@case("score: a prediction of a record not in the records file")  # item 17: no file named
def _(tmp: Path, fx: Any) -> Case:
    data, preds = fx.predictions
    few = mini_records(tmp, 2)
    out = tmp / "s.csv"
    return Case(["score", few, preds, "--out", out], (str(preds), "line 7"), absent=(out,))


@case("score: binary predictions parquet")
def _(tmp: Path, fx: Any) -> Case:
    data, _ = fx.predictions
    preds = binary(tmp / "p.parquet")
    return Case(["score", data, preds, "--out", tmp / "s.csv"], (str(preds),), absent=(tmp / "s.csv",))


@case("score: binary records file")
def _(tmp: Path, fx: Any) -> Case:
    _, preds = fx.predictions
    data = binary(tmp / "r.jsonl")
    return Case(["score", data, preds, "--out", tmp / "s.csv"], (str(data),), absent=(tmp / "s.csv",))


@case("score: unknown mode")
def _(tmp: Path, fx: Any) -> Case:
    data, preds = fx.predictions
    return Case(["score", data, preds, "--out", tmp / "s.csv", "--mode", "lax"], ("--mode",))


@case("score: --out is a folder")
def _(tmp: Path, fx: Any) -> Case:
    data, preds = fx.predictions
    (tmp / "s.csv").mkdir()
    return Case(["score", data, preds, "--out", tmp / "s.csv"], ("--out", str(tmp / "s.csv")))


@case("score: a trial that is NaN")
def _(tmp: Path, fx: Any) -> Case:
    data, preds = fx.predictions
    lines = preds.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[2])
    lines[2] = json.dumps(row).replace(f'"trial": {row["trial"]}', '"trial": NaN') + "\n"
    path = text(tmp / "nan.jsonl", "".join(lines))
    return Case(["score", data, path, "--out", tmp / "s.csv"], (str(path), "line 3", "trial"))


# ------------------------------------------------------------------------------------------------ run
@case("run: a binary pipeline file")  # item 11
def _(tmp: Path, fx: Any) -> Case:
    path = binary(tmp / "p.yaml")
    return Case(["run", path, "--out", tmp / "run"], (str(path),), absent=(tmp / "run",))


@case("run: a pipeline with a YAML syntax error")
def _(tmp: Path, fx: Any) -> Case:
    path = text(tmp / "p.yaml", "name: x\ndataset: [unclosed\n")
    return Case(["run", path, "--out", tmp / "run"], (str(path), "line"), absent=(tmp / "run",))


@case("run: a pipeline that is a list")
def _(tmp: Path, fx: Any) -> Case:
    path = text(tmp / "p.yaml", "- a\n- b\n")
    return Case(["run", path, "--out", tmp / "run"], (str(path),), absent=(tmp / "run",))


@case("run: a misspelt key")
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp, judgez=["baseline/rule"])
    return Case(["run", path, "--out", tmp / "run"], (str(path), "judgez"), absent=(tmp / "run",))


@case("run: a missing pipeline file")  # item 16
def _(tmp: Path, fx: Any) -> Case:
    return Case(["run", tmp / "nope.yaml", "--out", tmp / "run"], ("nope.yaml",), absent=(tmp / "run",))


@case("run: --max-cost nan")
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp)
    return Case(
        ["run", path, "--out", tmp / "run", "--max-cost", "nan"], ("--max-cost",), absent=(tmp / "run",)
    )


@case("run: --max-cost -1")
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp)
    return Case(
        ["run", path, "--out", tmp / "run", "--max-cost", "-1"], ("--max-cost",), absent=(tmp / "run",)
    )


@case("run: --target-ci 1e-300")  # item 12
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp)
    return Case(
        ["run", path, "--out", tmp / "run", "--target-ci", "1e-300"], ("--target-ci",), absent=(tmp / "run",)
    )


@case("run: --target-ci 0")
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp)
    return Case(
        ["run", path, "--out", tmp / "run", "--target-ci", "0"], ("--target-ci",), absent=(tmp / "run",)
    )


@case("run: a missing dataset")
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp, dataset="nope.jsonl")
    return Case(["run", path, "--out", tmp / "run"], ("nope.jsonl",), absent=(tmp / "run",))


@case("run: a binary dataset")
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp, dataset="bin.jsonl")
    binary(tmp / "bin.jsonl")
    return Case(["run", path, "--out", tmp / "run"], (str(tmp / "bin.jsonl"),), absent=(tmp / "run",))


@case("run: --out is a file")
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp)
    return Case(["run", path, "--out", text(tmp / "f", "x")], ("--out", str(tmp / "f")), max_lines=2)


@case("run: generator_trials -1")
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp, generator_trials=-1)
    return Case(["run", path, "--out", tmp / "run"], (str(path), "generator_trials"), absent=(tmp / "run",))


@case("run: concurrency 10**12")  # item 7: every count key bounded
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp, concurrency=10**12)
    return Case(["run", path, "--out", tmp / "run"], (str(path), "concurrency"), absent=(tmp / "run",))


@case("run: a judge's max_retries 10**9")  # item 7
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp, judges=[{"model": "baseline/rule", "max_retries": 10**9}])
    return Case(["run", path, "--out", tmp / "run"], (str(path), "max_retries"), absent=(tmp / "run",))


@case("run: an unknown simulated judge")
def _(tmp: Path, fx: Any) -> Case:
    path = write_pipeline(tmp, judges=["baseline/nobody"])
    return Case(["run", path, "--out", tmp / "run"], ("baseline/nobody",), max_lines=2, absent=(tmp / "run",))


# --------------------------------------------------------------------------------- report and compare
@case("report: not a folder")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["report", tmp / "nope"], (str(tmp / "nope"),))


@case("report: a run still being written")  # item 17
def _(tmp: Path, fx: Any) -> Case:
    from agentjudge.runner.rundir_lock import RunFolderLock

    run = tmp / "run"
    run.mkdir()
    (run / "run.sqlite").write_bytes((fx.run / "run.sqlite").read_bytes())
    lock = RunFolderLock(run)
    lock.acquire()
    fx.request.addfinalizer(lock.release)
    return Case(["report", run], (str(run), "in progress"), absent=(run / "report",))


@case("report: a damaged meta.json")
def _(tmp: Path, fx: Any) -> Case:
    run = fx.fresh_run()
    (run / "meta.json").write_text("{not json")
    return Case(["report", run], (str(run / "meta.json"),), absent=(run / "report",))


@case("report: unknown --ci")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["report", fx.run, "--ci", "wide"], ("--ci",))


@case("compare: one folder")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["compare", fx.run, "--out", tmp / "c"], ("two",), absent=(tmp / "c",))


@case("compare: a folder that holds no run")
def _(tmp: Path, fx: Any) -> Case:
    (tmp / "empty").mkdir()
    return Case(
        ["compare", fx.run, tmp / "empty", "--out", tmp / "c"], (str(tmp / "empty"),), absent=(tmp / "c",)
    )


# ------------------------------------------------------------------------------------ view and batches
@case("view: not a run folder")  # item 16
def _(tmp: Path, fx: Any) -> Case:
    return Case(["view", tmp], (str(tmp),))


@case("view: --port 70000")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["view", fx.run, "--port", "70000"], ("--port",))


@case("batches: a damaged store")  # item 17
def _(tmp: Path, fx: Any) -> Case:
    binary(tmp / "run" / "run.sqlite")
    return Case(["batches", tmp / "run"], (str(tmp / "run" / "run.sqlite"), "damaged"))


@case("batches: not a folder")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["batches", tmp / "nope"], (str(tmp / "nope"),))


# ------------------------------------------------------------------------- human-sample, human-agree
@case("human-sample: --n 0")
def _(tmp: Path, fx: Any) -> Case:
    return Case(
        ["human-sample", fx.run, "--n", "0", "--out", tmp / "s.csv"], ("--n",), absent=(tmp / "s.csv",)
    )


@case("human-sample: not a run folder")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["human-sample", tmp, "--out", tmp / "s.csv"], (str(tmp),), absent=(tmp / "s.csv",))


@case("human-sample: a difficulty the run has not")
def _(tmp: Path, fx: Any) -> Case:
    out = tmp / "s.csv"
    return Case(["human-sample", fx.run, "--difficulty", "medium", "--out", out], ("medium",), absent=(out,))


def _labels(tmp: Path, fx: Any, rows: Callable[[list[list[str]]], list[list[str]]]) -> Path:
    """The annotators' CSV of the finished run with every agree_* cell "yes", its rows passed through
    ``rows``."""
    import csv
    import io

    sample = tmp / "sample.csv"
    assert cli("human-sample", fx.run, "--n", "8", "--out", sample).code == 0
    table = list(csv.reader(io.StringIO(sample.read_text(encoding="utf-8"))))
    header, body = table[0], table[1:]
    for row in body:
        for i, col in enumerate(header):
            if col.startswith("agree_"):
                row[i] = "yes"
    buffer = io.StringIO()
    csv.writer(buffer).writerows([header, *rows(body)])
    return text(tmp / "labels.csv", buffer.getvalue())


@case("human-agree: every row twice")  # item 4
def _(tmp: Path, fx: Any) -> Case:
    labels = _labels(tmp, fx, lambda rows: [r for row in rows for r in (row, row)])
    return Case(["human-agree", fx.run, labels], (str(labels), "row 3", "row 2"))


@case("human-agree: a label that is not one")
def _(tmp: Path, fx: Any) -> Case:
    labels = _labels(tmp, fx, lambda rows: [rows[0], [*rows[1][:-1], "maybe"], *rows[2:]])
    return Case(["human-agree", fx.run, labels], (str(labels), "row 3", "agree_"))


@case("human-agree: a binary labels file")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["human-agree", fx.run, binary(tmp / "l.csv")], (str(tmp / "l.csv"),))


@case("human-agree: no agree columns")
def _(tmp: Path, fx: Any) -> Case:
    return Case(["human-agree", fx.run, text(tmp / "l.csv", "a,b\n1,2\n")], (str(tmp / "l.csv"), "agree_"))


# ------------------------------------------------------------------------------------------- taubench
@case("taubench: an episode twice")  # item 4
def _(tmp: Path, fx: Any) -> Case:
    eps = [tau_episode(0, 0, 1.0), tau_episode(1, 0, 0.0), tau_episode(0, 0, 1.0)]
    path = tau_file(tmp / "t.json", eps)
    return Case(
        ["taubench", path, "--out", tmp / "o"], (str(path), "episode 2", "episode 0"), absent=(tmp / "o",)
    )


@case("taubench: a reward that is NaN")  # item 4
def _(tmp: Path, fx: Any) -> Case:
    path = tau_file(tmp / "t.json", [tau_episode(0, 0, 1.0), tau_episode(1, 0, 0.0)])
    path.write_text(path.read_text().replace('"reward": 0.0', '"reward": NaN'))
    return Case(
        ["taubench", path, "--out", tmp / "o"], (str(path), "episode 1", "reward"), absent=(tmp / "o",)
    )


@case("taubench: a binary file")
def _(tmp: Path, fx: Any) -> Case:
    path = binary(tmp / "t.json")
    return Case(["taubench", path, "--out", tmp / "o"], (str(path),), absent=(tmp / "o",))


@case("taubench: not a list")
def _(tmp: Path, fx: Any) -> Case:
    path = text(tmp / "t.json", '{"task_id": 1}')
    return Case(["taubench", path, "--out", tmp / "o"], (str(path),), absent=(tmp / "o",))


@case("taubench: a missing file")  # item 16
def _(tmp: Path, fx: Any) -> Case:
    return Case(
        ["taubench", tmp / "nope.json", "--out", tmp / "o"], (str(tmp / "nope.json"),), absent=(tmp / "o",)
    )


@case("taubench: unknown condition")
def _(tmp: Path, fx: Any) -> Case:
    path = tau_file(tmp / "t.json")
    args = ["taubench", path, "--out", tmp / "o", "--condition", "swapped"]
    return Case(args, ("--condition", "swapped"), absent=(tmp / "o",))


# ----------------------------------------------------------------------------------------- the imports
@case("import bfcl: a binary task file")  # item 16
def _(tmp: Path, fx: Any) -> Case:
    tasks = binary(tmp / "BFCL_v4_multiple.json")
    answers = text(tmp / "a.json", "")
    return Case(["import", "bfcl", tasks, answers, "--out", tmp / "o"], (str(tasks),), absent=(tmp / "o",))


@case("import bfcl: a missing answer file")
def _(tmp: Path, fx: Any) -> Case:

    tasks, _ = bfcl_files(tmp, 2)
    args = ["import", "bfcl", tasks, tmp / "nope.json", "--out", tmp / "o"]
    return Case(args, (str(tmp / "nope.json"),), absent=(tmp / "o",))


@case("import agentjudgebench: a judge file binary past its first rows")  # item 11
def _(tmp: Path, fx: Any) -> Case:
    from agentjudgebench_released_fixture import build

    release = build(tmp / "release", n_records=6).root
    judge = sorted((release / "data" / "judges").glob("judge_*.jsonl"))[0]
    lines = judge.read_bytes().splitlines(keepends=True)
    bad = len(lines) + 1
    judge.write_bytes(b"".join(lines) + b'{"id": "\xff\xfe broken"}\n')
    return Case(
        ["import", "agentjudgebench", release, "--out", tmp / "o"],
        (str(judge), f"line {bad}"),
        absent=(tmp / "o",),
    )


@case("import agentjudgebench: an empty folder")  # item 16
def _(tmp: Path, fx: Any) -> Case:
    (tmp / "rel").mkdir()
    return Case(
        ["import", "agentjudgebench", tmp / "rel", "--out", tmp / "o"],
        (str(tmp / "rel"),),
        absent=(tmp / "o",),
    )


# ---------------------------------------------------------------------------------------------- cache
@case("cache stats: a file that is not a cache")  # item 16
def _(tmp: Path, fx: Any) -> Case:
    return Case(["cache", "stats", "--path", binary(tmp / "c.sqlite")], (str(tmp / "c.sqlite"),))


@case("cache stats: a missing file")  # item 16
def _(tmp: Path, fx: Any) -> Case:
    return Case(["cache", "stats", "--path", tmp / "nope.sqlite"], (str(tmp / "nope.sqlite"),))


@case("cache clear: a folder")  # item 16
def _(tmp: Path, fx: Any) -> Case:
    return Case(["cache", "clear", "--path", tmp], (str(tmp),))


@pytest.mark.parametrize("name", list(CASES))
def test_refused(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    built = CASES[name](tmp_path, Fixtures(request))
    o = cli(*built.args)
    refused(o, *built.naming, max_lines=built.max_lines)
    for path in built.absent:
        assert not path.exists(), f"{path} was written"
