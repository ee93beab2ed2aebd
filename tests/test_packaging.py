"""The package as users get it: a wheel installed normally, and the public API."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import vllm_ledger
from tests.conftest import REPO


def test_public_api_is_sorted_and_importable() -> None:
    assert vllm_ledger.__all__ == sorted(vllm_ledger.__all__)
    for name in vllm_ledger.__all__:
        assert getattr(vllm_ledger, name) is not None


def test_plugin_imports_only_the_standard_library_besides_vllm() -> None:
    code = (
        "import sys; before = set(sys.modules)\n"
        "import vllm_ledger.write.recorder, vllm_ledger.write.identity, vllm_ledger.write.store\n"
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
