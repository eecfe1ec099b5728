"""AppContext: the service's parts, built once at start-up and handed to handlers (no globals)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config import Settings
from .workers import WorkerPool
from .xrpc.lexicons import LexiconRegistry


@dataclass
class AppContext:
    settings: Settings
    registry: LexiconRegistry
    pool: WorkerPool
    identity: Any = None  # engram.auth.did_document.DidDocument of engram's own DID
    keyring: Any = None  # engram.auth.keyring.LocalKeyring: DIDs whose keys engram holds
    resolver: Any = None  # engram.auth.did_resolver.DidResolver
    reader_verifier: Any = None  # engram.auth.reader.ReaderVerifier
    service_verifier: Any = None  # engram.auth.service_jwt.ServiceAuthVerifier
    admin_verifier: Any = None  # engram.auth.admin_signature.AdminVerifier
    store: Any = None  # engram.store.database.Store
    direct_reads: Any = None  # engram.store.direct_reads.DirectReader (point reads without a thread hop)
    index: Any = None  # engram.search.manager.IndexManager
    embedder: Any = None  # engram.embed.base.Embedder | None
    services: Any = None  # engram.service.Services
    metrics: Any = None  # engram.metrics.Metrics
    syncer: Any = None  # engram.sync.syncer.Syncer (synced spaces; only in the HTTP service)
    ready: bool = False
