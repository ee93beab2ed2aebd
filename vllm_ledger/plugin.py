"""The plugin vLLM loads: ``vllm_ledger.plugin:LedgerStatLogger`` (the entry point).

The write-side adapter (``vllm_ledger.write.plugin``) plus the rank-0 background maintenance
pass (``vllm_ledger.maintenance``: compaction of finished files and the summary of finished
files, which reads ledgers), run in a low-priority child process that ``vllm_ledger.background``
spawns: no API process imports the read side or runs the pass on its GIL. Bundles already in
the field name this module.
"""

from __future__ import annotations

from pathlib import Path

from vllm_ledger.units import BUDGETS_ENV, ENFORCER_ENV
from vllm_ledger.write.plugin import LedgerStatLogger as _WriteSideLogger


class LedgerStatLogger(_WriteSideLogger):
    """The ledger stat logger with the rank-0 maintenance pass switched on."""

    @staticmethod
    def start_maintenance(root: Path) -> None:
        import os

        from vllm_ledger import background

        background.start_background(root)
        budgets = os.environ.get(BUDGETS_ENV, "").strip()
        if budgets and os.environ.get(ENFORCER_ENV, "1").strip() != "0":
            background.start_enforcer(root, Path(budgets))


__all__ = ["LedgerStatLogger"]
