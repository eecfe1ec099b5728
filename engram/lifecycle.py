"""Opening and closing the service's parts, in dependency order (closed in reverse).

The same `open_parts` serves the HTTP service and the CLI's local commands, so both run the very same
service functions over the same store; the CLI simply skips the network-facing parts it does not need.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import aiohttp

from .auth.admin_signature import AdminVerifier
from .auth.did_resolver import DidResolver
from .auth.identity import build_keyring, load_operator_keys, load_or_create_service_key
from .auth.reader import ReaderVerifier
from .auth.service_jwt import ServiceAuthVerifier
from .config import Settings
from .context import AppContext
from .metrics import serve_metrics
from .search.manager import IndexManager
from .service import Services
from .store.database import Store, database_path
from .store.index_source import StoreIndexSource
from .workers import WorkerPool
from .xrpc.lexicons import LexiconRegistry

log = logging.getLogger("engram")


@contextlib.asynccontextmanager
async def open_context(
    settings: Settings, *, network: bool = False, embedder: bool = True
) -> AsyncIterator[AppContext]:
    """A full AppContext outside the HTTP service (the CLI's local commands): same parts, same services."""
    from .app import LEXICON_DIR

    ctx = AppContext(settings, LexiconRegistry.load(LEXICON_DIR), WorkerPool(settings.workers))
    async with open_parts(ctx, network=network, embedder=embedder):
        yield ctx


@contextlib.asynccontextmanager
async def open_parts(
    ctx: AppContext, *, network: bool = True, embedder: bool = True
) -> AsyncIterator[AppContext]:
    settings = ctx.settings
    async with contextlib.AsyncExitStack() as stack:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        stack.callback(ctx.pool.close)

        key = await ctx.pool.run(load_or_create_service_key, settings.data_dir, settings.signing_key)
        operator_keys = await ctx.pool.run(load_operator_keys, settings.data_dir)
        keyring = build_keyring(settings.service_did, key, operator_keys, settings.public_url)
        ctx.identity = keyring.document(settings.service_did)
        ctx.keyring = keyring

        ctx.store = await Store.open(database_path(settings.data_dir))
        stack.push_async_callback(ctx.store.close)
        ctx.direct_reads = ctx.store.readers  # point reads on the calling thread's own connection

        if network:
            session = aiohttp.ClientSession(headers={"User-Agent": "engram (+https://github.com/engram)"})
            stack.push_async_callback(session.close)
            ctx.resolver = DidResolver(session, plc_url=settings.plc_url, dev=settings.dev, keyring=keyring)
            ctx.reader_verifier = ReaderVerifier(settings.service_did, ctx.resolver)
            ctx.service_verifier = ServiceAuthVerifier(settings.service_did, ctx.resolver)
            ctx.admin_verifier = AdminVerifier(settings.public_url, settings.admin_dids, ctx.resolver)

        ctx.embedder = await _load_embedder(ctx) if embedder else None

        maintenance = WorkerPool(1, name="engram-index-build")
        stack.callback(maintenance.close)
        ctx.index = IndexManager(
            StoreIndexSource(ctx.store),
            ctx.pool,
            settings.data_dir,  # index files go under <data_dir>/indexes/ (engram/search/persist.py)
            exact_max=settings.exact_max,
            ram_bytes=settings.ram_bytes,
            load_wait_s=settings.load_wait_ms / 1000,
            rerank_deadline_ms=settings.rerank_deadline_ms,
            maintenance_pool=maintenance,
        )
        stack.push_async_callback(ctx.index.close)

        ctx.services = Services.build(ctx)
        if network and settings.metrics_port and ctx.metrics is not None:
            await stack.enter_async_context(
                serve_metrics(ctx.metrics, settings.host, settings.metrics_port, ctx.index)
            )
        yield ctx


async def _load_embedder(ctx: AppContext):
    from .embed import load_embedder

    # Loading the ONNX session takes ~0.3 s of CPU: do it off the loop, once, and share it.
    embedder = await ctx.pool.run(load_embedder, ctx.settings.embedder)
    if embedder is not None:
        log.info("embedder loaded", extra={"fields": {"model": embedder.name, "digest": embedder.digest}})
    return embedder
