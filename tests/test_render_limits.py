"""`render` refuses what the tools reading its files would refuse, and the figures it refuses by
are those tools' own: each limit in deploy/limits.py is held against the real
``systemd-analyze verify`` (offline, ``--man=no``) at the last value accepted and the first
refused. A path beyond PATH_MAX or NAME_MAX in ``ReadWritePaths=`` or ``AssertPathExists=`` is
only a warning to systemd (the sandbox then silently lacks it), a line beyond LONG_LINE_MAX makes
the whole unit fail to load; render refuses both, in one line naming the host-file key."""

from __future__ import annotations

import dataclasses
import errno
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_cli
from tests.unit.deploy.test_limits import long_path
from vllm_ledger.deploy.host import load_host, parse_host
from vllm_ledger.deploy.hostschema import ARTIFACTS_DIR_MAX_BYTES
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.deploy.ledger_units import ledger_units
from vllm_ledger.deploy.limits import (
    ARG_MAX_BYTES,
    NAME_MAX_BYTES,
    PATH_MAX_BYTES,
    UNIT_LINE_MAX_BYTES,
    UNIT_NAME_MAX_CHARS,
    logical_lines,
)
from vllm_ledger.deploy.units import vllm_unit
from vllm_ledger.errors import ConfigError

DATA = REPO / "tests" / "data" / "render"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd = pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="no systemd-analyze here")


def analyze(folder: Path, *names: str) -> tuple[int, str]:
    """``systemd-analyze verify``'s exit code and everything it printed."""
    assert SYSTEMD_ANALYZE is not None
    proc = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--man=no", *(str(folder / n) for n in names)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def stand_in(tmp_path: Path) -> str:
    exe = tmp_path / "bin" / "vllm"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return str(exe)


def host_file(tmp_path: Path, name: str, **changes: Any) -> Path:
    data = json.loads((DATA / f"{name}.json").read_text())
    data.pop("$schema", None)
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps({**data, **changes}))
    return hf


def shown(value: str) -> str:
    """A value as a refusal shows it (deploy/schemacheck.py: JSON, cut at 60 characters)."""
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- artifacts_dir and the paths a unit takes -------------------------------------------------


def test_a_5000_character_artifacts_dir_is_refused_in_one_line(tmp_path: Path) -> None:
    artifacts = long_path(5000)
    assert len(artifacts) == 5000
    hf = host_file(tmp_path, "cpu-bare", artifacts_dir=artifacts)
    out = tmp_path / "out"
    for flags in (
        ["--output", str(out), "--mode", "systemd", "--usage"],
        ["--output", str(out), "--mode", "bare", "--usage"],
        ["--output", str(out), "--mode", "supervisor"],
        ["--units", str(out)],
    ):
        rc, stdout, err = run_cli("render", "--host", str(hf), *flags)
        assert (rc, stdout, err) == (
            2,
            "",
            f"vllm-ledger: error: host file {hf}: artifacts_dir: {shown(artifacts)} is 5000 "
            "bytes long; at most 3839 (PATH_MAX 4096 with its NUL, leaving room for what goes "
            "below it)\n",
        ), flags
        assert sorted(p.name for p in tmp_path.iterdir()) == ["host.json"]


@needs_systemd
def test_the_longest_artifacts_dir_renders_units_systemd_verifies(tmp_path: Path) -> None:
    """3839 bytes, in parts of 255: the vLLM unit (its AssertPathExists= and ReadWritePaths=
    take ARTIFACTS/...) and the ledger's units verify clean; one byte more is refused."""
    artifacts = long_path(ARTIFACTS_DIR_MAX_BYTES)
    assert len(artifacts.encode()) == ARTIFACTS_DIR_MAX_BYTES == 3839
    hf = host_file(
        tmp_path, "cpu-bare", artifacts_dir=artifacts, vllm_executable=stand_in(tmp_path)
    )
    units = tmp_path / "units"
    for flags in (
        ["--output", str(tmp_path / "vllm.service"), "--mode", "systemd", "--usage"],
        ["--units", str(units)],
    ):
        rc, _, err = run_cli("render", "--host", str(hf), *flags)
        assert rc == 0, err
    text = (tmp_path / "vllm.service").read_text()
    assert f"\nAssertPathExists={artifacts}/ledger-plugin/VLLM_LEDGER_BUNDLE\n" in text
    assert f"\nReadWritePaths={artifacts}\n" in text
    assert analyze(tmp_path, "vllm.service") == (0, "")
    names = sorted(p.name for p in units.iterdir())
    assert len(names) == 3
    assert analyze(units, *names) == (0, "")
    # with a code folder: the bundle step's ExecStartPre= takes the paths instead
    host = dataclasses.replace(load_host(hf), ledger_code_dir="/srv/code")
    (tmp_path / "code.service").write_text(vllm_unit(host, usage=True))
    assert analyze(tmp_path, "code.service") == (0, "")
    with pytest.raises(ConfigError) as exc:
        parse_host({"model": "m", "artifacts_dir": long_path(ARTIFACTS_DIR_MAX_BYTES + 1)})
    assert "is 3840 bytes long; at most 3839" in str(exc.value)


@needs_systemd
def test_the_path_limits_are_systemds(tmp_path: Path) -> None:
    """PATH_MAX_BYTES and NAME_MAX_BYTES are where systemd stops taking a path: the golden unit
    with its ReadWritePaths= swapped for a path at the limit verifies clean, one byte past it
    does not."""
    golden = (DATA / "cpu-bare.systemd.usage.service").read_text()
    golden = golden.replace("/usr/local/bin/vllm", stand_in(tmp_path))
    lineno = golden.split("\n").index("ReadWritePaths=/srv/artifacts") + 1
    cases = [
        (long_path(PATH_MAX_BYTES), True),
        (long_path(PATH_MAX_BYTES + 1), False),
        ("/srv/" + "n" * NAME_MAX_BYTES, True),
        ("/srv/" + "n" * (NAME_MAX_BYTES + 1), False),
    ]
    for i, (path, fits) in enumerate(cases):
        name = f"case{i}.service"
        (tmp_path / name).write_text(
            golden.replace("\nReadWritePaths=/srv/artifacts\n", f"\nReadWritePaths={path}\n")
        )
        rc, said = analyze(tmp_path, name)
        if fits:
            assert (rc, said) == (0, ""), (len(path), said)
        else:  # "Failed to resolve unit specifiers in ...", "path has invalid length (...)"
            assert said.startswith(f"{tmp_path / name}:{lineno}: "), said
            assert said.count("\n") == 1, said


# ---- the unit's lines -------------------------------------------------------------------------


@needs_systemd
def test_the_line_limit_is_systemds(tmp_path: Path) -> None:
    """A line of UNIT_LINE_MAX_BYTES loads; one byte more and the unit does not load at all."""
    golden = (DATA / "cpu-bare.systemd.service").read_text()
    golden = golden.replace("/usr/local/bin/vllm", stand_in(tmp_path))
    head = "Environment=A="
    for size, fits in ((UNIT_LINE_MAX_BYTES, True), (UNIT_LINE_MAX_BYTES + 1, False)):
        line = head + "x" * (size - len(head))
        (tmp_path / "line.service").write_text(
            golden.replace("[Service]\n", f"[Service]\n{line}\n")
        )
        rc, said = analyze(tmp_path, "line.service")
        if fits:
            assert (rc, said) == (0, "")
        else:
            assert rc == 1 and "No buffer space available" in said, said


def test_values_making_a_line_too_long_for_systemd_are_refused_in_one_line(tmp_path: Path) -> None:
    """'%' is written '%%' in a unit: five 120,000-byte words make a 1.2 MB ExecStart= line
    (each word within the kernel's argument limit, the host file under 1 MiB)."""
    hf = host_file(tmp_path, "cpu-bare", extra_args=["%" * 120_000] * 5)
    rc, stdout, err = run_cli("render", "--host", str(hf), "--output", "-", "--mode", "systemd")
    head = (
        f"vllm-ledger: error: host file {hf}: model, served_model_name or extra_args: the "
        "unit's ExecStart= line would be "
    )
    tail = " bytes; systemd reads at most 1048575 (LONG_LINE_MAX): shorten them\n"
    assert (rc, stdout) == (2, "")
    assert err.startswith(head) and err.endswith(tail), err
    assert 1_200_000 < int(err[len(head) : -len(tail)]) < 1_201_000


@needs_systemd
def test_the_longest_command_line_that_fits_verifies(tmp_path: Path) -> None:
    """The longest ExecStart= (continuations joined) render gives: systemd loads it clean; one
    '%' more and render refuses it."""
    base = dataclasses.replace(
        load_host(DATA / "cpu-bare.json"), vllm_executable=stand_in(tmp_path)
    )

    def unit(last: int) -> str:
        return vllm_unit(dataclasses.replace(base, extra_args=("%" * 120_000,) * 4 + ("%" * last,)))

    def size(text: str) -> int:
        return max(len(line.encode()) for line in logical_lines(text))

    last = 1 + (UNIT_LINE_MAX_BYTES - size(unit(1))) // 2
    text = unit(last)
    assert size(text) in (UNIT_LINE_MAX_BYTES - 1, UNIT_LINE_MAX_BYTES)
    (tmp_path / "vllm.service").write_text(text)
    assert analyze(tmp_path, "vllm.service") == (0, "")
    with pytest.raises(ConfigError, match="ExecStart= line would be"):
        unit(last + 1)


# ---- unit names -------------------------------------------------------------------------------


@needs_systemd
def test_the_longest_container_name_names_units_systemd_verifies(tmp_path: Path) -> None:
    most = UNIT_NAME_MAX_CHARS - len("-ledger-exporter.service")
    host = dataclasses.replace(
        load_host(DATA / "cpu-bare.json"),
        container_name="n" * most,
        vllm_executable=stand_in(tmp_path),
    )
    names = [f"{host.name}.service"]
    (tmp_path / names[0]).write_text(vllm_unit(host, usage=True))
    for unit in ledger_units(host, listen="127.0.0.1:9464"):
        (tmp_path / unit.name).write_text(unit.text)
        names.append(unit.name)
    assert max(len(n) for n in names) == UNIT_NAME_MAX_CHARS
    assert analyze(tmp_path, *names) == (0, "")
    hf = host_file(tmp_path, "cpu-bare", container_name="n" * (most + 1))
    rc, _, err = run_cli("render", "--host", str(hf), "--output", "-", "--mode", "systemd")
    assert (rc, err) == (
        2,
        f"vllm-ledger: error: host file {hf}: container_name: 232 characters make a unit name "
        "of 256 (NAME-ledger-exporter.service); systemd takes at most 255: give a "
        "container_name of at most 231 characters\n",
    )


# ---- one argument, one environment entry ------------------------------------------------------


def test_the_argument_limit_is_the_kernels(tmp_path: Path) -> None:
    """ARG_MAX_BYTES is where execve stops: the longest extra_args word and extra_env entry run
    through the rendered bare script (vLLM a stand-in); one byte more is E2BIG, and render
    refuses it in one line."""
    word, value = "w" * ARG_MAX_BYTES, "v" * (ARG_MAX_BYTES - len("A="))
    for argv, env in (([word], {}), ([], {"A": value})):
        subprocess.run(["/bin/true", *argv], env=env, check=True)
    for argv, env in (([word + "w"], {}), ([], {"A": value + "v"})):
        with pytest.raises(OSError) as exc:
            subprocess.run(["/bin/true", *argv], env=env, check=True)
        assert exc.value.errno == errno.E2BIG
    stand_in(tmp_path)
    record = tmp_path / "bin" / "vllm"
    record.write_text(
        '#!/bin/sh\nprintf %s "$A" | wc -c > "$0.env"\n'
        'for last; do :; done; printf %s "$last" | wc -c > "$0.arg"\n'
    )
    host = parse_host(
        {"model": "m", "mode": "bare", "extra_args": [word], "extra_env": {"A": value}}
    )
    script = tmp_path / "run.sh"
    script.write_text(render_script(host, mode="bare"))
    path = f"{tmp_path / 'bin'}:/usr/bin:/bin"
    subprocess.run(["bash", str(script)], env={"PATH": path}, check=True, timeout=60)
    assert (tmp_path / "bin" / "vllm.arg").read_text().strip() == str(ARG_MAX_BYTES)
    assert (tmp_path / "bin" / "vllm.env").read_text().strip() == str(len(value))
    hf = host_file(tmp_path, "cpu-bare", extra_args=[word + "w"])
    rc, stdout, err = run_cli("render", "--host", str(hf), "--output", "-")
    assert (rc, stdout, err) == (
        2,
        "",
        f"vllm-ledger: error: host file {hf}: extra_args[0]: is 131072 bytes; a program's "
        "argument or environment entry is at most 131071 (MAX_ARG_STRLEN)\n",
    )
