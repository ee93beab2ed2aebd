"""``fleet --by key``, pure (plan/fleet_whose.py, formats/fleet.py): each counted host's rows by
key from its exporter's window gauges, summed across hosts; what is not attributed by reason;
the fleet's checks (value gate, each series once, hosts down not counted) and each host's rows
adding up to its own figures, the difference named ``not served``. The live parts are in
tests/e2e/test_fleet.py."""

from __future__ import annotations

import json

from tests.unit.plan.test_fleet import AT, WINDOWS, Sample, _host, _target
from vllm_ledger.formats.fleet import render_json, render_text
from vllm_ledger.plan.fleet import Fleet, build_fleet
from vllm_ledger.plan.fleet_whose import (
    NOT_SERVED,
    build_fleet_whose,
    check_whose_sample,
    read_fleet_whose,
    whose_queries,
)

Rows = dict[str, tuple[int, int]]  # value -> (input, output) in every window


def _whose(
    target: str,
    rows: Rows,
    rest: Rows,
    *,
    by: str = "key",
    aborted: int = 0,
    extra: dict[str, str] | None = None,
) -> list[Sample]:
    """What one exporter serves for whose tokens: rows by ``by`` and the rest by reason."""
    base = {"instance": target, "job": "vllm-ledger", **(extra or {})}
    out: list[Sample] = []
    for w in WINDOWS:
        for value, (i, o) in rows.items():
            labels = {**base, "window": w, "by": by, by: value}
            out.append(({**labels, "__name__": "vllm_ledger_window_attributed_input_tokens"}, i))
            out.append(({**labels, "__name__": "vllm_ledger_window_attributed_output_tokens"}, o))
            out.append(({**labels, "__name__": "vllm_ledger_window_attributed_requests"}, 0.0))
        for reason in ("untagged", "ambiguous", "copies", "aborted"):
            i, o = rest.get(reason, (0, 0))
            labels = {**base, "window": w, "reason": reason}
            out.append(
                ({**labels, "__name__": "vllm_ledger_window_not_attributed_input_tokens"}, i)
            )
            out.append(
                ({**labels, "__name__": "vllm_ledger_window_not_attributed_output_tokens"}, o)
            )
        labels = {**base, "window": w, "__name__": "vllm_ledger_window_requests_aborted"}
        out.append((labels, float(aborted)))
    return out


def _fleet(*hosts: tuple[str, int], down: tuple[str, ...] = ()) -> Fleet:
    """Hosts of one instance each: input n, output n // 10 in every window; ``down``: seen
    within the lookback, ``up == 0`` now."""
    samples = [s for target, n in hosts for s in _host(target, {(target, "qwen"): n})]
    newest = [_target(t, AT - 2) for t, _n in hosts]
    up = [_target(t, 1) for t, _n in hosts] + [_target(t, 0) for t in down]
    seen = [*newest, *(_target(t, 1) for t in down)]
    return build_fleet(samples, newest, up, seen, source="http://p:9090", at_ts=AT)


A, B = "gpu1:9464", "gpu2:9464"
ROWS_A: Rows = {"team-a": (100, 10), "(none)": (30, 3)}
REST_A: Rows = {"untagged": (20, 2)}
ROWS_B: Rows = {"team-a": (600, 60), "key:1a2b3c4d": (300, 30)}
REST_B: Rows = {"aborted": (100, 10)}


def test_each_keys_rows_are_summed_across_hosts_and_add_up_to_the_fleet() -> None:
    fleet = _fleet((A, 150), (B, 1000))
    samples = [*_whose(A, ROWS_A, REST_A), *_whose(B, ROWS_B, REST_B, aborted=2)]
    whose = build_fleet_whose(fleet, samples, "key")
    assert [(r.value, r.windows["today"].input_tokens, r.hosts) for r in whose.rows] == [
        ("team-a", 700, (A, B)),
        ("key:1a2b3c4d", 300, (B,)),
        ("(none)", 30, (A,)),
    ]
    for w in WINDOWS:
        rest = whose.not_attributed_total(w)
        assert (rest.input_tokens, rest.output_tokens) == (120, 12)
        credited = sum(r.windows[w].input_tokens for r in whose.rows)
        assert credited + rest.input_tokens == fleet.total[w].input_tokens == 1150
    assert whose.not_attributed["untagged"]["total"].input_tokens == 20
    assert whose.not_attributed["aborted"]["total"].output_tokens == 10
    assert whose.not_attributed[NOT_SERVED]["total"].input_tokens == 0
    assert whose.requests_aborted == dict.fromkeys(WINDOWS, 2)
    assert whose.complete == dict.fromkeys(WINDOWS, True) and whose.incomplete == ()
    assert render_text(fleet, whose) == (
        "                                  today        24h         3d         7d      total\n"
        "by key (input/output tokens)\n"
        "  team-a                         700/70     700/70     700/70     700/70     700/70\n"
        "  key:1a2b3c4d                   300/30     300/30     300/30     300/30     300/30\n"
        "  (none)                           30/3       30/3       30/3       30/3       30/3\n"
        "not attributed                   120/12     120/12     120/12     120/12     120/12\n"
        "  untagged                         20/2       20/2       20/2       20/2       20/2\n"
        "  aborted                        100/10     100/10     100/10     100/10     100/10\n"
        "fleet                         1,150/115  1,150/115  1,150/115  1,150/115  1,150/115\n"
        "\n"
        "2 hosts from http://p:9090, 2 counted; stale after 60 s; * = incomplete\n"
        "requests aborted (not attributed): today 2, 24h 2, 3d 2, 7d 2, total 2\n"
        "complete: every host is up, fresh and vouches for every window\n"
    )
    doc = json.loads(render_json(fleet, whose))["by"]
    assert doc["by"] == "key" and doc["complete"] == dict.fromkeys(WINDOWS, True)
    assert doc["rows"][0] == {
        "value": "team-a",
        "hosts": [A, B],
        "windows": {w: {"input": 700, "output": 70, "cached": 0, "requests": 0} for w in WINDOWS},
    }
    assert doc["not_attributed"]["total"] == {
        "input": 120,
        "output": 12,
        "cached": 0,
        "requests": 0,
        "requests_aborted": 2,
        "reasons": {
            "untagged": {"input": 20, "output": 2, "cached": 0, "requests": 0},
            "ambiguous": {"input": 0, "output": 0, "cached": 0, "requests": 0},
            "copies": {"input": 0, "output": 0, "cached": 0, "requests": 0},
            "aborted": {"input": 100, "output": 10, "cached": 0, "requests": 0},
            "not served": {"input": 0, "output": 0, "cached": 0, "requests": 0},
        },
    }


def test_a_host_down_is_not_counted_and_the_fleet_names_it() -> None:
    fleet = _fleet((A, 150), down=(B,))
    samples = [*_whose(A, ROWS_A, REST_A), *_whose(B, ROWS_B, REST_B)]  # B's last samples
    whose = build_fleet_whose(fleet, samples, "key")
    assert [r.value for r in whose.rows] == ["team-a", "(none)"]
    assert whose.rows[0].windows["total"].input_tokens == 100  # B's 600 are not in it
    assert whose.complete == dict.fromkeys(WINDOWS, False)
    out = render_text(fleet, whose)
    assert "INCOMPLETE:\n  gpu2:9464: its target is down (up == 0)\n" in out


def test_rows_that_do_not_add_up_are_named_and_the_difference_is_not_served() -> None:
    # B's exporter serves rows by adapter only (its --attribution-labels leaves key out); C's
    # predates whose tokens: nothing but its own figures.
    c = "gpu3:9464"
    fleet = _fleet((A, 150), (B, 1000), (c, 7))
    samples = [
        *_whose(A, ROWS_A, REST_A),
        *_whose(B, {"qwen": (900, 90)}, REST_B, by="adapter"),
    ]
    whose = build_fleet_whose(fleet, samples, "key")
    assert [r.value for r in whose.rows] == ["team-a", "(none)"]
    served = whose.not_attributed[NOT_SERVED]["today"]
    assert (served.input_tokens, served.output_tokens) == (900 + 7, 90 + 0)
    assert whose.incomplete == (
        "gpu2:9464: serves no rows by key (its exporter's --attribution-labels leaves key "
        "out): its credited tokens are 'not served' in today, 24h, 3d, 7d, total",
        "gpu3:9464: serves no whose-tokens series (an exporter from before them): its tokens "
        "are 'not served' in today, 24h, 3d, 7d, total",
    )
    assert whose.complete == dict.fromkeys(WINDOWS, False)
    for w in WINDOWS:  # the rows and the rest still make the fleet's total
        credited = sum(r.windows[w].input_tokens for r in whose.rows)
        assert credited + whose.not_attributed_total(w).input_tokens == fleet.total[w].input_tokens


def test_copies_are_taken_once_and_bad_values_refused() -> None:
    fleet = _fleet((A, 150))
    once = _whose(A, ROWS_A, REST_A)
    twice = _whose(A, ROWS_A, REST_A, extra={"job": "federate"})
    one = {"__name__": "vllm_ledger_window_attributed_input_tokens", "key": "team-a"}
    bad = [
        (labels, -5.0 if one.items() <= labels.items() and labels["window"] == "today" else v)
        for labels, v in _whose(A, ROWS_A, REST_A, extra={"replica": "r2"})
    ]
    whose = build_fleet_whose(fleet, [*once, *twice], "key")
    assert whose.duplicates == len(once) and whose.conflicts == ()
    assert whose.rows[0].windows["today"].input_tokens == 100  # once, not twice
    assert whose.incomplete == ()
    whose = build_fleet_whose(fleet, [*once, *bad], "key")
    assert [(c.host, c.window, c.values) for c in whose.conflicts] == [(A, "today", (-5.0, 100.0))]
    assert whose.rows[0].windows["today"].input_tokens == 0  # neither copy is counted
    assert whose.not_attributed[NOT_SERVED]["today"].input_tokens == 100
    assert whose.complete["today"] is False and whose.complete["total"] is True
    lines = [ln for ln in whose.incomplete if "conflict" in ln]
    assert len(lines) == 1 and lines[0].startswith(
        'gpu1:9464: conflict: vllm_ledger_window_attributed_input_tokens{window="today",by="key",'
        'key="team-a"} is -5 and 100'
    )


def test_the_value_gate_takes_whole_counts_and_a_negative_aborted_rest() -> None:
    rest = {"__name__": "vllm_ledger_window_not_attributed_input_tokens", "reason": "aborted"}
    assert check_whose_sample(rest["__name__"], rest, -42.0) == -42.0
    fleet = _fleet((A, 150))
    samples = _whose(A, {"team-a": (160, 15)}, {"aborted": (-10, 0)})
    whose = build_fleet_whose(fleet, samples, "key")
    assert whose.not_attributed["aborted"]["today"].input_tokens == -10
    assert whose.incomplete == () and whose.rows[0].windows["today"].input_tokens == 160
    broken = [
        (labels, 0.5 if labels.get("reason") == "untagged" else v)
        for labels, v in _whose(A, ROWS_A, REST_A)
    ]
    whose = build_fleet_whose(fleet, broken, "key")
    assert len(whose.refused) == 10 and {r.window for r in whose.refused} == set(WINDOWS)
    assert whose.refused[0].why.endswith("0.5 is not a whole number")
    assert whose.not_attributed[NOT_SERVED]["total"].input_tokens == 20  # untagged, refused
    assert all(line.startswith("gpu1:9464: ") for line in whose.incomplete)


def test_the_queries_select_the_rows_by_one_label_and_the_rest() -> None:
    assert whose_queries("key") == {
        "rows": '{__name__=~"vllm_ledger_window_attributed_(input_tokens|output_tokens|'
        'cached_tokens|requests)",by="key"}',
        "rest": '{__name__=~"(vllm_ledger_window_not_attributed_(input_tokens|output_tokens|'
        'cached_tokens|requests)|vllm_ledger_window_requests_aborted)"}',
    }
    assert whose_queries("user", "vllm-ledger")["rows"].endswith(',by="user",job="vllm-ledger"}')


def test_read_fleet_whose_asks_at_the_fleets_instant() -> None:
    asked: list[str] = []

    def fetch(url: str) -> bytes:
        asked.append(url)
        if "/api/v1/label/job/values" in url:
            return b'{"status":"success","data":[]}'
        if "/api/v1/targets" in url:
            return b'{"status":"success","data":{"activeTargets":[]}}'
        return b'{"status":"success","data":{"resultType":"vector","result":[]}}'

    fleet, whose = read_fleet_whose("http://p:9090", "adapter", clock=lambda: AT, fetch=fetch)
    assert fleet.at_ts == AT and whose.by == "adapter" and whose.rows == ()
    assert len(asked) == 10
    assert all(u.endswith("time=1800000000.000") for u in asked[-2:])
    assert "by%3D%22adapter%22" in asked[-2]
