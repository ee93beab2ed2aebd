"""Text for the server's log lines (``http/server.py``): what a client sent made printable ASCII
and cut short, so no client can forge a line or move the terminal, and a client's address as
one word.
"""

from __future__ import annotations

import re
from typing import Any

from vllm_ledger.http.urls import url_host

_UNSAFE = re.compile(r"[^\x20-\x7e]")


def safe(value: object, limit: int = 200) -> str:
    """``value`` for a log line: printable ASCII only (others as ``\\xNN``), at most ``limit``
    characters of it."""
    text = str(value)
    cut = len(text) > limit
    text = _UNSAFE.sub(lambda m: _escape(m.group()), text[:limit])
    return text + "..." if cut else text


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def peer(client_address: Any) -> str:
    """A client's address for a log line: ``host:port``, ``[host]:port`` for IPv6."""
    try:
        host, port = str(client_address[0]), int(client_address[1])
    except (TypeError, ValueError, IndexError):
        return safe(client_address)
    return f"{url_host(host)}:{port}"


__all__ = ["peer", "safe"]
