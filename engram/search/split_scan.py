"""Split scans: a lone exact search uses a core that would otherwise idle (docs/internals.md#split-scans).

A search runs on one worker thread, and FAISS scans one query on one thread, so at low load a search of an
exact index leaves the machine's other cores idle while its caller waits. When another search worker is
idle, nothing is queued and the machine has a core to spare, the worker running the search (the owner)
queues a helper for the idle worker, and both take the rows' ranges one at a time. Each range returns its
own top candidates (the same number the whole scan would), and the index re-scores their union exactly, as
it re-scores a whole scan's: the union holds every candidate the whole scan would have found, and what the
rows left out could score is the highest of the ranges' floors, so the hits are the same.

The owner never waits for a helper that has not started: a late helper takes fewer ranges, and one that
has not started when the ranges run out is claimed back (`Claimable`) and never runs, so a split costs at
most what the whole scan would, plus PARTS - 1 more FAISS calls. The owner always settles the helper
before it returns, even on error: the index may only change once no thread scans it (the caller's read
share covers both).
"""

from __future__ import annotations

import itertools
import os
import threading

import numpy as np

from engram.affinity import away_from_home, usable_cores
from engram.search.index import SpaceIndex
from engram.search.int8_rows import Candidates
from engram.workers import Claimable, WorkerPool

# The rows are cut into this many ranges, which the owner and the helper take one at a time: a helper that
# starts late takes fewer, and one that never starts leaves them all to the owner (no all-or-nothing wait).
PARTS = 4


class Ranges:
    """One scan's rows cut into PARTS ranges, scanned by whichever thread takes each first (`list.pop` is one
    atomic step under the GIL). Each range yields its own top `want` candidates."""

    __slots__ = ("_args", "_index", "_todo", "found")

    def __init__(self, index: SpaceIndex, q: np.ndarray, want: int, mask: np.ndarray | None):
        n = len(index)
        bounds = [n * part // PARTS for part in range(PARTS + 1)]
        self._todo = [(start, stop) for start, stop in itertools.pairwise(bounds) if stop > start][::-1]
        self._index, self._args = index, (q, want, mask)
        self.found: list[Candidates] = []

    def scan_all(self) -> None:
        """Scan ranges until none is left."""
        while True:
            try:
                rows = self._todo.pop()
            except IndexError:
                return
            self.found.append(self._index.scan(*self._args, rows))


class Helper(Claimable):
    """The queued half of a split scan: an idle worker takes ranges alongside the owner."""

    __slots__ = ("_done", "_ranges", "error")

    def __init__(self, ranges: Ranges):
        super().__init__()
        self._ranges = ranges
        self._done = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:  # on the worker that took it from the queue
        if not self.claim():
            return  # its owner finished every range first
        try:
            # In a pinned serving process the helper scans on the idle core, not beside its owner
            with away_from_home():
                self._ranges.scan_all()
        except BaseException as exc:  # noqa: BLE001 - raised again by the owner
            self.error = exc
        finally:
            self._done.set()

    def abandon(self) -> None:
        """The pool shut down before a worker took it: the owner scans its ranges."""

    def settle(self) -> bool:
        """The owner is done: the helper will not start, or has finished its last range. True if it never
        started."""
        if self.claim():
            return True
        self._done.wait()
        return False


class SplitScan:
    """A `Scan` (engram/search/index.py) over the running worker and an idle one; `ran` and `taken_back` tell
    the search's report whether it split, and whether the owner ended up scanning every range itself."""

    __slots__ = ("_index", "_pool", "ran", "taken_back")

    def __init__(self, pool: WorkerPool, index: SpaceIndex):
        self._pool, self._index = pool, index
        self.ran = self.taken_back = False

    def __call__(self, q: np.ndarray, want: int, mask: np.ndarray | None) -> Candidates:
        ranges = Ranges(self._index, q, want, mask)
        helper = Helper(ranges)
        try:
            self._pool.enqueue(helper)
        except RuntimeError:  # the pool is shutting down: scan it all here
            return self._index.scan(q, want, mask)
        self.ran = True
        try:
            ranges.scan_all()
        finally:  # even on error: no thread may be scanning the index once the search reports
            self.taken_back = helper.settle()
        if helper.error is not None:
            raise helper.error
        return Candidates.union(ranges.found)


def worth_splitting(
    pool: WorkerPool, index: SpaceIndex, min_rows: int, cores: int | None = None
) -> bool | None:
    """On the loop, as a search is queued: might its scan pay to split? Not below `min_rows` rows
    (`ENGRAM_SPLIT_MIN_ROWS`, 0: never; on smaller indexes the split's gain at the median is smaller than
    what it adds to the tail, and at 10k it loses outright, docs/benchmarks.md#split-scans), nor without
    an idle worker (False). Then True if the machine has a core to spare right now, the loop thread
    included (it is about to wait for the search); None if not: the worker that takes the search looks
    again (`split_scanner`)."""
    if not (0 < min_rows <= len(index) and pool.has_idle_worker()):
        return False
    return True if spare_core(cores) else None


def split_scanner(
    pool: WorkerPool, index: SpaceIndex, spare: bool | None, cores: int | None = None
) -> SplitScan | None:
    """On the worker about to run a search the loop found `worth_splitting` (`spare`: its verdict on the
    core): its split scan, if a worker is still idle and a core is free. Counting running threads catches
    passers-by (the loop thread finishing its turn, a kernel thread), so a core the loop did not see free is
    counted again here, where the one runner the count must include is this worker (measured at c=1, 100k:
    either count alone let 20-65 % of searches split, depending on the run; both, see
    docs/benchmarks.md#split-scans)."""
    if spare is False or not pool.has_idle_worker():
        return None
    return SplitScan(pool, index) if spare or spare_core(cores) else None


_loadavg_fd: int | None = None


def spare_core(cores: int | None = None) -> bool:
    """True when fewer threads run on the machine right now than this process has cores, the caller
    included (Linux's /proc/loadavg counts running threads at the moment of reading; ~2 us), so a helper
    would have a core of its own. Where that file is missing the pool's idle worker is the only hint."""
    global _loadavg_fd
    try:
        if _loadavg_fd is None:
            _loadavg_fd = os.open("/proc/loadavg", os.O_RDONLY)
        running = int(os.pread(_loadavg_fd, 64, 0).split()[3].partition(b"/")[0])
    except (OSError, ValueError, IndexError):
        return True
    return running < (cores or usable_cores())
