"""deploy/preflight/sizes.py: sizes as preflight writes them."""

from __future__ import annotations

from vllm_ledger.deploy.preflight.sizes import GIB, MIB, gib_text


def test_gib_text_in_gib_down_to_a_tenth_then_in_mib() -> None:
    assert (GIB, MIB) == (1024**3, 1024**2)
    assert gib_text(int(12.34 * GIB)) == "12.3 GiB"
    assert gib_text(GIB / 10) == "0.1 GiB"
    assert gib_text(50 * MIB) == "50.0 MiB"
