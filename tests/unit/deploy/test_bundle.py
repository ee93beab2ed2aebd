"""The plugin folder for PYTHONPATH: the package and a dist-info ``importlib.metadata`` reads
the entry point from, a zone file where asked, swapped in whole, refused over another folder."""

from __future__ import annotations

import hashlib
import importlib.metadata
import stat
from pathlib import Path

import pytest

from tests.conftest import REPO
from vllm_ledger import __version__
from vllm_ledger.deploy.bundle import ENTRY_POINT, bundle
from vllm_ledger.errors import BadArgument
from vllm_ledger.format.zonefile import BUNDLE_MARKER, BUNDLE_ZONE_FILE

INFO = f"vllm_ledger-{__version__}.dist-info"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    dest = tmp_path_factory.mktemp("bundle") / "plugin"
    return dest, bundle(dest)


def test_the_bundle_holds_the_package_and_its_entry_point(built: tuple[Path, list[Path]]) -> None:
    dest, files = built
    names = {p.relative_to(dest).as_posix() for p in files}
    package = {p.relative_to(REPO).as_posix() for p in (REPO / "vllm_ledger").rglob("*.py")}
    assert package <= names
    assert {
        f"{INFO}/METADATA",
        f"{INFO}/entry_points.txt",
        f"{INFO}/RECORD",
        BUNDLE_MARKER,
    } <= names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert BUNDLE_ZONE_FILE not in names
    assert files == sorted(files)
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in files)
    (dist,) = importlib.metadata.distributions(path=[str(dest)])
    assert (dist.metadata["Name"], dist.version) == ("vllm-ledger", __version__)
    (ep,) = dist.entry_points.select(group="vllm.stat_logger_plugins")
    assert f"{ep.name} = {ep.value}" == ENTRY_POINT


def test_the_record_names_each_file_with_its_hash(built: tuple[Path, list[Path]]) -> None:
    dest, _files = built
    *rows, last = (dest / INFO / "RECORD").read_text().splitlines()
    assert last == f"{INFO}/RECORD,,"
    for row in rows:
        name, digest, size = row.split(",")
        data = (dest / name).read_bytes()
        assert digest == "sha256=" + hashlib.sha256(data).hexdigest() and int(size) == len(data)


def test_a_zone_is_written_for_the_plugin_and_a_bad_one_refused(tmp_path: Path) -> None:
    dest = tmp_path / "plugin"
    bundle(dest, tz="Asia/Shanghai")
    assert (dest / BUNDLE_ZONE_FILE).read_text() == "Asia/Shanghai\n"
    with pytest.raises(BadArgument, match=r"^tz "):
        bundle(tmp_path / "other", tz="Mars/Olympus")
    assert not (tmp_path / "other").exists()


def test_a_bundle_is_replaced_whole_and_nothing_else_is(tmp_path: Path) -> None:
    dest = tmp_path / "plugin"
    bundle(dest)
    (dest / "stale.py").write_text("")
    bundle(dest)
    assert not (dest / "stale.py").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["plugin"]  # nothing left beside it
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    with pytest.raises(BadArgument, match="is not empty and not a vllm-ledger bundle"):
        bundle(taken)
    (tmp_path / "file").write_text("")
    with pytest.raises(BadArgument, match="exists and is not a directory"):
        bundle(tmp_path / "file")
