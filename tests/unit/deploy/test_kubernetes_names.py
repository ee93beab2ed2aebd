"""deploy/kubernetes_names.py: the resources' names and labels, after the host file's name."""

from __future__ import annotations

import pytest

from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.kubernetes_names import (
    MAX_NAME,
    all_labels,
    budgets_name,
    key_names_secret,
    labels,
    resource_name,
    secret_name,
)
from vllm_ledger.errors import ConfigError


def test_every_name_follows_the_host_files() -> None:
    host = Host(model="m", container_name="vllm-primary")
    assert resource_name(host) == "vllm-primary"
    assert resource_name(Host(model="m", port=8001)) == "vllm-8001"
    assert (secret_name(host), key_names_secret(host), budgets_name(host)) == (
        "vllm-primary-api-key",
        "vllm-primary-key-names",
        "vllm-primary-budgets",
    )


def test_a_name_must_be_a_dns_label_short_enough_for_the_revision_hash() -> None:
    resource_name(Host(model="m", container_name="v" * MAX_NAME))
    for name in ("Vllm", "v" * (MAX_NAME + 1), "vllm_1", "vllm-"):
        with pytest.raises(ConfigError) as exc:
            resource_name(Host(model="m", container_name=name))
        assert (exc.value.key, exc.value.hint) == (
            "container_name",
            "set container_name to e.g. vllm-primary",
        )


def test_the_selector_is_part_of_every_resources_labels() -> None:
    host = Host(model="m", container_name="vllm-primary")
    assert labels(host) == {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": "vllm-primary",
    }
    assert all_labels(host) == {**labels(host), "app.kubernetes.io/managed-by": "vllm-ledger"}
