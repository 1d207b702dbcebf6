"""A pinned file is hashed until found whole, then remembered by its place and times on disk; any write
to it, even one that puts its modification time back, has it hashed again."""

from __future__ import annotations

import hashlib
import os

import pytest

from c1 import pinned


class Refused(Exception):
    pass


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("C1_CACHE_DIR", raising=False)
    return tmp_path / "cache" / "c1" / "checked"


def _hashes(monkeypatch) -> list:
    seen = []
    real = pinned.sha256_file

    def counting(path):
        seen.append(path)
        return real(path)

    monkeypatch.setattr(pinned, "sha256_file", counting)
    return seen


def test_a_whole_file_is_hashed_once_and_an_altered_one_again(tmp_path, cache, monkeypatch):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights " * 1000)
    pin = hashlib.sha256(model.read_bytes()).hexdigest()
    seen = _hashes(monkeypatch)
    assert pinned.checked(model, pin, "the model", Refused) == model
    assert pinned.checked(model, pin, "the model", Refused) == model
    assert len(seen) == 1 and len(list(cache.iterdir())) == 1

    st = model.stat()
    with open(model, "r+b") as f:  # the same size, the modification time put back
        f.write(b"W")
    os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(Refused, match="is not the model c1 expects"):
        pinned.checked(model, pin, "the model", Refused)
    assert len(seen) == 2


def test_a_mark_holds_for_its_pin_only_and_a_missing_file_is_one_line(tmp_path, cache, monkeypatch):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights")
    pin = hashlib.sha256(b"weights").hexdigest()
    pinned.checked(model, pin, "the model", Refused)
    with pytest.raises(Refused, match="SHA-256"):
        pinned.checked(model, "0" * 64, "the model", Refused)
    with pytest.raises(Refused, match=r"the model is missing .*; reinstall c1"):
        pinned.checked(tmp_path / "gone.onnx", pin, "the model", Refused)


def test_a_cache_that_cannot_be_written_hashes_every_time(tmp_path, cache, monkeypatch):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights")
    pin = hashlib.sha256(b"weights").hexdigest()
    cache.mkdir(parents=True)
    cache.chmod(0o500)
    seen = _hashes(monkeypatch)
    try:
        pinned.checked(model, pin, "the model", Refused)
        pinned.checked(model, pin, "the model", Refused)
        if not os.access(cache, os.W_OK):  # (root writes anyway)
            assert len(seen) == 2 and not list(cache.iterdir())
    finally:
        cache.chmod(0o700)
