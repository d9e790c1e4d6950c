"""The labelling page in a real browser (headless Chromium over its DevTools pipe, `tests/chromium.py`),
driven by the keyboard alone: three items labelled with digits and Enter, back shows a saved item as saved,
a save to a server that died says NOT saved, and a restarted server's page resumes where the person stopped.

Skipped, saying so, when no Chromium is installed."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from chromium import Chromium, find_chromium
from people_run import build_people_run

from agentjudge.people.labelling import Labelling
from agentjudge.rundir.labels import read_label_file

pytestmark = pytest.mark.skipif(
    find_chromium() is None,
    reason="no chromium on PATH (apt-get install chromium, or set AGENTJUDGE_CHROMIUM)",
)


@pytest.fixture(scope="module")
def rundir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_people_run(tmp_path_factory.mktemp("label-browser"))


class Server:
    """``agentjudge label`` in a child process, stopped (killed) on exit."""

    def __init__(self, rundir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentjudge", "label", str(rundir), "--annotator", "ana", "--n", "24",
             "--seed", "3"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.url = ""
        for line in self.proc.stdout:
            found = re.search(r"open (http://\S+)", line)
            if found:
                self.url = found.group(1)
                break
        assert self.url, self.proc.stderr.read() if self.proc.stderr else ""

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture()
def browser() -> Iterator[Chromium]:
    with Chromium.start() as chromium:
        yield chromium


def ready(browser: Chromium) -> None:
    assert browser.wait_ready() == "1", browser.eval("document.getElementById('status').textContent")


def heading(browser: Chromium) -> str:
    return str(browser.eval("document.querySelector('#item h2').textContent"))


def chosen(browser: Chromium) -> dict[str, str]:
    return dict(
        browser.eval(
            "Object.fromEntries([...document.querySelectorAll('.metric')].map(m => "
            "[m.dataset.metric, (m.querySelector('.level.chosen') || {dataset: {}}).dataset.value || '']))"
        )
    )


def test_three_labels_by_keyboard_then_a_restart_resumes(rundir: Path, browser: Chromium) -> None:
    order = Labelling(rundir, "probe", n=24, seed=3).queue_state()["queue"]
    title = [f"{e['record_id']} · {e['generator']}" for e in order]
    server = Server(rundir)
    try:
        browser.open(server.url)
        ready(browser)
        assert heading(browser) == title[0]
        assert browser.eval("document.getElementById('count').textContent") == "0 / 24"
        assert "blind" in browser.eval("document.getElementById('blind').textContent")
        keys = [["1", "5", "1", "0"], ["0", "0", "5", "1"], ["1", "1", "1", "1"]]
        for i, digits in enumerate(keys):
            for key in digits:
                browser.press(key)
            level = {"1": "1", "5": "0.5", "0": "0"}
            metrics = ("tool", "param", "seq", "cov")
            assert chosen(browser) == {m: level[k] for m, k in zip(metrics, digits, strict=True)}
            if i == 1:  # a note, typed after N; Escape leaves it
                browser.press("n")
                browser.type("hard to read")
                browser.press("Escape")
            browser.eval("document.body.removeAttribute('data-ready')")
            browser.press("Enter")
            browser.wait_for(f"document.body.getAttribute('data-saved') === '{i + 1}'")
            ready(browser)
            assert heading(browser) == title[i + 1]
            assert browser.eval("document.getElementById('status').textContent").startswith("✓ saved")
            assert browser.eval("document.getElementById('count').textContent") == f"{i + 1} / 24"
        lines = read_label_file(rundir / "labels" / "ana.jsonl")
        assert [x.verdicts for x in lines] == [
            {"tool": 1.0, "param": 0.5, "seq": 1.0, "cov": 0.0},
            {"tool": 0.0, "param": 0.0, "seq": 0.5, "cov": 1.0},
            {"tool": 1.0, "param": 1.0, "seq": 1.0, "cov": 1.0},
        ]
        assert [x.note for x in lines] == ["", "hard to read", ""]
        assert [x.sample.position for x in lines if x.sample] == [1, 2, 3]
        assert all(x.seconds is not None for x in lines)
        # back: the previous item, shown with what was saved
        browser.eval("document.body.removeAttribute('data-ready')")
        browser.press("ArrowLeft")
        ready(browser)
        assert heading(browser) == title[2] and chosen(browser) == {
            "tool": "1",
            "param": "1",
            "seq": "1",
            "cov": "1",
        }
        assert "saved before" in browser.eval("document.getElementById('where').textContent")
        browser.eval("document.body.removeAttribute('data-ready')")
        browser.press("ArrowRight")
        ready(browser)
        assert heading(browser) == title[3]
    finally:
        server.kill()
    # the server is gone: a save must not be reported as saved
    for key in ("1", "1", "1", "1"):
        browser.press(key)
    browser.press("Enter")
    browser.wait_for("document.getElementById('status').textContent.startsWith('NOT saved')")
    assert len(read_label_file(rundir / "labels" / "ana.jsonl")) == 3
    # a new server: the page opens on the first item ana has not labelled
    again = Server(rundir)
    try:
        browser.open(again.url)
        ready(browser)
        assert heading(browser) == title[3]
        assert browser.eval("document.getElementById('count').textContent") == "3 / 24"
        assert browser.eval("location.search").startswith("?record=")
    finally:
        again.kill()


def test_skip_needs_a_reason_and_moves_on(rundir: Path, browser: Chromium) -> None:
    server = Server(rundir)
    try:
        browser.open(server.url)
        ready(browser)
        first = heading(browser)
        browser.press("Enter")  # nothing chosen: refused, nothing written
        assert "Choose a verdict first" in browser.eval("document.getElementById('status').textContent")
        browser.press("s")
        assert browser.eval("document.activeElement.id") == "skip-reason"
        browser.press("Enter")  # no reason yet
        assert "needs its reason" in browser.eval("document.getElementById('status').textContent")
        browser.type("the GT looks wrong")
        browser.eval("document.body.removeAttribute('data-ready')")
        browser.press("Enter")
        browser.wait_for("document.getElementById('status').textContent.startsWith('skipped')")
        ready(browser)
        assert heading(browser) != first
        line = read_label_file(rundir / "labels" / "ana.jsonl")[-1]
        assert (
            line.skipped
            and line.note == "the GT looks wrong"
            and f"{line.record_id} · {line.generator}" == first
        )
    finally:
        server.kill()
