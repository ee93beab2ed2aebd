"""The one command run on the deployment host (pinned by ``ssh-key-line``) and the ssh argv
that runs it: an argv list, never through a local shell, our options first (for ssh the first
value given wins), the validated target's fields quoted all the same."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from vllm_ledger.bot.validate import Target

SSH = "ssh"
DEFAULT_CONNECT_TIMEOUT_S = 5


def status_command(
    code_dir: str,
    data_dir: str,
    python: str = "python3",
    budgets: str | None = None,
    ask: str | None = None,
) -> str:
    """The one command run on the deployment host (and pinned by ``ssh-key-line``).

    Works when ``code_dir`` holds the ``vllm_ledger`` package (a checkout) or is a bundle
    folder written by ``vllm-ledger bundle``: both put ``vllm_ledger/`` at its top. The
    arguments must be validated (``bot.validate``); quoting is then a no-op, kept as a belt.
    ``budgets``: the host's budgets file (``--budgets``). ``ask``: a word of
    ``formats.status_asked.ASKS``, sent as the command's last two words (``--ask WORD``):
    a forced command does not run them, and the status command reads them from
    ``SSH_ORIGINAL_COMMAND`` there.
    """
    code = shlex.quote(code_dir)
    return (
        f"cd {code} && PYTHONPATH={code} exec {shlex.quote(python)} "
        f"-m vllm_ledger status --root {shlex.quote(data_dir)}"
        + (f" --budgets {shlex.quote(budgets)}" if budgets is not None else "")
        + (f" --ask {shlex.quote(ask)}" if ask is not None else "")
    )


def remote_command(target: Target, ask: str | None = None) -> str:
    return status_command(target.code_dir, target.data_dir, target.python, target.budgets, ask)


def ssh_argv(
    target: Target,
    *,
    ssh_options: Sequence[str] = (),
    connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S,
    ssh: str | None = None,
    ask: str | None = None,
) -> list[str]:
    """The ssh argv. Our options come first: for ssh the first value given wins."""
    return [
        ssh or SSH,
        "-o",
        "BatchMode=yes",
        "-o",
        f"ConnectTimeout={int(connect_timeout_s)}",
        "-o",
        "ServerAliveInterval=5",
        "-o",
        "ServerAliveCountMax=2",
        "-o",
        "RequestTTY=no",
        "-o",
        "ForwardAgent=no",
        "-o",
        "ForwardX11=no",
        "-o",
        "ClearAllForwardings=yes",
        "-o",
        "PermitLocalCommand=no",
        *ssh_options,
        "--",
        target.target,
        remote_command(target, ask),
    ]


__all__ = ["DEFAULT_CONNECT_TIMEOUT_S", "SSH", "remote_command", "ssh_argv", "status_command"]
