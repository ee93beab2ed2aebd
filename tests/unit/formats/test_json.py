"""The JSON report: ``render`` writes exactly what ``json.dumps`` writes for ``report_dict``.

``render`` writes the writers list itself (thousands of writers over years of restarts); the
text must be json's own, byte for byte, whatever the values: any string, ints, floats (0.0 and
-0.0, floats equal to ints), None, bools, and writers sharing values or not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_ledger.formats import json as json_format
from vllm_ledger.read.report import FileStatus, Report, WindowReport, WriterStatus


def _dumps(report: Report) -> str:
    return json.dumps(json_format.report_dict(report), indent=2, allow_nan=False) + "\n"


def _report(writers: tuple[WriterStatus, ...], files: tuple[FileStatus, ...] = ()) -> Report:
    window = WindowReport("total", 0, 100, 1, 2, 3, 4, 5, 6.5, 7, False, {"no_ledger": 1})
    return Report(
        schema=1,
        generated_ts=1795000000.25,
        at_ts=1795000000.5,
        cutoff_ts=1795000000,
        tz="Asia/Shanghai",
        roots=('/r/"writers": [],\n',),  # the text render splices, inside a string
        windows=(window,),
        writers=writers,
        files=files,
        runs=3,
    )


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, 0.0004, -0.0004, 1795000000.1235, 1795000000.0]),
)
texts = st.text(max_size=6)


@st.composite
def writer_lists(draw: st.DrawFn) -> tuple[WriterStatus, ...]:
    """Writers as a run leaves them: often the very same values as the one before. Any
    scalar goes in any field: json writes whatever it is given."""
    out: list[WriterStatus] = []
    for _ in range(draw(st.integers(min_value=0, max_value=8))):
        same_run = draw(st.booleans())
        if out and same_run:
            prev = out[-1]
            first = draw(st.sampled_from([prev.first_ts, draw(scalars)]))
            values: tuple[Any, ...] = (
                prev.run_id,
                draw(scalars),
                prev.expected_writers,
                prev.instance,
                prev.state,
                first,
                prev.last_ts,
            )
        else:
            values = (
                draw(st.one_of(texts, scalars)),
                draw(scalars),
                draw(scalars),
                draw(texts),
                draw(st.sampled_from(["closed", "missing", "alive", "stale", "crashed"])),
                draw(scalars),
                draw(scalars),
            )
        out.append(WriterStatus(*values))
    return tuple(out)


@given(writer_lists())
def test_render_writes_json_dumps_text(writers: tuple[WriterStatus, ...]) -> None:
    report = _report(writers, (FileStatus('/r/"writers": [],', "busy", "x"),))
    assert json_format.render(report) == _dumps(report)


def test_render_of_thousands_of_writers_is_json_dumps_text() -> None:
    writers = tuple(
        WriterStatus(f"run-{i // 8}", i % 8, 8, "gpu1:8000", "closed", 1795000000.0, 1795086400.5)
        for i in range(8000)
    )
    report = _report(writers)
    assert json_format.render(report) == _dumps(report)


def test_render_refuses_what_json_refuses() -> None:
    nan = _report((WriterStatus("r", 0, 1, "i", "closed", float("nan"), None),))
    with pytest.raises(ValueError, match="Out of range float"):
        json_format.render(nan)
    odd = _report((WriterStatus("r", 0, 1, "i", "closed", None, None),) * 2)
    object.__setattr__(odd.writers[0], "instance", ["a list"])  # only json knows how
    assert json_format.render(odd) == _dumps(odd)
