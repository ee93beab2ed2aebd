"""Whose tokens on /metrics: counters per key and adapter, not attributed by reason, window
figures by each label; restart-proof as the ledger's own counters, bounded, user off unless
asked. Real ledgers (the real Recorder and tag book on a fake clock), the real collector."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.credited_ledgers import Call, write_credited_ledger
from tests.e2e.prom import PROMTOOL
from tests.ledgers import FakeClock
from vllm_ledger.errors import BadArgument
from vllm_ledger.observe.exporter import LedgerCollector, make_registry
from vllm_ledger.observe.whose import AttributionConfig, SeriesBound, cut_rows, parse_labels
from vllm_ledger.promtext import parse_samples
from vllm_ledger.read.whose import WhoseRow

T0 = 1_800_000_000  # 2027-01-15 08:00 UTC
Samples = list[tuple[str, dict[str, str], float]]

RUN_1 = [
    Call(T0 + 10, "team-a", "tiny", "alice", prompt=100, gen=10, cached=16),
    Call(T0 + 20, "team-a", "tiny-b", "bob", prompt=50, gen=5),
    Call(T0 + 30, "key:1a2b3c4d", "tiny", prompt=30, gen=3),
    Call(T0 + 40, prompt=7, gen=1, untagged=True),
    Call(T0 + 50, "team-a", "tiny", "alice", prompt=20, gen=2, aborted=True),
]
RUN_2 = [
    Call(T0 + 210, "team-a", "tiny", "carol", prompt=300, gen=40, cached=128),
    Call(T0 + 220, "", "tiny", prompt=11, gen=4),  # no bearer key
]


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "ledger"
    write_credited_ledger(root, "run-1", start_ts=T0, end_ts=T0 + 100, calls=RUN_1)
    write_credited_ledger(root, "run-2", start_ts=T0 + 200, end_ts=T0 + 300, calls=RUN_2)
    return root


def _scrape(collector: LedgerCollector) -> Samples:
    from prometheus_client import generate_latest

    return parse_samples(generate_latest(make_registry(collector)).decode())


def _by(samples: Samples, name: str, *labels: str) -> dict[tuple[str, ...], float]:
    return {
        tuple(lab.get(k, "") for k in labels): v
        for n, lab, v in samples
        if n == name and all(k in lab for k in labels)
    }


def _value(samples: Samples, name: str, **labels: str) -> float:
    hits = [v for n, lab, v in samples if n == name and lab == labels]
    assert len(hits) == 1, (name, labels, hits)
    return hits[0]


def test_counters_per_key_and_adapter_and_the_rest_by_reason_add_up_to_the_ledger(
    tmp_path: Path,
) -> None:
    samples = _scrape(LedgerCollector([_root(tmp_path)], tz="UTC", clock=FakeClock(T0 + 301)))
    pair = ("key", "adapter")
    assert _by(samples, "vllm_ledger_attributed_prompt_tokens_total", *pair) == {
        ("team-a", "tiny"): 100 + 300,
        ("team-a", "tiny-b"): 50,
        ("key:1a2b3c4d", "tiny"): 30,
        ("(none)", "tiny"): 11,
    }
    assert _by(samples, "vllm_ledger_attributed_generation_tokens_total", *pair) == {
        ("team-a", "tiny"): 50,
        ("team-a", "tiny-b"): 5,
        ("key:1a2b3c4d", "tiny"): 3,
        ("(none)", "tiny"): 4,
    }
    cached = _by(samples, "vllm_ledger_attributed_cached_tokens_total", *pair)
    assert cached[("team-a", "tiny")] == 16 + 128 and sum(cached.values()) == 144
    requests = _by(samples, "vllm_ledger_attributed_requests_total", *pair)
    assert requests == {k: 2.0 if k == ("team-a", "tiny") else 1.0 for k in requests}
    aborted = _by(samples, "vllm_ledger_requests_aborted_total", *pair)
    assert aborted[("team-a", "tiny")] == 1 and sum(aborted.values()) == 1
    rest = {
        fig: _by(samples, f"vllm_ledger_not_attributed_{fig}_total", "reason")
        for fig in ("prompt_tokens", "generation_tokens", "cached_tokens", "requests")
    }
    assert rest["prompt_tokens"] == {
        ("untagged",): 7,
        ("ambiguous",): 0,
        ("copies",): 0,
        ("aborted",): 20,
    }
    assert rest["generation_tokens"][("aborted",)] == 2 and rest["requests"][("untagged",)] == 1
    assert _value(samples, "vllm_ledger_attribution_faults_total") == 0
    assert _value(samples, "vllm_ledger_attribution_label_sets_folded") == 0
    # Credited and not attributed add up to the ledger's own counters, exactly.
    for fig in ("prompt_tokens", "generation_tokens", "cached_tokens", "requests"):
        credited = sum(_by(samples, f"vllm_ledger_attributed_{fig}_total", *pair).values())
        whole = _value(samples, f"vllm_ledger_{fig}_total", ledger_instance="testhost:8000",
                       model_name="tiny")  # fmt: skip
        assert credited + sum(rest[fig].values()) == whole, fig
    assert _value(samples, "vllm_ledger_prompt_tokens_total", ledger_instance="testhost:8000",
                  model_name="tiny") == 518  # fmt: skip
    # No user label unless asked for (cardinality).
    assert not any("user" in lab for _n, lab, _v in samples)


def test_window_figures_by_key_and_adapter_with_the_rest_add_up_to_each_window(
    tmp_path: Path,
) -> None:
    samples = _scrape(LedgerCollector([_root(tmp_path)], tz="UTC", clock=FakeClock(T0 + 301)))
    rows = _by(samples, "vllm_ledger_window_attributed_input_tokens", "window", "by", "key")
    assert {k[2]: v for k, v in rows.items() if k[0] == "total"} == {
        "team-a": 450,
        "key:1a2b3c4d": 30,
        "(none)": 11,
    }
    adapters = _by(samples, "vllm_ledger_window_attributed_input_tokens", "window", "adapter")
    assert {k[1]: v for k, v in adapters.items() if k[0] == "total"} == {"tiny": 441, "tiny-b": 50}
    assert _value(samples, "vllm_ledger_window_requests_aborted", window="total") == 1
    for window in ("today", "24h", "3d", "7d", "total"):
        for fig in ("input_tokens", "output_tokens", "cached_tokens", "requests"):
            whole = sum(
                v
                for n, lab, v in samples
                if n == f"vllm_ledger_window_{fig}" and lab.get("window") == window
            )
            credited = sum(
                v
                for n, lab, v in samples
                if n == f"vllm_ledger_window_attributed_{fig}"
                and lab == {**lab, "window": window, "by": "key"}
            )
            rest = sum(
                _by(samples, f"vllm_ledger_window_not_attributed_{fig}", "window", "reason")[
                    (window, reason)
                ]
                for reason in ("untagged", "ambiguous", "copies", "aborted")
            )
            assert credited + rest == whole, (window, fig)


def test_the_counters_keep_a_run_that_vanishes_and_count_it_once_when_it_returns(
    tmp_path: Path,
) -> None:
    root = _root(tmp_path)
    collector = LedgerCollector([root], tz="UTC", clock=FakeClock(T0 + 301), cache_seconds=0)
    name = "vllm_ledger_attributed_prompt_tokens_total"
    before = _by(_scrape(collector), name, "key", "adapter")
    archive = tmp_path / "archive"
    archive.mkdir()
    shutil.move(str(root / "run-2"), str(archive / "run-2"))
    gone = _scrape(collector)
    assert _by(gone, name, "key", "adapter") == before  # held, not reset
    # The window gauges are the root as it is now: run 2's 300 are not in its total window.
    rows = _by(gone, "vllm_ledger_window_attributed_input_tokens", "window", "key")
    assert rows[("total", "team-a")] == 150
    shutil.move(str(archive / "run-2"), str(root / "run-2"))
    assert _by(_scrape(collector), name, "key", "adapter") == before  # once, not twice


def test_the_user_label_is_served_only_when_asked_for(tmp_path: Path) -> None:
    config = AttributionConfig(("key", "adapter", "user"))
    collector = LedgerCollector(
        [_root(tmp_path)], tz="UTC", clock=FakeClock(T0 + 301), attribution=config
    )
    samples = _scrape(collector)
    got = _by(samples, "vllm_ledger_attributed_prompt_tokens_total", "key", "adapter", "user")
    assert got == {
        ("team-a", "tiny", "alice"): 100,
        ("team-a", "tiny", "carol"): 300,
        ("team-a", "tiny-b", "bob"): 50,
        ("key:1a2b3c4d", "tiny", "(none)"): 30,
        ("(none)", "tiny", "(none)"): 11,
    }
    users = _by(samples, "vllm_ledger_window_attributed_input_tokens", "window", "by", "user")
    assert {k[2]: v for k, v in users.items() if k[0] == "total"} == {
        "carol": 300,
        "alice": 100,
        "bob": 50,
        "(none)": 41,
    }


def test_the_series_are_bounded_and_a_named_set_stays_named(tmp_path: Path) -> None:
    root = _root(tmp_path)
    config = AttributionConfig(("key", "adapter"), max_series=2)
    clock = FakeClock(T0 + 301)
    collector = LedgerCollector([root], tz="UTC", clock=clock, attribution=config, cache_seconds=0)
    name = "vllm_ledger_attributed_prompt_tokens_total"
    samples = _scrape(collector)
    # Named most tokens first: (team-a, tiny) 400+50, (team-a, tiny-b) 50+5; the rest is other.
    assert _by(samples, name, "key", "adapter") == {
        ("team-a", "tiny"): 400,
        ("team-a", "tiny-b"): 50,
        ("other", "other"): 30 + 11,
    }
    assert _value(samples, "vllm_ledger_attribution_label_sets_folded") == 2
    rows = _by(samples, "vllm_ledger_window_attributed_input_tokens", "window", "by", "key")
    assert {k[2]: v for k, v in rows.items() if k[0] == "total"} == {
        "team-a": 450,
        "key:1a2b3c4d": 30,
        "other": 11,  # (none)
    }
    # A bigger newcomer later is counted under other: no series moves, none goes down.
    big = [Call(T0 + 410, "team-z", "tiny", prompt=5000, gen=1)]
    write_credited_ledger(root, "run-3", start_ts=T0 + 400, end_ts=T0 + 500, calls=big)
    clock.t = T0 + 501
    later = _scrape(collector)
    assert _by(later, name, "key", "adapter") == {
        ("team-a", "tiny"): 400,
        ("team-a", "tiny-b"): 50,
        ("other", "other"): 30 + 11 + 5000,
    }
    assert _value(later, "vllm_ledger_attribution_label_sets_folded") == 3
    rows = _by(later, "vllm_ledger_window_attributed_input_tokens", "window", "by", "key")
    assert {k[2]: v for k, v in rows.items() if k[0] == "total"} == {
        "team-z": 5000,
        "team-a": 450,
        "other": 41,
    }


def test_promtool_finds_the_whose_series_clean(tmp_path: Path) -> None:
    from prometheus_client import generate_latest

    config = AttributionConfig(("key", "adapter", "user", "tenant"))
    collector = LedgerCollector(
        [_root(tmp_path)], tz="UTC", clock=FakeClock(T0 + 301), attribution=config
    )
    text = generate_latest(make_registry(collector)).decode()
    assert "vllm_ledger_attributed_prompt_tokens_total{" in text
    r = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stdout + r.stderr


# ---- the pure parts -----------------------------------------------------------------------


def test_series_bound_names_most_tokens_first_then_folds() -> None:
    bound = SeriesBound(1)
    served = bound.serve(
        [
            (("credited", "a"), (1, 0, 0, 1, 0)),
            (("credited", "b"), (7, 1, 0, 1, 0)),
            (("not_attributed", "untagged"), (3, 0, 0, 1, 0)),
        ]
    )
    assert served == {("credited", "b"): (7, 1, 0, 1, 0), ("credited", "other"): (1, 0, 0, 1, 0)}
    served = bound.serve(
        [(("credited", "a"), (9, 0, 0, 2, 0)), (("credited", "b"), (7, 1, 0, 1, 0))]
    )
    assert served[("credited", "other")] == (9, 0, 0, 2, 0) and bound.folded == {("credited", "a")}


def test_cut_rows_keeps_the_biggest_and_sums_the_rest_into_other() -> None:
    rows = [WhoseRow("a", 5, 0, 0, 1), WhoseRow("b", 9, 1, 0, 1), WhoseRow("other", 2, 0, 0, 1),
            WhoseRow("c", 1, 0, 0, 1, 3)]  # fmt: skip
    assert cut_rows(rows, 2) == [WhoseRow("b", 9, 1, 0, 1), WhoseRow("a", 5, 0, 0, 1),
                                 WhoseRow("other", 3, 0, 0, 2, 3)]  # fmt: skip
    assert cut_rows(rows, 10) == [
        WhoseRow("b", 9, 1, 0, 1),
        WhoseRow("a", 5, 0, 0, 1),
        WhoseRow("c", 1, 0, 0, 1, 3),
        WhoseRow("other", 2, 0, 0, 1),
    ]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("key", ("key",)),
        ("user,key", ("key", "user")),
        (" tenant , adapter", ("adapter", "tenant")),
    ],
)
def test_parse_labels_keeps_their_own_order(text: str, want: tuple[str, ...]) -> None:
    assert parse_labels(text) == want


@pytest.mark.parametrize(
    ("text", "said"), [("key,bogus", "'bogus' is not a label"), (",", "',' names none")]
)
def test_parse_labels_refuses_what_is_not_a_label(text: str, said: str) -> None:
    with pytest.raises(BadArgument) as exc:
        parse_labels(text)
    assert exc.value.what.startswith(f"labels {said}: give some of key,adapter,user,tenant")


def test_a_closed_files_credits_are_kept_until_the_file_changes(tmp_path: Path) -> None:
    root = _root(tmp_path)
    collector = LedgerCollector([root], tz="UTC", clock=FakeClock(T0 + 301), cache_seconds=0)
    name = "vllm_ledger_attributed_prompt_tokens_total"
    first = _by(_scrape(collector), name, "key", "adapter")
    kept = dict(collector.closed.got)
    assert sorted(p.parent.name for p in kept) == ["run-1", "run-2"]  # both closed cleanly
    assert _by(_scrape(collector), name, "key", "adapter") == first
    assert all(collector.closed.got[p][1] is kept[p][1] for p in kept)  # not read again
    path = next(p for p in kept if p.parent.name == "run-2")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # as a rewrite does
    assert _by(_scrape(collector), name, "key", "adapter") == first
    assert collector.closed.got[path][0] != kept[path][0]  # read again, the same credits
    assert collector.closed.got[path][1] is not kept[path][1]
