"""agentjudge label: the queue is human-sample's design in a seeded order and resumes; a save is one line
on disk before the answer; only the page's token writes, only this server's Host names are answered; a
bad item, metric or value is a 400 naming it; a torn line is skipped and cut; two annotators at once; the
server writes nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from people_run import build_people_run, label_body, page_token, request

from agentjudge.people.labelling import Labelling
from agentjudge.people.server import start
from agentjudge.rundir import RunFolder, TornLabelWarning
from agentjudge.rundir.labels import read_label_file
from agentjudge.stats.label_sample import select_sample, stratum_of
from agentjudge.viewer.serving import ExposedServerWarning, HostCheck


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_people_run(tmp_path_factory.mktemp("people"))


@pytest.fixture()
def rundir(built: Path, tmp_path: Path) -> Path:
    """A fresh copy of the run's files for each test (labels start empty)."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(built, run, ignore=shutil.ignore_patterns("labels", "human"))
    return run


@pytest.fixture()
def server(rundir: Path) -> Iterator[tuple[int, Labelling]]:
    httpd, session = start(rundir, "ana", n=24, seed=3)
    yield int(httpd.server_address[1]), session
    httpd.shutdown()
    httpd.server_close()


def queue(port: int) -> dict[str, Any]:
    status, state = request(port, "GET", "/api/queue")
    assert status == 200, state
    return state


def files(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ------------------------------------------------------------------------------------------- the queue


def test_the_queue_is_the_stratified_sample_in_a_seeded_order(rundir: Path) -> None:
    session = Labelling(rundir, "ana", n=24, seed=3)
    outputs, _ = RunFolder.open(rundir).outputs()
    sample = select_sample(outputs, 24, 3, "hard")
    keys = {(r.record_id, r.generator, r.trial) for r in sample.itertuples()}
    order = [(r.record_id, r.generator, r.trial) for r in session.queue.itertuples()]
    assert set(order) == keys and len(order) == 24
    assert (session.queue["difficulty"] == "hard").all()
    # per topology 4 of 24; in each, 3 imperfect and 1 perfect (14 : 6 of 20, rounded)
    strata = stratum_of(sample).str.split("/", expand=True)
    assert strata[1].value_counts().eq(4).all() and strata[2].value_counts().to_dict() == {
        "imperfect": 18,
        "perfect": 6,
    }
    assert order != [(r.record_id, r.generator, r.trial) for r in sample.itertuples()]  # shuffled
    again = Labelling(rundir, "bo", n=24, seed=3)
    assert [(r.record_id, r.generator, r.trial) for r in again.queue.itertuples()] == order
    other = Labelling(rundir, "ana", n=24, seed=4)
    assert [(r.record_id, r.generator, r.trial) for r in other.queue.itertuples()] != order


def test_saves_append_lines_and_a_restart_resumes(rundir: Path, server: tuple[int, Labelling]) -> None:
    port, session = server
    state = queue(port)
    assert state["next"] == 0 and state["labelled"] == 0 and len(state["queue"]) == 24
    assert [m["key"] for m in state["metrics"]] == ["tool", "param", "seq", "cov"]
    assert state["metrics"][1]["levels"]["0.5"].startswith("a minor problem")
    token = page_token(port)
    for i, entry in enumerate(state["queue"][:3]):
        status, answer = request(port, "POST", "/api/labels", label_body(entry, note=f"n{i}"), token=token)
        assert status == 200 and answer["saved"] and answer["line"] == i + 1, answer
    status, answer = request(
        port,
        "POST",
        "/api/labels",
        {**label_body(state["queue"][3], {}), "note": "cannot read the GT"},
        token=token,
    )
    assert status == 200 and answer["next"] == 4
    lines = read_label_file(session.path)
    assert [x.note for x in lines] == ["n0", "n1", "n2", "cannot read the GT"] and lines[3].skipped
    first = lines[0]
    assert first.verdicts == {"tool": 1.0, "param": 0.5, "seq": 1.0, "cov": 0.0}
    assert first.shown.gt and first.shown.blind and first.annotator == "ana"
    assert first.sample is not None and (first.sample.n, first.sample.seed, first.sample.position) == (
        24,
        3,
        1,
    )
    assert first.difficulty == "hard" and first.item == (
        state["queue"][0]["record_id"],
        state["queue"][0]["generator"],
        state["queue"][0]["generator_trial"],
    )
    raw = json.loads(session.path.read_text().splitlines()[0])
    assert set(raw) == {"record_id", "generator", "generator_trial", "difficulty", "verdicts", "note",
                        "annotator", "shown", "at", "sample"}  # fmt: skip
    assert raw["at"].endswith("Z")
    after = queue(port)
    assert after["next"] == 4 and after["labelled"] == 3 and after["skipped"] == 1
    assert [e["labelled"] for e in after["queue"][:5]] == [True, True, True, False, False]
    # a new server (a restart) starts where ana stopped; bo starts at the beginning
    assert Labelling(rundir, "ana", n=24, seed=3).queue_state()["next"] == 4
    assert Labelling(rundir, "bo", n=24, seed=3).queue_state()["next"] == 0
    # a later save of an item supersedes the earlier one; the history stays in the file
    status, _ = request(port, "POST", "/api/labels", label_body(state["queue"][0], {"tool": 0}), token=token)
    assert status == 200 and len(read_label_file(session.path)) == 5
    latest = {x.item: x for x in RunFolder.open(rundir).labels()}
    assert latest[first.item].verdicts == {"tool": 0.0}


def test_any_output_of_the_run_may_be_labelled_outside_the_sample(
    rundir: Path, server: tuple[int, Labelling]
) -> None:
    port, session = server
    inside = {(e["record_id"], e["generator"], e["generator_trial"]) for e in queue(port)["queue"]}
    outputs, _ = RunFolder.open(rundir).outputs()
    easy = outputs[(outputs["difficulty"] == "easy")].iloc[0]
    entry = {"record_id": easy.record_id, "generator": easy.generator, "generator_trial": int(easy.trial)}
    assert (easy.record_id, easy.generator, int(easy.trial)) not in inside
    status, item = request(
        port, "GET", f"/api/item?record={easy.record_id}&generator={easy.generator}&gtrial={easy.trial}"
    )
    assert status == 200 and item["position"] is None and item["record"]["query"]
    status, _ = request(port, "POST", "/api/labels", label_body(entry), token=page_token(port))
    assert status == 200
    line = read_label_file(session.path)[0]
    assert line.sample is None and line.difficulty == "easy"
    assert queue(port)["outside"] == 1 and queue(port)["labelled"] == 0


def test_a_blind_page_never_carries_the_reference(rundir: Path, server: tuple[int, Labelling]) -> None:
    port, _ = server
    entry = queue(port)["queue"][0]
    path = f"/api/item?record={entry['record_id']}&generator={entry['generator']}&gtrial=0"
    status, item = request(port, "GET", path)
    assert status == 200 and "scores" not in item and "judges" not in item
    assert item["record"]["gt"] and item["prediction"]["calls"] is not None
    assert "p_tool" not in json.dumps(item) and "verdict" not in json.dumps(item)
    shown, session = start(rundir, "cy", n=24, seed=3, show_reference=True)
    try:
        port2 = int(shown.server_address[1])
        status, item = request(port2, "GET", path)
        assert (
            status == 200
            and item["scores"]
            and {j["judge"] for j in item["judges"]}
            == {
                "baseline/rule",
                "simjudge/careful",
            }
        )
        assert request(port2, "POST", "/api/labels", label_body(entry), token=page_token(port2))[0] == 200
        line = read_label_file(session.path)[0]
        assert line.shown.scores and line.shown.verdicts and not line.shown.blind
    finally:
        shown.shutdown()
        shown.server_close()


# ------------------------------------------------------------------------------------------- refusals


def test_a_post_without_the_page_s_token_is_refused_and_writes_nothing(
    rundir: Path, server: tuple[int, Labelling]
) -> None:
    port, session = server
    entry = queue(port)["queue"][0]
    before = files(rundir)
    status, answer = request(port, "POST", "/api/labels", label_body(entry))
    assert status == 403 and "X-Agentjudge-Token: missing" in answer["error"]
    status, answer = request(port, "POST", "/api/labels", label_body(entry), token="not-the-token")
    assert status == 403 and "not this page's token" in answer["error"]
    status, answer = request(port, "POST", "/api/labels", label_body(entry), token="")
    assert status == 403
    assert files(rundir) == before and not session.path.exists()
    # a second server's page has another token
    other, _ = start(rundir, "ana", n=24, seed=3)
    try:
        status, _ = request(
            port, "POST", "/api/labels", label_body(entry), token=page_token(other.server_address[1])
        )
        assert status == 403 and files(rundir) == before
    finally:
        other.shutdown()
        other.server_close()
    # with its own token it writes
    assert request(port, "POST", "/api/labels", label_body(entry), token=page_token(port))[0] == 200


@pytest.mark.parametrize(
    "host", ["evil.example:{port}", "127.0.0.1", "127.0.0.1:1", "localhost.evil:{port}", "::1:{port}", ""]
)
def test_a_request_for_another_host_name_is_refused(
    rundir: Path, server: tuple[int, Labelling], host: str
) -> None:
    port, session = server
    token = page_token(port)
    entry = queue(port)["queue"][0]
    header = host.format(port=port)
    for method, path, body in (
        ("GET", "/", None),
        ("GET", "/api/queue", None),
        ("POST", "/api/labels", label_body(entry)),
    ):
        status, answer = request(port, method, path, body, token=token, host=header)
        assert status == 403 and "is not this server" in answer["error"], (method, path, answer)
    assert not session.path.exists()


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}", "[::1]:{port}", "LOCALHOST:{port}"])
def test_loopback_host_names_are_answered(server: tuple[int, Labelling], host: str) -> None:
    port, _ = server
    assert request(port, "GET", "/api/queue", host=host.format(port=port))[0] == 200


def test_host_names_beyond_loopback() -> None:
    loop = HostCheck("127.0.0.1", 8000)
    assert loop.allows("localhost:8000") and not loop.allows("192.168.1.5:8000")
    lan = HostCheck("192.168.1.5", 8000)
    assert lan.allows("192.168.1.5:8000") and lan.allows("localhost:8000") and lan.allows("10.0.0.7:8000")
    assert not lan.allows("evil.example:8000") and not lan.allows("192.168.1.5:8001")
    wild = HostCheck("0.0.0.0", 8000)
    assert wild.allows("[fe80::1]:8000") and not wild.allows("attacker.example:8000")


def test_binding_beyond_loopback_warns(rundir: Path) -> None:
    with pytest.warns(
        ExposedServerWarning, match="beyond this machine: anyone who can reach it can read the run"
    ):
        httpd, _ = start(rundir, "ana", n=24, seed=3, host="0.0.0.0")
    httpd.shutdown()
    httpd.server_close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        httpd, _ = start(rundir, "ana", n=24, seed=3)  # loopback: no warning
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize(
    "change,message",
    [
        ({"record_id": "nothing-0000:hard"}, "record_id 'nothing-0000:hard', generator"),
        ({"generator": "sim/nobody"}, "generator 'sim/nobody', generator_trial 0: not an output of this run"),
        ({"generator_trial": 7}, "generator_trial 7: not an output of this run"),
        ({"verdicts": {"outcome": 1}}, "verdicts: 'outcome' is not a metric (tool, param, seq, cov)"),
        ({"verdicts": {"param": 0.7}}, "verdicts.param: 0.7 is not 0, 0.5 or 1"),
        ({"verdicts": {"param": True}}, "verdicts.param: True is not 0, 0.5 or 1"),
        ({"verdicts": {"param": "1"}}, "verdicts.param: '1' is not 0, 0.5 or 1"),
        ({"verdicts": [1, 1]}, "verdicts: not an object"),
        ({"verdicts": {}}, "verdicts: empty, and a skip needs its reason in note"),
        ({"note": 3}, "note: text"),
        ({"generator_trial": "0"}, "generator_trial: '0' is not a whole number"),
        ({"extra": 1}, "extra: not a field of a label"),
        ({"seconds": -1}, "seconds: -1 is not a number of seconds"),
    ],
)
def test_a_bad_label_is_a_400_naming_it_and_writes_nothing(
    rundir: Path, server: tuple[int, Labelling], change: dict[str, Any], message: str
) -> None:
    port, session = server
    body = {**label_body(queue(port)["queue"][0]), **change}
    status, answer = request(port, "POST", "/api/labels", body, token=page_token(port))
    assert status == 400 and message in answer["error"], answer
    assert not session.path.exists()


@pytest.mark.parametrize(
    "raw,message",
    [
        (b"{oops", "body: not JSON"),
        (b"[1]", "body: not a JSON object"),
        (b'{"note": ""}', "record_id: required"),
    ],
)
def test_a_body_that_is_no_label_is_a_400(server: tuple[int, Labelling], raw: bytes, message: str) -> None:
    port, session = server
    status, answer = request(port, "POST", "/api/labels", raw=raw, token=page_token(port))
    assert status == 400 and message in answer["error"]
    assert not session.path.exists()


def test_unknown_pages_and_items(server: tuple[int, Labelling]) -> None:
    port, _ = server
    assert request(port, "GET", "/nothing")[0] == 404
    assert request(port, "GET", "/static/../server.py")[0] == 404
    assert request(port, "POST", "/api/queue", {}, token=page_token(port))[0] == 404
    status, answer = request(port, "GET", "/api/item?record=x:hard&generator=g")
    assert (
        status == 400
        and "record_id 'x:hard', generator 'g', generator_trial 0: not an output" in answer["error"]
    )


# ------------------------------------------------------------------------------------------- files


def test_a_torn_last_line_is_skipped_then_cut_before_the_next_save(rundir: Path) -> None:
    first = Labelling(rundir, "ana", n=24, seed=3)
    entry = first.queue_state()["queue"][0]
    first.save(label_body(entry, note="whole"))
    with first.path.open("ab") as handle:  # a crash in the middle of the second save
        handle.write(json.dumps(label_body(entry))[:37].encode())
    with pytest.warns(TornLabelWarning, match=r"ana\.jsonl, line 2: skipped"):
        assert [x.note for x in RunFolder.open(rundir).labels()] == ["whole"]
    httpd, session = start(rundir, "ana", n=24, seed=3)  # starts: the torn line never counted
    try:
        port = int(httpd.server_address[1])
        assert queue(port)["next"] == 1
        with pytest.warns(TornLabelWarning, match=r"line 2: cut off before saving"):
            status, answer = request(
                port, "POST", "/api/labels", label_body(queue(port)["queue"][1]), token=page_token(port)
            )
        assert status == 200 and answer["line"] == 2
    finally:
        httpd.shutdown()
        httpd.server_close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(read_label_file(session.path)) == 2


def test_a_labels_file_that_does_not_read_stops_the_start(rundir: Path) -> None:
    path = rundir / "labels" / "ana.jsonl"
    path.parent.mkdir()
    path.write_text('{"not": "a label"}\n{}\n')
    with pytest.raises(Exception, match=r"ana\.jsonl, line 1: field record_id"):
        Labelling(rundir, "ana", n=24, seed=3)


def test_two_annotators_at_once_and_one_annotator_on_two_pages(rundir: Path) -> None:
    servers = [start(rundir, name, n=24, seed=3) for name in ("ana", "bo", "ana")]
    try:
        ports = [int(s.server_address[1]) for s, _ in servers]
        tokens = [page_token(p) for p in ports]
        entries = queue(ports[0])["queue"]
        errors: list[Any] = []

        def save_all(k: int) -> None:
            for i, entry in enumerate(entries):
                status, answer = request(
                    ports[k], "POST", "/api/labels", label_body(entry, note=f"{k}-{i}"), token=tokens[k]
                )
                if status != 200:
                    errors.append(answer)

        threads = [threading.Thread(target=save_all, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
    finally:
        for httpd, _ in servers:
            httpd.shutdown()
            httpd.server_close()
    ana = read_label_file(rundir / "labels" / "ana.jsonl")
    bo = read_label_file(rundir / "labels" / "bo.jsonl")
    assert len(ana) == 48 and len(bo) == 24  # every line whole: none interleaved with another
    assert sorted(x.note for x in ana) == sorted([f"{k}-{i}" for k in (0, 2) for i in range(24)])
    assert {x.annotator for x in bo} == {"bo"}


def test_the_server_writes_nothing_but_the_annotator_s_file(rundir: Path) -> None:
    before = files(rundir)
    httpd, session = start(rundir, "ana", n=24, seed=3)
    try:
        port = int(httpd.server_address[1])
        token = page_token(port)
        for entry in queue(port)["queue"][:5]:
            request(
                port, "GET", f"/api/item?record={entry['record_id']}&generator={entry['generator']}&gtrial=0"
            )
            assert request(port, "POST", "/api/labels", label_body(entry), token=token)[0] == 200
    finally:
        httpd.shutdown()
        httpd.server_close()
    after = files(rundir)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed == {"labels/ana.jsonl"}


def test_an_annotator_name_must_be_a_file_name(rundir: Path) -> None:
    for bad in ("../escape", "a/b", ".hidden", "", "x" * 65, "sp ace"):
        with pytest.raises(Exception, match="annotator"):
            Labelling(rundir, bad)


# ------------------------------------------------------------------------------------------- the verb


def _agentjudge(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "agentjudge", *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["label", "{missing}", "--annotator", "ana"], "error: "),
        (["label", "{run}", "--annotator", "../x"], "error: annotator '../x': use letters"),
        (["label", "{run}", "--annotator", "ana", "--difficulty", "brutal"], "error: --difficulty 'brutal'"),
        (["label", "{run}", "--annotator", "ana", "--n", "0"], "error: --n 0: must be >= 1"),
        (
            ["label", "{run}", "--annotator", "ana", "--port", "70000"],
            "error: --port 70000: must be <= 65535",
        ),
    ],
)
def test_bad_flags_and_folders_are_one_line_and_exit_2(
    rundir: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    done = _agentjudge(*[a.format(run=rundir, missing=tmp_path / "nothing") for a in args])
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and not (rundir / "labels").exists()


def test_a_run_with_one_difficulty_is_labelled_at_it(rundir: Path) -> None:
    outputs, _ = RunFolder.open(rundir).outputs()
    easy_only = pd.DataFrame(outputs[outputs["difficulty"] == "easy"])
    from agentjudge.people.labelling import default_difficulty

    assert default_difficulty(easy_only) == "easy" and default_difficulty(outputs) == "hard"


# ------------------------------------------------------------------------------------------- the viewer


def test_the_viewer_shares_the_host_check_and_shows_people_beside_the_judges(rundir: Path) -> None:
    from agentjudge.viewer.server import start as view

    session = Labelling(rundir, "ana", n=24, seed=3)
    entry = session.queue_state()["queue"][0]
    session.save(label_body(entry, note="looked twice"))
    httpd, _ = view(rundir)
    try:
        port = int(httpd.server_address[1])
        path = f"/api/item?record={entry['record_id']}&generator={entry['generator']}&gtrial=0"
        status, answer = request(port, "GET", path, host=f"rebound.example:{port}")
        assert status == 403 and "is not this server" in answer["error"]
        status, item = request(port, "GET", path, host=f"localhost:{port}")
        assert status == 200
        assert item["people"] == [
            {
                "judge": "human/ana",
                "verdicts": {"tool": 1.0, "param": 0.5, "seq": 1.0, "cov": 0.0},
                "note": "looked twice",
                "at": item["people"][0]["at"],
                "blind": True,
                "skipped": False,
                "in_sample": True,
            }
        ]
        assert {j["judge"] for j in item["judges"]} == {"baseline/rule", "simjudge/careful"}
    finally:
        httpd.shutdown()
        httpd.server_close()
