"""vLLM's own serve parser, asked offline: which Python to ask, what it answers, and the one
line a refused flag becomes. The probe runs in a stand-in Python here (a shell script that
answers as the probe does), so nothing imports vLLM."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from vllm_ledger.doctor.vllmparse import (
    CHECK_ENV,
    MARK,
    Parsed,
    Vllm,
    check_off,
    dropped_note,
    find_vllm,
    parse_serve_argvs,
    refusal,
    refused_flag,
    script_python,
)


def fake_python(folder: Path, answer: str, *, exit_code: int = 0) -> Path:
    """An executable that takes ``-c PROBE MARK`` and the argvs on stdin as vLLM's Python
    would, and prints ``answer`` (a line of its own) to stdout."""
    path = folder / "python3"
    path.write_text(f"#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '{answer}'\nexit {exit_code}\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("message", "flag"),
    [
        ("unrecognized arguments: --swap-space 4", "--swap-space"),
        ("unrecognized arguments: 4 --foo=1", "--foo"),
        ("argument --api-server-count/-asc: invalid int value: 'x'", "--api-server-count"),
        ("argument --dtype: invalid choice: 'f17' (choose from 'auto')", "--dtype"),
        ("`model` should be provided as the first positional argument", None),
    ],
)
def test_refused_flag_is_read_from_vllms_message(message: str, flag: str | None) -> None:
    assert refused_flag(message) == flag


def test_refusal_says_where_the_flag_comes_from() -> None:
    own = refusal("0.32.0", "unrecognized arguments: --otlp-traces-endpoint x", ())
    assert str(own) == (
        "--otlp-traces-endpoint is not a flag of vLLM 0.32.0 (unrecognized argument): "
        "leave otlp_traces_endpoint out of the host file"
    )
    bad_value = refusal("0.32.0", "argument --dtype: invalid choice: 'f17'", ("--dtype", "f17"))
    assert str(bad_value) == (
        "vLLM 0.32.0 refuses --dtype (argument --dtype: invalid choice: 'f17'): "
        "fix it in extra_args"
    )


def test_a_refusal_names_the_release_that_dropped_the_flag_and_its_key() -> None:
    dropped = refusal("0.32.0", "unrecognized arguments: --swap-space=4", ("--swap-space=4",))
    assert str(dropped) == (
        "--swap-space is not a flag of vLLM 0.32.0 (unrecognized argument; vLLM 0.18.0 "
        "dropped it): remove it from extra_args"
    )
    assert dropped.key == "extra_args"
    own_value = refusal("0.32.0", "argument --max-model-len: invalid int value: 'x'", ())
    assert own_value.key == "max_model_len"
    assert own_value.hint == "fix it in the host file (max_model_len)"
    nameless = refusal("0.32.0", "`model`   should be\nprovided", ())
    assert (str(nameless), nameless.key) == (
        "vLLM 0.32.0 refuses the vllm serve arguments (`model` should be provided): "
        "fix the host file",
        "extra_args",
    )


def test_dropped_note_only_for_a_flag_known_dropped() -> None:
    assert dropped_note("--disable-log-requests") == "; vLLM 0.12.0 dropped it"
    assert dropped_note("--dtype") == ""


def test_script_python_reads_the_shebang(tmp_path: Path) -> None:
    direct = tmp_path / "vllm"
    direct.write_text(f"#!{sys.executable}\nprint()\n")
    assert script_python(str(direct)) == sys.executable
    via_env = tmp_path / "vllm-env"
    via_env.write_text(f"#!/usr/bin/env {Path(sys.executable).name}\n")
    assert script_python(str(via_env)) is not None
    not_python = tmp_path / "tool"
    not_python.write_text("#!/bin/sh\n")
    assert script_python(str(not_python)) is None
    gone = tmp_path / "python-gone"
    gone.write_text(f"#!{tmp_path / 'no' / 'python3'}\n")
    assert script_python(str(gone)) is None
    (tmp_path / "binary").write_bytes(b"\x7fELF")
    assert script_python(str(tmp_path / "binary")) is None
    assert script_python(str(tmp_path / "missing")) is None


def test_the_check_env_names_the_python_or_turns_the_check_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CHECK_ENV, " /opt/vllm/bin/python ")
    assert not check_off()
    assert find_vllm("vllm") == Vllm("/opt/vllm/bin/python", f"${CHECK_ENV}")
    monkeypatch.setenv(CHECK_ENV, "off")
    assert check_off()


def test_the_host_files_vllm_executable_comes_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CHECK_ENV, raising=False)
    script = tmp_path / "my-vllm"
    script.write_text(f"#!{sys.executable}\n")
    script.chmod(0o755)
    assert find_vllm(str(script)) == Vllm(
        sys.executable, f"the host file's vllm_executable {script}"
    )


def test_each_argv_gets_the_parsers_answer(tmp_path: Path) -> None:
    out = {"version": "0.32.0", "errors": [None, "unrecognized arguments: --x"]}
    python = fake_python(tmp_path, f"{MARK}{json.dumps(out)}")
    parsed = parse_serve_argvs(str(python), [["serve", "m"], ["serve", "m", "--x"]])
    assert parsed == Parsed("0.32.0", (None, "unrecognized arguments: --x"))


def test_a_python_that_cannot_answer_says_why(tmp_path: Path) -> None:
    python = fake_python(tmp_path, "noise", exit_code=1)
    broken = parse_serve_argvs(str(python), [["serve", "m"]])
    assert broken == Parsed("", (), f"{python} could not build vLLM's serve parser: no output")
    missing = tmp_path / "nowhere" / "python3"
    gone = parse_serve_argvs(str(missing), [["serve", "m"]])
    assert gone.why_not == f"{missing} cannot run: {os.strerror(2)}"
    assert Parsed.unanswered("why") == Parsed("", (), "why")
