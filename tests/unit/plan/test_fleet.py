"""The fleet model (plan/fleet.py) and its forms (formats/fleet.py), pure: hosts' window gauges
as a Prometheus query answers them, summed per host, per model and for the fleet; ok / stale /
missing / failing hosts named; the queries it asks and how it reads an answer. The live parts
are in tests/e2e/test_fleet.py; the renderer's own cases in tests/unit/formats/test_fleet.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from vllm_ledger.errors import RemoteError
from vllm_ledger.formats.fleet import fleet_dict, render_text
from vllm_ledger.plan.fleet import build_fleet, queries, read_fleet
from vllm_ledger.plan.prom import vector_query

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


def test_queries_select_the_window_gauges_and_a_job() -> None:
    q = queries("vllm-ledger", 3600)
    assert q["newest"] == 'timestamp(vllm_ledger_report_ok{job="vllm-ledger"})'
    assert q["seen"] == 'max_over_time(vllm_ledger_report_ok{job="vllm-ledger"}[3600s])'
    assert q["up"] == 'up{job="vllm-ledger"}'
    assert q["windows"].startswith('{__name__=~"vllm_ledger_(report_ok|window_(input_tokens|')
    assert q["windows"].endswith('|problems))",job="vllm-ledger"}')
    assert queries()["up"] == "up"


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

    got = vector_query("http://p:9090/", "up", AT, fetch)
    assert got == [({"__name__": "up", "instance": "a:1"}, 1.0)]
    assert urls == ["http://p:9090/api/v1/query?query=up&time=1800000000.000"]
    with pytest.raises(RemoteError, match="refused 'up': bad_data"):
        vector_query("http://p", "up", None, lambda _u: b'{"status":"error","error":"bad_data"}')
    with pytest.raises(RemoteError, match="JSON it can trust"):
        vector_query("http://p", "up", None, lambda _u: b"<html>")
    with pytest.raises(RemoteError, match="without a result list"):
        vector_query("http://p", "up", None, lambda _u: b'{"status":"success","data":{}}')
    scalar = b'{"status":"success","data":{"resultType":"scalar","result":[1,"4.5"]}}'
    assert vector_query("http://p", "scalar(up)", None, lambda _u: scalar) == [({}, 4.5)]


def test_read_fleet_asks_four_queries_at_one_instant() -> None:
    asked: list[str] = []

    def fetch(url: str) -> bytes:
        asked.append(url)
        return _answer([])

    fleet = read_fleet("http://p:9090", clock=lambda: AT, fetch=fetch)
    assert len(asked) == 4 and all("time=1800000000.000" in u for u in asked)
    assert fleet.at_ts == AT and fleet.hosts == ()
