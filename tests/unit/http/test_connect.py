"""A connection within the deadline (vllm_ledger/http/connect.py) on 127.0.0.1: a listening
port connected, a refusal named at once."""

from __future__ import annotations

import socket
import time

import pytest

from vllm_ledger.errors import RemoteError
from vllm_ledger.http.connect import connect
from vllm_ledger.http.limits import Limits


def _limits(url: str) -> Limits:
    return Limits(url, 5.0, time.monotonic() + 5.0, 1024, False, "is it up?")


def test_a_listening_port_is_connected() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        with connect("127.0.0.1", port, _limits(f"http://127.0.0.1:{port}/")) as sock:
            assert sock.getpeername() == ("127.0.0.1", port)


def test_a_refused_port_is_a_remote_error_at_once() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        url = f"http://127.0.0.1:{port}/"
        began = time.monotonic()
        with pytest.raises(RemoteError) as exc:
            connect("127.0.0.1", port, _limits(url))
    assert time.monotonic() - began < 2.0
    assert str(exc.value) == f"cannot read {url}: Connection refused: is it up?"
