"""What a URL is to the client and the command line, and a host as a URL writes it
(http/urls.py)."""

from __future__ import annotations

import pytest

from vllm_ledger.http.urls import local_host, url_host, url_problem


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:8000/metrics", None),
        ("https://[::1]/status", None),
        ("http://h:99999/", "is not a URL"),
        ("http://[::1/", "is not a URL"),
        ("ftp://h/", "is not an http:// or https:// URL"),
        ("127.0.0.1:8000", "is not an http:// or https:// URL"),
        ("http:///metrics", "names no host"),
    ],
)
def test_a_url_names_its_problem(url: str, problem: str | None) -> None:
    assert url_problem(url) == problem


def test_an_ipv6_host_goes_in_brackets() -> None:
    assert [url_host(h) for h in ("::1", "10.0.0.1", "vllm-0")] == ["[::1]", "10.0.0.1", "vllm-0"]


def test_a_wildcard_is_asked_on_the_loopback() -> None:
    assert [local_host(h) for h in ("0.0.0.0", "::", "10.0.0.1")] == [
        "127.0.0.1",
        "::1",
        "10.0.0.1",
    ]
