"""The rendered script and unit call ``bundle`` as its help documents it: ``bundle --output DIR``
(docs/cli.md, "Vocabulary": a folder written is --output DIR), not the older positional folder.
Each rendered bundle command line, and the hint printed when no bundle is there, is parsed by
the real ``bundle`` parser."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.inproc import run_cli
from vllm_ledger.cli import build_parser

DATA = REPO / "tests" / "data" / "render"
PLUGIN = "/srv/artifacts/ledger-plugin"


def _bundle_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["bundle"]


def _bundle_argvs(text: str) -> list[list[str]]:
    """Every ``bundle ...`` argv in ``text``: a command line, an ExecStartPre= or the hint."""
    found = []
    for line in re.sub(r"\\\n\s*", " ", text).splitlines():  # a unit's continuations joined
        line = line.removeprefix("ExecStartPre=")
        for m in re.finditer(r"(?:vllm_ledger|vllm-ledger) +bundle ([^'>\n]*)", line):
            found.append(shlex.split(m.group(1)))
    return found


@pytest.mark.parametrize(
    ("name", "mode", "ext"),
    [("gpu-node", "bare", "sh"), ("cpu-bare", "bare", "sh"), ("gpu-node", "systemd", "service")],
)
def test_rendered_bundle_calls_name_the_folder_with_output(
    name: str, mode: str, ext: str, tmp_path: Path
) -> None:
    out = tmp_path / f"run.{ext}"
    rc, _, err = run_cli(
        "render", "--host", str(DATA / f"{name}.json"), "--mode", mode, "--usage", "--output",
        str(out),
    )  # fmt: skip
    assert rc == 0, err
    argvs = _bundle_argvs(out.read_text())
    assert argvs, out.read_text()
    for argv in argvs:
        args = _bundle_parser().parse_args(argv)
        assert args.folder is None, argv  # not positional
        assert str(args.output) == PLUGIN, argv
