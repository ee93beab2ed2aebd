"""The sequence marker each ledger keeps beside it (``<file>.seq``), read through
``infile.py`` (a regular file only, bounded). Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path

from vllm_ledger.errors import NotARegularFile
from vllm_ledger.infile import read_regular_file


def write_sequence_marker(path: Path, seq: int, ts: float) -> None:
    """Record the last committed sequence number beside the ledger (no fsync: a hint)."""
    marker = Path(f"{path}.seq")
    tmp = Path(f"{path}.seq.tmp")
    tmp.write_text(f"{seq} {ts!r}\n")
    os.replace(tmp, marker)


MARKER_MAX_BYTES = 256


def read_sequence_marker(path: Path) -> tuple[int, float] | None:
    """The marker beside a ledger, or None where there is none or it cannot be parsed.

    Raises ``NotARegularFile`` where something other than a file stands in its place, and
    ``PermissionError`` where the reader may not read it: the reader must not take either for
    "no marker" (it could hide lost commits).
    """
    try:
        seq, ts = read_regular_file(f"{path}.seq", MARKER_MAX_BYTES).decode().split()
        return int(seq), float(ts)
    except (NotARegularFile, PermissionError):
        raise  # something is there that we may not read: not the same as no marker
    except (OSError, ValueError):
        return None
