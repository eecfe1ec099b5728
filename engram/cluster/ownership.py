"""`Ownership`: this node's view of who serves which space, kept in step with PostgreSQL.

The lease is the truth: a node serves a space only while it holds the space's valid lease, and a request
for a space held elsewhere is forwarded to the holder. Rendezvous hashing over the live nodes decides who
*should* hold it: that node takes a free or expired lease (on the first request, or at once on its
heartbeat when a lease lapses), and a holder that is no longer the rendezvous owner (a node joined)
releases it on its next heartbeat. docs/scale-out.md#nodes-and-ownership.

A held lease is trusted locally until `renewed_at + lease_timeout` on this node's monotonic clock, where
`renewed_at` is taken *before* the renewing statement, so the local view expires no later than the row.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import psycopg

from engram.cluster import leases, rendezvous
from engram.errors import Unavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Route:
    """Where a request for a space goes: served here (`url` None) or forwarded to `url`."""

    url: str | None = None
    node_id: str | None = None

    @property
    def local(self) -> bool:
        return self.url is None


LOCAL = Route()


@dataclass
class _Held:
    epoch: int
    valid_until: float  # time.monotonic()


@dataclass
class OwnershipEvents:
    """What the node does when leases change hands (release the index, count it)."""

    acquired: Callable[[str, int], None] = lambda space, epoch: None
    # Both run on the heartbeat's path: they must return at once (start a task for slow work).
    lost: Callable[[str], None] = lambda space: None  # taken over by another node after it expired
    released: Callable[[str], None] = lambda space: None  # handed over to a new rendezvous owner


class Ownership:
    def __init__(
        self,
        conn: psycopg.AsyncConnection,
        node_id: str,
        node_url: str,
        lease_timeout_ms: int,
        events: OwnershipEvents | None = None,
        exists: Callable[[str], Awaitable[bool]] | None = None,
    ):
        self.conn = conn
        self.node_id = node_id
        self.node_url = node_url
        self.lease_timeout_ms = lease_timeout_ms
        self.events = events or OwnershipEvents()
        # Whether the store knows the space: a request naming a space that does not exist is answered
        # where it arrives (UnknownSpace), so made-up URIs never create lease rows or cause forwards.
        self.exists = exists
        self.held: dict[str, _Held] = {}
        self.live: dict[str, str] = {node_id: node_url}  # node id -> URL, refreshed every heartbeat
        self.urls: dict[str, str] = {node_id: node_url}  # every registered node, live or not
        self._holders: dict[str, str] = {}  # space -> other node holding it (cleared every heartbeat)
        self._acquiring: dict[str, asyncio.Task[int | None]] = {}
        # space -> its rendezvous owner among the live nodes, kept until membership changes: every heartbeat
        # checks every held space, and 10k spaces x N sha256 each time would be loop time for nothing.
        self._wanted: dict[str, str] = {}

    # ----- the heartbeat ---------------------------------------------------------------------------

    async def beat(self) -> None:
        """One heartbeat: register, refresh the live nodes, renew what still hashes here, hand over what
        does not, and take over lapsed leases that now hash here."""
        await leases.heartbeat(self.conn, self.node_id, self.node_url)
        registered = await leases.nodes(self.conn, self.lease_timeout_ms)
        self.urls = {n.node_id: n.url for n in registered}
        live = {n.node_id: n.url for n in registered if n.live}
        live[self.node_id] = self.node_url
        if live.keys() != self.live.keys():
            self._wanted.clear()  # membership changed: rendezvous answers may have too
        self.live = live
        self._holders.clear()

        keep = [s for s in self.held if self._rendezvous_owner(s) == self.node_id]
        give = [s for s in self.held if s not in keep]
        started = time.monotonic()
        kept = await leases.renew(self.conn, self.node_id, keep, self.lease_timeout_ms)
        for space in keep:
            if space in kept:
                self.held[space].valid_until = started + self.lease_timeout_ms / 1000
            else:
                del self.held[space]
                log.warning("lease lost", extra={"fields": {"space": space}})
                self.events.lost(space)
        if give:
            await leases.release(self.conn, self.node_id, give)
            for space in give:
                del self.held[space]
                self.events.released(space)
            log.info("leases handed over", extra={"fields": {"spaces": len(give)}})

        for space in await leases.expired_spaces(self.conn):
            if space not in self.held and self._rendezvous_owner(space) == self.node_id:
                await self._acquire(space)

    def _rendezvous_owner(self, space: str) -> str:
        owner = self._wanted.get(space)
        if owner is None:
            owner = self._wanted[space] = rendezvous.owner(space, self.live) or self.node_id
        return owner

    async def leave(self) -> None:
        """A clean shutdown: expire our leases and unregister, so peers take over on their next beat."""
        await leases.forget_node(self.conn, self.node_id)
        self.held.clear()

    # ----- routing a request -----------------------------------------------------------------------

    def holds(self, space: str) -> bool:
        held = self.held.get(space)
        return held is not None and time.monotonic() < held.valid_until

    def epoch(self, space: str) -> int | None:
        """The fencing token of a lease this node holds (None when it holds none)."""
        return self.held[space].epoch if self.holds(space) else None

    async def route(self, space: str, *, forwarded: bool = False) -> Route:
        """Serve here or forward. A request that was already forwarded is never forwarded again: the
        sender believed this node is the owner, so it takes the lease if nobody holds it and otherwise
        refuses with 503 NotOwner (the client retries; views converge within a heartbeat)."""
        if self.holds(space):
            return LOCAL
        try:
            return await self._route(space, forwarded)
        except psycopg.Error as exc:
            raise Unavailable(
                "the cluster's database did not answer; retry", "ClusterUnavailable", retry_after=1
            ) from exc

    async def _route(self, space: str, forwarded: bool) -> Route:
        holder = self._holders.get(space)
        if holder is not None and holder in self.live and not forwarded:
            return Route(self.live[holder], holder)
        if self.exists is not None and not await self.exists(space):
            return LOCAL
        lease = await leases.lease_of(self.conn, space)
        if lease is not None and lease.valid and lease.owner != self.node_id:
            return await self._elsewhere(space, lease.owner, forwarded)
        target = self.node_id if forwarded else self._rendezvous_owner(space)
        if target != self.node_id:
            return Route(self.live[target], target)
        if await self._acquire(space) is not None:
            return LOCAL
        lease = await leases.lease_of(self.conn, space)  # lost a race for it: follow the winner
        if lease is None or lease.owner == self.node_id:
            raise Unavailable(f"the owner of {space} is changing; retry", "NotOwner", retry_after=1)
        return await self._elsewhere(space, lease.owner, forwarded)

    async def _elsewhere(self, space: str, owner: str, forwarded: bool) -> Route:
        url = self.live.get(owner) or self.urls.get(owner)
        if url is None and not forwarded:  # a node registered since our last heartbeat
            self.urls = {n.node_id: n.url for n in await leases.nodes(self.conn, self.lease_timeout_ms)}
            url = self.urls.get(owner)
        if forwarded or url is None:
            raise Unavailable(f"{space} is served by another node; retry", "NotOwner", retry_after=1)
        self._holders[space] = owner
        return Route(url, owner)

    def forget_holder(self, space: str) -> None:
        """The holder did not answer: look the lease up again next time."""
        self._holders.pop(space, None)

    async def _acquire(self, space: str) -> int | None:
        """Take the lease once however many requests ask at the same time."""
        task = self._acquiring.get(space)
        if task is None:
            task = asyncio.ensure_future(self._take(space))
            self._acquiring[space] = task
            task.add_done_callback(lambda _: self._acquiring.pop(space, None))
        return await asyncio.shield(task)

    async def _take(self, space: str) -> int | None:
        started = time.monotonic()
        epoch = await leases.acquire(self.conn, space, self.node_id, self.lease_timeout_ms)
        if epoch is not None:
            self.held[space] = _Held(epoch, started + self.lease_timeout_ms / 1000)
            self.events.acquired(space, epoch)
            log.info("lease acquired", extra={"fields": {"space": space, "epoch": epoch}})
        return epoch
