"""A library's refusal worded with the flag the user typed (commands/_refusals.py)."""

from __future__ import annotations

import pytest

from vllm_ledger.commands._refusals import file_flag, flag_names, flagged, typed, with_flags
from vllm_ledger.errors import BadArgument


def test_flagged_puts_the_flag_where_the_library_named_its_argument() -> None:
    exc = BadArgument("step '1y' is not a duration", hint="give ...", argument="step", example="1h")
    said = flagged(exc, "--step")
    assert said.what == "--step '1y' is not a duration"
    assert said.example == "--step 1h"
    assert (said.hint, said.argument) == ("give ...", "step")


def test_flag_names_rewords_only_the_arguments_it_names() -> None:
    with pytest.raises(BadArgument) as got, flag_names(step="--step"):
        raise BadArgument("step 'x' is bad", argument="step")
    assert got.value.what == "--step 'x' is bad"
    with pytest.raises(BadArgument) as other, flag_names(step="--step"):
        raise BadArgument("window 'x' is bad", argument="window")
    assert other.value.what == "window 'x' is bad"


def test_file_flag_says_how_to_give_another_file() -> None:
    with pytest.raises(BadArgument) as got, file_flag("path", "--config FILE"):
        raise BadArgument("cannot read x.json: No such file", argument="path")
    assert got.value.hint == "pass --config FILE"


def test_with_flags_names_a_whole_word_once_never_part_of_a_path() -> None:
    assert with_flags("usage/x needs usage and usage", {"usage": "--usage"}) == (
        "usage/x needs --usage and usage"
    )


def test_typed_names_the_flag_in_the_refusal() -> None:
    def parse(value: str) -> int:
        raise BadArgument(f"n {value!r} is bad", argument="n", example="3")

    with pytest.raises(BadArgument) as got:
        typed("--n", parse)("x")
    assert (got.value.what, got.value.example) == ("--n 'x' is bad", "--n 3")
