"""A small client for Prometheus' HTTP API (instant queries), shared by cost and advise.

Standard library only. Every failure is a ``RemoteError`` naming the URL and what to check.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

from vllm_ledger.errors import RemoteError

Fetch = Callable[[str], bytes]


def http_get(url: str, timeout_s: float = 10.0) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return bytes(r.read())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        msg = f"cannot read {url}: {exc}; check the URL and that it is up"
        raise RemoteError(msg, url) from exc


def instant_query(
    base_url: str, expr: str, at_ts: float | None = None, fetch: Fetch = http_get
) -> list[float]:
    """The values of an instant vector (or scalar) query; NaN values are dropped."""
    params = {"query": expr}
    if at_ts is not None:
        params["time"] = f"{at_ts:.3f}"
    url = base_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode(params)
    raw = fetch(url)
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise RemoteError(f"{base_url} did not answer a Prometheus query with JSON", url) from exc
    if doc.get("status") != "success":
        raise RemoteError(f"Prometheus at {base_url} refused {expr!r}: {doc.get('error')}", url)
    data = doc.get("data", {})
    result = data.get("result", [])
    if data.get("resultType") == "scalar":
        result = [{"value": result}]
    out: list[float] = []
    for item in result:
        try:
            v = float(item["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if not math.isnan(v):
            out.append(v)
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


__all__ = ["duration", "first_value", "http_get", "instant_query"]
