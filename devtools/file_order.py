"""The order test files are handed to pytest-xdist's workers: the longest first.

`make test` runs ``--dist loadfile``: a file's tests stay on one worker, and a worker takes the
next file from the queue when it runs short. xdist's default queue puts the files with the most
tests first, which leaves the end-to-end files (one or two tests of a minute or more each) for
last, so one core finishes them alone while the other waits. Handing out the longest files first
(longest processing time first, a greedy schedule within 4/3 of the best) keeps both cores busy
to the end.

A file's expected seconds come from ``tests/durations.json``, written from a JUnit XML report of
a real run (``python -m devtools.file_order REPORT.xml``); a file not in it counts
``UNKNOWN_TEST_S`` a test. The order only moves whole files; a file's own tests keep theirs.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parent.parent
DURATIONS = REPO / "tests" / "durations.json"
UNKNOWN_TEST_S = 0.5  # a file the durations do not know: so many seconds a test

T = TypeVar("T", bound=Hashable)


def longest_first(
    files: Sequence[tuple[str, Sequence[T]]], seconds: Mapping[str, float]
) -> list[T]:
    """The items of ``(file, items)`` pairs, whole files at a time, the longest file first;
    files of equal length keep their order."""
    order = sorted(
        range(len(files)),
        key=lambda i: -seconds.get(files[i][0], UNKNOWN_TEST_S * len(files[i][1])),
    )
    return [item for i in order for item in files[i][1]]


def load_seconds(path: Path = DURATIONS) -> dict[str, float]:
    """``tests/durations.json`` (file -> seconds); empty where it is missing or not that."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(k): float(v)
        for k, v in data.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
    }


def seconds_from_junit(report: Path) -> dict[str, float]:
    """Each test file's seconds (setup, call and teardown of its tests) in a JUnit XML report."""
    out: dict[str, float] = {}
    for case in ET.parse(report).iter("testcase"):
        parts = (case.get("classname") or "").split(".")
        ends = [i for i, p in enumerate(parts) if p.startswith("test_")]
        if not ends:
            continue
        name = "/".join(parts[: ends[0] + 1]) + ".py"
        out[name] = out.get(name, 0.0) + float(case.get("time") or 0)
    return {k: round(v, 1) for k, v in sorted(out.items())}


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m devtools.file_order REPORT.xml", file=sys.stderr)
        return 2
    seconds = seconds_from_junit(Path(argv[0]))
    DURATIONS.write_text(json.dumps(seconds, indent=1) + "\n")
    print(f"{DURATIONS.relative_to(REPO)}: {len(seconds)} files, {sum(seconds.values()):.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
