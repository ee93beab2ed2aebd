"""The longest test files are handed out first; a file's tests keep their order."""

from __future__ import annotations

from pathlib import Path

from devtools.file_order import UNKNOWN_TEST_S, load_seconds, longest_first, seconds_from_junit


def test_the_longest_file_goes_first_and_keeps_its_tests_in_order() -> None:
    files = [("a.py", ["a1", "a2"]), ("b.py", ["b1"]), ("c.py", ["c1", "c2", "c3"])]
    assert longest_first(files, {"a.py": 1.0, "b.py": 300.0, "c.py": 2.0}) == [
        "b1", "c1", "c2", "c3", "a1", "a2",
    ]  # fmt: skip


def test_an_unknown_file_counts_its_tests_and_ties_keep_their_order() -> None:
    files = [("new.py", ["n1", "n2", "n3"]), ("x.py", ["x1"]), ("y.py", ["y1"])]
    seconds = {"x.py": UNKNOWN_TEST_S * 3, "y.py": UNKNOWN_TEST_S * 3}
    assert longest_first(files, seconds) == ["n1", "n2", "n3", "x1", "y1"]
    assert longest_first(files, {}) == ["n1", "n2", "n3", "x1", "y1"]


def test_the_durations_file_is_read_strictly(tmp_path: Path) -> None:
    f = tmp_path / "durations.json"
    f.write_text('{"a.py": 3.5, "b.py": -1, "c.py": "7", "d.py": true, "e.py": 2}')
    assert load_seconds(f) == {"a.py": 3.5, "e.py": 2.0}
    f.write_text("[1, 2]")
    assert load_seconds(f) == {}
    assert load_seconds(tmp_path / "missing.json") == {}


def test_seconds_per_file_from_a_junit_report(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.e2e.test_a" name="t1" time="10.5"/>'
        '<testcase classname="tests.e2e.test_a" name="t2" time="1.25"/>'
        '<testcase classname="tests.unit.read.test_b.TestX" name="t3" time="0.3"/>'
        '<testcase classname="conftest" name="odd" time="9"/>'
        "</testsuite></testsuites>"
    )
    assert seconds_from_junit(report) == {
        "tests/e2e/test_a.py": 11.8,
        "tests/unit/read/test_b.py": 0.3,
    }
