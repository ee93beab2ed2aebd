"""A window nobody knows the figures of (nothing recorded in it) in the status document: 0 on
the wire with the word ``"figures": "unknown"`` beside them (bots older than the word read
numbers), and unknown in all that a bot makes of it, never 0; at a fixed instant, whatever the
hour of the day."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import pytest

from tests.e2e.sshd import write_instance_ledger
from tests.inproc import run_cli
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.formats.status import StatusParseError, doc_dict, parse
from vllm_ledger.read.windows import WINDOW_NAMES
from vllm_ledger.write.recorder import Recorder

NOW = float(int(time.time()))
# B's writer lived three days after A's: at AT, "today" and the last 24 hours began after the
# last second A's writer vouched for, in any zone.
LATER = NOW + 3 * 86400
AT = LATER + 60
FIGURES = ("input", "output", "cached", "requests")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ledger")
    write_instance_ledger(
        root, 19011, [(NOW - 60, 0, 4000, 200, 1000, ((200, 4.0),))], "run-s1", "host-s"
    )
    instance = InstanceInfo(("tiny",), 19012, "host-s", "0.32.0")
    rec = Recorder(root, WriterIdentity("run-s2", 0, 1, pid=4243, instance=instance))
    rec.clock = lambda: LATER
    rec.start()
    assert rec.submit((LATER - 300, 0, 60, 6, 0, ((6, 0.5),)))
    assert rec.close(timeout_s=30.0)
    return root


def _cli(root: Path, *args: str) -> str:
    rc, out, err = run_cli(*args, "--root", str(root), "--at", repr(AT))
    assert rc == 0, err
    return out


@pytest.fixture(scope="module")
def wire(root: Path) -> dict:
    return json.loads(_cli(root, "status", "--no-health"))


def test_the_wire_keeps_zeros_for_older_bots_and_says_unknown(wire: dict) -> None:
    rows = {i["port"]: i for i in wire["instances"]}
    for name in ("today", "24h"):
        w = rows[19011]["windows"][name]
        assert [w[k] for k in FIGURES] == [0, 0, 0, 0]
        assert w["figures"] == "unknown" and w["complete"] is False
        assert w["uncovered_seconds"] == w["cutoff"] - w["start"]
        assert "figures" not in rows[19012]["windows"][name]  # counted there: a number
        assert "figures" not in wire["windows"][name]  # the whole data dir counted B's
    assert [rows[19011]["windows"]["total"][k] for k in FIGURES] == [4000, 200, 1000, 1]
    assert "figures" not in rows[19011]["windows"]["total"]


def test_the_bot_reads_unknown_where_the_report_says_unknown(root: Path, wire: dict) -> None:
    doc = doc_dict(parse(json.dumps(wire).encode()))
    for port in (19011, 19012):
        full = json.loads(_cli(root, "report", "--json", "--instance", f"host-s:{port}"))
        row = next(i for i in doc["instances"] if i["port"] == port)
        for name in WINDOW_NAMES:
            for key in FIGURES:
                assert row["windows"][name][key] == full["windows"][name][key], (port, name, key)
            unknown = full["windows"][name]["figures"] == "unknown"
            assert (row["windows"][name].get("figures") == "unknown") is unknown, (port, name)
    row = next(i for i in doc["instances"] if i["port"] == 19011)
    assert row["windows"]["today"]["input"] is None
    assert row["windows"]["today"]["avg_speed"] is None


def test_an_older_host_without_the_word_is_read_unknown_from_its_numbers(wire: dict) -> None:
    said = {n: wire["instances"][0]["windows"][n].get("figures") for n in WINDOW_NAMES}
    assert list(said.values()).count("unknown") == 3  # today, 24h, 3d: A's writer lived before
    older = copy.deepcopy(wire)
    for w in [older["windows"][n] for n in WINDOW_NAMES] + [
        i["windows"][n] for i in older["instances"] for n in WINDOW_NAMES
    ]:
        w.pop("figures", None)
    row = parse(json.dumps(older).encode()).instance(19011)
    assert row is not None
    assert {n: row.window(n).known for n in WINDOW_NAMES} == {
        n: said[n] or "lower_bound" for n in WINDOW_NAMES
    }


def test_a_host_saying_less_is_believed_and_a_strange_word_refuses(wire: dict) -> None:
    doc = copy.deepcopy(wire)
    w = doc["instances"][1]["windows"]["total"]
    assert w["input"] == 60
    w["figures"] = "unknown"
    row = parse(json.dumps(doc).encode()).instance(19012)
    assert row is not None and row.window("total").known == "unknown"
    for bad in ("zero", 0, None, "UNKNOWN"):
        w["figures"] = bad
        with pytest.raises(StatusParseError, match="figures"):
            parse(json.dumps(doc).encode())


def test_the_bot_line_shows_a_question_mark_not_zero(root: Path) -> None:
    text = _cli(root, "status", "--no-health", "--text", "--lang", "en", "--instance", "19011")
    rows = {ln.split()[0]: ln.split() for ln in text.splitlines() if ln.split()}
    assert rows["today"][1:7] == ["?"] * 6
    assert rows["24h"][1:7] == ["?"] * 6
    assert rows["total"][1:4] == ["4.0K", "200", "1.0K"]
