"""The cores this process may use (`usable_cores`), and serving processes pinned to cores of their own
(docs/internals.md#using-every-core, "How many." and "Where they run.").

With `ENGRAM_PROCESSES` at one per core, every search hands its scan from the process's event loop thread to a
worker thread and back. When the kernel runs the two on different cores, each hand-off wakes the other
core and moves the search's data between caches: measured here, 111-121 us a round trip across two vCPUs
against 15-16 us with both threads on one core (docs/benchmarks.md#one-core-per-serving-process). So each
serving process takes its share of the cores it may use, and its threads (which inherit the affinity they
are started with) stay together.

Two kinds of work want the other cores and leave home for them: an HNSW build, which spreads over every
core at a lower priority (`leave_home`, engram/workers.py), and the helper half of a split scan, which only
runs when a core is idle (`away_from_home`, engram/search/split_scan.py).

Pinning is skipped where it cannot give each process a core of its own (fewer cores than processes) or
where a cgroup quota, not the cores, bounds the CPU (a container's `--cpus` below its mask): there a share
of several cores is no closer than the whole mask.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Iterator

log = logging.getLogger(__name__)

# The affinity this process had before it pinned itself: what `away_from_home` widens a thread to, and what
# `usable_cores` counts. None while the process is not pinned.
_before_pinning: frozenset[int] | None = None


def started_mask() -> frozenset[int]:
    """The cores this process may run on, as it was started (before any pinning)."""
    if _before_pinning is not None:
        return _before_pinning
    return frozenset(os.sched_getaffinity(0))


@functools.cache  # read once: a split scan's check asks on every large search (engram/search/split_scan.py)
def usable_cores() -> int:
    """Cores this process may use: its CPU affinity (a cpuset or `taskset` limit), not the machine's count,
    and no more than a cgroup CPU quota allows (a container's `--cpus`, a Kubernetes CPU limit: whole cores,
    rounded down, at least one; engram/cpu_quota.py), so `ENGRAM_PROCESSES`' default never starts
    more servers than there are cores to run them."""
    from .cpu_quota import quota_cores  # looked up per call, so a test can stand in for the cgroup files

    # The mask as the process started: a serving process pinned to its own core still runs split scans'
    # helpers and index builds on the others.
    try:
        mask = max(1, len(started_mask()))
    except AttributeError:  # no sched_getaffinity (macOS)
        mask = os.cpu_count() or 1
    quota = quota_cores()
    return mask if quota is None else max(1, min(mask, int(quota)))


def share_of(index: int, processes: int, cores: list[int]) -> frozenset[int] | None:
    """Serving process `index`'s share of `cores`: consecutive slices as even as they come (5 cores over 2
    processes: 2 and 3). None when there are fewer cores than processes: no share would be a core of its
    own, so they all share every core."""
    if processes < 2 or len(cores) < processes or not 0 <= index < processes:
        return None
    ordered = sorted(cores)
    return frozenset(ordered[len(ordered) * index // processes : len(ordered) * (index + 1) // processes])


def pin_process(index: int, processes: int) -> frozenset[int] | None:
    """Pin this process (its calling thread, before it starts any other) to its share of the cores; the
    share, or None when it stays where it was (see the module's docstring)."""
    global _before_pinning
    try:
        mask = frozenset(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity (macOS): nothing to pin with
        return None
    if usable_cores() < len(mask):  # a cgroup quota, not the cores, bounds the CPU
        return None
    share = share_of(index, processes, list(mask))
    if share is None:
        return None
    try:
        os.sched_setaffinity(0, share)
    except OSError as exc:  # a sandbox may forbid it: the process serves on every core, as unpinned
        log.warning("could not pin serving process %d to cores %s: %s", index, sorted(share), exc)
        return None
    _before_pinning = mask
    return share


@contextlib.contextmanager
def away_from_home() -> Iterator[None]:
    """Let the calling thread run on every core the process was started with, then bring it home again. A
    no-op in a process that is not pinned."""
    wide = _before_pinning
    if wide is None:
        yield
        return
    home = frozenset(os.sched_getaffinity(0))
    try:
        os.sched_setaffinity(0, wide)
    except OSError:  # the cores changed under the process (a cpuset shrunk): the work runs at home
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, home)


def leave_home() -> None:
    """Let the calling thread run on every core the process was started with, for good (a thread that
    only ever does work that wants them: the index build's)."""
    if _before_pinning is not None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, _before_pinning)
