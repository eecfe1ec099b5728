"""Prometheus metrics on a separate listener (ENGRAM_METRICS_PORT), never on the public port.

Each app has its own registry (no process globals), so tests can run several apps side by side.
Labels are bounded: the XRPC method only when it is one of the lexicon's methods, else "other".

With several serving processes (engram/serving/processes.py) the parent sets prometheus_client's own
switch, PROMETHEUS_MULTIPROC_DIR, before spawning them: every process then keeps its values in files there,
and the one process that listens for scrapes answers with the sum over all of them
(docs/internals.md#using-every-core).
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from . import __version__

MULTIPROCESS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client reads it when it is imported


class Metrics:
    def __init__(self, methods: set[str]):
        self.registry = CollectorRegistry()
        self._methods = methods
        self.requests = Counter(
            "engram_http_requests_total",
            "HTTP requests by route and status",
            ["route", "status"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "engram_http_request_duration_seconds",
            "HTTP request duration by route",
            ["route"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
        )
        # multiprocess_mode only matters with several processes: how their values combine.
        self.in_flight = Gauge(
            "engram_http_requests_in_flight",
            "HTTP requests being served",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.index_bytes = Gauge(
            "engram_index_ram_bytes",
            "Approximate RAM held by loaded indexes (of the process answering the scrape)",
            registry=self.registry,
            multiprocess_mode="liveall",
        )
        build = Gauge(
            "engram_build_info",
            "engram version",
            ["version"],
            registry=self.registry,
            multiprocess_mode="max",
        )
        build.labels(__version__).set(1)

    def route(self, request: web.Request) -> str:
        path = request.path
        if path.startswith("/xrpc/"):
            nsid = path[len("/xrpc/") :]
            return nsid if nsid in self._methods or nsid == "_health" else "other"
        return path if path == "/.well-known/did.json" else "other"

    def middleware(self) -> Any:  # an aiohttp middleware
        # Label children looked up once per (route, status): `labels()` takes a lock and builds a key on
        # every call. Both label sets are bounded (the lexicon's methods, HTTP statuses).
        counted: dict[tuple[str, int], Any] = {}
        timed: dict[str, Any] = {}

        @web.middleware
        async def measure(request: web.Request, handler) -> web.StreamResponse:
            route = self.route(request)
            start = time.perf_counter()
            self.in_flight.inc()
            status = 500
            try:
                response = await handler(request)
                status = response.status
                return response
            finally:
                self.in_flight.dec()
                counter = counted.get((route, status))
                if counter is None:
                    counter = counted[route, status] = self.requests.labels(route, str(status))
                counter.inc()
                histogram = timed.get(route)
                if histogram is None:
                    histogram = timed[route] = self.duration.labels(route)
                histogram.observe(time.perf_counter() - start)

        return measure


class SnapshotCollector:
    """Index snapshot transfers (engram/search/snapshot_sync.py), read from the manager's plain counters at
    scrape time: the search layer stays free of Prometheus, and nothing is counted twice."""

    def __init__(self, index) -> None:
        self._index = index

    def collect(self):
        stats = self._index.snapshot_stats()
        if stats is None:
            return
        ops = CounterMetricFamily(
            "engram_index_snapshot_transfers", "Index snapshot uploads and downloads", labels=["op", "result"]
        )
        ops.add_metric(["upload", "ok"], stats.uploads)
        ops.add_metric(["upload", "failed"], stats.upload_failures)
        ops.add_metric(["download", "ok"], stats.downloads)
        ops.add_metric(["download", "failed"], stats.download_failures)
        ops.add_metric(["download", "rejected"], stats.rejected)
        moved = CounterMetricFamily(
            "engram_index_snapshot_bytes", "Bytes of index snapshots moved", labels=["op"]
        )
        moved.add_metric(["upload"], stats.bytes_uploaded)
        moved.add_metric(["download"], stats.bytes_downloaded)
        yield ops
        yield moved


class HitCacheCollector:
    """The search hit cache (engram/store/hit_cache.py): its plain counters, read at scrape time."""

    def __init__(self, cache) -> None:
        self._cache = cache

    def collect(self):
        lookups = CounterMetricFamily(
            "engram_search_hit_cache_lookups", "Search hits looked up in the hit cache", labels=["result"]
        )
        lookups.add_metric(["hit"], self._cache.hits)
        lookups.add_metric(["miss"], self._cache.misses)
        held = GaugeMetricFamily("engram_search_hit_cache_bytes", "Estimated bytes the hit cache holds")
        held.add_metric([], self._cache.bytes)
        yield lookups
        yield held


class SearchBatchCollector:
    """Search batches (engram/search/search_job.py, docs/internals.md#batched-scans): the index manager's
    plain counters, read at scrape time. Searches per batched scan = searches{run="scan"} / scans."""

    def __init__(self, index) -> None:
        self._index = index

    def collect(self):
        stats = self._index.batch_stats
        scans = CounterMetricFamily(
            "engram_search_batched_scans", "Batched exact scans run (several searches each)"
        )
        scans.add_metric([], stats.scans)
        searches = CounterMetricFamily(
            "engram_search_batch_searches",
            "Unfiltered exact searches by how they ran: in a batched scan, or one by one (batch below 4)",
            labels=["run"],
        )
        searches.add_metric(["scan"], stats.scanned)
        searches.add_metric(["alone"], stats.alone)
        split = CounterMetricFamily(
            "engram_search_split_scans",
            "Lone exact searches whose scan was split over an idle worker (docs/internals.md#split-scans)",
            labels=["second_half"],
        )
        split.add_metric(["worker"], stats.split - stats.taken_back)
        split.add_metric(["taken_back"], stats.taken_back)
        yield scans
        yield searches
        yield split


def _exposition(metrics: Metrics, *local_collectors) -> bytes:
    shared = os.environ.get(MULTIPROCESS_DIR_ENV)
    if not shared:
        return generate_latest(metrics.registry)
    every_process = CollectorRegistry()
    MultiProcessCollector(every_process, path=shared)
    # Collectors that read this process's own objects at scrape time (snapshot transfers) cannot be summed
    # through the multiprocess files: with several processes they report the process serving /metrics.
    for collector in local_collectors:
        every_process.register(collector)
    return generate_latest(every_process)


@asynccontextmanager
async def serve_metrics(
    metrics: Metrics, host: str, port: int, index=None, hit_cache=None
) -> AsyncIterator[int]:
    """Serve GET /metrics on host:port (port 0 picks a free one); yields the bound port."""

    async def scrape(request: web.Request) -> web.Response:
        if index is not None:
            metrics.index_bytes.set(index.loaded_bytes())
        return web.Response(body=_exposition(metrics, *local), headers={"Content-Type": CONTENT_TYPE_LATEST})

    local = [SnapshotCollector(index), SearchBatchCollector(index)] if index is not None else []
    local += [HitCacheCollector(hit_cache)] if hit_cache is not None else []
    for collector in local:
        metrics.registry.register(collector)
    app = web.Application()
    app.router.add_get("/metrics", scrape)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]
    finally:
        await runner.cleanup()
        for collector in local:
            metrics.registry.unregister(collector)
