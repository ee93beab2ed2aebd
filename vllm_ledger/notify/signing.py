"""Every HMAC of the notifier, and every comparison of a secret, in one place. Pure.

``hmac_sha256`` computes, ``equal`` compares in constant time (``hmac.compare_digest``),
and ``check`` is the one verdict of a signed request: its timestamp (digits, within
``max_skew_s`` of the clock, either way), then its signature. The platforms' signatures
(``platforms/feishu.py``, ``dingtalk.py``, ``slack.py``) are built on these.

Our own signature, for a command or resend request from a relay or ``notifier resend``::

    POST /command
    X-Ledger-Timestamp: 1764400000            (Unix seconds)
    X-Ledger-Signature: v1=<hex of HMAC-SHA256(secret, "1764400000." + body)>

A request whose timestamp is more than ``MAX_SKEW_S`` (5 min) from the notifier's clock,
either way, or whose signature does not match, is refused before its body is parsed.

A bearer token (``/alertmanager``) is read by ``bearer_token``: ``Authorization: Bearer TOKEN``
with the scheme in any case (RFC 7235, 2.1: ``bearer``, ``BEARER``), then compared by ``equal``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Callable
from typing import Literal

MAX_SKEW_S = 300.0
TIMESTAMP_HEADER = "X-Ledger-Timestamp"
SIGNATURE_HEADER = "X-Ledger-Signature"
SECONDS = re.compile(r"^[0-9]{1,12}$")
MILLISECONDS = re.compile(r"^[0-9]{1,15}$")
# RFC 7235: credentials = auth-scheme 1*SP token68, the scheme a token (RFC 7230's tchar); the
# rest is taken whole and compared whole, so a token of any characters is read as configured
_CREDENTIALS = re.compile(r"[ \t]*([!#$%&'*+.^_`|~0-9A-Za-z-]+) +([^ \t].*?)[ \t]*")

Verdict = Literal["ok", "bad_signature", "old_timestamp", "bad_timestamp"]


def hmac_sha256(key: bytes, message: bytes) -> bytes:
    """The raw HMAC-SHA256 digest of ``message`` under ``key``."""
    return hmac.new(key, message, hashlib.sha256).digest()


def hmac_sha256_hex(key: bytes, message: bytes) -> str:
    return hmac_sha256(key, message).hex()


def hmac_sha256_base64(key: bytes, message: bytes) -> str:
    return base64.b64encode(hmac_sha256(key, message)).decode("ascii")


def equal(want: str, got: str | None) -> bool:
    """``got`` is ``want``, compared in constant time as UTF-8 bytes (any text compares,
    none raises); a missing value is never equal."""
    return got is not None and hmac.compare_digest(
        want.encode("utf-8", "surrogatepass"), got.encode("utf-8", "surrogatepass")
    )


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization`` header value whose scheme is Bearer, in any case
    (RFC 7235: the scheme is case-insensitive), and the rest as sent; None for another scheme,
    a value without a token, or no header."""
    found = _CREDENTIALS.fullmatch(authorization or "")
    if found is None or found.group(1).lower() != "bearer":
        return None
    return found.group(2)


def check(
    timestamp: str | None,
    signature: str | None,
    expected: Callable[[str], str],
    *,
    now_ts: float,
    max_skew_s: float,
    pattern: re.Pattern[str] = SECONDS,
    per_second: int = 1,
) -> Verdict:
    """The verdict on a signed request: ``timestamp`` (``pattern``, ``per_second`` units a
    second) within ``max_skew_s`` of ``now_ts``, then ``signature`` equal to
    ``expected(timestamp)``. The signature is computed only for a timestamp in the window."""
    if timestamp is None or not pattern.fullmatch(timestamp):
        return "bad_timestamp"
    if abs(now_ts - int(timestamp) / per_second) > max_skew_s:
        return "old_timestamp"
    if not equal(expected(timestamp), signature):
        return "bad_signature"
    return "ok"


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """Our header value for ``body`` sent at ``timestamp`` (what the sending side computes)."""
    return "v1=" + hmac_sha256_hex(secret, timestamp.encode("ascii") + b"." + body)


def verify(
    secret: bytes,
    timestamp: str | None,
    signature: str | None,
    body: bytes,
    *,
    now_ts: float,
    max_skew_s: float = MAX_SKEW_S,
) -> Verdict:
    """Our own signature on a command or resend request."""
    return check(
        timestamp,
        signature,
        lambda ts: sign(secret, ts, body),
        now_ts=now_ts,
        max_skew_s=max_skew_s,
    )


__all__ = [
    "MAX_SKEW_S",
    "MILLISECONDS",
    "SECONDS",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "Verdict",
    "bearer_token",
    "check",
    "equal",
    "hmac_sha256",
    "hmac_sha256_base64",
    "hmac_sha256_hex",
    "sign",
    "verify",
]
