"""Hints that point the right way: a --root one folder off, a period after the cutoff, the
top-level help's render modes. (A /metrics URL without its path is
tests/unit/commands/test_verify.py's; progress on stderr, tests/unit/test_progress.py's.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import SRV_RUN, run_cli
from tests.ledgers import write_ledger
from vllm_ledger.commands.render import RENDER_MODES
from vllm_ledger.read.matched import MAX_FOLDERS_LOOKED, nearby_roots, root_hint

RUN = SRV_RUN
START = float(int(time.time()) - 3 * 3600)


@pytest.mark.parametrize("off", ["above", "below"])
def test_a_root_one_folder_off_names_the_root(srv: Path, off: str) -> None:
    wrong = srv.parent if off == "above" else srv / RUN
    code, out, _err = run_cli("report", "--root", str(wrong))
    assert code == 3
    assert out.splitlines()[0] == (
        f"nothing matched: no ledger file under {wrong}; did you mean --root {srv}?"
    )
    code, out, _err = run_cli("check", "--root", str(wrong))
    assert (code, out) == (
        1,
        f"NO_LEDGER     no ledger files under {wrong}; did you mean --root {srv}?\n",
    )


def test_a_root_with_nothing_near_keeps_the_plugin_question(tmp_path: Path) -> None:
    assert root_hint([tmp_path]) == ""
    code, out, _err = run_cli("report", "--root", str(tmp_path))
    assert code == 3
    assert out.splitlines()[0] == (
        f"nothing matched: no ledger file under {tmp_path}: is the plugin on "
        "(VLLM_LEDGER_DIR), and is this the root it writes? (docs/ledger.md)"
    )


def test_the_root_hint_looks_a_bounded_way(tmp_path: Path) -> None:
    """A folder of many sub-folders: only the first ``MAX_FOLDERS_LOOKED`` (by name) are
    looked into; a root past them is not found (a hint, not a search)."""
    for i in range(MAX_FOLDERS_LOOKED + 5):
        (tmp_path / f"d{i:03d}").mkdir()
    late = tmp_path / f"d{MAX_FOLDERS_LOOKED + 2:03d}"
    write_ledger(late, RUN, start_ts=START, end_ts=START + 10)
    assert nearby_roots([tmp_path]) == []
    early = tmp_path / "d001"
    write_ledger(early, RUN, start_ts=START, end_ts=START + 10)
    assert nearby_roots([tmp_path]) == [early]
    assert root_hint([tmp_path]) == f"; did you mean --root {early}?"
    assert nearby_roots([tmp_path / "missing"]) == []


def test_a_period_after_the_cutoff_is_nothing_matched(srv: Path) -> None:
    code, out, _err = run_cli("report", "--root", str(srv), "--since", "2099-01-01")
    assert code == 3
    assert out.startswith("nothing matched: the period from 2099-01-01 00:00:00")


def test_the_top_level_help_names_every_render_mode() -> None:
    code, out, _err = run_cli("--help", env={"COLUMNS": "200"})
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("render "))
    assert code == 0
    for mode in RENDER_MODES:
        assert mode in line, mode


def test_doctors_attribution_row_names_the_root(srv: Path) -> None:
    from vllm_ledger.doctor.attribution import check_attribution

    row = check_attribution([srv.parent], shape_of=lambda: None)
    assert (row.passed, row.checked) == (
        False,
        f"no ledger file under {srv.parent}; did you mean --root {srv}?",
    )
