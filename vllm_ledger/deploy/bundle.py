"""Write a self-contained plugin folder for ``PYTHONPATH``: no pip, no network.

The folder holds a copy of the ``vllm_ledger`` package and a ``vllm_ledger-VERSION.dist-info``
with ``METADATA`` and ``entry_points.txt``, which is all ``importlib.metadata`` needs to find
the ``vllm.stat_logger_plugins`` entry point::

    vllm-ledger bundle --output /srv/artifacts/ledger-plugin
    PYTHONPATH=/srv/artifacts/ledger-plugin VLLM_LEDGER_DIR=/srv/artifacts/usage vllm serve ...

``bundle(dest, tz=ZONE)`` also writes ``DEST/VLLM_LEDGER_TZ`` (the zone and a newline): the
plugin loaded from the folder records it in the ledger root (``ROOT/zone``) on its first
start, as it does ``$VLLM_LEDGER_TZ`` (which wins over the file). See docs/ledger.md.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from vllm_ledger import __version__
from vllm_ledger.errors import BadArgument
from vllm_ledger.format.zonefile import BUNDLE_MARKER, BUNDLE_ZONE_FILE, check_zone

ENTRY_POINT = "ledger = vllm_ledger.plugin:LedgerStatLogger"
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")


def _dist_info_name() -> str:
    return f"vllm_ledger-{__version__}.dist-info"


def bundle(dest: Path, tz: str | None = None) -> list[Path]:
    """Write (or replace) the bundle at ``dest``; returns the files written, sorted.

    The folder is built beside ``dest`` and swapped in, so a running vLLM that imported an
    older bundle never sees a half-written one.
    """
    dest = Path(dest)
    if tz is not None:
        try:
            check_zone(tz)
        except ValueError as exc:
            raise BadArgument(
                f"tz {exc}",
                hint="use an IANA name",
                argument="tz",
                value=tz,
                example="Asia/Shanghai",
            ) from None
    if dest.exists() and not dest.is_dir():
        raise BadArgument(f"{dest} exists and is not a directory: choose another path")
    if (
        dest.exists()
        and any(dest.iterdir())
        and not (dest / BUNDLE_MARKER).exists()
        and not any(
            p.name.endswith(".dist-info") and p.name.startswith("vllm_ledger-")
            for p in dest.iterdir()
        )
    ):
        raise BadArgument(
            f"{dest} is not empty and not a vllm-ledger bundle: choose an empty folder"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = Path(__file__).resolve().parent.parent  # the vllm_ledger package
    tmp = Path(tempfile.mkdtemp(prefix=".bundle-", dir=dest.parent))
    try:
        shutil.copytree(src, tmp / "vllm_ledger", ignore=_IGNORE)
        info = tmp / _dist_info_name()
        info.mkdir()
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\n"
            "Name: vllm-ledger\n"
            f"Version: {__version__}\n"
            "Summary: A restart-proof per-second token ledger for self-hosted vLLM.\n"
        )
        (info / "entry_points.txt").write_text(f"[vllm.stat_logger_plugins]\n{ENTRY_POINT}\n")
        (info / "top_level.txt").write_text("vllm_ledger\n")
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        record = "".join(
            f"{p.relative_to(tmp).as_posix()},sha256={hashlib.sha256(p.read_bytes()).hexdigest()},"
            f"{p.stat().st_size}\n"
            for p in files
        )
        (info / "RECORD").write_text(record + f"{_dist_info_name()}/RECORD,,\n")
        (tmp / BUNDLE_MARKER).write_text(f"vllm-ledger {__version__}\n")
        if tz is not None:  # the plugin reads it (format/zonefile.py)
            (tmp / BUNDLE_ZONE_FILE).write_text(f"{tz}\n")
        for p in tmp.rglob("*"):
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        os.chmod(tmp, 0o755)
        old = None
        if dest.exists():
            old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
            os.replace(dest, old)
        os.replace(tmp, dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return sorted(p for p in dest.rglob("*") if p.is_file())
