"""The signature on a command request: HMAC-SHA256 over the timestamp and the body. Pure.

The chat side (the platform's outgoing webhook, or a small relay in front of it) sends::

    POST /command
    X-Ledger-Timestamp: 1764400000            (Unix seconds)
    X-Ledger-Signature: v1=<hex of HMAC-SHA256(secret, "1764400000." + body)>

A request whose timestamp is more than ``MAX_SKEW_S`` (5 min) from the notifier's clock,
either way, or whose signature does not match, is refused before its body is parsed.
``verify`` compares in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Literal

MAX_SKEW_S = 300.0
TIMESTAMP_HEADER = "X-Ledger-Timestamp"
SIGNATURE_HEADER = "X-Ledger-Signature"
_TS = re.compile(r"^[0-9]{1,12}$")

Verdict = Literal["ok", "bad_signature", "old_timestamp", "bad_timestamp"]


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """The header value for ``body`` sent at ``timestamp`` (what the platform side computes)."""
    mac = hmac.new(secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


def verify(
    secret: bytes,
    timestamp: str | None,
    signature: str | None,
    body: bytes,
    *,
    now_ts: float,
    max_skew_s: float = MAX_SKEW_S,
) -> Verdict:
    if timestamp is None or not _TS.fullmatch(timestamp):
        return "bad_timestamp"
    if abs(now_ts - int(timestamp)) > max_skew_s:
        return "old_timestamp"
    want = sign(secret, timestamp, body)
    if signature is None or not hmac.compare_digest(
        want.encode(), signature.encode("ascii", "replace")
    ):
        return "bad_signature"
    return "ok"


__all__ = ["MAX_SKEW_S", "SIGNATURE_HEADER", "TIMESTAMP_HEADER", "Verdict", "sign", "verify"]
