"""Where ``vllm-ledger ramp`` takes its API key (commands/ramp.py): a file, the host file or
the environment, never the command line. The real vLLM with --api-key is
tests/e2e/test_cost_ramp.py's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tests.inproc import run_cli
from vllm_ledger.commands.ramp import _target, api_key
from vllm_ledger.deploy.host import Host
from vllm_ledger.errors import BadArgument


def _args(key_file: Path | None = None) -> argparse.Namespace:
    return argparse.Namespace(api_key_file=key_file)


def test_the_key_from_a_file_the_host_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    assert api_key(_args(), None) is None
    monkeypatch.setenv("VLLM_API_KEY", "")  # empty: no key, as vLLM reads it
    assert api_key(_args(), None) is None
    monkeypatch.setenv("VLLM_API_KEY", "sk-env")
    assert api_key(_args(), None) == "sk-env"
    key = tmp_path / "key"
    key.write_text("sk-file\n\n")
    assert api_key(_args(key), None) == "sk-file"  # the file before the environment
    # The host file's key, before $VLLM_API_KEY: its variable, or its file.
    monkeypatch.setenv("TINY_KEY", "sk-host")
    assert api_key(_args(), Host(model="m", api_key_env="TINY_KEY")) == "sk-host"
    assert api_key(_args(), Host(model="m", api_key_file=str(key))) == "sk-file"
    assert api_key(_args(), Host(model="m")) == "sk-env"  # a host file without a key
    monkeypatch.delenv("TINY_KEY")
    with pytest.raises(BadArgument, match=r"api_key\.env TINY_KEY is not set here: export"):
        api_key(_args(), Host(model="m", api_key_env="TINY_KEY"))
    with pytest.raises(BadArgument, match=r"api_key\.file /nonexistent/key cannot be read"):
        api_key(_args(), Host(model="m", api_key_file="/nonexistent/key"))


def test_a_key_that_cannot_be_a_header_is_refused_without_showing_it(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("sk-one\nsk-two\n")
    with pytest.raises(BadArgument, match="has a line break") as caught:
        api_key(_args(key), None)
    assert "sk-one" not in str(caught.value)
    key.write_text("\n")
    with pytest.raises(BadArgument, match="is empty"):
        api_key(_args(key), None)


def test_the_key_is_never_taken_from_the_command_line() -> None:
    for form in (["--api-key", "sk-SECRET"], ["--api-key=sk-SECRET"]):
        code, out, err = run_cli("ramp", "--url", "http://127.0.0.1:1", "--model", "m", *form)
        assert (code, out) == (2, "")
        assert "--api-key on the command line is readable by every user" in err
        assert "sk-SECRET" not in err
    code, _out, err = run_cli("ramp", "--model", "m")
    assert code == 2 and "give --url, or --host HOST.json to take it from the host file" in err


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
