"""How a value goes into a systemd unit: ``sd_word`` quotes one word as systemd reads it back
(double quotes, C escapes, ``%%`` for its specifiers, ``$$`` in command lines), ``plain_path``
lets a directive that takes one path have only a plain path within the kernel's limits, and
``command_lines`` writes a command line, continued with ``\\`` where it is long. Pure.
"""

from __future__ import annotations

import re

from vllm_ledger.deploy.limits import path_problem
from vllm_ledger.errors import ConfigError
from vllm_ledger.units import is_plain_path

_PLAIN_WORD = re.compile(r"[A-Za-z0-9._/:,=+@-]+")


def sd_word(word: str, *, command: bool = True) -> str:
    """One word as systemd reads it back: plain if it is safe, else double-quoted with C
    escapes; ``%`` doubled (specifiers) and, in a command line, ``$`` doubled (expansion)."""
    if word == ";":
        return "\\;"
    if _PLAIN_WORD.fullmatch(word):
        return word
    text = word.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\n", "\\n").replace("\t", "\\t").replace("%", "%%")
    if command:
        text = text.replace("$", "$$")
    return f'"{text}"'


def plain_path(path: str, key: str) -> str:
    """``path`` if a directive may take it as is, else ConfigError naming ``key``."""
    if not is_plain_path(path):
        raise ConfigError(
            f"{key}: {path!a} cannot go in a systemd unit unquoted: use a path of letters, "
            "digits and ._+/@,- only",
            key=key,
        )
    problem = path_problem(path)
    if problem is not None:
        raise ConfigError(f"{key}: a path in a systemd unit {problem}", key=key)
    return path


def command_lines(key: str, words: list[str], *heads: list[str]) -> list[str]:
    """``key=w1 w2 ...`` on one line if short and there are no ``heads``; else each head on a
    line of its own, then ``--flag value`` pairs, continued with ``\\``."""
    one = " ".join(sd_word(w) for w in words)
    if not heads and len(key) + 1 + len(one) <= 96:
        return [f"{key}={one}"]
    groups: list[list[str]] = [list(h) for h in heads]
    for w in words:
        flag_value = groups and len(groups[-1]) == 1 and groups[-1][0].startswith("-")
        if flag_value and not w.startswith("-"):
            groups[-1].append(w)
        else:
            groups.append([w])
    lines = [" ".join(sd_word(w) for w in g) for g in groups]
    out = [f"{key}={lines[0]}"] + ["  " + line for line in lines[1:]]
    return [line + (" \\" if i < len(out) - 1 else "") for i, line in enumerate(out)]
