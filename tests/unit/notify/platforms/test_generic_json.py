"""The generic JSON webhook (vllm_ledger/notify/platforms/generic_json.py): apprise's
``json://`` body, its ``json://`` / ``jsons://`` schemes, success on any 2xx."""

from __future__ import annotations

import pytest

from tests.unit.notify.platforms.hostile import TEXT
from vllm_ledger.notify.platforms import generic_json


def test_the_body_is_apprises_json_format() -> None:
    assert generic_json.JSON.body("hi") == {
        "version": "1.0",
        "title": "",
        "message": "hi",
        "attachments": [],
        "type": "info",
    }
    assert generic_json.JSON.name == "json"
    assert generic_json.JSON.sign is None and generic_json.JSON.inbound is None


@pytest.mark.parametrize(
    ("configured", "posted"),
    [
        ("json://host:8080/path?a=1", "http://host:8080/path?a=1"),
        ("jsons://host/path", "https://host/path"),
        ("JSON://host/p", "http://host/p"),
        ("https://host/hook?x=json://", "https://host/hook?x=json://"),
        ("http://host/hook", "http://host/hook"),
    ],
)
def test_apprises_schemes_are_taken_as_http(configured: str, posted: str) -> None:
    assert generic_json.JSON.url(configured) == posted


def test_success_is_any_2xx_whatever_the_answer() -> None:
    assert generic_json.JSON.ok(200, b'{"code": 1, "errcode": 1}')
    assert generic_json.JSON.ok(204, b"")
    assert not generic_json.JSON.ok(199, b"")
    assert not generic_json.JSON.ok(300, b"")
    assert not generic_json.JSON.ok(500, b"")


def test_links_from_an_alert_stay_text_and_at_is_left_alone() -> None:
    # nothing is a mention to a JSON receiver; a word joiner after < and in ]( keeps links
    assert generic_json.JSON.body(TEXT)["message"] == (
        "FIRING: QueueBuildUp\n"
        'instance=gpu1:8000 ledger_instance=<\u2060at user_id="all">x<\u2060/at> '
        "model_name=<\u2060!channel> qwen severity=warning\n"
        "@all <\u2060@U0123ABC> <\u2060!subteam^S42> [docs]\u2060(https://e.example) "
        "<\u2060https://e.example|runbook> & <\u2060#C42>\n"
    )
    # a "]" that is no link's middle is left alone (the status reply's refused entries)
    assert generic_json.JSON.body("refused by the config: usage[19099].target")["message"] == (
        "refused by the config: usage[19099].target"
    )
