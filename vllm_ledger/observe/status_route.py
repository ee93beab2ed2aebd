"""The exporter's ``GET /status``: the bot's status document, behind a bearer token.

A notifier that cannot reach a host over SSH (a pod, a box with no sshd) reads the same
document here (``bot/transport.py``, transport ``http``). The exporter is started with
``--status-token-file FILE``; without it ``/status`` answers ``404``. With it:

- ``Authorization: Bearer TOKEN`` is required, the token compared in constant time
  (``hmac.compare_digest``); a missing or wrong one is ``401`` with ``WWW-Authenticate``,
  and nothing runs;
- the answer is the stdout of the very command the forced command runs
  (``python -m vllm_ledger status --root ROOT ... [--budgets FILE] [--ask WORD]``, argv only,
  ``bot.capped.run_capped``): at most ``MAX_OUTPUT_BYTES``, within ``deadline_s`` (default
  ``STATUS_DEADLINE_S``, below the notifier's 20 s), its process group killed past either
  (``504`` past the deadline, ``502`` past the cap or on a failed command); exit 0 and 3
  ("nothing matched", a whole document all the same) are ``200``;
- ``?ask=WORD`` is a word of ``formats.status_asked.ASKS`` (``400`` otherwise); nothing else of
  the request is read, and the route takes no body (read-only: only ``GET``);
- one command at a time, the wait for it counted in the deadline: a request that cannot
  start one with a second of it left is ``503`` with ``Retry-After``; an answer made less than
  ``REUSE_S`` ago is served again (every port of one host, polled together, costs one run).
"""

from __future__ import annotations

import errno
import hmac
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from vllm_ledger.bot.capped import MAX_OUTPUT_BYTES, CappedRun, run_capped
from vllm_ledger.bot.transport import ASK_PARAM, read_token
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats.status_asked import ASKS
from vllm_ledger.http.server import Request, Response, json_response

STATUS_DEADLINE_S = 15.0
REUSE_S = 2.0
RETRY_AFTER_S = 5
STATUS_FLAG = "--status-token-file"


def load_token(path: Path) -> str:
    """The token of ``--status-token-file``; one line that says what to fix otherwise."""
    try:
        return read_token(str(path))
    except OSError as exc:
        why = "larger than 4096 bytes" if exc.errno == errno.EFBIG else exc.strerror
        raise BadArgument(
            f"{STATUS_FLAG} {path}: {why}",
            hint="give a file holding the bearer token on one line",
            argument=STATUS_FLAG,
            value=path,
        ) from None


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, or None."""
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


class StatusRoute:
    """``GET /status``: ``argv`` (the status command without ``--ask``) behind ``token``."""

    def __init__(
        self,
        argv: Sequence[str],
        token: str,
        *,
        deadline_s: float = STATUS_DEADLINE_S,
        max_bytes: int = MAX_OUTPUT_BYTES,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.argv = list(argv)
        self._token = token.encode("ascii")
        self.deadline_s = deadline_s
        self.max_bytes = max_bytes
        self.monotonic = monotonic
        self._lock = threading.Lock()
        self._kept: dict[str | None, tuple[float, CappedRun]] = {}

    def __repr__(self) -> str:  # the token never reaches a log line
        return f"StatusRoute({self.argv[:3]!r}..., deadline_s={self.deadline_s})"

    def allowed(self, request: Request) -> bool:
        given = bearer(request.headers.get("authorization"))
        return given is not None and hmac.compare_digest(given.encode("utf-8"), self._token)

    def __call__(self, request: Request) -> Response:
        if not self.allowed(request):
            return json_response(
                401, {"error": "unauthorized"}, [("WWW-Authenticate", 'Bearer realm="status"')]
            )
        asks = request.query.get(ASK_PARAM, [])
        if len(asks) > 1 or (asks and asks[0] not in ASKS):
            return json_response(400, {"error": "bad_ask", "known": sorted(ASKS)})
        ask = asks[0] if asks else None
        run = self._run(ask)
        if run is None:
            return json_response(503, {"error": "busy"}, [("Retry-After", str(RETRY_AFTER_S))])
        if run.ended == "timeout":
            return json_response(504, {"error": "status_timeout"})
        if run.ended == "overflow":
            return json_response(502, {"error": "status_too_large"})
        if run.exit_code not in (0, 3):
            return json_response(502, {"error": "status_failed", "exit": run.exit_code})
        headers = [("Content-Type", "application/json"), ("Cache-Control", "no-store")]
        return Response(200, headers, run.stdout)

    def _run(self, ask: str | None) -> CappedRun | None:
        """One run at a time; a fresh enough answer is reused. None: none could start."""
        started = self.monotonic()
        if not self._lock.acquire(timeout=self.deadline_s):
            return None
        try:
            kept = self._kept.get(ask)
            if kept is not None and kept[0] >= started - REUSE_S:
                return kept[1]
            left_s = self.deadline_s - (self.monotonic() - started)
            if left_s < 1.0:
                return None
            argv = self.argv + (["--ask", ask] if ask is not None else [])
            run = run_capped(argv, deadline_s=left_s, max_bytes=self.max_bytes)
            self._kept = {ask: (self.monotonic(), run)}
            return run
        finally:
            self._lock.release()


__all__ = [
    "REUSE_S",
    "STATUS_DEADLINE_S",
    "STATUS_FLAG",
    "StatusRoute",
    "bearer",
    "load_token",
]
