"""The reply to "status": exact text, hostile remote output never reaching it, staleness, clock."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from tests.ledgers import ev, write_ledger
from tests.unit.formats.test_status import GOOD, GOOD_ROWS
from vllm_ledger.bot.capped import CappedRun
from vllm_ledger.bot.health import Health, probe
from vllm_ledger.bot.message import InstanceView, render_message
from vllm_ledger.bot.poll import CacheEntry, Poller, PollResult, classify
from vllm_ledger.bot.validate import Target
from vllm_ledger.formats.status_render import render as status_render
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.ports import port_rows
from vllm_ledger.read.report import build_report


def _doc(**total: object) -> bytes:
    doc = json.loads(json.dumps(GOOD))
    doc["windows"]["total"].update(total)
    return json.dumps(doc).encode()


BIG_TOTAL = {
    "input": 123456789,
    "output": 2345678,
    "cached": 100000000,
    "hit_rate": 0.81,
    "avg_speed": 12.34,
    "gen_speed": 45.6,
    "complete": False,
    "uncovered_seconds": 7200,
    "problems": {"unclean_exit": 1},
}


def _result(
    port: int,
    data: bytes,
    *,
    offset_s: float = 0.0,
    received_mono: float = 100.0,
    rtt_s: float = 0.4,
    ended: str = "exit",
    code: int | None = 0,
) -> PollResult:
    state, doc = classify(CappedRun(ended, code, data))
    remote_clock = 1795943918.5
    sent = remote_clock - offset_s - rtt_s  # offset_s: against the receive time
    return PollResult(port, state, doc, sent, sent + rtt_s, received_mono, rtt_s)


def _view(
    port: int, result: PollResult | None, health: str = "healthy", host: str | None = "10.0.0.12"
) -> InstanceView:
    entry = None
    if result is not None:
        entry = CacheEntry(result, result if result.state == "ok" else None)
    code = 200 if health == "healthy" else (503 if health == "unhealthy" else None)
    return InstanceView(port, host, Health(port, health, code), entry)


EXPECTED_ZH = """\
小鲁班 · 状态
部署 2 个:健康 1,无响应 1
── .12:19001 ──
vLLM 健康 · 统计 正常
12秒前 · 截至部署机时间 11-29 17:18:38 +08:00
以下为整个数据目录的合计:部署机的版本未按端口细分
窗口    输入  输出  缓存  命中率  均速/s  生成/s  覆盖
今天      10     5     4   40.0%     0.1       -  ✓
24小时    10     5     4   40.0%     0.1       -  ✓
3天       10     5     4   40.0%     0.1       -  ✓
7天       10     5     4   40.0%     0.1       -  ✓
累计    123M  2.3M  100M   81.0%    12.3    45.6  缺2时
记录器:运行 1
问题(累计):异常退出 1
── .13:19002 ──
vLLM 无响应 · 统计 查询超时
无可用数据 · 五个窗口:未知(不是 0)
覆盖:✓ 完整;缺N 未覆盖时长;! 有问题;? 未知(无记录)
注:统计故障不等同于 vLLM 故障。
"""


def test_the_zh_reply_exactly() -> None:
    ok = _result(19001, _doc(**BIG_TOTAL))
    timeout = _result(19002, b"", ended="timeout", code=None)
    views = [_view(19002, timeout, "down", "10.0.0.13"), _view(19001, ok)]
    assert render_message(views, now_monotonic=112.0) == EXPECTED_ZH


def test_the_en_reply_and_a_ledger_fault_is_not_a_vllm_fault() -> None:
    ok = _result(19001, _doc(**BIG_TOTAL))
    timeout = _result(19002, b"", ended="timeout", code=None)
    text = render_message(
        [_view(19001, ok), _view(19002, timeout, host="10.0.0.13")], now_monotonic=112.0, lang="en"
    )
    lines = text.splitlines()
    assert lines[:4] == [
        "Status",
        "deployments 2: healthy 2",
        "── .12:19001 ──",
        "vLLM healthy · ledger ok",
    ]
    assert "total    123M    2.3M    100M  81.0%   12.3   45.6  gap 2h" in lines
    assert "vLLM healthy · ledger query timed out (a ledger fault, not a vLLM fault)" in lines
    assert lines[-1] == "note: a ledger fault is not a vLLM fault."


def test_vllm_down_with_a_sound_ledger_is_no_ledger_fault() -> None:
    doc = json.loads(_doc())
    doc["writers"] = {"alive": 0, "closed": 1, "stale": 0, "crashed": 0, "missing": 0}
    r = _result(19001, json.dumps(doc).encode())
    text = render_message([_view(19001, r, "down")], now_monotonic=101.0, lang="en")
    assert "vLLM not responding · ledger: no live writer\n" in text
    assert "not a vLLM fault" not in text
    doc["writers"]["stale"] = 1
    r = _result(19001, json.dumps(doc).encode())
    text = render_message([_view(19001, r, "unhealthy")], now_monotonic=101.0, lang="en")
    assert "vLLM unhealthy (HTTP 503) · ledger has problems\n" in text


HOSTILE = {
    "nul": _doc().replace(b'"runs": 1', b'"runs": 1, "x": "\x00\x00"'),
    "osc": b"\x1b]0;PWNED\x07" + _doc(),
    "osc_in_key": _doc().replace(b'"runs"', b'"\x1b]8;;http://evil\x07runs"'),
    "inf": _doc().replace(b'"input": 10', b'"input": 1e309', 1),
    "nan": _doc().replace(b'"hit_rate": 0.4', b'"hit_rate": NaN', 1),
    "negative": _doc(input=-5),
    "huge": _doc(input=2**80, cached=0),
    "utf8": _doc().replace(b'"runs": 1', b'"runs": 1, "x": "\xff\xfe\xc3("'),
    "extra_problem": _doc(problems={"EVIL_CODE": 1}),
    "float_count": _doc(input=1.5e3),
    "text": b'Traceback (most recent call last):\n  File "/srv/secret.py"\nPWNED\n',
    "1GB_head": b"y\n" * 32768,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_remote_output_never_reaches_the_message(name: str) -> None:
    r = _result(19001, HOSTILE[name])
    assert r.state == "unparseable" and r.status is None
    for lang in ("zh", "en"):
        text = render_message([_view(19001, r)], now_monotonic=101.0, lang=lang)
        assert all(c == "\n" or unicodedata.category(c)[0] != "C" for c in text)
        for bad in (
            "PWNED",
            "EVIL",
            "evil",
            "secret",
            "Traceback",
            "1e309",
            "NaN",
            "-5",
            str(2**80),
            "1500",
            "\ufffd",
        ):
            assert bad not in text, (name, bad)
        assert ("统计 结果无法解析" if lang == "zh" else "ledger answer unparseable") in text
        assert ("未知(不是 0)" if lang == "zh" else "unknown (not 0)") in text


def test_extra_top_level_keys_are_dropped_not_shown() -> None:
    data = _doc().replace(
        b'"runs": 1', b'"runs": 1, "note": "PWNED \x1b[31m"'.replace(b"\x1b", b"\\u001b")
    )
    r = _result(19001, data)
    assert r.state == "ok"
    text = render_message([_view(19001, r)], now_monotonic=101.0)
    assert "PWNED" not in text and "\x1b" not in text


def test_stale_after_90_seconds_of_local_time() -> None:
    r = _result(19001, _doc(), received_mono=100.0)
    fresh = render_message([_view(19001, r)], now_monotonic=190.0, lang="en")
    stale = render_message([_view(19001, r)], now_monotonic=190.5, lang="en")
    assert "1m ago · as of host time" in fresh and "STALE" not in fresh
    assert "STALE, 1m ago · as of host time" in stale


def test_old_figures_stay_with_their_age_when_the_latest_poll_failed() -> None:
    ok = _result(19001, _doc(), received_mono=100.0)
    failed = _result(19001, b"", ended="exit", code=255)
    assert failed.state == "unreachable"
    view = InstanceView(19001, None, Health(19001, "healthy", 200), CacheEntry(failed, ok))
    text = render_message([view], now_monotonic=400.0)
    assert "── :19001 ──" in text
    assert "统计 查询失败:SSH 不可达(统计故障,不是 vLLM 故障)" in text
    assert "数据已过期,5分前" in text and "今天      10" in text


def test_clock_offset_hint_only_beyond_5_seconds() -> None:
    cases = ((30.0, True), (-30.0, True), (4.5, False), (-5.5, False), (5.01, True))
    for offset, hinted in cases:
        r = _result(19001, _doc(), offset_s=offset, rtt_s=1.0)
        assert r.clock_offset_s == pytest.approx(offset)
        assert r.clock_hint is hinted
        text = render_message([_view(19001, r)], now_monotonic=100.0)
        assert ("提示:部署机时钟" in text) is hinted
    r = _result(19001, _doc(), offset_s=-30.0)
    text = render_message([_view(19001, r)], now_monotonic=100.0, lang="en")
    assert "hint: host clock is about 30 s behind this machine" in text
    # freshness is the local receive time, whatever the remote clock says
    assert "0s ago" in text and "STALE" not in text


def test_poller_cache_keeps_the_last_good_figures() -> None:
    t = Target(19001, "h", "/c", "/d")
    results = iter(
        [
            _result(19001, _doc(), received_mono=1.0),
            _result(19001, b"", ended="timeout", code=None, received_mono=2.0),
        ]
    )
    poller = Poller([t], lambda _t: next(results))
    poller.poll_once()
    poller.poll_once()
    entry = poller.cache()[19001]
    assert entry.latest.state == "timeout"
    assert entry.last_ok is not None and entry.last_ok.received_monotonic == 1.0
    assert entry.age_s(31.0) == 30.0 and not entry.stale(91.0) and entry.stale(91.5)


def test_only_the_last_part_of_an_ip_is_shown() -> None:
    text = render_message([_view(19001, None, host="192.168.31.207")], now_monotonic=0.0)
    assert "── .207:19001 ──" in text and "192.168" not in text and "31" not in text
    assert "统计 尚未查询" in text


def test_health_probe_of_a_closed_port_is_down() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert probe("127.0.0.1", port, timeout_s=2.0) == Health(port, "down")


def test_health_probe_reads_only_the_status_code() -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class H(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(b"\x1b]0;PWNED\x07" * 1000)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), H)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        port = server.server_address[1]
        assert probe("127.0.0.1", port) == Health(port, "healthy", 200)
        assert probe("127.0.0.1", port, path="/nope") == Health(port, "unhealthy", 404)
    finally:
        server.shutdown()
        server.server_close()


def test_exit_codes_are_classified() -> None:
    assert classify(CappedRun("exit", 255, b""))[0] == "unreachable"
    assert classify(CappedRun("exit", 2, b"vllm-ledger: error: ledger root"))[0] == "remote_failed"
    assert classify(CappedRun("exit", 0, b"{}"))[0] == "unparseable"
    assert classify(CappedRun("overflow", None, b"{"))[0] == "unparseable"
    assert classify(CappedRun("timeout", None, b""))[0] == "timeout"


def test_background_polling_never_waits_for_a_hung_host() -> None:
    import threading

    release = threading.Event()
    fast_done = threading.Event()
    hung, fast = Target(19001, "hung", "/c", "/d"), Target(19002, "fast", "/c", "/d")

    def fetch(t: Target) -> PollResult:
        if t is hung:
            release.wait(60)
            return _result(t.port, b"", ended="timeout", code=None)
        fast_done.set()
        return _result(t.port, _doc())

    poller = Poller([hung, fast], fetch, interval_s=3600)
    poller.start()  # returns at once: the caller (health observation) is never blocked
    try:
        assert fast_done.wait(60)
        for _ in range(600):  # the fast host lands in the cache while the hung one is running
            if 19002 in poller.cache():
                break
            release.wait(0.05)
        cache = poller.cache()
        assert cache[19002].latest.state == "ok" and 19001 not in cache
        assert poller.rounds_total == 0
    finally:
        release.set()
        poller.stop(timeout_s=60)
    assert poller.cache()[19001].latest.state == "timeout"
    assert poller.rounds_total == 1


def test_a_missing_ssh_is_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_ledger.bot import poll, ssh_command
    from vllm_ledger.errors import RemoteError

    monkeypatch.setattr(ssh_command, "SSH", "/nonexistent/ssh")
    with pytest.raises(RemoteError, match="is not installed here: install openssh-client"):
        poll.Fetcher()(Target(19001, "h", "/c", "/d"))


# ---- two instances sharing one data dir ------------------------------------------------------

AT = 1_800_000_000  # 2027-01-15 16:00:00 in Asia/Shanghai


def _shared_root_doc(root: Path) -> bytes:
    """The real status document of one data dir shared by two instances: 19001 (model qwen,
    a writer still alive at AT) and 19002 (model llama, closed), written by the Recorder."""
    write_ledger(
        root,
        "run-19001",
        start_ts=AT - 3 * 3600,
        end_ts=AT - 5,
        events=[
            ev(AT - 7200, prompt=120_000, gen=3_400, cached=90_000, finished=[(3_400, 40.0)]),
            ev(AT - 600, prompt=5_000, gen=250, cached=1_000, finished=[(250, 5.0)]),
        ],
        port=19001,
        model="qwen",
        clean=False,  # its last heartbeat 5 s before AT: alive
    )
    write_ledger(
        root,
        "run-19002",
        start_ts=AT - 2 * 3600,
        end_ts=AT - 3600,
        events=[ev(AT - 5400, prompt=700, gen=70, cached=0, finished=[(70, 7.0)])],
        port=19002,
        model="llama",
    )
    with LedgerSet.read([root], clock=lambda: AT + 0.5) as ls:
        report = build_report(ls)
        return status_render(report, port_rows(ls, report)).encode()


def _shared_result(port: int, data: bytes) -> PollResult:
    state, doc = classify(CappedRun("exit", 0, data))
    assert state == "ok" and doc is not None
    return PollResult(port, state, doc, AT + 0.1, AT + 0.6, 100.0, 0.5)


EXPECTED_SHARED_ZH = """\
小鲁班 · 状态
部署 2 个:健康 2
── .12:19001 ──
vLLM 健康 · 统计 正常
2秒前 · 截至部署机时间 01-15 15:59:54 +08:00
窗口    输入  输出   缓存  命中率  均速/s  生成/s  覆盖
今天    125K  3.6K  91.0K   72.8%     0.1    81.1  缺13时
24小时  125K  3.6K  91.0K   72.8%    0.04    81.1  缺21时
3天     125K  3.6K  91.0K   72.8%    0.01    81.1  缺2天
7天     125K  3.6K  91.0K   72.8%    0.01    81.1  缺6天
累计    125K  3.6K  91.0K   72.8%     0.3    81.1  ✓
记录器:运行 1
── .13:19002 ──
vLLM 健康 · 统计 无运行中的记录器(统计故障,不是 vLLM 故障)
2秒前 · 截至部署机时间 01-15 15:59:54 +08:00
窗口    输入  输出  缓存  命中率  均速/s  生成/s  覆盖
今天     700    70     0    0.0%   <0.01     9.9  缺14时
24小时   700    70     0    0.0%   <0.01     9.9  缺23时
3天      700    70     0    0.0%   <0.01     9.9  缺2天
7天      700    70     0    0.0%   <0.01     9.9  缺6天
累计     700    70     0    0.0%    0.01     9.9  缺59分
记录器:已关闭 1
覆盖:✓ 完整;缺N 未覆盖时长;! 有问题;? 未知(无记录)
注:统计故障不等同于 vLLM 故障。
"""


def test_two_instances_sharing_a_data_dir_each_show_their_own_figures(tmp_path: Path) -> None:
    data = _shared_root_doc(tmp_path)  # one forced command, one document, for both ports
    views = [
        _view(19002, _shared_result(19002, data), host="10.0.0.13"),
        _view(19001, _shared_result(19001, data)),
    ]
    text = render_message(views, now_monotonic=102.0)
    assert text == EXPECTED_SHARED_ZH
    doc = classify(CappedRun("exit", 0, data))[1]
    assert doc is not None and doc.window("total").input_tokens == 125_700
    # The exact figures behind each line: 125,000 / 3,650 / 91,000 and 700 / 70 / 0.
    for port, figures in ((19001, (125_000, 3_650, 91_000)), (19002, (700, 70, 0))):
        row = doc.instance(port)
        assert row is not None
        total = row.window("total")
        assert (total.input_tokens, total.output_tokens, total.cached_tokens) == figures


def test_no_row_for_the_node_port_shows_the_whole_data_dir_and_says_so(tmp_path: Path) -> None:
    data = _shared_root_doc(tmp_path)
    view = _view(19003, _shared_result(19003, data))
    zh = render_message([view], now_monotonic=102.0).splitlines()
    assert "以下为整个数据目录的合计:其中没有端口 19003 的实例" in zh
    assert any(line.startswith("累计") and "126K" in line for line in zh)  # 125,700
    en = render_message([view], now_monotonic=102.0, lang="en").splitlines()
    assert "figures for the whole data dir: it holds no instance on port 19003" in en
    old = render_message([_view(19001, _result(19001, _doc()))], now_monotonic=112.0, lang="en")
    assert (
        "figures for the whole data dir: the host's version does not break them down by port" in old
    )


def test_a_truncated_row_list_is_named_when_the_port_is_missing() -> None:
    doc = json.loads(json.dumps(GOOD_ROWS))
    doc["instances_truncated"] = 5
    view = _view(19009, _result(19009, json.dumps(doc).encode()))
    zh = render_message([view], now_monotonic=112.0)
    assert "以下为整个数据目录的合计:其中没有端口 19009 的实例(实例过多,只列出 2 个)" in zh
    en = render_message([view], now_monotonic=112.0, lang="en")
    assert "no instance on port 19009 (too many instances: 2 listed)" in en


def test_a_hostile_row_list_is_unparseable_never_shown() -> None:
    doc = json.loads(json.dumps(GOOD_ROWS))
    doc["instances"] = [doc["instances"][0]] * 17
    bad = _result(19001, json.dumps(doc).encode())
    assert bad.state == "unparseable" and bad.status is None
    text = render_message([_view(19001, bad)], now_monotonic=112.0, lang="en")
    assert "ledger answer unparseable" in text and "five windows: unknown (not 0)" in text


# ---- today's top keys ------------------------------------------------------------------------

KEYS_TODAY = {
    "rows": [
        {"key": "team-a", "input": 1_234_567, "output": 30_000, "cached": 64, "requests": 9},
        {"key": "key:1a2b3c4d", "input": 40, "output": 9, "cached": 0, "requests": 1},
        {"key": "", "input": 33, "output": 11, "cached": 0, "requests": 1},
    ],
    "truncated": 2,
    "not_attributed": {"input": -25, "output": 3, "requests_aborted": 1},
    "folded": 0,
}


def _keys_doc(base: dict[str, object] = GOOD, **keys: object) -> bytes:
    return json.dumps({**base, "keys_today": {**KEYS_TODAY, **keys}}).encode()


def test_todays_top_keys_are_one_line_in_both_languages() -> None:
    r = _result(19001, _keys_doc())
    zh = render_message([_view(19001, r)], now_monotonic=101.0).splitlines()
    assert zh[-2] == (
        "今日密钥用量(输入/输出):team-a 1.2M/30.0K、key:1a2b3c4d 40/9、(无密钥) 33/11;"
        "另 2 个;未归属 -25/3(中断请求 1)"
    )
    en = render_message([_view(19001, r)], now_monotonic=101.0, lang="en").splitlines()
    assert en[-2] == (
        "keys today (input/output): team-a 1.2M/30.0K, key:1a2b3c4d 40/9, (no key) 33/11; "
        "2 more; not attributed -25/3 (requests cut: 1)"
    )
    # A port row's block says the keys are the whole data dir's when it holds several ports.
    rows = _result(19001, _keys_doc(GOOD_ROWS, truncated=0))
    en = render_message([_view(19001, rows)], now_monotonic=101.0, lang="en").splitlines()
    assert en[-2].startswith("keys today (input/output) (whole data dir): team-a 1.2M/30.0K")
    assert "more" not in en[-2]
    # No keys today (a host from before them, or no credited request today): no line.
    for data in (_doc(), _keys_doc(rows=[])):
        text = render_message([_view(19001, _result(19001, data))], now_monotonic=101.0)
        assert "密钥" not in text


@pytest.mark.parametrize(
    "key", ["\x1b]0;PWNED\x07", "team\u202ePWNED", "PWNED\nfake line", "key:PWNED123"]
)
def test_a_key_name_that_is_not_a_keys_shape_makes_the_answer_unparseable(key: str) -> None:
    rows = [{**KEYS_TODAY["rows"][0], "key": key}]  # type: ignore[index]
    r = _result(19001, _keys_doc(rows=rows))
    assert r.state == "unparseable"
    for lang in ("zh", "en"):
        text = render_message([_view(19001, r)], now_monotonic=101.0, lang=lang)
        assert "PWNED" not in text and "\u202e" not in text
        assert all(c == "\n" or unicodedata.category(c)[0] != "C" for c in text)
