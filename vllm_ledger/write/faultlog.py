"""What the recorder says in vLLM's log when something goes wrong, without flooding it.

A failing write and a fault inside the recorder itself are each logged at most once per
``FAILURE_LOG_INTERVAL_S``, with the count of times since the last such message; any other
warning once per text (at most 100 texts).

Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

import logging
import math

logger = logging.getLogger("vllm.ledger.recorder")

FAILURE_LOG_INTERVAL_S = 60.0  # a failing writer (or a fault inside it) logs at most this often


class FaultLog:
    """The recorder's throttled messages; ``now`` is the caller's monotonic clock."""

    def __init__(self) -> None:
        self._internal_unlogged = 0
        self._next_internal_log = -math.inf
        self._failures_unlogged = 0
        self._next_failure_log = -math.inf
        self._logged: set[str] = set()

    def internal_fault(self, error: str, now: float) -> None:
        """A fault inside the recorder: logged at most once a minute with a count."""
        self._internal_unlogged += 1
        if now < self._next_internal_log:
            return
        self._next_internal_log = now + FAILURE_LOG_INTERVAL_S
        logger.error(
            "vllm-ledger: recorder fault (%d time(s) since the last such message): %s; the "
            "recorder goes on, the event or batch concerned is counted as rejected or lost",
            self._internal_unlogged,
            error,
        )
        self._internal_unlogged = 0

    def write_failed(self, error: str, now: float) -> None:
        """An error in vLLM's log at most once a minute while commits keep failing."""
        self._failures_unlogged += 1
        if now < self._next_failure_log:
            return
        self._next_failure_log = now + FAILURE_LOG_INTERVAL_S
        logger.error(
            "vllm-ledger: write failed (%d time(s) since the last such message): %s; "
            "the events are kept for a retry, then counted as lost (write_failed)",
            self._failures_unlogged,
            error,
        )
        self._failures_unlogged = 0

    def once(self, key: str, msg: str, *args: object) -> None:
        """A warning logged the first time ``key`` is seen."""
        if key not in self._logged and len(self._logged) < 100:
            self._logged.add(key)
            logger.warning(msg, *args)
