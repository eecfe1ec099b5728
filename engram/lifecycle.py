"""Opening and closing the service's parts, in dependency order (closed in reverse).

The same `open_parts` serves the HTTP service and the CLI's local commands, so both run the very same
service functions over the same store; the CLI simply skips the network-facing parts it does not need.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator

from .auth.admin_signature import AdminVerifier
from .auth.did_resolver import DidResolver
from .auth.identity import build_keyring, load_operator_keys, load_or_create_service_key
from .auth.reader import ReaderVerifier
from .auth.service_jwt import ServiceAuthVerifier
from .config import Settings
from .context import AppContext
from .metrics import serve_metrics
from .outbound import guarded_session
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

log = logging.getLogger("engram")


@contextlib.asynccontextmanager
async def open_context(
    settings: Settings, *, network: bool = False, embedder: bool = True
) -> AsyncIterator[AppContext]:
    """A full AppContext outside the HTTP service (the CLI's local commands): same parts, same services."""
    ctx = AppContext(settings, LexiconRegistry.load(LEXICON_DIR), WorkerPool(settings.workers))
    async with open_parts(ctx, network=network, embedder=embedder, lazy_embedder=True):
        yield ctx


@contextlib.asynccontextmanager
async def open_parts(
    ctx: AppContext, *, network: bool = True, embedder: bool = True, lazy_embedder: bool = False
) -> AsyncIterator[AppContext]:
    """`lazy_embedder`: the built-in model loads when something is first embedded (engram/embed/lazy.py),
    for the CLI; the server loads it here, so a broken model stops it at start-up."""
    settings = ctx.settings
    async with contextlib.AsyncExitStack() as stack:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        stack.callback(ctx.pool.close)

        key = await ctx.pool.run(load_or_create_service_key, settings.data_dir, settings.signing_key)
        operator_keys = await ctx.pool.run(load_operator_keys, settings.data_dir)
        keyring = build_keyring(settings.service_did, key, operator_keys, settings.public_url)
        ctx.keyring = keyring

        ctx.store = await open_store(settings.data_dir, settings.database_url)
        stack.push_async_callback(ctx.store.close)
        ctx.direct_reads = ctx.store.readers  # point reads on the calling thread's own connection
        # Hosted spaces' repos: every write transaction signs a commit for the records it changed
        # (engram/store/repo.py), whichever writer made it: CLI, admin procedures, shims.
        ctx.store.before_commit = functools.partial(store_repo.commit_pending, signer=keyring.private_key)
        await _backfill_repos(ctx.store, keyring)

        if network:
            # Every request to a host someone else named goes through this one guarded client: no internal
            # addresses after name resolution, on every hop (docs/security.md#outbound-requests).
            policy = ctx.outbound
            session = ctx.http = guarded_session(policy, resolver=ctx.outbound_resolver)
            stack.push_async_callback(session.close)
            ctx.resolver = DidResolver(
                session, plc_url=settings.plc_url, dev=settings.dev, policy=policy, keyring=keyring
            )
            ctx.reader_verifier = ReaderVerifier(settings.service_did, ctx.resolver)
            # Replay claims live in the store so every serving process shares them (engram/store/replays.py).
            replays = StoreReplayGuard(ctx.store)
            ctx.service_verifier = ServiceAuthVerifier(settings.service_did, ctx.resolver, replays=replays)
            ctx.admin_verifier = AdminVerifier(
                settings.public_url, settings.admin_dids, ctx.resolver, replays=replays
            )
            ctx.space_host = SpaceHostAuth.build(
                ctx.resolver, session, dev=settings.dev, policy=policy, replays=replays
            )
            # notifyWrite to the syncers registered for hosted spaces, after each commit (engram/store/repo.py)
            ctx.notifier = WriteNotifier(ctx, session)
            ctx.store.after_commit = ctx.notifier.committed
            stack.push_async_callback(ctx.notifier.close)

        ctx.embedder = await _load_embedder(ctx, lazy_embedder) if embedder else None

        # HNSW builds spread over ENGRAM_BUILD_THREADS cores at a lower priority (engram/workers.py)
        maintenance = WorkerPool(
            1, name="engram-index-build", omp_threads=settings.build_threads, nice=BUILD_NICE
        )
        stack.callback(maintenance.close)
        loads = WorkerPool(settings.load_workers, name="engram-index-load")
        stack.callback(loads.close)
        ctx.index = IndexManager(
            StoreIndexSource(ctx.store),
            ctx.pool,
            settings.data_dir,  # index files go under <data_dir>/indexes/ (engram/search/persist.py)
            exact_max=settings.exact_max,
            split_min_rows=settings.split_min_rows,
            ram_bytes=settings.ram_bytes,
            load_wait_s=settings.load_wait_ms / 1000,
            rerank_deadline_ms=settings.rerank_deadline_ms,
            maintenance_pool=maintenance,
            load_pool=loads,
            snapshots=_snapshot_sync(settings, loads),
        )
        stack.push_async_callback(ctx.index.close)

        ctx.services = Services.build(ctx)
        if network:
            from .sync.syncer import Syncer  # synced spaces: pulls, verifies and indexes member repos

            ctx.syncer = await stack.enter_async_context(Syncer(ctx).running())
        if network and settings.metrics_port and ctx.metrics is not None:
            await stack.enter_async_context(
                serve_metrics(
                    ctx.metrics,
                    settings.host,
                    settings.metrics_port,
                    ctx.index,
                    ctx.services.search.hit_cache,
                )
            )
        yield ctx


def _snapshot_sync(settings: Settings, loads: WorkerPool) -> SnapshotSync | None:
    """The shared index snapshot store, when ENGRAM_INDEX_STORE names one (docs/scale-out.md#index-snapshots)."""
    if settings.index_store is None:
        return None
    store = SnapshotStore.open(settings.index_store, settings.s3_endpoint_url)
    return SnapshotSync(store, settings.data_dir, loads)


async def _backfill_repos(store: Store, keyring) -> None:
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
    ctx.embedder = await _load_embedder(ctx)
    ctx.services = Services.build(ctx)


async def _load_embedder(ctx: AppContext, lazy: bool = False):
    from .embed import load_embedder

    if lazy:
        from .embed.lazy import lazy_embedder

        if (stand_in := lazy_embedder(ctx.settings.embedder)) is not None:
            return stand_in

    # Loading the ONNX session takes ~0.3 s of CPU: do it off the loop, once, and share it.
    embedder = await ctx.pool.run(load_embedder, ctx.settings.embedder)
    if embedder is not None:
        log.info("embedder loaded", extra={"fields": {"model": embedder.name, "digest": embedder.digest}})
    return embedder
