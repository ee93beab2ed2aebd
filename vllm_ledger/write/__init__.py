"""The write side: what runs inside vLLM. Standard library only (plugin.py also imports vLLM).

plugin (adapter) -> recorder (thread, its cadence in schedule) -> the on-disk format below
(``vllm_ledger.format``: schema, layout, identity, the write SQL), with compaction. Imports
nothing from the read side.
"""
