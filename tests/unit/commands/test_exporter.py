"""``vllm-ledger exporter``: where it listens (``address_of``) and the budgets it serves
(``budgets_of``), each settled before anything is served. The old ``--host``/``--port``
spellings and their notes are tests/test_flag_vocabulary.py's; the server is
tests/unit/observe/test_server.py's."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from vllm_ledger.commands.exporter import DEFAULT_LISTEN, address_of, budgets_of
from vllm_ledger.errors import BadArgument


def _args(**given: object) -> argparse.Namespace:
    return argparse.Namespace(**{"listen": None, "host": None, "port": None, **given})


def test_the_address_is_listen_else_the_default_under_host_and_port() -> None:
    assert DEFAULT_LISTEN == "127.0.0.1:9464"
    assert address_of(_args()) == ("127.0.0.1", 9464)
    assert address_of(_args(listen=("::1", 0))) == ("::1", 0)
    assert address_of(_args(host="0.0.0.0")) == ("0.0.0.0", 9464)
    assert address_of(_args(port="9")) == ("127.0.0.1", 9)
    with pytest.raises(BadArgument) as caught:
        address_of(_args(listen=("127.0.0.1", 0), port="1"))
    assert str(caught.value) == "--listen and --host/--port: give --listen HOST:PORT alone"


def test_no_budgets_without_the_flag_or_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("VLLM_LEDGER_BUDGETS", raising=False)
    assert budgets_of(argparse.Namespace(budgets=None), "Asia/Shanghai") is None
    monkeypatch.setenv("VLLM_LEDGER_BUDGETS", "  ")  # blank: none
    assert budgets_of(argparse.Namespace(budgets=None), "Asia/Shanghai") is None
