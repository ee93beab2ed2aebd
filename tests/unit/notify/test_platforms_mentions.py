"""Mentions and links (docs/notifier.md): for every registered platform, the body built from any
text, markup of every platform mixed in, holds no active mention or link for that platform, and
still shows every character of the text: take away the word joiners (U+2060) the body adds
(and, for Slack, read its three entities back) and the text is what it was.

Hypothesis runs the project's "ci" profile (tests/conftest.py: fixed seed, 200 examples);
``make fuzz``'s profile runs more.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_ledger.notify import platforms
from vllm_ledger.notify.alerts import parse_alerts

WJ = "\u2060"
FRAGMENTS = [
    # Slack
    "<!channel>",
    "<!here>",
    "<!everyone>",
    "<!subteam^S0123|@ops>",
    "<@U0123ABC>",
    "<#C0123|general>",
    "<https://e.example|click>",
    "<https://e.example>",
    "<!date^1392734382^{date}|x>",
    # Feishu / Lark
    '<at user_id="all">所有人</at>',
    '<at user_id="ou_5ad573a6">x</at>',
    "<at id=all></at>",
    "<at email=a@b.example></at>",
    '<a href="https://e.example">x</a>',
    # DingTalk, WeCom
    "@all",
    "@所有人",
    "@13800000000",
    "<@zhangsan>",
    # no markup: left as written
    "<0.01",
    "< 5",
    "a @ b",
    # plain-text mentions elsewhere, markdown links
    "@here",
    "@channel",
    "@everyone",
    "[docs](https://e.example)",
    "[a][b]",
    # the characters themselves, entities, the joiner itself
    "&",
    "&lt;",
    "&amp;",
    "<",
    ">",
    "]",
    "(",
    "[",
    "usage[19001].target",
    "@",
    WJ,
    "\n",
]
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=12).map(
    "".join
)


def _message(name: str, body: dict[str, Any]) -> str:
    if name in ("feishu", "lark"):
        assert set(body) == {"msg_type", "content"} and set(body["content"]) == {"text"}
        return str(body["content"]["text"])
    if name in ("dingtalk", "wecom"):
        # no "at" (DingTalk: isAtAll false, no atMobiles/atUserIds), no mentioned_list or
        # mentioned_mobile_list (WeCom): nothing can ping from outside the text
        assert set(body) == {"msgtype", "text"} and set(body["text"]) == {"content"}
        return str(body["text"]["content"])
    if name == "slack":
        assert set(body) == {"text"}
        return str(body["text"])
    assert name == "json"
    return str(body["message"])


_SLACK_ENTITY = re.compile(r"&(amp|lt|gt);")


def _no_markdown_link(t: str) -> None:
    assert not re.search(r"\][(\[]", t), t


# where markup could open: "<" before a tag's (or Slack's <!x>, <@U>, <#C>) first character,
# "@" before a word (a name, a number, 所有人); "<0.01", "a @ b" and a lone "@" open nothing
OPEN_TAG = "<(?=[A-Za-z!?/@#])"
OPEN_AT = r"@(?=\w)"


def _no_tag(t: str) -> None:
    assert not re.search(OPEN_TAG, t), t


def _no_at(t: str) -> None:
    assert not re.search(OPEN_AT, t), t


def _slack(t: str) -> str:
    assert "<" not in t and ">" not in t, t  # no <!channel>, <@U…>, <#C…>, <url|text> at all
    assert all(_SLACK_ENTITY.match(t, m.start()) for m in re.finditer("&", t)), t
    _no_at(t)
    _no_markdown_link(t)
    return _SLACK_ENTITY.sub(lambda m: {"amp": "&", "lt": "<", "gt": ">"}[m[1]], t)


def _chat(t: str) -> str:
    _no_tag(t)  # no <at user_id="all">, <at id=all>, <a href>, <@userid>
    _no_at(t)  # no @all, @所有人
    _no_markdown_link(t)
    return t


def _json(t: str) -> str:
    _no_tag(t)
    _no_markdown_link(t)
    return t


# each platform: its inactive-markup check, giving back the text as a person reads it, and the
# places where the body adds a word joiner (besides the middle of a markdown link)
CHECKS: dict[str, tuple[Callable[[str], str], tuple[str, ...]]] = {
    "feishu": (_chat, (OPEN_TAG, OPEN_AT)),
    "lark": (_chat, (OPEN_TAG, OPEN_AT)),
    "dingtalk": (_chat, (OPEN_TAG, OPEN_AT)),
    "wecom": (_chat, (OPEN_TAG, OPEN_AT)),
    "slack": (_slack, (OPEN_AT,)),
    "json": (_json, (OPEN_TAG,)),
}


def test_every_registered_platform_is_checked() -> None:
    assert set(CHECKS) == set(platforms.names())


def _check(name: str, text: str) -> None:
    check, joined_after = CHECKS[name]
    shown = check(_message(name, platforms.get(name).body(text)))
    # every character still there, in order, readable: only word joiners were added, one
    # where a character could open markup (nowhere else) and one in each ]( or ][
    assert shown.replace(WJ, "") == text.replace(WJ, "")
    links = len(re.findall(r"\][(\[]", text))
    opened = sum(len(re.findall(opens, text)) for opens in joined_after)
    assert shown.count(WJ) == text.count(WJ) + opened + links


def _check_all(text: str) -> None:
    for name in platforms.names():
        try:
            _check(name, text)
        except AssertionError as exc:
            raise AssertionError(f"on {name}: {exc}") from exc


# Each example is checked on every platform: one text drawn, six bodies built from it (drawing
# the texts is most of the cost).
@given(text=texts)
def test_no_text_mentions_or_links_on_any_platform(text: str) -> None:
    _check_all(text)


@given(label=texts, summary=texts)
def test_no_alert_label_or_summary_mentions_or_links(label: str, summary: str) -> None:
    alert = {
        "status": "firing",
        "fingerprint": "0f1e",
        "startsAt": "2026-11-30T10:00:00Z",
        "labels": {"alertname": label, "model_name": label, "ledger_instance": summary},
        "annotations": {"summary": summary},
    }
    for lang in ("zh", "en"):
        (parsed,) = parse_alerts({"version": "4", "alerts": [alert]}, lang)
        _check_all(parsed.text)


@pytest.mark.parametrize("name", platforms.names())
def test_text_that_opens_no_markup_gets_no_joiner(name: str) -> None:
    """A figure's ``<0.01``, ``< 5`` or ``a @ b`` mentions and links nothing anywhere: the body
    carries it as written, no invisible character in it (Slack still writes ``<`` as ``&lt;``)."""
    text = "cost <0.01 USD, p99 < 5 s, a @ b, 2 > 1"
    check, _ = CHECKS[name]
    shown = check(_message(name, platforms.get(name).body(text)))
    assert WJ not in _message(name, platforms.get(name).body(text))
    assert shown == text
