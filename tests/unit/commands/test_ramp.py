"""``ramp --host HOST.json``: the URL asked is the host file's address as this machine reaches
it (commands/ramp.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from vllm_ledger.commands.ramp import _target


@pytest.mark.parametrize(
    ("address", "url"),
    [
        ("0.0.0.0", "http://127.0.0.1:8001"),
        ("::", "http://[::1]:8001"),
        ("fe80::1", "http://[fe80::1]:8001"),
        ("10.0.0.2", "http://10.0.0.2:8001"),
    ],
)
def test_the_host_files_address_is_asked_from_here(tmp_path: Path, address: str, url: str) -> None:
    path = tmp_path / "host.json"
    path.write_text(json.dumps({"model": "m", "host": address, "port": 8001}))
    base, model, _host = _target(argparse.Namespace(host=path, url=None, model=None))
    assert (base, model) == (url, "m")
