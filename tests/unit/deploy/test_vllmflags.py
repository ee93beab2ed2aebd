"""``render``'s flag check: the argv it writes and the hints it suggests, put to vLLM's own
parser. A stand-in Python answers as the probe does (it refuses ``--swap-space`` and
``--max-num-seqs``), so nothing imports vLLM."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from vllm_ledger.deploy.host import parse_host
from vllm_ledger.deploy.tuning import Hint
from vllm_ledger.deploy.vllmflags import CHECK_ENV, check_host, check_serve_args, known_hints
from vllm_ledger.errors import ConfigError

STAND_IN = """\
import json, sys
argvs = json.load(sys.stdin)["argvs"]
refused = ("--swap-space", "--max-num-seqs")
errors = [next(("unrecognized arguments: " + w for w in a if w in refused), None) for a in argvs]
print("\\n" + sys.argv[3] + json.dumps({"version": "0.32.0", "errors": errors}))
"""
HOST: dict[str, Any] = {
    "model": "/models/tiny",
    "image": "vllm/vllm-openai:v0.32.0",
    "gpus": [],
    "artifacts_dir": "/srv/artifacts",
}
HINTS = [
    Hint("max_model_len", "4096", "why", "rule"),
    Hint("max_num_seqs", "64", "why", "rule"),
    Hint("gpu_memory_utilization", "n/a", "why", "rule"),
]


@pytest.fixture
def vllm_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    python = tmp_path / "python3"
    python.write_text(f"#!{sys.executable}\n{STAND_IN}")
    python.chmod(0o755)
    monkeypatch.setenv(CHECK_ENV, str(python))
    return python


def test_accepted_flags_say_which_vllm_parsed_them(vllm_here: Path) -> None:
    line = check_serve_args(["serve", "m", "--port", "8000"], ())
    assert line == f"vLLM 0.32.0 (${CHECK_ENV}) parses every vllm serve flag written"


def test_a_refused_extra_arg_is_one_line(vllm_here: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        check_serve_args(["serve", "m", "--swap-space", "4"], ("--swap-space", "4"))
    assert str(caught.value) == (
        "--swap-space is not a flag of vLLM 0.32.0 (unrecognized argument; vLLM 0.18.0 "
        "dropped it): remove it from extra_args"
    )


def test_off_checks_nothing_and_a_silent_python_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CHECK_ENV, "off")
    assert check_serve_args(["serve", "m", "--swap-space", "4"], ()) == ""
    assert known_hints(HINTS, "m") == (HINTS, [])
    missing = tmp_path / "python3"
    monkeypatch.setenv(CHECK_ENV, str(missing))
    assert check_serve_args(["serve", "m"], ()) == (
        f"vllm serve flags not checked: {missing} cannot run: No such file or directory"
    )


def test_check_host_parses_what_each_mode_writes(vllm_here: Path) -> None:
    host = parse_host({**HOST, "extra_args": ["--swap-space", "4"]})
    assert check_host(host, "image", usage=False) == ""
    for mode in ("docker", "bare"):
        with pytest.raises(ConfigError, match="--swap-space is not a flag"):
            check_host(host, mode, usage=True)
    assert check_host(parse_host(HOST), "docker", usage=True).startswith("vLLM 0.32.0 ")


def test_known_hints_leave_out_the_refused_flag_and_say_so(vllm_here: Path) -> None:
    kept, notes = known_hints(HINTS, "m")
    assert kept == [HINTS[0], HINTS[2]]
    assert notes == [
        "max_num_seqs: not suggested, vLLM 0.32.0 refuses --max-num-seqs",
        f"every flag above parsed by vLLM 0.32.0's own parser (${CHECK_ENV})",
    ]
    assert known_hints(HINTS[2:], "m") == (HINTS[2:], [])  # nothing to check
