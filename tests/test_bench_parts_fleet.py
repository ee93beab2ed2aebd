"""The bench's fleet part (bench/parts/fleet.py): the exposition text it imports, per host two
instances of every window, ``up`` 0 and two-hour-old series for a dead host, and the alive
hosts' input in window ``total`` as the figure the fleet must sum to."""

from __future__ import annotations

from bench.parts.fleet import FLEET_WINDOWS, _fleet_exposition


def test_alive_hosts_are_summed_dead_ones_are_stale_and_down() -> None:
    now_ms = 10_000_000
    text, want = _fleet_exposition(["gpu0", "gpu1"], ["dead0"], now_ms)
    lines = text.splitlines()
    assert want == (1000 + 40) + (1001 + 40) + (2000 + 40) + (2001 + 40)
    assert 'up{host="gpu0",instance="gpu0:9464",job="vllm-ledger"} 1 9990000' in lines
    assert 'up{host="dead0",instance="dead0:9464",job="vllm-ledger"} 0 9990000' in lines
    stale = str(now_ms - 2 * 3600 * 1000)
    dead = [ln for ln in lines if 'host="dead0"' in ln and not ln.startswith("up{")]
    assert dead and all(ln.endswith(" " + stale) for ln in dead)
    inputs = [ln for ln in lines if ln.startswith("vllm_ledger_window_input_tokens{")]
    assert len(inputs) == 3 * len(FLEET_WINDOWS) * 2
