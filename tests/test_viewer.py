"""`agentjudge view`: every endpoint over HTTP against a real run folder, checked against the run's own
files read with pandas; hostile text stays data; nothing in the folder is written; a run writing the folder
meanwhile does not disturb it; the CLI starts, prints its URL and stops on Ctrl-C with exit 0."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urljoin

import pandas as pd
import pytest
import yaml
from test_runner import make_records

from agentjudge.commands.report import report_cli
from agentjudge.commands.run import run_cli
from agentjudge.rundir.records import write_records
from agentjudge.rundir.synthetic import SyntheticSpec, write_run
from agentjudge.viewer.server import start

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'

HOSTILE_JUDGE = f"""
from agentjudge.types import JudgeResult

class Hostile:
    def __init__(self, settings):
        self.name = settings.display_name

    async def __call__(self, request):
        n = len(request.calls)
        verdicts = {{"tool": 1.0 if n else 0.0, "param": 0.5, "seq": 1.0, "cov": 0.0 if n < 3 else 1.0}}
        text = {HOSTILE!r}
        return JudgeResult(verdicts=verdicts, rationales={{"overall": "rationale " + text}}, parse_ok=True,
                           raw_output="raw " + text)

def make(settings, client):
    return Hostile(settings)
"""


def build_run(folder: Path, judges: list[Any] | None = None) -> Path:
    """A small finished run: 4 records (one with hostile text in its easy query) x easy/hard x 2 simulated
    generators x 3 judges (two baselines and a plug-in whose rationale and raw answer are hostile)."""
    records = make_records()
    first = records[0]
    records[0] = first.model_copy(
        update={"queries": {**first.queries, "easy": first.queries["easy"] + " " + HOSTILE}}
    )
    write_records(folder / "records.jsonl", records)
    (folder / "hostilejudge.py").write_text(HOSTILE_JUDGE, encoding="utf-8")
    pipeline = {
        "name": "viewer-test",
        "dataset": "records.jsonl",
        "difficulties": ["easy", "hard"],
        "generators": ["sim/weak", "sim/perfect"],
        "judges": judges or ["baseline/always-1", "baseline/rule", "hostilejudge:make"],
        "conditions": ["with_gt", "without_gt"],
        "scoring": "both",
        "concurrency": 4,
        "cache": "cache.sqlite",
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(pipeline, sort_keys=False), encoding="utf-8")
    assert run_cli(path, folder / "run") == 0
    return folder / "run"


@pytest.fixture(scope="module")
def rundir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("viewer")
    run = build_run(folder)
    assert report_cli(run, resamples=50, seed=0) in (0, 1)
    return run


@pytest.fixture(scope="module")
def base(rundir: Path) -> Any:
    server, _ = start(rundir)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def get(base: str, path: str, **params: Any) -> tuple[int, Any]:
    url = base + path + ("?" + urlencode(params, doseq=True) if params else "")
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            body = response.read()
            kind = response.headers.get("Content-Type", "")
            return response.status, json.loads(body) if kind.startswith("application/json") else body
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def judgments(rundir: Path) -> pd.DataFrame:
    df = pd.read_parquet(rundir / "judgments.parquet")
    df["failed"] = ~df["parse_ok"] | df["verdict"].isna()
    df["disagreement"] = (df["reference"] - df["verdict"]).abs()
    return df


def test_facets_name_every_value_of_the_run(base: str, rundir: Path) -> None:
    status, facets = get(base, "/api/facets")
    df = judgments(rundir)
    assert status == 200
    assert facets["rows"] == len(df)
    assert (
        set(facets["facets"]["judge"])
        == set(df["judge"])
        == {"baseline/always-1", "baseline/rule", "hostilejudge:make"}
    )
    assert facets["facets"]["difficulty"] == ["easy", "hard"]  # in reading order, not alphabetical
    assert set(facets["facets"]["mode"]) == {"paper", "strict"} and facets["primary_mode"] == "strict"
    assert facets["kinds"]["baseline/rule"] == "baseline" and facets["kinds"]["sim/weak"] == "sim"
    assert facets["report"] is True


def test_rows_filter_like_pandas_in_the_report_s_scoring_mode(base: str, rundir: Path) -> None:
    df = judgments(rundir)
    strict = df[df["scoring_mode"] == "strict"]
    status, page = get(base, "/api/rows", judge="baseline/rule", condition="without_gt", per_page=500)
    want = strict[(strict["judge"] == "baseline/rule") & (strict["condition"] == "without_gt")]
    assert status == 200 and page["total"] == len(want) > 0
    assert {(r["record"], r["generator"], r["metric"]) for r in page["rows"]} == set(
        zip(want["record_id"], want["generator"], want["metric"], strict=True)
    )
    # a facet listed twice (or comma-separated) keeps rows of either value
    _, both = get(base, "/api/rows", judge="baseline/rule,baseline/always-1")
    assert both["total"] == int(strict["judge"].isin(["baseline/rule", "baseline/always-1"]).sum())
    # the other scoring mode, and both
    _, paper = get(base, "/api/rows", mode="paper")
    _, every = get(base, "/api/rows", mode="any")
    assert paper["total"] == int((df["scoring_mode"] == "paper").sum()) and every["total"] == len(df)


def test_rows_sort_by_disagreement_and_page(base: str, rundir: Path) -> None:
    df = judgments(rundir)
    strict = df[(df["scoring_mode"] == "strict") & ~df["failed"]]
    _, first = get(base, "/api/rows", per_page=7)
    values = [r["disagreement"] for r in first["rows"]]
    assert values == sorted(values, reverse=True) and values[0] == pytest.approx(strict["disagreement"].max())
    # pages tile the list: page 2 continues page 1, no row twice
    _, one = get(base, "/api/rows", per_page=5, page=1)
    _, two = get(base, "/api/rows", per_page=5, page=2)
    _, ten = get(base, "/api/rows", per_page=10, page=1)
    assert one["rows"] + two["rows"] == ten["rows"]
    # a smallest disagreement
    _, big = get(base, "/api/rows", min_disagreement=0.5)
    assert big["total"] == int((strict["disagreement"] >= 0.5).sum())
    # record order is the file's order
    _, ordered = get(base, "/api/rows", sort="record", per_page=3)
    top = df[df["scoring_mode"] == "strict"].head(3)
    assert [r["record"] for r in ordered["rows"]] == list(top["record_id"])


def test_rows_of_one_record_and_failures_only(base: str, rundir: Path) -> None:
    df = judgments(rundir)
    strict = df[df["scoring_mode"] == "strict"]
    _, rec = get(base, "/api/rows", record="test-0001:hard")
    assert rec["total"] == int((strict["record_id"] == "test-0001:hard").sum()) > 0
    _, failed = get(base, "/api/rows", failures=1)
    assert failed["total"] == int(strict["failed"].sum())


@pytest.mark.parametrize(
    "params,message",
    [
        ({"judge": "nobody"}, "judge: no such value 'nobody'"),
        ({"min_disagreement": "lots"}, "min_disagreement: not a number"),
        ({"min_disagreement": "2"}, "outside [0, 1]"),
        ({"per_page": "100000"}, "per_page: 100000 is outside"),
        ({"page": "0"}, "page: 0 is outside"),
        ({"sort": "random"}, "sort: one of"),
        ({"record": "nope:easy"}, "no verdict rows for record"),
    ],
)
def test_bad_requests_say_what_to_fix(base: str, params: dict[str, str], message: str) -> None:
    status, body = get(base, "/api/rows", **params)
    assert status == 400 and message in body["error"]


def test_item_gathers_everything_said_about_one_output(base: str, rundir: Path) -> None:
    status, item = get(base, "/api/item", record="test-0000:easy", generator="sim/weak")
    assert status == 200
    assert item["difficulty"] == "easy" and item["topology"] == "linear"
    assert item["record"]["query"].endswith(HOSTILE)  # the record's own text, as data
    assert [c["name"] for c in item["record"]["gt"]] == ["get_customer", "list_orders", "send_email"]
    assert item["record"]["gt"][1]["output"] == [{"id": "O-1", "email": "c0@example.com"}]
    predictions = pd.read_parquet(rundir / "predictions.parquet")
    pred = predictions[
        (predictions["record_id"] == "test-0000:easy") & (predictions["generator"] == "sim/weak")
    ]
    assert item["prediction"]["calls"] == json.loads(pred["calls_json"].iloc[0])
    assert {s["scoring_mode"] for s in item["scores"]} == {"paper", "strict"}
    df = judgments(rundir)
    rows = df[(df["record_id"] == "test-0000:easy") & (df["generator"] == "sim/weak")]
    assert len(item["judges"]) == rows.groupby(["judge", "condition"]).ngroups == 6
    hostile = next(
        j for j in item["judges"] if j["judge"] == "hostilejudge:make" and j["condition"] == "with_gt"
    )
    want = rows[(rows["judge"] == "hostilejudge:make") & (rows["condition"] == "with_gt")]
    for metric, entry in hostile["metrics"].items():
        mine = want[want["metric"] == metric]
        assert entry["verdict"] == pytest.approx(float(mine["verdict"].iloc[0]))
        assert entry["reference"] == {
            m: pytest.approx(float(v)) for m, v in zip(mine["scoring_mode"], mine["reference"], strict=True)
        }
    assert hostile["raw_output"] == "raw " + HOSTILE  # from run.sqlite
    assert hostile["rationales"]["overall"] == "rationale " + HOSTILE


def test_item_errors(base: str) -> None:
    status, body = get(base, "/api/item", record="test-0000:easy")
    assert status == 400 and "generator: required" in body["error"]
    status, body = get(base, "/api/item", record="test-0000:easy", generator="sim/nobody")
    assert status == 400 and "no verdict rows" in body["error"]
    status, body = get(base, "/api/item", record="test-0000:easy", generator="sim/weak", gtrial="x")
    assert status == 400 and "gtrial: not a whole number" in body["error"]


def test_hostile_text_is_only_ever_sent_as_json_data(base: str) -> None:
    """The page is static; run data reaches it only as JSON (application/json, nosniff), which the page
    puts into text nodes (the browser test checks the rendering)."""
    status, page = get(base, "/")
    assert status == 200 and b'<script src="/static/app.js">' in page and b"__pwned" not in page
    script = (ROOT / "agentjudge" / "viewer" / "static" / "app.js").read_text(encoding="utf-8")
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "document.write" not in script
    url = base + "/api/item?" + urlencode({"record": "test-0000:easy", "generator": "sim/weak"})
    with urllib.request.urlopen(url) as response:
        assert response.headers["Content-Type"] == "application/json"
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_static_files_and_the_report(base: str, rundir: Path) -> None:
    for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css")):
        with urllib.request.urlopen(f"{base}/static/{name}") as response:
            assert response.headers["Content-Type"].startswith(kind)
    status, body = get(base, "/static/secret.txt")
    assert status == 404
    with urllib.request.urlopen(base + "/report/") as response:
        html = response.read().decode()
    assert html == (rundir / "report" / "report.html").read_text(encoding="utf-8")
    with urllib.request.urlopen(base + "/report/figures/headline.png") as response:
        assert response.headers["Content-Type"] == "image/png"
    host = base.removeprefix("http://")
    for sneaky in ("/report/../meta.json", "/report/%2e%2e/run.sqlite", "/report/..%2f..%2fetc/passwd"):
        conn = http.client.HTTPConnection(host, timeout=10)
        conn.request("GET", sneaky)
        answer = conn.getresponse()
        assert answer.status == 404, sneaky
        conn.close()


def test_report_links_open_the_matching_rows(base: str, rundir: Path) -> None:
    """report.html's ranking and main-table entries link (relatively) to the viewer's rows of that judge,
    judge × generator, or judge × generator × difficulty; followed from /report/, they answer."""
    import re

    html = (rundir / "report" / "report.html").read_text(encoding="utf-8")
    links = sorted(set(re.findall(r"href='(\.\./\?[^']+)' class='view'", html)))
    assert any("judge=baseline%2Frule" in link and "difficulty=hard" in link for link in links)
    for link in links[:10]:
        absolute = urljoin(base + "/report/report.html", link.replace("&amp;", "&"))
        assert absolute.startswith(base + "/?")
        status, page = get(base, "/api/rows" + absolute.removeprefix(base + "/"))
        assert status == 200 and page["total"] > 0


def _files(folder: Path) -> dict[Path, tuple[int, int, int]]:
    return {
        p.relative_to(folder): (p.stat().st_mtime_ns, p.stat().st_size, hash(p.read_bytes()))
        for p in folder.rglob("*")
        if p.is_file() and p.suffix != ".sqlite-shm"
    }


def test_the_viewer_writes_nothing_and_reads_beside_a_writer(rundir: Path, tmp_path: Path) -> None:
    """Browsing leaves every file of the folder as it was (SQLite's shared-memory index ``run.sqlite-shm``
    aside: a reader of a WAL database maps it, and its content is no data); a run adding a judge to the
    folder while the viewer answers does not make a request fail."""
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(rundir.parent, folder, ignore=shutil.ignore_patterns("cache.sqlite"))
    run = folder / "run"
    before = _files(run)
    server, _ = start(run)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        for _ in range(3):
            assert get(base, "/api/rows", judge="baseline/rule")[0] == 200
            assert get(base, "/api/item", record="test-0002:hard", generator="sim/perfect")[0] == 200
        assert _files(run) == before
        answers: list[int] = []
        stop = threading.Event()

        def browse() -> None:
            while not stop.is_set():
                answers.append(get(base, "/api/item", record="test-0001:easy", generator="sim/weak")[0])

        reader = threading.Thread(target=browse)
        reader.start()
        try:
            assert run_cli(folder / "pipeline.yaml", run, add_judges=["baseline/always-0.5"]) == 0
        finally:
            stop.set()
            reader.join()
        assert answers and set(answers) == {200}
    finally:
        server.shutdown()


def _agentjudge(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "agentjudge", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_cli_serves_until_ctrl_c_and_exits_0(rundir: Path) -> None:
    proc = _agentjudge("view", str(rundir), "--port", "0")
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("open http://"):
            break
    url = lines[-1].split()[1]
    assert url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(url + "api/facets") as response:
        assert json.loads(response.read())["run"] == "viewer-test"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "stopped" in out and "Traceback" not in out


@pytest.mark.parametrize(
    "args,message",
    [
        (["view", "no/such/folder"], "no/such/folder: no such folder"),
        (["view", ".", "--port", "70000"], "--port 70000: must be <= 65535"),
        (["view", ".", "--port", "-1"], "--port -1: must be >= 0"),
    ],
)
def test_cli_refuses_bad_input_with_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    proc = _agentjudge(*args)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and message in out and "Traceback" not in out


def test_cli_refuses_a_folder_without_verdicts(tmp_path: Path) -> None:
    proc = _agentjudge("view", str(tmp_path))  # an empty folder: no run at all
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and f"{tmp_path}: not a run folder (no meta.json" in out
    write_run(tmp_path, SyntheticSpec(n_base=6, judges={"judge-a": 1}))
    (tmp_path / "judgments.parquet").unlink()  # a run folder whose verdicts are not exported
    proc = _agentjudge("view", str(tmp_path))
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "judgments.parquet: not found" in out


def _read_only_command(folder: Path, command: list[str]) -> list[str] | None:
    """``command`` run where ``folder`` cannot be written: as root (who writes anywhere, whatever the modes
    say) inside a mount namespace of its own where ``folder`` is bind-mounted read-only (the kernel refuses
    every write: EROFS); as another user the folder's modes do it. None when neither can be arranged."""
    import shlex
    import shutil

    if os.geteuid() != 0:
        return command
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "--mount", "true"], capture_output=True).returncode:
        return None
    quoted = shlex.quote(str(folder))
    script = f"mount --bind -o ro {quoted} {quoted} && exec {shlex.join(command)}"
    return [unshare, "--mount", "sh", "-c", script]


def test_a_folder_it_cannot_write(tmp_path: Path) -> None:
    """The run folder read-only (files 0444, folders 0555; for root a read-only bind mount), with no
    ``-wal``/``-shm`` beside run.sqlite, so SQLite cannot make its shared-memory file: every endpoint
    answers, the item reads the store, and the folder is as it was."""
    top = tmp_path / "ro"
    run = build_run(top)
    assert report_cli(run, resamples=20, seed=0) in (0, 1)
    for leftover in run.glob("run.sqlite-*"):
        leftover.unlink()
    command = _read_only_command(run, [sys.executable, "-m", "agentjudge", "view", str(run), "--port", "0"])
    if command is None:
        pytest.skip("running as root without `unshare --mount`: no way to make a folder root cannot write")
    for path in [run, *run.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    before = _files(run)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("open http://"):
                break
        assert lines and lines[-1].startswith("open http://"), "".join(lines)
        base = lines[-1].split()[1].rstrip("/")
        assert get(base, "/api/facets")[1]["rows"] > 0
        status, page = get(base, "/api/rows", judge="hostilejudge:make", condition="with_gt")
        assert status == 200 and page["total"] > 0
        row = page["rows"][0]
        status, item = get(base, "/api/item", record=row["record"], generator=row["generator"])
        assert status == 200, item
        raw = [j.get("raw_output") for j in item["judges"] if j["judge"] == "hostilejudge:make"]
        assert raw and all(r == "raw " + HOSTILE for r in raw)  # from run.sqlite, opened read-only
        assert get(base, "/report/report.html")[0] == 200
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        for path in [run, *run.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert proc.returncode == 0 and "Traceback" not in out, out
    assert _files(run) == before and not list(run.glob("run.sqlite-*"))
