"""The viewer's HTTP server: JSON endpoints and static files over ``serving`` (the local pages' one server:
loopback Host names only unless told otherwise, a warning when bound beyond loopback).

Endpoints (all GET, all read-only):

- ``/`` — the page (``static/index.html``); its state lives in the URL query, so a link opens the same view;
- ``/static/<file>`` — the page's script and style sheet, shipped in the package (no CDN: works offline);
- ``/api/facets`` — the run's name, row count, every filter's values, the judges' and generators' kinds;
- ``/api/rows?<filters>&sort=&page=&per_page=`` — one page of verdict rows (``index.FACETS`` filters, each
  repeatable or comma-separated; ``record``, ``min_disagreement``, ``failures=1``, ``outcome``);
- ``/api/item?record=&generator=&gtrial=`` — one generator output with every judge's verdicts (``item.py``);
- ``/report/<path>`` — the run's report folder, so report.html's links to the viewer work.

A bad request is a 400 whose JSON says what to fix; a path outside the report folder is a 404; a request
whose Host header is not this server is a 403; a request that fails on the folder's files (a damaged
column) is a 500 whose JSON names the file, with one line on stderr: the connection is never dropped
unanswered. The item carries people's labels (``human/NAME``) beside the judges' verdicts.
"""

from __future__ import annotations

import mimetypes
import time
from http import HTTPStatus
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from agentjudge.errors import InputError
from agentjudge.rundir import RunFolder
from agentjudge.viewer import serving
from agentjudge.viewer.index import FACETS, MAX_PAGE, QueryError, VerdictIndex
from agentjudge.viewer.item import Items
from agentjudge.viewer.serving import Handler, RequestError

STATIC_FILES = {"index.html": "text/html", "app.js": "text/javascript", "app.css": "text/css"}


class ViewerError(InputError):
    """A folder the viewer cannot open; the message names the file and what is wrong."""


class Viewer:
    """A run folder's index and files, shared by the server's threads (read-only after ``open``)."""

    def __init__(self, rundir: Path) -> None:
        folder = RunFolder.open(rundir)  # RunFolderError: not a run folder, damaged, another format
        if not folder.has("judgments"):
            raise ViewerError(
                f"{folder.table_path('judgments')}: not found (the run has not exported its verdicts yet)"
            )
        self.rundir = rundir
        self.folder = folder
        self.items = Items(folder)
        started = time.perf_counter()
        try:
            self.index = VerdictIndex.load(folder, self.items.state_match())
        except (OSError, ValueError, KeyError) as exc:
            raise ViewerError(
                f"{folder.table_path('judgments')}: cannot be read ({exc.__class__.__name__}: {exc})"
            ) from None
        self.open_s = time.perf_counter() - started

    def facets(self) -> dict[str, Any]:
        return {
            "run": str(self.folder.meta.pipeline.get("name", self.rundir.name)),
            "rundir": str(self.rundir),
            "rows": self.index.rows,
            "facets": self.index.facets(),
            "kinds": self.items.kinds(),
            "outcome": self.index.outcome is not None,
            "primary_mode": self.index.primary_mode(),
            "report": (self.rundir / "report" / "report.html").is_file(),
        }

    def rows(self, query: dict[str, list[str]]) -> dict[str, Any]:
        filters = {name: _values(query, name) for name in FACETS}
        if not filters["mode"]:  # one scoring mode at a time, the report's, unless another is asked for
            primary = self.index.primary_mode()
            filters["mode"] = [primary] if primary else []
        elif filters["mode"] == ["any"]:
            filters["mode"] = []
        params = {k: v[-1] for k, v in query.items() if v}
        page = _int(params, "page", 1, 1, 10**9)
        per_page = _int(params, "per_page", 50, 1, MAX_PAGE)
        keep = self.index.mask(filters, params)
        total, rows = self.index.page(
            keep, params.get("sort", "disagreement"), (page - 1) * per_page, per_page
        )
        return {
            "total": total,
            "page": page,
            "per_page": per_page,
            "rows": [self.index.describe(int(r)) for r in rows],
        }

    def item(self, query: dict[str, list[str]]) -> dict[str, Any]:
        params = {k: v[-1] for k, v in query.items() if v}
        for key in ("record", "generator"):
            if not params.get(key):
                raise QueryError(f"{key}: required (the item is a record at a difficulty and a generator)")
        gtrial = _int(params, "gtrial", 0, 0, 10**6)
        return self.items.item(params["record"], params["generator"], gtrial)


def _values(query: dict[str, list[str]], name: str) -> list[str]:
    out: list[str] = []
    for value in query.get(name, []):
        out.extend(v for v in value.split(",") if v)
    return out


def _int(params: dict[str, str], key: str, default: int, low: int, high: int) -> int:
    if key not in params or params[key] == "":
        return default
    try:
        value = int(params[key])
    except ValueError:
        raise QueryError(f"{key}: not a whole number: {params[key]!r}") from None
    if not low <= value <= high:
        raise QueryError(f"{key}: {value} is outside [{low}, {high}]")
    return value


def make_handler(viewer: Viewer) -> type[Handler]:
    report_root = (viewer.rundir / "report").resolve()

    class ViewerHandler(Handler):
        server_version = "agentjudge-view"
        static_files = STATIC_FILES

        def get(self, path: str, query: dict[str, list[str]]) -> None:
            try:
                if path in ("/", "/index.html"):
                    self.send_static("index.html")
                elif path.startswith("/static/"):
                    self.send_static(path.removeprefix("/static/"))
                elif path == "/api/facets":
                    self.send_json(viewer.facets())
                elif path == "/api/rows":
                    self.send_json(viewer.rows(query))
                elif path == "/api/item":
                    self.send_json(viewer.item(query))
                elif path == "/report" or path.startswith("/report/"):
                    self._report(unquote(path.removeprefix("/report").lstrip("/")) or "report.html")
                else:
                    raise RequestError(HTTPStatus.NOT_FOUND, f"no such page: {path}")
            except QueryError as exc:
                raise RequestError(HTTPStatus.BAD_REQUEST, str(exc)) from None

        def _report(self, relative: str) -> None:
            if "\0" in relative:  # no file name holds one (the OS refuses it)
                raise QueryError(f"not a file name: {relative!r}")
            target = (report_root / relative).resolve()
            if not target.is_relative_to(report_root) or not target.is_file():
                raise RequestError(HTTPStatus.NOT_FOUND, f"not in the run's report folder: {relative}")
            kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
            if kind.startswith("text/"):
                kind += "; charset=utf-8"
            self.send_body(HTTPStatus.OK, kind, target.read_bytes())

    return ViewerHandler


def start(rundir: Path, host: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, Viewer]:
    """A running server (on its own thread) over ``rundir``; ``port`` 0 picks a free one. Answers loopback
    Host names only unless ``host`` binds beyond loopback (``serving``)."""
    viewer = Viewer(rundir)
    return serving.start(make_handler(viewer), host, port, "agentjudge-view"), viewer
