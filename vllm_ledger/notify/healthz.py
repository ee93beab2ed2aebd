"""The ``notifier status`` side of ``GET /healthz`` (``notify/server.py`` answers it): each
loop of the running notifier, asked at the address it listens on from this machine."""

from __future__ import annotations

import json

from vllm_ledger.errors import RemoteError
from vllm_ledger.http import client
from vllm_ledger.http.urls import url_host

DEADLINE_S = 3.0
MAX_ANSWER_BYTES = 64 * 1024


def live_loops(host: str, port: int) -> dict[str, dict[str, object]] | None:
    """The running notifier's loops from its ``/healthz``; None when it does not answer (or
    not with a ``loops`` object)."""
    try:
        answer = client.get(
            f"http://{url_host(host)}:{port}/healthz",
            deadline_s=DEADLINE_S,
            max_bytes=MAX_ANSWER_BYTES,
        )
        loops = json.loads(answer.body)["loops"]
    except (RemoteError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(loops, dict):
        return None
    return {str(k): dict(v) for k, v in loops.items() if isinstance(v, dict)}


__all__ = ["live_loops"]
