"""The dashboard's rows on the ledger (observe/panels_ledger.py)."""

from __future__ import annotations

from vllm_ledger.observe.panels_ledger import LEDGER_ROWS


def test_the_rows_in_order() -> None:
    assert [title for title, _panels in LEDGER_ROWS] == [
        "Ledger: what was served, restart-proof (per instance)",
        "Whose tokens: by key / adapter (per host)",
        "Fleet: every host and the total",
    ]


def test_every_target_is_filtered_by_the_chosen_instances_or_hosts() -> None:
    for _title, panels in LEDGER_ROWS:
        for p in panels:
            for expr, _legend in p.targets:
                assert "$instance" in expr or "$host" in expr, p.title


def test_the_whose_rows_never_sum_past_the_chosen_hosts() -> None:
    whose = dict(LEDGER_ROWS)["Whose tokens: by key / adapter (per host)"]
    assert all('instance=~"$host:[0-9]+"' in e for p in whose for e, _legend in p.targets)
