"""Whose tokens in a window: rows by each label, not attributed by reason, adding up exactly."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from vllm_ledger.read.attribution import Credited, FileCredits, widened
from vllm_ledger.read.report import WindowReport
from vllm_ledger.read.whose import _first, whose


def _window(**figs: int) -> WindowReport:
    return WindowReport(
        name="today",
        start_ts=0,
        cutoff_ts=86400,
        input_tokens=figs.get("input", 0),
        output_tokens=figs.get("output", 0),
        cached_tokens=figs.get("cached", 0),
        requests=figs.get("requests", 0),
        decode_tokens=0,
        decode_seconds=0.0,
        uncovered_seconds=0,
        complete=True,
    )


CREDITS = FileCredits(
    by_label={
        ("team-a", "tiny", "alice", "", ""): Credited(100, 10, 16, 1),
        ("team-a", "tiny-b", "bob", "", ""): Credited(50, 5, 0, 2),
        ("key:1a2b3c4d", "tiny", "alice", "", ""): Credited(30, 3, 0, 1),
        ("team-a", "tiny-b", "bob", "", "copies"): Credited(50, 0, 32, 0),
        ("", "", "", "", "untagged"): Credited(7, 1, 0, 1),
        ("", "", "", "", "ambiguous"): Credited(9, 2, 0, 2),
        ("team-a", "tiny", "alice", "", "aborted"): Credited(events=2),
        ("", "", "", "", "fault"): Credited(events=1),
    },
    folded={"user": 4},
    files=2,
)


def test_rows_by_each_label_and_the_rest_add_up_to_the_window_exactly() -> None:
    w = _window(input=400, output=40, cached=60, requests=7)
    for by, values in (
        ("key", {"team-a": 150, "key:1a2b3c4d": 30}),
        ("adapter", {"tiny": 130, "tiny-b": 50}),
        ("user", {"alice": 130, "bob": 50}),
        ("tenant", {"": 180}),
    ):
        ww = whose(w, CREDITS, by)  # type: ignore[arg-type]
        assert {r.value: r.input_tokens for r in ww.rows} == values, by
        na = ww.not_attributed
        for fig in ("input_tokens", "output_tokens", "cached_tokens", "requests"):
            assert sum(getattr(r, fig) for r in ww.rows) + getattr(na, fig) == getattr(w, fig)
    ww = whose(w, CREDITS, "key")
    na = ww.not_attributed
    assert (na.input_tokens, na.output_tokens, na.cached_tokens, na.requests) == (220, 22, 44, 3)
    assert na.reasons["untagged"] == Credited(7, 1, 0, 1)
    assert na.reasons["ambiguous"] == Credited(9, 2, 0, 2)
    assert na.reasons["copies"] == Credited(50, 0, 32, 0)
    assert na.reasons["aborted"] == Credited(154, 19, 12, 0, 2)  # the rest, with the count
    assert (na.requests_aborted, na.faults) == (2, 1)
    assert [(r.value, r.requests_aborted) for r in ww.rows] == [("team-a", 2), ("key:1a2b3c4d", 0)]
    assert whose(w, CREDITS, "user").folded == 4 and ww.folded == 0
    assert ww.complete


def test_a_window_that_read_a_file_from_before_attribution_is_not_complete() -> None:
    old = FileCredits(files=1, without=1)
    ww = whose(_window(input=10, requests=1), old, "key")
    assert ww.rows == () and ww.not_attributed.reasons["aborted"].input_tokens == 10
    assert not ww.complete and ww.files_without == 1


@given(
    st.dictionaries(
        st.text(alphabet="abcxyz", min_size=1, max_size=4),
        st.tuples(st.integers(0, 3), st.integers(0, 3)),
        max_size=40,
    ),
    st.integers(1, 30),
)
def test_the_top_rows_are_the_first_of_the_full_order(
    sums: dict[str, tuple[int, int]], top: int
) -> None:
    """Most input, then output, then by name: the same rows as sorting them all, ties on input
    and output (a crowd of users of one request each) included."""
    rows = {v: [i, o, 0, 1] for v, (i, o) in sums.items()}
    want = sorted(rows.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
    got, more = _first(rows, top)
    if top < len(rows):
        assert (got, more) == (want[:top], len(rows) - top)
    else:
        assert (sorted(got), more) == (sorted(want), 0)


_COUNTS = st.lists(st.integers(0, 50), min_size=5, max_size=5)
_BY_VALUE = st.dictionaries(
    st.sampled_from(["", "untagged", "copies", "aborted", "refused", "fault"]),
    st.dictionaries(st.text(alphabet="abxy", max_size=3), _COUNTS, max_size=8),
    max_size=6,
)


@given(_BY_VALUE, _BY_VALUE)
def test_a_reads_own_sums_give_the_window_a_row_by_row_sum_gives(
    by_value: dict[str, dict[str, list[int]]], more: dict[str, dict[str, list[int]]]
) -> None:
    """A read by one label that made its column sums (``FileCredits.sums``) is viewed as one
    that did not: the credited rows' sums are those sums less the other reasons' lists; the
    sums stay true as reads are added up."""
    w = _window(input=5000, output=5000, cached=5000, requests=5000)
    plain = FileCredits(by_value=by_value, files=1)
    made = FileCredits(by_value=copy.deepcopy(by_value), files=1, sums=_sums(by_value))
    assert whose(w, made, "user") == whose(w, plain, "user")
    made.add(FileCredits(by_value=more, files=1, sums=_sums(more)))
    assert made.sums == _sums(made.by_value)
    plain.add(FileCredits(by_value=more, files=1))
    assert plain.sums is None or not plain.by_value  # not known: a part did not make them
    assert whose(w, made, "user") == whose(w, plain, "user")


def _sums(by_value: dict[str, dict[str, list[int]]]) -> list[int]:
    out = [0] * 5
    for values in by_value.values():
        for counts in values.values():
            out = [a + b for a, b in zip(out, counts, strict=True)]
    return out


_NAMES = st.text(alphabet="abxy", max_size=2)
_READ = st.dictionaries(
    st.sampled_from(["", "aborted", "refused", "untagged"]),
    st.dictionaries(_NAMES, st.lists(st.integers(0, 3), min_size=5, max_size=5), max_size=10),
    max_size=4,
)


@given(_READ, _READ, st.integers(1, 6))
def test_a_widened_reads_first_rows_are_sought_among_the_narrower_views_and_the_rings(
    inner: dict[str, dict[str, list[int]]], ring: dict[str, dict[str, list[int]]], top: int
) -> None:
    """A view of a widened read given the narrower read's view (``narrower``) has the same rows
    as one that looks among every value, ties on input and output included."""
    w = _window(input=500, output=500, cached=500, requests=500)
    narrower_read = FileCredits(by_value=inner, files=1)
    wide = widened(narrower_read, FileCredits(by_value=ring, files=1))
    narrower = whose(w, narrower_read, "user", top)
    assert whose(w, wide, "user", top, narrower) == whose(w, wide, "user", top)
