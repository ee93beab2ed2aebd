"""End to end: a real vLLM whose ledger directory is a tmpfs that is full before it starts.
vLLM serves; its writer creates a file it can never commit to. The report and check name that
writer (what, since when, why) and exit non-zero: never "no ledger", never "ok"."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from devtools.traffic import send_mix
from tests.conftest import run_cli
from tests.faults.helpers import fill_disk, tmpfs, wait_for
from vllm_ledger.read.open_ledger import EMPTY_GRACE_S

pytestmark = pytest.mark.e2e


def _ledger_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.ledger.sqlite"))


def test_a_writer_on_a_disk_full_from_the_start_is_named_never_committed(vllm_server) -> None:
    with tmpfs("96k") as mnt:
        root = mnt / "ledger"
        root.mkdir()
        filler = fill_disk(mnt)
        s = vllm_server(root)
        try:
            sent = send_mix(s.url, "tiny")
            assert sent.ok == sent.sent - sent.disconnected  # vLLM serves on
            wait_for(lambda: bool(_ledger_files(root)), 30, "the writer's file")
            (path,) = _ledger_files(root)
            created = path.stat().st_mtime
            # The grace a starting writer gets, measured from the file's own time.
            time.sleep(max(0.0, created + EMPTY_GRACE_S + 0.5 - time.time()))

            code, out, err = run_cli("report", "--root", str(root))
            assert code == 3, err
            first = out.splitlines()[0]
            assert first.startswith(
                f"nothing committed: 1 ledger file(s) under {root} were created (from "
            ), out
            assert "never committed to: the writer could not write (a full disk?" in first
            assert f"ledger {path}: never_committed (run " in out
            assert "nothing committed since" in out
            # Every window names it: none is complete.
            assert out.count("never_committed 1") == 5, out

            code, out, _err = run_cli("report", "--root", str(root), "--json")
            assert code == 3
            doc = json.loads(out)
            nm = doc["nothing_matched"]
            assert (nm["reason"], nm["never_committed"], nm["starting"]) == (
                "never_committed",
                1,
                0,
            )
            assert abs(nm["never_committed_since"] - created) < 1
            assert all(w["problems"] == {"never_committed": 1} for w in doc["windows"].values())
            assert not any(w["complete"] for w in doc["windows"].values())

            code, out, _err = run_cli("check", "--root", str(root))
            assert code == 1, out
            assert "NEVER_COMMITTED" in out and str(path) in out
            assert "a full disk, no write permission" in out
        finally:
            s.stop()
            filler.unlink()
