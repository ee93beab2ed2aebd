"""``figures.FIGURES`` is the one list of what a ledger counts: every other list is derived from
it and in step with it, and a figure added to it reaches every derived list."""

from __future__ import annotations

import dataclasses
import re
import sqlite3
from pathlib import Path

import pytest

from vllm_ledger import bounds, figures, names
from vllm_ledger.figures import FIGURES, Figure
from vllm_ledger.format import reads, schema
from vllm_ledger.formats import csvout, status, status_render
from vllm_ledger.formats.json import window_dict
from vllm_ledger.observe import counters, families
from vllm_ledger.plan import fleet_sums
from vllm_ledger.read import export, values
from vllm_ledger.read.report import WindowReport, report_figures
from vllm_ledger.read.snapshot import SUM_FIELDS, Sums

EXTRA = Figure(
    name="prefill_us",
    column="prefill_seconds_micro",
    key="prefill_seconds",
    unit="microseconds",
    per_engine_second=bounds.DECODE_US_PER_ENGINE_SECOND,
    report_name="prefill_seconds",
    report_divisor=1e6,
    counter="vllm_ledger_prefill_seconds_total",
    counter_help="Prefill time, ever",
    window_gauge="vllm_ledger_window_prefill_seconds",
    window_help="Prefill time in the window",
    brief=False,
    since="0005_prefill",
)
MORE = (*FIGURES, EXTRA)


def _figure_fields(cls: type, names: tuple[str, ...]) -> tuple[str, ...]:
    """The names of ``cls``'s fields that are among ``names``, in the class's order."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.name in names)


def window() -> WindowReport:
    return WindowReport("total", 0, 100, 10, 20, 3, 4, 5, 6.5, 0, True)


# ---- the descriptor -----------------------------------------------------------------------------


def test_each_name_of_a_figure_is_its_own() -> None:
    for attr in ("name", "column", "key", "report_name", "counter", "window_gauge"):
        got = [getattr(f, attr) for f in FIGURES]
        assert len(set(got)) == len(got), attr


def test_the_figures_are_in_the_on_disk_order() -> None:
    assert figures.columns() == (
        "prompt_tokens",
        "generation_tokens",
        "cached_tokens",
        "requests",
        "decode_tokens",
        "decode_seconds_micro",
    )
    assert {f.since for f in FIGURES} == {figures.INITIAL} == {schema.MIGRATIONS[0][0]}


def test_a_part_names_a_whole_of_the_same_unit() -> None:
    assert [(p.name, w.name) for p, w in figures.parts()] == [("cached_tokens", "input_tokens")]
    for part, whole in figures.parts():
        assert part.unit == whole.unit


def test_the_short_forms_carry_counts_only() -> None:
    assert figures.keys(figures.BRIEF) == ("input", "output", "cached", "requests")
    assert all(f.report_divisor == 1 for f in figures.BRIEF)


def test_a_converted_figure_goes_both_ways() -> None:
    us = figures.DECODE_US
    assert us.report_value(250_000) == 0.25
    assert us.stored_value(0.25) == 250_000
    assert us.json_value(1 / 3) == 0.333333
    assert figures.INPUT_TOKENS.report_value(7) == 7
    assert figures.INPUT_TOKENS.stored_value(7) == 7


# ---- derived and in step ------------------------------------------------------------------------


def test_the_schema_columns_and_bounds_come_from_the_figures() -> None:
    assert figures.columns() == schema.SUM_COLUMNS
    assert (*figures.columns(), *schema.FAULT_COLUMNS) == schema.COUNT_COLUMNS
    assert schema.PER_ENGINE_SECOND == {
        "prompt_tokens": 10**8,
        "generation_tokens": 10**8,
        "cached_tokens": 10**8,
        "requests": 10**6,
        "decode_tokens": 10**8,
        "decode_seconds_micro": 2**62 // 86400,
    }


def test_a_new_file_has_the_columns_it_always_had(tmp_path: Path) -> None:
    conn = sqlite3.connect(str(tmp_path / "w0000.g000000.ledger.sqlite"), isolation_level=None)
    try:
        schema.apply_migrations(conn, 1.0)
        for table in ("buckets", "hourly", "daily"):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            assert cols == ["ts", "engine", *schema.COUNT_COLUMNS], table
    finally:
        conn.close()


def test_the_models_have_a_field_per_figure() -> None:
    assert tuple(f.name for f in dataclasses.fields(Sums)) == SUM_FIELDS == figures.names()
    assert figures.names() == counters.COUNT_NAMES
    reported = figures.report_names()
    assert _figure_fields(WindowReport, reported) == reported
    assert _figure_fields(export.ExportRow, reported) == reported
    assert tuple(f.name for f in dataclasses.fields(fleet_sums.Figures)) == reported
    assert reported == fleet_sums.FIGURE_NAMES
    brief = figures.report_names(status.STATUS_FIGURES)
    assert _figure_fields(status.StatusWindow, brief) == brief
    # Every figure of today is declared in each model: nothing is added by name alone.
    for model in (Sums, WindowReport, export.ExportRow, fleet_sums.Figures, status.StatusWindow):
        assert getattr(model, "ADDED_FIGURES") == (), model  # noqa: B009


def test_the_report_takes_each_figure_from_the_sums_by_name() -> None:
    sums = Sums(input_tokens=10, output_tokens=20, cached_tokens=3, requests=4, decode_tokens=5)
    sums.decode_us = 6_500_000
    assert report_figures(sums) == {
        "input_tokens": 10,
        "output_tokens": 20,
        "cached_tokens": 3,
        "requests": 4,
        "decode_tokens": 5,
        "decode_seconds": 6.5,
    }
    assert Sums.from_list(sums.as_list()) == sums
    assert sums.by_name() == dict(zip(SUM_FIELDS, sums.as_list(), strict=True))


def test_the_json_and_csv_keys_are_the_figures_keys() -> None:
    doc = window_dict(window())
    keys = figures.keys()
    got = [k for k in doc if k in keys]
    assert got == list(figures.keys())
    assert {k: doc[k] for k in got} == figures.json_figures(window())
    i = export.FIELDS.index("input")
    assert export.FIELDS[i : i + len(FIGURES)] == figures.keys()
    j = csvout.REPORT_FIELDS.index("input")
    assert csvout.REPORT_FIELDS[j : j + len(figures.BRIEF)] == figures.keys(figures.BRIEF)


def test_the_status_pins_its_own_windows_and_figures() -> None:
    assert status.STATUS_WINDOWS == ("today", "24h", "3d", "7d", "total")
    assert status.STATUS_FIGURES == figures.BRIEF
    windows = tuple(dataclasses.replace(window(), name=n) for n in status.STATUS_WINDOWS)
    doc = status_render._windows_dict(windows)
    assert list(doc) == list(status.STATUS_WINDOWS)
    keys = figures.keys()
    assert [k for k in doc["total"] if k in keys] == list(figures.keys(figures.BRIEF))
    with pytest.raises(ValueError, match="needs the windows 7d"):
        status_render._windows_dict(tuple(w for w in windows if w.name != "7d"))


def test_the_exporter_serves_a_counter_and_a_gauge_per_figure() -> None:
    assert list(families._COUNTERS) == list(counters.COUNT_NAMES)
    assert [c[0] for c in families._COUNTERS.values()] == [f.counter for f in FIGURES]
    assert families._COUNTERS["decode_us"][2] == 1e-6
    gauges = [g[0] for g in families._FIGURES[: len(FIGURES)]]
    assert gauges == [f.window_gauge for f in FIGURES]
    for f in FIGURES:
        assert f.window_gauge == f"{names.EXPORTER_PREFIX}_window_{f.report_name}"
        assert f.counter.startswith(f"{names.EXPORTER_PREFIX}_") and f.counter.endswith("_total")
    # The fleet reads back what the exporter serves.
    assert all(
        f.window_gauge.removeprefix(fleet_sums.PREFIX + "window_") in fleet_sums.FIGURE_NAMES
        for f in FIGURES
    )


def test_the_reader_checks_each_unit_against_its_bound() -> None:
    assert reads.checks_sql() == (
        "max(" + " OR ".join(f"typeof({c}) != 'integer'" for c in schema.SUM_COLUMNS) + ")",
        "min(min(prompt_tokens, generation_tokens, cached_tokens, requests, decode_tokens, "
        "decode_seconds_micro))",
        "max(max(prompt_tokens, generation_tokens, cached_tokens, decode_tokens))",
        "max(requests)",
        "max(decode_seconds_micro)",
        "max(cached_tokens > prompt_tokens)",
    )
    ok = (0, 1, 2, 1, 0, 1, 5, 0, 0, 2, 1, 5, 0)
    assert values.check_sum_row("buckets", ok) == (
        0,
        {
            "input_tokens": 1,
            "output_tokens": 2,
            "cached_tokens": 1,
            "requests": 0,
            "decode_tokens": 1,
            "decode_us": 5,
        },
    )
    cases = {
        (0, 1, 2, 1, 0, 1, 5, 0, 0, 3600 * 10**8 + 1, 1, 5, 0): "hourly: 360000000001 tokens"
        " in one row (at most 10^8 per second)",
        (0, 1, 2, 1, 0, 1, 5, 0, 0, 2, 3600 * 10**6 + 1, 5, 0): "hourly: 3600000001 requests in"
        " one row (at most 10^6 per second)",
        (0, 1, 2, 1, 0, 1, 5, 0, 0, 2, 1, 2**62, 0): f"hourly: {2**62} us of decode time in"
        " one row",
        (0, 1, 2, 1, 0, 1, 5, 0, 0, 2, 1, 5, 1): "hourly: more cached than input tokens in a row",
    }
    for row, text in cases.items():
        with pytest.raises(values.BadValues, match=f"^{re.escape(text)}$"):
            values.check_sum_row("hourly", row)


# ---- a figure added to a copy of FIGURES reaches every derived list ----------------------------


def test_a_new_figure_appears_in_every_derived_list() -> None:
    assert figures.names(MORE)[-1] == "prefill_us"
    assert figures.columns(MORE)[-1] == "prefill_seconds_micro"
    assert figures.keys(MORE)[-1] == "prefill_seconds"
    assert figures.report_names(MORE)[-1] == "prefill_seconds"
    assert figures.brief(MORE) == figures.BRIEF
    assert schema.count_columns(MORE) == (*figures.columns(MORE), *schema.FAULT_COLUMNS)
    assert schema.columns_added_by("0005_prefill", MORE) == ("prefill_seconds_micro",)
    assert schema.columns_added_by(figures.INITIAL, MORE) == schema.COUNT_COLUMNS
    units = {unit: [f.name for f in fs] for unit, _most, fs in figures.limits(MORE)}
    assert units["microseconds"] == ["decode_us", "prefill_us"]
    checks = reads.checks_sql(MORE)
    assert "max(max(decode_seconds_micro, prefill_seconds_micro))" in checks
    assert "prefill_seconds_micro" in checks[0] and "prefill_seconds_micro" in checks[1]
    assert "sum(prefill_seconds_micro)" in reads.sum_query("hourly", MORE)

    @dataclasses.dataclass
    class Row:
        prefill_seconds: float = 1.2345678

    assert figures.json_figures(Row(), (EXTRA,)) == {"prefill_seconds": 1.234568}


def test_the_migrations_are_the_written_ones_while_no_figure_came_later() -> None:
    assert schema.migrations() == schema.MIGRATIONS
    assert [name for name, _ddl in schema.MIGRATIONS] == [
        "0001_initial",
        "0002_problem_seconds",
        "0003_daily",
        "0004_attribution",
    ]
    assert "ALTER" not in "".join(ddl for _name, ddl in schema.MIGRATIONS)


def test_a_new_figure_brings_its_own_migration() -> None:
    steps = schema.migrations(MORE)
    assert steps[:-1] == schema.MIGRATIONS
    assert steps[-1] == ("0005_prefill", schema.add_columns_ddl("0005_prefill", MORE))
    assert steps[-1][1] == "".join(
        f"ALTER TABLE {t} ADD COLUMN prefill_seconds_micro INTEGER NOT NULL DEFAULT 0;\n"
        for t in ("buckets", "hourly", "daily")
    )
    # Two figures of one migration make one step; a figure cannot join a written step.
    twin = dataclasses.replace(EXTRA, name="twin", column="twin_micro", report_name="twin")
    assert [n for n, _ddl in schema.migrations((*MORE, twin))][4:] == ["0005_prefill"]
    daily = dataclasses.replace(EXTRA, since="0003_daily")
    with pytest.raises(ValueError, match="prefill_us: its column needs a migration of its own"):
        schema.migrations((*FIGURES, daily))


def test_each_model_takes_a_new_figure_as_a_field() -> None:
    """The models made against a copy of FIGURES with one more figure: each has its field,
    defaulted and last, and ``Sums`` adds it as it adds the others."""

    @dataclasses.dataclass
    @figures.with_figure_fields("name", "int", MORE)
    class MoreSums(Sums):
        pass

    @dataclasses.dataclass(frozen=True)
    @figures.with_figure_fields("report_name", "int | float", MORE)
    class MoreWindow(WindowReport):
        pass

    @dataclasses.dataclass(frozen=True)
    @figures.with_figure_fields("report_name", "int | float", MORE)
    class MoreRow(export.ExportRow):
        pass

    @dataclasses.dataclass
    @figures.with_figure_fields("report_name", "int | float", MORE)
    class MoreFigures(fleet_sums.Figures):
        pass

    @dataclasses.dataclass(frozen=True)
    @figures.with_figure_fields("report_name", "int", (*status.STATUS_FIGURES, EXTRA))
    class MoreStatus(status.StatusWindow):
        pass

    assert tuple(f.name for f in dataclasses.fields(MoreSums)) == figures.names(MORE)
    assert MoreSums.ADDED_FIGURES == ("prefill_us",)
    for model, was in (
        (MoreWindow, WindowReport),
        (MoreRow, export.ExportRow),
        (MoreFigures, fleet_sums.Figures),
        (MoreStatus, status.StatusWindow),
    ):
        got = [f.name for f in dataclasses.fields(model)]
        assert got == [*(f.name for f in dataclasses.fields(was)), "prefill_seconds"], model
        assert getattr(model, "ADDED_FIGURES") == ("prefill_seconds",), model  # noqa: B009
    # Made as before (positionally), the new figure is zero: a converted one as a float.
    w = MoreWindow("total", 0, 100, 10, 20, 3, 4, 5, 6.5, 0, True)
    assert w.prefill_seconds == 0.0 and isinstance(w.prefill_seconds, float)  # type: ignore[attr-defined]
    assert MoreFigures().prefill_seconds == 0.0  # type: ignore[attr-defined]
    assert figures.json_figures(w, MORE)["prefill_seconds"] == 0.0
    assert MoreSums().prefill_us == 0  # type: ignore[attr-defined]

    total = MoreSums(input_tokens=1)
    total.add(MoreSums(input_tokens=2, decode_us=3, prefill_us=4))  # type: ignore[call-arg]
    total.add(MoreSums(prefill_us=5))  # type: ignore[call-arg]
    total.add_sums(dict.fromkeys(figures.names(MORE), 10) | {"decode_us": None})
    assert (total.input_tokens, total.decode_us, total.prefill_us) == (13, 3, 19)  # type: ignore[attr-defined]
    assert report_figures(total, MORE)["prefill_seconds"] == 1.9e-05

    # A model that declares the figure itself keeps its own field.
    @dataclasses.dataclass
    @figures.with_figure_fields("report_name", "int | float", MORE)
    class Declared(fleet_sums.Figures):
        prefill_seconds: float = 1.5

    assert Declared.ADDED_FIGURES == ()  # type: ignore[attr-defined]
    assert Declared().prefill_seconds == 1.5


def test_a_new_figure_migrates_an_old_file_and_reads_by_name(tmp_path: Path) -> None:
    """An old file (the first migrations) takes the new column by its own migration, keeps its
    rows, and its sums are read by name with the new figure's checks."""
    conn = sqlite3.connect(str(tmp_path / "old.sqlite"), isolation_level=None)
    try:
        schema.apply_migrations(conn, 1.0)
        conn.execute("INSERT INTO hourly (ts, engine, prompt_tokens) VALUES (3600, 0, 7)")
        assert schema.apply_migrations(conn, 2.0, schema.migrations(MORE)) == ["0005_prefill"]
        assert schema.apply_migrations(conn, 3.0, schema.migrations(MORE)) == []
        assert conn.execute("SELECT * FROM migrations WHERE name = '0005_prefill'").fetchall() == [
            ("0005_prefill", 2.0)
        ]
        for table in ("buckets", "hourly", "daily"):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            assert cols == ["ts", "engine", *schema.COUNT_COLUMNS, "prefill_seconds_micro"]
        (kept,) = conn.execute("SELECT prompt_tokens, prefill_seconds_micro FROM hourly")
        assert kept == (7, 0)
        conn.execute("UPDATE hourly SET prefill_seconds_micro = 9")
        (stored,) = conn.execute(reads.sum_query("hourly", MORE), (0, 7200)).fetchall()
        row = reads.sum_row(stored, MORE)
        assert row.engine == 0
        assert row.sums["input_tokens"] == 7 and row.sums["prefill_us"] == 9
        assert [(unit, seen) for unit, _most, seen in row.most] == [
            ("tokens", 7),
            ("requests", 0),
            ("microseconds", 9),
        ]
        assert [(p.name, over) for p, _w, over in row.over] == [("cached_tokens", 0)]
    finally:
        conn.close()
