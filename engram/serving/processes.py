"""`ENGRAM_PROCESSES`: several serving processes on one port over one data directory
(docs/internals.md#using-every-core).

One engram process serialises its requests' Python on the GIL. With N processes each opens the same data
directory (SQLite in WAL mode takes several processes; a write reaches every process's index through the
space's store generation, which every search compares), and each binds the same port with SO_REUSEPORT so
the kernel spreads connections over them.

- The data directory is prepared once, in the parent, before any child starts: engram's key is created and
  the migrations run exactly once (N processes racing to create a key would each make a different one).
- Children are spawned, not forked: the parent has run SQLite and maybe thread pools, which a fork would
  copy in an unknown state.
- Rate limits: each process keeps its own token buckets with 1/N of the configured rate and burst, so the
  sum over processes is the configured budget whichever process a connection reaches. The connection cap
  and the index RAM budget are divided the same way.
- Only the first process serves metrics (one port), summed over every process through prometheus_client's
  multiprocess files in a temporary directory the parent owns (engram/metrics.py).
- Only the first process runs the sync poll loop: N processes polling every synced space would pull each
  one N times, concurrently. Every process answers notifications and admin calls.
- Each process runs on its own share of the cores (`ENGRAM_PIN_PROCESSES`, engram/affinity.py): a search's
  hand-off between its loop and worker threads then stays on one core.
- SIGINT/SIGTERM to the parent is passed to every child (each shuts down gracefully, saving its indexes);
  if one child dies, the others are stopped and the parent exits non-zero.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import multiprocessing
import os
import signal
import tempfile
from dataclasses import replace
from typing import Any

from ..config import Settings

log = logging.getLogger(__name__)


def settings_for_process(settings: Settings, index: int) -> Settings:
    """One process's share of the limits that must hold across all of them."""
    n = settings.processes
    return replace(
        settings,
        search_rate=settings.search_rate / n,
        search_burst=max(1, math.ceil(settings.search_burst / n)),
        text_search_rate=settings.text_search_rate / n,
        text_search_burst=max(1, math.ceil(settings.text_search_burst / n)),
        key_text_search_rate=settings.key_text_search_rate / n,
        key_text_search_burst=max(1, math.ceil(settings.key_text_search_burst / n)),
        max_connections=max(1, settings.max_connections // n),
        # Each process holds its own copy of every index it loads, so each gets 1/N of the RAM budget and
        # the total stays what was configured (the index in use is never evicted, so any space still loads).
        ram_bytes=max(1, settings.ram_bytes // n),
        hit_cache_bytes=settings.hit_cache_bytes // n,
        metrics_port=settings.metrics_port if index == 0 else 0,
        process_index=index,
    )


async def _prepare(settings: Settings) -> None:
    from ..lifecycle import open_context

    async with open_context(settings, network=False, embedder=False):
        pass  # opening creates engram's key and migrates the database; closing leaves both on disk


def _child(settings: Settings, index: int, access_log_class: Any) -> None:
    from ..affinity import pin_process

    # First, before any thread starts: the threads this process starts inherit the share (engram/affinity.py)
    cores = pin_process(index, settings.processes) if settings.pin_processes else None
    from .malloc_thresholds import fix_malloc_thresholds, log_malloc_thresholds

    thresholds = fix_malloc_thresholds()  # a spawned child is a fresh interpreter: glibc's defaults again
    from ..app import create_app
    from ..logs import configure_logging
    from .runner import run_server

    configure_logging(settings.log_level, batched=True)
    log_malloc_thresholds(thresholds)
    if cores is not None:
        log.info("serving process %d runs on cores %s", index, ",".join(map(str, sorted(cores))))
    mine = settings_for_process(settings, index)
    run_server(functools.partial(create_app, mine), mine, access_log_class=access_log_class, reuse_port=True)


def serve_processes(settings: Settings, *, access_log_class: Any) -> int:
    asyncio.run(_prepare(settings))
    from ..metrics import MULTIPROCESS_DIR_ENV

    with tempfile.TemporaryDirectory(prefix="engram-metrics-") as metrics_dir:
        # Spawned children inherit the environment: their metrics go to files here (engram/metrics.py).
        os.environ[MULTIPROCESS_DIR_ENV] = metrics_dir
        return _run_children(settings, access_log_class)


def _run_children(settings: Settings, access_log_class: Any) -> int:
    spawn = multiprocessing.get_context("spawn")
    children = [
        spawn.Process(target=_child, args=(settings, i, access_log_class), name=f"engram-{i}")
        for i in range(settings.processes)
    ]
    for child in children:
        child.start()
    log.info("engram serving with %d processes on port %d", len(children), settings.port)
    stopping = False

    def stop(signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True
        for child in children:
            if child.is_alive():
                child.terminate()  # SIGTERM: the child's runner shuts down gracefully

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    failed = False
    try:
        while any(child.is_alive() for child in children):
            for child in children:
                child.join(timeout=0.5)
                if child.exitcode not in (None, 0) and not stopping:
                    log.error(
                        "serving process %s exited with %s; stopping the others", child.name, child.exitcode
                    )
                    failed = True
                    stop(signal.SIGTERM, None)
    finally:
        for child in children:
            child.join()
    return 1 if failed else 0
