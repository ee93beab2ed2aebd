"""`--instance` takes what `--by instance` prints, on report, timeline and status alike.

One root shared by three instances, written by the real Recorder on a fake clock: gpu1:8000
(model qwen), gpu1:8001 (model llama), and gpu2:8000 (qwen again, another host name on the same
port, as a container restarted under a new name would be). Every command runs as a user runs
it (``python -m vllm_ledger``), all under one fixed wall clock (tests/golden/cli_clock.py), so
`status`, which takes no ``--at``, answers at the same instant as the others.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.ledgers import FakeClock, ev
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.windows import WINDOW_NAMES
from vllm_ledger.write.iteration import IterationEvent
from vllm_ledger.write.recorder import Recorder

AT = 1_800_000_000  # 2027-01-15 08:00:00 UTC; every writer has closed by then
H = 3600
CLOCK = AT + 0.5
LAUNCHER = REPO / "tests" / "golden" / "cli_clock.py"
STATUS_FIGURES = (
    "start",
    "cutoff",
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
)


def write(
    root: Path,
    run_id: str,
    host: str,
    port: int,
    model: str,
    start_ts: float,
    end_ts: float,
    events: list[IterationEvent],
) -> None:
    """One writer of one run, committing a heartbeat every 25 s, closed cleanly at end_ts."""
    clock = FakeClock(start_ts)
    info = InstanceInfo((model,), port, host, "0.32.0")
    rec = Recorder(root, WriterIdentity(run_id, 0, 1, pid=4242, instance=info), clock=clock)
    rec.pump()
    pending = sorted(events)
    while clock.t < end_ts:
        clock.t = min(end_ts, clock.t + 25)
        while pending and pending[0][0] < clock.t:
            rec.submit(pending.pop(0))
        rec.pump()
    rec.pump(final=True)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shared-root")
    write(
        root,
        "run-1",
        "gpu1",
        8000,
        "qwen",
        AT - 5 * H,
        AT - H,
        [
            ev(AT - 4 * H, prompt=1000, gen=100, cached=400, finished=[(100, 2.0)]),
            ev(AT - 2 * H, prompt=500, gen=20, cached=100),
        ],
    )
    write(
        root,
        "run-2",
        "gpu1",
        8001,
        "llama",
        AT - 3 * H,
        AT,
        [ev(AT - 1800, prompt=70, gen=7, cached=7, finished=[(7, 0.5)])],
    )
    write(
        root,
        "run-3",
        "gpu2",
        8000,
        "qwen",
        AT - H,
        AT,
        [ev(AT - 600, prompt=3, gen=2, finished=[(2, 0.25)])],
    )
    return root


def cli(*jobs: list[str], exit_code: int = 0) -> list[dict[str, Any]]:
    """Run each argv as `python -m vllm_ledger ARGV` under the wall clock CLOCK."""
    proc = subprocess.run(
        [sys.executable, str(LAUNCHER)],
        input=json.dumps([{"argv": list(a), "clock": CLOCK} for a in jobs]),
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    for job, r in zip(jobs, results, strict=True):
        assert r["exit"] == exit_code, (job, r["stderr"])
    return results


def out_json(r: dict[str, Any]) -> Any:
    return json.loads(r["stdout"])


def rep(root: Path, *extra: str) -> list[str]:
    return ["report", "--root", str(root), "--at", str(AT), "--tz", "UTC", "--json", *extra]


def tl(root: Path, *extra: str) -> list[str]:
    return [
        "timeline",
        "--root",
        str(root),
        "--at",
        str(AT),
        "--tz",
        "UTC",
        "--window",
        "6h",
        "--step",
        "1h",
        "--json",
        *extra,
    ]


def test_each_instance_flag_equals_its_by_instance_row(root: Path) -> None:
    by, by_tl, *singles = cli(
        rep(root, "--by", "instance"),
        tl(root, "--by", "instance"),
        *(rep(root, "--instance", k) for k in ("gpu1:8000", "gpu1:8001", "gpu2:8000")),
        *(tl(root, "--instance", k) for k in ("gpu1:8000", "gpu1:8001", "gpu2:8000")),
        ["status", "--root", str(root), "--tz", "UTC"],
        *(
            ["status", "--root", str(root), "--tz", "UTC", "--instance", k]
            for k in ("gpu1:8000", "gpu1:8001", "gpu2:8000")
        ),
    )
    rows = {r["key"]: r["windows"] for r in out_json(by)["breakdown"]["rows"]}
    assert list(rows) == ["gpu1:8000", "gpu1:8001", "gpu2:8000"]
    reports, timelines = singles[:3], singles[3:6]
    status_all, statuses = out_json(singles[6]), singles[7:]
    for key, r, t, s in zip(rows, reports, timelines, statuses, strict=True):
        # report --instance KEY: the row's windows, every field, exactly.
        assert out_json(r)["windows"] == rows[key], key
        assert out_json(r)["filter"] == {"instance": key, "model": None}
        # status --instance KEY: the same figures.
        got = out_json(s)
        for name in WINDOW_NAMES:
            for f in STATUS_FIGURES:
                assert got["windows"][name][f] == rows[key][name][f], (key, name, f)
        # timeline --instance KEY: the same steps as its --by instance row.
        tl_rows = {x["key"]: x for x in out_json(by_tl)["breakdown"]["rows"]}
        single = out_json(t)
        assert single["steps"] == tl_rows[key]["steps"], key
        assert single["window"] == tl_rows[key]["window"], key
        assert single["uncovered_spans"] == tl_rows[key]["uncovered_spans"], key
        assert single["filter"] == {"instance": key, "model": None}
    # The figures themselves (the ledgers above): nothing was lost or doubled.
    assert [rows[k]["total"]["input"] for k in rows] == [1500, 70, 3]
    assert [rows[k]["today"]["output"] for k in rows] == [120, 7, 2]
    steps = {
        x["key"]: [s["input"] for s in x["steps"]] for x in out_json(by_tl)["breakdown"]["rows"]
    }
    # None: no second of the step vouched for by that instance and nothing counted (unknown,
    # never 0; docs/ledger.md)
    assert steps == {
        "gpu1:8000": [None, 0, 1000, 0, 500, None],
        "gpu1:8001": [None, None, None, 0, 0, 70],
        "gpu2:8000": [None, None, None, None, None, 3],
    }
    # The status document's rows are per port: 8000 holds both hosts' instances.
    ports = {i["port"]: i for i in status_all["instances"]}
    assert sorted(ports) == [8000, 8001] and status_all["instances_truncated"] == 0
    assert ports[8001]["windows"]["total"]["input"] == 70
    assert ports[8000]["windows"]["total"]["input"] == 1503
    assert ports[8000]["runs"] == 2 and ports[8001]["runs"] == 1
    assert ports[8000]["writers"] == {
        "alive": 0,
        "closed": 2,
        "stale": 0,
        "crashed": 0,
        "missing": 0,
    }


def test_a_bare_port_takes_that_port_on_every_host(root: Path) -> None:
    port, key, status = cli(
        rep(root, "--instance", "8000"),
        rep(root, "--instance", "gpu2:8000"),
        ["status", "--root", str(root), "--tz", "UTC"],
    )
    whole = out_json(port)
    assert whole["filter"] == {"instance": 8000, "model": None}  # as it always was
    assert whole["windows"]["total"]["input"] == 1503 and whole["runs"] == 2
    assert out_json(key)["windows"]["total"]["input"] == 3 and out_json(key)["runs"] == 1
    # The status row for port 8000 is `report --instance 8000`, window for window.
    row = next(i for i in out_json(status)["instances"] if i["port"] == 8000)
    for name in WINDOW_NAMES:
        for f in STATUS_FIGURES:
            assert row["windows"][name][f] == whole["windows"][name][f], (name, f)


def test_model_filter_and_by_model_on_timeline_and_status(root: Path) -> None:
    by_tl, single, status = cli(
        tl(root, "--by", "model"),
        tl(root, "--model", "qwen"),
        ["status", "--root", str(root), "--tz", "UTC", "--model", "llama", "--by", "run"],
    )
    rows = {r["key"]: r for r in out_json(by_tl)["breakdown"]["rows"]}
    assert list(rows) == ["llama", "qwen"]
    assert out_json(single)["steps"] == rows["qwen"]["steps"]
    s = out_json(status)
    assert s["windows"]["total"]["input"] == 70
    assert [i["port"] for i in s["instances"]] == [8001]
    assert [r["key"] for r in s["breakdown"]["rows"]] == ["run-2"]
    assert s["breakdown"]["truncated"] == 0


def test_an_instance_not_in_the_ledgers_is_all_uncovered_never_complete(root: Path) -> None:
    (r,) = cli(rep(root, "--instance", "gpu9:8000"), exit_code=3)  # nothing matched
    doc = out_json(r)
    assert doc["nothing_matched"]["reason"] == "no_match"
    assert doc["runs"] == 0
    for w in doc["windows"].values():  # unknown (null), never 0
        assert (w["input"], w["output"], w["complete"]) == (None, None, False)
        assert w["uncovered_seconds"] == w["wall_seconds"]


def test_timeline_by_instance_text_shows_each_key(root: Path) -> None:
    argv = ["timeline", "--root", str(root), "--at", str(AT), "--tz", "UTC"]
    (r,) = cli([*argv, "--window", "6h", "--by", "instance"])
    text = r["stdout"]
    for key in ("-- gpu1:8000 --", "-- gpu1:8001 --", "-- gpu2:8000 --"):
        assert key in text
    assert "input 1,500  output 120  cached 500  hit rate 33.3%" in text
    (csv_out,) = cli([*argv, "--window", "6h", "--by", "instance", "--csv"])
    lines = csv_out["stdout"].splitlines()
    assert lines[0].startswith("key,start,start_unix,cutoff,cutoff_unix,")
    assert len(lines) == 1 + 3 * 6
    assert lines[1].startswith("gpu1:8000,")


def test_the_library_takes_a_port_as_an_int_or_digits(root: Path) -> None:
    with LedgerSet.read([root], clock=lambda: CLOCK) as ls:
        as_int = ls.select(8000)
        assert as_int == ls.select("8000")
        assert {s.instance.key for s in as_int} == {"gpu1:8000", "gpu2:8000"}
        assert {s.instance.key for s in ls.select("gpu1:8000")} == {"gpu1:8000"}
        assert ls.select("gpu1:80") == []  # keys match whole, never by prefix
        assert {s.instance.key for s in ls.select(model="llama")} == {"gpu1:8001"}
