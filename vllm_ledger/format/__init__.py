"""The on-disk format, below both the write side and the read side: schema and migrations, the
file layout, identity and meta, the small files beside the ledgers, and the SQL each side runs
(split by purpose). Standard library only: it is imported inside vLLM.
"""
