"""formats/fleet.py: the fleet's table from a built Fleet; label values from Prometheus shown
escaped, wide model names aligned by display width."""

from __future__ import annotations

import json

from vllm_ledger.formats.fleet import render_json, render_text
from vllm_ledger.formats.table import display_width
from vllm_ledger.plan.fleet import Fleet, build_fleet
from vllm_ledger.read.windows import WINDOW_NAMES

AT = 1_800_000_000.0
Sample = tuple[dict[str, str], float]


def _fleet(models: dict[str, int], *, instance: str = "gpu1:9464") -> Fleet:
    """One host serving ``models`` (input n, output n // 10 in every window), all complete."""
    base = {"instance": instance, "job": "vllm-ledger"}
    samples: list[Sample] = [({**base, "__name__": "vllm_ledger_report_ok"}, 1.0)]
    for w in WINDOW_NAMES:
        for model, n in models.items():
            labels = {**base, "window": w, "ledger_instance": "gpu1:8000", "model_name": model}
            samples.append(({**labels, "__name__": "vllm_ledger_window_input_tokens"}, float(n)))
            samples.append(({**labels, "__name__": "vllm_ledger_window_output_tokens"}, n // 10))
        inst = {**base, "window": w, "ledger_instance": "gpu1:8000"}
        samples.append(({**inst, "__name__": "vllm_ledger_window_complete"}, 1.0))
        samples.append(({**base, "window": w, "__name__": "vllm_ledger_window_complete"}, 1.0))
    newest = [(base, AT - 1)]
    return build_fleet(samples, newest, [(base, 1.0)], newest, source="http://p:9090", at_ts=AT)


def test_an_escape_sequence_and_a_newline_in_a_label_are_shown_escaped() -> None:
    evil = "qwen\x1b[2J\nfleet  9,999/999"
    fleet = _fleet({evil: 100}, instance="gpu1\x1b]0;owned\x07:9464")
    text = render_text(fleet)
    assert "\x1b" not in text and "\x07" not in text
    lines = text.splitlines()
    assert lines[2].split() == ["gpu1\\x1b]0;owned\\x07:9464", *["100/10"] * 5]
    assert lines[4].split() == ["qwen\\x1b[2J\\x0afleet", "9,999/999", *["100/10"] * 5]
    assert lines[5].split() == ["fleet", *["100/10"] * 5]  # the one fleet line, not forged
    assert sum(line.startswith("fleet") for line in lines) == 1
    # The JSON keeps the label's own value (its control characters escaped by JSON).
    doc = json.loads(render_json(fleet))
    assert list(doc["models"]) == [evil]
    assert "\x1b" not in render_json(fleet)


def test_a_wide_model_name_lines_up() -> None:
    fleet = _fleet({"通义千问": 1_000_000, "qwen": 7})
    lines = render_text(fleet).splitlines()
    assert lines[:7] == [
        " " * 27 + "".join(f"  {w:>17}" for w in WINDOW_NAMES),
        "hosts (input/output tokens)",
        "  gpu1:9464                  1,000,007/100,000  1,000,007/100,000  1,000,007/100,000"
        "  1,000,007/100,000  1,000,007/100,000",
        "models",
        "  qwen                                     7/0                7/0                7/0"
        "                7/0                7/0",
        "  通义千问                   1,000,000/100,000  1,000,000/100,000  1,000,000/100,000"
        "  1,000,000/100,000  1,000,000/100,000",
        "fleet                        1,000,007/100,000  1,000,007/100,000  1,000,007/100,000"
        "  1,000,007/100,000  1,000,007/100,000",
    ]
    assert len({display_width(line) for line in lines[2:7] if line != "models"}) == 1


def _sample(name: str, value: float, **labels: str) -> Sample:
    return ({"instance": "gpu1:9464", "job": "vllm-ledger", "__name__": name, **labels}, value)


def test_missing_hosts_duplicates_conflicts_and_refused_values_are_shown() -> None:
    evil = "q\x1b[2J\nwen"
    samples: list[Sample] = [_sample("vllm_ledger_report_ok", 1.0)]
    for w in WINDOW_NAMES:
        pair = {"window": w, "ledger_instance": "gpu1:8000", "model_name": evil}
        for job in ("vllm-ledger", "federate"):  # the same series under two jobs
            samples.append(
                ({**_sample("vllm_ledger_window_input_tokens", 5150, **pair)[0], "job": job}, 5150)
            )
        samples.append(_sample("vllm_ledger_window_complete", 1.0, window=w))
        samples.append(
            _sample("vllm_ledger_window_complete", 1.0, window=w, ledger_instance="gpu1:8000")
        )
    for replica, value in (("r1", 10.0), ("r2", 12.0)):  # two replicas that disagree
        labels = {"window": "7d", "ledger_instance": "gpu1:8000", "model_name": evil}
        samples.append(
            _sample("vllm_ledger_window_output_tokens", value, replica=replica, **labels)
        )
    samples.append(
        _sample(
            "vllm_ledger_window_requests",
            -1.0,
            window="today",
            ledger_instance="gpu1:8000",
            model_name=evil,
        )
    )
    newest = [({"instance": "gpu1:9464", "job": "vllm-ledger"}, AT - 1)]
    up = [
        ({"instance": "gpu1:9464", "job": "vllm-ledger"}, 1.0),
        ({"instance": "gpu2:9464", "job": "vllm-ledger"}, 0.0),
    ]
    fleet = build_fleet(
        samples, newest, up, newest, source="http://p:9090", at_ts=AT, notes=["a note"]
    )
    text = render_text(fleet)
    assert "\x1b" not in text
    assert text.splitlines()[2:7] == [
        "  gpu1:9464                  5,150/0*   5,150/0   5,150/0  5,150/0*   5,150/0",
        "  gpu2:9464 [missing]               -         -         -         -         -",
        "models",
        "  q\\x1b[2J\\x0awen            5,150/0*   5,150/0   5,150/0  5,150/0*   5,150/0",
        "fleet                        5,150/0*  5,150/0*  5,150/0*  5,150/0*  5,150/0*",
    ]
    tail = text.split("\n\n", 1)[1]
    assert tail == (
        "2 hosts from http://p:9090, 1 counted, 1 missing; stale after 60 s; * = incomplete\n"
        "5 duplicate series taken once (the copies differ only in job)\n"
        "note: a note\n"
        "INCOMPLETE:\n"
        '  gpu1:9464: conflict: vllm_ledger_window_output_tokens{ledger_instance="gpu1:8000",'
        'model_name="q\\u001b[2J\\nwen",window="7d"} is 10 and 12 (the copies differ in replica):'
        " not counted\n"
        '  gpu1:9464: refused vllm_ledger_window_requests{ledger_instance="gpu1:8000",'
        'model_name="q\\u001b[2J\\nwen",window="today"} -1 is negative: not counted\n'
        "  gpu2:9464: its target is down (up == 0)\n"
    )
    doc = json.loads(render_json(fleet))
    assert doc["missing"] == ["gpu2:9464"]
    assert doc["duplicates"] == {"series": 5, "differ_in": ["job"]}
    assert doc["conflicts"] == [
        {
            "host": "gpu1:9464",
            "window": "7d",
            "series": 'vllm_ledger_window_output_tokens{ledger_instance="gpu1:8000",'
            'model_name="q\\u001b[2J\\nwen",window="7d"}',
            "values": [10, 12],
            "differ_in": ["replica"],
        }
    ]
    assert doc["refused"][0]["value"] == -1 and doc["refused"][0]["window"] == "today"
    assert doc["hosts"]["gpu1:9464"]["complete"] == {
        "today": False, "24h": True, "3d": True, "7d": False, "total": True,
    }  # fmt: skip
    assert doc["hosts"]["gpu2:9464"]["found_in"] == ["up"]
    assert doc["hosts"]["gpu2:9464"]["counted"] is False
    assert doc["notes"] == ["a note"]
