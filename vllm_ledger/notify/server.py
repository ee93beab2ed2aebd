"""The notifier's HTTP endpoint: commands in, Alertmanager in, resend requests.

==========================  ==================================================  ==========
path                        what                                                body bound
==========================  ==================================================  ==========
``POST /command``           a signed chat command (``signing``), answered once  64 KiB
``POST`` inbound routes     each platform's own requests, signed its way:       64 KiB
                            ``/slack/events``, ``/dingtalk/command``
                            (``platforms.inbound()``)
``POST /resend``            a signed resend request from ``notifier resend``,   64 KiB
                            one copy per request id (a retry gets that copy)
``POST /alertmanager``      Alertmanager's webhook JSON v4 (bearer token, the   1 MiB
                            scheme in any case)
``GET /healthz``            each loop's progress and the outbox; 503 naming     -
                            the loop that is failing, stuck or gone
==========================  ==================================================  ==========

The routes are served by the one bounded server (``vllm_ledger.http.server``): a body is read
only when its ``Content-Length`` is within the bound (413 otherwise), each request has
``REQUEST_DEADLINE_S`` in all for its request line, headers and body, and at most
``MAX_CONNECTIONS`` connections are served at once (503 at once past that). The signature is
checked before the body is parsed. The answer is a small JSON object; no request text is
echoed (but Slack's checked challenge), nothing secret is logged. Every ``503`` carries
``Retry-After``; a handler that raises is answered ``500`` with one log line, never a closed
connection.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any

from vllm_ledger.http import server as http

MAX_COMMAND_BYTES = 64 * 1024
MAX_ALERT_BYTES = 1024 * 1024
MAX_CONNECTIONS = 128
REQUEST_DEADLINE_S = 10.0

RETRY_AFTER_S = 5

# (path) -> handler(body, headers) -> (HTTP status, JSON answer)
Route = Callable[[bytes, dict[str, str]], tuple[int, dict[str, Any]]]
# () -> (HTTP status, JSON answer) of GET /healthz
Health = Callable[[], tuple[int, dict[str, Any]]]
log = logging.getLogger("vllm_ledger.notify")


def _answer(code: int, doc: dict[str, Any]) -> http.Response:
    retry = [("Retry-After", str(RETRY_AFTER_S))] if code == 503 else []
    return http.json_response(code, doc, retry)


def _post(path: str, handler: Route) -> http.Handler:
    """A POST route: the body and headers to ``handler``, its answer as JSON; a refusal by
    the handler (4xx, 5xx) is one line on stderr, without body or headers."""

    def serve(request: http.Request) -> http.Response:
        try:
            code, doc = handler(request.body, dict(request.headers))
        except Exception:
            log.exception("%s: the handler failed", path)
            return http.json_response(500, {"error": "internal"})
        if code >= 400:
            print(
                f"vllm-ledger notifier: refused {path}: {doc.get('error', code)}",
                file=sys.stderr,
                flush=True,
            )
        return _answer(code, doc)

    return serve


def _ok() -> tuple[int, dict[str, Any]]:
    return 200, {"status": "ok"}


def _healthz(health: Health) -> http.Handler:
    def serve(_request: http.Request) -> http.Response:
        try:
            return _answer(*health())
        except Exception:
            log.exception("/healthz: the report failed")
            return _answer(503, {"status": "unavailable", "error": "internal"})

    return serve


def route_table(routes: Mapping[str, tuple[int, Route]], health: Health = _ok) -> http.Routes:
    """The server's table: each ``path: (body bound, handler)`` as POST, and ``GET /healthz``
    answered by ``health``."""
    table = {
        ("POST", path): http.Route(_post(path, handler), limit)
        for path, (limit, handler) in routes.items()
    }
    table[("GET", "/healthz")] = http.Route(_healthz(health))
    return table


class Endpoint(http.Server):
    """The server for ``routes`` (``path: (body bound, handler)``); ``start`` serves it on a
    daemon thread, ``stop`` ends it."""

    def __init__(
        self,
        host: str,
        port: int,
        routes: Mapping[str, tuple[int, Route]],
        *,
        health: Health = _ok,
        request_deadline_s: float = REQUEST_DEADLINE_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        super().__init__(
            route_table(routes, health),
            host,
            port,
            name="vllm-ledger-notifier-http",
            request_deadline_s=request_deadline_s,
            max_connections=max_connections,
        )


__all__ = [
    "MAX_ALERT_BYTES",
    "MAX_COMMAND_BYTES",
    "MAX_CONNECTIONS",
    "REQUEST_DEADLINE_S",
    "RETRY_AFTER_S",
    "Endpoint",
    "Health",
    "Route",
    "route_table",
]
