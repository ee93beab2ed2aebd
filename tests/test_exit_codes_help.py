"""Every command's --help ends its epilog with an `exit status:` line naming 0 and 2 (a bad
flag always exits 2 through the CLI), and the codes a help names are the real ones: poll's, a
bad flag's for every command."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.conftest import run_cli
from vllm_ledger import cli
from vllm_ledger.commands import COMMANDS


def _exit_line(epilog: str) -> str:
    """The text from `exit status:` to the end of the epilog, on one line."""
    at = epilog.find("exit status:")
    return " ".join(epilog[at:].split()) if at >= 0 else ""


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_help_ends_with_its_exit_status(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = cli.command_module(name)
    epilog = getattr(mod, "EPILOG", "") or ""
    line = _exit_line(epilog)
    assert line, f"{name}: EPILOG has no 'exit status:' line"
    # It is the last thing the epilog says.
    assert epilog.rstrip().splitlines()[-1].strip() in line
    assert re.search(r"\b0\b", line) and re.search(r"\b2 ", line), line
    with pytest.raises(SystemExit) as done:
        cli.main([name, "--help"])
    assert done.value.code == 0
    assert "exit status:" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_bad_flag_exits_2(name: str) -> None:
    code, _out, err = run_cli(name, "--no-such-flag")
    assert code == 2, err
    assert err.startswith("vllm-ledger: error:")


def _config(tmp_path: Path, usage: Mapping[str, object]) -> Path:
    path = tmp_path / "private.json"
    path.write_text(json.dumps({"usage": usage}))
    return path


def test_poll_on_a_config_with_no_usable_entry_exits_2_as_listed(tmp_path: Path) -> None:
    line = _exit_line(cli.command_module("poll").EPILOG)
    assert "2 a bad flag or a config with no usable usage entry" in line
    code, out, err = run_cli("poll", "--config", str(_config(tmp_path, {})), "--once")
    assert (code, out) == (2, "")
    assert err.startswith("vllm-ledger: error: no usable usage entry in ")


def test_poll_with_a_refused_entry_exits_1_as_listed(tmp_path: Path) -> None:
    line = _exit_line(cli.command_module("poll").EPILOG)
    assert "1 printed but an entry was refused" in line
    usage = {
        "8000": {"target": "bot@127.0.0.1", "code_dir": "/srv/code", "data_dir": "/srv/data"},
        "8001": {"target": "bad target with spaces", "code_dir": "x", "data_dir": "y"},
    }
    code, _out, err = run_cli(
        "poll", "--config", str(_config(tmp_path, usage)), "--once", "--no-health",
        "--deadline", "2s", "--connect-timeout", "1s",
    )  # fmt: skip
    assert code == 1, err
    assert "vllm-ledger: refused: " in err
