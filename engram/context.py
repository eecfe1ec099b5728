"""AppContext: the service's parts, built once at start-up and handed to handlers (no globals).

`create_app` (the server) and `engram.lifecycle.open_context` (the CLI) create it with the settings, the
lexicons and the worker pool; `engram.lifecycle.open_parts` fills in the rest, in order, before anything
serves. The types are imported for type checkers only, so importing this module stays cheap and free of
cycles.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import aiohttp
    from aiohttp.abc import AbstractResolver

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
    # Filled in by open_parts before anything is served (None only while starting up).
    keyring: LocalKeyring | None = None  # DIDs whose keys engram holds (its own, operators')
    store: Store | None = None
    direct_reads: DirectReader | None = None  # point reads on the calling thread, no thread hop
    index: IndexManager | None = None
    services: Services | None = None
    # Only with network access (the server; not the CLI's local commands).
    http: aiohttp.ClientSession | None = None  # the guarded outbound client (engram/outbound.py)
    # Name resolution for that client; None is the system's. Tests set it before start-up to point names
    # at their loopback fakes (docs/security.md#outbound-requests).
    outbound_resolver: AbstractResolver | None = None
    resolver: DidResolver | None = None
    reader_verifier: ReaderVerifier | None = None
    service_verifier: ServiceAuthVerifier | None = None
    admin_verifier: AdminVerifier | None = None
    # None when no embedder is configured (ENGRAM_EMBEDDER=none) or the command needs none.
    embedder: Embedder | None = None
    metrics: Metrics | None = None  # the server's Prometheus metrics
    space_host: SpaceHostAuth | None = None  # getSpaceCredential's verifiers (server only)
    notifier: WriteNotifier | None = None  # notifyWrite to registered syncers (server only)
    syncer: Syncer | None = None  # synced spaces (the HTTP service only)
    ready: bool = False
    cluster: ClusterNode | None = None  # cluster mode only (engram/cluster, docs/scale-out.md)
    # Wall-clock seconds for expiries (console sessions and sign-in links); tests replace it to move time
    # without sleeping.
    clock: Callable[[], float] = time.time

    @property
    def outbound(self) -> OutboundPolicy:
        """Which hosts engram may send requests to (ENGRAM_DEV, ENGRAM_OUTBOUND_ALLOW)."""
        from .outbound import OutboundPolicy

        return OutboundPolicy(dev=self.settings.dev, allow=self.settings.outbound_allow)
