"""The figures per API port, at a report's instant: what the bot's line for a node port shows.

The bot's config is keyed by node port and its forced command reads a whole data dir, which
several instances may share. ``port_rows`` gives, for each port in the report's selection,
the five windows of every instance on that port (all host names: a container that restarts
under a new host name is still the same node port), with that port's own coverage, as
``report --instance PORT`` selects them, cut at the report's cutoff so that one document is
one instant. Files that cannot be read stay in every port's selection (their owner is
unknown), as ``LedgerSet.select`` keeps them. Instances that recorded no port have no row.

At most ``MAX_PORT_ROWS`` rows: the ports with a live writer first, then the most recently
seen; the rest are counted, not listed.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import Report, WindowReport, resolve_tz, window_reports
from vllm_ledger.read.windows import windows_at

MAX_PORT_ROWS = 16


@dataclass(frozen=True)
class PortRow:
    port: int
    runs: int
    writers: dict[str, int]  # writer state -> count
    windows: tuple[WindowReport, ...]


@dataclass(frozen=True)
class PortRows:
    rows: tuple[PortRow, ...]  # sorted by port
    truncated: int  # ports in the selection that are not listed


def port_rows(ls: LedgerSet, report: Report, max_rows: int = MAX_PORT_ROWS) -> PortRows:
    """The rows for ``report``, which was built from ``ls`` (its instant and filters)."""
    zone = resolve_tz(report.tz)
    chosen = ls.select(report.instance_filter, report.model_filter)
    ports = sorted({s.instance.port for s in chosen if s.ok and s.instance.port is not None})
    # A key filter (gpu1:8000) stays as it is; otherwise the port selects its instances.
    keyed = isinstance(report.instance_filter, str) and not report.instance_filter.isdigit()
    rows: list[tuple[tuple[bool, float], PortRow]] = []
    for port in ports:
        selector = report.instance_filter if keyed else port
        assert selector is not None
        snaps = ls.select(selector, report.model_filter)
        model = ls.coverage(snaps, report.at_ts)
        five = windows_at(report.cutoff_ts, zone, model.first_record_ts)
        windows, model = window_reports(
            ls, five, at_ts=report.at_ts, instance=selector, model=report.model_filter
        )
        writers: dict[str, int] = {}
        for w in model.writers:
            writers[w.state] = writers.get(w.state, 0) + 1
        alive = writers.get("alive", 0) > 0
        last = max((w.last_ts for w in model.writers if w.last_ts is not None), default=0.0)
        runs = len({s.run_id for s in snaps if s.ok})
        rows.append(((alive, last), PortRow(port, runs, writers, windows)))
    rows.sort(key=lambda r: r[0], reverse=True)
    kept = sorted((r for _, r in rows[:max_rows]), key=lambda r: r.port)
    return PortRows(tuple(kept), max(0, len(rows) - max_rows))


__all__ = ["MAX_PORT_ROWS", "PortRow", "PortRows", "port_rows"]
