"""The key functions behind ``keys hash`` and ``keys label`` (deploy/keynames.py): the key read
as the middleware reads a bearer token, the names file's line for it, and the label the ledger
shows. The command itself is tests/unit/commands/test_keys.py's."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from tests.unit.commands.test_keys import ALICE, KEY
from vllm_ledger.deploy.keynames import MAX_KEY_BYTES, key_label, names_entry, parse_key
from vllm_ledger.errors import BadArgument, KeyNamesError
from vllm_ledger.write import keys
from vllm_ledger.write.middleware import LedgerMiddleware


def test_a_key_is_read_as_the_middleware_reads_a_bearer_token() -> None:
    assert parse_key(b"  sk-x \r\n") == b"sk-x"
    assert parse_key(b"sk with inner space\n") == b"sk with inner space"
    with pytest.raises(BadArgument, match=r"^no key on stdin"):
        parse_key(b" \n\n")
    with pytest.raises(BadArgument, match=r"^stdin holds more than one line"):
        parse_key(b"sk-one\nsk-two\n")
    with pytest.raises(BadArgument, match=r"^stdin holds more than 16 KiB"):
        parse_key(b"k" * (MAX_KEY_BYTES + 1))
    assert parse_key(b"k" * MAX_KEY_BYTES) == b"k" * MAX_KEY_BYTES


def test_the_names_entry_is_a_line_the_names_file_reads_back() -> None:
    line = names_entry("alice", KEY)
    assert line == f'"alice": "{ALICE}"'
    assert keys.parse_names("{" + line + "}") == {ALICE.removeprefix("sha256:"): "alice"}
    with pytest.raises(KeyNamesError, match=r"^name 'a b' is not 1-64 letters"):
        names_entry("a b", KEY)
    with pytest.raises(KeyNamesError, match="folded past the bound"):
        names_entry("other", KEY)


def test_the_label_is_the_one_the_middleware_gives(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(BadArgument, match=r"has no key secret yet \(\.vllm-ledger-key-secret\)"):
        key_label(KEY, root, {})
    assert list(root.iterdir()) == []  # never made here
    secret = keys.root_secret(root)
    want = "key:" + hmac.new(secret, KEY, hashlib.sha256).hexdigest()[:8]
    assert key_label(KEY, root, {}) == want
    mw = LedgerMiddleware(app=None, env={"VLLM_LEDGER_DIR": str(root)})  # type: ignore[arg-type]
    assert mw.settings.labels is not None and mw.settings.labels.label(KEY) == want
    # A named key needs no secret, nor a root.
    named = {ALICE.removeprefix("sha256:"): "alice"}
    assert key_label(KEY, tmp_path / "none", named) == "alice"
    with pytest.raises(BadArgument, match="is not a directory: pass the folder"):
        key_label(KEY, tmp_path / "none", {})
    (root / keys.SECRET_FILE).write_text("not hex\n")
    with pytest.raises(BadArgument, match=r"key secret .* cannot be read: .*holds no secret"):
        key_label(KEY, root, {})
