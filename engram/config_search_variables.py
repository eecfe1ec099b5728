"""The variables of the work a request does: the CPU pool, the index manager, search and text-search
limits, the embedders and the metrics listener.

A prefix of `Settings`' fields (engram/config_variables.py): `Settings` inherits them first, so the README
table's order holds. How a variable is declared: engram/config_fields.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config_fields import as_embedder, real, var, whole
from .config_service_variables import ServiceVariables
from .config_values import as_bool, as_dids


@dataclass(frozen=True)
class SearchVariables(ServiceVariables):
    """`ENGRAM_*` variables of searching and embedding (after `ServiceVariables`' in the README table)."""

    workers: int = var(
        "ENGRAM_WORKERS",
        "2",
        whole(1, 256),
        "Threads in the CPU pool for FAISS and ONNX (each uses one core).",
    )
    load_workers: int = var(
        "ENGRAM_LOAD_WORKERS",
        "1",
        whole(1, 64),
        "Threads that load index files, build exact-sized indexes and save them (HNSW builds have a thread of"
        " their own). More load faster but hold the GIL against warm searches (docs/benchmarks.md).",
    )
    exact_max: int = var(
        "ENGRAM_EXACT_MAX",
        "200000",
        whole(0),
        "Spaces up to this many vectors are searched exactly.",
    )
    split_min_rows: int = var(
        "ENGRAM_SPLIT_MIN_ROWS",
        "120000",
        whole(0),
        "An exact search of at least this many vectors splits its scan over an idle worker when a core is "
        "free (docs/internals.md#split-scans); 0 never splits.",
    )
    ram_bytes: int = var(
        "ENGRAM_RAM_BYTES",
        "8589934592",
        whole(1),
        "Memory budget for loaded indexes; idle spaces are evicted. Split between the serving processes.",
    )
    rerank_deadline_ms: int = var(
        "ENGRAM_RERANK_DEADLINE_MS",
        "250",
        whole(0, 10_000),
        "Exact re-rank deadline; past it results are `approximate`.",
    )
    load_wait_ms: int = var(
        "ENGRAM_LOAD_WAIT_MS",
        "2000",
        whole(0, 10_000),
        "How long a search waits for a loading index before 503 IndexLoading.",
    )
    search_rate: float = var(
        "ENGRAM_SEARCH_RATE",
        "50",
        real(0.0),
        "Searches per second per space (token bucket rate; 0 = unlimited).",
    )
    search_burst: int = var(
        "ENGRAM_SEARCH_BURST",
        "100",
        whole(1),
        "Search token bucket burst per space.",
    )
    search_concurrency: int = var(
        "ENGRAM_SEARCH_CONCURRENCY",
        "8",
        whole(1),
        "Searches in flight per space.",
    )
    search_wait_ms: int = var(
        "ENGRAM_SEARCH_WAIT_MS",
        "1000",
        whole(0, 60_000),
        "How long a search past ENGRAM_SEARCH_CONCURRENCY waits for a slot before 429 (4 x that many may "
        "wait).",
    )
    hit_cache_bytes: int = var(
        "ENGRAM_HIT_CACHE_BYTES",
        "33554432",
        whole(0),
        "Memory for recently returned search hits, kept hydrated (0 = off). Split between the serving "
        "processes.",
    )
    embedder: str = var(
        "ENGRAM_EMBEDDER",
        "builtin,multilingual",
        as_embedder,
        "builtin, multilingual, onnx:<dir>, sentence-transformers:<dir>, hashing[:dims] or none; several "
        "joined by commas are all hosted, the first is new spaces' default (docs/embedders.md).",
        blank=True,
    )
    text_search: bool = var(
        "ENGRAM_TEXT_SEARCH",
        "1",
        as_bool,
        "`0` turns off embedding of `q` (callers must send vectors).",
        blank=True,
    )
    text_search_authorities: frozenset[str] = var(
        "ENGRAM_TEXT_SEARCH_AUTHORITIES",
        "",
        as_dids,
        "Comma-separated authority DIDs allowed text search (empty = all).",
    )
    text_search_rate: float = var(
        "ENGRAM_TEXT_SEARCH_RATE",
        "2",
        real(0.0),
        "Text searches per second per space authority (per space for spaces hosted under engram's own DID).",
    )
    text_search_burst: int = var(
        "ENGRAM_TEXT_SEARCH_BURST",
        "20",
        whole(1),
        "Text search burst per space authority.",
    )
    embed_concurrency: int = var(
        "ENGRAM_EMBED_CONCURRENCY",
        "4",
        whole(1),
        "Query embeddings in flight; beyond it queries wait their turn.",
    )
    embed_queue: int = var(
        "ENGRAM_EMBED_QUEUE",
        "64",
        whole(0),
        "Queries waiting for an embedding slot, taken in turn per caller; beyond it 503 EmbedderBusy (the "
        "caller with the most waiting gives way first).",
    )
    embed_wait_ms: int = var(
        "ENGRAM_EMBED_WAIT_MS",
        "2000",
        whole(0, 60_000),
        "How long a query waits for an embedding slot before 503 EmbedderBusy.",
    )
    key_text_search_rate: float = var(
        "ENGRAM_KEY_TEXT_SEARCH_RATE",
        "10",
        real(0.0),
        "Text searches per second per API key (MCP `recall`), instead of the space authority's budget.",
    )
    key_text_search_burst: int = var(
        "ENGRAM_KEY_TEXT_SEARCH_BURST",
        "200",
        whole(1),
        "Text search burst per API key.",
    )
    metrics_port: int = var(
        "ENGRAM_METRICS_PORT",
        "0",
        whole(0, 65535),
        "Port for Prometheus `/metrics` on the same host (0 = off).",
    )
