"""The commands the README prints run as printed, with the install `make setup` made (as CI does
on a fresh clone: `make test` runs `make setup` first).

Every line of a README code block that starts with ``$ vllm-ledger`` or ``$ .venv/bin/vllm-ledger``
is run verbatim with ``bash -c`` in a scratch folder that holds what the line names (the demo's
ledger at ``build/demo/ledger``, written by the real recorder), with ``.venv/bin`` first on PATH
as after ``. .venv/bin/activate``. A line that asks a server (``--metrics-url``) finds none
there: it must still end with one line and exit 2, never a traceback. ``printed_commands`` is
shared with ``tests/test_docs_commands.py``, which runs every doc's lines the same way.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.ledgers import ev, write_ledger

VENV_BIN = REPO / ".venv" / "bin"


PROMPTS = ("$ vllm-ledger ", "$ .venv/bin/vllm-ledger ")


def printed_commands(doc: Path) -> list[str]:
    """Every ``$ vllm-ledger ...`` line of ``doc``'s code blocks, without the ``$ ``, a line
    ending in a backslash joined with the next as the shell does."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", doc.read_text(), flags=re.S | re.M)
    commands = []
    for block in blocks:
        lines = iter(block.splitlines())
        for line in lines:
            if not line.startswith(PROMPTS):
                continue
            command = line[2:]
            while command.endswith("\\"):
                command = command[:-1] + next(lines, "").strip()
            commands.append(command)
    return commands


COMMANDS = printed_commands(REPO / "README.md")


def _shown_after(command: str) -> str:
    """The README's line right under ``$ command`` (what it printed), with its newline."""
    lines = (REPO / "README.md").read_text().splitlines()
    return lines[lines.index(f"$ {command}") + 1] + "\n"


def test_setup_installed_the_command_the_readme_prints() -> None:
    assert (VENV_BIN / "vllm-ledger").is_file() and os.access(VENV_BIN / "vllm-ledger", os.X_OK)
    assert len(COMMANDS) >= 2, COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_a_printed_command_runs_verbatim(command: str, tmp_path: Path) -> None:
    # The demo's ledger where the README says it is, relative to the checkout's root.
    demo = tmp_path / "build" / "demo" / "ledger"
    t0 = 1_796_000_000.0
    write_ledger(demo, "run-1", start_ts=t0, end_ts=t0 + 60, events=[ev(t0 + 5.5, prompt=9, gen=3)])
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    env = {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "VLLM_LEDGER_DIR": str(demo),
    }
    p = subprocess.run(
        ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in p.stderr, p.stderr
    if "--metrics-url" in command:  # no server here: one line, exit 2
        assert p.returncode == 2 and p.stderr.count("\n") == 1, (p.returncode, p.stderr)
    elif " keys hash " in command:  # the line the README shows under it, exactly
        assert (p.returncode, p.stderr) == (0, ""), p.stderr
        assert p.stdout == _shown_after(command), p.stdout
    else:
        assert p.returncode == 0, p.stderr
        assert "vLLM token ledger" in p.stdout or p.stdout.startswith("{"), p.stdout[:300]
