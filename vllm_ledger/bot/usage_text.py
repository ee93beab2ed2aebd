"""The reply to "usage" and the daily (or weekly) digest: whose tokens over a window, per host,
in the bot's language. Pure.

Both are built from what each host answered to an ask (``formats/status_asked.py``):
validated numbers, our own words and names of a label's shape; every line passes the same
final filter as the status reply. A host that did not answer says how (``SSH unreachable``,
``timed out``, ...); a host whose version answers no ask says so. Nothing is guessed: a
figure that did not come is never 0.

- ``usage_text``: per host, the window's rows by the label asked (human-sized counts, as in
  the status reply), how many more, what is not attributed and the requests cut short, and the
  window's own figures and coverage.
- ``digest_text``: per host, the day's (or week's) exact tokens (``report --window`` of the
  same period), the cost at the price file's rates where one is configured, the top keys and
  adapters, what is not attributed, and the coverage with anything incomplete named; with
  several hosts, their sum.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vllm_ledger.bot.budget_text import host_instant, utc_offset
from vllm_ledger.bot.humanize import human_count, human_rate
from vllm_ledger.formats.status import StatusAsked, StatusDoc, StatusWindow
from vllm_ledger.formats.status_asked import Ask
from vllm_ledger.formats.status_keys import StatusKeys
from vllm_ledger.formats.table import aligned
from vllm_ledger.plan.cost import CloudPrices
from vllm_ledger.read.known import UNKNOWN_MARK
from vllm_ledger.units import format_duration


@dataclass(frozen=True)
class HostAnswer:
    """One host's answer to an ask: ``where`` is our own label of it (its node ports),
    ``state`` the poll's outcome (``bot/poll.py``'s ``STATES``), ``doc`` the parsed document."""

    where: str
    state: str
    doc: StatusDoc | None


@dataclass(frozen=True)
class Pricing:
    """The price file's chargeback rates per million tokens, and its currency label."""

    cloud: CloudPrices
    currency: str = ""


_ZH: dict[str, Any] = {
    "usage": "小鲁班 · 用量:按{by} · {window}",
    "digest": "小鲁班 · 日报",
    "digest-week": "小鲁班 · 周报",
    "by": {"key": "密钥", "adapter": "适配器", "user": "用户"},
    "windows": {"today": "今天", "7d": "7天", "this-month": "本月"},
    "none": "(无)",
    "more": "另 {n} 个未列出",
    "na": "未归属",
    "cut": "中断请求 {n}",
    "folded": "超出上限合并为 other 的名称 {n} 个",
    "cols": ("输入", "输出", "缓存", "请求"),
    "window": "窗口:输入 {i} · 输出 {o} · 命中率 {h} · 覆盖 {c}",
    "asof": "截至部署机时间 {t}",
    "day": "{d}(部署机时间 {z})",
    "week": "{a} 至 {b}(部署机时间 {z})",
    "tokens": "用量:输入 {i} · 输出 {o} · 缓存 {c} · 请求 {r}",
    "cost": "费用:{x}(按价格文件单价)",
    "top": "{by}前列(输入/输出):",
    "nothing": "无",
    "na.line": "未归属:输入 {i} · 输出 {o}",
    "complete": "覆盖:✓ 完整",
    "incomplete": "覆盖:不完整:",
    "gap": "未覆盖 {d}",
    "problems": "问题 {p}",
    "without": "未记录归属的文件 {n} 个",
    "bad": "坏文件 {n} 个",
    "all": "── 全部部署机 ──",
    "unknown": "另有 {n} 台部署机无记录,用量未知",
    "failed": {
        "unreachable": "无数据:SSH 不可达",
        "timeout": "无数据:查询超时",
        "unparseable": "无数据:结果无法解析",
        "remote_failed": "无数据:远端命令失败",
    },
    "old": "无数据:部署机的版本不回答此查询(升级其 vllm_ledger)",
    "units": ("秒", "分", "时", "天"),
    "list": "、",
    "semi": ";",
}

_EN: dict[str, Any] = {
    "usage": "Usage by {by} · {window}",
    "digest": "Daily digest",
    "digest-week": "Weekly digest",
    "by": {"key": "key", "adapter": "adapter", "user": "user"},
    "windows": {"today": "today", "7d": "7 days", "this-month": "this month"},
    "none": "(none)",
    "more": "{n} more not listed",
    "na": "not attributed",
    "cut": "requests cut: {n}",
    "folded": "names folded into other past the bound: {n}",
    "cols": ("input", "output", "cached", "requests"),
    "window": "window: input {i} · output {o} · hit {h} · cover {c}",
    "asof": "as of host time {t}",
    "day": "{d} (host time {z})",
    "week": "{a} to {b} (host time {z})",
    "tokens": "tokens: input {i} · output {o} · cached {c} · requests {r}",
    "cost": "cost: {x} (at the price file's rates)",
    "top": "top {by}s (input/output): ",
    "nothing": "none",
    "na.line": "not attributed: input {i} · output {o}",
    "complete": "coverage: ✓ complete",
    "incomplete": "coverage: incomplete: ",
    "gap": "{d} uncovered",
    "problems": "problems {p}",
    "without": "{n} file(s) without attribution",
    "bad": "{n} bad file(s)",
    "all": "── all hosts ──",
    "unknown": "{n} host(s) recorded nothing: their figures unknown",
    "failed": {
        "unreachable": "no figures: SSH unreachable",
        "timeout": "no figures: the query timed out",
        "unparseable": "no figures: the answer was unparseable",
        "remote_failed": "no figures: the command failed on the host",
    },
    "old": "no figures: the host's version does not answer this (upgrade its vllm_ledger)",
    "units": ("s", "m", "h", "d"),
    "list": ", ",
    "semi": "; ",
}

_WORDS = {"zh": _ZH, "en": _EN}


def _clean(text: str) -> str:
    """Drop control characters except newlines (defence in depth; none should be there)."""
    return "".join(c for c in text if c == "\n" or unicodedata.category(c)[0] != "C")


def _asked(h: HostAnswer, ask: Ask, w: dict[str, Any]) -> StatusAsked | str:
    """The host's answer to ``ask``, or the line saying why there is none."""
    if h.state != "ok" or h.doc is None:
        return str(w["failed"].get(h.state, w["failed"]["unparseable"]))
    got = h.doc.asked
    if got is None or got.ask.word != ask.word:
        return str(w["old"])
    return got


def _gaps(win: StatusWindow, doc: StatusDoc, files_without: int, w: dict[str, Any]) -> list[str]:
    """What makes the window incomplete, each named; [] when it is complete."""
    parts = []
    if win.uncovered_seconds:
        gap = format_duration(win.uncovered_seconds, "rounded", units=w["units"])
        parts.append(str(w["gap"]).format(d=gap))
    if win.problems:
        parts.append(str(w["problems"]).format(p=sum(n for _c, n in win.problems)))
    if files_without:
        parts.append(str(w["without"]).format(n=files_without))
    if doc.files_bad:
        parts.append(str(w["bad"]).format(n=doc.files_bad))
    if not parts and not win.complete:
        parts.append("!")
    return parts


def _cover(win: StatusWindow, doc: StatusDoc, files_without: int, w: dict[str, Any]) -> str:
    """``complete``, or what makes the window incomplete, each named."""
    gaps = _gaps(win, doc, files_without, w)
    return str(w["incomplete"]) + str(w["semi"]).join(gaps) if gaps else str(w["complete"])


# ---- usage -------------------------------------------------------------------------------


def _rows_table(keys: StatusKeys, w: dict[str, Any]) -> list[str]:
    rows: list[list[str]] = [["", *w["cols"]]]
    for r in keys.rows:
        rows.append(
            [
                r.key or str(w["none"]),
                human_count(r.input_tokens),
                human_count(r.output_tokens),
                human_count(r.cached_tokens),
                human_count(r.requests),
            ]
        )
    na_in, na_out = keys.not_attributed_input, keys.not_attributed_output
    rows.append([str(w["na"]), _signed(na_in), _signed(na_out), "", ""])
    lines = aligned(rows, right=range(1, 5))
    if keys.truncated:
        lines.append(str(w["more"]).format(n=keys.truncated))
    if keys.requests_aborted:
        lines.append(str(w["cut"]).format(n=keys.requests_aborted))
    if keys.folded:
        lines.append(str(w["folded"]).format(n=keys.folded))
    return lines


def _signed(n: int) -> str:
    return ("-" if n < 0 else "") + human_count(abs(n))


def usage_text(hosts: Sequence[HostAnswer], ask: Ask, lang: str = "zh") -> str:
    """The reply to ``usage BY WINDOW``: a block per host."""
    w = _WORDS[lang]
    by = ask.bys[0]
    lines = [str(w["usage"]).format(by=w["by"][by], window=w["windows"][ask.window])]
    for h in hosts:
        lines.append(f"── {h.where} ──")
        got = _asked(h, ask, w)
        if isinstance(got, str):
            lines.append(got)
            continue
        assert h.doc is not None
        doc, win = h.doc, got.window
        at = f"{host_instant(win.cutoff_ts, doc.tz_offset_seconds, seconds=True)}"
        lines.append(str(w["asof"]).format(t=f"{at} {utc_offset(doc.tz_offset_seconds)}"))
        rows = got.rows(by)
        if rows is not None:
            lines.extend(_rows_table(rows, w))
        unknown = win.known == "unknown"  # nothing recorded there: not 0 but unknown
        lines.append(
            str(w["window"]).format(
                i=UNKNOWN_MARK if unknown else human_count(win.input_tokens),
                o=UNKNOWN_MARK if unknown else human_count(win.output_tokens),
                h=human_rate(win.hit_rate),
                c=str(w["semi"]).join(_gaps(win, doc, got.files_without, w)) or "✓",
            )
        )
    return _clean("\n".join(lines) + "\n")


# ---- the digest ----------------------------------------------------------------------------


def _top(keys: StatusKeys | None, by: str, w: dict[str, Any]) -> str:
    head = str(w["top"]).format(by=w["by"][by])
    if keys is None or not keys.rows:
        return head + str(w["nothing"])
    named = [f"{r.key or w['none']} {r.input_tokens:,}/{r.output_tokens:,}" for r in keys.rows]
    text = head + str(w["list"]).join(named)
    if keys.truncated:
        text += str(w["semi"]) + str(w["more"]).format(n=keys.truncated)
    return text


def _period(got: StatusAsked, doc: StatusDoc, w: dict[str, Any]) -> str:
    off = doc.tz_offset_seconds
    zone = utc_offset(off)
    if got.ask.word == "digest":
        return str(w["day"]).format(d=host_instant(got.window.start_ts, off)[:5], z=zone)
    last_day = got.window.cutoff_ts - 1
    return str(w["week"]).format(
        a=host_instant(got.window.start_ts, off)[:5], b=host_instant(last_day, off)[:5], z=zone
    )


def _cost(windows: Sequence[StatusWindow], pricing: Pricing) -> str:
    """What the windows' tokens cost at the price file's rates, with its currency."""
    cloud = pricing.cloud
    x = sum(cloud.cost_of(a.input_tokens, a.output_tokens, a.cached_tokens) for a in windows)
    return f"{x:,.2f}" + (f" {pricing.currency}" if pricing.currency else "")


def _digest_block(
    got: StatusAsked, doc: StatusDoc, pricing: Pricing | None, w: dict[str, Any]
) -> list[str]:
    win = got.window
    lines = [_period(got, doc, w), _tokens_line([win], w)]
    if pricing is not None and win.known != "unknown":
        lines.append(str(w["cost"]).format(x=_cost([win], pricing)))
    keys = got.rows("key")
    lines += [_top(keys, "key", w), _top(got.rows("adapter"), "adapter", w)]
    if keys is not None:
        na = str(w["na.line"]).format(
            i=f"{keys.not_attributed_input:,}", o=f"{keys.not_attributed_output:,}"
        )
        if keys.requests_aborted:
            na += str(w["semi"]) + str(w["cut"]).format(n=keys.requests_aborted)
        lines.append(na)
    lines.append(_cover(win, doc, got.files_without, w))
    return lines


def digest_text(
    hosts: Sequence[HostAnswer], ask: Ask, lang: str = "zh", pricing: Pricing | None = None
) -> str:
    """The digest of ``ask`` (``digest`` or ``digest-week``): a block per host, and their sum
    when more than one host answered."""
    w = _WORDS[lang]
    lines = [str(w[ask.word])]
    answered: list[StatusWindow] = []
    for h in hosts:
        lines.append(f"── {h.where} ──")
        got = _asked(h, ask, w)
        if isinstance(got, str):
            lines.append(got)
            continue
        assert h.doc is not None
        lines += _digest_block(got, h.doc, pricing, w)
        answered.append(got.window)
    if len(answered) > 1:
        lines += [str(w["all"]), _tokens_line(answered, w)]
        known = [a for a in answered if a.known != "unknown"]
        if pricing is not None and known:
            lines.append(str(w["cost"]).format(x=_cost(known, pricing)))
    return _clean("\n".join(lines) + "\n")


_SUMMED = (("i", "input_tokens"), ("o", "output_tokens"), ("c", "cached_tokens"), ("r", "requests"))


def _tokens_line(windows: Sequence[StatusWindow], w: dict[str, Any]) -> str:
    """The windows' summed counts; ``?`` where every one is unknown (nothing recorded), and
    the hosts whose figures are unknown named as a count where only some are."""
    known = [a for a in windows if a.known != "unknown"]
    if not known:
        return str(w["tokens"]).format(**{k: UNKNOWN_MARK for k, _f in _SUMMED})
    line = str(w["tokens"]).format(
        **{k: f"{sum(getattr(a, f) for a in known):,}" for k, f in _SUMMED}
    )
    if len(known) < len(windows):
        line += str(w["semi"]) + str(w["unknown"]).format(n=len(windows) - len(known))
    return line


__all__ = ["HostAnswer", "Pricing", "digest_text", "usage_text"]
