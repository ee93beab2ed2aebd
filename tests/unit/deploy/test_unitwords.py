"""deploy/unitwords.py: a word, a path and a command line as a systemd unit reads them."""

from __future__ import annotations

import pytest

from vllm_ledger.deploy.unitwords import command_lines, plain_path, sd_word
from vllm_ledger.errors import ConfigError


def test_sd_word() -> None:
    assert sd_word("/srv/a-b_c.d:e,f=g+h@i") == "/srv/a-b_c.d:e,f=g+h@i"
    assert sd_word("") == '""'
    assert sd_word(";") == "\\;"
    assert sd_word("a b") == '"a b"'
    assert sd_word('$X %i "q" \\ \n\t') == '"$$X %%i \\"q\\" \\\\ \\n\\t"'
    assert sd_word("$X %i", command=False) == '"$X %%i"'


def test_plain_path() -> None:
    assert plain_path("/srv/a-b/c.d", "budgets") == "/srv/a-b/c.d"
    with pytest.raises(ConfigError) as exc:
        plain_path("/srv/a b", "budgets")
    assert (str(exc.value), exc.value.key) == (
        "budgets: '/srv/a b' cannot go in a systemd unit unquoted: use a path of letters, "
        "digits and ._+/@,- only",
        "budgets",
    )


def test_command_lines_one_line_or_flag_value_pairs() -> None:
    assert command_lines("ExecStart", ["/bin/true", "a b"]) == ['ExecStart=/bin/true "a b"']
    assert command_lines("ExecStart", ["--port", "8000", "--x"], ["/v", "serve", "m"]) == [
        "ExecStart=/v serve m \\",
        "  --port 8000 \\",
        "  --x",
    ]
