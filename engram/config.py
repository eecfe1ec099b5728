"""Settings: every ``ENGRAM_*`` variable is read here and nowhere else, and validated at start-up.

`read_env()` turns the environment into a frozen `Settings`; a bad value raises `ConfigError` naming the
variable, and `engram serve` prints it and exits with status 2 instead of starting half-configured.
The variables themselves, their defaults and help texts are declared in `config_variables.py`.
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
from .config_variables import VARIABLES
from .serving.event_loop import EVENT_LOOPS, default_event_loop, uvloop_available
from .workers import usable_cores

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
    # Throughput (docs/internals.md#using-every-core)
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
        from .auth.crypto_keys import KeyFormatError, PrivateKey

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
