"""One glibc malloc arena for `engram serve` (docs/benchmarks.md#throughput, "RSS on uvloop").

glibc gives each thread that calls malloc an arena of its own, up to 8 per core. A server's threads (the
FAISS and store workers, libuv's pool under uvloop) each allocate while the first index loads, and the
memory the load frees stays cached in their arenas: a one-process uvloop server held +53 MiB at 10k
(+97 MiB at 100k) more than asyncio after its first load. Capping the arenas at one returns it, for a cost
in CPU per request that was within the noise (the table in docs/benchmarks.md): the hot threads spend
their time in FAISS and SQLite, not in malloc.

The cap must be set before a second thread allocates: glibc fixes its arena limit the first time it
needs one, so this runs first thing in `engram serve` (and in each child of ENGRAM_PROCESSES, a fresh
interpreter). The same limit as the environment variable `MALLOC_ARENA_MAX=1`, which glibc reads at
start-up; it is set through `mallopt` because engram cannot set its own environment before it starts.
A `MALLOC_ARENA_MAX` the user set wins: it is left alone. Only on glibc (musl and macOS have no such
arenas).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import platform
from collections.abc import Mapping

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # glibc malloc.h
SERVE_ARENAS = 1


def limit_malloc_arenas(environ: Mapping[str, str] = os.environ, arenas: int = SERVE_ARENAS) -> int | None:
    """Cap glibc's malloc arenas at `arenas`; the cap applied, or None when it was not (not glibc, or
    `MALLOC_ARENA_MAX` set by the user)."""
    if "MALLOC_ARENA_MAX" in environ:
        return None
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.mallopt(M_ARENA_MAX, arenas) != 1:  # mallopt returns 1 on success
        log.warning("mallopt(M_ARENA_MAX, %d) failed: malloc arenas left at glibc's default", arenas)
        return None
    return arenas


def log_malloc_arenas(applied: int | None, environ: Mapping[str, str] = os.environ) -> None:
    """Say at start-up which arena limit the server runs with (logging is configured after the cap is set,
    which has to come first)."""
    if applied is not None:
        log.info("malloc arenas capped at %d (mallopt M_ARENA_MAX)", applied)
    elif "MALLOC_ARENA_MAX" in environ:
        log.info("malloc arenas: MALLOC_ARENA_MAX=%s from the environment", environ["MALLOC_ARENA_MAX"])
