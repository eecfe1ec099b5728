"""AppContext: the service's parts, built once at start-up and handed to handlers (no globals).

`engram.lifecycle.open_context` opens every part first and then builds it whole, for the server
(`create_app`, which registers the doors over it) and the CLI alike. The types are imported for type
checkers only, so importing this module stays cheap and free of cycles.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import aiohttp

    from .auth.admin_signature import AdminVerifier
    from .auth.did_resolver import DidResolver
    from .auth.keyring import LocalKeyring
    from .auth.reader import ReaderVerifier
    from .auth.service_jwt import ServiceAuthVerifier
    from .cluster.node import ClusterNode
    from .config import Settings
    from .embed.base import Embedder
    from .metrics import Metrics
    from .outbound import OutboundPolicy
    from .search.manager import IndexManager
    from .service import Services
    from .spacehost.verifiers import SpaceHostAuth
    from .spacehost.write_notifier import WriteNotifier
    from .store.database import Store
    from .store.direct_reads import DirectReader
    from .sync.syncer import Syncer
    from .workers import WorkerPool
    from .xrpc.lexicons import LexiconRegistry


@dataclass
class AppContext:
    settings: Settings
    registry: LexiconRegistry
    pool: WorkerPool
    keyring: LocalKeyring  # DIDs whose keys engram holds (its own, operators')
    store: Store
    direct_reads: DirectReader  # point reads on the calling thread, no thread hop
    index: IndexManager
    services: Services
    outbound: OutboundPolicy  # which hosts engram may send requests to (ENGRAM_DEV, ENGRAM_OUTBOUND_ALLOW)
    http: aiohttp.ClientSession  # the guarded outbound client (engram/outbound.py)
    resolver: DidResolver
    reader_verifier: ReaderVerifier
    service_verifier: ServiceAuthVerifier
    admin_verifier: AdminVerifier
    space_host: SpaceHostAuth  # getSpaceCredential's verifiers
    # The real options, and only they may be None (tests/app/test_context.py holds the list):
    embedder: Embedder | None = None  # ENGRAM_EMBEDDER=none, or `engram mcp` before its model is loaded
    metrics: Metrics | None = None  # the server's Prometheus metrics; the CLI has none
    notifier: WriteNotifier | None = None  # notifyWrite to registered syncers: the server only
    syncer: Syncer | None = None  # synced spaces: the server only
    cluster: ClusterNode | None = None  # cluster mode only (engram/cluster, docs/scale-out.md)
    ready: bool = False
    # Wall-clock seconds for expiries (console sessions and sign-in links); tests replace it to move time
    # without sleeping.
    clock: Callable[[], float] = time.time
