"""WeCom (vllm_ledger/notify/platforms/wecom.py): the group bot's text body and its
``errcode`` rule; the webhook's ``key`` is its only secret, so nothing is signed."""

from __future__ import annotations

import pytest

from tests.unit.notify.platforms.hostile import TEXT
from vllm_ledger.notify.platforms import wecom

HOOK = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6"


def test_the_body_is_a_text_message_posted_as_is() -> None:
    assert wecom.WECOM.body("hi") == {"msgtype": "text", "text": {"content": "hi"}}
    assert wecom.WECOM.url(HOOK) == HOOK
    assert wecom.WECOM.sign is None and wecom.WECOM.inbound is None


@pytest.mark.parametrize(
    ("status", "answer", "accepted"),
    [
        (200, b'{"errcode":0,"errmsg":"ok"}', True),
        (200, b'{"errcode":93000,"errmsg":"invalid webhook url"}', False),
        (200, b'{"errcode":45009,"errmsg":"api freq out of limit"}', False),
        (200, b"\xff", True),  # not UTF-8: no verdict in it, the 2xx stands
        (404, b'{"errcode":0}', False),
    ],
)
def test_success_is_2xx_and_errcode_0(status: int, answer: bytes, accepted: bool) -> None:
    assert wecom.WECOM.ok(status, answer) is accepted


def test_mentions_and_links_from_an_alert_are_plain_text() -> None:
    # no mentioned_list or mentioned_mobile_list, a word joiner after @ <, in ](
    assert wecom.WECOM.body(TEXT) == {
        "msgtype": "text",
        "text": {
            "content": "FIRING: QueueBuildUp\n"
            'instance=gpu1:8000 ledger_instance=<\u2060at user_id="all">x<\u2060/at> '
            "model_name=<\u2060!channel> qwen severity=warning\n"
            "@\u2060all <\u2060@\u2060U0123ABC> <\u2060!subteam^S42> "
            "[docs]\u2060(https://e.example) "
            "<\u2060https://e.example|runbook> & <\u2060#C42>\n"
        },
    }
    assert wecom.WECOM.body("@all <@zhangsan>") == {
        "msgtype": "text",
        "text": {"content": "@\u2060all <\u2060@\u2060zhangsan>"},
    }
