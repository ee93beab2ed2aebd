"""The authorized_keys line: the forced command, with the host's budgets file when named."""

from __future__ import annotations

import pytest

from vllm_ledger.commands.ssh_key_line import key_line
from vllm_ledger.errors import BadArgument

KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB7mVxq0pNUo2n2b2l5bq9xD2m4a0uZ1Y2ZqS0Xh1b2c bot@notifier"
)


def test_the_forced_command_names_the_budgets_file_when_given() -> None:
    line = key_line(KEY, "/srv/code", "/srv/usage", budgets="/etc/vllm-ledger/budgets.toml")
    assert line.startswith(
        'restrict,command="cd /srv/code && PYTHONPATH=/srv/code exec python3 -m vllm_ledger '
        'status --root /srv/usage --budgets /etc/vllm-ledger/budgets.toml" ssh-ed25519 '
    )
    assert "--budgets" not in key_line(KEY, "/srv/code", "/srv/usage")


@pytest.mark.parametrize("bad", ["relative/budgets.toml", "/etc/b;rm -rf /", "/etc/b\nx"])
def test_a_budgets_path_that_is_not_a_plain_absolute_path_is_refused(bad: str) -> None:
    with pytest.raises(BadArgument, match=r"^--budgets: "):
        key_line(KEY, "/srv/code", "/srv/usage", budgets=bad)
