"""bot/usage_text.py: the usage reply and the digest, exactly, in both languages, from parsed
documents only (the budget messages: test_budget_text.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.formats.test_status import GOOD
from vllm_ledger.bot.usage_text import HostAnswer, Pricing, digest_text, usage_text
from vllm_ledger.formats.status import StatusDoc, parse
from vllm_ledger.formats.status_asked import ASKS
from vllm_ledger.plan.cost import CloudPrices

DAY = 1_795_996_800  # 2026-11-30 00:00 UTC = 08:00 at +08:00


def _window(**change: Any) -> dict[str, Any]:
    return {
        "start": DAY - 8 * 3600, "cutoff": DAY + 16 * 3600, "input": 1_234_567, "output": 23_456,
        "cached": 100_000, "requests": 1_234, "hit_rate": 0.081, "avg_speed": 14.5,
        "gen_speed": 40.0, "uncovered_seconds": 0, "complete": True, "problems": {}, **change,
    }  # fmt: skip


def _rows(
    *rows: tuple[str, int, int], truncated: int = 0, na: tuple[int, int, int] = (0, 0, 0)
) -> dict[str, Any]:
    return {
        "rows": [
            {"key": k, "input": i, "output": o, "cached": 0, "requests": 1} for k, i, o in rows
        ],
        "truncated": truncated,
        "not_attributed": {"input": na[0], "output": na[1], "requests_aborted": na[2]},
        "folded": 0,
    }


def _doc(asked: dict[str, Any], **top: Any) -> StatusDoc:
    return parse(json.dumps({**GOOD, "cutoff": DAY + 20 * 3600, "asked": asked, **top}).encode())


DIGEST = {
    "ask": "digest",
    "window": _window(),
    "by": {
        "key": _rows(
            ("team-a", 1_000_000, 20_000), ("", 200_000, 3_000), truncated=3, na=(34_567, 456, 3)
        ),
        "adapter": _rows(("org/tiny", 1_200_000, 23_000)),
    },
    "files_without": 0,
}
PRICING = Pricing(CloudPrices(2.0, 8.0, 0.5), "CNY")


def test_the_digest_in_english_with_its_cost() -> None:
    doc = _doc(DIGEST)
    text = digest_text([HostAnswer(".12:19001", "ok", doc)], ASKS["digest"], "en", PRICING)
    cost = ((1_234_567 - 100_000) * 2.0 + 100_000 * 0.5 + 23_456 * 8.0) / 1e6
    assert text == (
        "Daily digest\n"
        "── .12:19001 ──\n"
        "11-30 (host time +08:00)\n"
        "tokens: input 1,234,567 · output 23,456 · cached 100,000 · requests 1,234\n"
        f"cost: {cost:,.2f} CNY (at the price file's rates)\n"
        "top keys (input/output): team-a 1,000,000/20,000, (none) 200,000/3,000; 3 more not "
        "listed\n"
        "top adapters (input/output): org/tiny 1,200,000/23,000\n"
        "not attributed: input 34,567 · output 456; requests cut: 3\n"
        "coverage: ✓ complete\n"
    )
    assert f"{cost:,.2f}" == "2.51"


def test_the_digest_in_chinese_incomplete_and_a_host_that_did_not_answer() -> None:
    incomplete = {
        **DIGEST,
        "window": _window(uncovered_seconds=7200, complete=False, problems={"heartbeat_stale": 3}),
        "files_without": 1,
    }
    hosts = [
        HostAnswer(":19001, :19002", "ok", _doc(incomplete, files_bad=2)),
        HostAnswer(".7:19003", "unreachable", None),
        HostAnswer(".8:19004", "ok", parse(json.dumps(GOOD).encode())),  # a host from before
    ]
    assert digest_text(hosts, ASKS["digest"], "zh") == (
        "小鲁班 · 日报\n"
        "── :19001, :19002 ──\n"
        "11-30(部署机时间 +08:00)\n"
        "用量:输入 1,234,567 · 输出 23,456 · 缓存 100,000 · 请求 1,234\n"
        "密钥前列(输入/输出):team-a 1,000,000/20,000、(无) 200,000/3,000;另 3 个未列出\n"
        "适配器前列(输入/输出):org/tiny 1,200,000/23,000\n"
        "未归属:输入 34,567 · 输出 456;中断请求 3\n"
        "覆盖:不完整:未覆盖 2时;问题 3;未记录归属的文件 1 个;坏文件 2 个\n"
        "── .7:19003 ──\n"
        "无数据:SSH 不可达\n"
        "── .8:19004 ──\n"
        "无数据:部署机的版本不回答此查询(升级其 vllm_ledger)\n"
    )


def test_the_weeks_digest_and_the_sum_of_several_hosts() -> None:
    week = {**DIGEST, "ask": "digest-week",
            "window": _window(start=DAY - 7 * 86400 - 8 * 3600, cutoff=DAY - 8 * 3600)}  # fmt: skip
    hosts = [HostAnswer(":19001", "ok", _doc(week)), HostAnswer(":19002", "ok", _doc(week))]
    lines = digest_text(hosts, ASKS["digest-week"], "en", PRICING).splitlines()
    assert lines[0] == "Weekly digest"
    assert lines[2] == "11-23 to 11-29 (host time +08:00)"
    assert lines[-3:] == [
        "── all hosts ──",
        "tokens: input 2,469,134 · output 46,912 · cached 200,000 · requests 2,468",
        "cost: 5.01 CNY (at the price file's rates)",
    ]


USAGE = {
    "ask": "usage:adapter:7d",
    "window": _window(uncovered_seconds=3600, complete=False),
    "by": {
        "adapter": _rows(("org/tiny", 1_200_000, 23_000), ("", 40, 9), truncated=2, na=(-5, 2, 1))
    },
    "files_without": 0,
}


@pytest.mark.parametrize(
    ("lang", "expected"),
    [
        (
            "en",
            "Usage by adapter · 7 days\n"
            "── :19001 ──\n"
            "as of host time 12-01 00:00:00 +08:00\n"
            "                input  output  cached  requests\n"
            "org/tiny         1.2M   23.0K       0         1\n"
            "(none)             40       9       0         1\n"
            "not attributed     -5       2\n"
            "2 more not listed\n"
            "requests cut: 1\n"
            "window: input 1.2M · output 23.5K · hit 8.1% · cover 1h uncovered\n"
            "── :19002 ──\n"
            "no figures: the query timed out\n",
        ),
        (
            "zh",
            "小鲁班 · 用量:按适配器 · 7天\n"
            "── :19001 ──\n"
            "截至部署机时间 12-01 00:00:00 +08:00\n"
            "          输入   输出  缓存  请求\n"
            "org/tiny  1.2M  23.0K     0     1\n"
            "(无)        40      9     0     1\n"
            "未归属      -5      2\n"
            "另 2 个未列出\n"
            "中断请求 1\n"
            "窗口:输入 1.2M · 输出 23.5K · 命中率 8.1% · 覆盖 未覆盖 1时\n"
            "── :19002 ──\n"
            "无数据:查询超时\n",
        ),
    ],
)
def test_the_usage_reply(lang: str, expected: str) -> None:
    hosts = [HostAnswer(":19001", "ok", _doc(USAGE)), HostAnswer(":19002", "timeout", None)]
    assert usage_text(hosts, ASKS["usage:adapter:7d"], lang) == expected


def test_an_answer_to_another_ask_is_not_taken_for_this_one() -> None:
    hosts = [HostAnswer(":19001", "ok", _doc(USAGE))]
    assert usage_text(hosts, ASKS["usage:key:today"], "en").splitlines()[2] == (
        "no figures: the host's version does not answer this (upgrade its vllm_ledger)"
    )


def test_a_window_where_nothing_was_recorded_is_unknown_never_zero() -> None:
    """A host whose digest day holds nothing recorded: its tokens are ``?`` and cost nothing is
    said; the sum of the hosts counts the others' and says how many are unknown."""
    nothing = {
        **DIGEST,
        "window": _window(
            input=0,
            output=0,
            cached=0,
            requests=0,
            hit_rate=None,
            avg_speed=None,
            gen_speed=None,
            uncovered_seconds=86400,
            complete=False,
            figures="unknown",
        ),
        "by": {"key": _rows(), "adapter": _rows()},
    }
    hosts = [HostAnswer(":19001", "ok", _doc(DIGEST)), HostAnswer(":19002", "ok", _doc(nothing))]
    lines = digest_text(hosts, ASKS["digest"], "en", PRICING).splitlines()
    block = lines[lines.index("── :19002 ──") + 1 :]
    assert block[1] == "tokens: input ? · output ? · cached ? · requests ?"
    assert not any(ln.startswith("cost:") for ln in block[: block.index("── all hosts ──")])
    assert lines[-2:] == [
        "tokens: input 1,234,567 · output 23,456 · cached 100,000 · requests 1,234; "
        "1 host(s) recorded nothing: their figures unknown",
        "cost: 2.51 CNY (at the price file's rates)",
    ]
    usage = {**nothing, "ask": "usage:key:today", "by": {"key": _rows()}}
    text = usage_text([HostAnswer(":19002", "ok", _doc(usage))], ASKS["usage:key:today"], "en")
    assert "window: input ? · output ? · hit - · cover" in text
