"""BFCL import, gates on real human text, accepted values in the scorer, and imported records in a grid.

A small hand-made BFCL fixture (written below, in BFCL's own format) is always used, so nothing here skips
silently. The tests that need the shared BFCL files read them from ``../shared/data/bfcl`` next to the
repository (or ``$AGENTJUDGE_BFCL_DATA``) and skip, saying so, only when that folder is absent.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from agentjudge.commands.tracks import import_bfcl_cli
from agentjudge.dataset import resolve
from agentjudge.dataset.gates import run_gates
from agentjudge.rundir.records import read_records, write_records
from agentjudge.scoring.scorer import score_calls, score_prediction, value_matches
from agentjudge.tracks.bfcl import BfclError, import_bfcl, to_json_schema
from agentjudge.types import GTStep, Prediction, Record, ToolCall

ROOT = Path(__file__).resolve().parents[1]
DIFFS = ("easy", "medium", "hard")
SHARED = Path(os.environ.get("AGENTJUDGE_BFCL_DATA", ROOT.parent / "shared" / "data" / "bfcl"))
needs_shared = pytest.mark.skipif(
    not (SHARED / "BFCL_v4_multiple.json").exists(),
    reason=f"the shared BFCL files are not at {SHARED} (set AGENTJUDGE_BFCL_DATA to their folder)",
)

TASKS: list[dict[str, Any]] = [
    {
        "id": "multiple_0",
        "question": [
            [{"role": "user", "content": "What is the Electric field at 3m from a point charge of 4C?"}]
        ],
        "function": [
            {
                "name": "physics.electric_field",
                "description": "Electric field of a point charge.",
                "parameters": {
                    "type": "dict",
                    "properties": {
                        "charge": {"type": "float", "description": "Charge in coulombs."},
                        "distance": {"type": "float", "description": "Distance in meters."},
                        "medium": {"type": "string", "description": "The medium.", "default": "vacuum"},
                        "point": {"type": "tuple", "items": {"type": "integer"}, "description": "A point."},
                        "extra": {"type": "any", "description": "Anything."},
                    },
                    "required": ["charge", "distance"],
                },
            },
            {
                "name": "math.integral",
                "description": "Definite integral.",
                "parameters": {
                    "type": "dict",
                    "properties": {"function": {"type": "string", "description": "f(x)"}},
                    "required": ["function"],
                },
            },
        ],
    },
    {
        "id": "multiple_1",
        "question": [
            [
                {"role": "system", "content": "You are a maths helper."},
                {
                    "role": "user",
                    "content": "Integrate f(x)=x^2 from 1 to 2, please, using the integral tool.",
                },
            ]
        ],
        "function": [
            {
                "name": "math.integral",
                "description": "Definite integral.",
                "parameters": {
                    "type": "dict",
                    "properties": {
                        "function": {"type": "string", "description": "f(x)"},
                        "bounds": {
                            "type": "dict",
                            "properties": {"low": {"type": "integer"}, "high": {"type": "integer"}},
                            "description": "Bounds.",
                        },
                        "method": {"type": "string", "enum": ["simpson", "trapezoid"], "description": "."},
                    },
                    "required": ["function"],
                },
            }
        ],
    },
    {
        "id": "parallel_0",
        "question": [
            [{"role": "user", "content": "Play Taylor Swift for 20 minutes and Maroon 5 for 15 minutes."}]
        ],
        "function": [
            {
                "name": "spotify.play",
                "description": "Play an artist.",
                "parameters": {
                    "type": "dict",
                    "properties": {"artist": {"type": "string"}, "duration": {"type": "integer"}},
                    "required": ["artist", "duration"],
                },
            }
        ],
    },
]
ANSWERS: list[dict[str, Any]] = [
    {
        "id": "multiple_0",
        "ground_truth": [
            {"physics.electric_field": {"charge": [4.0], "distance": [3.0], "medium": ["", "vacuum"]}}
        ],
    },
    {
        "id": "multiple_1",
        "ground_truth": [
            {
                "math.integral": {
                    "function": ["x**2", "lambda x: x**2"],
                    "bounds": [{"low": [1], "high": [2]}],
                    "method": ["", "simpson"],
                }
            }
        ],
    },
    {
        "id": "parallel_0",
        "ground_truth": [
            {"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
            {"spotify.play": {"artist": ["Maroon 5"], "duration": [15]}},
        ],
    },
]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture
def bfcl_files(tmp_path: Path) -> tuple[Path, Path]:
    return _write(tmp_path / "BFCL_v4_fixture.json", TASKS), _write(tmp_path / "answers.json", ANSWERS)


@pytest.fixture
def records(bfcl_files: tuple[Path, Path]) -> list[Record]:
    return import_bfcl(*bfcl_files)


# ------------------------------------------------------------------ import


def test_import_maps_queries_tools_and_accepted_answers(records: list[Record]) -> None:
    field, integral, parallel = records
    assert [r.id for r in records] == ["multiple_0", "multiple_1", "parallel_0"]
    assert all(r.source == "imported" and r.human_query for r in records)
    assert field.origin == "bfcl/fixture"  # category read from the file name BFCL_v4_<category>.json
    assert field.queries == {"easy": TASKS[0]["question"][0][0]["content"]}
    assert integral.system_prompt == "You are a maths helper."
    props = field.tools[0].parameters["properties"]
    assert field.tools[0].parameters["type"] == "object"
    assert field.tools[0].parameters["x-bfcl-type"] == "dict"
    assert props["charge"] == {"type": "number", "x-bfcl-type": "float", "description": "Charge in coulombs."}
    assert props["point"]["type"] == "array" and props["point"]["x-bfcl-type"] == "tuple"
    assert "type" not in props["extra"] and props["extra"]["x-bfcl-type"] == "any"
    # first accepted value is the GT argument; "" first means the argument is left out of the GT call
    assert field.gt[0].call.arguments == {"charge": 4.0, "distance": 3.0}
    assert field.gt[0].accepted == ANSWERS[0]["ground_truth"][0]["physics.electric_field"]
    assert integral.gt[0].call.arguments == {"function": "x**2", "bounds": {"low": 1, "high": 2}}
    assert (field.topology, integral.topology, parallel.topology) == ("linear", "linear", "fan_out")
    assert parallel.edges == [] and [s.output for s in parallel.gt] == [None, None]


def test_imported_records_round_trip_through_the_published_layout(
    records: list[Record], tmp_path: Path
) -> None:
    write_records(tmp_path / "r.jsonl", records)
    assert read_records(tmp_path / "r.jsonl") == records
    line = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert line["source"] == "imported" and line["human_query"] is True
    assert line["query_medium"] is None and line["accepted_values"][0]["medium"] == ["", "vacuum"]


def test_synthetic_lines_do_not_gain_the_new_fields() -> None:
    line = (ROOT / "data" / "mini" / "records.jsonl").read_text().splitlines()[0]
    assert not {"source", "origin", "human_query", "accepted_values"} & json.loads(line).keys()
    assert read_records(ROOT / "data" / "mini" / "records.jsonl")[0].source == "synthetic"


def test_cli_writes_records_and_manifest(bfcl_files: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert import_bfcl_cli(*bfcl_files, out=out, category="multiple") == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["n_records"] == 3 and manifest["origin"] == "bfcl/multiple"
    assert manifest["counts"]["dag_type"] == {"fan_out": 1, "linear": 2}
    assert manifest["environment"] is None
    assert len(read_records(out / "records.jsonl")) == 3


@pytest.mark.parametrize(
    ("which", "line", "expect"),
    [
        ("tasks", "{not json", "line 1: not valid JSON"),
        ("tasks", json.dumps({**TASKS[0], "question": "hi"}), "line 1, task 'multiple_0': field question"),
        (
            "tasks",
            json.dumps(
                {**TASKS[0], "function": [{**TASKS[0]["function"][0], "parameters": {"type": "blob"}}]}
            ),
            "field function[0].parameters.type: unknown BFCL type 'blob'",
        ),
        (
            "answers",
            json.dumps({"id": "multiple_0", "ground_truth": [{"f": {"x": []}}]}),
            "ground_truth[0].f.x",
        ),
        ("answers", json.dumps({"id": "other", "ground_truth": []}), "no line in"),
    ],
)
def test_bad_input_is_one_line_naming_file_line_and_field(
    bfcl_files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    which: str,
    line: str,
    expect: str,
) -> None:
    tasks, answers = bfcl_files
    target = tasks if which == "tasks" else answers
    target.write_text(
        line + "\n" + "".join(json.dumps(x) + "\n" for x in (TASKS if which == "tasks" else ANSWERS)[1:])
    )
    with pytest.raises(BfclError, match="line 1") as err:
        import_bfcl(tasks, answers)
    assert expect in str(err.value) and target.name in str(err.value)
    out = tmp_path / "out"
    assert import_bfcl_cli(tasks, answers, out=out, category=None) == 2
    printed = capsys.readouterr().err
    assert expect in " ".join(printed.split()) and "Traceback" not in printed
    assert not out.exists()  # nothing half-written


def test_array_enum_moves_to_items() -> None:
    schema = to_json_schema({"type": "array", "items": {"type": "string"}, "enum": ["a", "b"]}, "p")
    assert schema == {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}


# ------------------------------------------------------------------ gates on real text


def test_fixture_records_pass_both_gates(records: list[Record]) -> None:
    for record in records:
        report = run_gates(record)
        assert report.passed, (record.id, report.findings)
        assert "gate2:medium" not in report.gates_run  # the human query is the only one


def test_a_value_the_query_never_gives_is_still_rejected(records: list[Record]) -> None:
    field = records[0]
    step = field.gt[0].model_copy(
        update={"call": ToolCall(name="physics.electric_field", arguments={"charge": 7.0, "distance": 3.0})}
    )
    broken = field.model_copy(update={"gt": [step.model_copy(update={"accepted": {"charge": [7.0]}})]})
    codes = {(f.code, f.difficulty) for f in run_gates(broken).findings}
    assert codes == {("ungrounded_value", None), ("insufficient", "easy")}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3.0, "What is the Electric field at 3m from a point charge of 4C?"),
        (4, "What is the Electric field at 3m from a point charge of 4C?"),
        (0.5, "a current of 0.5A"),
        (25, "25 turns per meter"),
        (1_200_000, "revenues of $1.2M in 2020"),
        (100_000_000, "100 million outstanding shares"),
        (0.05, "an annual rate of 5%"),
        (18, "kings of France during the 18th century"),
        (-7, "the equation 5x^2 - 7x + 3 = 0"),
        ("x**2", "f(x)=x^2"),
        ("4x + 7", "the function '4x+7'"),
        ("3*x**2 + 2*x - 1", "the function 3x^2 + 2x - 1"),
        ("served boiling hot", "make it served 'boiling hot'"),
        ("Scenic View", "a park with scenic views"),
        ("EUR", "Convert 200 euros to dollars"),
        ("Berkeley, CA", "find a salon in berkeley"),
        ("2023-04-22", "departing on April 15th and returning on April 22nd 2023"),
        ("2023-10-02", "the weather tomorrow? today is 2023.10.1"),
        ("06-01-2023", "UV index for tomorrow, June01 2023"),
        ("17:30", "for the 5:30pm show"),
        ("14:00", "a haircut at 2 in the afternoon"),
    ],
)
def test_real_wordings_are_recoverable(value: Any, text: str) -> None:
    assert resolve.recoverable(value, text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1234, "order ORD-1234 is late"),
        (12, "the code 12AB3"),
        (5, "about 15 minutes"),
        ("ORD-0000", "the order ORD-7781"),
        ("x**3", "f(x)=x^2"),
        ("2023-04-22", "returning on April 22nd"),  # no year stated anywhere
        ("closed", "list the open orders"),
        (0.06, "an annual rate of 5%"),
    ],
)
def test_relaxations_do_not_accept_other_values(value: Any, text: str) -> None:
    assert not resolve.recoverable(value, text)


def test_enum_choice_by_meaning_is_only_for_human_queries(records: list[Record]) -> None:
    integral = records[1]
    step = integral.gt[0]
    picked = step.model_copy(
        update={
            "call": ToolCall(name="math.integral", arguments={**step.call.arguments, "method": "trapezoid"}),
            "accepted": {**(step.accepted or {}), "method": ["trapezoid"]},
        }
    )
    query = "Integrate f(x)=x^2 from 1 to 2 with the trapezium method, please."
    human = integral.model_copy(update={"gt": [picked], "queries": {"easy": query}})
    assert run_gates(human).passed  # an enum member the person's words choose ("trapezium")
    # no word of the query points at it: an enum member is not grounded just by being one
    silent = human.model_copy(update={"queries": {"easy": integral.queries["easy"]}})
    assert {f.code for f in run_gates(silent).findings} == {"ungrounded_value", "insufficient"}
    ours = human.model_copy(update={"human_query": False, "source": "synthetic"})
    ours = ours.model_copy(update={"queries": dict.fromkeys(DIFFS, query)})
    codes = {f.code for f in run_gates(ours).findings}
    assert "ungrounded_value" in codes and "insufficient" in codes  # our rewrites must state every value


def test_tool_names_count_only_as_copied_code_identifiers() -> None:
    from agentjudge.dataset.gates import _identifier_like

    assert _identifier_like("get_weather") and _identifier_like("math.factorial")
    assert _identifier_like("getCurrentWeather") and _identifier_like("GetUserInfoById")
    assert (
        not _identifier_like("Weather")
        and not _identifier_like("McDonald")
        and not _identifier_like("ChaFod")
    )


# ------------------------------------------------------------------ scorer


def test_p_value_accepts_any_accepted_value_and_says_which(records: list[Record]) -> None:
    integral = records[1]
    lam = ToolCall(
        name="math.integral", arguments={"function": "lambda x: x**2", "bounds": {"low": 1, "high": 2}}
    )
    assert value_matches(integral, [lam]) == [
        {"expected": 0, "generated": 0, "tool": "math.integral", "arguments": {"function": 1, "bounds": 0}}
    ]
    pred = Prediction(
        record_id="multiple_1:easy", base_id="multiple_1", difficulty="easy", generator="g", calls=[lam]
    )
    score = score_prediction(integral, pred, "strict")
    assert score.p_value == 1.0 and score.state_match is None
    wrong = ToolCall(name="math.integral", arguments={"function": "x**3", "bounds": {"low": 1, "high": 2}})
    assert value_matches(integral, [wrong])[0]["arguments"]["function"] is None
    assert score_prediction(integral, pred.model_copy(update={"calls": [wrong]}), "strict").p_value == 0.5
    # without accepted values the same call reproduces 1 of 2 values; paper/strict p_param do not change
    plain = [s.call for s in integral.gt]
    assert score_calls(plain, [lam], "strict")["p_value"] == 0.5
    for mode in ("paper", "strict"):
        with_acc = score_prediction(integral, pred, mode)  # type: ignore[arg-type]
        assert with_acc.p_param == score_calls(plain, [lam], mode)["p_param"]  # type: ignore[arg-type]


def test_an_optional_argument_may_be_left_out(records: list[Record]) -> None:
    field = records[0]
    gt = GTStep(
        call=ToolCall(
            name="physics.electric_field", arguments={"charge": 4.0, "distance": 3.0, "medium": "vacuum"}
        ),
        output=None,
        accepted={"charge": [4.0], "distance": [3.0], "medium": ["vacuum", ""]},
    )
    record = field.model_copy(update={"gt": [gt]})
    call = ToolCall(name="physics.electric_field", arguments={"charge": 4, "distance": "3"})
    assert value_matches(record, [call])[0]["arguments"] == {"charge": 0, "distance": 0, "medium": "omitted"}
    pred = Prediction(
        record_id="multiple_0:easy", base_id="multiple_0", difficulty="easy", generator="g", calls=[call]
    )
    assert score_prediction(record, pred, "strict").p_value == 1.0


def test_parallel_calls_in_any_order_keep_p_seq_dag(records: list[Record]) -> None:
    parallel = records[2]
    swapped = [parallel.gt[1].call, parallel.gt[0].call]
    pred = Prediction(
        record_id="parallel_0:easy", base_id="parallel_0", difficulty="easy", generator="g", calls=swapped
    )
    score = score_prediction(parallel, pred, "strict")
    # p_value pairs the two calls of one tool by their values, not by position
    assert score.p_seq_dag == 1.0 and score.p_value == 1.0
    assert value_matches(parallel, swapped)[0] == {
        "expected": 0,
        "generated": 1,
        "tool": "spotify.play",
        "arguments": {"artist": 0, "duration": 0},
    }


# ------------------------------------------------------------------ a grid with imported records


def test_grid_and_report_on_mixed_sources(records: list[Record], tmp_path: Path) -> None:
    from agentjudge.commands.report import report_cli
    from agentjudge.commands.run import run_cli

    synthetic = read_records(ROOT / "data" / "mini" / "records.jsonl")[:3]
    write_records(tmp_path / "mixed.jsonl", [*synthetic, *records])
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        yaml.safe_dump(
            {
                "name": "mixed",
                "dataset": "mixed.jsonl",
                "difficulties": ["easy"],
                "generators": ["sim/weak", "sim/perfect"],
                "judges": ["baseline/rule", "baseline/gt-rule"],
                "conditions": ["with_gt", "without_gt"],
                "cache": "cache.sqlite",
            }
        )
    )
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    scores = pd.read_parquet(rundir / "scores.parquet")
    imported = scores[scores["source"] == "imported"]
    assert len(imported) == 3 * 2 * 2 and imported["state_match"].isna().all()
    assert scores.loc[scores["source"] == "synthetic", "state_match"].notna().all()
    judgments = pd.read_parquet(rundir / "judgments.parquet")
    assert set(judgments["source"]) == {"synthetic", "imported"}
    assert report_cli(rundir, resamples=50, seed=0) == 0
    top = (rundir / "report" / "report.md").read_text()
    # mixed: the first screen is alignment split by source, no pooled ranking
    assert "Record sources" in top and "Judge ranking" not in top
    assert "report/imported/report.md" in top and "baseline/gt-rule (baseline), with_gt, imported" in top
    table = pd.read_csv(rundir / "report" / "tables" / "alignment_by_source.csv")
    assert set(table["source"]) == {"synthetic", "imported"}
    for source in ("synthetic", "imported"):
        sub = (rundir / "report" / source / "report.md").read_text()
        assert "Judge ranking" in sub and f"record sources: {source} " in sub


# ------------------------------------------------------------------ the shared BFCL files


@needs_shared
@pytest.mark.parametrize(
    ("category", "n", "shapes", "min_pass"),
    [
        ("multiple", 200, {"linear": 200}, 0.94),
        ("parallel", 200, {"fan_out": 200}, 0.96),
        ("live_multiple", 1053, {"linear": 1053}, 0.85),
    ],
)
def test_shared_files_import_and_mostly_pass(
    category: str, n: int, shapes: dict[str, int], min_pass: float
) -> None:
    from agentjudge.dataset.validate import check_records

    records = import_bfcl(
        SHARED / f"BFCL_v4_{category}.json", SHARED / f"BFCL_v4_{category}.possible_answer.json"
    )
    assert len(records) == n
    assert {t: sum(r.topology == t for r in records) for t in shapes} == shapes
    passed = sum(rep.passed for rep in check_records(records, processes=1))
    assert passed / n >= min_pass, f"{category}: {passed}/{n} pass"


def test_swapped_gt_partners_stay_within_a_source(records: list[Record]) -> None:
    from agentjudge.runner.work import swap_partners

    synthetic = [r for r in read_records(ROOT / "data" / "mini" / "records.jsonl") if r.topology == "linear"][
        :2
    ]
    partners = swap_partners([*synthetic, *records[:2]])  # all four are linear
    assert partners == {
        synthetic[0].id: synthetic[1].id,
        synthetic[1].id: synthetic[0].id,
        "multiple_0": "multiple_1",
        "multiple_1": "multiple_0",
    }


# ------------------------------------------------------------------ audit on imported records
def test_audit_shows_human_queries_and_refuses_a_difficulty_they_lack(
    bfcl_files: tuple[Path, Path], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from agentjudge.commands import app

    out = tmp_path / "out"
    assert import_bfcl_cli(*bfcl_files, out=out, category="multiple") == 0
    data = str(out / "records.jsonl")
    runner = CliRunner()

    shown = runner.invoke(app, ["audit", data, "--n", "3", "--seed", "1"])
    assert shown.exit_code == 0, shown.output
    assert "(missing)" not in shown.output
    assert "Play Taylor Swift for 20 minutes and Maroon 5 for 15 minutes." in shown.output
    assert sorted(re.findall(r"^## \d+\. \S+:(\w+) ", shown.output, re.M)) == ["easy"] * 3
    assert "3 record(s) without a hard query shown at the hardest query they have (3 human-written" in (
        shown.output
    )

    refused = runner.invoke(app, ["audit", data, "--n", "3", "--difficulty", "hard"])
    assert refused.exit_code == 2
    assert "3 of 3 sampled records have no hard query" in refused.output
    assert "has only: easy" in refused.output and "QUERY:" not in refused.output

    asked = runner.invoke(app, ["audit", data, "--n", "3", "--difficulty", "easy"])
    assert asked.exit_code == 0 and "without a" not in asked.output


def test_audit_default_on_synthetic_records_is_hard() -> None:
    from typer.testing import CliRunner

    from agentjudge.commands import app

    mini = Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl"
    result = CliRunner().invoke(app, ["audit", str(mini), "--n", "6", "--seed", "0"])
    assert result.exit_code == 0, result.output
    assert re.findall(r"^## \d+\. \S+:(\w+) ", result.output, re.M) == ["hard"] * 6
    assert "without a" not in result.output


def test_validate_counts_base_scenarios_and_records(bfcl_files: tuple[Path, Path], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentjudge.commands import app

    out = tmp_path / "out"
    assert import_bfcl_cli(*bfcl_files, out=out, category="multiple") == 0
    result = CliRunner().invoke(app, ["validate", str(out / "records.jsonl")])
    assert result.exit_code == 0, result.output
    assert "3 base scenarios (3 records over 1 difficulty: easy); 3 pass, 0 fail" in result.output


def test_score_writes_which_accepted_value_matched(bfcl_files: tuple[Path, Path], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentjudge.commands import app

    out = tmp_path / "out"
    assert import_bfcl_cli(*bfcl_files, out=out, category="multiple") == 0
    lam = {
        "name": "math.integral",
        "arguments": {"function": "lambda x: x**2", "bounds": {"low": 1, "high": 2}},
    }
    wrong = {"name": "math.integral", "arguments": {"function": "x**3", "bounds": {"low": 1, "high": 2}}}
    preds = [
        {"record_id": "multiple_1:easy", "base_id": "multiple_1", "difficulty": "easy", "generator": g,
         "trial": 0, "calls_json": json.dumps([call]), "error": None}
        for g, call in (("right", lam), ("wrong", wrong))
    ]  # fmt: skip
    _write(tmp_path / "preds.jsonl", preds)
    matches = tmp_path / "matches.jsonl"
    args = [
        "score",
        str(out / "records.jsonl"),
        str(tmp_path / "preds.jsonl"),
        "--out",
        str(tmp_path / "s.csv"),
    ]
    result = CliRunner().invoke(app, [*args, "--value-matches", str(matches)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in matches.read_text().splitlines()]
    assert [x["generator"] for x in lines] == ["right", "wrong"]
    right = lines[0]["calls"][0]["arguments"]
    assert right["function"] == {"matched": 1, "value": "lambda x: x**2"}  # the second accepted value
    assert right["bounds"]["matched"] == 0
    assert lines[1]["calls"][0]["arguments"]["function"] == {"matched": None, "value": None}
    bad = CliRunner().invoke(app, [*args, "--value-matches", str(tmp_path / "m.csv")])
    assert bad.exit_code == 2 and "must end in .jsonl" in bad.output


def test_import_says_how_many_records_will_fail_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = _write(tmp_path / "BFCL_v4_multiple.json", TASKS)
    ungrounded = json.loads(json.dumps(ANSWERS))
    ungrounded[0]["ground_truth"][0]["physics.electric_field"]["charge"] = [5.0]  # the query says 4C
    answers = _write(tmp_path / "answers.json", ungrounded)
    assert import_bfcl_cli(tasks, answers, out=tmp_path / "out", category=None) == 0
    assert "1 of 3 will fail `agentjudge validate`" in capsys.readouterr().out
    assert (
        import_bfcl_cli(tasks, _write(tmp_path / "a2.json", ANSWERS), out=tmp_path / "o2", category=None) == 0
    )
    assert "0 of 3 will fail `agentjudge validate`" in capsys.readouterr().out


FALSY_TASK: dict[str, Any] = {
    "id": "simple_falsy",
    "question": [
        [{"role": "user", "content": "Search page 0 of archived logs, strictly, no tags, depth 0."}]
    ],
    "function": [
        {
            "name": "logs.search",
            "description": "Search the logs.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "page": {"type": "integer", "description": "Page."},
                    "archived": {"type": "boolean", "description": "Archived only."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags."},
                    "query": {"type": "string", "description": "Text."},
                    "options": {
                        "type": "dict",
                        "description": "Options.",
                        "properties": {
                            "depth": {"type": "integer"},
                            "strict": {"type": "boolean"},
                            "label": {"type": "string"},
                            "fields": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
                "required": ["page", "archived", "tags"],
            },
        }
    ],
}
FALSY_ANSWER: dict[str, Any] = {
    "id": "simple_falsy",
    "ground_truth": [
        {
            "logs.search": {
                "page": [0, 1],
                "archived": [False, True],
                "tags": [[], ["all"]],
                "query": ["", "*"],  # "" first: the argument may be left out, so the GT call leaves it out
                "options": [{"depth": [0], "strict": [False, True], "label": ["", "x"], "fields": [[]]}],
            }
        }
    ],
}


def test_a_first_accepted_value_that_is_falsy_stays_in_the_gt_call(tmp_path: Path) -> None:
    """Issue 42: 0, False and [] as the first accepted value (36 tasks of the shipped files, at the levels
    the importer reads) are values, not "left out"; only "" first means the argument may be omitted
    (FIDELITY row 33), at the top level and inside a dict's alternatives alike."""
    (record,) = import_bfcl(
        _write(tmp_path / "BFCL_v4_simple.json", [FALSY_TASK]), _write(tmp_path / "a.json", [FALSY_ANSWER])
    )
    (step,) = record.gt
    assert step.call.arguments == {
        "page": 0,
        "archived": False,
        "tags": [],
        "options": {"depth": 0, "strict": False, "fields": []},
    }
    assert type(step.call.arguments["page"]) is int and step.call.arguments["archived"] is False
    assert step.accepted == FALSY_ANSWER["ground_truth"][0]["logs.search"]  # every alternative kept
    # the generator that sends exactly these values reproduces every GT value; one that drops the falsy
    # ones (what a GT call without them would reward) does not
    exact = ToolCall(name="logs.search", arguments=dict(step.call.arguments))
    dropped = ToolCall(name="logs.search", arguments={"options": {}})
    pred = Prediction(
        record_id="simple_falsy:easy", base_id="simple_falsy", difficulty="easy", generator="g", calls=[exact]
    )
    assert score_prediction(record, pred, "strict").p_value == 1.0
    assert score_prediction(record, pred.model_copy(update={"calls": [dropped]}), "strict").p_value < 0.5
    # written and read back in the published layout, the falsy values survive
    out = tmp_path / "records.jsonl"
    write_records(out, [record], layout="published")
    assert read_records(out)[0].gt[0].call.arguments == step.call.arguments


@needs_shared
def test_the_shipped_files_falsy_first_values_reach_the_gt_calls() -> None:
    """Every argument of the shipped answers whose first accepted value is 0, False or [] (not "") is in
    the imported GT call with that very value (type included: False is not 0)."""
    seen = 0
    for answers in sorted(SHARED.glob("BFCL_v4_*.possible_answer.json")):
        tasks = answers.with_name(answers.name.replace(".possible_answer", ""))
        for record in import_bfcl(tasks, answers):
            for step in record.gt:
                for param, alternatives in (step.accepted or {}).items():
                    first = alternatives[0]
                    if isinstance(first, str) or first not in (0, False, []):
                        continue
                    seen += 1
                    got = step.call.arguments[param]
                    assert got == first and type(got) is type(first), (record.id, param, got)
    assert seen == 43  # arguments at the top level of a call (35 tasks) in the v4 files shipped here
