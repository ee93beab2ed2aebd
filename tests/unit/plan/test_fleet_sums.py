"""plan/fleet_sums: a window's figures added (counts as integers), and what each served series
adds to its host's, its model's and its coverage's sums; a refused value or a conflict leaves its
window short on its host."""

from __future__ import annotations

from vllm_ledger.plan.fleet_copies import Conflict
from vllm_ledger.plan.fleet_sums import Coverage, Figures, Served, empty_windows

BASE = {"instance": "a:9464", "job": "vllm-ledger"}


def _series(name: str, **labels: str) -> dict[str, str]:
    return {**BASE, "__name__": f"vllm_ledger_{name}", **labels}


def test_figures_put_a_count_whole_and_add_field_by_field() -> None:
    f = Figures()
    f.put("input_tokens", 100.0)
    f.put("cached_tokens", 25.0)
    f.put("decode_seconds", 0.25)
    assert f.input_tokens == 100 and isinstance(f.input_tokens, int)
    assert f.decode_seconds == 0.25
    assert f.hit_rate == 0.25 and f.gen_speed == 0.0
    assert Figures().hit_rate is None and Figures().gen_speed is None
    total = Figures()
    total.add(f)
    total.add(f)
    assert (total.input_tokens, total.cached_tokens, total.decode_seconds) == (200, 50, 0.5)


def test_each_series_adds_to_its_host_model_instance_and_coverage() -> None:
    served = Served()
    inst = {"window": "24h", "ledger_instance": "i1"}
    served.add(_series("report_ok"), 1.0)
    served.add(_series("window_input_tokens", **inst, model_name="m"), 40.0)
    served.add(_series("window_complete", **inst), 1.0)
    served.add(_series("window_complete", window="24h"), 0.0)
    served.add(_series("window_problems", window="24h", problem="gap"), 2.0)
    served.add(_series("window_wall_seconds", window="24h"), 3600.0)
    served.add(_series("window_input_tokens", window="no-such-window"), 1.0)  # not served
    assert served.report_ok == {"a:9464": 1.0}
    assert served.sums["a:9464"]["24h"].input_tokens == 40
    assert served.by_model[("a:9464", "m")]["24h"].input_tokens == 40
    assert served.model_instances == {"m": {("a:9464", "i1")}}
    assert served.per_instance == {("a:9464", "i1"): {"24h": True}}
    assert served.instances == {"a:9464": {"i1"}}
    cov = served.host_coverage("a:9464")
    assert cov["24h"] == Coverage(None, 3600, False, {"gap": 2})
    assert cov["7d"] == Coverage()
    assert served.refused == [] and served.short == {}


def test_a_refused_value_or_a_conflict_leaves_its_window_short() -> None:
    conflict = Conflict("b:9464", "7d", "vllm_ledger_window_requests", (1.0, 2.0), ("job",))
    served = Served.of([(_series("window_input_tokens", window="24h"), -5.0)], [conflict])
    assert [r.why for r in served.refused] == [
        'vllm_ledger_window_input_tokens{window="24h"} -5 is negative'
    ]
    assert served.short == {"a:9464": {"24h"}, "b:9464": {"7d"}}
    assert served.sums == {}
    assert set(empty_windows()) == set(served.host_coverage("a:9464"))
