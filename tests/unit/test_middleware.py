"""The name launch files carry (middleware.py): ``vllm_ledger.middleware.LedgerMiddleware`` is
the write side's class, importable as vLLM imports it. The middleware itself is
tests/unit/write/test_middleware.py's."""

from __future__ import annotations

import importlib

from vllm_ledger.write.middleware import LedgerMiddleware


def test_the_launch_files_name_is_the_write_sides_class() -> None:
    module, _, name = "vllm_ledger.middleware.LedgerMiddleware".rpartition(".")
    assert getattr(importlib.import_module(module), name) is LedgerMiddleware
