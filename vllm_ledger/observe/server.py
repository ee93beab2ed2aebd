"""The exporter's HTTP server: /metrics as a route of the one bounded server (``vllm_ledger.http``).

prometheus_client's own server (``start_http_server``) listens with the standard library's
backlog of 5 and reads each request with no timeout, so a client that opens a connection and
sends half a request line holds a thread forever. This one inherits the bounds of
``vllm_ledger.http.server``: a listen backlog of ``LISTEN_BACKLOG``, ``REQUEST_DEADLINE_S`` in
all for each request (a total deadline: a drip of a byte every 2 s is dropped on time), then
``WRITE_TIMEOUT_S`` for the answer, one request per connection, and at most
``MAX_CONNECTIONS`` connections at once (one more is answered ``503`` at once and closed).

The answer is prometheus_client's text for the registry (content negotiation, gzip and
``name[]`` as in its own server), to ``GET`` on any path but ``/favicon.ico`` and ``/status``.
``/status`` is the bot's status document behind a bearer token where the exporter was given
one (``observe/status_route.py``), else ``404``.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from typing import Any

from vllm_ledger.http.server import (
    LISTEN_BACKLOG,
    MAX_CONNECTIONS,
    REQUEST_DEADLINE_S,
    WRITE_TIMEOUT_S,
    Handler,
    Request,
    Response,
    Route,
    Server,
    json_response,
)

STATUS_PATH = "/status"


def _no_status(_request: Request) -> Response:
    return json_response(404, {"error": "status_not_served"})


class MetricsServer(Server):
    """Serves a prometheus_client registry. ``start`` runs it on a daemon thread."""

    def __init__(
        self,
        registry: Any,
        host: str,
        port: int,
        *,
        request_deadline_s: float = REQUEST_DEADLINE_S,
        write_timeout_s: float = WRITE_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        on_error: Callable[[str], None] | None = None,
        status: Handler | None = None,
    ) -> None:
        self.registry = registry
        self.on_error = on_error
        self._errors_said: set[str] = set()
        super().__init__(
            {
                ("GET", "*"): Route(self._metrics),
                ("GET", "/favicon.ico"): Route(lambda _request: Response(200)),
                ("GET", STATUS_PATH): Route(status or _no_status),
            },
            host,
            port,
            name="vllm-ledger-exporter",
            request_deadline_s=request_deadline_s,
            write_timeout_s=write_timeout_s,
            max_connections=max_connections,
        )

    def _metrics(self, request: Request) -> Response:
        try:
            return self.render(
                request.headers.get("accept"),
                request.headers.get("accept-encoding"),
                request.query,
            )
        except Exception as exc:  # a bug in a collector: 500, said once
            self.say_once(f"error serving a scrape: {type(exc).__name__}: {exc}")
            body = f"cannot build the metrics: {type(exc).__name__}\n".encode()
            return Response(500, [("Content-Type", "text/plain")], body)

    def render(
        self, accept: str | None, accept_encoding: str | None, params: dict[str, list[str]]
    ) -> Response:
        """The registry's text, as prometheus_client's own server answers it."""
        from prometheus_client.exposition import choose_encoder, gzip_accepted

        encoder, content_type = choose_encoder(accept or "")
        registry = self.registry
        if "name[]" in params:
            registry = registry.restricted_registry(params["name[]"])
        body = encoder(registry)
        headers = [("Content-Type", content_type)]
        if gzip_accepted(accept_encoding or ""):
            body = gzip.compress(body)
            headers.append(("Content-Encoding", "gzip"))
        return Response(200, headers, body)

    def say_once(self, line: str) -> None:
        if self.on_error is not None and line not in self._errors_said:
            self._errors_said.add(line)
            self.on_error(line)


__all__ = [
    "LISTEN_BACKLOG",
    "MAX_CONNECTIONS",
    "REQUEST_DEADLINE_S",
    "STATUS_PATH",
    "WRITE_TIMEOUT_S",
    "MetricsServer",
]
