"""The notifier's settings: defaults, secrets from files or the environment (never shown),
the listen address, and the Alertmanager token a notifier beyond loopback needs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vllm_ledger.errors import ConfigError
from vllm_ledger.notify.config import (
    check_exposure,
    is_loopback,
    notifier_config,
    parse_listen,
    read_secret,
)

ENV = {"VLLM_LEDGER_COMMAND_SECRET": "cmd"}


def test_config_defaults_secrets_from_env_or_files_and_refusals(tmp_path: Path) -> None:
    env = {"VLLM_LEDGER_COMMAND_SECRET": "Zq9secret"}
    cfg = notifier_config({"usage": {}}, tmp_path / "c.json", env)
    assert (cfg.listen_host, cfg.listen_port, cfg.platform, cfg.health_interval_s) == (
        "127.0.0.1",
        9095,
        "json",
        10.0,
    )
    assert cfg.command_secret == b"Zq9secret" and "Zq9" not in repr(cfg)
    (tmp_path / "secret").write_text("from-file\n")
    doc = {"notifier": {"command_secret_file": "secret", "platform": "dingtalk"}}
    cfg = notifier_config(doc, tmp_path / "c.json", {"VLLM_LEDGER_COMMAND_SECRET": "env"})
    assert cfg.command_secret == b"from-file"
    for notifier, want in (
        ({}, "no command secret"),
        ({"command_secret_file": "secret", "platform": "teams"}, "notifier.platform"),
        ({"command_secret_file": "secret", "listen": "0.0.0.0"}, "notifier.listen"),
        ({"command_secret_file": "secret", "damping_s": float("nan")}, "notifier.damping_s"),
        ({"command_secret_file": "secret", "token": "x"}, "unknown field"),
        ({"command_secret_file": "missing"}, "cannot read"),
    ):
        with pytest.raises(ConfigError, match=want):
            notifier_config({"notifier": notifier}, tmp_path / "c.json", {})


def test_a_secret_file_is_one_line_of_a_regular_file(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_text("  s3cret \n")
    assert read_secret(good, "webhook_secret_file") == "s3cret"
    cases = {
        "two": ("a\nb\n", "must hold one non-empty line"),
        "empty": (" \n", "must hold one non-empty line"),
        "big": ("x" * 4097, "is larger than 4096 bytes"),
    }
    for name, (text, why) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ConfigError, match=re.escape(f"notifier.f: {tmp_path / name} {why}")):
            read_secret(tmp_path / name, "f")
    (tmp_path / "latin").write_bytes(b"\xff\n")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        read_secret(tmp_path / "latin", "f")
    with pytest.raises(ConfigError, match="is not a regular file"):
        read_secret(tmp_path, "f")


def test_listen_is_host_and_port_and_loopback_is_told_apart() -> None:
    assert parse_listen("0.0.0.0:9095") == ("0.0.0.0", 9095)
    assert parse_listen("[::1]:80") == ("::1", 80)
    for bad in ("9095", "host:0", "host:70000", 9095, None):
        with pytest.raises(ConfigError, match=r"notifier\.listen: give HOST:PORT"):
            parse_listen(bad)
    assert [is_loopback(h) for h in ("127.0.0.1", "127.9.9.9", "::1", "LOCALHOST")] == [True] * 4
    assert [is_loopback(h) for h in ("0.0.0.0", "10.0.0.1", "gpu1", "::")] == [False] * 4


def test_beyond_loopback_the_alertmanager_token_is_required(tmp_path: Path) -> None:
    near = notifier_config({}, tmp_path / "c.json", ENV)
    check_exposure(near)
    wide = notifier_config({"notifier": {"listen": "0.0.0.0:9095"}}, tmp_path / "c.json", ENV)
    with pytest.raises(
        ConfigError, match=r"^notifier\.alertmanager_token_file: listening on 0\.0\.0\.0"
    ):
        check_exposure(wide)
    token = {**ENV, "VLLM_LEDGER_ALERTMANAGER_TOKEN": "t"}
    check_exposure(
        notifier_config({"notifier": {"listen": "0.0.0.0:9095"}}, tmp_path / "c.json", token)
    )


def test_paths_are_beside_the_config_file_and_the_webhook_is_a_url(tmp_path: Path) -> None:
    (tmp_path / "url").write_text("https://hooks.example/x\n")
    doc = {"notifier": {"webhook_url_file": "url", "ssh_config": "ssh/config", "lang": "en"}}
    cfg = notifier_config(doc, tmp_path / "c.json", ENV)
    assert (cfg.webhook_url, cfg.ssh_config, cfg.lang) == (
        "https://hooks.example/x",
        tmp_path / "ssh" / "config",
        "en",
    )
    assert notifier_config({}, tmp_path / "c.json", ENV).webhook_url is None
    bad_url = {**ENV, "VLLM_LEDGER_WEBHOOK_URL": "ftp://x"}
    with pytest.raises(ConfigError, match="must start with https:// or http://"):
        notifier_config({}, tmp_path / "c.json", bad_url)
    for notifier, field in (
        ({"lang": "fr"}, "lang"),
        ({"ssh_config": ""}, "ssh_config"),
        ({"webhook_url_file": 3}, "webhook_url_file"),
        ({"poll_interval_s": 0.01}, "poll_interval_s"),
    ):
        with pytest.raises(ConfigError, match=rf"^notifier\.{field}: "):
            notifier_config({"notifier": notifier}, tmp_path / "c.json", ENV)
    with pytest.raises(ConfigError, match=r"^notifier\.: not an object"):
        notifier_config({"notifier": []}, tmp_path / "c.json", ENV)
