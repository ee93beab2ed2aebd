"""The write side: what runs inside vLLM. Standard library only (plugin.py also imports vLLM).

plugin (adapter) -> recorder (thread) -> store (SQLite schema and every SQL statement), with
paths (file layout), identity (run, rank, instance) and compaction. Imports nothing from the
read side.
"""
