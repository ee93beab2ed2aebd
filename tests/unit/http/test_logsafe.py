"""Text for the server's log lines (vllm_ledger/http/logsafe.py): a client's words printable and
cut short, its address as one word."""

from __future__ import annotations

from vllm_ledger.http.logsafe import peer, safe


def test_a_client_s_text_is_printable_ascii_and_cut_short() -> None:
    assert safe("GET /x") == "GET /x"
    assert safe("\x1b]0;owned\x07\r\n\u202e") == r"\x1b]0;owned\x07\x0d\x0a\u202e"
    assert safe("y" * 300) == "y" * 200 + "..."
    assert safe("\x00" * 10, limit=3) == r"\x00\x00\x00..."


def test_an_address_is_one_word() -> None:
    assert peer(("127.0.0.1", 5000)) == "127.0.0.1:5000"
    assert peer(("::1", 5000, 0, 0)) == "[::1]:5000"
    assert peer("a\nb") == r"a\x0ab"
