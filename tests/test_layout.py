"""Published layout ⇄ Record: round trip, byte stability, BFCL "dict" types, foreign files, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_gates import rendered_linear_record

from agentjudge.dataset.gates import run_gates
from agentjudge.dataset.layout import LayoutError, dumps_record, read_records, to_published, write_records


def _valid() -> list:
    record = rendered_linear_record(1)
    second = rendered_linear_record(2).model_copy(update={"id": "fixture-0002"})
    return [record.model_copy(update={"validation": run_gates(record)}), second]


def test_round_trip_is_lossless(tmp_path: Path) -> None:
    records = _valid()
    path = tmp_path / "records.jsonl"
    write_records(path, records)
    assert read_records(path) == records


def test_writes_are_byte_identical_and_atomic(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_records(a, _valid())
    write_records(b, read_records(a))
    assert a.read_bytes() == b.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl"]  # no temp files left

    def broken():
        yield _valid()[0]
        raise RuntimeError("builder crashed")

    with pytest.raises(RuntimeError):
        write_records(a, broken())
    assert a.read_bytes() == b.read_bytes()  # the old file is untouched


def test_published_shape() -> None:
    line = to_published(_valid()[0])
    assert list(line)[:11] == [
        "id",
        "dag_type",
        "user_message",
        "query_medium",
        "query_hard",
        "rewrite_medium_status",
        "rewrite_hard_status",
        "system_prompt",
        "available_tools",
        "expected_tool_calls",
        "expected_responses",
    ]
    tool = line["available_tools"][0]
    assert tool["type"] == "function" and set(tool["function"]) == {"name", "description", "parameters"}
    assert line["expected_tool_calls"][0] == {
        "name": "find_customer",
        "arguments": {"email": "dana.kim@example.com"},
    }
    turns = line["expected_responses"]
    assert [t["role"] for t in turns] == ["assistant", "tool"] * 3  # a linear chain: one call per turn
    call = turns[0]["tool_calls"][0]
    assert call["type"] == "function" and json.loads(call["function"]["arguments"]) == {
        "email": "dana.kim@example.com"
    }
    assert (
        turns[1]["tool_call_id"] == call["id"]
        and json.loads(turns[1]["content"])["customer_id"] == "CUST-0042"
    )
    assert line["dependency_edges"] == [[0, 1], [1, 2]]


def _foreign_line() -> dict:
    """A line as the published dataset has it: no fields of ours, BFCL "dict" parameter types."""
    line = to_published(_valid()[0])
    for key in (
        "domain",
        "scenario",
        "dependency_edges",
        "step_outputs",
        "step_descriptions",
        "tool_returns",
        "condition_holds",
        "seed",
        "version",
        "validation",
    ):
        del line[key]
    for tool in line["available_tools"]:
        tool["function"]["parameters"]["type"] = "dict"
    line["available_tools"][2]["function"]["parameters"]["properties"]["attempts"]["type"] = "float"
    return line


def test_foreign_file_with_dict_types_reads_and_validates(tmp_path: Path) -> None:
    path = tmp_path / "published.jsonl"
    path.write_text(json.dumps(_foreign_line()) + "\n\n")
    [record] = read_records(path)
    assert all(t.parameters["type"] == "object" for t in record.tools)
    assert record.tools[2].parameters["properties"]["attempts"]["type"] == "number"
    assert record.gt[1].output == {"orders": [{"order_id": "ORD-7781", "total": 129.5}]}  # from the tool turn
    assert record.edges == [] and record.version is None and record.domain == "fixture"
    report = run_gates(record)
    assert report.passed, report.findings
    out = tmp_path / "out.jsonl"
    write_records(out, [record])
    assert '"dict"' not in out.read_text() and '"type":"object"' in out.read_text()


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_errors_name_file_line_record_and_field(tmp_path: Path) -> None:
    good = dumps_record(_valid()[0])
    line = json.loads(good)
    del line["dag_type"]
    path = _write(tmp_path, [good, json.dumps(line)])
    with pytest.raises(LayoutError) as exc:
        read_records(path)
    message = str(exc.value)
    assert (
        str(path) in message and "line 2" in message and "fixture-0001" in message and "dag_type" in message
    )

    line = json.loads(good)
    line["available_tools"][1]["function"]["parameters"] = "not a schema"
    with pytest.raises(
        LayoutError, match=r"line 1, record 'fixture-0001': field available_tools\[1\]\.function"
    ):
        read_records(_write(tmp_path, [json.dumps(line)]))

    line = json.loads(good)
    line["expected_responses"][1]["name"] = 5
    with pytest.raises(LayoutError, match=r"field expected_responses\[1\]\.name"):
        read_records(_write(tmp_path, [json.dumps(line)]))

    line = json.loads(good)
    line["step_outputs"] = line["step_outputs"][:1]
    with pytest.raises(LayoutError, match=r"field step_outputs: 1 outputs for 3"):
        read_records(_write(tmp_path, [json.dumps(line)]))

    line = json.loads(good)
    line["surprise"] = 1
    with pytest.raises(LayoutError, match="field surprise"):
        read_records(_write(tmp_path, [json.dumps(line)]))

    with pytest.raises(LayoutError, match=r"line 2: not valid JSON"):
        read_records(_write(tmp_path, [good, "{oops"]))
    with pytest.raises(LayoutError, match=r"line 2, record 'fixture-0001': field id: duplicate of line 1"):
        read_records(_write(tmp_path, [good, good]))
    with pytest.raises(LayoutError, match="cannot read"):
        read_records(tmp_path / "missing.jsonl")
