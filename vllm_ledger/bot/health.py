"""A simple HTTP ``/health`` probe per node port, for bots without a health check of their own.

vLLM's OpenAI server answers ``GET /health`` with 200 when its engine is alive. The probe
keeps only the status code: no response byte reaches a message. Standard library only.
"""

from __future__ import annotations

import http.client
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from vllm_ledger.bot.validate import Target

DEFAULT_TIMEOUT_S = 3.0
HEALTH_STATES: tuple[str, ...] = ("healthy", "unhealthy", "down", "unknown")


@dataclass(frozen=True)
class Health:
    """``healthy`` (200), ``unhealthy`` (another HTTP status), ``down`` (no HTTP answer), or
    ``unknown`` (not probed: no host configured)."""

    port: int
    state: str
    http_status: int | None = None


def probe(
    host: str, port: int, *, timeout_s: float = DEFAULT_TIMEOUT_S, path: str = "/health"
) -> Health:
    """One GET; redirects are not followed; the body is read at most 1 KiB and dropped."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        conn.request("GET", path, headers={"Connection": "close"})
        resp = conn.getresponse()
        resp.read(1024)
        code = resp.status
    except (OSError, http.client.HTTPException, ValueError):
        return Health(port, "down")
    finally:
        conn.close()
    if not 100 <= code <= 599:
        return Health(port, "unhealthy")
    return Health(port, "healthy" if code == 200 else "unhealthy", code)


def probe_all(
    targets: Sequence[Target], *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[int, Health]:
    """Probe every target with a ``host`` concurrently; the others are ``unknown``."""
    out = {t.port: Health(t.port, "unknown") for t in targets if t.host is None}
    probed = [t for t in targets if t.host is not None]
    if probed:
        with ThreadPoolExecutor(max_workers=len(probed)) as pool:
            for h in pool.map(lambda t: probe(str(t.host), t.port, timeout_s=timeout_s), probed):
                out[h.port] = h
    return out


__all__ = ["HEALTH_STATES", "Health", "probe", "probe_all"]
