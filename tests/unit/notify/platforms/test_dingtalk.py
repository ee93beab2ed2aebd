"""DingTalk (vllm_ledger/notify/platforms/dingtalk.py): the custom robot's text body, the
``errcode`` rule, the query signature, and the outgoing robot's requests (sign checked within
an hour, body to command). Signatures are values computed with openssl from DingTalk's
documented formula: base64(HMAC-SHA256(secret, timestamp_ms + "\\n" + secret))."""

from __future__ import annotations

import pytest

from tests.unit.notify.platforms.hostile import TEXT
from vllm_ledger.notify.platforms import dingtalk

SECRET = "SECabc"
NOW = 1_764_400_000.5
# printf '1764400000500\nSECabc' | openssl dgst -sha256 -hmac SECabc -binary | base64
SIGN = "SKLxHE5F0fcZ8ld3L2yx+5FW7s22h04RWXJbQrCwx3w="
SIGN_URLENCODED = "SKLxHE5F0fcZ8ld3L2yx%2B5FW7s22h04RWXJbQrCwx3w%3D"
# printf '1764396500500\nSECabc' | openssl dgst -sha256 -hmac SECabc -binary | base64
SIGN_3500_S_AGO = "8iP1mICt79S3bFN/YmruiD/8vCdJaldnuVhLu2ZdJpo="
HOOK = "https://oapi.dingtalk.com/robot/send?access_token=t0k"


def test_the_body_is_a_text_message() -> None:
    assert dingtalk.DINGTALK.body("hi") == {"msgtype": "text", "text": {"content": "hi"}}
    assert dingtalk.DINGTALK.url(HOOK) == HOOK


def test_the_signature_goes_in_the_query_in_milliseconds() -> None:
    sign = dingtalk.DINGTALK.sign
    assert sign is not None
    signed = sign(HOOK, SECRET, NOW)
    assert signed.url == f"{HOOK}&timestamp=1764400000500&sign={SIGN_URLENCODED}"
    assert dict(signed.fields) == {}
    bare = sign("https://oapi.dingtalk.com/robot/send", SECRET, NOW)
    assert bare.url.endswith(f"/robot/send?timestamp=1764400000500&sign={SIGN_URLENCODED}")
    assert dingtalk.signature(SECRET.encode(), "1764400000500") == SIGN


@pytest.mark.parametrize(
    ("status", "answer", "accepted"),
    [
        (200, b'{"errcode":0,"errmsg":"ok"}', True),
        (200, b'{"errcode":310000,"errmsg":"sign not match"}', False),
        (200, b'{"errcode":130101,"errmsg":"send too fast"}', False),
        (200, b"", True),
        (500, b'{"errcode":0}', False),
    ],
)
def test_success_is_2xx_and_errcode_0(status: int, answer: bytes, accepted: bool) -> None:
    assert dingtalk.DINGTALK.ok(status, answer) is accepted


def _verify(headers: dict[str, str], secret: bytes = SECRET.encode()) -> str:
    inbound = dingtalk.DINGTALK.inbound
    assert inbound is not None
    return inbound.verify(headers, b'{"any": "body"}', secret, NOW)


def test_the_outgoing_robot_is_checked_by_its_sign_within_an_hour() -> None:
    assert _verify({"timestamp": "1764400000500", "sign": SIGN}) == "ok"
    assert _verify({"timestamp": "1764396500500", "sign": SIGN_3500_S_AGO}) == "ok"
    assert _verify({"timestamp": "1764400000500", "sign": SIGN}, b"SECother") == "bad_signature"
    assert _verify({"timestamp": "1764400000501", "sign": SIGN}) == "bad_signature"
    assert _verify({"timestamp": "1764400000500"}) == "bad_signature"
    assert _verify({"timestamp": "1764396400499", "sign": SIGN}) == "old_timestamp"
    assert _verify({"timestamp": "1764403600501", "sign": SIGN}) == "old_timestamp"
    assert _verify({"timestamp": "1764400000.5", "sign": SIGN}) == "bad_timestamp"
    assert _verify({"sign": SIGN}) == "bad_timestamp"


def test_the_outgoing_robot_body_becomes_a_command() -> None:
    inbound = dingtalk.DINGTALK.inbound
    assert inbound is not None
    assert (inbound.route, inbound.secret_file, inbound.body_name) == (
        "/dingtalk/command",
        "dingtalk_app_secret_file",
        "message",
    )
    doc = {
        "msgtype": "text",
        "msgId": "msgABC123==",
        "conversationId": "cid1",
        "senderNick": "someone",
        "text": {"content": " 状态"},
    }
    assert inbound.parse(doc) == {"message_id": "dingtalk:msgABC123==", "text": " 状态"}
    for bad in ({}, {"msgId": "m", "text": "status"}, {**doc, "conversationId": 7}, [doc]):
        with pytest.raises(ValueError):
            inbound.parse(bad)


def test_mentions_and_links_from_an_alert_are_plain_text() -> None:
    # no "at" object (isAtAll false, no atMobiles or atUserIds), a word joiner after @ <, in ](
    assert dingtalk.DINGTALK.body(TEXT) == {
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
    assert dingtalk.DINGTALK.body("@所有人 @13800000000") == {
        "msgtype": "text",
        "text": {"content": "@\u2060所有人 @\u206013800000000"},
    }
