"""``vllm_ledger/hostport.py``: HOST:PORT as typed, IPv6 in brackets, and its refusals."""

from __future__ import annotations

import pytest

from vllm_ledger.commands._refusals import flagged
from vllm_ledger.errors import BadArgument
from vllm_ledger.hostport import host_port


def test_host_port() -> None:
    assert host_port("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert host_port("[::1]:9095") == ("::1", 9095)
    assert host_port("[fe80::1%eth0]:80") == ("fe80::1%eth0", 80)
    assert host_port("gpu1:0") == ("gpu1", 0)
    refusals = {
        ":9464": "':9464' is not HOST:PORT: give HOST:PORT, e.g. 127.0.0.1:9464 "
        "(0.0.0.0:PORT listens on every interface)",
        "gpu1": "'gpu1' is not HOST:PORT: give HOST:PORT, e.g. 127.0.0.1:9464 "
        "(0.0.0.0:PORT listens on every interface)",
        "::1:9464": "'::1:9464': put an IPv6 address in brackets, e.g. [::1]:9464",
        "h:99999": "'h:99999': the port '99999' is not 0 to 65535: give HOST:PORT, "
        "e.g. 127.0.0.1:9464 (0.0.0.0:PORT listens on every interface)",
        "a b:1": "'a b:1' is not HOST:PORT",
    }
    for value, line in refusals.items():
        with pytest.raises(BadArgument) as e:
            host_port(value)
        assert str(e.value).startswith(line), value
    with pytest.raises(BadArgument, match="is not 1 to 65535"):
        host_port("h:0", zero=False)
    with pytest.raises(BadArgument) as e:
        host_port("::1:9464")
    assert str(flagged(e.value, "--listen")) == (
        "--listen '::1:9464': put an IPv6 address in brackets, e.g. --listen [::1]:9464"
    )
