"""Asking the hosts (notify/asks.py): targets on one data dir through one SSH target are one
host, named by its ports and asked through its lowest port; an ask of every host takes at most
ceil(hosts / 8) deadlines."""

from __future__ import annotations

from vllm_ledger.bot.validate import Target
from vllm_ledger.notify.asks import Host, ask_seconds, host_of, hosts_of, port_label


def _t(
    port: int, target: str = "gpu", data_dir: str = "/srv/usage", host: str | None = None
) -> Target:
    return Target(port, target, "/srv/code", data_dir, host=host)


def test_a_port_is_labelled_by_the_ips_last_part() -> None:
    assert port_label(_t(19001, host="10.0.0.12")) == ".12:19001"
    assert port_label(_t(19001, host="gpu1.lan")) == ":19001"
    assert port_label(_t(19001)) == ":19001"


def test_targets_sharing_a_data_dir_are_one_host() -> None:
    a, b = _t(19002, host="10.0.0.12"), _t(19001, host="10.0.0.12")
    c = _t(19003, data_dir="/srv/other")
    hosts = hosts_of([a, c, b])
    assert hosts == [
        Host("gpu:/srv/usage", ".12:19001, .12:19002", b),
        Host("gpu:/srv/other", ":19003", c),
    ]
    assert host_of(hosts, a) == hosts[0] and host_of(hosts, c) == hosts[1]
    assert host_of(hosts, _t(19004, target="gpu2")) is None


def test_an_ask_takes_at_most_one_deadline_per_eight_hosts() -> None:
    hosts = hosts_of([_t(19000 + i, data_dir=f"/d{i}") for i in range(17)])
    assert [ask_seconds(hosts[:n], 10.0) for n in (0, 1, 8, 9, 17)] == [0, 10.0, 10.0, 20.0, 30.0]
