"""plan/fleet_partial: a store that says its answer is partial (VictoriaMetrics cluster's
``"isPartial": true``) or gives a warning with it (Prometheus's, Thanos's ``"warnings"``) leaves
no window, host or model of the fleet complete, names the answer and the warning, in the text,
the JSON and the exit status (1); an ``infos`` text is a note; a whole answer is unchanged.
The stores here are fake ``fetch`` functions answering as the real ones do."""

from __future__ import annotations

import functools
import json
import urllib.parse
from typing import Any

import pytest

from tests.inproc import run_cli
from tests.test_json_schema_doc import hold_to_doc
from tests.unit.plan.test_fleet import AT, WINDOWS, Sample, _host, _target
from tests.unit.plan.test_fleet_whose import REST_A, REST_B, ROWS_A, ROWS_B, A, B, _whose
from vllm_ledger.commands import fleet as fleet_command
from vllm_ledger.formats.fleet import fleet_dict, render_text
from vllm_ledger.plan.fleet import Fleet
from vllm_ledger.plan.fleet_partial import with_said
from vllm_ledger.plan.fleet_read import queries, read_fleet
from vllm_ledger.plan.fleet_whose import read_fleet_whose, whose_queries
from vllm_ledger.plan.prom import Fetch, Said

ALL_FALSE = dict.fromkeys(WINDOWS, False)
PARTIAL_LINE = (
    "the store's answer to windows is partial (isPartial): some of its storage nodes did not "
    "answer, so a host's series or a copy of one may be missing (docs/fleet.md#a-partial-answer)"
)
WARNING = "PromQL warning: store 10.0.0.7:10901 did not answer"


def _replica(samples: list[Sample], replica: str) -> list[Sample]:
    return [({**labels, "replica": replica}, v) for labels, v in samples]


def _store(said: dict[str, dict[str, Any]], *, lost_copy: bool = False) -> Fetch:
    """Two ok hosts, A (150 input tokens) and B (1,000), each series under the HA replicas r1
    and r2 of a store that does not deduplicate, and their rows by key; ``said[name]`` is put
    beside ``data`` in the answer to the query ``name``. ``lost_copy``: r2's copies of B's
    series are not in the answer (the storage node holding them did not answer)."""
    a, b = _host(A, {(A, "qwen"): 150}), _host(B, {(B, "qwen"): 1000})
    windows = [*_replica(a, "r1"), *_replica(a, "r2"), *_replica(b, "r1")]
    if not lost_copy:
        windows += _replica(b, "r2")
    newest = [_target(A, AT - 2), _target(B, AT - 2)]
    up = [_target(A, 1), _target(B, 1)]
    series = {"windows": windows, "newest": newest, "ahead": newest, "seen": newest}
    series |= {"up": up, "up_seen": up}
    whose = [*_whose(A, ROWS_A, REST_A), *_whose(B, ROWS_B, REST_B)]
    series["rows"] = [s for s in whose if "_attributed_" in s[0]["__name__"]]
    series["rest"] = [s for s in whose if "_attributed_" not in s[0]["__name__"]]
    by_expr = {expr: name for name, expr in {**queries(), **whose_queries("key")}.items()}
    active = [{"labels": {"instance": t, "job": "vllm-ledger"}, "health": "up"} for t in (A, B)]

    def fetch(url: str) -> bytes:
        parts = urllib.parse.urlsplit(url)
        asked = urllib.parse.parse_qs(parts.query)
        data: Any
        if parts.path.endswith("/api/v1/label/job/values"):
            name, data = "jobs", ["vllm-ledger"]
        elif parts.path.endswith("/api/v1/targets"):
            name, data = "targets", {"activeTargets": active}
        else:
            name = by_expr[asked["query"][0]]
            if name == "ahead" and asked["time"] == [f"{AT:.3f}"]:
                name = "newest"  # the same expression, asked at the fleet's instant
            result = [{"metric": m, "value": [AT, str(v)]} for m, v in series[name]]
            data = {"resultType": "vector", "result": result}
        return json.dumps({"status": "success", "data": data, **said.get(name, {})}).encode()

    return fetch


def _read(said: dict[str, dict[str, Any]], *, lost_copy: bool = False) -> Fleet:
    fetch = _store(said, lost_copy=lost_copy)
    return read_fleet("http://p:9090", clock=lambda: AT, fetch=fetch)


def _exit_status(
    monkeypatch: pytest.MonkeyPatch, said: dict[str, dict[str, Any]], *args: str
) -> tuple[int, str]:
    """``vllm-ledger fleet`` against the store: its exit status and standard output."""
    fetch = _store(said)
    fleet = functools.partial(read_fleet, clock=lambda: AT, fetch=fetch)
    whose = functools.partial(read_fleet_whose, clock=lambda: AT, fetch=fetch)
    monkeypatch.setattr(fleet_command, "read_fleet", fleet)
    monkeypatch.setattr(fleet_command, "read_fleet_whose", whose)
    code, out, err = run_cli("fleet", "--prometheus", "http://p:9090", *args)
    assert err == ""
    return code, out


def test_a_whole_answer_is_complete_and_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = _read({})
    assert fleet.complete == dict.fromkeys(WINDOWS, True)
    assert fleet.incomplete == () and fleet.said == {} and fleet.notes == ()
    assert fleet.duplicates > 0 and fleet.conflicts == ()  # r1 and r2 agree: taken once
    assert fleet.total["total"].input_tokens == 1150
    assert with_said(fleet, {"windows": Said()}) is fleet
    assert fleet_dict(fleet)["partial_answers"] == {}
    code, out = _exit_status(monkeypatch, {})
    assert code == 0 and out.endswith(
        "complete: every host is up, fresh and vouches for every window\n"
    )
    code, out = _exit_status(monkeypatch, {}, "--by", "key", "--json")
    assert code == 0 and hold_to_doc("fleet --json", out)["partial_answers"] == {}


def test_is_partial_leaves_nothing_complete_and_no_lone_copy_agrees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = _read({}, lost_copy=True)  # without the store's word, B's lone copy looks whole
    assert whole.complete == dict.fromkeys(WINDOWS, True)
    fleet = _read({"windows": {"isPartial": True}}, lost_copy=True)
    assert fleet.total["total"].input_tokens == 1150  # what came back is still shown
    assert fleet.complete == ALL_FALSE
    assert all(h.complete == ALL_FALSE and h.state == "ok" for h in fleet.hosts)
    assert all(m.complete == ALL_FALSE for m in fleet.models)
    assert fleet.incomplete == (PARTIAL_LINE,)
    assert fleet.said == {"windows": Said(partial=True)}
    assert render_text(fleet) == (
        "                                  today         24h          3d          7d       total\n"
        "hosts (input/output tokens)\n"
        "  gpu1:9464                     150/15*     150/15*     150/15*     150/15*     150/15*\n"
        "  gpu2:9464                  1,000/100*  1,000/100*  1,000/100*  1,000/100*  1,000/100*\n"
        "models\n"
        "  qwen                       1,150/115*  1,150/115*  1,150/115*  1,150/115*  1,150/115*\n"
        "fleet                        1,150/115*  1,150/115*  1,150/115*  1,150/115*  1,150/115*\n"
        "\n"
        "2 hosts from http://p:9090, 2 counted; stale after 60 s; * = incomplete\n"
        "36 duplicate series taken once (the copies differ only in replica)\n"
        f"INCOMPLETE:\n  {PARTIAL_LINE}\n"
    )
    code, out = _exit_status(monkeypatch, {"windows": {"isPartial": True}}, "--json")
    doc = hold_to_doc("fleet --json", out)
    assert code == 1
    assert doc["complete"] == ALL_FALSE and doc["incomplete"] == [PARTIAL_LINE]
    assert doc["partial_answers"] == {
        "windows": {"is_partial": True, "warnings": [], "warnings_left_out": 0}
    }
    assert doc["hosts"][A]["complete"] == ALL_FALSE


def test_a_warning_leaves_nothing_complete(monkeypatch: pytest.MonkeyPatch) -> None:
    said: dict[str, dict[str, Any]] = {
        "windows": {"isPartial": True},
        "up": {"warnings": [WARNING]},
    }
    fleet = _read(said)
    assert fleet.complete == ALL_FALSE
    assert fleet.incomplete == (
        PARTIAL_LINE,
        f"the store's answer to up came with a warning: {WARNING}",
    )
    code, out = _exit_status(monkeypatch, said)  # docs/fleet.md, "A partial answer"
    assert code == 1
    warned = f"the store's answer to up came with a warning: {WARNING}"
    assert out.endswith(f"INCOMPLETE:\n  {PARTIAL_LINE}\n  {warned}\n")
    code, out = _exit_status(monkeypatch, {"targets": {"warnings": [WARNING]}}, "--json")
    doc = hold_to_doc("fleet --json", out)
    assert code == 1 and doc["complete"] == ALL_FALSE
    assert doc["partial_answers"] == {
        "targets": {"is_partial": False, "warnings": [WARNING], "warnings_left_out": 0}
    }
    assert doc["incomplete"] == [f"the store's answer to targets came with a warning: {WARNING}"]


def test_a_warning_is_cut_and_escaped_and_infos_are_notes() -> None:
    forged = "\x1b]0;owned\x07\nfleet complete" + "x" * 300
    fleet = _read({"seen": {"warnings": [forged, *[WARNING] * 6]}, "up": {"infos": ["info\n"]}})
    assert fleet.complete == ALL_FALSE
    first = fleet.incomplete[0].removeprefix("the store's answer to seen came with a warning: ")
    assert first == "\\x1b]0;owned\\x07\\x0afleet complete" + "x" * 175 + "..."  # 200 kept
    assert len(fleet.incomplete) == 6  # five warnings kept, then how many more
    assert fleet.incomplete[-1] == "the store's answer to seen: 2 more warnings"
    assert fleet.notes == ("the store's answer to up came with an info: info\\x0a",)
    assert "\x1b" not in render_text(fleet)
    infos_only = _read({"up": {"infos": ["PromQL info: nothing is missing"]}})
    assert infos_only.complete == dict.fromkeys(WINDOWS, True) and infos_only.said == {}


def test_fleet_by_key_from_a_partial_answer_is_incomplete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fetch = _store({"windows": {"isPartial": True}, "rows": {"warnings": [WARNING]}})
    fleet, whose = read_fleet_whose("http://p:9090", "key", clock=lambda: AT, fetch=fetch)
    assert whose.complete == ALL_FALSE and fleet.complete == ALL_FALSE
    assert fleet.incomplete == (
        PARTIAL_LINE,
        f"the store's answer to rows came with a warning: {WARNING}",
    )
    assert set(fleet.said) == {"windows", "rows"}
    code, out = _exit_status(monkeypatch, {"rest": {"isPartial": True}}, "--by", "key")
    assert code == 1
    assert "  the store's answer to rest is partial (isPartial)" in out
