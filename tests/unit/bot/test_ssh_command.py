"""The command run on the deployment host and the ssh argv: quoted, our options first, the
client program replaceable."""

from __future__ import annotations

from vllm_ledger.bot.ssh_command import ssh_argv, status_command
from vllm_ledger.bot.validate import Target


def test_the_status_command_quotes_each_value_and_ends_with_budgets_and_ask() -> None:
    assert status_command("/srv/a b", "/d") == (
        "cd '/srv/a b' && PYTHONPATH='/srv/a b' exec python3 -m vllm_ledger status --root /d"
    )
    assert status_command("/c", "/d", "python3.11", "/b.toml", "digest").endswith(
        "exec python3.11 -m vllm_ledger status --root /d --budgets /b.toml --ask digest"
    )


def test_the_argv_names_its_client_and_timeout_and_ends_with_the_command() -> None:
    t = Target(19001, "example-primary", "/c", "/d")
    argv = ssh_argv(t, connect_timeout_s=9, ssh="/opt/ssh", ask="usage:key:today")
    assert argv[0] == "/opt/ssh" and "ConnectTimeout=9" in argv
    assert argv[-3:-1] == ["--", "example-primary"]
    assert argv[-1].endswith(" --ask usage:key:today")
