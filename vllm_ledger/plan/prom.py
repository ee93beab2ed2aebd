"""A small client for Prometheus' HTTP API (instant queries, values or labelled series),
shared by cost and advise.

Standard library only. Every failure is a ``RemoteError`` naming the URL and what to check.
"""

from __future__ import annotations

import contextlib
import http.client
import math
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable

from vllm_ledger.errors import ConfigError, RemoteError
from vllm_ledger.strictjson import loads

Fetch = Callable[[str], bytes]
MAX_ANSWER_BYTES = 16 * 1024 * 1024
DEADLINE_S = 30.0


def http_get(
    url: str,
    timeout_s: float = 10.0,
    *,
    max_bytes: int = MAX_ANSWER_BYTES,
    deadline_s: float = DEADLINE_S,
    monotonic: Callable[[], float] = time.monotonic,
) -> bytes:
    """The body at ``url``: at most ``max_bytes``, all of it (connection, headers, body) within
    ``deadline_s``: a server that drips its headers or its body is cut at the deadline, whatever
    the pace (a watchdog shuts the socket). ``timeout_s`` bounds each socket operation."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RemoteError(f"cannot read {url}: not an http(s) URL", url, hint="check the URL")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    timeout = min(timeout_s, deadline_s)
    began = monotonic()
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    try:
        conn = cls(parts.hostname, parts.port, timeout=timeout)
    except ValueError as exc:  # a port that is not a number
        raise RemoteError(f"cannot read {url}: {exc}", url, hint="check the URL") from exc
    cut = threading.Event()
    watchdog: threading.Timer | None = None
    late = RemoteError(
        f"{url} did not answer within {deadline_s:g} s",
        url,
        hint="check that Prometheus is up and not overloaded",
    )
    try:
        conn.connect()
        watchdog = threading.Timer(max(0.0, deadline_s - (monotonic() - began)), _cut, (conn, cut))
        watchdog.daemon = True
        watchdog.start()
        conn.request("GET", target, headers={"Accept": "application/json", "Connection": "close"})
        resp = conn.getresponse()
        if resp.status != 200:
            body = resp.read(2048).decode("utf-8", "replace")
            raise RemoteError(
                f"cannot read {url}: HTTP {resp.status} {resp.reason}: {body[:200]!r}",
                url,
                hint="check the URL and that it is up",
            )
        chunks: list[bytes] = []
        size = 0
        while True:
            if monotonic() - began > deadline_s:
                raise late
            chunk = resp.read1(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise RemoteError(
                    f"{url} answered more than {max_bytes // (1 << 20)} MiB",
                    url,
                    hint="narrow the query",
                )
    except RemoteError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if cut.is_set():
            raise late from exc
        msg = f"cannot read {url}: {exc}; check the URL and that it is up"
        raise RemoteError(msg, url) from exc
    finally:
        if watchdog is not None:
            watchdog.cancel()
        conn.close()
    if cut.is_set():  # the stream ended because the watchdog shut it: a fragment
        raise late
    return b"".join(chunks)


def _cut(conn: http.client.HTTPConnection, cut: threading.Event) -> None:
    """Wake a read blocked on the connection's socket (it then sees the end), once."""
    cut.set()
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):  # closed meanwhile: nothing to wake
            sock.shutdown(socket.SHUT_RDWR)


def instant_query(
    base_url: str, expr: str, at_ts: float | None = None, fetch: Fetch = http_get
) -> list[float]:
    """The values of an instant vector (or scalar) query; NaN values are dropped."""
    return [v for _labels, v in vector_query(base_url, expr, at_ts, fetch)]


def vector_query(
    base_url: str, expr: str, at_ts: float | None = None, fetch: Fetch = http_get
) -> list[tuple[dict[str, str], float]]:
    """Each series of an instant vector (or scalar) query with its labels; NaN values dropped."""
    params = {"query": expr}
    if at_ts is not None:
        params["time"] = f"{at_ts:.3f}"
    url = base_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode(params)
    raw = fetch(url)
    try:
        doc = loads(raw, max_bytes=MAX_ANSWER_BYTES, what=f"{base_url}'s answer")
    except ConfigError as exc:
        raise RemoteError(
            f"{base_url} did not answer a Prometheus query with JSON it can trust: {exc.what}", url
        ) from exc
    if not isinstance(doc, dict):
        raise RemoteError(f"{base_url} did not answer a Prometheus query with an object", url)
    if doc.get("status") != "success":
        raise RemoteError(f"Prometheus at {base_url} refused {expr!r}: {doc.get('error')}", url)
    data = doc.get("data")
    data = data if isinstance(data, dict) else {}
    result = data.get("result", [])
    if data.get("resultType") == "scalar":
        result = [{"value": result}]
    out: list[tuple[dict[str, str], float]] = []
    for item in result if isinstance(result, list) else []:
        try:
            v = float(item["value"][1])
        except (KeyError, IndexError, TypeError, ValueError, OverflowError):
            continue
        metric = item.get("metric") if isinstance(item, dict) else None
        labels = {str(k): str(x) for k, x in metric.items()} if isinstance(metric, dict) else {}
        if not math.isnan(v):
            out.append((labels, v))
    return out


def first_value(
    base_url: str, exprs: list[str], at_ts: float | None = None, fetch: Fetch = http_get
) -> tuple[float, str] | None:
    """The first of ``exprs`` that returns a value, with the expression that did."""
    for expr in exprs:
        values = instant_query(base_url, expr, at_ts, fetch)
        if values:
            return values[0], expr
    return None


def duration(seconds: float) -> str:
    """A PromQL range duration in whole seconds (at least 1 s)."""
    return f"{max(1, round(seconds))}s"


__all__ = ["duration", "first_value", "http_get", "instant_query", "vector_query"]
