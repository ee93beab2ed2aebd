"""Scrape targets as ``observability`` takes them: ``HOST:PORT`` (``check_target``), optionally
named ``ADDRESS=NAME`` (``check_named_target``: NAME becomes the target's ``instance`` label),
and whether one is loopback (from inside the Prometheus container, the container itself). Pure.
"""

from __future__ import annotations

import re

from vllm_ledger.errors import BadArgument
from vllm_ledger.hostport import host_port

_PORT_DIGITS = re.compile(r"[0-9]{1,5}")
_LOOPBACK = re.compile(r"^(127\.[0-9.]+|localhost|\[::1\])$")


def check_target(value: str) -> str:
    """HOST:PORT as Prometheus wants a static target (``hostport.host_port``, port 1-65535 in plain
    digits, no IPv6 zone), returned as given; raises BadArgument otherwise."""
    if not _is_target(value):
        raise BadArgument(
            f"target {value!r} is not HOST:PORT",
            argument="target",
            value=value,
            example="192.168.1.10:8000",
        )
    return value


def _is_target(value: str) -> bool:
    try:
        host, _port = host_port(value, zero=False)
    except BadArgument:
        return False
    return "%" not in host and _PORT_DIGITS.fullmatch(value.rpartition(":")[2]) is not None


def is_loopback(target: str) -> bool:
    return bool(_LOOPBACK.match(target.rsplit(":", 1)[0]))


def check_named_target(value: str) -> tuple[str, str | None]:
    """ADDRESS or ADDRESS=NAME, both HOST:PORT: NAME becomes the target's ``instance`` label
    (for a vLLM: the name the ledger gives it, ``report --by instance``)."""
    address, sep, name = value.partition("=")
    check_target(address)
    if sep:
        check_target(name)
        return address, name
    return address, None


Target = tuple[str, str | None]  # (address, instance name or None: the address)


__all__ = ["Target", "check_named_target", "check_target", "is_loopback"]
