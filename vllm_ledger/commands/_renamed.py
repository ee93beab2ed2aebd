"""Deprecated spellings of flags, kept for one release.

An old spelling stores its value where the new one does and records a note (``deprecate``);
``cli.main`` prints each note as one ``note:`` line once the command line has parsed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from vllm_ledger.commands._values import Duration
from vllm_ledger.units import format_duration

_NOTES = "_deprecation_notes"


def deprecate(namespace: argparse.Namespace, old: str, new: str) -> None:
    """Record that the old spelling ``old`` was used; ``new`` is what to write instead.
    ``cli.main`` prints each note once, on stderr, once the command line has parsed (a refused
    command line prints only its one error line)."""
    notes: dict[str, str] = getattr(namespace, _NOTES, None) or {}
    notes[old] = f"{old} is deprecated; use {new} (it still works until the next release)"
    setattr(namespace, _NOTES, notes)


def deprecation_notes(namespace: argparse.Namespace) -> list[str]:
    """The notes ``deprecate`` recorded, one per old spelling (with the value it was last
    given), in the order first used."""
    return list((getattr(namespace, _NOTES, None) or {}).values())


class Renamed(argparse.Action):
    """An old spelling of a flag, kept for one release: it stores its value where the new
    spelling does (``dest``) and records a note naming the new spelling with that value
    (``show`` writes the value as the new flag takes it). Hidden from ``--help``; docs/cli.md
    lists every old spelling."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        *,
        new: str,
        show: Callable[[Any], str] = str,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("help", argparse.SUPPRESS)
        kwargs.setdefault("default", argparse.SUPPRESS)  # never hides the new flag's default
        super().__init__(option_strings, dest, **kwargs)
        self.new = new
        self.show = show

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        old = option_string or self.option_strings[0]
        deprecate(namespace, old, f"{self.new} {self.show(values)}".rstrip())


def add_renamed(
    p: argparse.ArgumentParser,
    old: str,
    new: str,
    *,
    dest: str,
    type: Callable[[str], Any],  # argparse's own name
    show: Callable[[Any], str] = str,
) -> None:
    """``old`` as a deprecated spelling of ``new`` (which stores into ``dest``)."""
    p.add_argument(old, dest=dest, type=type, action=Renamed, new=new, show=show)


def add_renamed_duration(
    p: argparse.ArgumentParser, old: str, new: str, *, dest: str, like: Duration
) -> None:
    """A renamed duration flag: the old spelling takes what the new one does, and its errors
    name the old spelling the user typed."""
    old_type = Duration(old, like.lo, like.hi, like.example, like.lo_open, like.integer)
    add_renamed(p, old, new, dest=dest, type=old_type, show=format_duration)
