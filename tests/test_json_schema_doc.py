"""docs/json-schema.md is the contract of `report --json`: held against what the report prints.

Every golden `report --json` output (tests/golden: every case, every breakdown and filter) is
walked; each object's keys must be exactly the keys its table documents (the optional
top-level `breakdown`, `filter` and `whose` must each appear in some case), and the lists of
problem codes, writer states, file statuses and not-attributed reasons must equal the code's.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any, get_args

import pytest

from tests.conftest import run_cli
from tests.ledgers import ev, write_ledger
from vllm_ledger.read.coverage import PROBLEM_CODES
from vllm_ledger.read.snapshot import FileStatus
from vllm_ledger.read.whose import STORED_REASONS
from vllm_ledger.read.writer_state import WriterState

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "json-schema.md"
GOLDEN = REPO / "tests" / "golden" / "cases"
OPTIONAL_TOP = {"breakdown", "calendar", "filter", "nothing_matched", "whose"}
WHOSE_TABLES = ("Whose tokens", "A whose window", "A whose row", "Not attributed", "A reason")


def _tables() -> dict[str, list[str]]:
    """First column of each section's table, by the section's heading."""
    out: dict[str, list[str]] = {}
    heading = ""
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
        m = re.match(r"^\| `([^`]+)` \|", line)
        if m and heading:
            out.setdefault(heading, []).append(m.group(1))
    return out


def _golden_docs() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(GOLDEN.glob("*/expected/*report-json*.txt")):
        docs.append(json.loads(path.read_text()))
    assert len(docs) >= 20, "the golden cases hold many report --json outputs"
    return docs


def test_every_printed_key_is_documented_and_every_documented_key_is_printed() -> None:
    tables = _tables()
    seen: dict[str, set[str]] = {
        k: set()
        for k in ("Top level", "A window", "A writer", "A file", "The filter", "Nothing matched")
    }
    breakdown_keys: set[str] = set()
    for doc in _golden_docs():
        top = set(doc)
        assert top - OPTIONAL_TOP == set(tables["Top level"]) - OPTIONAL_TOP, sorted(top)
        seen["Top level"] |= top
        windows = list(doc["windows"].values())
        if "breakdown" in doc:
            breakdown_keys |= set(doc["breakdown"])
            for row in doc["breakdown"]["rows"]:
                assert set(row) == {"key", "windows"}
                windows += list(row["windows"].values())
        for w in windows:
            assert set(w) == set(tables["A window"])
            seen["A window"] |= set(w)
        for wr in doc["writers"]:
            assert set(wr) == set(tables["A writer"])
            seen["A writer"] |= set(wr)
        for f in doc["files"]:
            assert set(f) == set(tables["A file"])
            seen["A file"] |= set(f)
        if "filter" in doc:
            assert set(doc["filter"]) == set(tables["The filter"])
            seen["The filter"] |= set(doc["filter"])
        if "nothing_matched" in doc:
            assert set(doc["nothing_matched"]) == set(tables["Nothing matched"])
            seen["Nothing matched"] |= set(doc["nothing_matched"])
    for heading, keys in seen.items():
        assert keys == set(tables[heading]), heading
    assert breakdown_keys == set(tables["The breakdown"])


def test_every_whose_key_is_documented_and_printed() -> None:
    """``--by key|adapter|user|tenant``: the ``whose`` object, its windows, rows, the
    not-attributed object and its reasons, each as its table says, in some golden case."""
    tables = _tables()
    seen: dict[str, set[str]] = {k: set() for k in WHOSE_TABLES}
    bys: set[str] = set()
    for doc in _golden_docs():
        if "whose" not in doc:
            continue
        whose = doc["whose"]
        assert set(whose) == set(tables["Whose tokens"])
        seen["Whose tokens"] |= set(whose)
        assert list(whose["windows"]) == list(doc["windows"])
        bys.add(whose["by"])
        for ww in whose["windows"].values():
            assert set(ww) == set(tables["A whose window"])
            seen["A whose window"] |= set(ww)
            assert set(ww["total"]) == set(tables["A reason"])
            for row in ww["rows"]:
                assert set(row) == set(tables["A whose row"]) and row["by"] == whose["by"]
                seen["A whose row"] |= set(row)
            na = ww["not_attributed"]
            assert set(na) == set(tables["Not attributed"])
            seen["Not attributed"] |= set(na)
            assert list(na["reasons"]) == tables["Reasons"]
            for reason in na["reasons"].values():
                assert set(reason) == set(tables["A reason"])
                seen["A reason"] |= set(reason)
    for heading, keys in seen.items():
        assert keys == set(tables[heading]), heading
    assert bys == {"key", "adapter", "user", "tenant"}


def test_closed_lists_equal_the_code() -> None:
    tables = _tables()
    assert tables["Problem codes"] == list(PROBLEM_CODES)
    assert set(tables["Writer states"]) == set(get_args(WriterState))
    # "ok" files are read; a file still "starting" (claimed, never committed) is not listed.
    assert set(tables["File statuses"]) == set(get_args(FileStatus)) - {"ok", "starting"}
    assert tables["Reasons"] == [*STORED_REASONS, "aborted"]


def test_the_json_module_points_at_the_page() -> None:
    from vllm_ledger.formats import json as json_format

    assert "docs/json-schema.md" in (json_format.__doc__ or "")
    assert DOC.exists()


# The other commands' --json (docs/json-schema.md, "The other commands' --json"): each run as a
# user runs it, its document held against the tables (every key, its type, null or not).

# A table's object key -> the table its value (an object, or an array's items) follows.
NESTED: dict[str, dict[str, str]] = {
    "doctor --json": {"checks": "doctor check"},
    "preflight --json": {"findings": "preflight finding"},
    "verify --json": {
        "ledger": "verify figures",
        "vllm": "verify figures",
        "differences": "verify difference",
        "other_server": "other server",
    },
    "check --json": {"verdicts": "check verdict"},
}
OPTIONAL: dict[str, set[str]] = {"fleet --json": {"by"}}
JSON_TYPES = {"integer", "number", "string", "boolean", "object", "array", "null"}


def _typed_tables() -> dict[str, dict[str, str]]:
    """Each section's table as key -> its type column, by the section's heading."""
    out: dict[str, dict[str, str]] = {}
    heading = ""
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
        m = re.match(r"^\| `([^`]+)` \| ([^|]+?) \|", line)
        if m and heading:
            out.setdefault(heading, {})[m.group(1)] = m.group(2)
    return out


def _type_schema(text: str, sub: dict[str, Any] | None) -> dict[str, Any]:
    """A JSON Schema for one type column (``integer``, ``object or null``, ``array of
    strings``); ``sub``: the schema of the object (or of the array's items) it names."""
    kinds: list[Any] = []
    items: dict[str, Any] | None = None
    for part in text.split(" or "):
        word, _, of = part.strip().partition(" of ")
        assert word in JSON_TYPES, f"type {text!r} in docs/json-schema.md"
        kinds.append(word)
        if of:
            items = {"type": of.removesuffix("s")}
    schema: dict[str, Any] = {"type": kinds}
    if items is not None:
        schema["items"] = items
    if sub is not None and "object" in kinds:
        rest = [k for k in kinds if k != "object"]
        return {"anyOf": [sub, {"type": rest}]} if rest else sub
    if sub is not None and "array" in kinds:
        schema["items"] = sub
    return schema


def command_schema(heading: str) -> dict[str, Any]:
    """The JSON Schema of a section's document, its nested tables filled in."""
    tables = _typed_tables()
    nested = NESTED.get(heading, {})
    props = {
        key: _type_schema(kind, command_schema(nested[key]) if key in nested else None)
        for key, kind in tables[heading].items()
    }
    return {
        "type": "object",
        "properties": props,
        "required": sorted(set(props) - OPTIONAL.get(heading, set())),
        "additionalProperties": False,
    }


def hold_to_doc(heading: str, out: str) -> dict[str, Any]:
    """``out`` is exactly one JSON document that its section describes; returned parsed."""
    import jsonschema

    doc = json.loads(out)
    jsonschema.validate(doc, command_schema(heading))
    assert doc["schema"] == 1
    return dict(doc)


NOW_RUN_START = float(int(time.time()) - 3 * 3600)  # a closed run three hours ago


@pytest.fixture
def one_run(tmp_path: Path) -> Path:
    """A real ledger root: one run, closed, its totals those of the recorded /metrics."""
    root = tmp_path / "usage"
    root.mkdir()
    write_ledger(
        root,
        "20261201-080000-a1b2",
        start_ts=NOW_RUN_START,
        end_ts=NOW_RUN_START + 100,
        events=[ev(NOW_RUN_START + 10, 1065, 121, 576, finished=[(10, 0.5)] * 12)],
    )
    return root


def test_doctor_json_is_its_table_and_keeps_vllm_stderr_out(one_run: Path) -> None:
    """The interface check imports vLLM, which prints its own lines on stderr: they are
    counted in the document and summarized after it on stderr, a slow check's progress line
    before; stdout is the document alone."""
    code, out, err = run_cli(
        "doctor", "--only", "interface", "--only", "storage", "--root", str(one_run), "--json"
    )
    doc = hold_to_doc("doctor --json", out)
    assert code == 0 and doc["ok"] is True, (out, err)
    assert [c["check"] for c in doc["checks"]] == ["interface", "storage"]
    assert [c["result"] for c in doc["checks"]] == ["pass", "pass"]
    assert doc["summary"] == "2 of 2 checks pass"
    # A check that runs past 2 s says so as it runs (importing vLLM does, here); then the one
    # line that counts what vLLM wrote, if it wrote anything.
    doing = {
        "doctor: [1/2] interface: importing vLLM, one record() through the plugin",
        "doctor: [2/2] storage: the recorder over refusing storage, the roots' room",
    }
    lines = err.splitlines()
    progress = [ln for ln in lines if ln.startswith("doctor: [")]
    assert {re.sub(r" \(still, \d+ s\)$", "", ln) for ln in progress} <= doing, err
    rest = lines[len(progress) :]
    n = doc["vllm_output_lines"]
    if n:  # this vLLM on this machine said something: one summary line, nothing else
        assert len(rest) == 1 and rest[0].startswith(f"doctor: vLLM wrote {n} line(s) while"), err
    else:
        assert rest == [], err


def test_preflight_json_holds_the_tables_findings(tmp_path: Path) -> None:
    host = tmp_path / "host.json"
    host.write_text(
        json.dumps(
            {"mode": "bare", "model": "/nowhere/model", "host": "127.0.0.1", "port": 1, "gpus": []}
        )
    )
    code_text, text, _ = run_cli("preflight", "--host", str(host))
    code, out, err = run_cli("preflight", "--host", str(host), "--json")
    doc = hold_to_doc("preflight --json", out)
    assert (code, err) == (code_text, "")
    assert code == (1 if doc["blocked"] else 0)
    assert [f["check"] for f in doc["findings"]] == [
        ln.split("  ")[0] for ln in text.splitlines()[1:-1] if not ln.startswith(" ")
    ]
    assert text.splitlines()[-1].startswith(f"{doc['blockers']} blocker")


def test_verify_json_a_match_a_difference_and_another_server(one_run: Path) -> None:
    from tests.unit.read.test_verify import METRICS, MetricsServer, created_at

    this_launch = created_at(METRICS, NOW_RUN_START + 1.5)
    args = ("verify", "--root", str(one_run), "--json", "--wait", "0")
    with MetricsServer([this_launch]) as server:
        code, out, err = run_cli(*args, "--metrics-url", server.url)
    doc = hold_to_doc("verify --json", out)
    assert (code, err, doc["match"], doc["differences"]) == (0, "", True, [])
    assert doc["ledger"] == doc["vllm"] == {"input": 1065, "output": 121, "cached": 576,
                                           "requests": 12}  # fmt: skip
    assert doc["run_id"] == "20261201-080000-a1b2" and doc["other_server"] is None

    line = 'vllm:generation_tokens_total{engine="0",model_name="tiny"} 121.0'
    with MetricsServer([this_launch.replace(line, line.replace("121.0", "125.0"))]) as server:
        code, out, err = run_cli(*args, "--metrics-url", server.url)
    doc = hold_to_doc("verify --json", out)
    assert (code, err, doc["match"]) == (1, "", False)
    assert doc["differences"] == [
        {"figure": "output", "metric": "vllm:generation_tokens_total", "ledger": 121, "vllm": 125}
    ]

    with MetricsServer([created_at(METRICS, NOW_RUN_START + 600)]) as server:
        code, out, err = run_cli(*args, "--metrics-url", server.url)
    doc = hold_to_doc("verify --json", out)
    assert (code, err, doc["match"]) == (1, "", False)
    assert doc["other_server"] == {
        "created_at": NOW_RUN_START + 600,
        "run_start_at": NOW_RUN_START,
        "offset_seconds": 600.0,
    }


def test_check_json_sound_and_nothing_there(one_run: Path, tmp_path: Path) -> None:
    code, out, err = run_cli("check", "--root", str(one_run), "--json")
    doc = hold_to_doc("check --json", out)
    assert (code, err, doc["ok"], doc["files"], doc["files_with_problems"]) == (0, "", True, 1, 0)
    (v,) = doc["verdicts"]
    assert (v["ok"], v["verdict"], v["root"]) == (True, "ok", False)
    assert v["path"].endswith("/20261201-080000-a1b2/w0.g0.ledger.sqlite")

    # One level too high: no ledger file (exit 1, as without --json), and the way on stderr.
    code, out, err = run_cli("check", "--root", str(tmp_path), "--json")
    doc = hold_to_doc("check --json", out)
    assert (code, doc["ok"], doc["files"], doc["verdicts"]) == (1, False, 0, [])
    assert err == f"check: no ledger files under {tmp_path}; did you mean --root {one_run}?\n"


def test_notifier_status_json(tmp_path: Path) -> None:
    from vllm_ledger.notify.state_file import state_path
    from vllm_ledger.notify.store import Store

    config = tmp_path / "private.json"
    config.write_text("{}")
    store = Store(state_path(config), clock=lambda: NOW_RUN_START)
    store.record_health(19001, "up", None)
    store.close()
    code, out, err = run_cli("notifier", "status", "--config", str(config), "--json")
    doc = hold_to_doc("notifier status --json", out)
    assert (code, err) == (0, "")
    assert doc["health"] == {"19001": {"state": "up", "since": NOW_RUN_START}}
    assert list(doc) == sorted(doc)


def test_every_command_section_is_run_above() -> None:
    """Each command's section is held by a test here (fleet's: tests/e2e, a real
    Prometheus), and every nested table is some key's."""
    tables = _typed_tables()
    commands = [h for h in tables if h.endswith("--json")]
    assert commands == [
        "doctor --json",
        "preflight --json",
        "verify --json",
        "check --json",
        "fleet --json",
        "notifier status --json",
    ]
    nested = {t for n in NESTED.values() for t in n.values()}
    after = list(tables)[list(tables).index("doctor --json") :]
    assert set(after) == set(commands) | nested
