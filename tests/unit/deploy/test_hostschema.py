"""deploy/hostschema.py: the schema as printed, its pattern wording and its format checks.
(The host file's refusals, key by key, are in tests/unit/deploy/test_launch.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest

from vllm_ledger.deploy.hostschema import (
    ARTIFACTS_DIR_MAX_BYTES,
    PATTERN_WORDS,
    SCHEMA,
    schema_json,
    validate,
)
from vllm_ledger.deploy.limits import PATH_MAX_BYTES
from vllm_ledger.errors import ConfigError


def refusal(data: Any) -> str:
    with pytest.raises(ConfigError) as exc:
        validate(data)
    return str(exc.value)


def test_the_printed_schema_is_the_schema() -> None:
    text = schema_json()
    assert text.endswith("}\n") and json.loads(text) == SCHEMA
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_every_worded_pattern_is_used_by_the_schema() -> None:
    text = json.dumps(SCHEMA)
    for pattern in PATTERN_WORDS:
        assert json.dumps(pattern) in text, pattern


def test_a_pattern_refusal_reads_in_the_schemas_words() -> None:
    assert refusal({"model": "m", "user": "9x"}) == 'user: "9x" is not a user or group name'
    assert refusal({"model": "m", "gpu_name": "A\nB"}) == 'gpu_name: "A\\nB" must be one line'


def test_the_formats_are_checked() -> None:
    """image-reference by the registries' grammar, absolute-path in bytes against maxLength."""
    long = "/" + "a" * ARTIFACTS_DIR_MAX_BYTES
    assert f"is {ARTIFACTS_DIR_MAX_BYTES + 1} bytes long; at most {ARTIFACTS_DIR_MAX_BYTES} " in (
        refusal({"model": "m", "artifacts_dir": long})
    )
    assert refusal({"model": "m", "image": "UPPER"}).startswith(
        'image: "UPPER" is not an image reference (the repository name must be lowercase)'
    )
    assert ARTIFACTS_DIR_MAX_BYTES < PATH_MAX_BYTES
    validate({"model": "m", "image": "vllm/vllm-openai:v0.32.0", "artifacts_dir": "/srv/a"})
