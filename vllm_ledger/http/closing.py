"""Ending a served connection so that the client still reads its answer (``http/server.py``).

Closing a socket with bytes the client sent still unread resets the connection, and the client
can lose the answer with it. So what it sent is read and dropped first: what has already
arrived, and after a refusal (``linger``) what still comes within ``LINGER_S``; at most
``LINGER_BYTES`` in all.
"""

from __future__ import annotations

import socket
import time

# After a refusal, what the client still sends is read and dropped for this long, so that
# closing does not reset the connection before the client has read the answer.
LINGER_S = 1.0
LINGER_BYTES = 1024 * 1024


def close_draining(sock: socket.socket, linger: bool) -> None:
    """Close, first reading and dropping what the client sent that no one read (a close
    with unread bytes resets the connection, and the client can lose the answer): what
    has arrived, and after a refusal what still comes within ``LINGER_S``; at most
    ``LINGER_BYTES``."""
    until = time.monotonic() + (LINGER_S if linger else 0.0)
    dropped = 0
    try:
        sock.shutdown(socket.SHUT_WR)
        while dropped < LINGER_BYTES:
            left = until - time.monotonic()
            if left > 0:
                sock.settimeout(left)
            else:
                sock.setblocking(False)
            chunk = sock.recv(65536)
            if not chunk:
                break
            dropped += len(chunk)
    except OSError:  # nothing more in time (BlockingIOError, TimeoutError), or a reset
        pass
    finally:
        sock.close()


def answer_and_close(sock: socket.socket, data: bytes) -> None:
    """Send ``data`` without waiting on the client (what fits at once), then close, dropping
    what already arrived first (bounded)."""
    try:
        sock.setblocking(False)
        sock.send(data)
        sock.shutdown(socket.SHUT_WR)
        for _ in range(4):  # what already arrived (bounded), so that closing sends no reset
            if not sock.recv(65536):
                break
    except OSError:  # BlockingIOError: nothing (more) has arrived
        pass
    finally:
        sock.close()


__all__ = ["LINGER_BYTES", "LINGER_S", "answer_and_close", "close_draining"]
