"""A cgroup CPU quota caps the cores engram sizes itself by (engram/cpu_quota.py): the files are the
kernel's format, laid out in a scratch directory the way a container sees them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engram import affinity
from engram.cpu_quota import quota_cores


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _v2(tmp_path: Path, files: dict[str, str], membership: str = "0::/\n") -> float | None:
    root = tmp_path / "cgroup"
    _write(root / "cgroup.controllers", "cpuset cpu io memory pids\n")
    for name, text in files.items():
        _write(root / name, text)
    _write(tmp_path / "self-cgroup", membership)
    return quota_cores(root, tmp_path / "self-cgroup")


def test_cgroup_v2_quota_in_cores(tmp_path):
    assert _v2(tmp_path, {"cpu.max": "200000 100000\n"}) == 2.0  # docker run --cpus 2
    assert _v2(tmp_path / "b", {"cpu.max": "150000 100000\n"}) == 1.5


def test_cgroup_v2_without_a_quota_is_none(tmp_path):
    assert _v2(tmp_path, {"cpu.max": "max 100000\n"}) is None
    assert _v2(tmp_path / "b", {}) is None  # the root cgroup has no cpu.max at all


def test_the_tightest_quota_on_the_path_up_counts(tmp_path):
    files = {
        "kubepods/cpu.max": "400000 100000\n",
        "kubepods/pod1/cpu.max": "max 100000\n",
        "kubepods/pod1/app/cpu.max": "300000 100000\n",
    }
    assert _v2(tmp_path, files, "0::/kubepods/pod1/app\n") == 3.0
    files["kubepods/cpu.max"] = "100000 100000\n"  # the parent allows one core: the child cannot use more
    assert _v2(tmp_path / "b", files, "0::/kubepods/pod1/app\n") == 1.0


def test_a_path_the_container_does_not_see_falls_back_to_its_mount(tmp_path):
    # /proc/self/cgroup names the host's path; the container's cgroup namespace mounts it at the root.
    assert _v2(tmp_path, {"cpu.max": "250000 100000\n"}, "0::/system.slice/docker-abc.scope\n") == 2.5


def test_cgroup_v1_cfs_quota(tmp_path):
    root = tmp_path / "cgroup"
    _write(root / "cpu,cpuacct" / "cpu.cfs_quota_us", "300000\n")
    _write(root / "cpu,cpuacct" / "cpu.cfs_period_us", "100000\n")
    _write(root / "memory" / "memory.limit_in_bytes", "1\n")
    _write(tmp_path / "self-cgroup", "12:memory:/\n4:cpu,cpuacct:/\n1:name=systemd:/\n")
    assert quota_cores(root, tmp_path / "self-cgroup") == 3.0
    (root / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("-1\n")
    assert quota_cores(root, tmp_path / "self-cgroup") is None


@pytest.mark.parametrize("text", ["", "garbage\n", "0::/\n"])
def test_nothing_readable_is_no_quota(tmp_path, text):
    _write(tmp_path / "self-cgroup", text)
    assert quota_cores(tmp_path / "missing", tmp_path / "self-cgroup") is None
    assert quota_cores(tmp_path, tmp_path / "no-such-file") is None


def test_usable_cores_is_the_mask_capped_by_the_quota(monkeypatch):
    cores = {0, 1, 2, 3, 4, 5, 6, 7}
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: cores)

    def usable(quota):
        monkeypatch.setattr("engram.cpu_quota.quota_cores", lambda: quota)
        affinity.usable_cores.cache_clear()
        return affinity.usable_cores()

    try:
        assert usable(None) == 8
        assert usable(2.0) == 2
        assert usable(2.5) == 2  # whole cores, rounded down
        assert usable(0.5) == 1  # never none
        assert usable(32.0) == 8  # a quota above the mask changes nothing
    finally:
        affinity.usable_cores.cache_clear()
