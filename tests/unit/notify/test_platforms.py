"""The registry (vllm_ledger/notify/platforms/__init__.py): every platform the config allows
is registered and every registered one allowed, every platform module is in it, and each
inbound platform's route is served by a real ``Notifier`` (refused until its secret is set)
with its secret read from its own setting or environment variable."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

import pytest

from vllm_ledger.notify import config, platforms
from vllm_ledger.notify.platforms.base import Platform
from vllm_ledger.notify.service import Notifier

OWN_ROUTES = {"/command", "/resend", "/alertmanager", "/healthz"}
ENV = {"VLLM_LEDGER_COMMAND_SECRET": "c"}


def test_the_configs_platforms_are_the_registered_ones() -> None:
    assert set(config.PLATFORMS) == set(platforms.PLATFORMS) == set(platforms.names())
    assert platforms.names() == ("feishu", "lark", "dingtalk", "wecom", "slack", "json")
    for name, platform in platforms.PLATFORMS.items():
        assert platforms.get(name) is platform and platform.name == name
    with pytest.raises(KeyError):
        platforms.get("teams")


@pytest.mark.parametrize("name", platforms.names())
def test_the_config_accepts_each_registered_platform(name: str, tmp_path: Path) -> None:
    doc = {"usage": {}, "notifier": {"platform": name}}
    assert config.notifier_config(doc, tmp_path / "private.json", ENV).platform == name


def test_every_platform_module_is_registered() -> None:
    registered = set(platforms.PLATFORMS.values())
    for info in pkgutil.iter_modules(platforms.__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{platforms.__name__}.{info.name}")
        built = {v for v in vars(module).values() if isinstance(v, Platform)}
        assert built, f"{info.name} builds no Platform"
        assert built <= registered, f"{info.name}: not in the registry"


def test_inbound_routes_and_settings_are_distinct() -> None:
    found = platforms.inbound()
    assert [p.name for p, _i in found] == ["dingtalk", "slack"]
    routes = [i.route for _p, i in found]
    assert len(set(routes)) == len(routes) and not set(routes) & OWN_ROUTES
    assert all(r.startswith("/") for r in routes)
    for _p, i in found:
        assert i.secret_file in config.FIELDS and i.secret_file.endswith("_file")
        assert i.secret_env.startswith("VLLM_LEDGER_")


def _notifier(tmp_path: Path, env: dict[str, str]) -> Notifier:
    cfg = tmp_path / "private.json"
    usage = {"19001": {"target": "closed", "code_dir": "/srv/c", "data_dir": "/srv/u"}}
    cfg.write_text(json.dumps({"usage": usage}))
    n = Notifier(cfg, env=env, listen=("127.0.0.1", 0))
    n.endpoint.server_close()  # never started: its handlers are called directly
    return n


def test_the_notifier_serves_each_inbound_route_once_its_secret_is_set(tmp_path: Path) -> None:
    bare = _notifier(tmp_path, ENV)
    try:
        for p, i in platforms.inbound():
            _bound, handle = bare.routes[i.route]
            assert handle(b"{}", {}) == (404, {"error": f"{p.name}_not_configured"})
    finally:
        bare.store.close()
    secrets = {i.secret_env: f"secret-of-{p.name}" for p, i in platforms.inbound()}
    configured = _notifier(tmp_path, {**ENV, **secrets})
    try:
        for p, i in platforms.inbound():
            assert configured.cfg.inbound_secrets[p.name] == f"secret-of-{p.name}".encode()
            _bound, handle = configured.routes[i.route]
            assert handle(b"{}", {}) == (401, {"error": "bad_timestamp"})
    finally:
        configured.store.close()


def test_an_inbound_secret_comes_from_its_file_setting(tmp_path: Path) -> None:
    for p, i in platforms.inbound():
        (tmp_path / p.name).write_text(f"from-file-{p.name}\n")
        doc = {"usage": {}, "notifier": {i.secret_file: p.name}}
        cfg = config.notifier_config(doc, tmp_path / "private.json", {**ENV, i.secret_env: "env"})
        assert cfg.inbound_secrets == {p.name: f"from-file-{p.name}".encode()}
