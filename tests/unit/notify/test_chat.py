"""notify/chat.py: "usage" in either language, its label and window in either order, stored as
its ask; anything else gets the help."""

from __future__ import annotations

import pytest

from vllm_ledger.notify.chat import help_text, parse_request


@pytest.mark.parametrize(
    ("text", "command", "lang"),
    [
        ("@bot usage", "usage:key:today", "en"),
        ("@bot usage adapter", "usage:adapter:today", "en"),
        ("@bot usage month", "usage:key:month", "en"),
        ("@bot usage 7d user", "usage:user:7d", "en"),
        ("@bot USAGE Users This-Month", "usage:user:month", "en"),
        ("@小鲁班 用量", "usage:key:today", "zh"),
        ("@小鲁班 用量 适配器 本月", "usage:adapter:month", "zh"),
        ("@小鲁班 用量 7天 用户", "usage:user:7d", "zh"),
        ("@bot usage key key", "help", "zh"),  # a label twice
        ("@bot usage today 7d", "help", "zh"),
        ("@bot usage tenant", "help", "zh"),  # not asked of the hosts
        ("@bot usage key today please", "help", "zh"),
    ],
)
def test_usage_words(text: str, command: str, lang: str) -> None:
    req = parse_request({"message_id": "m", "text": text}, "zh")
    assert (req.command, req.arg, req.lang) == (command, None, lang)


def test_the_help_names_usage() -> None:
    assert "@bot usage [key|adapter|user] [today|7d|month]" in help_text("en")
    assert "@小鲁班 用量 [密钥|适配器|用户] [今天|7天|本月]" in help_text("zh")
