"""The viewer in a real browser (headless Chromium over its DevTools pipe, `tests/chromium.py`): a link
opens its view, a filter changes the list and the URL, a click opens an item, hostile text is shown as
text and never runs, and a link in report.html lands on the matching rows.

Skipped, saying so, when no Chromium is installed (`.ci/run` installs Debian's `chromium` when it can)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from chromium import Chromium, find_chromium
from test_viewer import HOSTILE, build_run

from agentjudge.commands.report import report_cli
from agentjudge.viewer.server import start

pytestmark = pytest.mark.skipif(
    find_chromium() is None,
    reason="no chromium on PATH (apt-get install chromium, or set AGENTJUDGE_CHROMIUM)",
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The viewer's URL and the run folder it serves (with its report)."""
    run = build_run(tmp_path_factory.mktemp("browser"))
    assert report_cli(run, resamples=50, seed=0) in (0, 1)
    server, _ = start(run)
    yield f"http://127.0.0.1:{server.server_address[1]}", run
    server.shutdown()


@pytest.fixture(scope="module")
def site(served: tuple[str, Path]) -> str:
    return served[0]


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    with Chromium.start() as chromium:
        yield chromium


def show(browser: Chromium, url: str) -> None:
    browser.open(url)
    assert browser.wait_ready() == "1", browser.eval("document.getElementById('status').textContent")


def act(browser: Chromium, script: str) -> None:
    """Run ``script`` (a click, a change) and wait until the page has rendered its new URL."""
    browser.eval("document.body.removeAttribute('data-ready');" + script)
    assert browser.wait_ready() == "1", browser.eval("document.getElementById('status').textContent")


def query(browser: Chromium) -> dict[str, list[str]]:
    return parse_qs(urlsplit(str(browser.eval("location.href"))).query)


def column(browser: Chromium, index: int) -> list[Any]:
    # the cell's own text (a kind label such as "baseline" follows it in a span of its own)
    at = f"{index} < 0 ? tr.cells.length + {index} : {index}"
    rows = "[...document.querySelectorAll('#rows tbody tr')]"
    script = f"{rows}.map(tr => tr.cells.item({at}).firstChild.textContent)"
    values: list[Any] = browser.eval(script)
    return values


def test_a_link_opens_its_view(site: str, browser: Chromium) -> None:
    show(browser, site + "/?judge=hostilejudge:make&condition=with_gt")
    assert browser.eval("document.querySelector('select[name=judge]').value") == "hostilejudge:make"
    assert browser.eval("document.querySelector('select[name=condition]').value") == "with_gt"
    summary = browser.eval("document.getElementById('summary').textContent")
    total = int(summary.split(" verdict rows match")[0].replace(",", ""))
    rows = browser.eval("document.querySelectorAll('#rows tbody tr').length")
    assert 0 < rows == min(total, 50)
    assert set(column(browser, 0)) == {"hostilejudge:make"}
    assert set(column(browser, 3)) == {"with_gt"}


def test_a_filter_changes_the_list_and_the_url(site: str, browser: Chromium) -> None:
    show(browser, site + "/?judge=baseline/rule")
    act(
        browser,
        "const s = document.querySelector('select[name=difficulty]'); s.value = 'hard';"
        "s.dispatchEvent(new Event('change'));",
    )
    assert query(browser) == {"judge": ["baseline/rule"], "difficulty": ["hard"]}
    assert set(column(browser, 2)) == {"hard"} and set(column(browser, 0)) == {"baseline/rule"}
    # the largest disagreement first
    values = [float(v) for v in column(browser, -1) if v not in ("failed", "—")]
    assert values == sorted(values, reverse=True)
    # back restores the earlier view
    act(browser, "history.back();")
    assert query(browser) == {"judge": ["baseline/rule"]}


def test_a_click_opens_the_item_and_hostile_text_stays_text(site: str, browser: Chromium) -> None:
    show(browser, site + "/?judge=hostilejudge:make&record=test-0000:easy")
    act(browser, "document.querySelector('#rows tbody tr').click();")
    assert query(browser)["record"] == ["test-0000:easy"]
    assert browser.eval("document.getElementById('item').hidden") is False
    heading = browser.eval("document.querySelector('#item h2').textContent")
    assert heading.startswith("test-0000:easy · ")
    shown = browser.eval("document.getElementById('item').innerText")
    assert HOSTILE in browser.eval("document.querySelector('#item .query').textContent")
    assert "hostilejudge:make" in shown
    # the rationale and raw answer, opened, show the markup as characters
    browser.eval("document.querySelectorAll('#item details').forEach(d => d.open = true)")
    shown = browser.eval("document.getElementById('item').innerText")
    assert "raw " + HOSTILE in shown and "rationale " + HOSTILE in shown
    assert browser.eval("typeof window.__pwned") == "undefined"
    assert browser.eval("document.querySelectorAll('#item script, #item img, #rows script').length") == 0


def test_a_link_in_the_report_lands_on_the_matching_rows(site: str, browser: Chromium) -> None:
    browser.open(site + "/report/report.html")
    browser.wait_for("document.readyState === 'complete' && !!document.querySelector('a.view')")
    target = browser.eval(
        "[...document.querySelectorAll('a.view')].find(a => a.href.includes('generator=')).href"
    )
    act(browser, f"[...document.querySelectorAll('a.view')].find(a => a.href === {target!r}).click();")
    here = urlsplit(str(browser.eval("location.href")))
    assert here.path == "/" and f"{here.scheme}://{here.netloc}" == site
    wanted = parse_qs(urlsplit(target).query)
    assert query(browser) == wanted
    assert set(column(browser, 0)) == set(wanted["judge"]) and set(column(browser, 1)) == set(
        wanted["generator"]
    )


def test_a_click_far_down_the_list_brings_the_item_into_view_and_back_returns(
    site: str, browser: Chromium
) -> None:
    """The item is drawn under the list: a click on the last of 50 rows must show it (the window is 900 px
    high, the row is far below), and "back to the list" closes it and shows that row again."""
    show(browser, site + "/?judge=baseline/rule")
    assert browser.eval("document.querySelectorAll('#rows tbody tr').length") == 50
    act(browser, "document.querySelector('#rows tbody tr:last-child').click();")
    top = browser.eval("document.getElementById('item').getBoundingClientRect().top")
    assert -2 <= top < 100, top  # at the top of the window (-0.1: sub-pixel layout)
    record = query(browser)["record"][0]
    act(browser, "document.getElementById('back').click();")
    assert query(browser) == {"judge": ["baseline/rule"]}
    assert browser.eval("document.getElementById('item').hidden") is True
    row = browser.eval(
        f"[...document.querySelectorAll('#rows tbody tr')].find(tr => tr.dataset.record === {record!r})"
        ".getBoundingClientRect().top"
    )
    assert 0 <= row < browser.eval("window.innerHeight"), row


def test_the_reports_links_are_plain_text_from_disk_and_say_how_to_follow_them(
    served: tuple[str, Path], browser: Chromium
) -> None:
    """Opened from disk (file://) the first screen's viewer links would open a directory listing: the page
    shows them as text and says to open the report from `agentjudge view`; served by the viewer they link."""
    site, run = served
    browser.open((run / "report" / "report.html").as_uri())
    browser.wait_for("document.readyState === 'complete'")
    assert browser.eval("document.querySelectorAll('a.view').length") > 0
    linked = "[...document.querySelectorAll('a.view')].filter(a => a.hasAttribute('href')).length"
    assert browser.eval(linked) == 0
    notes = "[...document.querySelectorAll('.viewnote')].filter(n => !n.hidden).map(n => n.textContent)"
    (note,) = browser.eval(notes)
    assert f"agentjudge view {run}" in note
    browser.open(site + "/report/report.html")
    browser.wait_for("document.readyState === 'complete' && !!document.querySelector('a.view')")
    assert browser.eval("[...document.querySelectorAll('a.view')].every(a => a.hasAttribute('href'))")
    assert browser.eval("[...document.querySelectorAll('.viewnote')].every(n => n.hidden)")


def test_a_link_naming_a_record_alone_opens_its_first_generator_output(site: str, browser: Chromium) -> None:
    show(browser, site + "/?sort=record")
    record = browser.eval("document.querySelector('#rows tbody tr').dataset.record")
    show(browser, site + "/?" + urlencode({"record": record}))
    q = query(browser)
    assert q["record"] == [record] and q.get("generator")  # the URL now names the output it opened
    assert not browser.eval("document.getElementById('item').hidden")
    heading = browser.eval("document.querySelector('#item h2').textContent")
    assert heading.startswith(f"{record} · {q['generator'][0]}")
