"""What bounds one client request (``http/client.py``): its total deadline, its byte cap, and
the errors that name them, each with the URL the caller gave and what to check.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from vllm_ledger.errors import (
    AnswerTooLarge,
    BadResponse,
    BadResponseProblem,
    RemoteError,
    RemoteTimeout,
)


@dataclass(frozen=True)
class Limits:
    """What bounds one request: its deadline, its byte cap, and the words of its errors."""

    url: str  # the URL the caller gave: every error names it
    deadline_s: float
    ends_monotonic: float
    max_bytes: int
    truncate: bool
    hint: str

    def left_s(self) -> float:
        """Seconds left, at least a millisecond; ``RemoteTimeout`` when none are."""
        left = self.ends_monotonic - time.monotonic()
        if left <= 0:
            raise self.late()
        return max(left, 0.001)

    def late(self) -> RemoteTimeout:
        return RemoteTimeout(self.url, self.deadline_s, hint=self.hint)

    def too_large(self) -> AnswerTooLarge:
        return AnswerTooLarge(self.url, self.max_bytes, hint="check that it is the URL meant")

    def bad(self, problem: BadResponseProblem, why: str) -> BadResponse:
        return BadResponse(self.url, problem, why, hint=self.hint)

    def unreachable(self, exc: OSError) -> RemoteError:
        """The remote could not be reached (refused, reset, no such host, a TLS failure)."""
        why = exc.strerror or getattr(exc, "reason", None) or type(exc).__name__
        return RemoteError(f"cannot read {self.url}: {why}", self.url, hint=self.hint)


__all__ = ["Limits"]
