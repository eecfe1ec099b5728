"""Settings: every ``ENGRAM_*`` variable is read here and nowhere else, and validated at start-up.

`read_env()` turns the environment into a frozen `Settings`; a bad value raises `ConfigError` naming the
variable, and `engram serve` prints it and exits with status 2 instead of starting half-configured.
The README's configuration table is checked against `VARIABLES` by a test.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from ipaddress import IPv4Network, IPv6Network
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from .config_values import (
    ConfigError,
    as_bool,
    as_database_url,
    as_did,
    as_dids,
    as_float,
    as_index_store,
    as_int,
    as_networks,
    as_origins,
    as_url,
)
from .serving.event_loop import EVENT_LOOPS, default_event_loop, uvloop_available
from .workers import usable_cores


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
        " free (docs/architecture.md#split-scans); 0 never splits.",
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
    # throughput (docs/architecture.md#using-every-core)
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
        "See docs/architecture.md#using-every-core.",
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
_KNOWN = {v.name for v in VARIABLES}


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    data_dir: Path = Path("./engram-data")
    public_url: str = "http://localhost:8080"
    service_did: str = "did:web:localhost%3A8080"
    signing_key: str | None = None
    dev: bool = False
    outbound_allow: tuple[IPv4Network | IPv6Network, ...] = ()  # engram/outbound.py
    log_level: str = "info"
    plc_url: str = "https://plc.directory"
    admin_dids: frozenset[str] = frozenset()
    max_body_bytes: int = 16 * 1024 * 1024
    workers: int = 2
    load_workers: int = 1
    exact_max: int = 200_000
    split_min_rows: int = 50_000
    ram_bytes: int = 8 * 1024**3
    rerank_deadline_ms: int = 250
    load_wait_ms: int = 2000
    search_rate: float = 50.0
    search_burst: int = 100
    search_concurrency: int = 8
    search_wait_ms: int = 1000
    hit_cache_bytes: int = 32 * 1024**2  # engram/store/hit_cache.py
    embedder: str = "builtin,multilingual"
    text_search: bool = True
    text_search_authorities: frozenset[str] = frozenset()
    text_search_rate: float = 2.0
    text_search_burst: int = 20
    embed_concurrency: int = 4
    embed_queue: int = 64
    embed_wait_ms: int = 2000
    key_text_search_rate: float = 10.0
    key_text_search_burst: int = 200
    metrics_port: int = 0
    # HTTP server limits (engram/serving)
    header_timeout_ms: int = 10_000
    body_timeout_ms: int = 60_000
    keepalive_timeout_ms: int = 75_000
    max_connections: int = 512
    credential_ttl: int = 600  # space host (docs/space-host.md)
    poll_interval: float = 300.0
    sync_concurrency: int = 4
    sync_space_concurrency: int = 2
    sync_timeout: float = 30.0
    limit_memories: int = 0
    limit_bytes: int = 0
    # MCP (docs/mcp.md)
    mcp_allowed_origins: tuple[str, ...] = ()
    mcp_sessions: int = 10_000
    mcp_sessions_per_key: int = 64
    mcp_session_idle_s: int = 900
    # Throughput (docs/architecture.md#using-every-core)
    # every XRPC answer against its lexicon (tests, debugging); else once per method
    validate_output: bool = False
    # serving processes on one port (engram/serving/processes.py)
    processes: int = field(default_factory=usable_cores)
    event_loop: str = field(default_factory=default_event_loop)  # engram/serving/event_loop.py
    build_threads: int = field(default_factory=usable_cores)  # HNSW builds (engram/workers.py)
    # Not configuration: which of the serving processes this is (engram/serving/processes.py sets it).
    # Process 0 alone runs the background work that must not run N times (the sync poll loop).
    process_index: int = 0
    # Index snapshots (docs/scale-out.md#index-snapshots)
    index_store: str | None = None
    s3_endpoint_url: str | None = None
    database_url: str | None = None  # PostgreSQL store (engram/store/postgres/); None: SQLite in data_dir
    # cluster (engram/cluster, docs/scale-out.md)
    node_url: str | None = None
    node_id: str | None = None
    heartbeat_ms: int = 2000
    lease_timeout_ms: int = 10_000

    @property
    def cluster(self) -> bool:
        """Cluster mode: a PostgreSQL store that peers share, and a URL they reach this node at."""
        return bool(self.node_url) and (self.database_url or "").startswith(("postgresql://", "postgres://"))


def did_web_for(public_url: str) -> str:
    """did:web of a URL's host; a port is percent-encoded as the did:web method requires."""
    parts = urlsplit(public_url)
    host = parts.hostname or "localhost"
    if parts.port:
        host = f"{host}:{parts.port}"
    return "did:web:" + quote(host, safe="")


def read_env(environ: Mapping[str, str] | None = None) -> Settings:
    env = dict(os.environ if environ is None else environ)
    unknown = sorted(k for k in env if k.startswith("ENGRAM_") and k not in _KNOWN)
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]} (see the configuration table in README.md)")

    def get(name: str) -> str | None:
        value = env.get(name)
        if value is None:
            return next(v.default for v in VARIABLES if v.name == name)
        return value

    port = as_int("ENGRAM_PORT", get("ENGRAM_PORT") or "", 0, 65535)
    public_url = as_url("ENGRAM_PUBLIC_URL", get("ENGRAM_PUBLIC_URL") or f"http://localhost:{port}")
    service_did_raw = get("ENGRAM_SERVICE_DID")
    service_did = (
        as_did("ENGRAM_SERVICE_DID", service_did_raw) if service_did_raw else did_web_for(public_url)
    )
    log_level = (get("ENGRAM_LOG_LEVEL") or "info").lower()
    if log_level not in {"debug", "info", "warning", "error"}:
        raise ConfigError(f"ENGRAM_LOG_LEVEL={log_level!r} must be debug, info, warning or error")
    embedder = (get("ENGRAM_EMBEDDER") or "builtin,multilingual").strip()
    kinds = {"builtin", "multilingual", "onnx", "sentence-transformers", "hashing", "none"}
    if any(part.strip().split(":", 1)[0] not in kinds for part in embedder.split(",")):
        raise ConfigError(
            f"ENGRAM_EMBEDDER={embedder!r}: expected builtin, multilingual, onnx:<dir>, "
            "sentence-transformers:<dir>, hashing[:dims] or none, or several joined by commas"
        )
    signing_key = get("ENGRAM_SIGNING_KEY") or None
    if signing_key is not None:
        from .auth.keys import KeyFormatError, PrivateKey

        try:
            PrivateKey.from_multibase(signing_key.strip())
        except (KeyFormatError, ValueError):
            raise ConfigError(
                "ENGRAM_SIGNING_KEY must be a multibase private Multikey (z..., P-256 or secp256k1); "
                "`engram keygen` prints one"
            ) from None
    data_dir = Path(get("ENGRAM_DATA_DIR") or "./engram-data").expanduser()
    if data_dir.exists() and not data_dir.is_dir():
        raise ConfigError(f"ENGRAM_DATA_DIR={str(data_dir)!r} exists and is not a directory")

    settings = Settings(
        host=get("ENGRAM_HOST") or "127.0.0.1",
        port=port,
        data_dir=data_dir,
        public_url=public_url,
        service_did=service_did,
        signing_key=signing_key,
        dev=as_bool("ENGRAM_DEV", get("ENGRAM_DEV") or "0"),
        outbound_allow=as_networks("ENGRAM_OUTBOUND_ALLOW", get("ENGRAM_OUTBOUND_ALLOW") or ""),
        log_level=log_level,
        plc_url=as_url("ENGRAM_PLC_URL", get("ENGRAM_PLC_URL") or ""),
        admin_dids=as_dids("ENGRAM_ADMIN_DIDS", get("ENGRAM_ADMIN_DIDS") or ""),
        max_body_bytes=as_int("ENGRAM_MAX_BODY_BYTES", get("ENGRAM_MAX_BODY_BYTES") or "", 1024),
        workers=as_int("ENGRAM_WORKERS", get("ENGRAM_WORKERS") or "", 1, 256),
        load_workers=as_int("ENGRAM_LOAD_WORKERS", get("ENGRAM_LOAD_WORKERS") or "", 1, 64),
        exact_max=as_int("ENGRAM_EXACT_MAX", get("ENGRAM_EXACT_MAX") or "", 0),
        split_min_rows=as_int("ENGRAM_SPLIT_MIN_ROWS", get("ENGRAM_SPLIT_MIN_ROWS") or "", 0),
        ram_bytes=as_int("ENGRAM_RAM_BYTES", get("ENGRAM_RAM_BYTES") or "", 1),
        rerank_deadline_ms=as_int(
            "ENGRAM_RERANK_DEADLINE_MS", get("ENGRAM_RERANK_DEADLINE_MS") or "", 0, 10_000
        ),
        load_wait_ms=as_int("ENGRAM_LOAD_WAIT_MS", get("ENGRAM_LOAD_WAIT_MS") or "", 0, 10_000),
        search_rate=as_float("ENGRAM_SEARCH_RATE", get("ENGRAM_SEARCH_RATE") or "", 0.0),
        search_burst=as_int("ENGRAM_SEARCH_BURST", get("ENGRAM_SEARCH_BURST") or "", 1),
        search_concurrency=as_int("ENGRAM_SEARCH_CONCURRENCY", get("ENGRAM_SEARCH_CONCURRENCY") or "", 1),
        search_wait_ms=as_int("ENGRAM_SEARCH_WAIT_MS", get("ENGRAM_SEARCH_WAIT_MS") or "", 0, 60_000),
        hit_cache_bytes=as_int("ENGRAM_HIT_CACHE_BYTES", get("ENGRAM_HIT_CACHE_BYTES") or "", 0),
        embedder=embedder,
        text_search=as_bool("ENGRAM_TEXT_SEARCH", get("ENGRAM_TEXT_SEARCH") or "1"),
        text_search_authorities=as_dids(
            "ENGRAM_TEXT_SEARCH_AUTHORITIES", get("ENGRAM_TEXT_SEARCH_AUTHORITIES") or ""
        ),
        text_search_rate=as_float("ENGRAM_TEXT_SEARCH_RATE", get("ENGRAM_TEXT_SEARCH_RATE") or "", 0.0),
        text_search_burst=as_int("ENGRAM_TEXT_SEARCH_BURST", get("ENGRAM_TEXT_SEARCH_BURST") or "", 1),
        embed_concurrency=as_int("ENGRAM_EMBED_CONCURRENCY", get("ENGRAM_EMBED_CONCURRENCY") or "", 1),
        embed_queue=as_int("ENGRAM_EMBED_QUEUE", get("ENGRAM_EMBED_QUEUE") or "", 0),
        embed_wait_ms=as_int("ENGRAM_EMBED_WAIT_MS", get("ENGRAM_EMBED_WAIT_MS") or "", 0, 60_000),
        key_text_search_rate=as_float(
            "ENGRAM_KEY_TEXT_SEARCH_RATE", get("ENGRAM_KEY_TEXT_SEARCH_RATE") or "", 0.0
        ),
        key_text_search_burst=as_int(
            "ENGRAM_KEY_TEXT_SEARCH_BURST", get("ENGRAM_KEY_TEXT_SEARCH_BURST") or "", 1
        ),
        metrics_port=as_int("ENGRAM_METRICS_PORT", get("ENGRAM_METRICS_PORT") or "", 0, 65535),
        header_timeout_ms=as_int(
            "ENGRAM_HEADER_TIMEOUT_MS", get("ENGRAM_HEADER_TIMEOUT_MS") or "", 100, 3_600_000
        ),
        body_timeout_ms=as_int("ENGRAM_BODY_TIMEOUT_MS", get("ENGRAM_BODY_TIMEOUT_MS") or "", 100, 3_600_000),
        keepalive_timeout_ms=as_int(
            "ENGRAM_KEEPALIVE_TIMEOUT_MS", get("ENGRAM_KEEPALIVE_TIMEOUT_MS") or "", 100, 3_600_000
        ),
        max_connections=as_int("ENGRAM_MAX_CONNECTIONS", get("ENGRAM_MAX_CONNECTIONS") or "", 1, 1_000_000),
        credential_ttl=as_int("ENGRAM_CREDENTIAL_TTL", get("ENGRAM_CREDENTIAL_TTL") or "", 1, 3600),
        poll_interval=as_float("ENGRAM_POLL_INTERVAL", get("ENGRAM_POLL_INTERVAL") or "", 0.0),
        sync_concurrency=as_int("ENGRAM_SYNC_CONCURRENCY", get("ENGRAM_SYNC_CONCURRENCY") or "", 1, 256),
        sync_space_concurrency=as_int(
            "ENGRAM_SYNC_SPACE_CONCURRENCY", get("ENGRAM_SYNC_SPACE_CONCURRENCY") or "", 1, 64
        ),
        sync_timeout=as_float("ENGRAM_SYNC_TIMEOUT", get("ENGRAM_SYNC_TIMEOUT") or "", 0.1),
        limit_memories=as_int("ENGRAM_LIMIT_MEMORIES", get("ENGRAM_LIMIT_MEMORIES") or "", 0),
        limit_bytes=as_int("ENGRAM_LIMIT_BYTES", get("ENGRAM_LIMIT_BYTES") or "", 0),
        mcp_allowed_origins=as_origins("ENGRAM_MCP_ALLOWED_ORIGINS", get("ENGRAM_MCP_ALLOWED_ORIGINS") or ""),
        mcp_sessions=as_int("ENGRAM_MCP_SESSIONS", get("ENGRAM_MCP_SESSIONS") or "", 1),
        mcp_sessions_per_key=as_int(
            "ENGRAM_MCP_SESSIONS_PER_KEY", get("ENGRAM_MCP_SESSIONS_PER_KEY") or "", 1
        ),
        mcp_session_idle_s=as_int(
            "ENGRAM_MCP_SESSION_IDLE_S", get("ENGRAM_MCP_SESSION_IDLE_S") or "", 10, 86_400
        ),
        # Throughput
        validate_output=as_bool("ENGRAM_VALIDATE_OUTPUT", get("ENGRAM_VALIDATE_OUTPUT") or "0"),
        event_loop=_event_loop(get("ENGRAM_EVENT_LOOP")),
        build_threads=as_int("ENGRAM_BUILD_THREADS", get("ENGRAM_BUILD_THREADS"), 1, 256)
        if get("ENGRAM_BUILD_THREADS")
        else usable_cores(),
        database_url=as_database_url("ENGRAM_DATABASE_URL", get("ENGRAM_DATABASE_URL") or None),
        **_cluster_settings(get),
        # Index snapshots
        index_store=as_index_store("ENGRAM_INDEX_STORE", get("ENGRAM_INDEX_STORE")),
        s3_endpoint_url=as_url("ENGRAM_S3_ENDPOINT_URL", raw)
        if (raw := get("ENGRAM_S3_ENDPOINT_URL"))
        else None,
    )
    return _with_processes(settings, (get("ENGRAM_PROCESSES") or "").strip())


def _event_loop(raw: str | None) -> str:
    name = (raw or "").strip().lower()
    if not name:
        return default_event_loop()
    if name not in EVENT_LOOPS:
        raise ConfigError(f"ENGRAM_EVENT_LOOP must be one of {', '.join(EVENT_LOOPS)}, not {raw!r}")
    if name == "uvloop" and not uvloop_available():
        raise ConfigError("ENGRAM_EVENT_LOOP=uvloop but uvloop is not installed (pip install uvloop)")
    return name


def _with_processes(settings: Settings, raw: str) -> Settings:
    """Serving processes: the usable cores by default, but one on a cluster node. A node is one lease
    holder with one heartbeat and one set of owner-side buckets (docs/scale-out.md), and its gauges read
    in-process state that the multiprocess metrics files cannot sum; run more nodes to use more cores."""
    if not raw:
        return replace(settings, processes=1 if settings.cluster else usable_cores())
    processes = as_int("ENGRAM_PROCESSES", raw, 1, 256)
    if settings.cluster and processes > 1:
        raise ConfigError(
            f"ENGRAM_PROCESSES={processes} is not supported on a cluster node (ENGRAM_NODE_URL with "
            "ENGRAM_DATABASE_URL): run one node per process, each with its own ENGRAM_NODE_URL"
        )
    return replace(settings, processes=processes)


def _cluster_settings(get) -> dict[str, Any]:
    node_url = as_url("ENGRAM_NODE_URL", raw) if (raw := (get("ENGRAM_NODE_URL") or "").strip()) else None
    node_id = (get("ENGRAM_NODE_ID") or "").strip() or None
    if node_id is None and node_url is not None:
        parts = urlsplit(node_url)  # stable across restarts, so a restarted node gets its spaces back
        node_id = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    heartbeat_ms = as_int("ENGRAM_HEARTBEAT_MS", get("ENGRAM_HEARTBEAT_MS") or "", 50, 600_000)
    lease_timeout_ms = as_int("ENGRAM_LEASE_TIMEOUT_MS", get("ENGRAM_LEASE_TIMEOUT_MS") or "", 200, 3_600_000)
    if lease_timeout_ms < 2 * heartbeat_ms:
        raise ConfigError(
            f"ENGRAM_LEASE_TIMEOUT_MS={lease_timeout_ms} must be at least twice ENGRAM_HEARTBEAT_MS={heartbeat_ms}"
            " (one missed heartbeat must not cost a node its spaces)"
        )
    return {
        "node_url": node_url,
        "node_id": node_id,
        "heartbeat_ms": heartbeat_ms,
        "lease_timeout_ms": lease_timeout_ms,
    }


def override(settings: Settings, **changes: Any) -> Settings:
    """A copy with some fields changed (tests and the CLI use this instead of mutating the environment)."""
    return replace(settings, **changes)


def read_env_with(flags: Mapping[str, str], environ: Mapping[str, str] | None = None) -> Settings:
    """Settings as if command-line `flags` (ENGRAM_* name -> value) were set in the environment, so what
    is derived from them follows: `engram serve --port 9000` gets the URL and DID of port 9000 unless
    ENGRAM_PUBLIC_URL / ENGRAM_SERVICE_DID name them explicitly."""
    return read_env({**(os.environ if environ is None else environ), **flags})
