"""The command line as a user meets it: help with examples, one-line errors, a bare host."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.gen_cli_docs import render
from tests.conftest import REPO, run_cli
from tests.ledgers import ev, write_ledger
from vllm_ledger.cli import build_parser, command_modules

EXTRAS = ("rich", "httpx", "matplotlib", "prometheus_client", "yaml", "pynvml", "PIL")


def test_every_command_has_help_with_an_example(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI configures only the chosen command; its --help is the full parser's, exactly."""
    monkeypatch.setenv("COLUMNS", "100")
    parser = build_parser()  # every command configured, as docs/cli.md is made
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    code, out, _ = run_cli("--help", env={"COLUMNS": "100"})
    assert (code, out) == (0, parser.format_help())
    for mod in command_modules():
        assert mod.HELP and "example" in (getattr(mod, "EPILOG", "") or "").lower(), mod.NAME
        code, out, _ = run_cli(mod.NAME, "--help", env={"COLUMNS": "100"})
        assert (code, out) == (0, sub.choices[mod.NAME].format_help()), mod.NAME


IMPORTED_COMMANDS = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from vllm_ledger.cli import main
try:
    main(json.loads(sys.argv[2]))
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("vllm_ledger.commands."))))
"""


@pytest.mark.parametrize(
    ("argv", "imported"),
    [
        (["--help"], []),
        ([], []),
        (["no-such-command"], []),
        (["--version"], []),
        (["report", "--help"], ["report"]),
        (["ssh-key-line", "--help"], ["ssh_key_line"]),
    ],
)
def test_help_imports_only_the_command_it_shows(argv: list[str], imported: list[str]) -> None:
    p = subprocess.run(
        [sys.executable, "-c", IMPORTED_COMMANDS, str(REPO), json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert [m for m in got if not m.rpartition(".")[2].startswith("_")] == [
        f"vllm_ledger.commands.{m}" for m in imported
    ]


def test_cli_reference_is_current() -> None:
    assert (REPO / "docs" / "cli.md").read_text() == render(), (
        "docs/cli.md is stale: run scripts/gen_cli_docs.py"
    )


def test_user_errors_are_one_line(tmp_path: Path) -> None:
    code, out, err = run_cli("report", "--root", str(tmp_path / "nope"))
    assert code == 2 and out == ""
    assert err == (
        f"vllm-ledger: error: ledger root {tmp_path / 'nope'} is not a directory: "
        "pass --root DIR where the ledgers are\n"
    )
    code, _, err = run_cli("report", "--root", str(tmp_path), "--tz", "Mars/Base")
    assert (code, err) == (
        2,
        "vllm-ledger: error: --tz 'Mars/Base' is not a known time zone: use an IANA name, "
        "e.g. --tz Asia/Shanghai\n",
    )
    code, _, err = run_cli("report", "--root", str(tmp_path), "--at", "soon")
    assert code == 2 and err.count("\n") == 1 and "--at 'soon' is not a time" in err


def test_report_text_and_json_on_a_real_ledger(tmp_path: Path) -> None:
    at = 1_795_000_000
    write_ledger(
        tmp_path,
        "r1",
        start_ts=at - 600,
        end_ts=at,
        events=[ev(at - 300, prompt=1200, gen=345, cached=600, finished=[(345, 6.88)])],
    )
    code, out, _ = run_cli("report", "--root", str(tmp_path), "--at", str(at), "--tz", "UTC")
    assert code == 0
    lines = out.splitlines()
    assert (
        lines[0]
        == "vLLM token ledger as of 2026-11-18 11:06:40 +00:00 (UTC); 1 run(s), 1 writer(s)"
    )
    assert lines[3].split() == [
        "today",
        "1,200",
        "345",
        "600",
        "50.0%",
        "0.01",
        "50.00",
        "1",
        "INCOMPLETE",
        "(10",
        "h",
        "56",
        "min",
        "uncovered)",
    ]
    assert lines[7].split() == [
        "total",
        "1,200",
        "345",
        "600",
        "50.0%",
        "0.57",
        "50.00",
        "1",
        "complete",
    ]


def test_bare_host_needs_no_extras(tmp_path: Path) -> None:
    """status and report run with the standard library alone (the deployment host's python3)."""
    at = 1_795_000_000
    write_ledger(tmp_path, "r1", start_ts=at - 60, end_ts=at, events=[ev(at - 30, prompt=5)])
    block = "; ".join(f"sys.modules[{m!r}] = None" for m in EXTRAS)
    for args in (
        ["--help"],
        ["status", "--root", str(tmp_path)],
        ["report", "--root", str(tmp_path), "--json"],
    ):
        code = (
            f"import sys; {block}; sys.path.insert(0, {str(REPO)!r}); "
            f"from vllm_ledger.cli import main; sys.exit(main({args!r}))"
        )
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert p.returncode == 0, (args, p.stderr[-2000:])
