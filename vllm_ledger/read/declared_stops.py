"""The stops declared under the roots (``format/declarations.py``), read once per root, and
the lines refused: what coverage takes as a planned stop rather than a gap."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vllm_ledger import infile
from vllm_ledger.format import declarations


def load_declarations(
    roots: Sequence[Path],
) -> tuple[list[declarations.Declaration], list[tuple[Path, str]]]:
    """Every root's declared stops, and (file, why) for each file or line refused."""
    found: list[declarations.Declaration] = []
    errors: list[tuple[Path, str]] = []
    for root in roots:
        path = declarations.path_in(root)
        try:
            data = infile.read_regular_file(path, declarations.MAX_FILE_BYTES)
        except FileNotFoundError:
            continue
        except OSError as exc:
            errors.append((path, f"cannot read: {exc.strerror or exc}"))
            continue
        got, bad = declarations.parse(data)
        found += got
        errors += [(path, f"refused {e}") for e in bad]
    return found, errors
