"""Fixed glibc malloc thresholds for `engram serve` (docs/benchmarks.md#throughput, "RSS on uvloop").

The first index build of a space (from the store: after an import, or with no saved index) frees tens of
MiB that glibc keeps on the heap: by default its mmap threshold rises each time a large block is freed, so
later large buffers come from the heap, and the heap is only trimmed from its top. A fixed 128 KiB mmap and
trim threshold hands those blocks back instead: measured, 198 -> 160 MiB at 10k after a build (up to
307 -> 215 MiB at 100k), for no CPU per request beyond the noise. Capping malloc arenas
(MALLOC_ARENA_MAX=1) was measured too and returned only 6 MiB.

mallopt rather than the environment variables glibc reads at start-up, because engram cannot set its own
environment before it starts; it runs first thing in `engram serve` (and in each spawned child of
ENGRAM_PROCESSES). A value the user set in the environment wins: then nothing is changed. glibc only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import platform
from collections.abc import Mapping

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc malloc.h
THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value, kept fixed
USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def fix_malloc_thresholds(environ: Mapping[str, str] = os.environ) -> int | None:
    """Fix glibc's mmap and trim thresholds; the value applied, or None (not glibc, or set by the user)."""
    if any(name in environ for name in USER_VARIABLES):
        return None
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    for param in (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD):
        if libc.mallopt(param, THRESHOLD_BYTES) != 1:  # mallopt returns 1 on success
            log.warning(
                "mallopt(%d, %d) failed: glibc's malloc thresholds left as they are", param, THRESHOLD_BYTES
            )
            return None
    return THRESHOLD_BYTES


def log_malloc_thresholds(applied: int | None) -> None:
    """Said at start-up (logging is configured after the thresholds are set, which has to come first)."""
    if applied is not None:
        log.info("malloc mmap/trim thresholds fixed at %d bytes (mallopt)", applied)
