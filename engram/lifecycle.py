"""Opening and closing the service's parts, in dependency order (closed in reverse).

The same `open_context` serves the HTTP service and the CLI's local commands, so both run the very same
service functions over the same store; the CLI simply skips the server's background parts.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from .auth.admin_signature import AdminVerifier
from .auth.did_resolver import DidResolver
from .auth.identity import build_keyring, load_operator_keys, load_or_create_service_key, record_served_did
from .auth.keyring import LocalKeyring
from .auth.reader import ReaderVerifier
from .auth.service_jwt import ServiceAuthVerifier
from .config import Settings
from .context import AppContext
from .metrics import Metrics, serve_metrics
from .outbound import OutboundPolicy, guarded_session
from .search.manager import IndexManager
from .search.snapshot_sync import SnapshotSync
from .search.snapshots import SnapshotStore
from .service import Services
from .spacehost.verifiers import SpaceHostAuth
from .spacehost.write_notifier import WriteNotifier
from .store import repo as store_repo
from .store import repo_backfill
from .store.backends import open_store
from .store.database import Store
from .store.index_source import StoreIndexSource
from .store.replays import StoreReplayGuard
from .workers import BUILD_NICE, WorkerPool
from .xrpc.lexicons import LEXICON_DIR, LexiconRegistry

if TYPE_CHECKING:
    from aiohttp.abc import AbstractResolver

    from .embed.base import Embedder

log = logging.getLogger("engram")


@contextlib.asynccontextmanager
async def open_context(
    settings: Settings,
    *,
    registry: LexiconRegistry | None = None,
    metrics: Metrics | None = None,
    network: bool = False,
    embedder: bool = True,
    lazy_embedder: bool | None = None,
    outbound_resolver: AbstractResolver | None = None,
) -> AsyncIterator[AppContext]:
    """Every part, opened in dependency order and closed in reverse, then the context over them, whole.

    The HTTP service (`create_app`) and the CLI's local commands get the very same parts and services;
    `network` adds what only a server runs: notifyWrite to registered syncers, the synced spaces' runner
    and the metrics port. `lazy_embedder` (the CLI's default): the built-in model loads when something is
    first embedded (engram/embed/lazy.py); the server loads it here, so a broken model stops it at
    start-up. `outbound_resolver`: name resolution for the outbound client; tests point names at their
    loopback fakes (docs/security.md#outbound-requests)."""
    lazy = not network if lazy_embedder is None else lazy_embedder
    async with contextlib.AsyncExitStack() as stack:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        pool = WorkerPool(settings.workers)
        stack.callback(pool.close)
        registry = registry or LexiconRegistry.load(LEXICON_DIR)

        key = await pool.run(load_or_create_service_key, settings.data_dir, settings.signing_key)
        operator_keys = await pool.run(load_operator_keys, settings.data_dir)
        keyring = build_keyring(settings.service_did, key, operator_keys, settings.public_url)

        store = await open_store(settings.data_dir, settings.database_url)
        stack.push_async_callback(store.close)
        # Hosted spaces' repos: every write transaction signs a commit for the records it changed
        # (engram/store/repo.py), whichever writer made it: CLI, admin procedures, shims.
        store.before_commit = functools.partial(store_repo.commit_pending, signer=keyring.private_key)
        await _backfill_repos(store, keyring)

        # Every request to a host someone else named goes through this one guarded client: no internal
        # addresses after name resolution, on every hop (docs/security.md#outbound-requests). Opening it
        # sends nothing, so the CLI's local commands have it too (and never use it).
        policy = OutboundPolicy(dev=settings.dev, allow=settings.outbound_allow)
        http = guarded_session(policy, resolver=outbound_resolver)
        stack.push_async_callback(http.close)
        resolver = DidResolver(
            http, plc_url=settings.plc_url, dev=settings.dev, policy=policy, keyring=keyring
        )
        # Replay claims live in the store so every serving process shares them (engram/store/replays.py).
        replays = StoreReplayGuard(store)
        notifier = None
        if network:
            # the DID this data dir is served as, for the CLI's local commands to check theirs against
            await pool.run(record_served_did, settings.data_dir, settings.service_did)
            # notifyWrite to the syncers registered for hosted spaces, after each commit (engram/store/repo.py)
            notifier = WriteNotifier(store, keyring, http)
            store.after_commit = notifier.committed
            stack.push_async_callback(notifier.close)

        loaded = await _load_embedder(settings, pool, lazy) if embedder else None

        # HNSW builds spread over ENGRAM_BUILD_THREADS cores at a lower priority (engram/workers.py)
        maintenance = WorkerPool(
            1, name="engram-index-build", omp_threads=settings.build_threads, nice=BUILD_NICE
        )
        stack.callback(maintenance.close)
        loads = WorkerPool(settings.load_workers, name="engram-index-load")
        stack.callback(loads.close)
        index = IndexManager(
            StoreIndexSource(store),
            pool,
            settings.data_dir,  # index files go under <data_dir>/indexes/ (engram/search/persist.py)
            settings.search,
            maintenance_pool=maintenance,
            load_pool=loads,
            snapshots=_snapshot_sync(settings, loads),
        )
        stack.push_async_callback(index.close)

        direct_reads = store.readers  # point reads on the calling thread's own connection
        ctx = AppContext(
            settings=settings,
            registry=registry,
            pool=pool,
            keyring=keyring,
            store=store,
            direct_reads=direct_reads,
            index=index,
            services=Services.build(
                settings,
                store=store,
                keyring=keyring,
                direct_reads=direct_reads,
                index=index,
                pool=pool,
                embedder=loaded,
                notifier=notifier,
            ),
            outbound=policy,
            http=http,
            resolver=resolver,
            reader_verifier=ReaderVerifier(settings.service_did, resolver),
            service_verifier=ServiceAuthVerifier(settings.service_did, resolver, replays=replays),
            admin_verifier=AdminVerifier(settings.public_url, settings.admin_dids, resolver, replays=replays),
            space_host=SpaceHostAuth.build(resolver, http, dev=settings.dev, policy=policy, replays=replays),
            embedder=loaded,
            metrics=metrics,
            notifier=notifier,
        )
        if network:
            from .sync.syncer import Syncer  # synced spaces: pulls, verifies and indexes member repos

            ctx.syncer = await stack.enter_async_context(Syncer(ctx).running())
            ctx.services.attach_syncer(ctx.syncer)
        if network and settings.metrics_port and metrics is not None:
            await stack.enter_async_context(
                serve_metrics(
                    metrics, settings.host, settings.metrics_port, index, ctx.services.search.hit_cache
                )
            )
        yield ctx


def _snapshot_sync(settings: Settings, loads: WorkerPool) -> SnapshotSync | None:
    """The shared index snapshot store, when ENGRAM_INDEX_STORE names one (docs/scale-out.md#index-snapshots)."""
    if settings.index_store is None:
        return None
    store = SnapshotStore.open(settings.index_store, settings.s3_endpoint_url)
    return SnapshotSync(store, settings.data_dir, loads)


async def _backfill_repos(store: Store, keyring: LocalKeyring) -> None:
    """Hosted spaces without a repo (from before engram kept repos, or whose authority key was added since)
    get theirs once, one transaction per space."""
    for space_id in await store.read(repo_backfill.spaces_without_repo, keyring.dids()):
        written, missing = await store.write(repo_backfill.backfill_space, space_id)
        log.info(
            "hosted space repo built",
            extra={"fields": {"space_id": space_id, "records": written, "left_out": missing}},
        )


async def attach_embedder(ctx: AppContext) -> None:
    """Load the embedder into a context opened with `embedder=False`, and rebuild the services over it
    (they hold it from when they are built). For `engram mcp`, which answers a host before the model is
    loaded (docs/mcp.md#stdio-engram-mcp); nothing may use the services while this runs."""
    ctx.embedder = await _load_embedder(ctx.settings, ctx.pool)
    ctx.services = Services.build(
        ctx.settings,
        store=ctx.store,
        keyring=ctx.keyring,
        direct_reads=ctx.direct_reads,
        index=ctx.index,
        pool=ctx.pool,
        embedder=ctx.embedder,
        notifier=ctx.notifier,
    )
    if ctx.syncer is not None:
        ctx.services.attach_syncer(ctx.syncer)


async def _load_embedder(settings: Settings, pool: WorkerPool, lazy: bool = False) -> Embedder | None:
    from .embed import load_embedder

    if lazy:
        from .embed.lazy import lazy_embedder

        if (stand_in := lazy_embedder(settings.embedder)) is not None:
            return stand_in

    # Loading the ONNX session takes ~0.3 s of CPU: do it off the loop, once, and share it.
    embedder = await pool.run(load_embedder, settings.embedder)
    if embedder is not None:
        log.info("embedder loaded", extra={"fields": {"model": embedder.name, "digest": embedder.digest}})
    return embedder
