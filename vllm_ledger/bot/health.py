"""A simple HTTP ``/health`` probe per node port, for bots without a health check of their own.

vLLM's OpenAI server answers ``GET /health`` with 200 when its engine is alive. The probe
keeps only the status code: no response byte reaches a message. Standard library only.

``timeout_s`` is a total deadline per probe, connection, headers and body together (the one
HTTP client, ``vllm_ledger.http.client``): a server that drips its answer a byte at a time is
cut when it passes, and counts as ``down``. At most ``MAX_PARALLEL_PROBES`` probes run at once.

``probe_local`` is the deployment host's side: the status command probes 127.0.0.1 at each
port of its document (the instance's own ``/health``), so a bot that has only an SSH target
gets vLLM's health in the status document (``from_status`` reads it back).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from vllm_ledger.bot.validate import Target
from vllm_ledger.errors import RemoteError
from vllm_ledger.http import client
from vllm_ledger.http.urls import url_host

DEFAULT_TIMEOUT_S = 3.0
MAX_PARALLEL_PROBES = 8
MAX_BODY_BYTES = 1024
LOCAL_TIMEOUT_S = 2.0  # the status command's own probe: keeps the SSH answer quick
MAX_LOCAL_PORTS = 16  # as many as the status document has rows
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
    """One GET, all of it within ``timeout_s``; redirects are not followed (a 3xx is
    ``unhealthy``); the body is read at most 1 KiB and dropped."""
    try:
        answer = client.get(
            f"http://{url_host(host)}:{port}{path}",
            deadline_s=timeout_s,
            max_bytes=MAX_BODY_BYTES,
            truncate=True,
        )
    except (RemoteError, ValueError):  # no answer in time, or none that is HTTP
        return Health(port, "down")
    code = answer.status
    if code > 599:
        return Health(port, "unhealthy")
    return Health(port, "healthy" if code == 200 else "unhealthy", code)


def probe_all(
    targets: Sequence[Target], *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[int, Health]:
    """Probe every target with a ``host``, ``MAX_PARALLEL_PROBES`` at a time; the others are
    ``unknown``."""
    out = {t.port: Health(t.port, "unknown") for t in targets if t.host is None}
    probed = [t for t in targets if t.host is not None]
    if probed:
        with ThreadPoolExecutor(max_workers=min(len(probed), MAX_PARALLEL_PROBES)) as pool:
            for h in pool.map(lambda t: probe(str(t.host), t.port, timeout_s=timeout_s), probed):
                out[h.port] = h
    return out


def probe_local(
    ports: Sequence[int], *, timeout_s: float = LOCAL_TIMEOUT_S
) -> dict[int, tuple[str, int | None]]:
    """What the status command adds per port: 127.0.0.1:PORT/health, at most
    ``MAX_PARALLEL_PROBES`` at once, each within ``timeout_s`` (a closed port answers at
    once), as (state, HTTP status)."""
    wanted = sorted(set(ports))[:MAX_LOCAL_PORTS]
    if not wanted:
        return {}
    with ThreadPoolExecutor(max_workers=min(len(wanted), MAX_PARALLEL_PROBES)) as pool:
        found = list(pool.map(lambda p: probe("127.0.0.1", p, timeout_s=timeout_s), wanted))
    return {h.port: (h.state, h.http_status) for h in found}


def from_status(port: int, row_health: tuple[str, int | None] | None) -> Health:
    """A port's health as its deployment host saw it (``unknown`` when it sent none)."""
    if row_health is None:
        return Health(port, "unknown")
    return Health(port, row_health[0], row_health[1])


__all__ = [
    "HEALTH_STATES",
    "LOCAL_TIMEOUT_S",
    "MAX_PARALLEL_PROBES",
    "Health",
    "from_status",
    "probe",
    "probe_all",
    "probe_local",
]
