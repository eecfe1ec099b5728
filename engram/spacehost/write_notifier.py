"""Pushing notifyWrite to the syncers registered for a hosted space, after each commit, notifySpaceDeleted
when the space is deleted and notifyCredentialRevoked when a member is revoked (docs/space-host.md).

The store's writer thread hands every signed commit to `WriteNotifier.committed` once the transaction has
committed; delivery then happens on the event loop, in the background: a service-auth JWT from the space's
authority (aud = the registered service id, lxm = com.atproto.space.notifyWrite) and the body
``{space, repo, repoRev, hash, spaceRev, prevSpaceRev?}``. Commits of one space are delivered in order
(a per-space lock), each with bounded retries on network errors, 5xx, 408 and 429; a syncer that misses one
sees the gap in ``prevSpaceRev`` and catches up with listRepoOps, so delivery is best effort, as the
protocol says. Each registered syncer has a queue of its own: notifications reach it in the space's order,
and a syncer that never answers (each notification costs it its timeout and retries) delays only itself.
At most ``max_pending`` deliveries wait at once; beyond that new ones are dropped with a warning rather
than letting memory grow under a dead syncer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import aiohttp

from ..atrepo.blocks import b64encode
from ..auth.service_jwt import mint_service_jwt
from ..outbound import refused
from ..store import notify_registrations as store_registrations
from ..store.repo import Committed

if TYPE_CHECKING:
    from ..auth.keyring import LocalKeyring
    from ..store.database import Store

log = logging.getLogger("engram.notify")
NOTIFY_NSID = "com.atproto.space.notifyWrite"
DELETED_NSID = "com.atproto.space.notifySpaceDeleted"
REVOKED_NSID = "com.atproto.space.notifyCredentialRevoked"
REVOKED_BATCH = 100  # the lexicon's maxLength of `credentials`
_RETRYABLE = frozenset({408, 429})


def notify_body(commit: Committed) -> dict:
    body = {
        "space": commit.space_uri,
        "repo": commit.repo,
        "repoRev": commit.rev,
        "hash": {"$bytes": b64encode(commit.hash)},
        "spaceRev": commit.rev,  # one repo per hosted space: its rev is the space's sequence
    }
    if commit.prev_rev is not None:
        body["prevSpaceRev"] = commit.prev_rev
    return body


class WriteNotifier:
    def __init__(
        self,
        store: Store,
        keyring: LocalKeyring,
        session: aiohttp.ClientSession,  # the guarded one (engram/outbound.py): endpoints are members' choice
        *,
        backoff: Sequence[float] = (0.5, 2.0, 8.0),
        timeout: float = 5.0,
        max_pending: int = 1000,
    ):
        self._store = store
        self._keyring = keyring
        self._session = session
        self._loop = asyncio.get_running_loop()
        self.backoff = tuple(backoff)  # seconds between delivery attempts (tests shorten them)
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._max_pending = max_pending
        self._tasks: set[asyncio.Task] = set()
        # a space's lock orders the scheduling of its notifications (registrations read, then queued);
        # each registration's lock orders the deliveries to it (asyncio.Lock is FIFO)
        self._space_locks: dict[str, asyncio.Lock] = {}
        self._queues: dict[tuple[str, str], asyncio.Lock] = {}
        self._queued: dict[tuple[str, str], int] = {}
        self.delivered = 0
        self.failed = 0
        self._closed = False

    @property
    def pending(self) -> int:
        """Deliveries scheduled and not finished (a commit's are scheduled before its write returns)."""
        return len(self._tasks)

    def committed(self, commits: list[Committed]) -> None:
        """Called on the store's writer thread after COMMIT. Only commits of spaces somebody registered for
        (read in the commit's own transaction) wake the loop: for the others there is nobody to tell."""
        heard = [commit for commit in commits if commit.registrations]
        if heard and not self._closed:  # writes still draining at shutdown are not announced (syncers poll)
            self._loop.call_soon_threadsafe(self._schedule, heard)

    def _schedule(self, commits: list[Committed]) -> None:
        for commit in commits:
            self._schedule_task(self._notify(commit))

    def space_deleted(
        self, space_uri: str, authority: str, registrations: list[store_registrations.Registration]
    ) -> None:
        """Tell the syncers that were registered for a just-deleted space (called on the loop)."""
        self._schedule_task(self._notify_deleted(space_uri, authority, registrations))

    def member_wrote(self, space_uri: str, authority: str, body: dict) -> None:
        """Pass a member's write on to the space's registered syncers, in order with the space's commits
        (called on the loop; docs/space-host.md#members-repos)."""
        self._schedule_task(self._forward(space_uri, authority, body))

    async def _forward(self, space_uri: str, authority: str, body: dict) -> None:
        async with self._space_locks.setdefault(space_uri, asyncio.Lock()):
            registrations = await self._store.read(
                store_registrations.live_registrations, space_uri, time.time()
            )
            for registration in registrations:
                self._enqueue(registration, space_uri, authority, NOTIFY_NSID, body)

    def credentials_revoked(self, space_uri: str, authority: str, jtis: list[str]) -> None:
        """Tell the syncers registered for a hosted space that these credentials were revoked (called on
        the loop; docs/space-host.md#revoking-credentials)."""
        self._schedule_task(self._notify_revoked(space_uri, authority, jtis))

    def _schedule_task(self, coroutine) -> None:
        task = self._loop.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _notify(self, commit: Committed) -> None:
        lock = self._space_locks.setdefault(commit.space_uri, asyncio.Lock())
        async with lock:  # FIFO: commits of a space are queued for each syncer in order
            for registration in commit.registrations:  # those live when the commit was made
                self._enqueue(registration, commit.space_uri, commit.repo, NOTIFY_NSID, notify_body(commit))

    async def _notify_deleted(self, space_uri: str, authority: str, registrations) -> None:
        async with self._space_locks.setdefault(space_uri, asyncio.Lock()):  # after the space's last writes
            for registration in registrations:
                self._enqueue(registration, space_uri, authority, DELETED_NSID, {"space": space_uri})
        self._space_locks.pop(space_uri, None)

    async def _notify_revoked(self, space_uri: str, authority: str, jtis: list[str]) -> None:
        async with self._space_locks.setdefault(space_uri, asyncio.Lock()):
            registrations = await self._store.read(
                store_registrations.live_registrations, space_uri, time.time()
            )
            for registration in registrations:
                for start in range(0, len(jtis), REVOKED_BATCH):
                    body = {"space": space_uri, "credentials": jtis[start : start + REVOKED_BATCH]}
                    self._enqueue(registration, space_uri, authority, REVOKED_NSID, body)

    def _enqueue(
        self,
        registration: store_registrations.Registration,
        space_uri: str,
        authority: str,
        nsid: str,
        body: dict,
    ) -> None:
        """Queue one delivery behind the earlier ones to the same syncer (created in order, so they take
        its lock in order)."""
        if len(self._tasks) >= self._max_pending:
            log.warning(
                "write notification dropped: too many pending", extra={"fields": {"space": space_uri}}
            )
            return
        key = (space_uri, registration.service)
        lock = self._queues.setdefault(key, asyncio.Lock())
        self._queued[key] = self._queued.get(key, 0) + 1
        self._schedule_task(self._deliver_in_turn(key, lock, registration, space_uri, authority, nsid, body))

    async def _deliver_in_turn(self, key, lock: asyncio.Lock, *delivery) -> None:
        try:
            async with lock:
                await self._deliver(*delivery)
        finally:
            self._queued[key] -= 1
            if not self._queued[key]:  # nothing else queued for this syncer: forget its lock
                del self._queued[key]
                self._queues.pop(key, None)

    async def _deliver(
        self,
        registration: store_registrations.Registration,
        space_uri: str,
        authority: str,
        nsid: str,
        body: dict,
    ) -> None:
        key = self._keyring.private_key(authority)
        if key is None:
            return
        url = f"{registration.endpoint.rstrip('/')}/xrpc/{nsid}"
        status: object = None
        for attempt in range(len(self.backoff) + 1):
            token = mint_service_jwt(key, iss=authority, aud=registration.service, lxm=nsid)
            try:
                async with self._session.post(
                    url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=self._timeout,
                    allow_redirects=False,
                ) as resp:  # fmt: skip
                    status = resp.status
                    if status < 300:
                        self.delivered += 1
                        return
                    if status < 500 and status not in _RETRYABLE:
                        break  # the syncer refused this notification; retrying would not change its mind
            except (aiohttp.ClientError, TimeoutError) as exc:
                status = type(exc).__name__
                if refused(exc):  # an internal address (docs/security.md#outbound-requests): no retry helps
                    status = "refused: internal address"
                    break
            except ValueError:  # no request can be built for this endpoint (e.g. credentials in its URL)
                status = "the endpoint is not a valid URL"
                break
            if attempt < len(self.backoff):
                await asyncio.sleep(self.backoff[attempt])
        self.failed += 1
        log.warning(
            "write notification not delivered",
            extra={"fields": {"space": space_uri, "service": registration.service, "last": str(status)}},
        )

    async def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
