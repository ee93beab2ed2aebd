"""The notifier's settings: the config file's optional ``notifier`` object, secrets from files
or the environment. Pure apart from reading those files.

The bot's original config (only ``usage``, docs/bot-status.md) is enough: every setting has a
default, and the secrets can come from the environment. A secret is never taken from argv and
never printed::

    {"usage": {...},
     "notifier": {"listen": "127.0.0.1:9095", "platform": "feishu", "lang": "zh",
                  "webhook_url_file": "/etc/notify/webhook_url",
                  "webhook_secret_file": "/etc/notify/webhook_secret",
                  "command_secret_file": "/etc/notify/command_secret",
                  "slack_signing_secret_file": "/etc/notify/slack_signing_secret",
                  "dingtalk_app_secret_file": "/etc/notify/dingtalk_app_secret"}}

Each ``*_file`` field, when absent, falls back to its environment variable
(``ENV_WEBHOOK_URL``, ``ENV_WEBHOOK_SECRET``, ``ENV_COMMAND_SECRET``, ``ENV_ALERTMANAGER_TOKEN``).
``digest`` (optional) posts yesterday's usage once a day at a local time
(``notify/digest.py``). ``platform`` is one of the registry's names (``notify/platforms``),
and each platform with
inbound requests (Slack, DingTalk) adds its own secret's field and variable
(``slack_signing_secret_file`` or ``VLLM_LEDGER_SLACK_SIGNING_SECRET``, ...), read into
``inbound_secrets``. Those secrets are optional: without one, that platform's route refuses
every request. The Alertmanager token is required whenever the notifier listens beyond
loopback (``check_exposure``): anyone who reaches ``/alertmanager`` could post to the chat.
"""

from __future__ import annotations

import dataclasses
import errno
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.errors import BadArgument, ConfigError, NotARegularFile
from vllm_ledger.hostport import Address, host_port
from vllm_ledger.infile import read_regular_text
from vllm_ledger.notify import platforms
from vllm_ledger.notify.digest import DigestSettings, digest_settings
from vllm_ledger.strictjson import number_in

PLATFORMS: tuple[str, ...] = platforms.names()
DEFAULT_PORT = 9095
DEFAULT_LISTEN = f"127.0.0.1:{DEFAULT_PORT}"
ENV_WEBHOOK_URL = "VLLM_LEDGER_WEBHOOK_URL"
ENV_WEBHOOK_SECRET = "VLLM_LEDGER_WEBHOOK_SECRET"
ENV_COMMAND_SECRET = "VLLM_LEDGER_COMMAND_SECRET"
ENV_ALERTMANAGER_TOKEN = "VLLM_LEDGER_ALERTMANAGER_TOKEN"
MAX_SECRET_BYTES = 4096

# name -> (lowest, highest, default) for the numeric settings
NUMBERS: dict[str, tuple[float, float, float]] = {
    "health_interval_s": (0.1, 3600.0, 10.0),
    "health_deadline_s": (0.5, 60.0, 8.0),
    "poll_interval_s": (0.1, 86400.0, 30.0),
    "poll_deadline_s": (1.0, 3600.0, 20.0),
    "damping_s": (0.0, 3600.0, 30.0),
    "commands_per_minute": (1.0, 6000.0, 120.0),
    "deliver_timeout_s": (0.5, 60.0, 5.0),
    "startup_wait_s": (0.0, 600.0, 20.0),
}
FIELDS = (
    "listen",
    "platform",
    "lang",
    "ssh_config",
    "webhook_url_file",
    "webhook_secret_file",
    "command_secret_file",
    "alertmanager_token_file",
    "digest",
    *(i.secret_file for _p, i in platforms.inbound()),
    *NUMBERS,
)


@dataclass(frozen=True)
class NotifierConfig:
    listen_host: str
    listen_port: int
    platform: str
    lang: str
    webhook_url: str | None
    webhook_secret: str | None
    command_secret: bytes
    alertmanager_token: str | None
    ssh_config: Path | None
    # platform name -> the secret its inbound requests are signed with (configured ones only)
    inbound_secrets: Mapping[str, bytes] = dataclasses.field(default_factory=dict)
    health_interval_s: float = 10.0
    health_deadline_s: float = 8.0
    poll_interval_s: float = 30.0
    poll_deadline_s: float = 20.0
    damping_s: float = 30.0
    commands_per_minute: float = 120.0
    deliver_timeout_s: float = 5.0
    startup_wait_s: float = 20.0
    digest: DigestSettings | None = None  # the daily digest (notify/digest.py); None: off

    def __repr__(self) -> str:  # secrets never reach a log line
        return (
            f"NotifierConfig(listen={self.listen_host}:{self.listen_port}, "
            f"platform={self.platform}, webhook={'set' if self.webhook_url else 'none'})"
        )

    # the two inbound secrets under the names of their settings (``*_file``)
    @property
    def slack_signing_secret(self) -> bytes | None:
        return self.inbound_secrets.get("slack")

    @property
    def dingtalk_app_secret(self) -> bytes | None:
        return self.inbound_secrets.get("dingtalk")


def _bad(field: str, why: str) -> ConfigError:
    return ConfigError(f"notifier.{field}: {why}", key="notifier")


def read_secret(path: Path, field: str) -> str:
    """A secret file: a regular file, at most 4 KiB, one line; surrounding blanks dropped."""
    try:
        text = read_regular_text(path, MAX_SECRET_BYTES).strip()
    except NotARegularFile:
        raise _bad(field, f"{path} is not a regular file") from None
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            raise _bad(field, f"{path} is larger than {MAX_SECRET_BYTES} bytes") from None
        raise _bad(field, f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise _bad(field, f"{path} is not UTF-8 text") from exc
    if not text or "\n" in text:
        raise _bad(field, f"{path} must hold one non-empty line")
    return text


def _secret(
    section: Mapping[str, Any], field: str, env: Mapping[str, str], var: str, base: Path
) -> str | None:
    value = section.get(field)
    if value is not None:
        if not isinstance(value, str) or not value:
            raise _bad(field, "give a file path")
        path = Path(value) if Path(value).is_absolute() else base / value
        return read_secret(path, field)
    found = env.get(var, "").strip()
    return found or None


def _inbound_secrets(
    section: Mapping[str, Any], env: Mapping[str, str], base: Path
) -> dict[str, bytes]:
    """Each inbound platform's secret, from its ``*_file`` field or its variable."""
    found = {
        p.name: _secret(section, i.secret_file, env, i.secret_env, base)
        for p, i in platforms.inbound()
    }
    return {name: secret.encode("utf-8") for name, secret in found.items() if secret is not None}


def _number(section: Mapping[str, Any], name: str) -> float:
    lo, hi, default = NUMBERS[name]
    value = section.get(name, default)
    if not number_in(value, lo, hi):
        raise _bad(name, f"give a number from {lo:g} to {hi:g} (default {default:g})")
    return float(value)


def parse_listen(value: object) -> Address:
    """``HOST:PORT`` (``hostport.host_port``; ``[::1]:9095`` for IPv6), port 1-65535."""
    try:
        if isinstance(value, str):
            return host_port(value, zero=False)
    except BadArgument:
        pass
    raise _bad("listen", "give HOST:PORT, e.g. 127.0.0.1:9095")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.0/8``, ``::1``) or ``localhost``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(cfg: NotifierConfig) -> None:
    """A notifier listening beyond loopback needs the Alertmanager token (``ConfigError``)."""
    if cfg.alertmanager_token is None and not is_loopback(cfg.listen_host):
        raise _bad(
            "alertmanager_token_file",
            f"listening on {cfg.listen_host} (beyond loopback) needs a bearer token for "
            f"/alertmanager: give alertmanager_token_file or set {ENV_ALERTMANAGER_TOKEN} "
            '(docs/notifier.md, "The Alertmanager token")',
        )


def notifier_config(
    doc: Mapping[str, Any], config_path: Path, env: Mapping[str, str] | None = None
) -> NotifierConfig:
    """The settings from a parsed config file (its ``notifier`` object may be absent)."""
    env = os.environ if env is None else env
    section = doc.get("notifier", {})
    if not isinstance(section, Mapping):
        raise _bad("", "not an object")
    unknown = sorted(str(k) for k in section if k not in FIELDS)
    if unknown:
        raise _bad(ascii(unknown[0])[1:-1][:40], f"unknown field (known: {', '.join(FIELDS)})")
    host, port = parse_listen(section.get("listen", DEFAULT_LISTEN))
    platform = section.get("platform", "json")
    if platform not in PLATFORMS:
        raise _bad("platform", f"give one of {', '.join(PLATFORMS)}")
    lang = section.get("lang", "zh")
    if lang not in ("zh", "en"):
        raise _bad("lang", "give zh or en")
    base = config_path.resolve().parent
    ssh_config = section.get("ssh_config")
    if ssh_config is not None and (not isinstance(ssh_config, str) or not ssh_config):
        raise _bad("ssh_config", "give a file path")
    command_secret = _secret(section, "command_secret_file", env, ENV_COMMAND_SECRET, base)
    if command_secret is None:
        raise _bad(
            "command_secret_file",
            f"no command secret: give command_secret_file or set {ENV_COMMAND_SECRET}",
        )
    url = _secret(section, "webhook_url_file", env, ENV_WEBHOOK_URL, base)
    if url is not None and not re.match(r"^(https?|jsons?)://[^\s]+$", url):
        raise _bad("webhook_url_file", "the webhook URL must start with https:// or http://")
    return NotifierConfig(
        listen_host=host,
        listen_port=port,
        platform=str(platform),
        lang=str(lang),
        webhook_url=url,
        webhook_secret=_secret(section, "webhook_secret_file", env, ENV_WEBHOOK_SECRET, base),
        command_secret=command_secret.encode("utf-8"),
        alertmanager_token=_secret(
            section, "alertmanager_token_file", env, ENV_ALERTMANAGER_TOKEN, base
        ),
        ssh_config=None if ssh_config is None else (base / ssh_config),
        inbound_secrets=_inbound_secrets(section, env, base),
        **{name: _number(section, name) for name in NUMBERS},
        digest=None if section.get("digest") is None else digest_settings(section["digest"], base),
    )


__all__ = [
    "DEFAULT_LISTEN",
    "DEFAULT_PORT",
    "ENV_ALERTMANAGER_TOKEN",
    "ENV_COMMAND_SECRET",
    "ENV_WEBHOOK_SECRET",
    "ENV_WEBHOOK_URL",
    "PLATFORMS",
    "NotifierConfig",
    "check_exposure",
    "is_loopback",
    "notifier_config",
    "parse_listen",
    "read_secret",
]
