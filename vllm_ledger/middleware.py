"""The attribution middleware vLLM loads: ``--middleware vllm_ledger.middleware.LedgerMiddleware``.

The class lives on the write side (``write/middleware.py``: standard library only, nothing of
the read side); this is the short, stable name launch files carry (docs/attribution.md).
"""

from __future__ import annotations

from vllm_ledger.write.middleware import LedgerMiddleware

__all__ = ["LedgerMiddleware"]
