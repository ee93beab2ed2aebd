"""commands/_render_write.py: what `render` writes for each mode and the line after it."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import pytest

from vllm_ledger.commands._render_write import FOLDER_MODES, write_main, write_units
from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.deploy.units import SYSUSERS_FILE, unit_name, vllm_unit
from vllm_ledger.errors import BadArgument, ConfigError

HOST = Host(model="m", image="vllm/vllm-openai:v0.32.0", artifacts_dir="/srv/a")


def args(**given: Any) -> argparse.Namespace:
    values = {"host": Path("host.json"), "output": "-", "usage": False, "tz": None}
    values |= {"autoscale": False, "units": None, "exporter_listen": None}
    return argparse.Namespace(**(values | {"notifier_config": None} | given))


def test_a_script_to_stdout_is_the_rendered_script(capsys: pytest.CaptureFixture[str]) -> None:
    write_main(args(usage=True), HOST, "docker")
    assert capsys.readouterr().out == render_script(HOST, mode="docker", usage=True)


def test_a_unit_is_written_with_its_account_and_the_next_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / unit_name(HOST)
    write_main(args(output=str(out)), HOST, "systemd")
    assert out.read_text() == vllm_unit(HOST, usage=False, tz=None)
    assert (out.stat().st_mode & 0o777, (tmp_path / SYSUSERS_FILE).exists()) == (0o644, True)
    err = capsys.readouterr().err
    assert f"(systemd mode, ledger off); review it, then install it: cp {out} " in err


def test_a_refusal_names_the_host_file_and_the_flag() -> None:
    with pytest.raises(ConfigError) as exc:
        write_main(args(usage=True), Host(model="m", image="i"), "bare")
    assert str(exc.value).startswith("host file host.json: artifacts_dir: required with --usage")


def test_image_mode_writes_a_folder_only(tmp_path: Path) -> None:
    assert FOLDER_MODES == ("kubernetes", "image")
    with pytest.raises(BadArgument, match=r"^--mode image writes a folder: give --output image/$"):
        write_main(args(), HOST, "image")
    write_main(args(output=f"{tmp_path}/image/"), HOST, "image")
    assert sorted(os.listdir(tmp_path / "image"))[0] == ".dockerignore"


def test_the_ledgers_units_go_into_their_folder(tmp_path: Path) -> None:
    write_units(args(units=tmp_path / "units"), HOST)
    names = sorted(os.listdir(tmp_path / "units"))
    assert names and all(name.endswith((".service", ".timer")) for name in names)
