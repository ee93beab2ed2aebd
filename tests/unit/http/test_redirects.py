"""Which redirects are followed (vllm_ledger/http/redirects.py): the origin of a URL and the next
URL of a redirect, pure; and through the one client against real sockets on 127.0.0.1, none to
another host, same-host ones up to the limit, a POST only through 307 and 308."""

from __future__ import annotations

import socket

import pytest

from tests.rawhttp import RawServer, canned, response
from vllm_ledger.errors import RedirectRefused
from vllm_ledger.http import client
from vllm_ledger.http.redirects import next_url, origin


def test_an_origin_is_the_scheme_host_and_port_with_the_default_port() -> None:
    assert origin("http://Example.ORG/x") == ("http", "example.org", 80)
    assert origin("HTTPS://example.org:8443/") == ("https", "example.org", 8443)
    assert origin("http://user:pw@[::1]:9/") == ("http", "::1", 9)
    assert origin("http://example.org:port/") == ("http", "example.org", -1)


def test_the_next_url_is_joined_to_the_current_one_or_refused() -> None:
    def follow(location: str, method: str = "GET", status: int = 302, hop: int = 0) -> str:
        return next_url(
            "http://a/x",
            "http://a/x/y",
            location,
            method=method,
            status=status,
            hop=hop,
            redirects=3,
        )

    assert follow(" z ") == "http://a/x/z"
    assert follow("/y", method="POST", status=308) == "http://a/y"
    with pytest.raises(RedirectRefused, match=r"to another host \('b:1'\)") as exc:
        follow("http://u:p@b:1/")
    assert exc.value.location == "http://u:p@b:1/"
    with pytest.raises(RedirectRefused, match="redirected more than 3 times"):
        follow("/y", hop=3)
    with pytest.raises(RedirectRefused, match="answered a POST with HTTP 302"):
        follow("/y", method="POST")


def test_a_redirect_to_another_host_is_refused_and_never_followed() -> None:
    with RawServer(canned(response("200 OK", b"elsewhere")), host="127.0.0.2") as other:
        to_other = response("302 Found", headers=(f"Location: {other.url('/metrics')}",))
        with RawServer(canned(to_other)) as server:
            with pytest.raises(RedirectRefused) as exc:
                client.get(server.url("/metrics"), deadline_s=5, redirects=3)
            # not followed: the 3xx itself, when the caller follows none
            assert client.get(server.url("/metrics"), deadline_s=5).status == 302
    assert exc.value.location == other.url("/metrics")
    assert str(exc.value) == (
        f"{server.url('/metrics')} redirects to another host ('{other.where}'): not followed: "
        "give the URL that answers without leaving its host"
    )
    assert other.requests == []


@pytest.mark.parametrize(
    "location", ["http://localhost:{port}/x", "https://127.0.0.1:{port}/x", "http://127.0.0.1:1/x"]
)
def test_another_name_scheme_or_port_is_another_host(location: str) -> None:
    def answer(conn: socket.socket, _request: bytes) -> None:
        where = location.format(port=conn.getsockname()[1])
        conn.sendall(response("301 Moved Permanently", headers=(f"Location: {where}",)))

    with RawServer(answer) as server:
        with pytest.raises(RedirectRefused, match="redirects to another host"):
            client.get(server.url(), deadline_s=5, redirects=3)


def test_same_host_redirects_are_followed_up_to_the_limit() -> None:
    def answer(conn: socket.socket, request: bytes) -> None:
        path = request.split(b" ")[1]
        if path == b"/metrics":
            conn.sendall(response("307 Temporary Redirect", headers=("Location: /metrics/",)))
        elif path == b"/loop":
            conn.sendall(response("302 Found", headers=("Location: loop",)))
        else:
            conn.sendall(response("200 OK", b"metrics at " + path))

    with RawServer(answer) as server:
        got = client.get(server.url("/metrics"), deadline_s=5, redirects=3)
        assert (got.status, got.body, got.url) == (
            200,
            b"metrics at /metrics/",
            server.url("/metrics/"),
        )
        with pytest.raises(RedirectRefused) as exc:
            client.get(server.url("/loop"), deadline_s=5, redirects=3)
    assert str(exc.value).startswith(f"{server.url('/loop')} redirected more than 3 times: ")
    assert len(server.requests) == 2 + 4


def test_a_post_is_resent_only_through_307_and_308() -> None:
    def answer(conn: socket.socket, request: bytes) -> None:
        path = request.split(b" ")[1]
        if path == b"/303":
            conn.sendall(response("303 See Other", headers=("Location: /done",)))
        elif path == b"/308":
            conn.sendall(response("308 Permanent Redirect", headers=("Location: /done",)))
        else:
            conn.sendall(response("200 OK", request.partition(b"\r\n\r\n")[2]))

    with RawServer(answer) as server:
        assert client.post(server.url("/308"), b"body", deadline_s=5, redirects=1).body == b"body"
        with pytest.raises(RedirectRefused, match="answered a POST with HTTP 303"):
            client.post(server.url("/303"), b"body", deadline_s=5, redirects=1)
