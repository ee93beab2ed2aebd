"""The one HMAC helper (vllm_ledger/notify/signing.py): the digest against RFC 4231's vector,
constant-time equality that never raises, the shared timestamp-then-signature verdict, and our
own ``v1=`` signature against a value computed with openssl; the bearer scheme read in any
case (RFC 7235)."""

from __future__ import annotations

from vllm_ledger.notify.signing import (
    MILLISECONDS,
    bearer_token,
    check,
    equal,
    hmac_sha256,
    hmac_sha256_base64,
    hmac_sha256_hex,
    sign,
    verify,
)

NOW = 1_764_400_000.0
SECRET = b"test-secret"
BODY = b'{"message_id":"m1","text":"status"}'
# printf '1764400000.{"message_id":"m1","text":"status"}' | openssl dgst -sha256 -hmac test-secret
V1 = "v1=ca0f751264697854ea5b5034d9fbb0e1d0f71540ecc7afceaaed12da1c37f70d"


def test_hmac_sha256_is_rfc_4231_test_case_2() -> None:
    want = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    assert hmac_sha256_hex(b"Jefe", b"what do ya want for nothing?") == want
    assert hmac_sha256(b"Jefe", b"what do ya want for nothing?").hex() == want
    assert hmac_sha256_base64(b"Jefe", b"what do ya want for nothing?") == (
        "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM="
    )


def test_equal_compares_whole_values_and_never_raises() -> None:
    assert equal("v0=abc", "v0=abc")
    assert not equal("v0=abc", "v0=abd")
    assert not equal("v0=abc", "v0=ab")
    assert not equal("v0=abc", None)
    assert not equal("Bearer a?b", "Bearer a\u00e9b")  # no character stands in for another
    assert equal("Bearer ключ", "Bearer ключ")
    assert not equal("x", "\udcff")


def test_our_signature_is_hmac_of_timestamp_dot_body() -> None:
    assert sign(SECRET, "1764400000", BODY) == V1
    assert verify(SECRET, "1764400000", V1, BODY, now_ts=NOW) == "ok"
    assert verify(SECRET, "1764400000", V1, BODY + b" ", now_ts=NOW) == "bad_signature"
    assert verify(b"other", "1764400000", V1, BODY, now_ts=NOW) == "bad_signature"
    assert verify(SECRET, "1764400000", None, BODY, now_ts=NOW + 300) == "bad_signature"
    assert verify(SECRET, "1764400000", V1, BODY, now_ts=NOW + 301) == "old_timestamp"
    assert verify(SECRET, "1764400000", V1, BODY, now_ts=NOW - 301) == "old_timestamp"
    assert verify(SECRET, "1764400000.0", V1, BODY, now_ts=NOW) == "bad_timestamp"
    assert verify(SECRET, None, V1, BODY, now_ts=NOW) == "bad_timestamp"


def test_check_reads_the_timestamp_before_it_computes_a_signature() -> None:
    computed: list[str] = []

    def expected(ts: str) -> str:
        computed.append(ts)
        return "good"

    def in_ms(ts: str, max_skew_s: float) -> str:
        return check(
            ts,
            "good",
            expected,
            now_ts=NOW,
            max_skew_s=max_skew_s,
            pattern=MILLISECONDS,
            per_second=1000,
        )

    assert in_ms("1764400000500", 1) == "ok"
    assert in_ms("1764396399999", 3600) == "old_timestamp"
    assert in_ms("1" * 16, 3600) == "bad_timestamp"
    assert check("-5", "good", expected, now_ts=NOW, max_skew_s=3600) == "bad_timestamp"
    assert check("1764400000", "bad", expected, now_ts=NOW, max_skew_s=0) == "bad_signature"
    assert computed == ["1764400000500", "1764400000"]


def test_the_bearer_scheme_is_read_in_any_case_and_the_token_as_sent() -> None:
    for value in ("Bearer t0k.en", "bearer t0k.en", "BEARER t0k.en", " bEaReR   t0k.en\t"):
        assert bearer_token(value) == "t0k.en", value
    assert bearer_token("Bearer a b:c") == "a b:c"  # compared whole with the configured token
    for bad in ("Basic t0k.en", "Bearert0k.en", "Bearer", "Bearer  ", "", None, "t0k.en"):
        assert bearer_token(bad) is None, bad
