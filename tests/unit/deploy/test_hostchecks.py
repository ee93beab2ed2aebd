"""deploy/hostchecks.py: the host file's checks beyond its schema, each a one-line refusal."""

from __future__ import annotations

from typing import Any

import pytest

from vllm_ledger.deploy.hostchecks import check_extras
from vllm_ledger.errors import ConfigError


def refusal(data: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as exc:
        check_extras({"model": "m", **data})
    return exc.value


def test_a_plain_host_file_passes() -> None:
    check_extras({"model": "m", "extra_args": ["--enforce-eager"], "extra_env": {"A": "b"}})


def test_detailed_traces_need_an_endpoint() -> None:
    error = refusal({"collect_detailed_traces": "all"})
    assert (error.what, error.key, error.hint) == (
        "collect_detailed_traces: needs otlp_traces_endpoint (the traces go there)",
        "collect_detailed_traces",
        "set otlp_traces_endpoint, e.g. grpc://127.0.0.1:4317",
    )


def test_a_flag_with_its_own_key_names_the_key() -> None:
    error = refusal({"extra_args": ["--enforce-eager", "--max_model_len=9"]})
    assert (str(error), error.key) == (
        "extra_args[1]: --max-model-len has its own key: set max_model_len instead",
        "extra_args",
    )
    assert str(refusal({"extra_args": ["--headless"]})) == (
        "extra_args[0]: --headless is not allowed: it starts no API server, so no ledger writer"
    )


def test_extra_env_holds_no_ledger_setting_nor_the_key() -> None:
    assert str(refusal({"extra_env": {"VLLM_LEDGER_DIR": "/x"}})) == (
        "extra_env.VLLM_LEDGER_DIR: ledger settings come from usage, not from extra_env"
    )
    assert refusal({"extra_env": {"VLLM_API_KEY": "sk"}}).key == "extra_env"


def test_one_argument_fits_the_kernels_limit() -> None:
    error = refusal({"model": "m" * 200_000})
    assert str(error).startswith("model: ") and error.key == "model"
