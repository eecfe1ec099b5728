"""`persist._write_atomic` leaves no temp file behind when the write or the rename fails (a full disk at
every save would otherwise pile up partial index files)."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from engram.search import persist


def _leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_a_failed_write_removes_its_temp_file(tmp_path, monkeypatch):
    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(persist.os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        persist._write_atomic(tmp_path / "vectors.f16", b"x" * 4096)
    assert _leftovers(tmp_path) == []
    assert not (tmp_path / "vectors.f16").exists()


def test_a_failed_rename_removes_its_temp_file_and_keeps_the_target(tmp_path):
    target = tmp_path / "manifest.json"
    target.mkdir()  # a directory in the way: os.replace really fails
    (target / "keep").write_text("kept")
    with pytest.raises(OSError):
        persist._write_atomic(target, b"{}")
    assert _leftovers(tmp_path) == []
    assert (target / "keep").read_text() == "kept"


def test_a_full_filesystem_leaves_no_temp_file(tmp_path):
    """On a real, tiny tmpfs (mounting one needs root; elsewhere the two tests above cover it)."""
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)], capture_output=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root)")
    try:
        (small / "old.f16").write_bytes(b"old")
        with pytest.raises(OSError) as raised:
            persist._write_atomic(small / "old.f16", os.urandom(256 * 1024))
        assert raised.value.errno == errno.ENOSPC
        assert _leftovers(small) == []
        assert (small / "old.f16").read_bytes() == b"old"  # the previous file is untouched
    finally:
        subprocess.run(["umount", str(small)], check=False)
