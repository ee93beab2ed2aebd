"""HOST:PORT as every listen address and target is typed: ``[::1]:9464`` for IPv6.

Standard library only, beside ``units.py`` (whose ports it takes). A value that is not one
raises ``BadArgument`` worded without a flag, as ``units.py`` does.
"""

from __future__ import annotations

import re

from vllm_ledger.errors import BadArgument
from vllm_ledger.units import port

_HOST = re.compile(r"[A-Za-z0-9_.-]{1,253}")
_IPV6 = re.compile(r"[0-9A-Fa-f:.]{2,45}(?:%[A-Za-z0-9_.-]{1,32})?")
Address = tuple[str, int]  # (host, port)


def host_port(value: str, *, zero: bool = True, example: str = "127.0.0.1:9464") -> Address:
    """``HOST:PORT`` -> ``(host, port)`` (``[::1]:9464`` for IPv6, returned without brackets;
    port 0 with ``zero``: the system picks one). A bare ``:PORT`` is refused: say which host."""
    shown = f"{value[:60]!r}"
    host, sep, port_text = value.rpartition(":")
    wanted = f"{example} (0.0.0.0:PORT listens on every interface)"
    if host.startswith("[") and host.endswith("]") and _IPV6.fullmatch(host[1:-1]):
        host = host[1:-1]
    elif ":" in host:
        raise BadArgument(
            shown, hint="put an IPv6 address in brackets", value=value, example="[::1]:9464"
        )
    elif not sep or not _HOST.fullmatch(host):
        raise BadArgument(
            f"{shown} is not HOST:PORT", hint="give HOST:PORT", value=value, example=wanted
        )
    try:
        return host, port(port_text, zero=zero)
    except BadArgument:
        raise BadArgument(
            f"{shown}: the port {port_text[:20]!r} is not {0 if zero else 1} to 65535",
            hint="give HOST:PORT",
            value=value,
            example=wanted,
        ) from None


__all__ = ["Address", "host_port"]
