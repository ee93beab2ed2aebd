"""The notifier's endpoint (``notify.server``) with a real ``Notifier``'s routes on 127.0.0.1:
slow clients never keep a signed command out, bad framing is a JSON 4xx without a traceback,
and the answers the chat side reads are as before.

The notifier is built from a config file (its usage target's port is closed, nothing is
started but the endpoint); its routes are served by an ``Endpoint`` with a 2 s total deadline,
passed to the constructor. Bounds on elapsed time are generous: they catch a hang, not speed.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.ports import free_port
from vllm_ledger.notify.server import MAX_COMMAND_BYTES, MAX_CONNECTIONS, Endpoint
from vllm_ledger.notify.service import Notifier
from vllm_ledger.notify.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

SECRET = b"test-command-secret"
DEADLINE_S = 5.0
# A signed command is answered within this, short of the deadline: had it waited behind a
# dripper, it would have waited for the deadline's cut (room for a loaded machine's commit).
COMMAND_S = DEADLINE_S - 1.0
DRIPPERS = 40
DRIP_BODY_BYTES = 60_000


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[Endpoint]:
    config = tmp_path / "private.json"
    usage = {str(free_port()): {"target": "closed", "code_dir": "/srv/c", "data_dir": "/srv/u"}}
    config.write_text(json.dumps({"usage": usage, "notifier": {"lang": "en"}}))
    notifier = Notifier(
        config,
        env={"VLLM_LEDGER_COMMAND_SECRET": SECRET.decode()},
        listen=("127.0.0.1", 0),
    )
    notifier.endpoint.server_close()  # its own, never started: served below with a short deadline
    served = Endpoint("127.0.0.1", 0, notifier.routes, request_deadline_s=DEADLINE_S)
    served.start()
    try:
        yield served
    finally:
        served.stop()
        notifier.store.close()


def post(
    port: int, path: str, body: bytes, headers: dict[str, str], timeout_s: float = 10.0
) -> tuple[int, Any]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def signed_command(port: int, message_id: str, timeout_s: float = 10.0) -> tuple[int, Any]:
    body = json.dumps({"message_id": message_id, "text": "@bot help"}).encode()
    ts = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        TIMESTAMP_HEADER: ts,
        SIGNATURE_HEADER: sign(SECRET, ts, body),
    }
    return post(port, "/command", body, headers, timeout_s)


def raw(port: int, data: bytes) -> tuple[int, Any]:
    with socket.create_connection(("127.0.0.1", port), timeout=10.0) as s:
        s.sendall(data)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


class Dripper(threading.Thread):
    """A client that announces a 60 KB body to /command and sends it a byte every 0.5 s; when
    the server cuts it, it records the answer and how long it was held, and comes back."""

    def __init__(self, port: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.stop = stop
        self.cut: list[tuple[int, float]] = []  # (status, seconds connected)
        self.connected = threading.Event()

    def run(self) -> None:
        head = (
            f"POST /command HTTP/1.1\r\nHost: notifier\r\nContent-Type: application/json\r\n"
            f"Content-Length: {DRIP_BODY_BYTES}\r\n\r\n"
        ).encode()
        while not self.stop.is_set():
            with socket.create_connection(("127.0.0.1", self.port), timeout=10.0) as s:
                began = time.monotonic()
                s.sendall(head)
                self.connected.set()
                while not self.stop.is_set():
                    readable, _, _ = select.select([s], [], [], 0.5)
                    if readable:  # the server answered: read it, then come back
                        answer = b""
                        try:
                            while chunk := s.recv(65536):
                                answer += chunk
                        except ConnectionResetError:
                            pass
                        status = int(answer.split(b" ", 2)[1]) if answer else 0
                        self.cut.append((status, time.monotonic() - began))
                        break
                    try:
                        s.send(b"{")
                    except OSError:
                        self.cut.append((0, time.monotonic() - began))
                        break


def test_40_drip_feeding_clients_never_keep_a_signed_command_out(endpoint: Endpoint) -> None:
    assert DRIPPERS < MAX_CONNECTIONS and DRIP_BODY_BYTES < MAX_COMMAND_BYTES
    stop = threading.Event()
    drippers = [Dripper(endpoint.port, stop) for _ in range(DRIPPERS)]
    for d in drippers:
        d.start()
    try:
        for d in drippers:
            assert d.connected.wait(10.0)
        answers = []
        started = time.monotonic()
        # Before the deadline (every dripper holds a connection), across it (they are cut
        # and come back), and after: each signed command is accepted within COMMAND_S.
        for i, at_s in enumerate((0.5, DEADLINE_S - 0.5, DEADLINE_S + 0.5, DEADLINE_S + 1.5)):
            time.sleep(max(0.0, started + at_s - time.monotonic()))
            began = time.monotonic()
            code, doc = signed_command(endpoint.port, f"drip-{i}", timeout_s=COMMAND_S)
            answers.append((code, doc.get("status"), time.monotonic() - began < COMMAND_S))
        assert answers == [(202, "accepted", True)] * 4
    finally:
        stop.set()
        for d in drippers:
            d.join(10.0)
    cuts = [c for d in drippers for c in d.cut]
    # Every dripper was cut by the total deadline, not by its pace (a byte every 0.5 s would
    # outlast any idle timeout), and answered 408.
    assert all(d.cut for d in drippers)
    deadline_cuts = [(status, held_s) for status, held_s in cuts if held_s >= DEADLINE_S - 0.5]
    assert len(deadline_cuts) >= DRIPPERS
    assert {status for status, _ in deadline_cuts} == {408}
    assert max(held_s for _, held_s in cuts) <= DEADLINE_S + 3.0


def test_bad_framing_is_a_json_4xx_with_no_traceback(
    endpoint: Endpoint,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG, logger="vllm_ledger.http")
    head = b"POST /command HTTP/1.1\r\nHost: notifier\r\n"
    assert raw(endpoint.port, head + b"Content-Length: \xb2\r\n\r\nxx") == (
        400,
        {"error": "bad_length"},
    )
    bad_length = (400, {"error": "bad_length"})
    assert raw(endpoint.port, head + b"Content-Length: -5\r\n\r\n") == bad_length
    assert raw(endpoint.port, head + b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabc") == (
        400,
        {"error": "bad_length"},
    )
    assert raw(endpoint.port, head + b"\r\n") == (411, {"error": "length_required"})
    over = f"Content-Length: {MAX_COMMAND_BYTES + 1}\r\n\r\n".encode()
    assert raw(endpoint.port, head + over) == (
        413,
        {"error": "too_large", "limit_bytes": MAX_COMMAND_BYTES},
    )
    assert raw(endpoint.port, b"GET /command HTTP/1.1\r\n\r\n") == (
        405,
        {"error": "method_not_allowed"},
    )
    assert raw(endpoint.port, b"GET /nowhere HTTP/1.1\r\n\r\n") == (404, {"error": "not_found"})
    assert raw(endpoint.port, b"POST /nowhere HTTP/1.1\r\n\r\n") == (404, {"error": "not_found"})
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len(said) == 8, said
    assert "400 bad_length: Content-Length '\\xb2' is not a number" in said[0]
    assert [r for r in caplog.records if r.exc_info] == []
    assert "Traceback" not in caplog.text + capfd.readouterr().err


def test_the_answers_the_chat_side_reads_are_unchanged(
    endpoint: Endpoint, capfd: pytest.CaptureFixture[str]
) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/healthz", timeout=10) as r:
        assert (r.status, json.loads(r.read())) == (200, {"status": "ok"})
    assert signed_command(endpoint.port, "m1") == (202, {"status": "accepted", "seq": 1})
    assert signed_command(endpoint.port, "m1") == (200, {"status": "duplicate"})
    body = b'{"message_id": "m2", "text": "@bot help"}'
    forged = {TIMESTAMP_HEADER: str(int(time.time())), SIGNATURE_HEADER: "v1=" + "0" * 64}
    assert post(endpoint.port, "/command", body, forged) == (401, {"error": "bad_signature"})
    assert "vllm-ledger notifier: refused /command: bad_signature\n" in capfd.readouterr().err
