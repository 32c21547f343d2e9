"""clirplug.digest: the one SHA-256 of a file behind cache keys, stage records and model signatures."""

import hashlib
import os

import pytest

from clirplug.digest import file_digest, update_digest
from clirplug.errors import ClirplugError

pytestmark = pytest.mark.unit


def test_file_digest_is_hashlibs_sha256_of_the_bytes(tmp_path):
    path = tmp_path / "big.bin"
    data = os.urandom(3 << 20) + b"tail"  # more than one 1 MiB block, the last one partial
    path.write_bytes(data)
    assert file_digest(path) == file_digest(str(path)) == hashlib.sha256(data).hexdigest()
    (tmp_path / "empty").write_bytes(b"")
    assert file_digest(tmp_path / "empty") == hashlib.sha256(b"").hexdigest()


def test_update_digest_feeds_files_in_turn(tmp_path):
    (tmp_path / "a").write_bytes(b"first ")
    (tmp_path / "b").write_bytes(b"second")
    digest = hashlib.sha256()
    update_digest(digest, tmp_path / "a")
    update_digest(digest, tmp_path / "b")
    assert digest.hexdigest() == hashlib.sha256(b"first second").hexdigest()


def test_a_rewritten_file_gets_its_new_digest(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"before")
    assert file_digest(path) == hashlib.sha256(b"before").hexdigest()
    path.write_bytes(b"after!")  # same size: the modification time tells the memo apart
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert file_digest(path) == hashlib.sha256(b"after!").hexdigest()


def test_a_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(ClirplugError, match="missing.txt: cannot read"):
        file_digest(tmp_path / "missing.txt")
