"""The bounded status document: same numbers as `report --json`, small, strict to parse."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from tests.e2e.sshd import write_instance_ledger
from tests.inproc import run_cli
from vllm_ledger.formats import json as json_format
from vllm_ledger.formats import status as status_format
from vllm_ledger.formats.status import (
    MAX_BASE_BYTES,
    MAX_STATUS_BYTES,
    MAX_STATUS_INSTANCES,
    StatusParseError,
    parse,
)
from vllm_ledger.formats.status_render import render
from vllm_ledger.read.coverage import PROBLEM_CODES
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.ports import PortRow, PortRows, port_rows
from vllm_ledger.read.report import BreakdownRow, Report, WindowReport, WriterStatus, build_report
from vllm_ledger.read.windows import WINDOW_NAMES

NOW = time.time()
EVENTS = [
    (NOW - 2 * 86400, 0, 1000, 10, 400, ((10, 0.5),)),
    (NOW - 3600, 0, 2000, 30, 1500, ((20, 1.0), (11, 0.25))),
    (NOW - 60, 1, 500, 7, 0, ()),
]
FIGURES = (
    "input",
    "output",
    "cached",
    "requests",
    "hit_rate",
    "avg_speed",
    "gen_speed",
    "uncovered_seconds",
    "complete",
    "problems",
    "start",
    "cutoff",
)


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ledger")
    write_instance_ledger(root, 19001, EVENTS)
    return root


def test_status_has_the_report_numbers(ledger: Path) -> None:
    at = time.time()
    report = build_report([ledger], at_ts=at, clock=lambda: at)
    status = json.loads(render(report))
    full = json_format.report_dict(report)
    assert list(status["windows"]) == list(WINDOW_NAMES)
    for name in WINDOW_NAMES:
        for key in FIGURES:
            assert status["windows"][name][key] == full["windows"][name][key], (name, key)
    assert status["windows"]["total"]["input"] == 3500
    assert status["windows"]["24h"]["input"] == 2500
    assert status["windows"]["total"]["output"] == 47
    assert status["windows"]["total"]["cached"] == 1900
    assert status["windows"]["total"]["requests"] == 3
    assert status["windows"]["total"]["gen_speed"] == round((9 + 19 + 10) / 1.75, 6)
    assert status["clock"] == round(at, 3)
    assert status["cutoff"] == math.floor(at)
    assert status["tz_offset"] == 8 * 3600
    assert status["writers"] == {"alive": 0, "closed": 1, "stale": 0, "crashed": 0, "missing": 0}
    assert status["schema"] == 1


def test_status_round_trips_through_the_strict_parser(ledger: Path) -> None:
    at = time.time()
    report = build_report([ledger], at_ts=at, clock=lambda: at)
    doc = parse(render(report).encode())
    assert status_format.doc_dict(doc) == json.loads(render(report))


def test_status_cli_matches_report_json_at_the_same_instant(ledger: Path) -> None:
    rc, out, err = run_cli("status", "--root", str(ledger))
    assert rc == 0, err
    assert out.endswith("\n") and out.count("\n") == 1
    status = json.loads(out)
    rc, full_out, err = run_cli(
        "report", "--json", "--root", str(ledger), "--at", str(status["clock"])
    )
    assert rc == 0, err
    full = json.loads(full_out)
    for name in WINDOW_NAMES:
        for key in FIGURES:
            assert status["windows"][name][key] == full["windows"][name][key], (name, key)


def test_status_cli_refuses_a_missing_root(tmp_path: Path) -> None:
    rc, out, err = run_cli("status", "--root", str(tmp_path / "nope"))
    assert rc == 2 and out == ""
    assert err.startswith("vllm-ledger: error: ledger root ")


def _window(name: str, big: int) -> WindowReport:
    return WindowReport(
        name=name,
        start_ts=0,
        cutoff_ts=9_999_999_999,
        input_tokens=big,
        output_tokens=big,
        cached_tokens=big,
        requests=big,
        decode_tokens=big,
        decode_seconds=123_456_789.123456,
        uncovered_seconds=9_999_999_999,
        complete=False,
        # Flags are at most 1 per window (coverage adds 1 once); every count is at its largest.
        problems={c: 1 if c in ("imprecise_edge", "no_ledger") else big for c in PROBLEM_CODES},
    )


def test_worst_case_status_without_rows_is_well_under_4_kib() -> None:
    big = 10**15
    report = Report(
        schema=1,
        generated_ts=9_999_999_999.123456,
        at_ts=9_999_999_999.5,
        cutoff_ts=9_999_999_999,
        tz="Asia/Shanghai",
        roots=("/" + "x" * 4000,),  # never copied into the status
        windows=tuple(_window(n, big) for n in WINDOW_NAMES),
        writers=tuple(
            WriterStatus("r" * 100, i, 8, "h:1", "missing", None, None) for i in range(1000)
        ),
        files=(),
        runs=big,
    )
    text = render(report)
    assert len(text.encode()) < MAX_BASE_BYTES * 0.9  # 13 problem codes at 10^15 each
    assert text.isascii() and "x" * 10 not in text and "rrrr" not in text
    doc = parse(text.encode())
    assert doc.window("7d").input_tokens == big
    assert dict(doc.writers)["missing"] == 1000


def _worst_report(by: str | None = None, rows: int = 0) -> Report:
    big = 10**15
    windows = tuple(_window(n, big) for n in WINDOW_NAMES)
    return Report(
        schema=1,
        generated_ts=9_999_999_999.123456,
        at_ts=9_999_999_999.5,
        cutoff_ts=9_999_999_999,
        tz="Asia/Shanghai",
        roots=("/x",),
        windows=windows,
        writers=(),
        files=(),
        runs=big,
        breakdown_by=by,
        breakdown=tuple(BreakdownRow("\u202e" * 300 + str(i), windows) for i in range(rows)),
    )


def _worst_ports(n: int, truncated: int = 0, big: int = 10**15) -> PortRows:
    windows = tuple(_window(name, big) for name in WINDOW_NAMES)
    writers = {s: big for s in status_format.WRITER_STATES}
    return PortRows(
        tuple(PortRow(65535 - i, big, writers, windows) for i in reversed(range(n))), truncated
    )


def test_worst_case_with_16_ports_fits_the_bound_and_parses() -> None:
    text = render(_worst_report(), _worst_ports(16, truncated=10**6))
    assert len(text.encode()) <= MAX_STATUS_BYTES < 64 * 1024
    doc = parse(text.encode())
    assert doc.instances is not None and len(doc.instances) == MAX_STATUS_INSTANCES == 16
    assert doc.instances_truncated == 10**6
    assert [i.port for i in doc.instances] == list(range(65520, 65536))
    assert doc.instances[0].window("today").input_tokens == 10**15


def test_a_big_breakdown_is_cut_to_the_bound_and_counted_ports_kept() -> None:
    # 14 port rows at their largest leave room for a few breakdown rows (16 leave none).
    text = render(_worst_report("run", rows=40), _worst_ports(14))
    assert len(text.encode()) <= MAX_STATUS_BYTES
    got = json.loads(text)
    kept = len(got["breakdown"]["rows"])
    assert 0 < kept < 16 and got["breakdown"]["truncated"] == 40 - kept
    assert len(got["instances"]) == 14 and got["instances_truncated"] == 0
    assert text.isascii() and "\\u202e" in text  # ledger text stays escaped, cut to 64
    assert all(len(r["key"]) == 64 for r in got["breakdown"]["rows"])
    assert parse(text.encode()).instances is not None  # the bot ignores the breakdown


def test_a_port_row_round_trips_through_the_strict_parser(ledger: Path) -> None:
    at = time.time()
    with LedgerSet.read([ledger], clock=lambda: at) as ls:
        report = build_report(ls, at_ts=at)
        ports = port_rows(ls, report)
    text = render(report, ports)
    doc = parse(text.encode())
    assert status_format.doc_dict(doc) == json.loads(text)
    row = doc.instance(19001)
    assert row is not None and doc.instance(19002) is None
    assert [w.input_tokens for w in row.windows] == [w.input_tokens for w in doc.windows]


GOOD = {
    "schema": 1,
    "clock": 1795943918.5,
    "cutoff": 1795943918,
    "tz_offset": 28800,
    "runs": 1,
    "files_bad": 0,
    "writers": {"alive": 1, "closed": 0, "stale": 0, "crashed": 0, "missing": 0},
    "windows": {
        n: {
            "start": 1795857518,
            "cutoff": 1795943918,
            "input": 10,
            "output": 5,
            "cached": 4,
            "requests": 1,
            "hit_rate": 0.4,
            "avg_speed": 0.1,
            "gen_speed": None,
            "uncovered_seconds": 0,
            "complete": True,
            "problems": {},
        }
        for n in WINDOW_NAMES
    },
}


def _row(port: int, **total: object) -> dict[str, object]:
    windows = json.loads(json.dumps(GOOD["windows"]))
    windows["total"].update(total)
    return {"port": port, "runs": 1, "writers": dict(GOOD["writers"]), "windows": windows}  # type: ignore[call-overload]


GOOD_ROWS = {**GOOD, "instances": [_row(19001), _row(19002)], "instances_truncated": 0}


def _with(path: str, value: object, base: dict[str, object] = GOOD) -> bytes:
    doc = json.loads(json.dumps(base))
    *parents, last = path.split(".")
    node = doc
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return json.dumps(doc).encode()


def test_a_good_document_parses() -> None:
    doc = parse(json.dumps(GOOD).encode())
    assert doc.window("today").hit_rate == 0.4
    assert doc.window("today").gen_speed is None


def test_extra_keys_are_ignored_but_never_kept() -> None:
    data = _with("evil", "\x1b]0;pwned\x07")
    doc = parse(data.replace(b'"schema"', b'"zz": [1, 2], "schema"', 1))
    assert "evil" not in repr(doc) and "pwned" not in repr(doc) and "zz" not in repr(doc)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00\x00",
        b"[]",
        b"not json",
        json.dumps(GOOD).encode() + b"\x00",
        json.dumps(GOOD).replace('"runs": 1', '"runs": 1e309').encode(),
        json.dumps(GOOD).replace('"runs": 1', '"runs": NaN').encode(),
        json.dumps(GOOD).replace('"clock": 1795943918.5', '"clock": Infinity').encode(),
        json.dumps(GOOD).replace('"clock": 1795943918.5', '"clock": 1e309').encode(),
        _with("windows.today.input", -5),
        _with("windows.today.input", 2**80),
        _with("windows.today.input", 10**400),
        _with("windows.today.input", "10"),
        _with("windows.today.input", True),
        _with("windows.today.input", 1.5),
        _with("windows.today.cached", 11),  # more cached than input
        _with("windows.today.hit_rate", 1.5),
        _with("windows.today.avg_speed", -0.1),
        _with("windows.today.complete", 1),
        _with("windows.today.problems", {"rm -rf": 1}),
        _with("windows.today.problems", {"writer_missing": -1}),
        _with("writers", {"alive": 1}),
        _with("schema", 2),
        _with("clock", 5),
        _with("windows.3d", None),
        json.dumps(GOOD).replace('"runs": 1', '"runs": 1, "runs": 2').encode(),
        '{"schema": 1, "x": "\u00e9"}'.encode(),
        b'{"schema": 1, "x": "\xff\xfe"}',
        b"[" * 100000,
        b"1" * 70000,
    ],
)
def test_hostile_documents_are_refused(data: bytes) -> None:
    with pytest.raises(StatusParseError):
        parse(data)


def test_a_document_with_port_rows_parses() -> None:
    doc = parse(json.dumps(GOOD_ROWS).encode())
    assert doc.instances is not None and [i.port for i in doc.instances] == [19001, 19002]
    assert doc.instance(19002) is not None and doc.instance(8000) is None
    assert parse(json.dumps(GOOD).encode()).instances is None  # an older host: no rows


def _rows_with(rows: object, **top: object) -> bytes:
    return json.dumps({**GOOD, "instances": rows, "instances_truncated": 0, **top}).encode()


def _many(n: int) -> list[dict[str, object]]:
    """``n`` rows of ports 1000 and up, sharing one row's figures (each worker builds these at
    collection: 5000 rows each with their own copy took a third of a second)."""
    row = _row(1000)
    return [{**row, "port": 1000 + i} for i in range(n)]


@pytest.mark.parametrize(
    "data",
    [
        _rows_with(_many(17)),  # more rows than any host sends
        _rows_with(_many(5000)),
        _rows_with({"19001": _row(19001)}),  # not a list
        _rows_with("19001"),
        _rows_with([_row(19001), _row(19001)]),  # a port given twice
        _rows_with([7]),
        _rows_with([None]),
        _with("instances.0.port", 0, GOOD_ROWS),
        _with("instances.0.port", 65536, GOOD_ROWS),
        _with("instances.0.port", -19001, GOOD_ROWS),
        _with("instances.0.port", "19001", GOOD_ROWS),
        _with("instances.0.port", 19001.0, GOOD_ROWS),
        _with("instances.0.port", True, GOOD_ROWS),
        _with("instances.0.port", 2**80, GOOD_ROWS),
        _with("instances.0.port", None, GOOD_ROWS),
        _with("instances.0.runs", -1, GOOD_ROWS),
        _with("instances.0.writers", {"alive": 1}, GOOD_ROWS),
        _with("instances.0.writers", {**GOOD["writers"], "evil": 1}, GOOD_ROWS),  # type: ignore[dict-item]
        _with("instances.0.windows", {}, GOOD_ROWS),
        _with("instances.0.windows.today.input", -5, GOOD_ROWS),
        _with("instances.0.windows.today.input", 10**16, GOOD_ROWS),
        _with("instances.0.windows.today.hit_rate", float("1e308"), GOOD_ROWS),
        _with("instances.0.windows.today.problems", {"\x1b[2J": 1}, GOOD_ROWS),
        # A port claiming more than the whole data dir in the same window.
        _with("instances.1.windows.today.input", 11, GOOD_ROWS),
        _with("instances.1.windows.total.requests", 2, GOOD_ROWS),
        _with("instances_truncated", -1, GOOD_ROWS),
        _with("instances_truncated", "0", GOOD_ROWS),
        _with("instances_truncated", 10**16, GOOD_ROWS),
        json.dumps({**GOOD, "instances": []}).encode(),  # rows without their count
    ],
)
def test_hostile_port_rows_refuse_the_document(data: bytes) -> None:
    with pytest.raises(StatusParseError):
        parse(data)


# ---- the per-port health probe (the notifier's health where the config has no host) ------


def test_a_row_health_parses_and_a_bad_one_rejects_the_document() -> None:
    rows = [
        {**_row(19001), "health": {"state": "healthy", "http_status": 200}},
        {**_row(19002), "health": {"state": "down", "http_status": None}},
    ]
    doc = parse(_rows_with(rows))
    assert doc.instances is not None
    assert [i.health for i in doc.instances] == [("healthy", 200), ("down", None)]
    assert status_format.doc_dict(doc)["instances"][1]["health"] == {
        "state": "down",
        "http_status": None,
    }
    for bad in (
        {"state": "unknown", "http_status": None},
        {"state": "HEALTHY", "http_status": 200},
        {"state": "healthy\x1b", "http_status": 200},
        {"state": "healthy", "http_status": 99},
        {"state": "healthy", "http_status": "200"},
        {"state": "healthy", "http_status": True},
        {"state": "healthy", "http_status": 200, "body": "pwned"},
        {"state": "healthy"},
        "healthy",
    ):
        with pytest.raises(StatusParseError):
            parse(_rows_with([{**_row(19001), "health": bad}]))


def test_the_status_command_probes_each_port_on_127_0_0_1(tmp_path: Path) -> None:
    from devtools.ports import free_port
    from tests.e2e.notifier_fakes import HealthStandIn

    vllm = HealthStandIn().start()
    closed = free_port()
    try:
        write_instance_ledger(tmp_path / "u", vllm.port, EVENTS, run_id="r1")
        write_instance_ledger(tmp_path / "u", closed, EVENTS, run_id="r2")
        rc, out, err = run_cli("status", "--root", str(tmp_path / "u"))
        rc2, out2, _ = run_cli("status", "--root", str(tmp_path / "u"), "--no-health")
    finally:
        vllm.stop()
    assert rc == 0 and rc2 == 0, err
    rows = {r["port"]: r for r in json.loads(out)["instances"]}
    assert rows[vllm.port]["health"] == {"state": "healthy", "http_status": 200}
    assert rows[closed]["health"] == {"state": "down", "http_status": None}
    assert all("health" not in r for r in json.loads(out2)["instances"])
    doc = parse(out.encode())
    assert doc.instance(vllm.port) is not None and doc.instance(closed) is not None


def test_the_clock_is_never_rounded_up_past_its_cutoff_second(ledger: Path) -> None:
    """At .9996 of a second, rounding would print the next second: `report --at CLOCK` would
    then cut a second later than the document did."""
    at = float(int(NOW)) + 0.9996
    status = json.loads(render(build_report([ledger], at_ts=at, clock=lambda: at)))
    assert status["clock"] == int(NOW) + 0.999
    assert status["cutoff"] == int(NOW) == math.floor(status["clock"])
