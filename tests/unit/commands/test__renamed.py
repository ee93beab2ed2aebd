"""Old spellings of flags, kept for one release (commands/_renamed.py)."""

from __future__ import annotations

import argparse

from vllm_ledger.commands._renamed import add_renamed_duration, deprecation_notes
from vllm_ledger.commands._values import duration


def test_an_old_spelling_stores_where_the_new_one_does_and_leaves_one_note() -> None:
    p = argparse.ArgumentParser()
    new = duration("--every", 1, 3600, "5s")
    p.add_argument("--every", type=new, default=5.0)
    add_renamed_duration(p, "--interval", "--every", dest="every", like=new)
    args = p.parse_args(["--interval", "90", "--interval", "120"])
    assert args.every == 120
    assert deprecation_notes(args) == [
        "--interval is deprecated; use --every 2m (it still works until the next release)"
    ]
    assert deprecation_notes(p.parse_args([])) == []
    assert "--interval" not in p.format_help()
