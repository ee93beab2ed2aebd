"""plan/partial: the words and the JSON every command gives an answer the store called partial
(``isPartial``) or gave a warning with; an ``infos`` text or a whole answer is not among them;
several answers of one figure add up, still bounded."""

from __future__ import annotations

from vllm_ledger.plan.partial import merged, said_json, said_lines, told, told_json, told_lines
from vllm_ledger.plan.prom import MAX_SAID, Said

DOC = "docs/x.md#a-partial-answer"
WARNED = Said(warnings=("store 10.0.0.7:10901 did not answer",), warnings_left_out=2)


def test_a_partial_or_warned_answer_is_named_with_the_stores_words() -> None:
    assert said_lines("up", Said(partial=True), "a target", DOC) == (
        "the store's answer to up is partial (isPartial): some of its storage nodes did not "
        "answer, so a target may be missing (docs/x.md#a-partial-answer)",
    )
    assert said_lines("up", WARNED, "a target", DOC) == (
        "the store's answer to up came with a warning: store 10.0.0.7:10901 did not answer",
        "the store's answer to up: 2 more warnings",
    )
    assert said_lines("up", Said(infos=("PromQL info: x",)), "a target", DOC) == ()


def test_only_the_answers_told_are_listed_in_order() -> None:
    said = {"a": Said(), "b": WARNED, "c": Said(infos=("i",)), "d": Said(partial=True)}
    assert list(told(said)) == ["b", "d"]
    assert told_json(said) == {
        "b": {
            "is_partial": False,
            "warnings": ["store 10.0.0.7:10901 did not answer"],
            "warnings_left_out": 2,
        },
        "d": said_json(Said(partial=True)),
    }
    assert told_lines(told(said), "a target", DOC) == (
        *said_lines("b", WARNED, "a target", DOC),
        *said_lines("d", Said(partial=True), "a target", DOC),
    )
    assert told({"a": Said()}) == {} and told_json({}) == {}


def test_the_answers_of_one_figure_add_up_bounded() -> None:
    assert merged([]) == Said() and merged([Said(), Said()]) == Said()
    many = Said(warnings=("w",) * MAX_SAID, warnings_left_out=1)
    got = merged([Said(infos=("i",)), many, Said(partial=True, warnings=("x", "y"))])
    assert got == Said(True, ("w",) * MAX_SAID, ("i",), 1 + 2)
    assert got.incomplete
