"""deploy/preflight/software.py: the Python behind vllm, cuDNN and the container toolkit."""

from __future__ import annotations

import shutil
from pathlib import Path

from vllm_ledger.deploy.host import parse_host
from vllm_ledger.deploy.preflight.software import (
    cudnn_in_ldconfig,
    cudnn_text,
    interpreter_of,
    python_facts,
    vllm_program,
)


def test_cudnn_versions_from_torch_and_from_ldconfig() -> None:
    assert (cudnn_text(90100), cudnn_text(8902)) == ("9.1.0", "8.9.2")
    text = (
        "\tlibcudnn.so.8.9.2 (libc6,x86-64) => /usr/lib/libcudnn.so.8.9.2\n"
        "\tlibcudnn.so.9.1.0 (libc6,x86-64) => /usr/lib/libcudnn.so.9.1.0\n"
        "\tlibcudnn.so (libc6,x86-64) => /usr/lib/libcudnn.so\n"
    )
    assert cudnn_in_ldconfig(text) == "9.1.0"
    assert cudnn_in_ldconfig("") is None


def test_the_python_a_console_script_runs(tmp_path: Path) -> None:
    direct, via_env, none = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    direct.write_text("#!/opt/py/bin/python3 -s\nimport vllm\n")
    via_env.write_text("#!/usr/bin/env python3\n")
    none.write_text("import vllm\n")
    assert interpreter_of(str(direct)) == "/opt/py/bin/python3"
    assert interpreter_of(str(via_env)) == shutil.which("python3")
    assert interpreter_of(str(none)) is None
    assert interpreter_of(str(tmp_path / "missing")) is None


def test_a_program_that_names_no_python_is_said_so(tmp_path: Path) -> None:
    program = tmp_path / "vllm"
    program.write_text("not a script\n")
    program.chmod(0o755)
    host = parse_host({"model": "m", "mode": "bare", "vllm_executable": str(program)})
    assert vllm_program(host) == str(program)
    facts = python_facts(host)
    assert (facts.vllm_program, facts.problem) == (
        str(program),
        f"{program} does not name its Python (#!)",
    )
