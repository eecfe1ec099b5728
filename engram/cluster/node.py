"""`ClusterNode`: this process as one node of the cluster, from start-up to clean shutdown.

`ClusterNode.running(ctx)` registers the node (one heartbeat before anything
is served, so peers see it at once), and then runs the heartbeat loop and the write listener until the app
stops; on a clean stop it expires its leases so peers take its spaces over on their next heartbeat instead
of waiting out the lease timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import aiohttp
import psycopg

from engram.cluster.forwarding import hop_key, peer_session
from engram.cluster.listener import listen_for_writes
from engram.cluster.metrics import ClusterMetrics
from engram.cluster.ownership import Ownership, OwnershipEvents

if TYPE_CHECKING:
    from engram.context import AppContext

log = logging.getLogger(__name__)


class ClusterNode:
    def __init__(
        self,
        ownership: Ownership,
        session: aiohttp.ClientSession,
        metrics: ClusterMetrics,
        hop_key: bytes = b"",
    ):
        self.ownership = ownership
        self.hop_key = hop_key  # signs and checks forwarded hops (engram/cluster/forwarding.py)
        self.session = session
        self.metrics = metrics
        self._unloads: set[asyncio.Task] = set()

    @classmethod
    @contextlib.asynccontextmanager
    async def running(cls, ctx: AppContext) -> AsyncIterator[ClusterNode]:
        settings = ctx.settings
        config = settings.node  # ENGRAM_NODE_URL, _NODE_ID, _HEARTBEAT_MS, _LEASE_TIMEOUT_MS
        assert settings.database_url and config.node_url and config.node_id  # settings.cluster
        async with contextlib.AsyncExitStack() as stack:
            conn = await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True)
            stack.push_async_callback(conn.close)
            # The cluster's tables and write trigger are the store's migration 0008, applied when the
            # store opened (before this node starts).
            holder: list[ClusterNode] = []
            events = OwnershipEvents(
                acquired=lambda space, epoch: holder[0]._acquired(ctx, space),
                lost=lambda space: holder[0]._moved(ctx, space, "lost"),
                released=lambda space: holder[0]._moved(ctx, space, "handed_over"),
            )
            ownership = Ownership(
                conn, config.node_id, config.node_url, config.lease_timeout_ms, events, _store_has(ctx)
            )
            registry = ctx.metrics.registry if ctx.metrics is not None else None
            metrics = ClusterMetrics(registry, lambda: len(ownership.held))
            session = peer_session(timeout_s=max(30.0, config.lease_timeout_ms / 1000))
            stack.push_async_callback(session.close)
            node = cls(ownership, session, metrics, hop_key(ctx.keyring.private_key(settings.service_did)))
            holder.append(node)
            await ownership.beat()
            log.info(
                "cluster node registered",
                extra={
                    "fields": {
                        "node": config.node_id,
                        "url": config.node_url,
                        "live": len(ownership.live),
                    }
                },
            )
            tasks = [
                asyncio.ensure_future(node._heartbeats(ctx)),
                asyncio.ensure_future(
                    listen_for_writes(
                        settings.database_url,
                        ownership.holds,
                        ctx.index.catch_up,
                        on_owned=metrics.write_notifications.inc,
                    )
                ),
            ]
            try:
                yield node
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                with contextlib.suppress(psycopg.Error):
                    await ownership.leave()

    async def _heartbeats(self, ctx: AppContext) -> None:
        interval = ctx.settings.node.heartbeat_ms / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.ownership.beat()
            except Exception as exc:  # noqa: BLE001 - the heartbeat must outlive any one failure
                # Leases are trusted locally only until their expiry, so a node cut off from the database
                # stops serving its spaces on time; it keeps trying (reconnecting if the link broke).
                self.metrics.heartbeat_failures.inc()
                log.warning("heartbeat failed: %r", exc)
                await self._reconnect(ctx)
                continue
            self.metrics.live_nodes.set(len(self.ownership.live))

    async def _reconnect(self, ctx: AppContext) -> None:
        if not (self.ownership.conn.closed or self.ownership.conn.broken):
            return
        with contextlib.suppress(psycopg.Error):
            self.ownership.conn = await psycopg.AsyncConnection.connect(
                ctx.settings.database_url, autocommit=True
            )

    def _acquired(self, ctx: AppContext, space: str) -> None:
        """This node serves `space` now: count it, and start syncing it if it is a synced space."""
        self.metrics.lease_changes.labels("acquired").inc()
        if ctx.syncer is not None:
            self._background(_sync_work(ctx.syncer.adopt, space))

    def _moved(self, ctx: AppContext, space: str, change: str) -> None:
        """Another node serves `space` now: count it, stop syncing it here, and free its index memory in the
        background (saving it first, so the new owner loads a current file instead of building)."""
        self.metrics.lease_changes.labels(change).inc()
        if ctx.syncer is not None:
            self._background(_sync_work(ctx.syncer.release, space))
        self._background(_unload(ctx, space))

    def _background(self, work) -> None:
        task = asyncio.ensure_future(work)
        self._unloads.add(task)
        task.add_done_callback(self._unloads.discard)


async def _unload(ctx: AppContext, space: str) -> None:
    try:
        await ctx.index.unload(space)
    except Exception:  # the lease is gone either way; a failed save only means the new owner builds
        log.exception("unloading %s after its lease moved failed", space)


async def _sync_work(step, space: str) -> None:
    try:
        await step(space)
    except Exception:  # the next poll settles who syncs the space
        log.exception("moving the sync of %s failed", space)


def _store_has(ctx: AppContext):
    async def exists(space: str) -> bool:
        found = await ctx.services.spaces.find(space)
        return found is not None and not found.deleted

    return exists
