"""Every vllm serve flag the project writes, parsed by the installed vLLM's own parser.

deploy/vllmflags.py runs ``vllm serve``'s parser (ServeSubcommand's, as vLLM builds it) in a
subprocess of vLLM's Python. Here: every golden render's argv and every ``render --explain``
flag parsed by vLLM in .venv (and by each ``make compat`` env present in build/compat/), a host
file with ``--swap-space`` refused in one line, ``--explain`` leaving the dropped flag out, and
``doctor --rendered`` failing its flags row on such a file. The suite runs render with the check
off (tests/conftest.py); these tests switch it on. And ``vllm serve --help=middleware``
documents the ``--middleware`` flag the renderers pass with usage on.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.vllm_server import SHIM
from tests.conftest import REPO, run_cli
from vllm_ledger.deploy.tuning import GB, WORKLOADS, Gpu, hint_args, tuning_hints
from vllm_ledger.deploy.vllmflags import (
    CHECK_ENV,
    parse_serve_argvs,
    script_python,
)
from vllm_ledger.doctor.flags import serve_argv

DATA = REPO / "tests" / "data"
GOLDEN_DIRS = (DATA / "render", DATA / "kubernetes")
CHECK_ON = {CHECK_ENV: ""}  # auto: this Python, which imports vLLM

needs_vllm = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None, reason="no vLLM in this Python"
)


def vllm_pythons() -> list[str]:
    """.venv's Python and each ``make compat`` env's (build/compat/VERSION/bin/python)."""
    found = [sys.executable]
    found += sorted(str(p) for p in (REPO / "build" / "compat").glob("*/bin/python"))
    return found


def unanswered(python: str, why_not: str) -> None:
    """.venv's vLLM must answer; a compat env without vLLM's dependencies (a release with no
    CPU build, installed --no-deps) cannot build its parser: skipped, saying so."""
    if why_not and python != sys.executable:
        pytest.skip(f"this env cannot build vLLM's parser: {why_not}")
    assert why_not == ""


def golden_argvs() -> dict[str, list[str]]:
    """The ``serve ...`` argv of every golden render file, by its path under tests/data."""
    argvs = {}
    for folder in GOLDEN_DIRS:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix not in (".json", ".toml"):
                argv = serve_argv(path.read_text())
                if argv is not None:
                    argvs[str(path.relative_to(DATA))] = argv
    return argvs


def test_every_golden_render_file_has_an_argv() -> None:
    argvs = golden_argvs()
    # every mode of the three example hosts: bare, docker, systemd, compose, supervisor, k8s
    assert len(argvs) >= 25, sorted(argvs)
    assert all(a[0] == "serve" and not a[1].startswith("-") for a in argvs.values())
    assert not [n for n, a in argvs.items() if "--disable-log-requests" in a]


@needs_vllm
@pytest.mark.parametrize("python", vllm_pythons())
def test_every_golden_render_parses(python: str) -> None:
    argvs = golden_argvs()
    parsed = parse_serve_argvs(python, list(argvs.values()))
    unanswered(python, parsed.why_not)
    refused = {n: e for n, e in zip(argvs, parsed.errors, strict=True) if e is not None}
    assert refused == {}, f"vLLM {parsed.version}: {refused}"


def explain_argvs() -> list[list[str]]:
    """``serve MODEL`` plus the flags of every hint ``--explain`` can print."""
    names = ("NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB", "Tesla T4", "mystery")
    sizes_gb = (8, 16, 20, 24, 80)
    argvs = []
    for workload, name, gb in itertools.product(WORKLOADS, names, sizes_gb):
        hints = tuning_hints([Gpu(name, gb * GB)], workload, cpu=False)
        argvs.append(["serve", "/models/m", *hint_args(hints)])
    for workload in WORKLOADS:
        argvs.append(["serve", "/models/m", *hint_args(tuning_hints([], workload, cpu=True))])
    return argvs


@needs_vllm
@pytest.mark.parametrize("python", vllm_pythons())
def test_every_explain_flag_parses(python: str) -> None:
    argvs = explain_argvs()
    flags = {w for a in argvs for w in a if w.startswith("--")}
    assert flags == {
        "--gpu-memory-utilization",
        "--max-num-seqs",
        "--max-num-batched-tokens",
        "--dtype",
    }
    parsed = parse_serve_argvs(python, argvs)
    unanswered(python, parsed.why_not)
    assert [e for e in parsed.errors if e is not None] == []


def swap_space_host(tmp_path: Path) -> Path:
    data = json.loads((DATA / "render" / "gpu-node.json").read_text())
    data.pop("$schema")
    data["extra_args"] = ["--enable-prefix-caching", "--swap-space", "4"]
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps(data))
    return hf


@needs_vllm
def test_swap_space_in_extra_args_is_refused_in_one_line(tmp_path: Path) -> None:
    hf = swap_space_host(tmp_path)
    out = tmp_path / "run.sh"
    rc, stdout, err = run_cli(
        "render", "--host", str(hf), "--output", str(out), "--usage", env=CHECK_ON
    )
    assert (rc, stdout) == (2, "")
    assert err == (
        f"vllm-ledger: error: host file {hf}: --swap-space is not a flag of vLLM 0.32.0 "
        "(unrecognized argument; vLLM 0.18.0 dropped it): remove it from extra_args\n"
    )
    assert not out.exists()


@needs_vllm
def test_a_valid_host_file_renders_and_says_checked(tmp_path: Path) -> None:
    out = tmp_path / "vllm.service"
    rc, _, err = run_cli(
        "render",
        *("--host", str(DATA / "render" / "gpu-node.json"), "--output", str(out)),
        *("--mode", "systemd", "--usage"),
        env=CHECK_ON,
    )
    assert rc == 0, err
    assert err.splitlines()[0] == (
        "render: vLLM 0.32.0 (this Python) parses every vllm serve flag written"
    )
    assert out.read_text() == (DATA / "render" / "gpu-node.systemd.usage.service").read_text()


@needs_vllm
def test_explain_suggests_no_dropped_flag() -> None:
    rc, out, err = run_cli(
        "render", "--host", str(DATA / "render" / "gpu-node.json"), "--explain", env=CHECK_ON
    )
    assert (rc, err) == (0, "")
    assert "swap_space " not in out
    assert "  swap space (--swap-space): not suggested, vLLM 0.18.0 dropped the flag" in out
    assert out.endswith("  every flag above parsed by vLLM 0.32.0's own parser (this Python)\n")


@needs_vllm
def test_doctor_fails_the_flags_row_of_a_rendered_file_vllm_refuses(tmp_path: Path) -> None:
    bad = tmp_path / "run.sh"
    text = (DATA / "render" / "gpu-node.bare.usage.sh").read_text()
    bad.write_text(
        text.replace("--enable-prefix-caching", "--enable-prefix-caching \\\n  --swap-space 4")
    )
    rc, out, err = run_cli("doctor", "--only", "flags", "--rendered", str(bad), env=CHECK_ON)
    assert rc == 1, err
    assert f"{bad}: --swap-space is not a flag of vLLM 0.32.0" in out
    assert "fix:    take --swap-space out of the host file" in out
    assert out.splitlines()[-1] == "0 of 1 checks pass"


def test_no_vllm_there_is_one_line_and_the_file_is_written(tmp_path: Path) -> None:
    bare = shutil.which("python3", path="/usr/bin")
    if bare is None or script_python(bare) is not None:
        pytest.skip("no plain python3 in /usr/bin")
    out = tmp_path / "run.sh"
    rc, _, err = run_cli(
        *("render", "--host", str(DATA / "render" / "gpu-node.json"), "--output", str(out)),
        env={CHECK_ENV: bare},
    )
    assert rc == 0, err
    first = err.splitlines()[0]
    assert first.startswith(
        f"render: vllm serve flags not checked: {bare} could not build vLLM's serve parser: "
    ), first
    assert "ModuleNotFoundError" in first
    assert out.exists()


def test_the_installed_vllm_takes_the_flag() -> None:
    """``vllm serve --help=middleware`` of the vLLM in this environment documents the flag the
    renderers pass (vLLM's own parser, as ``vllm serve`` reads it)."""
    vllm = REPO / ".venv" / "bin" / "vllm"
    if not vllm.exists():
        pytest.skip("no vllm in .venv")
    env = {**os.environ, "PYTHONPATH": str(SHIM), "VLLM_TARGET_DEVICE": "cpu"}
    p = subprocess.run(
        [str(vllm), "serve", "--help=middleware"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "--middleware MIDDLEWARE" in p.stdout
    assert "Additional ASGI middleware to apply to the app." in " ".join(p.stdout.split())
