"""The notifier's HTTP endpoint: commands in, Alertmanager in, resend requests. Stdlib.

==========================  ==================================================  ==========
path                        what                                                body bound
==========================  ==================================================  ==========
``POST /command``           a signed chat command (``signing``), answered once  64 KiB
``POST /slack/events``      Slack's Events API, Slack-signed (``inbound``)      64 KiB
``POST /dingtalk/command``  DingTalk's outgoing robot, signed (``inbound``)     64 KiB
``POST /resend``            a signed resend request from ``notifier resend``    64 KiB
``POST /alertmanager``      Alertmanager's webhook JSON v4 (optional bearer)    1 MiB
``GET /healthz``            ``ok`` while the process serves                     -
==========================  ==================================================  ==========

A body is read only when its ``Content-Length`` is within the bound (413 otherwise), the
signature is checked before the body is parsed, and at most ``MAX_CONNECTIONS`` requests are
served at once (503 past that); each socket has a ``REQUEST_TIMEOUT_S`` deadline per read.
The answer is a small JSON object; no request text is echoed (but Slack's checked challenge),
nothing secret is logged.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_COMMAND_BYTES = 64 * 1024
MAX_ALERT_BYTES = 1024 * 1024
MAX_CONNECTIONS = 32
REQUEST_TIMEOUT_S = 10.0

# (path) -> handler(body, headers) -> (HTTP status, JSON answer)
Route = Callable[[bytes, dict[str, str]], tuple[int, dict[str, Any]]]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], routes: dict[str, tuple[int, Route]]) -> None:
        self.routes = routes
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = REQUEST_TIMEOUT_S
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per refusal is written by _refuse, without bodies or headers

    def _answer(self, code: int, doc: dict[str, Any]) -> None:
        data = (json.dumps(doc, ensure_ascii=True) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._answer(200, {"status": "ok"})
        else:
            self._answer(404, {"error": "not_found"})

    def do_POST(self) -> None:
        if not self.server.slots.acquire(blocking=False):
            self._answer(503, {"error": "busy"})
            return
        try:
            self._post()
        finally:
            self.server.slots.release()

    def _post(self) -> None:
        route = self.server.routes.get(self.path.split("?", 1)[0])
        if route is None:
            self._answer(404, {"error": "not_found"})
            return
        limit, handler = route
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            self._answer(411, {"error": "length_required"})
            return
        if int(length) > limit:
            self._answer(413, {"error": "too_large", "limit_bytes": limit})
            return
        body = self.rfile.read(int(length))
        if len(body) != int(length):
            self._answer(400, {"error": "short_body"})
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        code, doc = handler(body, headers)
        if code >= 400:
            print(
                f"vllm-ledger notifier: refused {self.path.split('?', 1)[0]}: "
                f"{doc.get('error', code)}",
                file=sys.stderr,
                flush=True,
            )
        self._answer(code, doc)


class Endpoint:
    """The server in a daemon thread."""

    def __init__(self, host: str, port: int, routes: dict[str, tuple[int, Route]]) -> None:
        self.httpd = _Server((host, port), routes)
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, name="vllm-ledger-notifier-http", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)


__all__ = ["MAX_ALERT_BYTES", "MAX_COMMAND_BYTES", "MAX_CONNECTIONS", "Endpoint", "Route"]
