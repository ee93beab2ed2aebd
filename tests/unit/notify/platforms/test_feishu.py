"""Feishu and Lark (vllm_ledger/notify/platforms/feishu.py): the custom bot's text body, the
``code`` rule on its answer, and the body signature against a value computed with openssl
from Feishu's documented formula (key ``timestamp + "\\n" + secret``, empty message)."""

from __future__ import annotations

import pytest

from tests.unit.notify.platforms.hostile import TEXT
from vllm_ledger.notify.platforms import feishu
from vllm_ledger.notify.platforms.base import Platform, Signed

HOOK = "https://open.feishu.cn/open-apis/bot/v2/hook/0f6e2c1a"
# K=$(printf '1764400000\nsec-feishu' | xxd -p | tr -d '\n')
# printf '' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K -binary | base64
SIGN = "pTGrZuKtjiBNPrSnbpfXKVJdGI0GixzyXJaj9XqD+fY="


@pytest.mark.parametrize("platform", [feishu.FEISHU, feishu.LARK])
def test_the_body_is_a_text_message(platform: Platform) -> None:
    assert platform.body("状态 ok") == {"msg_type": "text", "content": {"text": "状态 ok"}}
    assert platform.inbound is None
    assert platform.url(HOOK) == HOOK


@pytest.mark.parametrize("platform", [feishu.FEISHU, feishu.LARK])
def test_the_signature_goes_in_the_body_with_whole_seconds(platform: Platform) -> None:
    assert platform.sign is not None
    assert platform.sign(HOOK, "sec-feishu", 1_764_400_000.9) == Signed(
        HOOK, {"timestamp": "1764400000", "sign": SIGN}
    )
    assert platform.sign(HOOK, "sec-other", 1_764_400_000.9).fields["sign"] != SIGN


@pytest.mark.parametrize(
    ("status", "answer", "accepted"),
    [
        (200, b'{"code":0,"data":{},"msg":"success"}', True),
        (200, b'{"StatusCode":0,"StatusMessage":"success"}', True),
        (200, b'{"code":19021,"msg":"sign match fail or timestamp is not within one hour"}', False),
        (200, b'{"code":9499,"msg":"Bad Request"}', False),
        (200, b'{"StatusCode":19001}', False),
        (200, b'{"code":"19021"}', True),  # not an integer code: no verdict in it
        (200, b"ok", True),  # no JSON: the 2xx stands
        (200, b"[1]", True),
        (500, b'{"code":0}', False),
        (302, b"", False),
    ],
)
def test_success_is_2xx_and_no_code(status: int, answer: bytes, accepted: bool) -> None:
    assert feishu.FEISHU.ok(status, answer) is accepted
    assert feishu.LARK.ok(status, answer) is accepted


@pytest.mark.parametrize("platform", [feishu.FEISHU, feishu.LARK])
def test_mentions_and_links_from_an_alert_are_plain_text(platform: Platform) -> None:
    # a word joiner after < @ and in ](: no <at user_id="all">, <at id=all>, <a href> or [text](url)
    assert platform.body(TEXT) == {
        "msg_type": "text",
        "content": {
            "text": "FIRING: QueueBuildUp\n"
            'instance=gpu1:8000 ledger_instance=<\u2060at user_id="all">x<\u2060/at> '
            "model_name=<\u2060!channel> qwen severity=warning\n"
            "@\u2060all <\u2060@\u2060U0123ABC> <\u2060!subteam^S42> "
            "[docs]\u2060(https://e.example) "
            "<\u2060https://e.example|runbook> & <\u2060#C42>\n"
        },
    }
    assert platform.body('<at id=all></at><a href="https://e.example">x</a>') == {
        "msg_type": "text",
        "content": {
            "text": '<\u2060at id=all><\u2060/at><\u2060a href="https://e.example">x<\u2060/a>'
        },
    }
