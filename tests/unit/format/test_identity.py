"""Who is writing (format/identity.py): the instance key, the facts kept in meta, the run id."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vllm_ledger.format.identity import (
    InstanceInfo,
    default_root,
    derive_run_id,
    expected_writers_from_env,
    model_label,
    process_start_ts,
    sanitize_run_id,
)


def test_the_model_label_joins_the_served_names() -> None:
    assert model_label(("a", "b")) == "a,b"
    assert model_label(()) == "?"


def test_instance_key_comes_from_port_and_host() -> None:
    info = InstanceInfo(("m",), 8000, "gpu1", "0.32.0")
    assert info.key == "gpu1:8000"


def test_without_a_port_the_instance_is_its_host_and_models() -> None:
    assert InstanceInfo(("a", "b"), None, "gpu1").key == "gpu1:a,b"
    assert InstanceInfo(host_name="gpu1").key == "gpu1:?"


def test_instance_facts_survive_meta_and_a_bad_port_reads_as_none() -> None:
    info = InstanceInfo(("a", "b"), 8001, "gpu1", "0.32.0", "9.9.9")
    meta = info.to_meta()
    assert meta == {
        "served_model_names": "a,b",
        "port": "8001",
        "host_name": "gpu1",
        "vllm_version": "0.32.0",
        "ledger_version": "9.9.9",
    }
    assert InstanceInfo.from_meta(meta) == info
    assert InstanceInfo.from_meta({**meta, "port": "-1"}).port is None
    assert InstanceInfo.from_meta({}) == InstanceInfo((), None, "", "", "")


def test_run_id_is_start_time_host_and_launcher_pid() -> None:
    assert derive_run_id(4242, "gpu 1/a", 1_800_000_000.0) == "20270115T080000Z-gpu-1-a-4242"
    assert derive_run_id(1, "", 1_800_000_000.0) == "20270115T080000Z-host-1"
    long = derive_run_id(1, "h" * 100, 1_800_000_000.0)
    assert long == "20270115T080000Z-" + "h" * 40 + "-1"
    assert sanitize_run_id(long) == long  # a derived id passes its own check
    assert sanitize_run_id("  run-a ") == "run-a"
    for bad in ("", "../x", "-a", "a b", "r" * 129):
        assert sanitize_run_id(bad) is None, bad


def test_process_start_time_from_proc(tmp_path: Path) -> None:
    # /proc/<pid>/stat with a command name holding ") " and spaces; start time is field 22.
    (tmp_path / "123").mkdir()
    fields = ["S", "1"] + ["0"] * 17 + ["250"] + ["0"] * 10
    (tmp_path / "123" / "stat").write_text(f"123 (a) b (c) {' '.join(fields)}\n")
    (tmp_path / "stat").write_text("cpu  1 2 3\nbtime 1700000000\nprocesses 9\n")
    assert process_start_ts(123, tmp_path) == 1_700_000_000 + 250 / os.sysconf("SC_CLK_TCK")
    assert process_start_ts(456, tmp_path) is None  # no such process: no guess


def test_default_root_prefers_the_ledger_dir_then_xdg() -> None:
    assert default_root({"VLLM_LEDGER_DIR": "/x/l", "XDG_DATA_HOME": "/d"}) == Path("/x/l")
    assert default_root({"VLLM_LEDGER_DIR": "", "XDG_DATA_HOME": "/d"}) == Path("/d/vllm-ledger")
    assert default_root({}) == Path.home() / ".local" / "share" / "vllm-ledger"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, (None, None)),
        ({"VLLM_LEDGER_WRITERS": "8"}, (8, "VLLM_LEDGER_WRITERS")),
        ({"LLMDEPLOY_USAGE_WRITERS": "8"}, (8, "LLMDEPLOY_USAGE_WRITERS")),
        # The project's own name wins over the alias.
        (
            {"VLLM_LEDGER_WRITERS": "2", "LLMDEPLOY_USAGE_WRITERS": "8"},
            (2, "VLLM_LEDGER_WRITERS"),
        ),
        # Empty is unset: the alias is read.
        (
            {"VLLM_LEDGER_WRITERS": " ", "LLMDEPLOY_USAGE_WRITERS": " 8 "},
            (8, "LLMDEPLOY_USAGE_WRITERS"),
        ),
        # Set but not a count: nothing is set, and the name that said so is returned.
        ({"LLMDEPLOY_USAGE_WRITERS": "eight"}, (None, "LLMDEPLOY_USAGE_WRITERS")),
        ({"LLMDEPLOY_USAGE_WRITERS": "0"}, (None, "LLMDEPLOY_USAGE_WRITERS")),
        ({"LLMDEPLOY_USAGE_WRITERS": "4097"}, (None, "LLMDEPLOY_USAGE_WRITERS")),
        ({"LLMDEPLOY_USAGE_WRITERS": "\u00b2"}, (None, "LLMDEPLOY_USAGE_WRITERS")),  # "2" above
        ({"LLMDEPLOY_USAGE_WRITERS": "-3"}, (None, "LLMDEPLOY_USAGE_WRITERS")),
        ({"VLLM_LEDGER_WRITERS": "4096"}, (4096, "VLLM_LEDGER_WRITERS")),
    ],
)
def test_expected_writers_from_env_reads_the_deploy_usage_alias(
    env: dict[str, str], expected: tuple[int | None, str | None]
) -> None:
    assert expected_writers_from_env(env) == expected
