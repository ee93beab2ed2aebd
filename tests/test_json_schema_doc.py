"""docs/json-schema.md is the contract of `report --json`: held against what the report prints.

Every golden `report --json` output (tests/golden: every case, every breakdown and filter) is
walked; each object's keys must be exactly the keys its table documents (the optional
top-level `breakdown` and `filter` must each appear in some case), and the lists of problem
codes, writer states and file statuses must equal the code's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args

from vllm_ledger.read.coverage import PROBLEM_CODES
from vllm_ledger.read.snapshot import FileStatus
from vllm_ledger.read.writer_state import WriterState

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "json-schema.md"
GOLDEN = REPO / "tests" / "golden" / "cases"
OPTIONAL_TOP = {"breakdown", "calendar", "filter", "nothing_matched"}


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


def test_closed_lists_equal_the_code() -> None:
    tables = _tables()
    assert tables["Problem codes"] == list(PROBLEM_CODES)
    assert set(tables["Writer states"]) == set(get_args(WriterState))
    # "ok" files are read; a file still "starting" (claimed, never committed) is not listed.
    assert set(tables["File statuses"]) == set(get_args(FileStatus)) - {"ok", "starting"}


def test_the_json_module_points_at_the_page() -> None:
    from vllm_ledger.formats import json as json_format

    assert "docs/json-schema.md" in (json_format.__doc__ or "")
    assert DOC.exists()
