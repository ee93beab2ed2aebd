"""docs/json-schema.md is the contract of `report --json`: held against what the report prints.

Every golden `report --json` output (tests/golden: every case, every breakdown and filter) is
walked; each object's keys must be exactly the keys its table documents (the optional
top-level `breakdown`, `filter` and `whose` must each appear in some case), and the lists of
problem codes, writer states, file statuses and not-attributed reasons must equal the code's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args

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
