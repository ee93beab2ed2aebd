"""The terminal form of whose tokens: aligned, terminal-safe, the rows and the not-attributed
row adding up to the total shown, the rest of a long table summed in one row."""

from __future__ import annotations

from vllm_ledger.formats.whose_text import MAX_LABEL_COLUMNS, coverage, label, window_lines
from vllm_ledger.read.attribution import Credited, FileCredits
from vllm_ledger.read.report import WindowReport
from vllm_ledger.read.whose import whose


def _window(complete: bool = True, uncovered: int = 0, **figs: int) -> WindowReport:
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
        uncovered_seconds=uncovered,
        complete=complete,
    )


CREDITS = FileCredits(
    by_label={
        ("team-a", "tiny", "alice", "", ""): Credited(1000, 100, 16, 1),
        ("key:1a2b3c4d", "tiny", "bob", "", ""): Credited(30, 3, 0, 1),
        ("", "tiny", "", "", ""): Credited(5, 5, 0, 1),
        ("other", "tiny", "other", "", ""): Credited(70, 7, 0, 2),
        ("team-a", "tiny", "alice", "", "copies"): Credited(50, 0, 32, 0),
        ("", "", "", "", "untagged"): Credited(7, 1, 0, 1),
        ("team-a", "tiny", "alice", "", "aborted"): Credited(events=2),
        ("", "", "", "", "fault"): Credited(events=1),
    },
    folded={"user": 4, "key": 3},
    files=1,
)


def test_a_window_reads_as_a_table_that_adds_up() -> None:
    ww = whose(_window(input=1300, output=120, cached=60, requests=7), CREDITS, "key")
    assert window_lines(ww) == [
        "today by key           input  output  cached  requests  note",
        "  team-a               1,000     100      16         1  2 aborted",
        "  other                   70       7       0         2  3 folded",
        "  key:1a2b3c4d            30       3       0         1",
        "  (none)                   5       5       0         1",
        "  not attributed         195       5      44         2",
        "    untagged               7       1       0         1",
        "    ambiguous              0       0       0         0",
        "    copies                50       0      32         0",
        "    aborted              138       4      12         1  2 ended unfinished",
        "    middleware faults      -       -       -         -  1 served untagged",
        "  total                1,300     120      60         7  complete",
    ]
    # by user: the folded count of users, not of keys
    assert window_lines(whose(_window(input=1300), CREDITS, "user"))[2].endswith("4 folded")


def test_the_rest_past_top_is_one_row_and_the_table_still_adds_up() -> None:
    credits = FileCredits(
        by_label={(f"user{i:02d}", "", "", "", ""): Credited(100 - i, 1, 0, 1) for i in range(30)}
    )
    ww = whose(
        _window(input=sum(100 - i for i in range(30)), output=30, requests=30), credits, "key"
    )
    lines = window_lines(ww, top=5)
    assert [line.split()[0] for line in lines[1:7]] == [
        "user00",
        "user01",
        "user02",
        "user03",
        "user04",
        "(25",
    ]
    assert lines[6].split()[:6] == [
        "(25",
        "more)",
        f"{sum(100 - i for i in range(5, 30)):,}",
        "25",
        "0",
        "25",
    ]
    assert lines[-1].split()[1:5] == ["2,565", "30", "0", "30"]
    assert len(window_lines(ww, top=0)) == len(lines) + 24


def test_hostile_labels_are_escaped_and_cut() -> None:
    assert label("") == "(none)"
    assert label("\x1b[2J\x1b]0;owned\x07") == "\\x1b[2J\\x1b]0;owned\\x07"
    assert label("a\nb\u202e") == "a\\x0ab\\u202e"
    long = label("x" * 256)
    assert long == "x" * (MAX_LABEL_COLUMNS - 3) + "..."
    wide = label("通" * 100)
    assert wide.endswith("...") and len(wide) == (MAX_LABEL_COLUMNS - 3) // 2 + 3
    credits = FileCredits(
        by_label={("\x1b[31mred\nforged line", "", "", "", ""): Credited(1, 1, 0, 1)}
    )
    text = "\n".join(window_lines(whose(_window(input=1, output=1, requests=1), credits, "key")))
    assert "\x1b" not in text and "forged line" in text
    assert len(text.splitlines()) == 8  # the header, the row, not attributed + 4 reasons, total


def test_coverage_names_files_from_before_attribution() -> None:
    old = FileCredits(files=2, without=1)
    assert coverage(whose(_window(input=1), old, "key"), None, None) == (
        "INCOMPLETE (1 file(s) from before attribution)"
    )
    ww = whose(_window(complete=False, uncovered=90, input=1), old, "key")
    assert coverage(ww, None, None) == (
        "INCOMPLETE (1 min 30 s uncovered; 1 file(s) from before attribution)"
    )
    assert coverage(whose(_window(input=1), FileCredits(files=1), "key"), None, None) == "complete"
