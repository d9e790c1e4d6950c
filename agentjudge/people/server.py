"""``agentjudge label``'s HTTP server: the labelling page and its JSON, over the viewer's ``serving`` (the
local pages' one server: loopback Host names only unless ``--host`` says otherwise, a warning beyond).

- ``GET /`` — the page (``static/index.html``) with this start's token in
  ``<meta name="agentjudge-token" content="…">``; ``/static/<file>`` its script and style sheet;
- ``GET /api/queue`` — the queue in order, each item labelled, skipped or neither, and where to go on;
- ``GET /api/item?record=&generator=&gtrial=`` — one output as the page shows it;
- ``POST /api/labels`` — one save (JSON: ``record_id``, ``generator``, ``generator_trial``, ``verdicts``,
  ``note``, optionally ``seconds``), only with the header ``X-Agentjudge-Token`` equal to the page's token:
  403 without it or with another, 400 naming the item, metric or value that is not one, and nothing
  written in either case. The answer comes after the line is on disk (``append_label``).
"""

from __future__ import annotations

import html
import json
from http import HTTPStatus
from http.server import ThreadingHTTPServer
from pathlib import Path

from agentjudge.people.labelling import LabelError, Labelling
from agentjudge.viewer import serving
from agentjudge.viewer.index import QueryError
from agentjudge.viewer.serving import Handler, RequestError

STATIC_FILES = {"index.html": "text/html", "label.js": "text/javascript", "label.css": "text/css"}
TOKEN_SLOT = "{{token}}"


def make_handler(session: Labelling, token: str) -> type[Handler]:
    class LabelHandler(Handler):
        server_version = "agentjudge-label"
        static_package = "agentjudge.people"
        static_files = STATIC_FILES

        def get(self, path: str, query: dict[str, list[str]]) -> None:
            try:
                if path in ("/", "/index.html"):
                    self.send_static("index.html", {TOKEN_SLOT: html.escape(token, quote=True)})
                elif path.startswith("/static/") and path != "/static/index.html":
                    self.send_static(path.removeprefix("/static/"))
                elif path == "/api/queue":
                    self.send_json(session.queue_state())
                elif path == "/api/item":
                    self.send_json(session.item(query))
                else:
                    raise RequestError(HTTPStatus.NOT_FOUND, f"no such page: {path}")
            except QueryError as exc:
                raise RequestError(HTTPStatus.BAD_REQUEST, str(exc)) from None

        def post(self, path: str, body: bytes) -> None:
            if path != "/api/labels":
                raise RequestError(HTTPStatus.NOT_FOUND, f"no such endpoint: {path} (POST /api/labels)")
            self.require_token(token)  # before the body is even read as JSON
            try:
                value = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                raise RequestError(HTTPStatus.BAD_REQUEST, "body: not JSON") from None
            try:
                saved = session.save(value)
            except LabelError as exc:
                raise RequestError(HTTPStatus.BAD_REQUEST, str(exc)) from None
            except OSError as exc:  # disk full, folder not writable: the page must not say saved
                raise RequestError(
                    HTTPStatus.INTERNAL_SERVER_ERROR, f"{session.path}: not saved ({exc.strerror or exc})"
                ) from None
            self.send_json(saved)

    return LabelHandler


def start(
    rundir: Path,
    annotator: str,
    *,
    n: int = 120,
    seed: int = 0,
    difficulty: str | None = None,
    show_reference: bool = False,
    host: str = "127.0.0.1",
    port: int = 0,
) -> tuple[ThreadingHTTPServer, Labelling]:
    """A running label server (on its own thread); ``port`` 0 picks a free one. ``InputError`` for a
    folder, name or design that cannot be used, ``OSError`` for an address that cannot be listened on."""
    session = Labelling(rundir, annotator, n, seed, difficulty, show_reference)
    handler = make_handler(session, serving.new_token())
    return serving.start(handler, host, port, "agentjudge-label"), session
