"""A library's refusal worded for the command line, naming the flag the user typed.

A library raises ``BadArgument`` naming its own argument (``step '1y' is not a duration: ...,
e.g. 1h``); a command says it with the flag the user typed (``--step '1y' is not a duration:
..., e.g. --step 1h``). ``BadArgument`` is not caught by argparse (it catches only
``ArgumentTypeError``, ``TypeError`` and ``ValueError``), so it reaches ``cli.main`` and is
printed as every other error is: one line, exit 2.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

from vllm_ledger.errors import BadArgument

T = TypeVar("T")


def flagged(exc: BadArgument, flag: str) -> BadArgument:
    """``exc`` as the command line says it: ``flag`` where the library named its argument (or
    in front, when it named none) and in front of the example. ``step '1y' is not a duration:
    give ..., e.g. 1h`` -> ``--step '1y' is not a duration: give ..., e.g. --step 1h``."""
    what = exc.what
    if exc.argument and what.startswith(exc.argument + " "):
        what = what[len(exc.argument) + 1 :]
    return BadArgument(
        f"{flag} {what}",
        hint=exc.hint,
        argument=exc.argument,
        value=exc.value,
        example=f"{flag} {exc.example}" if exc.example else "",
    )


@contextmanager
def flag_names(**flags: str) -> Iterator[None]:
    """Within the block, a library's ``BadArgument`` whose ``.argument`` is one of ``flags``
    (``step="--step"``) is raised again worded with that flag (``flagged``)."""
    try:
        yield
    except BadArgument as exc:
        if exc.argument in flags:
            raise flagged(exc, flags[exc.argument]) from None
        raise


@contextmanager
def file_flag(argument: str, flag: str) -> Iterator[None]:
    """Within the block, a library's refusal of a file it was given as ``argument`` (one it
    could not read) says how to give another, as ``input_file`` does: ``cannot read x.json: No
    such file or directory`` -> ``...: pass --config FILE``."""
    try:
        yield
    except BadArgument as exc:
        if exc.argument == argument:
            raise BadArgument(
                exc.what, hint=f"pass {flag}", argument=exc.argument, value=exc.value
            ) from None
        raise


def with_flags(text: str, flags: Mapping[str, str]) -> str:
    """``text`` with the first mention of each name in ``flags`` (a library's parameter or a
    setting, as a whole word; never part of a path) as the command line says it: ``required
    with usage`` -> ``required with --usage``."""
    for name, flag in flags.items():
        word = re.compile(rf"(?<![\w./-]){re.escape(name)}(?![\w./-])")
        text = word.sub(flag.replace("\\", "\\\\"), text, count=1)
    return text


def typed(flag: str, parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse ``type`` from a ``units`` parser: its refusal names ``flag``."""

    def typed(value: str) -> T:
        try:
            return parse(value)
        except BadArgument as exc:
            raise flagged(exc, flag) from None

    return typed
