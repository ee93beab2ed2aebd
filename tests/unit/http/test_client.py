"""The one HTTP client (vllm_ledger/http/client.py) against real sockets on 127.0.0.1 (and ::1):
one total deadline whatever the server's pace, what it sends and where, http and https, GET and
POST. Reading the answer (the byte cap, what it cannot read) is in test_answer.py, redirects in
test_redirects.py."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest

from tests.rawhttp import RawServer, drip, read_request, response
from vllm_ledger.errors import RemoteError, RemoteTimeout
from vllm_ledger.http import client

SLACK_S = 2.0  # what a busy machine may add to a deadline; a drip below runs ten times longer


def _ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


# ---- one deadline --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "body"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b"x"),  # the body drips
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"x"),  # no length: drips to close
        (b"HTTP/1.1 200 OK\r\n", b"X-Slow: abcdefghijklmnopqrstuvwxyz\r\n"),  # the headers drip
        (b"", b"HTTP/1.1 200 OK\r\n"),  # the status line drips
    ],
)
def test_a_dripping_server_is_cut_at_the_deadline(head: bytes, body: bytes) -> None:
    with RawServer(drip(head, body)) as server:
        began = time.monotonic()
        with pytest.raises(RemoteTimeout) as exc:
            client.get(server.url("/metrics"), deadline_s=0.6, hint="is it up?")
        took = time.monotonic() - began
    assert str(exc.value) == f"{server.url('/metrics')} did not answer within 0.6 s: is it up?"
    assert (exc.value.seconds, exc.value.target) == (0.6, server.url("/metrics"))
    assert 0.6 <= took < 0.6 + SLACK_S, took


def test_a_server_that_never_answers_is_cut_at_the_deadline() -> None:
    with RawServer(lambda conn, _req: time.sleep(20)) as server:
        began = time.monotonic()
        with pytest.raises(RemoteTimeout):
            client.post(server.url(), b"{}", deadline_s=0.5)
        assert time.monotonic() - began < 0.5 + SLACK_S


def test_the_deadline_covers_every_redirect_together() -> None:
    def slow_redirect(conn: socket.socket, request: bytes) -> None:
        time.sleep(0.4)
        conn.sendall(response("307 Temporary Redirect", headers=("Location: /again",)))

    with RawServer(slow_redirect) as server:
        began = time.monotonic()
        with pytest.raises(RemoteTimeout):
            client.get(server.url(), deadline_s=1.0, redirects=10)
        assert time.monotonic() - began < 1.0 + SLACK_S
    assert 2 <= len(server.requests) <= 4  # each hop took 0.4 s of the one second


# ---- what it sends, and where --------------------------------------------------------------


def _echo(conn: socket.socket, request: bytes) -> None:
    conn.sendall(response("201 Created", request))


def test_post_sends_the_body_and_headers_once() -> None:
    with RawServer(_echo) as server:
        got = client.post(
            server.url("/hook?key=a b"),
            b'{"text": "hi"}',
            deadline_s=5,
            headers={"Content-Type": "application/json", "X-Token": "t"},
        )
    head, _, body = got.body.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /hook?key=a%20b HTTP/1.1"
    assert f"Host: {server.where}" in lines
    assert {"Content-Length: 14", "Content-Type: application/json", "X-Token: t"} <= set(lines)
    assert "Connection: close" in lines
    assert body == b'{"text": "hi"}'
    assert (got.status, got.status_text, got.header("content-length")) == (
        201,
        "HTTP 201 Created",
        str(len(got.body)),
    )


def test_a_user_and_password_in_the_url_are_basic_auth() -> None:
    with RawServer(_echo) as server:
        got = client.get(f"http://us%40er:pa%3Ass@{server.where}/", deadline_s=5)
    assert b"Authorization: Basic dXNAZXI6cGE6c3M=\r\n" in got.body  # us@er:pa:ss


@pytest.mark.skipif(not _ipv6(), reason="no IPv6 loopback here")
def test_an_ipv6_literal() -> None:
    with RawServer(_echo, host="::1") as server:
        got = client.get(server.url("/health"), deadline_s=5)
    assert server.url("/health").startswith("http://[::1]:")
    assert got.status == 201 and f"Host: [::1]:{server.port}".encode() in got.body


def test_nothing_listening_or_no_such_host_is_a_remote_error_at_once() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        with pytest.raises(RemoteError) as exc:
            client.get(f"http://127.0.0.1:{port}/", deadline_s=5, hint="is it up?")
    assert str(exc.value) == f"cannot read http://127.0.0.1:{port}/: Connection refused: is it up?"
    assert type(exc.value) is RemoteError
    with pytest.raises(RemoteError, match="not an http"):
        client.get("ftp://127.0.0.1/", deadline_s=5)
    with pytest.raises(RemoteError, match="not an http"):
        client.get("http://127.0.0.1:port/", deadline_s=5)


def test_a_callers_mistake_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="deadline_s"):
        client.get("http://127.0.0.1/", deadline_s=0)
    with pytest.raises(ValueError, match="one-line value"):
        client.get("http://127.0.0.1/", deadline_s=1, headers={"X": "a\r\nInjected: 1"})


# ---- https ---------------------------------------------------------------------------------


@pytest.fixture
def tls_files(tmp_path: Path) -> tuple[Path, Path]:
    if not shutil.which("openssl"):
        pytest.skip("needs openssl to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def test_https_with_the_default_trust_and_with_a_given_one(tls_files: tuple[Path, Path]) -> None:
    cert, key = tls_files
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)

    def tls(conn: socket.socket, _request: bytes) -> None:
        with served.wrap_socket(conn, server_side=True) as wrapped:
            read_request(wrapped)
            wrapped.sendall(response("200 OK", b"secret"))

    with RawServer(tls, read=False) as server:
        url = f"https://{server.where}/"
        with pytest.raises(RemoteError) as exc:
            client.get(url, deadline_s=5)  # self-signed: not in the system's trust store
        assert str(exc.value).startswith(f"cannot read {url}: ")
        assert "CERTIFICATE_VERIFY_FAILED" in str(exc.value)
        trusting = ssl.create_default_context(cafile=str(cert))
        assert client.get(url, deadline_s=5, context=trusting).body == b"secret"
