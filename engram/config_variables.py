"""The declared environment: `Settings`, one field per ``ENGRAM_*`` variable, each declared once by `var`
with its name, its default as a user would write it, its parser and its help text.

The typed field and its default, `engram.config.read_env`'s parsing, the unknown-variable check
(`VARIABLES`) and the README table (tests/app/test_config.py) all come from them; components get frozen
sections (engram/config_sections.py). How a variable is declared: engram/config_fields.py.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from ipaddress import IPv4Network, IPv6Network
from pathlib import Path

from .affinity import usable_cores
from .config_fields import (
    Variable,
    as_data_dir,
    as_embedder,
    as_event_loop,
    as_log_level,
    as_node_url,
    as_signing_key,
    real,
    text,
    var,
    whole,
)
from .config_sections import (
    ClusterConfig,
    McpConfig,
    SearchConfig,
    ServingConfig,
    SyncConfig,
    section_of,
)
from .config_values import (
    as_bool,
    as_database_url,
    as_dids,
    as_index_store,
    as_networks,
    as_origins,
    as_url,
)
from .serving.event_loop import default_event_loop


@dataclass(frozen=True)
class Settings:
    # Order is the README table's order.
    host: str = var(
        "ENGRAM_HOST",
        "127.0.0.1",
        text,
        "Address to listen on (`0.0.0.0` in the Docker image).",
        blank=True,
    )
    port: int = var(
        "ENGRAM_PORT",
        "8080",
        whole(0, 65535),
        "TCP port to listen on.",
    )
    data_dir: Path = var(  # noqa: RUF009 (a Path is immutable)
        "ENGRAM_DATA_DIR",
        "./engram-data",
        as_data_dir,
        "SQLite database, index files and keys live here.",
        blank=True,
    )
    public_url: str = var(
        "ENGRAM_PUBLIC_URL",
        None,
        None,
        "URL clients reach engram at. Default `http://localhost:<port>`.",
        value="http://localhost:8080",
    )
    service_did: str = var(
        "ENGRAM_SERVICE_DID",
        None,
        None,
        "engram's DID (the audience of reader signatures). Default: did:web of the public URL's host.",
        value="did:web:localhost%3A8080",
    )
    signing_key: str | None = var(
        "ENGRAM_SIGNING_KEY",
        None,
        as_signing_key,
        "engram's private key as a multibase private Multikey (`z...`, P-256 or secp256k1; `engram keygen` "
        "prints one). Default: generated in the data dir.",
        blank=True,
        value=None,
    )
    dev: bool = var(
        "ENGRAM_DEV",
        "0",
        as_bool,
        "`1` allows outbound requests to internal addresses and over plain http (did:web on localhost, fake "
        "PDSes); nothing else. Never in production (docs/security.md#outbound-requests).",
        blank=True,
    )
    outbound_allow: tuple[IPv4Network | IPv6Network, ...] = var(
        "ENGRAM_OUTBOUND_ALLOW",
        "",
        as_networks,
        "Comma-separated networks (`10.0.0.0/8`, `127.0.0.1`) engram may send requests to although they are "
        "internal (an internal PLC mirror). Empty: public addresses only "
        "(docs/security.md#outbound-requests).",
    )
    log_level: str = var(
        "ENGRAM_LOG_LEVEL",
        "info",
        as_log_level,
        "debug, info, warning or error. Logs are JSON lines on stderr.",
        blank=True,
    )
    plc_url: str = var(
        "ENGRAM_PLC_URL",
        "https://plc.directory",
        as_url,
        "PLC directory used to resolve did:plc.",
    )
    admin_dids: frozenset[str] = var(
        "ENGRAM_ADMIN_DIDS",
        "",
        as_dids,
        "Comma-separated DIDs allowed to call the remote admin methods.",
    )
    max_body_bytes: int = var(
        "ENGRAM_MAX_BODY_BYTES",
        "16777216",
        whole(1024),
        "Largest request body accepted (413 beyond).",
    )
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
    # HTTP server limits against slow or hostile clients (engram/serving).
    header_timeout_ms: int = var(
        "ENGRAM_HEADER_TIMEOUT_MS",
        "10000",
        whole(100, 3_600_000),
        "A client must send a request's line and headers within this long, or the connection is closed.",
    )
    body_timeout_ms: int = var(
        "ENGRAM_BODY_TIMEOUT_MS",
        "60000",
        whole(100, 3_600_000),
        "A request body must arrive within this long after its headers (408 RequestTimeout beyond).",
    )
    keepalive_timeout_ms: int = var(
        "ENGRAM_KEEPALIVE_TIMEOUT_MS",
        "75000",
        whole(100, 3_600_000),
        "An idle keep-alive connection is closed after this long.",
    )
    max_connections: int = var(
        "ENGRAM_MAX_CONNECTIONS",
        "512",
        whole(1, 1_000_000),
        "Open client connections; beyond it new ones get 503 and are closed. Keep below `ulimit -n`.",
    )
    # engram as space host of its hosted spaces (docs/space-host.md)
    credential_ttl: int = var(
        "ENGRAM_CREDENTIAL_TTL",
        "600",
        whole(1, 3600),
        "Lifetime in seconds of the space credentials `getSpaceCredential` issues (1-3600).",
    )
    # synced spaces (engram/sync)
    poll_interval: float = var(
        "ENGRAM_POLL_INTERVAL",
        "300",
        real(0.0),
        "Seconds between full syncs of each synced space (0 = off; notifications only).",
    )
    sync_concurrency: int = var(
        "ENGRAM_SYNC_CONCURRENCY",
        "4",
        whole(1, 256),
        "Repo syncs in flight on this node, over all synced spaces.",
    )
    sync_space_concurrency: int = var(
        "ENGRAM_SYNC_SPACE_CONCURRENCY",
        "2",
        whole(1, 64),
        "Repo syncs in flight per synced space.",
    )
    sync_timeout: float = var(
        "ENGRAM_SYNC_TIMEOUT",
        "30",
        real(0.1),
        "Seconds allowed for one request to a PDS or space host while syncing.",
    )
    limit_memories: int = var(
        "ENGRAM_LIMIT_MEMORIES",
        "0",
        whole(0),
        "Most memories a synced space may hold; writes beyond wait (0 = no limit).",
    )
    limit_bytes: int = var(
        "ENGRAM_LIMIT_BYTES",
        "0",
        whole(0),
        "Most text+source bytes a synced space may hold (0 = no limit).",
    )
    # MCP at /mcp (docs/mcp.md)
    mcp_allowed_origins: tuple[str, ...] = var(
        "ENGRAM_MCP_ALLOWED_ORIGINS",
        "",
        as_origins,
        "Comma-separated origins (`https://host[:port]`) whose pages and Host headers /mcp accepts besides "
        "the public URL's and loopback's.",
    )
    mcp_sessions: int = var(
        "ENGRAM_MCP_SESSIONS",
        "10000",
        whole(1),
        "MCP sessions open at once, over every key.",
    )
    mcp_sessions_per_key: int = var(
        "ENGRAM_MCP_SESSIONS_PER_KEY",
        "64",
        whole(1),
        "MCP sessions one API key may hold; its oldest ends first.",
    )
    mcp_session_idle_s: int = var(
        "ENGRAM_MCP_SESSION_IDLE_S",
        "900",
        whole(10, 86_400),
        "An MCP session unused this many seconds ends.",
    )
    # throughput (docs/internals.md#using-every-core)
    validate_output: bool = var(
        "ENGRAM_VALIDATE_OUTPUT",
        "0",
        as_bool,
        "`1`: check every XRPC answer against its lexicon (tests, debugging). `0`: check the first answer of "
        "each method only, then trust the presenters.",
        blank=True,
    )
    processes: int = var(
        "ENGRAM_PROCESSES",
        None,
        None,
        "Serving processes on one port (SO_REUSEPORT) over the same data directory; rate limits and the "
        "connection cap are split between them. Default: the cores this process may use (its CPU affinity, "
        "capped by a cgroup CPU quota). See "
        "docs/internals.md#using-every-core.",
        factory=usable_cores,
    )
    pin_processes: bool = var(
        "ENGRAM_PIN_PROCESSES",
        "1",
        as_bool,
        "`1`: with several serving processes, each runs on its own share of the cores, so a search's hand-off "
        "between its event loop and worker threads stays on one core (index builds and split scans still "
        "use every core). Skipped where there are fewer cores than processes or a CPU quota below the "
        "cores. `0`: every process may run on every core. See docs/internals.md#using-every-core.",
    )
    event_loop: str = var(
        "ENGRAM_EVENT_LOOP",
        None,
        as_event_loop,
        "`uvloop` or `asyncio`: the event loop `engram serve` runs on. Default: uvloop where it is installed "
        "(a dependency on Linux), else asyncio. See docs/benchmarks.md#throughput.",
        factory=default_event_loop,
    )
    build_threads: int = var(
        "ENGRAM_BUILD_THREADS",
        None,
        whole(1, 256),
        "OpenMP threads an HNSW index build may use, at a lower priority than searches. Default: the cores "
        "this process may use (its CPU affinity, capped by a cgroup CPU quota).",
        blank=True,
        factory=usable_cores,
    )
    # -- store backend (docs/scale-out.md#the-store-on-postgresql) --
    database_url: str | None = var(
        "ENGRAM_DATABASE_URL",
        None,
        as_database_url,
        "`postgresql://user@host:port/db`: keep the store in PostgreSQL instead of SQLite in the data dir "
        "(index files and keys stay in the data dir). Unset: SQLite.",
        value=None,
    )
    # cluster: several nodes over one PostgreSQL store (engram/cluster, docs/scale-out.md)
    node_url: str | None = var(
        "ENGRAM_NODE_URL",
        None,
        as_node_url,
        "This node's base URL as its peers reach it. With a PostgreSQL store, turns on cluster mode.",
        value=None,
    )
    node_id: str | None = var(
        "ENGRAM_NODE_ID",
        None,
        None,
        "This node's stable name in the cluster. Default: the node URL's host:port.",
        value=None,
    )
    heartbeat_ms: int = var(
        "ENGRAM_HEARTBEAT_MS",
        "2000",
        whole(50, 600_000),
        "How often a node renews its registration and its space leases.",
    )
    lease_timeout_ms: int = var(
        "ENGRAM_LEASE_TIMEOUT_MS",
        "10000",
        whole(200, 3_600_000),
        "A node silent this long is dead: its space leases lapse and its spaces move. Several heartbeats.",
    )
    # index snapshots in a shared object store (docs/scale-out.md#index-snapshots)
    index_store: str | None = var(
        "ENGRAM_INDEX_STORE",
        None,
        as_index_store,
        "`file:///abs/dir` or `s3://bucket/prefix`: share index snapshots between nodes (a node loads the "
        "newest snapshot plus the store's delta instead of rebuilding). Unset: index files stay in the data "
        "dir.",
        value=None,
    )
    s3_endpoint_url: str | None = var(
        "ENGRAM_S3_ENDPOINT_URL",
        None,
        as_url,
        "Endpoint of an S3-compatible server for `s3://` index stores (credentials and region: the standard "
        "`AWS_*` variables).",
        blank=True,
        value=None,
    )
    # Not configuration: which of the serving processes this is (engram/serving/processes.py sets it).
    # Process 0 alone runs the background work that must not run N times (the sync poll loop).
    process_index: int = 0

    @property
    def cluster(self) -> bool:
        """Cluster mode: a PostgreSQL store that peers share, and a URL they reach this node at."""
        return bool(self.node_url) and (self.database_url or "").startswith(("postgresql://", "postgres://"))

    @property
    def search(self) -> SearchConfig:
        return section_of(SearchConfig, self)

    @property
    def serving(self) -> ServingConfig:
        return section_of(ServingConfig, self)

    @property
    def sync(self) -> SyncConfig:
        return section_of(SyncConfig, self)

    @property
    def node(self) -> ClusterConfig:
        return section_of(ClusterConfig, self)

    @property
    def mcp(self) -> McpConfig:
        return section_of(McpConfig, self)


# Every declared variable, in the README table's order.
VARIABLES: tuple[Variable, ...] = tuple(
    f.metadata["variable"] for f in fields(Settings) if "variable" in f.metadata
)
