"""One read cut the way the exporter serves it: each (``ledger_instance``, ``model_name``)
pair's windows (``pair_rows``), and each ledger file's counts for the counters' memory
(``sighting``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vllm_ledger.format.identity import model_label
from vllm_ledger.observe.counters import COUNT_NAMES, FileCounts, Labels, Sighting
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import Report, WindowReport, report_figures
from vllm_ledger.read.snapshot import LedgerSnapshot, Sums
from vllm_ledger.read.windows import Window


@dataclass(frozen=True)
class PairRow:
    """One (ledger_instance, model_name) pair's five windows: its own figures, over the
    windows of its instance, with its instance's coverage (as ``report --by instance``)."""

    labels: Labels
    windows: tuple[WindowReport, ...]


def pair_rows(ledgers: LedgerSet, report: Report) -> tuple[PairRow, ...]:
    """The figures of every (instance, model) pair over the windows of the instance's row in
    ``report`` (built ``by="instance"`` from ``ledgers``); sums are the set's memoised ones, so
    the pairs of an instance add up to its row, and all pairs to the report's windows."""
    rows = {row.key: row for row in report.breakdown} if report.breakdown_by == "instance" else {}
    groups: dict[Labels, list[LedgerSnapshot]] = {}
    for s in ledgers.snapshots:
        if s.ok:
            pair: Labels = (s.instance.key, model_label(s.instance.served_model_names))
            groups.setdefault(pair, []).append(s)
    out: list[PairRow] = []
    for labels in sorted(groups):
        row = rows.get(labels[0])
        if row is None:  # not in the report (a file that failed since): left out this scrape
            continue
        windows = []
        for w in row.windows:
            window = Window(w.name, w.start_ts, w.cutoff_ts)
            sums, _imprecise = ledgers.total(groups[labels], window)
            windows.append(dataclasses.replace(w, **report_figures(sums)))
        out.append(PairRow(labels, tuple(windows)))
    return tuple(out)


def sighting(ledgers: LedgerSet, report: Report) -> Sighting:
    """What one read saw, file by file: each readable file's counts over the report's ``total``
    window (the same memoised sums the report added up, so they add up to its total), and what
    could not be read."""
    total = report.window("total")
    w = Window(total.name, total.start_ts, total.cutoff_ts)
    roots = set(ledgers.roots)
    files: list[FileCounts] = []
    unreadable: set[tuple[str, int, int]] = set()
    runs: set[str] = set()
    unknown = False
    for snap in ledgers.snapshots:
        if snap.ok:
            sums = Sums()
            for by_engine in ledgers.sums(snap, w).values():
                sums.add(by_engine)
            if snap.ok:  # it may have failed just now
                files.append(
                    FileCounts(
                        snap.run_id,
                        snap.writer_rank,
                        snap.generation,
                        tuple(getattr(sums, name) for name in COUNT_NAMES),
                        snap.spans[0][0] if snap.spans else snap.first_bucket_ts,
                        snap.last_proof_ts if snap.spans else snap.last_end_ts,
                        (snap.instance.key, model_label(snap.instance.served_model_names)),
                    )
                )
                continue
        if snap.run_id and snap.writer_rank >= 0:
            unreadable.add((snap.run_id, snap.writer_rank, snap.generation))
        elif not snap.run_id or snap.path in roots:
            unknown = True  # a root that could not be listed: any run may be behind it
        else:  # a run folder that could not be listed, or a file in one that could not be seen
            runs.add(snap.run_id)
            if snap.path.parent not in roots:
                runs.add(snap.path.parent.name)
    return Sighting(files, frozenset(unreadable), frozenset(runs), unknown)
