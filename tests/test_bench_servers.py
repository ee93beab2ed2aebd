"""The serving bench's check of a server's log for its side (bench/servers.py): no ledger line at
all with the plugin off; one ``recording to`` and one ``attribution on`` per API process on."""

from __future__ import annotations

from bench.servers import check_log

ON = "INFO vllm-ledger: recording to /x\nINFO vllm-ledger: attribution on (keys 3)\n"


def test_no_ledger_line_with_the_plugin_off() -> None:
    assert check_log("INFO started\n", "off", 1) is None
    assert check_log(ON, "off", 1) == "the plugin was loaded: INFO vllm-ledger: recording to /x"


def test_one_recording_and_one_attribution_line_per_api_process_on() -> None:
    assert check_log(ON, "on", 1) is None
    assert check_log(ON * 2, "on", 2) is None
    assert check_log(ON, "on", 2) == (
        "1 'vllm-ledger: recording to' line(s), want 2 (one per API process)"
    )
    assert check_log("INFO vllm-ledger: recording to /x\n", "on", 1) == (
        "0 'vllm-ledger: attribution on' line(s), want 1 (one per API process)"
    )
