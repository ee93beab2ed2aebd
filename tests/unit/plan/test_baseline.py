"""Thresholds from a baseline (plan.baseline): the derivation, the queries (the CLI's errors
are tests/unit/commands/test_advise.py's); none from an answer the store called partial or gave
a warning with (each named, in the text and the JSON).

The real Prometheus with three days of backfilled samples is in
tests/e2e/test_baseline_prometheus.py; here the Prometheus is a fake at the HTTP boundary.
"""

from __future__ import annotations

import functools
import json
import urllib.parse
from collections.abc import Callable
from typing import Any

import pytest

from vllm_ledger.formats.advise import flags_line, render_baseline_json, render_baseline_text
from vllm_ledger.plan.baseline import (
    Baseline,
    GroupBaseline,
    derive,
    history_queries,
    history_warning,
    no_thresholds_reason,
    observability_flags,
    queries,
    read_baseline,
    told_lines,
)
from vllm_ledger.plan.prom import Said

END = 1_796_100_000


def _base(*groups: GroupBaseline, history_s: float = 259200 - 60) -> Baseline:
    """Three days asked, ``history_s`` of samples held up to 15 s before the end."""
    return Baseline(
        "http://p:9090", 259200, END, groups, "vllm:kv_cache_usage_perc", (),
        first_ts=END - 15 - history_s, last_ts=END - 15,
    )  # fmt: skip


def _g(inst: str, ttft: float | None, kv: float | None, wait: float | None) -> GroupBaseline:
    return GroupBaseline(inst, "m", ttft, kv, wait, 10)


def test_thresholds_from_the_highest_server() -> None:
    t = {x.name: x for x in derive(_base(_g("a", 0.8, 0.7, 3), _g("b", 1.1, 0.5, 0)))}
    assert (t["ttft_p99_seconds"].baseline, t["ttft_p99_seconds"].value) == (1.1, 1.65)
    assert (t["kv_cache_threshold"].baseline, t["kv_cache_threshold"].value) == (0.7, 0.85)
    assert (t["queue_waiting"].baseline, t["queue_waiting"].value) == (3, 5)  # 4.5 up to 5


@pytest.mark.parametrize(
    ("ttft", "kv", "wait", "want"),
    [
        (0.8, 0.7, 0.0, (1.2, 0.85, 0.0)),  # 0.8 x 1.5 = 1.2000000000000002: not 1.21
        (0.001, 0.0, 0.1, (0.01, 0.5, 1.0)),  # at least 0.01 s; any queue rounds up
        (2.0, 1.0, 4.0, (3.0, 1.0, 6.0)),  # a KV cache full at P99 stays at 1
        (1.234, 0.921, 2.0, (1.86, 0.97, 3.0)),  # 1.851 -> 1.86; 0.9605 -> 0.97
    ],
)
def test_rounding_is_up_and_ignores_float_noise(
    ttft: float, kv: float, wait: float, want: tuple[float, float, float]
) -> None:
    assert tuple(x.value for x in derive(_base(_g("a", ttft, kv, wait)))) == want


def test_missing_readings_keep_the_default() -> None:
    ts = derive(_base(_g("a", None, 0.6, None)))
    assert [x.value for x in ts] == [None, 0.8, None]
    assert observability_flags(ts) == ["--kv-cache-threshold", "0.8"]
    assert flags_line(ts) == "vllm-ledger observability --kv-cache-threshold 0.8"
    text = render_baseline_text(_base(_g("a", None, 0.6, None)), ts)
    assert "  --ttft-p99-seconds (keep the default): no TTFT data in the window\n" in text


def test_the_servers_table_aligns_label_values_and_shows_them_escaped() -> None:
    groups = (
        GroupBaseline("gpu1:8000", "通义千问", 1.75, 0.692, 6.0, 4306),
        GroupBaseline("gpu2:8000", "tiny\x1b[2J\nforged", None, 0.2, 0.0, 12),
    )
    text = render_baseline_text(_base(*groups), derive(_base(*groups)))
    assert "\x1b" not in text
    assert text.splitlines()[2:5] == [
        "instance   model_name             TTFT P99  KV-cache P99  waiting P99  KV samples",
        "gpu1:8000  通义千问                1.750 s        69.2 %         6.00       4,306",
        "gpu2:8000  tiny\\x1b[2J\\x0aforged       n/a        20.0 %         0.00          12",
    ]


def _fake(
    answers: dict[str, list[dict[str, object]]], asked: list[tuple[str, str]]
) -> Callable[[str], bytes]:
    def fetch(url: str) -> bytes:
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        asked.append((params["query"], params["time"]))
        result = answers.get(params["query"], [])
        return json.dumps(
            {"status": "success", "data": {"resultType": "vector", "result": result}}
        ).encode()

    return fetch


def _series(inst: str, value: str) -> dict[str, object]:
    return {"metric": {"instance": inst, "model_name": "m"}, "value": [1, value]}


def test_read_baseline_asks_at_the_windows_end_and_falls_back_to_the_old_kv_name() -> None:
    q = queries("259200s")
    assert q["ttft"] == (
        "histogram_quantile(0.99, sum by (instance, model_name, le) "
        "(increase(vllm:time_to_first_token_seconds_bucket[259200s])))"
    )
    assert q["waiting"] == (
        "sum by (instance, model_name) "
        "(quantile_over_time(0.99, vllm:num_requests_waiting[259200s]))"
    )
    answers = {
        q["ttft"]: [_series("a", "1.5"), _series("b", "NaN")],
        q["kv:vllm:gpu_cache_usage_perc"]: [_series("a", "0.4")],
        q["kv_count:vllm:gpu_cache_usage_perc"]: [_series("a", "4320")],
        q["waiting"]: [_series("a", "2"), _series("b", "0")],
    }
    asked: list[tuple[str, str]] = []
    b = read_baseline("http://p:9090", 3 * 86400, fetch=_fake(answers, asked), clock=lambda: 1000.0)
    assert {t for _q, t in asked} == {"1000.000"}
    assert b.kv_metric == "vllm:gpu_cache_usage_perc"
    assert b.groups == (
        GroupBaseline("a", "m", 1.5, 0.4, 2.0, 4320),
        GroupBaseline("b", "m", None, None, 0.0, 0),
    )


def test_a_history_shorter_than_asked_is_a_warning_with_its_span() -> None:
    groups = (_g("a", 0.8, 0.7, 3),)
    full = _base(*groups)
    assert history_warning(full) is None and no_thresholds_reason(full) is None
    two_days = _base(*groups, history_s=2 * 86400)
    assert history_warning(two_days) == "baseline: asked 3 days, had 2 days of history"
    assert no_thresholds_reason(two_days) is None  # over the 1 h minimum: thresholds, warned
    text = render_baseline_text(two_days, derive(two_days))
    assert text.splitlines()[1] == (
        "baseline: asked 3 days, had 2 days of history "
        "(2026-11-29 04:39:45 +00:00 .. 2026-12-01 04:39:45 +00:00)"
    )
    assert "as flags: vllm-ledger observability --ttft-p99-seconds 1.2" in text


def test_under_an_hour_of_history_no_thresholds_are_proposed() -> None:
    groups = (_g("a", 0.01, 0.05, 0),)
    short = _base(*groups, history_s=120)
    assert history_warning(short) == "baseline: asked 3 days, had 2 min of history"
    reason = no_thresholds_reason(short)
    assert reason == (
        "no thresholds: 2 min of history is under the 1 h minimum (a short span is one "
        "moment's load, not an everyday range): keep observability's defaults and ask again "
        "when Prometheus has scraped vLLM for 3 days"
    )
    text = render_baseline_text(short, ())
    assert text.endswith("\n\n" + reason + "\n") and "as flags" not in text
    assert "--ttft-p99-seconds" not in text
    doc = json.loads(render_baseline_json(short, ()))
    assert doc["thresholds"] == {} and doc["observability_flags"] == []
    assert doc["no_thresholds"] == reason
    assert doc["history"] == {
        "first": END - 135, "last": END - 15, "seconds": 120, "minimum_seconds": 3600,
        "warning": "baseline: asked 3 days, had 2 min of history",
    }  # fmt: skip
    # Exactly the minimum is enough; no sample at all is not.
    assert no_thresholds_reason(_base(*groups, history_s=3600)) is None
    unknown = Baseline("http://p:9090", 3600, END, groups, None, ())
    assert (no_thresholds_reason(unknown) or "").startswith("no thresholds: no known history")
    assert (history_warning(unknown) or "").endswith("to tell how much history Prometheus holds")


def test_the_history_is_the_first_and_last_sample_of_the_waiting_gauge() -> None:
    first_q, last_q = history_queries(259200)
    assert first_q == (
        "min(min_over_time(timestamp(vllm:num_requests_waiting)[259200s:52s]))"
    )  # fmt: skip
    assert last_q == "max(max_over_time(timestamp(vllm:num_requests_waiting)[259200s:52s]))"
    assert history_queries(3600)[0].endswith("[3600s:1s]))")
    answers: dict[str, list[dict[str, object]]] = {
        queries("3600s")["waiting"]: [_series("a", "0")],
        first_q.replace("259200s:52s", "3600s:1s"): [{"metric": {}, "value": [1, "996800"]}],
        last_q.replace("259200s:52s", "3600s:1s"): [{"metric": {}, "value": [1, "996920"]}],
    }
    clock = lambda: 1_000_000.0  # noqa: E731
    b = read_baseline("http://p:9090", 3600, fetch=_fake(answers, []), clock=clock)
    assert (b.first_ts, b.last_ts, b.history_seconds) == (996800.0, 996920.0, 120.0)
    # An instant outside the window is no answer (a Prometheus that answers anything).
    answers[last_q.replace("259200s:52s", "3600s:1s")] = [{"metric": {}, "value": [1, "0.5"]}]
    b = read_baseline("http://p:9090", 3600, fetch=_fake(answers, []), clock=clock)
    assert b.last_ts is None and b.history_seconds is None


def whole_store(beside: dict[str, dict[str, Any]]) -> Callable[[str], bytes]:
    """Three days of one server's history, each reading there; ``beside[name]`` is put beside
    ``data`` in the answer to each query that holds ``name``."""
    first_q, last_q = history_queries(259200)
    q = queries("259200s")
    answers = {
        q["ttft"]: [_series("a", "1.5")],
        q["kv:vllm:kv_cache_usage_perc"]: [_series("a", "0.4")],
        q["kv_count:vllm:kv_cache_usage_perc"]: [_series("a", "4320")],
        q["waiting"]: [_series("a", "2")],
        first_q: [{"metric": {}, "value": [1, str(END - 259200 + 30)]}],
        last_q: [{"metric": {}, "value": [1, str(END - 15)]}],
    }

    def fetch(url: str) -> bytes:
        expr = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))["query"]
        told = next((b for name, b in beside.items() if name in expr), {})
        data = {"resultType": "vector", "result": answers.get(expr, [])}
        return json.dumps({"status": "success", "data": data, **told}).encode()

    return fetch


def test_no_threshold_comes_from_a_partial_answer() -> None:
    read = functools.partial(read_baseline, "http://v:8481", 259200, clock=lambda: float(END))
    whole = read(fetch=whole_store({}))
    assert whole.told == {} and no_thresholds_reason(whole) is None
    assert json.loads(render_baseline_json(whole, derive(whole)))["partial_answers"] == {}
    beside: dict[str, dict[str, Any]] = {
        "num_requests_waiting[": {"isPartial": True},  # the waiting P99's query
        "timestamp(": {"warnings": ["store 10.0.0.7:10901 did not answer"]},  # the history's
    }
    b = read(fetch=whole_store(beside))
    assert b.groups == whole.groups and b.history_seconds == whole.history_seconds
    assert b.told == {
        "waiting_p99": Said(partial=True),
        "history": Said(warnings=("store 10.0.0.7:10901 did not answer",) * 2),
    }
    reason = no_thresholds_reason(b)
    assert reason == (
        "no thresholds: the store called its answers to the waiting P99, history queries "
        "partial or gave a warning with them (a server's series may be missing): keep "
        "observability's defaults and ask again once every node of the store answers"
    )
    lines = told_lines(b)
    assert lines[0] == (
        "the store's answer to the waiting P99 query is partial (isPartial): some of its "
        "storage nodes did not answer, so a server's series may be missing "
        "(docs/cost-and-capacity.md#a-partial-answer)"
    )
    assert lines[1] == (
        "the store's answer to the history query came with a warning: store 10.0.0.7:10901 "
        "did not answer"
    )
    text = render_baseline_text(b, ())
    assert text.endswith(f"\n\n{reason}\n" + "".join(f"  {line}\n" for line in lines))
    doc = json.loads(render_baseline_json(b, ()))
    assert (doc["no_thresholds"], doc["thresholds"], doc["observability_flags"]) == (reason, {}, [])
    assert doc["partial_answers"]["waiting_p99"] == {
        "is_partial": True,
        "warnings": [],
        "warnings_left_out": 0,
    }
    short = Baseline("http://p", 259200, END, b.groups, None, (), END - 135, END - 15, b.said)
    assert no_thresholds_reason(short) == (
        "no thresholds: the store called its answers to the waiting P99, history queries "
        "partial or gave a warning with them (a server's series may be missing); 2 min of "
        "history is under the 1 h minimum (a short span is one moment's load, not an everyday "
        "range): keep observability's defaults and ask again once every node of the store "
        "answers and when Prometheus has scraped vLLM for 3 days"
    )
    one = Baseline(
        "http://p", 259200, END, b.groups, None, (), END - 9000, END, {"kv_samples": Said(True)}
    )
    assert (no_thresholds_reason(one) or "").startswith(
        "no thresholds: the store called its answer to the KV samples query partial or gave a "
        "warning with it (a server's"
    )
