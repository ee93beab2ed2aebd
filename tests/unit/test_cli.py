"""The CLI imports only the command that runs; the registry lists every command."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from vllm_ledger import commands
from vllm_ledger.cli import command_module
from vllm_ledger.commands import COMMANDS


def test_the_registry_names_every_command_module_with_its_help() -> None:
    modules = {
        m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")
    }
    assert {module for module, _help in COMMANDS.values()} == modules
    for name, (_module, help_text) in COMMANDS.items():
        mod = command_module(name)
        assert (name, help_text) == (mod.NAME, mod.HELP)


WHAT_A_REPORT_IMPORTS = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from vllm_ledger.cli import main
code = main(["report", "--json", "--root", sys.argv[2], "--at", "1796000000"])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def test_a_report_imports_no_other_command_and_no_network_library(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", WHAT_A_REPORT_IMPORTS, str(REPO), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["code"] == 3  # an empty root: nothing matched (docs/cli.md)
    loaded = set(got["modules"])
    others = {f"vllm_ledger.commands.{m}" for m, _h in COMMANDS.values()} - {
        "vllm_ledger.commands.report"
    }
    assert loaded & others == set()
    heavy = {"urllib.request", "http.client", "email", "ssl", "yaml", "rich", "prometheus_client"}
    assert loaded & heavy == set()
    assert not any(
        m.startswith(("vllm_ledger.bot", "vllm_ledger.plan", "vllm_ledger.observe")) for m in loaded
    )
