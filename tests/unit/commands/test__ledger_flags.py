"""The flags of every command that reads ledgers (commands/_ledger_flags.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from vllm_ledger.commands._ledger_flags import add_filters, add_roots, add_zeros, roots_of
from vllm_ledger.errors import BadArgument


def test_roots_filters_and_zeros_parse(tmp_path: Path) -> None:
    p = argparse.ArgumentParser()
    add_roots(p)
    add_filters(p)
    add_zeros(p)
    args = p.parse_args(["--root", str(tmp_path), "--instance", "8000", "--model", "m", "--zeros"])
    assert (args.instance, args.model, args.zeros) == (8000, "m", True)
    assert roots_of(args) == [tmp_path]


def test_a_root_that_is_no_folder_is_refused(tmp_path: Path) -> None:
    args = argparse.Namespace(root=[tmp_path / "nope"])
    with pytest.raises(BadArgument, match="is not a directory: pass --root DIR"):
        roots_of(args)
