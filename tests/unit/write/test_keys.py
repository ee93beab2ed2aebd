"""Key names: the operator's file, the keyed hash, the root's secret made once."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from pathlib import Path

import pytest

from vllm_ledger.write import keys


def test_a_named_key_reads_as_its_name_and_any_other_as_a_stable_short_hash(
    tmp_path: Path,
) -> None:
    names_file = tmp_path / "keys.json"
    names_file.write_text(json.dumps({"team-a": keys.key_hash(b"sk-a")}))
    secret = keys.root_secret(tmp_path / "root")
    labels = keys.KeyLabels(secret, keys.read_names(names_file))
    assert labels.label(b"sk-a") == "team-a"
    other = labels.label(b"sk-b")
    assert other.startswith("key:") and len(other) == 12 and "sk-b" not in other
    # The same key, the same name, in another process of the root (the secret is the root's).
    again = keys.KeyLabels(keys.root_secret(tmp_path / "root"))
    assert again.label(b"sk-b") == other
    assert keys.KeyLabels(keys.root_secret(tmp_path / "elsewhere")).label(b"sk-b") != other
    assert keys.key_hash(b"sk-a") == "sha256:" + hashlib.sha256(b"sk-a").hexdigest()


def test_the_secret_is_private_and_one_under_a_race(tmp_path: Path) -> None:
    root = tmp_path / "root"
    got: list[bytes] = []
    threads = [
        threading.Thread(target=lambda: got.append(keys.root_secret(root))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 1 and len(got[0]) == 32
    path = root / keys.SECRET_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in root.iterdir()] == [keys.SECRET_FILE]
    path.write_text("not a secret")
    with pytest.raises(OSError, match="holds no secret"):
        keys.root_secret(root)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[]", "not a JSON object"),
        ("{", "not JSON"),
        ('{"a b": "sha256:' + "0" * 64 + '"}', "is not 1-64 letters"),
        ('{"a": "0" }', 'is not "sha256:<64 lowercase hex>"'),
        ('{"other": "sha256:' + "0" * 64 + '"}', "folded past the bound"),
        ('{"a": "sha256:' + "0" * 64 + '", "b": "sha256:' + "0" * 64 + '"}', "named 'a' too"),
    ],
)
def test_a_bad_names_file_is_one_line(text: str, says: str) -> None:
    with pytest.raises(keys.KeyNamesError, match=says):
        keys.parse_names(text)


def test_the_names_file_is_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(keys.KeyNamesError, match="not a regular file"):
        keys.read_names(fifo)
    with pytest.raises(keys.KeyNamesError, match="cannot open"):
        keys.read_names(tmp_path / "absent.json")
