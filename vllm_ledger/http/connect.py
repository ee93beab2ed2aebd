"""A connection for one client request, within its deadline (``http/client.py``): the host's
name looked up, each of its addresses tried in turn, and TLS over the socket for https.

A name is looked up on a thread that is left behind (a daemon) if the resolver is slower than
the deadline; an address literal at once. Each connect and the TLS handshake wait at most the
time left.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Sequence
from typing import Any

from vllm_ledger.http.limits import Limits

_AddrInfo = Sequence[tuple[socket.AddressFamily, socket.SocketKind, int, str, Any]]


def connect(host: str, port: int, limits: Limits) -> socket.socket:
    """A connected socket to the first of ``host``'s addresses that answers in time."""
    addresses = _resolve(host, port, limits)
    last: OSError | None = None
    for family, kind, proto, _name, address in addresses:
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(limits.left_s())
            sock.connect(address)
        except TimeoutError as exc:
            sock.close()
            raise limits.late() from exc
        except OSError as exc:
            sock.close()
            last = exc
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    assert last is not None  # getaddrinfo returns at least one address or raises
    raise limits.unreachable(last) from last


def wrap_tls(
    sock: socket.socket, host: str, limits: Limits, context: ssl.SSLContext | None
) -> socket.socket:
    """TLS over ``sock`` for ``host`` (the system's trust store unless ``context``), the
    handshake within the time left."""
    sock.settimeout(limits.left_s())
    return (context or ssl.create_default_context()).wrap_socket(sock, server_hostname=host)


def _resolve(host: str, port: int, limits: Limits) -> _AddrInfo:
    """``getaddrinfo``, within the time left: an address literal at once, a name on a thread of
    its own that is left behind (a daemon) if the resolver is slower than the deadline."""
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except socket.gaierror:
        pass  # a name, not a literal
    found: list[_AddrInfo | OSError] = []

    def look_up() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)
        except UnicodeError:  # a name that IDNA cannot encode
            found.append(socket.gaierror(socket.EAI_NONAME, "not a host name"))

    thread = threading.Thread(target=look_up, name="vllm-ledger-resolve", daemon=True)
    thread.start()
    thread.join(limits.left_s())
    if not found:
        raise limits.late()
    if isinstance(found[0], OSError):
        raise limits.unreachable(found[0]) from found[0]
    return found[0]


__all__ = ["connect", "wrap_tls"]
