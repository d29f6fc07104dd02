"""The viewer's HTTP server: the static page and a small JSON API over ``Gateway``.

Routes (all answers JSON; errors as ``{"error": message}`` with a 4xx/5xx status):
- ``GET /healthz``: ``ok``, always open (the local stack probes it).
- ``GET /`` and ``GET /static/<file>``: the page and its assets (cytoscape.js vendored).
- ``GET /api/config``: the page's defaults and whether a token is needed; open.
- ``GET /api/runs[?workflow=W]``: ListRuns.
- ``GET /api/find?run=R&relation=X&where=col=value...&limit=N``: FindNodes.
- ``GET /api/trace?node=ID...&direction=backward|forward&depth=N&nodes=N&zoomed=M...``: the
  first ``depth`` levels of a trace, at most ``nodes`` nodes, modules ``zoomed`` out.
- ``GET /api/locate?node=ID...``: LocateSourceRows (a source row's file and row).
- ``POST /api/deletion`` with ``{"node_ids": [...], "zoomed_out": [...]}``: PropagateDeletion.
With a token configured, ``/api/*`` (but ``/api/config``) needs ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import hmac
import json
import logging
import mimetypes
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from viewer.gateway import Gateway, GatewayError
from viewer.payloads import JSON
from viewer.settings import ViewerSettings

__all__ = ["ViewerServer", "create_server"]

log = logging.getLogger(__name__)

_MAX_BODY = 1 << 20


class _BadRequest(GatewayError):
    def __init__(self, message: str) -> None:
        super().__init__(400, message)


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, settings: ViewerSettings, gateway: Gateway) -> None:
        self.settings = settings
        self.gateway = gateway
        super().__init__((settings.host, settings.port), _Handler)


def create_server(settings: ViewerSettings, gateway: Gateway) -> tuple[ViewerServer, int]:
    """The server, bound (port 0 picks a free one) but not yet serving; and its port."""
    server = ViewerServer(settings, gateway)
    return server, int(server.server_address[1])


def _one(query: dict[str, list[str]], name: str, default: str | None = None) -> str:
    values = query.get(name)
    if values:
        return values[-1]
    if default is None:
        raise _BadRequest(f"query parameter {name!r} is required")
    return default


def _number(query: dict[str, list[str]], name: str, default: int, maximum: int) -> int:
    text = _one(query, name, str(default))
    if not text.isdigit():
        raise _BadRequest(f"{name} must be a whole number >= 0, not {text!r}")
    value = int(text)
    if value > maximum:
        raise _BadRequest(f"{name} {value} exceeds the maximum {maximum}")
    return value


def _equals(pairs: list[str]) -> dict[str, str]:
    equals = {}
    for pair in pairs:
        column, sep, value = pair.partition("=")
        if not sep or not column:
            raise _BadRequest(f"where={pair!r} is not column=value")
        equals[column] = value
    return equals


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        log.debug("%s " + format, self.address_string(), *args)

    # -- answers ------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _static(self, name: str) -> None:
        root = self.server.settings.static_dir.resolve()
        path = (root / name).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such file: {name}"})
            return
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind.endswith("javascript"):
            kind += "; charset=utf-8"
        self._send(HTTPStatus.OK, path.read_bytes(), kind)

    # -- routing ------------------------------------------------------------------------

    def do_HEAD(self) -> None:  # noqa: N802 - the stdlib's name
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        if url.path == "/healthz":
            self._send(HTTPStatus.OK, b"ok\n", "text/plain")
        elif url.path in ("/", "/index.html"):
            self._static("index.html")
        elif url.path.startswith("/static/"):
            self._static(url.path.removeprefix("/static/"))
        elif url.path == "/api/config":
            self._json(HTTPStatus.OK, self._config())
        elif url.path.startswith("/api/"):
            self._api(lambda: self._get(url.path, query))
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {url.path}"})

    def do_POST(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        self._api(lambda: self._post(url.path))

    def _api(self, answer: Any) -> None:
        try:
            self._authorize()
            self._json(HTTPStatus.OK, answer())
        except GatewayError as e:
            if e.status >= 500:
                log.warning("api %s: %s", self.path, e.message)
            self._json(e.status, {"error": e.message})

    def _authorize(self) -> None:
        token = self.server.settings.token
        if not token:
            return
        given = self.headers.get("Authorization", "").encode()
        if not hmac.compare_digest(given, f"Bearer {token}".encode()):
            raise GatewayError(HTTPStatus.UNAUTHORIZED, "missing or wrong bearer token")

    def _config(self) -> JSON:
        s = self.server.settings
        return {
            "default_depth": s.default_depth,
            "default_nodes": s.default_nodes,
            "max_nodes": s.max_nodes,
            "token_required": bool(s.token),
        }

    def _get(self, path: str, query: dict[str, list[str]]) -> Any:
        gateway, s = self.server.gateway, self.server.settings
        if path == "/api/runs":
            return {"runs": gateway.runs(_one(query, "workflow", ""))}
        if path == "/api/find":
            return gateway.find(
                _one(query, "run"),
                _one(query, "relation"),
                _equals(query.get("where", [])),
                _number(query, "limit", 50, 1000),
            )
        if path == "/api/trace":
            nodes = query.get("node", [])
            if not nodes:
                raise _BadRequest("query parameter 'node' is required")
            direction = _one(query, "direction", "backward")
            if direction not in ("backward", "forward"):
                raise _BadRequest(f"direction must be backward or forward, not {direction!r}")
            return gateway.trace(
                nodes,
                direction == "backward",
                _number(query, "depth", s.default_depth, 1000),
                _number(query, "nodes", s.default_nodes, s.max_nodes) or s.default_nodes,
                query.get("zoomed", []),
            )
        if path == "/api/locate":
            nodes = query.get("node", [])
            if not nodes:
                raise _BadRequest("query parameter 'node' is required")
            return gateway.locate(nodes)
        raise GatewayError(HTTPStatus.NOT_FOUND, f"no such API: {path}")

    def _post(self, path: str) -> Any:
        if path != "/api/deletion":
            raise GatewayError(HTTPStatus.NOT_FOUND, f"no such API: {path}")
        body = self._body()
        ids, zoomed = body.get("node_ids"), body.get("zoomed_out", [])
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise _BadRequest("node_ids must be a non-empty list of node ids")
        if not isinstance(zoomed, list) or not all(isinstance(m, str) for m in zoomed):
            raise _BadRequest("zoomed_out must be a list of module names")
        return self.server.gateway.deletion(ids, zoomed)

    def _body(self) -> JSON:
        length = self.headers.get("Content-Length", "0")
        if not length.isdigit() or int(length) > _MAX_BODY:
            raise _BadRequest(f"a JSON body of at most {_MAX_BODY} bytes is required")
        try:
            body = json.loads(self.rfile.read(int(length)) or b"null")
        except ValueError as e:
            raise _BadRequest(f"the body is not JSON: {e}") from e
        if not isinstance(body, dict):
            raise _BadRequest("the body must be a JSON object")
        return body
