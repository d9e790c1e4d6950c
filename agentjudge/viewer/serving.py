"""The one small HTTP server of the local pages (``agentjudge view`` and ``agentjudge label``).

The standard library's threading server, with what both pages need and nothing more:

- **Host check.** A page on the internet can reach a server on 127.0.0.1 by DNS rebinding: its own name
  made to resolve to 127.0.0.1, the browser then treats the server as the page's origin and lets the page
  read it. A request is answered only when its ``Host`` header names this server: ``localhost``,
  ``127.0.0.1`` or ``[::1]`` with the serving port. Bound beyond loopback (``--host``), the server also
  answers the address it was given, this machine's host name and any IP address with the port (an IP
  literal cannot be rebound); it warns (``ExposedServerWarning``) that the run is then open to the network.
  Anything else is a 403.
- **Token.** A server that writes takes a request only with the header ``X-Agentjudge-Token`` equal to the
  token its page carries (``<meta name="agentjudge-token" content="…">``, made per start): a page of another
  origin in the same browser can send a POST but cannot read the token, nor set that header without a
  CORS preflight, which is never granted.
- **Responses.** JSON bodies (errors as ``{"error": "…"}``; a request that fails unexpectedly, e.g. on a
  damaged file, is a 500 naming the cause, with one line on stderr, never a dropped connection), the
  package's static files from a fixed list, and headers that keep a page from being framed or sniffed
  (``frame-ancestors 'none'``: a page that framed the labelling page could otherwise steer a person's keys
  into it).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import secrets
import socket
import sys
import threading
import warnings
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agentjudge.errors import InputError

TOKEN_HEADER = "X-Agentjudge-Token"
TOKEN_META = "agentjudge-token"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
MAX_BODY = 1 << 16  # a label is a few hundred bytes


class ExposedServerWarning(UserWarning):
    """The server listens beyond this machine: anyone on the network can read the run (and, with the token
    of a page they were shown, write labels)."""


class RequestError(Exception):
    """A request the server refuses: its HTTP status and a one-line message naming what to fix."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 without brackets) is this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


class HostCheck:
    """Which ``Host`` headers a server bound to ``bind`` on ``port`` answers (module docstring)."""

    def __init__(self, bind: str, port: int) -> None:
        self.port = port
        self.loopback = is_loopback(bind) if bind else False
        names = {*LOOPBACK_NAMES}
        if not self.loopback:
            names |= {f"[{bind}]" if ":" in bind else bind} if bind else set()
            names |= {socket.gethostname(), socket.getfqdn()}
        self.names = frozenset(n.lower() for n in names if n)

    def allows(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header is for this server (the port must be given)."""
        name, _, port = (header or "").strip().lower().rpartition(":")
        if not name or port != str(self.port):
            return False
        if ":" in name and not (name.startswith("[") and name.endswith("]")):  # IPv6 needs its brackets
            return False
        return name in self.names or (not self.loopback and _is_ip(name))

    def describe(self) -> str:
        shown = ", ".join(f"{n}:{self.port}" for n in LOOPBACK_NAMES)
        return shown if self.loopback else shown + ", this machine's names and addresses"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def exposure(host: str) -> str | None:
    """The warning for a server bound to ``host``, None on loopback."""
    if is_loopback(host):
        return None
    where = "every interface" if host in ("", "0.0.0.0", "::") else host
    return (
        f"listening on {where}, beyond this machine: anyone who can reach it can read the run "
        "(use the default --host 127.0.0.1 to keep it on this machine)"
    )


Route = Callable[["Handler", dict[str, list[str]]], None]


class Handler(BaseHTTPRequestHandler):
    """Base of the pages' request handlers: the Host check, then ``get(path, query)`` or
    ``post(path, body)``, which subclasses define; ``RequestError`` becomes its status with a JSON body."""

    server_version = "agentjudge"
    hosts: HostCheck  # set by ``start``
    static_package = "agentjudge.viewer"
    static_files: dict[str, str] = {}  # name -> content type, the only files served from static/

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the URL only
        return

    # ------------------------------------------------------------------ dispatch

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self._dispatch(lambda url: self.get(url.path, parse_qs(url.query, keep_blank_values=False)))

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch(lambda url: self.post(url.path, self._body()))

    def _dispatch(self, answer: Callable[[Any], None]) -> None:
        try:
            host = self.headers.get("Host")
            if not self.hosts.allows(host):
                raise RequestError(
                    HTTPStatus.FORBIDDEN,
                    f"Host {host!r} is not this server (it answers {self.hosts.describe()})",
                )
            answer(urlsplit(self.path))
        except RequestError as exc:
            self.send_error_json(exc.status, str(exc))
        except (BrokenPipeError, ConnectionResetError):
            return
        except Exception as exc:  # noqa: BLE001 - a damaged file, a bug: an answer, never a dropped line
            message = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
            first = message.splitlines()[0][:500] if message else type(exc).__name__
            sys.stderr.write(f"{self.server_version}: {self.path[:200]}: {first}\n")
            self.send_error_json(HTTPStatus.INTERNAL_SERVER_ERROR, message)

    def get(self, path: str, query: dict[str, list[str]]) -> None:
        raise RequestError(HTTPStatus.NOT_FOUND, f"no such page: {path}")

    def post(self, path: str, body: bytes) -> None:
        raise RequestError(HTTPStatus.METHOD_NOT_ALLOWED, f"{path}: this server takes no POST")

    def _body(self) -> bytes:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise RequestError(HTTPStatus.BAD_REQUEST, "Content-Length: not a number") from None
        if length > MAX_BODY:
            raise RequestError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body: over {MAX_BODY} bytes")
        return self.rfile.read(length) if length > 0 else b""

    def require_token(self, token: str) -> None:
        """403 unless the request carries the page's token (compared in constant time)."""
        given = self.headers.get(TOKEN_HEADER)
        if not given:
            raise RequestError(HTTPStatus.FORBIDDEN, f"{TOKEN_HEADER}: missing (send the page's token)")
        if not hmac.compare_digest(given.encode("utf-8", "replace"), token.encode("utf-8")):
            raise RequestError(HTTPStatus.FORBIDDEN, f"{TOKEN_HEADER}: not this page's token")

    # ------------------------------------------------------------------ answers

    def send_static(self, name: str, replace: dict[str, str] | None = None) -> None:
        """A file of the package's static/ folder (only those in ``static_files``); ``replace``: text to
        substitute in it (the page's token)."""
        if name not in self.static_files:
            raise RequestError(HTTPStatus.NOT_FOUND, f"no such file: {name}")
        body = resources.files(self.static_package).joinpath("static", name).read_bytes()
        for old, new in (replace or {}).items():
            body = body.replace(old.encode("utf-8"), new.encode("utf-8"))
        self.send_body(HTTPStatus.OK, f"{self.static_files[name]}; charset=utf-8", body)

    def send_json(self, value: Any, status: HTTPStatus = HTTPStatus.OK) -> None:
        body = json.dumps(value, allow_nan=False, default=str).encode("utf-8")
        self.send_body(status, "application/json", body)

    def send_error_json(self, status: HTTPStatus, message: str) -> None:
        self.send_json({"error": message}, status)

    def send_body(self, status: HTTPStatus, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Content-Security-Policy", "frame-ancestors 'none'")
        self.end_headers()
        self.wfile.write(body)


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def start(handler: type[Handler], host: str, port: int, name: str) -> ThreadingHTTPServer:
    """Serve ``handler`` on its own thread; ``port`` 0 picks a free one. Binding beyond loopback warns
    (``ExposedServerWarning``). ``OSError`` when the address cannot be listened on."""
    server_class = _IPv6Server if ":" in host else ThreadingHTTPServer
    server = server_class((host, port), handler)
    server.daemon_threads = True
    handler.hosts = HostCheck(host, int(server.server_address[1]))
    message = exposure(host)
    if message is not None:
        warnings.warn(message, ExposedServerWarning, stacklevel=2)
    threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
    return server
