"""The read side: ledgers read once into a LedgerSet, and the views over it.

discovery -> snapshot (one file) -> ledgerset (every file, read once) -> coverage and windows
(pure maths) -> report and timeline (the models renderers take). Read-only: it never writes a
ledger file.
"""
