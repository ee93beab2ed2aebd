"""vllm-ledger: a restart-proof per-second token ledger for self-hosted vLLM.

The public API (everything else is private to its module)::

    from vllm_ledger import LedgerSet, build_report, build_timeline
    with LedgerSet.read([Path("/srv/artifacts/usage")]) as ledgers:  # every file read once
        report = build_report(ledgers)
        week = build_timeline(ledgers, window="7d", step="1d")
    report.window("today").output_tokens

``build_report([root])`` reads a set itself where one view is all you need.

Names are loaded on first use, so ``import vllm_ledger.plugin`` inside vLLM stays lean.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "BadArgument": "vllm_ledger.errors",
    "BadDeclaration": "vllm_ledger.errors",
    "BadValues": "vllm_ledger.errors",
    "BreakdownRow": "vllm_ledger.read.report",
    "ConfigError": "vllm_ledger.errors",
    "DuplicateKey": "vllm_ledger.errors",
    "FieldError": "vllm_ledger.errors",
    "LedgerError": "vllm_ledger.errors",
    "LedgerSet": "vllm_ledger.read.ledgerset",
    "LedgerUnavailable": "vllm_ledger.errors",
    "MissingExtra": "vllm_ledger.errors",
    "NotARegularFile": "vllm_ledger.errors",
    "RemoteError": "vllm_ledger.errors",
    "Report": "vllm_ledger.read.report",
    "StatusParseError": "vllm_ledger.errors",
    "Timeline": "vllm_ledger.read.timeline",
    "VerifyResult": "vllm_ledger.read.verify",
    "Window": "vllm_ledger.read.windows",
    "WindowReport": "vllm_ledger.read.report",
    "WriterStatus": "vllm_ledger.read.report",
    "build_report": "vllm_ledger.read.report",
    "build_timeline": "vllm_ledger.read.timeline",
    "bundle": "vllm_ledger.deploy.bundle",
    "check": "vllm_ledger.read.check",
    "verify": "vllm_ledger.read.verify",
    "window_reports": "vllm_ledger.read.report",
}

__all__ = [
    "BadArgument",
    "BadDeclaration",
    "BadValues",
    "BreakdownRow",
    "ConfigError",
    "DuplicateKey",
    "FieldError",
    "LedgerError",
    "LedgerSet",
    "LedgerUnavailable",
    "MissingExtra",
    "NotARegularFile",
    "RemoteError",
    "Report",
    "StatusParseError",
    "Timeline",
    "VerifyResult",
    "Window",
    "WindowReport",
    "WriterStatus",
    "__version__",
    "build_report",
    "build_timeline",
    "bundle",
    "check",
    "verify",
    "window_reports",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vllm_ledger' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
