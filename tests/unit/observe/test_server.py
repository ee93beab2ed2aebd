"""The exporter's HTTP server: slow clients are dropped on time and never block a scrape; a
burst of connections waits in the listen backlog; past the connection bound, 503 at once.

Real sockets against a real exporter on 127.0.0.1 (a free port), stopped at the end. The
bounds on elapsed time are generous (the stated deadline + 5 s): they catch a hang, not speed.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.ledgers import FakeClock, ev, write_ledger
from vllm_ledger.observe.exporter import LedgerCollector, make_registry, start
from vllm_ledger.observe.server import (
    LISTEN_BACKLOG,
    MAX_CONNECTIONS,
    REQUEST_DEADLINE_S,
    MetricsServer,
)
from vllm_ledger.promtext import parse_samples, sum_metric

T0 = 1_800_000_000
SLACK_S = 5.0


@pytest.fixture
def collector(tmp_path: Path) -> LedgerCollector:
    root = tmp_path / "ledger"
    write_ledger(root, "run-1", start_ts=T0, end_ts=T0 + 60, events=[ev(T0 + 5, prompt=8, gen=3)])
    return LedgerCollector([root], tz="UTC", clock=FakeClock(T0 + 61), say=lambda _line: None)


def _scrape(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=SLACK_S) as r:
        assert r.status == 200
        return sum_metric(parse_samples(r.read().decode()), "vllm_ledger_prompt_tokens_total")


def _closed_by_server(sock: socket.socket, started: float, limit_s: float) -> float:
    """Block until the server closes ``sock``; the seconds since ``started``."""
    sock.settimeout(max(0.1, started + limit_s - time.monotonic()))
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        pytest.fail(f"the server kept a slow connection open for more than {limit_s} s")
    return time.monotonic() - started


def test_the_commands_deadline_is_ten_seconds(
    collector: LedgerCollector, servers: list[MetricsServer]
) -> None:
    server = start(collector, host="127.0.0.1", port=0)  # the command's defaults
    servers.append(server)
    assert server.request_deadline_s == REQUEST_DEADLINE_S == 10.0


# The deadline the test below holds the server to: the command's is 10 s (above); the drip is a
# fifth of it, as a byte every 2 s is of 10 s.
DEADLINE_S = 2.0
DRIP_EVERY_S = DEADLINE_S / 5


def test_idle_and_dripping_clients_are_dropped_and_never_block_a_scrape(
    collector: LedgerCollector, servers: list[MetricsServer]
) -> None:
    server = start(collector, host="127.0.0.1", port=0, request_deadline_s=DEADLINE_S)
    servers.append(server)
    started = time.monotonic()
    idle = socket.create_connection(("127.0.0.1", server.port))  # sends nothing
    drip = socket.create_connection(("127.0.0.1", server.port))
    drip.sendall(b"GET /metr")  # half a request line, then a byte every DRIP_EVERY_S
    stop = threading.Event()

    def dripping() -> None:
        while not stop.wait(DRIP_EVERY_S):
            try:
                drip.send(b"i")
            except OSError:
                return

    dripper = threading.Thread(target=dripping, daemon=True)
    dripper.start()
    try:
        # Scrapes while both hold a connection: each answers (with the ledger's figure).
        for _ in range(3):
            assert _scrape(server.port) == 8
            time.sleep(DEADLINE_S / 10)
        limit = DEADLINE_S + SLACK_S
        idle_s = _closed_by_server(idle, started, limit)
        drip_s = _closed_by_server(drip, started, limit)
    finally:
        stop.set()
        dripper.join(5)
        idle.close()
        drip.close()
    # Closed by the deadline, not earlier, though the dripper sent a byte every DRIP_EVERY_S.
    assert DEADLINE_S - 0.5 <= idle_s <= limit
    assert DEADLINE_S - 0.5 <= drip_s <= limit
    assert _scrape(server.port) == 8


def test_a_burst_of_100_connections_waits_in_the_backlog(
    collector: LedgerCollector, servers: list[MetricsServer]
) -> None:
    assert LISTEN_BACKLOG >= 100 and MAX_CONNECTIONS >= 100
    # Not serving yet: nothing accepts, so every connection must fit in the listen backlog
    # (the standard library's default of 5 would leave the 7th waiting on SYN retries).
    server = MetricsServer(make_registry(collector), "127.0.0.1", 0)
    servers.append(server)
    socks = []
    try:
        for _ in range(100):
            socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=2.0))
        server.start()
        for s in socks:
            s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        for s in socks:
            s.settimeout(30.0)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
            assert answer.startswith(b"HTTP/1.0 200 OK\r\n"), answer[:80]
            assert (
                b'\nvllm_ledger_prompt_tokens_total{ledger_instance="testhost:8000",'
                b'model_name="tiny"} 8.0\n'
            ) in answer
    finally:
        for s in socks:
            s.close()


def test_past_the_connection_bound_a_client_gets_503_at_once(
    collector: LedgerCollector, servers: list[MetricsServer]
) -> None:
    server = start(
        collector, host="127.0.0.1", port=0, request_deadline_s=DEADLINE_S, max_connections=2
    )
    servers.append(server)
    started = time.monotonic()
    holders = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(2)]
    try:
        time.sleep(0.5)  # both accepted and holding their slots
        with socket.create_connection(("127.0.0.1", server.port), timeout=SLACK_S) as third:
            third.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            answer = third.recv(4096)
        assert answer.startswith(b"HTTP/1.0 503 Service Unavailable\r\n")
        for h in holders:
            _closed_by_server(h, started, DEADLINE_S + SLACK_S)
        assert _scrape(server.port) == 8  # the slots are free again
    finally:
        for h in holders:
            h.close()


def test_a_port_in_use_is_a_one_line_error(collector: LedgerCollector) -> None:
    from vllm_ledger.errors import BadArgument

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(BadArgument) as err:
            start(collector, host="127.0.0.1", port=port)
    assert str(err.value) == (
        f"cannot listen on 127.0.0.1:{port}: Address already in use: pick another address"
    )
    assert (err.value.argument, err.value.value) == ("address", ("127.0.0.1", port))
