"""The declared environment: `Settings`, one field per ``ENGRAM_*`` variable, each declared once by `var`
with its name, its default as a user would write it, its parser and its help text.

The typed field and its default, `engram.config.read_env`'s parsing, the unknown-variable check
(`VARIABLES`) and the README table (tests/app/test_config.py) all come from them; components get frozen
sections (engram/config_sections.py). How a variable is declared: engram/config_fields.py. The first
variables of the table are declared in the two groups `Settings` inherits (engram/config_service_variables.py,
engram/config_search_variables.py); the rest here.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .affinity import usable_cores
from .config_fields import (
    Variable,
    as_event_loop,
    as_node_url,
    real,
    var,
    whole,
)
from .config_search_variables import SearchVariables
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
    as_index_store,
    as_origins,
    as_url,
)
from .serving.event_loop import default_event_loop


@dataclass(frozen=True)
class Settings(SearchVariables):
    # Order is the README table's order: the inherited fields first (engram/config_service_variables.py,
    # engram/config_search_variables.py), then these.
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
