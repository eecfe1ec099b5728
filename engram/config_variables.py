"""The declared environment: one `Variable` row per ``ENGRAM_*`` variable, with its default as a user would
write it and its help text. `engram.config` refuses any ``ENGRAM_*`` name not declared here, and the README's
configuration table is checked against these rows (tests/app/test_config.py); `engram.config` parses them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variable:
    name: str
    default: str | None
    help: str


# Order is the README table's order. Defaults are strings exactly as a user would write them.
VARIABLES: tuple[Variable, ...] = (
    Variable("ENGRAM_HOST", "127.0.0.1", "Address to listen on (`0.0.0.0` in the Docker image)."),
    Variable("ENGRAM_PORT", "8080", "TCP port to listen on."),
    Variable("ENGRAM_DATA_DIR", "./engram-data", "SQLite database, index files and keys live here."),
    Variable("ENGRAM_PUBLIC_URL", None, "URL clients reach engram at. Default `http://localhost:<port>`."),
    Variable(
        "ENGRAM_SERVICE_DID",
        None,
        "engram's DID (the audience of reader signatures). Default: did:web of the public URL's host.",
    ),
    Variable(
        "ENGRAM_SIGNING_KEY",
        None,
        "engram's private key as a multibase private Multikey (`z...`, P-256 or secp256k1; "
        "`engram keygen` prints one). Default: generated in the data dir.",
    ),
    Variable(
        "ENGRAM_DEV",
        "0",
        "`1` allows outbound requests to internal addresses and over plain http (did:web on localhost, "
        "fake PDSes); nothing else. Never in production (docs/security.md#outbound-requests).",
    ),
    Variable(
        "ENGRAM_OUTBOUND_ALLOW",
        "",
        "Comma-separated networks (`10.0.0.0/8`, `127.0.0.1`) engram may send requests to although they are "
        "internal (an internal PLC mirror). Empty: public addresses only (docs/security.md#outbound-requests).",
    ),
    Variable("ENGRAM_LOG_LEVEL", "info", "debug, info, warning or error. Logs are JSON lines on stderr."),
    Variable("ENGRAM_PLC_URL", "https://plc.directory", "PLC directory used to resolve did:plc."),
    Variable("ENGRAM_ADMIN_DIDS", "", "Comma-separated DIDs allowed to call the remote admin methods."),
    Variable("ENGRAM_MAX_BODY_BYTES", "16777216", "Largest request body accepted (413 beyond)."),
    Variable("ENGRAM_WORKERS", "2", "Threads in the CPU pool for FAISS and ONNX (each uses one core)."),
    Variable(
        "ENGRAM_LOAD_WORKERS",
        "1",
        "Threads that load index files, build exact-sized indexes and save them (HNSW builds have a thread of"
        " their own). More load faster but hold the GIL against warm searches (docs/benchmarks.md).",
    ),
    Variable("ENGRAM_EXACT_MAX", "200000", "Spaces up to this many vectors are searched exactly."),
    Variable(
        "ENGRAM_SPLIT_MIN_ROWS",
        "50000",
        "An exact search of at least this many vectors splits its scan over an idle worker when a core is"
        " free (docs/internals.md#split-scans); 0 never splits.",
    ),
    Variable(
        "ENGRAM_RAM_BYTES",
        "8589934592",
        "Memory budget for loaded indexes; idle spaces are evicted. Split between the serving processes.",
    ),
    Variable(
        "ENGRAM_RERANK_DEADLINE_MS", "250", "Exact re-rank deadline; past it results are `approximate`."
    ),
    Variable(
        "ENGRAM_LOAD_WAIT_MS", "2000", "How long a search waits for a loading index before 503 IndexLoading."
    ),
    Variable("ENGRAM_SEARCH_RATE", "50", "Searches per second per space (token bucket rate; 0 = unlimited)."),
    Variable("ENGRAM_SEARCH_BURST", "100", "Search token bucket burst per space."),
    Variable("ENGRAM_SEARCH_CONCURRENCY", "8", "Searches in flight per space."),
    Variable(
        "ENGRAM_SEARCH_WAIT_MS",
        "1000",
        "How long a search past ENGRAM_SEARCH_CONCURRENCY waits for a slot before 429 (4 x that many may wait).",
    ),
    Variable(
        "ENGRAM_HIT_CACHE_BYTES",
        "33554432",
        "Memory for recently returned search hits, kept hydrated (0 = off). Split between the serving processes.",
    ),
    Variable(
        "ENGRAM_EMBEDDER",
        "builtin,multilingual",
        "builtin, multilingual, onnx:<dir>, sentence-transformers:<dir>, hashing[:dims] or none; several "
        "joined by commas are all hosted, the first is new spaces' default (docs/embedders.md).",
    ),
    Variable("ENGRAM_TEXT_SEARCH", "1", "`0` turns off embedding of `q` (callers must send vectors)."),
    Variable(
        "ENGRAM_TEXT_SEARCH_AUTHORITIES",
        "",
        "Comma-separated authority DIDs allowed text search (empty = all).",
    ),
    Variable(
        "ENGRAM_TEXT_SEARCH_RATE",
        "2",
        "Text searches per second per space authority (per space for spaces hosted under engram's own DID).",
    ),
    Variable("ENGRAM_TEXT_SEARCH_BURST", "20", "Text search burst per space authority."),
    Variable(
        "ENGRAM_EMBED_CONCURRENCY", "4", "Query embeddings in flight; beyond it queries wait their turn."
    ),
    Variable(
        "ENGRAM_EMBED_QUEUE",
        "64",
        "Queries waiting for an embedding slot, taken in turn per caller; beyond it 503 EmbedderBusy "
        "(the caller with the most waiting gives way first).",
    ),
    Variable(
        "ENGRAM_EMBED_WAIT_MS",
        "2000",
        "How long a query waits for an embedding slot before 503 EmbedderBusy.",
    ),
    Variable(
        "ENGRAM_KEY_TEXT_SEARCH_RATE",
        "10",
        "Text searches per second per API key (MCP `recall`), instead of the space authority's budget.",
    ),
    Variable("ENGRAM_KEY_TEXT_SEARCH_BURST", "200", "Text search burst per API key."),
    Variable("ENGRAM_METRICS_PORT", "0", "Port for Prometheus `/metrics` on the same host (0 = off)."),
    # HTTP server limits against slow or hostile clients (engram/serving).
    Variable(
        "ENGRAM_HEADER_TIMEOUT_MS",
        "10000",
        "A client must send a request's line and headers within this long, or the connection is closed.",
    ),
    Variable(
        "ENGRAM_BODY_TIMEOUT_MS",
        "60000",
        "A request body must arrive within this long after its headers (408 RequestTimeout beyond).",
    ),
    Variable(
        "ENGRAM_KEEPALIVE_TIMEOUT_MS", "75000", "An idle keep-alive connection is closed after this long."
    ),
    Variable(
        "ENGRAM_MAX_CONNECTIONS",
        "512",
        "Open client connections; beyond it new ones get 503 and are closed. Keep below `ulimit -n`.",
    ),
    # engram as space host of its hosted spaces (docs/space-host.md)
    Variable(
        "ENGRAM_CREDENTIAL_TTL",
        "600",
        "Lifetime in seconds of the space credentials `getSpaceCredential` issues (1-3600).",
    ),
    # synced spaces (engram/sync)
    Variable(
        "ENGRAM_POLL_INTERVAL",
        "300",
        "Seconds between full syncs of each synced space (0 = off; notifications only).",
    ),
    Variable("ENGRAM_SYNC_CONCURRENCY", "4", "Repo syncs in flight on this node, over all synced spaces."),
    Variable("ENGRAM_SYNC_SPACE_CONCURRENCY", "2", "Repo syncs in flight per synced space."),
    Variable(
        "ENGRAM_SYNC_TIMEOUT", "30", "Seconds allowed for one request to a PDS or space host while syncing."
    ),
    Variable(
        "ENGRAM_LIMIT_MEMORIES",
        "0",
        "Most memories a synced space may hold; writes beyond wait (0 = no limit).",
    ),
    Variable("ENGRAM_LIMIT_BYTES", "0", "Most text+source bytes a synced space may hold (0 = no limit)."),
    # MCP at /mcp (docs/mcp.md)
    Variable(
        "ENGRAM_MCP_ALLOWED_ORIGINS",
        "",
        "Comma-separated origins (`https://host[:port]`) whose pages and Host headers /mcp accepts besides "
        "the public URL's and loopback's.",
    ),
    Variable("ENGRAM_MCP_SESSIONS", "10000", "MCP sessions open at once, over every key."),
    Variable(
        "ENGRAM_MCP_SESSIONS_PER_KEY", "64", "MCP sessions one API key may hold; its oldest ends first."
    ),
    Variable("ENGRAM_MCP_SESSION_IDLE_S", "900", "An MCP session unused this many seconds ends."),
    # throughput (docs/internals.md#using-every-core)
    Variable(
        "ENGRAM_VALIDATE_OUTPUT",
        "0",
        "`1`: check every XRPC answer against its lexicon (tests, debugging). `0`: check the first answer "
        "of each method only, then trust the presenters.",
    ),
    Variable(
        "ENGRAM_PROCESSES",
        None,
        "Serving processes on one port (SO_REUSEPORT) over the same data directory; rate limits and the "
        "connection cap are split between them. Default: the number of cores this process may run on. "
        "See docs/internals.md#using-every-core.",
    ),
    Variable(
        "ENGRAM_EVENT_LOOP",
        None,
        "`uvloop` or `asyncio`: the event loop `engram serve` runs on. Default: uvloop where it is installed "
        "(a dependency on Linux), else asyncio. See docs/benchmarks.md#throughput.",
    ),
    Variable(
        "ENGRAM_BUILD_THREADS",
        None,
        "OpenMP threads an HNSW index build may use, at a lower priority than searches. Default: the "
        "number of cores this process may run on.",
    ),
    # -- store backend (docs/scale-out.md#the-store-on-postgresql) --
    Variable(
        "ENGRAM_DATABASE_URL",
        None,
        "`postgresql://user@host:port/db`: keep the store in PostgreSQL instead of SQLite in the data dir "
        "(index files and keys stay in the data dir). Unset: SQLite.",
    ),
    # cluster: several nodes over one PostgreSQL store (engram/cluster, docs/scale-out.md)
    Variable(
        "ENGRAM_NODE_URL",
        None,
        "This node's base URL as its peers reach it. With a PostgreSQL store, turns on cluster mode.",
    ),
    Variable(
        "ENGRAM_NODE_ID", None, "This node's stable name in the cluster. Default: the node URL's host:port."
    ),
    Variable("ENGRAM_HEARTBEAT_MS", "2000", "How often a node renews its registration and its space leases."),
    Variable(
        "ENGRAM_LEASE_TIMEOUT_MS",
        "10000",
        "A node silent this long is dead: its space leases lapse and its spaces move. Several heartbeats.",
    ),
    # index snapshots in a shared object store (docs/scale-out.md#index-snapshots)
    Variable(
        "ENGRAM_INDEX_STORE",
        None,
        "`file:///abs/dir` or `s3://bucket/prefix`: share index snapshots between nodes (a node loads the "
        "newest snapshot plus the store's delta instead of rebuilding). Unset: index files stay in the data dir.",
    ),
    Variable(
        "ENGRAM_S3_ENDPOINT_URL",
        None,
        "Endpoint of an S3-compatible server for `s3://` index stores (credentials and region: the "
        "standard `AWS_*` variables).",
    ),
)
