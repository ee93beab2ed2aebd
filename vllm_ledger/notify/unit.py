"""The systemd unit that runs the notifier (``vllm-ledger notifier --print-unit``). Pure.

Secrets are not in the unit: they come from the files the config names, or from an
``EnvironmentFile`` (mode 0600) holding ``VLLM_LEDGER_COMMAND_SECRET=...`` lines. The state file
is written beside the config, so that folder is the one path the service may write.
"""

from __future__ import annotations

from pathlib import Path

from vllm_ledger.errors import BadArgument
from vllm_ledger.units import is_plain_path

DEFAULT_ENV_FILE = "/etc/vllm-ledger/notifier.env"


def unit_text(python: str, config: Path, env_file: str = DEFAULT_ENV_FILE) -> str:
    """A unit for ``python -m vllm_ledger notifier --config CONFIG`` (absolute, plain paths)."""
    for what, value in (("python", python), ("--config", str(config)), ("env file", env_file)):
        if not is_plain_path(value):
            raise BadArgument(
                f"{what} {value!a} is not an absolute path of letters, digits and "
                "._+/@,- only: the unit would need quoting"
            )
    return (
        "[Unit]\n"
        "Description=vllm-ledger notifier: bot status, vLLM health and alerts to a chat\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={python} -m vllm_ledger notifier --config {config}\n"
        f"EnvironmentFile=-{env_file}\n"
        "Restart=on-failure\n"
        "RestartSec=5\n"
        "KillSignal=SIGTERM\n"
        "TimeoutStopSec=20\n"
        "NoNewPrivileges=yes\n"
        "PrivateTmp=yes\n"
        "ProtectSystem=strict\n"
        "ProtectHome=read-only\n"
        f"ReadWritePaths={config.parent}\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


__all__ = ["DEFAULT_ENV_FILE", "unit_text"]
