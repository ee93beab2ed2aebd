"""Golden outputs: every figure the command line prints for eleven small ledger roots.

Each case under tests/golden/cases/ holds ledger files written by the project's own Recorder
on fake clocks (see make_golden.py for what each case is), the commands to run on them
(``commands.json``) and what those commands printed when the case was made (``expected/``).
The test runs every command on its own fresh copy of the case's root in ``tmp_path`` (readers
must not write into the committed folder) and compares the output byte for byte.

Only the command line is used: ``python -m vllm_ledger`` in a subprocess whose wall clock is
fixed per command (``cli_clock.py``), so ``status`` and ``check``, which have no ``--at``,
are deterministic too. Before comparing, the copy's path becomes ``{root}`` and the JSON
``"generated_at"`` (report) and ``"clock"`` (status) values become ``"{wall_clock}"``; see
harness.py. Nothing else is normalised.

A difference means a figure or its rendering changed. If that is intended, remake the cases
with ``PYTHONPATH=. python tests/golden/make_golden.py`` and review the diff.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from tests.golden import harness

MAX_DIFF_LINES = 80


def _diff(expected: str, got: str, name: str) -> str:
    lines = list(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            got.splitlines(keepends=True),
            fromfile=f"expected/{name}",
            tofile="got",
        )
    )
    more = len(lines) - MAX_DIFF_LINES
    return "".join(lines[:MAX_DIFF_LINES]) + (f"... {more} more diff lines\n" if more > 0 else "")


def test_there_are_cases() -> None:
    assert len(harness.case_names()) >= 10


@pytest.mark.parametrize("case", harness.case_names())
def test_outputs_match_golden(case: str, tmp_path: Path) -> None:
    case_dir = harness.CASES / case
    expected_dir = case_dir / "expected"
    stdout, status = harness.run_case(case_dir, tmp_path)

    recorded = {p.name for p in expected_dir.iterdir()} - {harness.EXIT_FILE}
    assert recorded == {f"{slug}.txt" for slug in stdout}, "expected/ and commands.json differ"

    failures = []
    for slug, got in stdout.items():
        want = (expected_dir / f"{slug}.txt").read_bytes()
        if got.encode("utf-8") != want:
            argv = " ".join(harness.load_commands(case_dir)[slug]["argv"])
            failures.append(
                f"--- {case}/{slug}: vllm-ledger {argv}\n"
                + _diff(want.decode("utf-8"), got, f"{slug}.txt")
            )
    want_status = json.loads((expected_dir / harness.EXIT_FILE).read_text())
    for slug in stdout:
        if status[slug] != want_status.get(slug):
            failures.append(
                f"--- {case}/{slug}: exit code or stderr\n"
                f"expected {want_status.get(slug)!r}\ngot      {status[slug]!r}\n"
            )
    assert not failures, f"{len(failures)} of {len(stdout)} outputs differ:\n" + "\n".join(failures)
