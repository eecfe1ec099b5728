"""Serving processes pinned to their share of the cores (engram/affinity.py): the shares, and what a pinned
process's threads run on. Pinning changes the calling process, so each check that pins runs in a fresh
interpreter of its own."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from engram import affinity
from engram.affinity import share_of


def test_the_shares_are_consecutive_slices_that_cover_every_core_once():
    assert [share_of(i, 2, [0, 1]) for i in range(2)] == [{0}, {1}]
    assert [share_of(i, 2, [4, 0, 3, 1, 2]) for i in range(2)] == [{0, 1}, {2, 3, 4}]
    shares = [share_of(i, 3, list(range(8))) for i in range(3)]
    assert all(shares) and sorted(c for share in shares for c in share) == list(range(8))
    assert [len(share) for share in shares] == [2, 3, 3]


@pytest.mark.parametrize(
    ("index", "processes", "cores"),
    [(0, 1, [0, 1]), (0, 3, [0, 1]), (2, 2, [0, 1]), (-1, 2, [0, 1])],
    ids=["one process", "fewer cores than processes", "no such process", "negative index"],
)
def test_no_share_where_a_process_would_not_get_a_core_of_its_own(index, processes, cores):
    assert share_of(index, processes, cores) is None


def _run(script: str) -> dict:
    """Run `script` in a fresh interpreter; it prints one JSON object, which is returned."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


PINNED = """
import json, os
import engram.affinity as affinity
import engram.cpu_quota

engram.cpu_quota.quota_cores = lambda: QUOTA  # as if the cgroup files said so
from engram.affinity import usable_cores
from engram.workers import WorkerPool

share = affinity.pin_process(1, 2)
searches = WorkerPool(1, name="search")
builds = WorkerPool(1, name="build", nice=10)
with affinity.away_from_home():
    away = os.sched_getaffinity(0)
print(json.dumps({
    "share": sorted(share) if share is not None else None,
    "main": sorted(os.sched_getaffinity(0)),
    "search_worker": sorted(searches.start(os.sched_getaffinity, 0).result()),
    "build_worker": sorted(builds.start(os.sched_getaffinity, 0).result()),
    "away": sorted(away),
    "usable_cores": usable_cores(),
}))
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning needs two cores to share out")
def test_a_pinned_process_keeps_searches_home_and_lets_builds_and_helpers_use_every_core():
    mask = sorted(os.sched_getaffinity(0))
    seen = _run(PINNED.replace("QUOTA", "None"))
    home = sorted(share_of(1, 2, mask) or ())
    assert seen["share"] == home and home != mask
    assert seen["main"] == seen["search_worker"] == home  # threads inherit the share
    assert seen["build_worker"] == mask  # the index build spreads over every core
    assert seen["away"] == mask  # a split scan's helper, while it scans
    assert seen["usable_cores"] == len(mask)  # counted as started: split scans still see the machine


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning needs two cores to share out")
def test_a_quota_below_the_cores_leaves_the_process_unpinned():
    mask = sorted(os.sched_getaffinity(0))
    seen = _run(PINNED.replace("QUOTA", str(len(mask) - 1.0)))
    assert seen["share"] is None
    assert seen["main"] == seen["search_worker"] == seen["build_worker"] == seen["away"] == mask


def test_an_unpinned_process_stays_where_it_is():
    seen = _run(
        """
        import json, os
        from engram.affinity import away_from_home, leave_home
        before = os.sched_getaffinity(0)
        with away_from_home():
            inside = os.sched_getaffinity(0)
        leave_home()
        print(json.dumps({"same": before == inside == os.sched_getaffinity(0)}))
        """
    )
    assert seen["same"]


def test_work_that_cannot_leave_home_runs_at_home(monkeypatch):
    """The cores a pinned process started with may be gone (a cpuset shrunk under it): the kernel refuses
    the wider mask, and the work runs where the thread is instead of failing."""
    here = os.sched_getaffinity(0)
    monkeypatch.setattr(affinity, "_before_pinning", frozenset({100_000}))  # no such CPU: EINVAL
    with affinity.away_from_home():
        inside = os.sched_getaffinity(0)
    affinity.leave_home()
    assert inside == here == os.sched_getaffinity(0)
