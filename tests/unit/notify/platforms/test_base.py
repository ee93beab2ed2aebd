"""What every platform module builds on: markup neutralised with word joiners, the 2xx rule,
an answer's error code, and the platform's defaults."""

from __future__ import annotations

from vllm_ledger.notify.platforms.base import (
    WORD_JOINER,
    Platform,
    accepted,
    error_code,
    joined,
    unlinked,
)

J = WORD_JOINER


def test_a_markdown_link_is_broken_and_other_brackets_kept() -> None:
    assert unlinked("[t](u) and [t][r]") == f"[t]{J}(u) and [t]{J}[r]"
    assert unlinked("usage[19001].target [x] (y)") == "usage[19001].target [x] (y)"


def test_markup_openers_are_joined_only_where_markup_could_form() -> None:
    assert joined("@all and @所有人, a @ b", "@") == f"@{J}all and @{J}所有人, a @ b"
    assert joined("<at id=1> <!here> <0.01 <@U1>", "<") == (
        f"<{J}at id=1> <{J}!here> <0.01 <{J}@U1>"
    )
    both = joined("<@U1> [x](y)", "<@")
    assert both == f"<{J}@{J}U1> [x]{J}(y)"
    assert both.replace(J, "") == "<@U1> [x](y)"  # every character still there


def test_any_2xx_is_accepted() -> None:
    assert [accepted(s, b"") for s in (199, 200, 204, 299, 300, 429)] == [
        False,
        True,
        True,
        True,
        False,
        False,
    ]


def test_the_first_non_zero_integer_code_of_an_answer() -> None:
    keys = ("errcode", "code")
    assert error_code(b'{"errcode": 0, "code": 19001}', keys) == 19001
    assert error_code(b'{"errcode": 310000, "code": 1}', keys) == 310000
    assert error_code(b'{"errcode": "1", "code": true}', keys) is None
    assert error_code(b'{"errcode": 0}', keys) is None
    for not_json in (b"ok", b"[1]", b"\xff"):
        assert error_code(not_json, keys) is None


def test_a_platform_posts_to_the_address_as_given_and_takes_2xx_by_default() -> None:
    p = Platform("plain", body=lambda text: {"text": text})
    assert (p.body("hi"), p.url("https://x/y"), p.ok(204, b""), p.ok(500, b"")) == (
        {"text": "hi"},
        "https://x/y",
        True,
        False,
    )
    assert p.sign is None and p.inbound is None
