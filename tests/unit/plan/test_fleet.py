"""The fleet model (plan/fleet.py) and its forms (formats/fleet.py), pure: hosts' window gauges
as a Prometheus query answers them, summed per host, per model and for the fleet; ok / stale /
missing / failing hosts named; hosts known from ``up`` and the targets API alone; copies of a
series taken once or named as a conflict; values through the value gate; how a query's answer is
read. The queries and read_fleet are in tests/unit/plan/test_fleet_read.py, the live parts in
tests/e2e/test_fleet.py, the renderer's own cases in tests/unit/formats/test_fleet.py."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from vllm_ledger.errors import RemoteError
from vllm_ledger.formats.fleet import fleet_dict, render_text
from vllm_ledger.plan.fleet import build_fleet
from vllm_ledger.plan.fleet_copies import take_once
from vllm_ledger.plan.prom import Said, Target, label_values_answer, targets_answer, vector_answer

AT = 1_800_000_000.0
WINDOWS = ("today", "24h", "3d", "7d", "total")
Sample = tuple[dict[str, str], float]


def _host(
    target: str,
    pairs: dict[tuple[str, str], int],
    *,
    complete: bool = True,
    problems: dict[str, int] | None = None,
    extra: dict[str, str] | None = None,
) -> list[Sample]:
    """What one exporter serves: per pair, input = n and output = n // 10 in every window."""
    base = {"instance": target, "job": "vllm-ledger", **(extra or {})}
    out: list[Sample] = [({**base, "__name__": "vllm_ledger_report_ok"}, 1.0)]
    for w in WINDOWS:
        for (inst, model), n in pairs.items():
            labels = {**base, "window": w, "ledger_instance": inst, "model_name": model}
            out.append(({**labels, "__name__": "vllm_ledger_window_input_tokens"}, float(n)))
            out.append(({**labels, "__name__": "vllm_ledger_window_output_tokens"}, n // 10))
            out.append(({**labels, "__name__": "vllm_ledger_window_decode_seconds"}, 0.25))
        for inst in sorted({i for i, _m in pairs}):
            labels = {**base, "window": w, "ledger_instance": inst}
            out.append(({**labels, "__name__": "vllm_ledger_window_complete"}, float(complete)))
        root = {**base, "window": w}
        out.append(({**root, "__name__": "vllm_ledger_window_complete"}, float(complete)))
        out.append(({**root, "__name__": "vllm_ledger_window_uncovered_seconds"}, 0.0))
        out.append(({**root, "__name__": "vllm_ledger_window_wall_seconds"}, 3600.0))
        for code, n in (problems or {}).items():
            labels = {**root, "problem": code, "__name__": "vllm_ledger_window_problems"}
            out.append((labels, float(n)))
    return out


def _target(target: str, value: float) -> Sample:
    return ({"instance": target, "job": "vllm-ledger"}, value)


def test_hosts_models_and_the_fleet_add_up() -> None:
    a = _host("gpu1:9464", {("gpu1:8000", "qwen"): 100, ("gpu1:8001", "llama"): 50})
    b = _host("gpu2:9464", {("gpu2:8000", "qwen"): 1000})
    newest = [_target("gpu1:9464", AT - 3), _target("gpu2:9464", AT - 5)]
    up = [_target("gpu1:9464", 1), _target("gpu2:9464", 1)]
    fleet = build_fleet([*a, *b], newest, up, newest, source="http://p:9090", at_ts=AT)
    assert [(h.name, h.state) for h in fleet.hosts] == [("gpu1:9464", "ok"), ("gpu2:9464", "ok")]
    assert fleet.hosts[0].windows["today"].input_tokens == 150
    assert fleet.hosts[0].instances == ("gpu1:8000", "gpu1:8001")
    assert [(m.name, m.windows["7d"].input_tokens, m.hosts) for m in fleet.models] == [
        ("llama", 50, ("gpu1:9464",)),
        ("qwen", 1100, ("gpu1:9464", "gpu2:9464")),
    ]
    assert fleet.total["total"].input_tokens == 1150
    assert fleet.total["total"].output_tokens == 10 + 5 + 100
    assert fleet.total["total"].decode_seconds == 0.75
    assert fleet.complete == dict.fromkeys(WINDOWS, True)
    assert fleet.incomplete == ()
    assert render_text(fleet) == (
        "                                 today        24h         3d         7d      total\n"
        "hosts (input/output tokens)\n"
        "  gpu1:9464                     150/15     150/15     150/15     150/15     150/15\n"
        "  gpu2:9464                  1,000/100  1,000/100  1,000/100  1,000/100  1,000/100\n"
        "models\n"
        "  llama                           50/5       50/5       50/5       50/5       50/5\n"
        "  qwen                       1,100/110  1,100/110  1,100/110  1,100/110  1,100/110\n"
        "fleet                        1,150/115  1,150/115  1,150/115  1,150/115  1,150/115\n"
        "\n"
        "2 hosts from http://p:9090, 2 counted; stale after 60 s; * = incomplete\n"
        "complete: every host is up, fresh and vouches for every window\n"
    )
    doc = fleet_dict(fleet)
    json.dumps(doc, allow_nan=False)
    assert doc["total"]["today"] == {
        "input": 1150,
        "output": 115,
        "cached": 0,
        "requests": 0,
        "decode_tokens": 0,
        "decode_seconds": 0.75,
        "hit_rate": 0.0,
        "gen_speed": 0.0,
    }
    assert doc["hosts"]["gpu1:9464"]["windows"]["total"]["wall_seconds"] == 3600


def test_a_down_a_stopped_a_stale_and_a_failing_host_are_named() -> None:
    ok = _host("h-ok:9464", {("h-ok:8000", "qwen"): 10})
    stale = _host("h-stale:9464", {("h-stale:8000", "qwen"): 20})
    failing = [({**_target("h-fail:9464", 0)[0], "__name__": "vllm_ledger_report_ok"}, 0.0)]
    newest = [
        _target("h-ok:9464", AT - 1),
        _target("h-stale:9464", AT - 300),
        _target("h-fail:9464", AT - 1),
    ]
    seen = [*newest, _target("h-down:9464", 1), _target("h-gone:9464", 1)]
    up = [_target("h-ok:9464", 1), _target("h-down:9464", 0), _target("h-fail:9464", 1)]
    fleet = build_fleet([*ok, *stale, *failing], newest, up, seen, source="s", at_ts=AT)
    states = {h.name: (h.state, h.why) for h in fleet.hosts}
    assert states == {
        "h-down:9464": ("missing", "its target is down (up == 0)"),
        "h-fail:9464": (
            "failing",
            "its exporter cannot read its ledgers (vllm_ledger_report_ok 0)",
        ),
        "h-gone:9464": (
            "missing",
            "its series stopped (no sample now, some within the lookback)",
        ),
        "h-ok:9464": ("ok", ""),
        "h-stale:9464": ("stale", "newest sample 300 s old (limit 60 s)"),
    }
    # A stale host's figures still count; nothing is complete while any host is not ok.
    assert fleet.total["total"].input_tokens == 30
    assert fleet.complete == dict.fromkeys(WINDOWS, False)
    assert [line.split(":")[0] for line in fleet.incomplete] == [
        "h-down",
        "h-fail",
        "h-gone",
        "h-stale",
    ]
    assert fleet.models[0].complete == dict.fromkeys(WINDOWS, False)  # h-stale serves qwen
    text = render_text(fleet)
    assert "  h-down:9464 [missing]" in text and "INCOMPLETE:\n" in text
    assert "  h-stale:9464: newest sample 300 s old (limit 60 s)\n" in text
    assert "5 hosts from s, 2 counted" in text


def test_an_incomplete_window_names_the_host_window_and_problem() -> None:
    a = _host("a:9464", {("a:8000", "m"): 5})
    b = _host("b:9464", {("b:8000", "m"): 5}, complete=False, problems={"writer_missing": 1})
    newest = [_target("a:9464", AT), _target("b:9464", AT)]
    fleet = build_fleet([*a, *b], newest, [], newest, source="s", at_ts=AT)
    assert fleet.incomplete == ("b:9464: incomplete in today, 24h, 3d, 7d, total (writer_missing)",)
    assert fleet.hosts[1].coverage["3d"].problems == {"writer_missing": 1}
    assert fleet.models[0].complete == dict.fromkeys(WINDOWS, False)
    text = render_text(fleet).splitlines()
    assert text[2].split() == ["a:9464", *["5/0"] * 5]  # complete: no mark
    assert text[3].split() == ["b:9464", *["5/0*"] * 5]
    assert text[6].split() == ["fleet", *["10/0*"] * 5]


def test_a_host_label_from_relabelling_names_the_host() -> None:
    a = _host("10.0.0.5:9464", {("gpu1:8000", "m"): 7}, extra={"host": "gpu1"})
    newest = [({"instance": "10.0.0.5:9464", "job": "vllm-ledger", "host": "gpu1"}, AT)]
    fleet = build_fleet(a, newest, [_target("10.0.0.5:9464", 1)], newest, source="s", at_ts=AT)
    assert [h.name for h in fleet.hosts] == ["gpu1"]
    assert fleet.hosts[0].state == "ok"


def test_no_host_is_incomplete_not_an_empty_success() -> None:
    fleet = build_fleet([], [], [], [], source="s", at_ts=AT)
    assert fleet.complete == dict.fromkeys(WINDOWS, False)
    assert fleet.incomplete == ("no host serves vllm_ledger metrics: check the scrape config",)


def _answer(result: list[dict[str, Any]]) -> bytes:
    data = {"resultType": "vector", "result": result}
    return json.dumps({"status": "success", "data": data}).encode()


def test_the_one_query_reads_labels_and_values_and_refuses_nonsense() -> None:
    urls: list[str] = []

    def fetch(url: str) -> bytes:
        urls.append(url)
        return _answer(
            [
                {"metric": {"__name__": "up", "instance": "a:1"}, "value": [AT, "1"]},
                {"metric": {"instance": "b:1"}, "value": [AT, "NaN"]},  # dropped
                {"metric": {"instance": "c:1"}},  # no value: dropped
                {"value": [AT, "2"]},  # no metric: dropped
                {"metric": [], "value": [AT, "3"]},  # a metric that is not an object: dropped
            ]
        )

    got = vector_answer("http://p:9090/", "up", AT, fetch)
    assert got == ([({"__name__": "up", "instance": "a:1"}, 1.0)], Said())
    assert urls == ["http://p:9090/api/v1/query?query=up&time=1800000000.000"]
    with pytest.raises(RemoteError, match="refused 'up': bad_data"):
        vector_answer("http://p", "up", None, lambda _u: b'{"status":"error","error":"bad_data"}')
    with pytest.raises(RemoteError, match="JSON it can trust"):
        vector_answer("http://p", "up", None, lambda _u: b"<html>")
    with pytest.raises(RemoteError, match="without a result list"):
        vector_answer("http://p", "up", None, lambda _u: b'{"status":"success","data":{}}')
    scalar = b'{"status":"success","data":{"resultType":"scalar","result":[1,"4.5"]}}'
    assert vector_answer("http://p", "scalar(up)", None, lambda _u: scalar)[0] == [({}, 4.5)]


def test_the_targets_and_a_label_s_values_are_read_and_checked() -> None:
    doc = {
        "status": "success",
        "data": {
            "activeTargets": [
                {
                    "labels": {"instance": "a:1", "job": "j"},
                    "health": "down",
                    "lastError": "connection refused",
                },
                {"labels": {"instance": "b:1", "job": "j"}, "health": "up", "lastError": ""},
                {"labels": "not an object", "health": "up"},
                "not an object",
            ],
            "droppedTargets": [],
        },
    }
    got, _said = targets_answer("http://p", lambda _u: json.dumps(doc).encode())
    assert got == [
        Target({"instance": "a:1", "job": "j"}, "down", "connection refused"),
        Target({"instance": "b:1", "job": "j"}, "up", ""),
    ]
    with pytest.raises(RemoteError, match="without activeTargets"):
        targets_answer("http://p", lambda _u: b'{"status":"success","data":{}}')
    ok = b'{"status":"success","data":["a","b"]}'
    assert label_values_answer("http://p", "job", "up", 0, 1, lambda _u: ok)[0] == ["a", "b"]
    with pytest.raises(RemoteError, match="without a list"):
        label_values_answer("http://p", "job", "up", 0, 1, lambda _u: _answer([]))


def _fresh(target: str, **extra: str) -> Sample:
    return ({"instance": target, "job": "vllm-ledger", **extra}, AT - 2)


def test_hosts_known_only_from_up_or_the_targets_api_are_named_missing() -> None:
    a = _host("a:9464", {("a:8000", "m"): 100})
    stopped = _host("b:9464", {("b:8000", "m"): 7})  # its series still there, its up 0
    newest = [_fresh("a:9464"), _fresh("b:9464")]
    up = [
        _target("a:9464", 1),
        _target("b:9464", 0),
        _target("never:9464", 0),  # down from the start: no ledger series ever
        _target("idle:9464", 1),  # up, serves no ledger series: not a host
        ({"instance": "node:9100", "job": "node"}, 0),  # another job: not a host
    ]
    up_seen = [*up, _target("gone:9464", 1)]  # up within the lookback, none now
    scrape = [
        Target({"instance": "never:9464", "job": "vllm-ledger"}, "down", "connection refused"),
        Target({"instance": "new:9464", "job": "vllm-ledger"}, "unknown", ""),
        Target({"instance": "a:9464", "job": "vllm-ledger"}, "up", ""),
    ]
    fleet = build_fleet(
        [*a, *stopped],
        newest,
        up,
        newest,
        up_seen=up_seen,
        scrape_targets=scrape,
        jobs=["vllm-ledger"],
        source="s",
        at_ts=AT,
    )
    got = {h.name: (h.state, h.why, h.found) for h in fleet.hosts}
    assert got == {
        "a:9464": ("ok", "", ("series", "up", "targets")),
        "b:9464": ("missing", "its target is down (up == 0)", ("series", "up")),
        "gone:9464": (
            "missing",
            "no up sample now, some within the lookback: its target left the scrape config, "
            "or the store stopped receiving it",
            ("up",),
        ),
        "never:9464": (
            "missing",
            "its target is down (up == 0): connection refused",
            ("up", "targets"),
        ),
        "new:9464": (
            "missing",
            "its target has not been scraped yet (health unknown in /api/v1/targets)",
            ("targets",),
        ),
    }
    assert fleet.missing == ("b:9464", "gone:9464", "never:9464", "new:9464")
    assert fleet.total["today"].input_tokens == 100  # b's series are there, not counted
    assert fleet.complete == dict.fromkeys(WINDOWS, False)
    assert fleet.notes == (
        "1 up targets of the ledger jobs serve no vllm_ledger series within the lookback, "
        "so are not hosts (clock ahead? docs/fleet.md#a-clock-ahead): vllm-ledger/idle:9464",
    )
    text = render_text(fleet)
    assert "5 hosts from s, 1 counted, 4 missing; stale after 60 s" in text
    assert "  never:9464 [missing]" in text
    assert "  never:9464: its target is down (up == 0): connection refused\n" in text
    # The same target down in one replica and up in the other is up.
    replicas = [
        ({**_target("a:9464", 0)[0], "replica": "r1"}, 0.0),
        ({**_target("a:9464", 1)[0], "replica": "r2"}, 1.0),
    ]
    one = build_fleet(a, [_fresh("a:9464")], replicas, [], source="s", at_ts=AT)
    assert [(h.name, h.state) for h in one.hosts] == [("a:9464", "ok")]


def test_copies_of_a_series_with_one_value_are_taken_once() -> None:
    direct = _host("a:9464", {("a:8000", "m"): 5150, ("a:8001", "n"): 3})
    federated = _host("a:9464", {("a:8000", "m"): 5150, ("a:8001", "n"): 3})
    for labels, _v in federated:
        labels["job"] = "federate"
    replicas = [({**labels, "replica": "r2"}, v) for labels, v in direct]
    fleet = build_fleet(
        [*direct, *federated, *replicas],
        [_fresh("a:9464")],
        [_target("a:9464", 1), ({"instance": "a:9464", "job": "federate"}, 1.0)],
        [],
        source="s",
        at_ts=AT,
    )
    assert fleet.hosts[0].windows["total"].input_tokens == 5153  # not 15,459
    assert fleet.total["today"].output_tokens == 515
    assert fleet.total["7d"].decode_seconds == 0.5
    assert fleet.duplicates == len(direct)
    assert fleet.duplicate_labels == ("job", "replica")
    assert fleet.conflicts == () and fleet.complete == dict.fromkeys(WINDOWS, True)
    assert (
        f"{len(direct)} duplicate series taken once (the copies differ only in job, replica)\n"
        in render_text(fleet)
    )


def test_copies_with_different_values_are_a_conflict_never_summed() -> None:
    r1 = _host("a:9464", {("a:8000", "m"): 100}, extra={"replica": "r1"})
    r2 = _host("a:9464", {("a:8000", "m"): 100}, extra={"replica": "r2"})
    r2 = [
        (labels, 120.0)
        if labels["__name__"] == "vllm_ledger_window_input_tokens" and labels["window"] == "3d"
        else (labels, v)
        for labels, v in r2
    ]
    b = _host("b:9464", {("b:8000", "m"): 1})
    fleet = build_fleet(
        [*r1, *r2, *b], [_fresh("a:9464"), _fresh("b:9464")], [], [], source="s", at_ts=AT
    )
    assert len(fleet.conflicts) == 1
    c = fleet.conflicts[0]
    assert (c.host, c.window, c.values, c.differ_in) == (
        "a:9464",
        "3d",
        (100.0, 120.0),
        ("replica",),
    )
    assert c.series == (
        'vllm_ledger_window_input_tokens{ledger_instance="a:8000",model_name="m",window="3d"}'
    )
    assert fleet.total["3d"].input_tokens == 1  # neither 100 nor 120 nor 220
    assert fleet.total["7d"].input_tokens == 101
    assert fleet.complete == {**dict.fromkeys(WINDOWS, True), "3d": False}
    assert fleet.models[0].complete["3d"] is False
    assert fleet.incomplete == (
        'a:9464: conflict: vllm_ledger_window_input_tokens{ledger_instance="a:8000",'
        'model_name="m",window="3d"} is 100 and 120 (the copies differ in replica): not counted',
    )
    assert render_text(fleet).splitlines()[2].split() == [
        "a:9464", "100/10", "100/10", "0/10*", "100/10", "100/10",
    ]  # fmt: skip


def test_values_pass_the_value_gate() -> None:
    a = _host("a:9464", {("a:8000", "m"): 100})
    bad = {"instance": "a:9464", "job": "vllm-ledger", "ledger_instance": "a:8000"}
    samples = [
        *a,
        ({**bad, "__name__": "vllm_ledger_window_requests", "model_name": "m", "window": "today"},
         -3.0),
        ({**bad, "__name__": "vllm_ledger_window_cached_tokens", "model_name": "m",
          "window": "24h"}, math.nan),
        ({**bad, "__name__": "vllm_ledger_window_output_tokens", "model_name": "x",
          "window": "3d"}, 1e300),
        ({**bad, "__name__": "vllm_ledger_window_input_tokens", "model_name": "x",
          "window": "7d"}, 2.5),
        ({**bad, "__name__": "vllm_ledger_window_decode_seconds", "model_name": "x",
          "window": "7d"}, 1.125),  # seconds need not be whole
        (
            {**bad, "__name__": "vllm_ledger_window_complete", "window": "total"}
            | {"ledger_instance": "a:8009"},
            math.inf,
        ),
    ]  # fmt: skip
    fleet = build_fleet(samples, [_fresh("a:9464")], [], [], source="s", at_ts=AT)
    assert [(r.window, r.why) for r in fleet.refused] == [
        ("today", 'vllm_ledger_window_requests{ledger_instance="a:8000",model_name="m",'
         'window="today"} -3 is negative'),
        ("24h", 'vllm_ledger_window_cached_tokens{ledger_instance="a:8000",model_name="m",'
         'window="24h"} nan is not a number'),
        ("3d", 'vllm_ledger_window_output_tokens{ledger_instance="a:8000",model_name="x",'
         'window="3d"} 1e+300 is above 4.61169e+18, the most it can be'),
        ("7d", 'vllm_ledger_window_input_tokens{ledger_instance="a:8000",model_name="x",'
         'window="7d"} 2.5 is not a whole number'),
        ("total", 'vllm_ledger_window_complete{ledger_instance="a:8009",window="total"} inf '
         "is not finite"),
    ]  # fmt: skip
    h = fleet.hosts[0]
    assert [h.windows[w].input_tokens for w in WINDOWS] == [100] * 5
    assert h.windows["3d"].output_tokens == 10 and h.windows["7d"].decode_seconds == 1.375
    assert h.windows["today"].requests == 0
    assert fleet.complete == dict.fromkeys(WINDOWS, False)
    assert fleet.incomplete[0].startswith("a:9464: refused vllm_ledger_window_requests{")
    assert fleet.incomplete[0].endswith("-3 is negative: not counted")
    doc = fleet_dict(fleet)
    json.dumps(doc, allow_nan=False)
    assert [r["value"] for r in doc["refused"]] == [-3, "nan", 1e300, 2.5, "inf"]


def test_a_sample_stamped_ahead_of_the_query_names_the_host_s_clock() -> None:
    a = _host("a:9464", {("a:8000", "m"): 1})
    b = _host("b:9464", {("b:8000", "m"): 2})
    ahead = [_target("a:9464", AT + 30), _target("b:9464", AT + 240)]  # a: within 60 s
    fleet = build_fleet(
        [*a, *b], [_fresh("a:9464"), _fresh("b:9464")], [], [], ahead=ahead, source="s", at_ts=AT
    )
    assert [(h.name, h.state, h.clock_ahead_s) for h in fleet.hosts] == [
        ("a:9464", "ok", None),
        ("b:9464", "ok", 240.0),
    ]
    assert fleet.incomplete == (
        "b:9464: clock ahead: vllm_ledger_report_ok is stamped 240 s after the time it was "
        "asked at (at most 60 s allowed): that host's clock is ahead",
    )
    assert fleet.complete == dict.fromkeys(WINDOWS, False)
    assert fleet.total["today"].input_tokens == 3


def test_take_once_keeps_one_copy_and_names_differences() -> None:
    x = {"__name__": "vllm_ledger_window_requests", "instance": "a", "window": "7d"}
    once, dups, differ, conflicts = take_once(
        [
            ({**x, "job": "j1"}, math.nan),
            ({**x, "job": "j2"}, math.nan),  # NaN and NaN: the same value
            ({**x, "window": "3d"}, 1.0),
        ]
    )
    assert len(once) == 2 and dups == 1 and differ == {"job"} and conflicts == []


def test_one_exporter_under_two_instance_spellings_of_one_host_is_counted_once() -> None:
    """The same exporter scraped as 127.0.0.1:9464 and localhost:9464, both relabelled to host
    gpu1: the same ledger_instance labels under two instance values of one host."""
    pairs = {("gpu1:8000", "qwen"): 1300, ("gpu1:8001", "llama"): 7}
    by_ip = _host("127.0.0.1:9464", pairs, extra={"host": "gpu1"})
    by_name = _host("localhost:9464", pairs, extra={"host": "gpu1"})
    other = _host("gpu2:9464", {("gpu2:8000", "qwen"): 5})
    newest = [
        ({"instance": "127.0.0.1:9464", "job": "vllm-ledger", "host": "gpu1"}, AT - 1),
        ({"instance": "localhost:9464", "job": "vllm-ledger", "host": "gpu1"}, AT - 2),
        _fresh("gpu2:9464"),
    ]
    up = [({**labels}, 1.0) for labels, _v in newest]
    fleet = build_fleet([*by_ip, *by_name, *other], newest, up, newest, source="s", at_ts=AT)
    assert [(h.name, h.state) for h in fleet.hosts] == [("gpu1", "ok"), ("gpu2:9464", "ok")]
    assert fleet.hosts[0].windows["total"].input_tokens == 1307  # not 2,614
    assert fleet.hosts[0].instances == ("gpu1:8000", "gpu1:8001")
    assert fleet.total["today"].input_tokens == 1312
    assert [(m.name, m.windows["7d"].input_tokens) for m in fleet.models] == [
        ("llama", 7),
        ("qwen", 1305),
    ]
    assert fleet.duplicates == len(by_ip)  # every series of it, the root's coverage included
    assert fleet.duplicate_labels == ("instance",)
    assert fleet.conflicts == () and fleet.complete == dict.fromkeys(WINDOWS, True)
    note = (
        "127.0.0.1:9464 and localhost:9464 are one exporter of host gpu1 (the same "
        "ledger_instance labels under 2 instance spellings): counted once"
    )
    assert fleet.notes == (note,)
    text = render_text(fleet)
    assert f"note: {note}\n" in text
    assert text.splitlines()[2].split() == ["gpu1", *["1,307/130"] * 5]
    assert f"{len(by_ip)} duplicate series taken once (the copies differ only in instance)\n" in (
        text
    )
    doc = fleet_dict(fleet)
    assert doc["spellings"] == [
        {
            "host": "gpu1",
            "instances": ["127.0.0.1:9464", "localhost:9464"],
            "ledger_instances": ["gpu1:8000", "gpu1:8001"],
        }
    ]
    assert doc["notes"] == [note]
    assert doc["hosts"]["gpu1"]["windows"]["total"]["input"] == 1307


def test_two_spellings_that_differ_are_a_conflict_and_two_exporters_of_a_host_stay_two() -> None:
    by_ip = _host("127.0.0.1:9464", {("gpu1:8000", "m"): 100}, extra={"host": "gpu1"})
    by_name = _host("localhost:9464", {("gpu1:8000", "m"): 100}, extra={"host": "gpu1"})
    by_name = [  # scraped a moment later, after one more request in today's window
        (labels, 104.0)
        if labels["__name__"] == "vllm_ledger_window_input_tokens" and labels["window"] == "today"
        else (labels, v)
        for labels, v in by_name
    ]
    second = _host("127.0.0.1:9465", {("gpu1:8001", "m"): 20}, extra={"host": "gpu1"})
    newest = [({"instance": "127.0.0.1:9464", "job": "vllm-ledger", "host": "gpu1"}, AT - 1)]
    fleet = build_fleet([*by_ip, *by_name, *second], newest, [], [], source="s", at_ts=AT)
    assert [(c.host, c.window, c.values, c.differ_in) for c in fleet.conflicts] == [
        ("gpu1", "today", (100.0, 104.0), ("instance",))
    ]
    h = fleet.hosts[0]
    # 127.0.0.1:9465 serves another ledger_instance: a second exporter, added.
    assert [h.windows[w].input_tokens for w in WINDOWS] == [20, 120, 120, 120, 120]
    assert h.instances == ("gpu1:8000", "gpu1:8001")
    assert [s.instances for s in fleet.spellings] == [("127.0.0.1:9464", "localhost:9464")]
    assert fleet.complete == {**dict.fromkeys(WINDOWS, True), "today": False}
    assert fleet.incomplete == (
        'gpu1: conflict: vllm_ledger_window_input_tokens{ledger_instance="gpu1:8000",'
        'model_name="m",window="today"} is 100 and 104 (the copies differ in instance): '
        "not counted",
    )


AHEAD_WHY_UP = (
    "no vllm_ledger sample now, while its target is up (up == 1): clock ahead? (a sample "
    "stamped after the query's instant is hidden until then, docs/fleet.md#a-clock-ahead)"
)
AHEAD_WHY_STAMPED = (
    "no vllm_ledger sample now, only samples stamped ahead of now: clock ahead? (a sample "
    "stamped after the query's instant is hidden until then, docs/fleet.md#a-clock-ahead)"
)


def test_a_target_up_with_no_series_now_hints_at_a_clock_ahead() -> None:
    """Its first minutes with a clock 120 s ahead: Prometheus hides every sample it stamped
    (after the query's instant), while the target's up (stamped by Prometheus) is 1."""
    ok = _host("a:9464", {("a:8000", "m"): 10})
    newest = [_fresh("a:9464")]  # b: nothing at or before AT (all it has is stamped later)
    seen = [*newest, _target("b:9464", 1)]  # b's earlier run, within the lookback
    up = [_target("a:9464", 1), _target("b:9464", 1)]
    fleet = build_fleet(ok, newest, up, seen, source="s", at_ts=AT, jobs=["vllm-ledger"])
    b = fleet.hosts[1]
    assert (b.name, b.state, b.why, b.hint, b.counted) == (
        "b:9464",
        "missing",
        AHEAD_WHY_UP,
        "clock ahead?",
        False,
    )
    assert fleet.hosts[0].hint == ""
    assert fleet.incomplete == (f"b:9464: {AHEAD_WHY_UP}",)
    text = render_text(fleet)
    assert text.splitlines()[3] == (
        "  b:9464 [missing, clock ahead?]      -      -      -      -      -"
    )
    assert f"  b:9464: {AHEAD_WHY_UP}\n" in text
    doc = fleet_dict(fleet)
    assert (doc["hosts"]["b:9464"]["hint"], doc["hosts"]["a:9464"]["hint"]) == ("clock ahead?", "")


def test_samples_only_stamped_ahead_hint_at_a_clock_ahead_and_name_how_far() -> None:
    """A host whose own Prometheus (clock 120 s ahead) remote-writes: up and the ledger series
    alike are stamped ahead, so in its first two minutes only the query asked AHEAD_S later
    sees it."""
    fleet = build_fleet([], [], [], [], ahead=[_target("b:9464", AT + 120)], source="s", at_ts=AT)
    (b,) = fleet.hosts
    assert (b.state, b.why, b.hint, b.clock_ahead_s, b.found) == (
        "missing",
        AHEAD_WHY_STAMPED,
        "clock ahead?",
        120.0,
        ("series",),
    )
    assert fleet.incomplete == (
        f"b:9464: {AHEAD_WHY_STAMPED}",
        "b:9464: clock ahead: vllm_ledger_report_ok is stamped 120 s after the time it was "
        "asked at (at most 60 s allowed): that host's clock is ahead",
    )


def test_no_clock_hint_where_the_target_is_down_or_gone_too() -> None:
    seen = [_target("down:9464", 1), _target("gone:9464", 1)]
    up = [_target("down:9464", 0)]
    fleet = build_fleet([], [], up, seen, source="s", at_ts=AT)
    got = {h.name: (h.why, h.hint) for h in fleet.hosts}
    assert got == {
        "down:9464": ("its target is down (up == 0)", ""),
        "gone:9464": ("its series stopped (no sample now, some within the lookback)", ""),
    }
    assert "clock ahead?" not in render_text(fleet)
