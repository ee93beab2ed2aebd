"""The tag book: ids in flight, the join of finished requests, copies, ambiguity, aborted
requests and when an ended entry is forgotten."""

from __future__ import annotations

from vllm_ledger.write.tags import (
    AMBIGUOUS_DIMS,
    MAX_ID_CHARS,
    UNTAGGED_DIMS,
    TagBook,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _book() -> tuple[TagBook, Clock]:
    clock = Clock()
    book = TagBook(monotonic=clock)
    book.consumer = True
    return book, clock


def test_a_finished_request_is_credited_to_its_labels_by_every_id_form_vllm_builds() -> None:
    book, _ = _book()
    for x in ("abc", "my-id-7", "0123456789abcdef0123456789abcdef"):
        e = book.begin(x, judge_abort=True)
        assert e is not None
        book.named(e, "team-a", "tiny", "alice", "acme")
        for rid in (f"chatcmpl-{x}", f"cmpl-{x}-1", f"generate-tokens-{x}", x):
            (credit,) = book.credit(rid, 10, 2, 4)
            assert credit == (("team-a", "tiny", "alice", "acme", ""), 10, 2, 4, 1, 0), rid
            e.rids = set()  # forget the ids joined so far: the next form is a first again
    (credit,) = book.credit("chatcmpl-nobody", 7, 1, 0)
    assert credit == (UNTAGGED_DIMS, 7, 1, 0, 1, 0)
    assert book.credit(123, 1, 1, 0)[0][0] == UNTAGGED_DIMS


def test_an_n2_copy_credits_its_output_and_puts_its_prompt_under_copies() -> None:
    book, _ = _book()
    e = book.begin("x1", judge_abort=True)
    assert e is not None
    book.named(e, "k", "m", "", "")
    assert book.credit("chatcmpl-x1", 22, 5, 0) == [(("k", "m", "", "", ""), 22, 5, 0, 1, 0)]
    assert book.credit("chatcmpl-x1", 22, 7, 16) == [
        (("k", "m", "", "", ""), 0, 7, 0, 1, 0),
        (("k", "m", "", "", "copies"), 22, 0, 16, 0, 0),
    ]


def test_an_id_held_by_two_requests_in_flight_is_ambiguous_for_both() -> None:
    book, _ = _book()
    a = book.begin("same", judge_abort=True)
    b = book.begin("same", judge_abort=True)
    assert a is b and a is not None and a.ambiguous
    assert book.credit("chatcmpl-same", 10, 1, 0) == [(AMBIGUOUS_DIMS, 10, 1, 0, 1, 0)]
    book.end(a, 200)
    assert book.credit("chatcmpl-same", 10, 1, 0) == [(AMBIGUOUS_DIMS, 10, 1, 0, 1, 0)]
    assert b is not None
    book.end(b, 200)
    # Reused after both ended and were forgotten: a new request, credited again.
    for _ in range(3):
        book.tick()
    assert book.settle(book.records) == []
    c = book.begin("same", judge_abort=True)
    assert c is not None and not c.ambiguous


def test_an_ended_entry_stays_until_two_more_record_calls_were_taken_in() -> None:
    book, _clock = _book()
    e = book.begin("r", judge_abort=True)
    assert e is not None
    book.named(e, "k", "m", "", "")
    book.end(e, 200)  # the response went out before record() saw the finished request
    book.tick()
    assert book.settle(book.records) == []
    assert book.find("chatcmpl-r") is e  # still there for the record() just made
    book.credit("chatcmpl-r", 3, 1, 0)
    book.tick()
    assert book.settle(book.records - 1) == []  # not yet taken in
    assert book.settle(book.records) == []  # taken in: forgotten, not aborted
    assert book.find("chatcmpl-r") is None


def test_a_request_that_ends_with_no_finished_stats_is_aborted_under_its_labels() -> None:
    book, clock = _book()
    cut = book.begin("cut", judge_abort=True)
    refused = book.begin("refused", judge_abort=True)
    other = book.begin("tok", judge_abort=False)  # a route that may end without one
    assert cut and refused and other
    book.named(cut, "k", "m", "u", "t")
    book.end(cut, 200)
    book.end(refused, 400)
    book.end(other, 200)
    # An idle engine makes no more record() calls: once all were taken in, time settles it.
    assert book.settle(book.records) == []
    clock.now += 2.5
    assert book.settle(book.records) == [(("k", "m", "u", "t", "aborted"), 0, 0, 0, 0, 1)]
    assert book.entries == {}


def test_faults_and_bounds() -> None:
    book, _ = _book()
    book.fault()
    assert book.settle(0) == [(("", "", "", "", "fault"), 0, 0, 0, 0, 1)]
    assert book.begin("x" * (MAX_ID_CHARS + 1), judge_abort=True) is None
    assert book.find("chatcmpl-" + "-" * 10_000) is None
