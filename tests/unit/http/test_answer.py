"""Reading an answer (vllm_ledger/http/answer.py), through the one client against real sockets on
127.0.0.1: a body over the cap refused or cut, chunks read whole, a status line or a header block
it cannot read named, interim answers skipped."""

from __future__ import annotations

import pytest

from tests.rawhttp import RawServer, canned, response
from vllm_ledger.errors import AnswerTooLarge, BadResponse
from vllm_ledger.http import client

# ---- the byte cap --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        response("200 OK", b"x" * 2000),  # a Content-Length over the cap: refused before reading
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 2000,  # no length, to close
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"3e8\r\n"
        + b"x" * 1000
        + b"\r\n"
        + b"3e8\r\n"
        + b"x" * 1000
        + b"\r\n0\r\n\r\n",
    ],
    ids=["content-length", "until-close", "chunked"],
)
def test_a_body_over_the_cap_is_refused_or_cut(answer: bytes) -> None:
    with RawServer(canned(answer)) as server:
        with pytest.raises(AnswerTooLarge) as exc:
            client.get(server.url(), deadline_s=5, max_bytes=1024)
        assert exc.value.limit == 1024
        assert str(exc.value) == (
            f"{server.url()} answered more than 1 KiB: check that it is the URL meant"
        )
        kept = client.get(server.url(), deadline_s=5, max_bytes=1024, truncate=True)
    assert (kept.status, kept.body, kept.truncated) == (200, b"x" * 1024, True)


def test_a_body_at_the_cap_is_whole() -> None:
    with RawServer(canned(response("200 OK", b"y" * 1024))) as server:
        got = client.get(server.url(), deadline_s=5, max_bytes=1024)
    assert (got.body, got.truncated) == (b"y" * 1024, False)


def test_a_chunked_body_is_read_whole() -> None:
    answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    with RawServer(canned(answer)) as server:
        got = client.get(server.url(), deadline_s=5)
    assert got.body == b"hello world"


# ---- answers it cannot read ----------------------------------------------------------------

LOTS_OF_HEADERS = b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(101))


@pytest.mark.parametrize(
    ("answer", "problem", "words"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n", "status_line", "did not answer with an HTTP/1.x status line"),
        (b"HTTP/2 200\r\n\r\n", "status_line", "did not answer with an HTTP/1.x status line"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", "status_line", "did not answer with an HTTP/1.x status line"),
        (b"x" * 70_000, "status_line", "did not answer with an HTTP/1.x status line"),
        (LOTS_OF_HEADERS + b"\r\n", "too_many_headers", "sent more than 100 headers"),
        (
            b"HTTP/1.1 200 OK\r\nX-Big: " + b"y" * 70_000 + b"\r\n\r\n",
            "headers",
            "sent a header block over 64 KiB",
        ),
        (
            b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            "headers",
            "sent a header line that is not NAME: VALUE",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            "framing",
            "sent a Content-Length that is not one number",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "framing",
            "sent a chunk size that is not a hex number",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
            "truncated",
            "closed the connection mid-answer",
        ),
        (b"", "no_answer", "closed the connection without an answer"),
    ],
    ids=[
        "ssh",
        "http2",
        "four-digits",
        "no-line-end",
        "too-many-headers",
        "header-block-too-big",
        "no-colon",
        "two-lengths",
        "bad-chunk",
        "truncated",
        "nothing",
    ],
)
def test_an_answer_it_cannot_read_is_named(answer: bytes, problem: str, words: str) -> None:
    with RawServer(canned(answer)) as server:
        with pytest.raises(BadResponse) as exc:
            client.get(server.url(), deadline_s=5, hint="is it up?")
    assert exc.value.problem == problem
    assert str(exc.value) == f"{server.url()} {words}: is it up?"


def test_interim_answers_are_skipped() -> None:
    answer = b"HTTP/1.1 100 Continue\r\n\r\n" + response("200 OK", b"done")
    with RawServer(canned(answer)) as server:
        assert client.post(server.url(), b"x", deadline_s=5).body == b"done"
