"""The syncer: keeps every synced space up to date (docs/sync.md).

- notifications (`notify_write`) name a repo; a gap in ``prevSpaceRev`` (or a space with no config yet)
  turns into a full pass instead;
- every ENGRAM_POLL_INTERVAL seconds each space gets a full pass: the backstop, and the only mechanism for
  deployments without a public https URL;
- when ENGRAM_PUBLIC_URL is https, engram registers for notifications at each space host and renews the
  registration at half its lifetime (retrying after 5 minutes on failure).

The same passes follow the members' repos of the spaces engram hosts (docs/space-host.md#members-repos):
the writer set is engram's own (`hosted_writers`, kept from the members' repo hosts' notifyWrite), the
credential is minted locally with the authority's key, and each repo is pulled from the member's PDS,
verified against its signed commit and indexed like a synced space's; the poll is the backstop here too.

In cluster mode a synced space is synced by the node that holds its lease, as its searches are served
there (docs/scale-out.md#synced-spaces-in-a-cluster): the poll skips other nodes' spaces, a node that takes
a lease starts a full pass at once, and one that loses or hands over a lease stops that space's work.
Notifications reaching another node are forwarded to the holder (engram/cluster/middleware.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from engram.errors import EngramError, InvalidInput, UnknownSpace
from engram.store import hosted_writers as store_writers
from engram.store import synced as store_synced
from engram.sync import endpoints
from engram.sync.access import AppPasswordAccess, CredentialManager, DelegationSource, HostedCredentials
from engram.sync.errors import SpaceDeletedThere, UpstreamError
from engram.sync.http import XrpcClient
from engram.sync.metrics import SyncMetrics
from engram.sync.registration import register_app_password_space
from engram.sync.repo_pull import RepoPuller
from engram.sync.runner import SpaceRunner
from engram.sync.secrets import SecretStore
from engram.sync.space_pass import BACKOFF_BASE, PassDeps, SpaceGone, run_pass

log = logging.getLogger("engram.sync")
REGISTER_RETRY = 300.0


class Syncer:
    def __init__(self, ctx: Any):
        self.ctx = ctx
        settings = ctx.settings
        self.settings = settings
        self.config = settings.sync  # ENGRAM_POLL_INTERVAL, ENGRAM_SYNC_*, ENGRAM_LIMIT_*
        self.secrets = SecretStore(settings.data_dir)
        self.metrics = SyncMetrics(ctx.metrics.registry if ctx.metrics is not None else None)
        self._runners: dict[str, SpaceRunner] = {}
        self._sources: dict[str, DelegationSource] = {}
        self._registrations: dict[str, asyncio.Task] = {}
        self.registered_until: dict[str, float] = {}
        self._tasks: list[asyncio.Task] = []
        self._session: aiohttp.ClientSession | None = None
        self.poll_ticks = 0  # completed poll rounds (status and tests)
        # space -> (failed passes in a row, no pass before): a space whose access or host fails is left
        # alone for a doubling while (5 s, capped at the poll interval: the poll then tries it as always), so
        # a revoked app password is not tried again on every notification
        self._space_backoff: dict[str, tuple[int, float]] = {}

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Syncer]:
        # The service's guarded client (engram/outbound.py): PDS and space-host URLs come from DID documents.
        self._session = self.ctx.http
        self.client = XrpcClient(self._session, self.config.sync_timeout, self.ctx.outbound)
        self.credentials = CredentialManager(self.client, self.ctx.resolver)
        self.hosted_credentials = HostedCredentials(self.ctx.keyring.private_key)
        self.deps = PassDeps(
            store=self.ctx.store,
            puller=RepoPuller(self.client, self.ctx.resolver, self.ctx.pool.run),
            client=self.client,
            resolver=self.ctx.resolver,
            metrics=self.metrics,
            node_slots=asyncio.Semaphore(self.config.sync_concurrency),
            space_slots=asyncio.Semaphore(self.config.sync_space_concurrency),  # replaced per space below
            limit_memories=self.config.limit_memories,
            limit_bytes=self.config.limit_bytes,
        )
        self._space_slots: dict[str, asyncio.Semaphore] = {}
        if self.settings.process_index == 0:
            # One poller over the data directory: with ENGRAM_PROCESSES > 1 the others only answer
            # notifications and admin calls (docs/internals.md#using-every-core).
            self._tasks.append(asyncio.get_running_loop().create_task(self._poll_loop(), name="sync poll"))
        try:
            yield self
        finally:
            for task in [*self._tasks, *self._registrations.values()]:
                task.cancel()
            await asyncio.gather(*self._tasks, *self._registrations.values(), return_exceptions=True)
            await asyncio.gather(*(runner.close() for runner in self._runners.values()))
            # the session is the service's: open_parts closes it after the syncer stops

    # -- registering spaces -------------------------------------------------------------------------

    async def add_space(self, uri: str, account: str, app_password: str, pds_url: str | None = None):
        synced = await register_app_password_space(
            self.ctx.store, self.secrets, uri, account, app_password, pds_url
        )
        self._sources.pop(uri, None)
        self.credentials.forget(uri)
        self._space_backoff.pop(uri, None)  # new access: try it now
        if await self._syncs_here(uri):  # else its holder's next poll starts it
            self.request(uri, full=True)
            self._ensure_registration(uri)
        return synced

    # -- cluster mode: one node syncs each space ------------------------------------------------------

    async def _syncs_here(self, uri: str) -> bool:
        """Whether this node syncs `uri`: always on a single node; in cluster mode only while it holds the
        space's lease (asking takes the lease when the space hashes here and nobody holds it)."""
        if not self.settings.cluster:
            return True
        node = self.ctx.cluster
        if node is None:  # the cluster node starts after the syncer; until it runs, nothing is ours
            return False
        try:
            return (await node.ownership.route(uri)).local
        except EngramError:  # ClusterUnavailable: no database to ask; the next poll asks again
            return False

    async def adopt(self, uri: str) -> None:
        """This node just took `uri`'s lease: if it is a synced space, catch up now rather than at the next
        poll (the previous holder may have died mid-pass)."""
        if await self.ctx.store.read(store_synced.get_synced_space, uri) is not None:
            self.request(uri, full=True)
            self._ensure_registration(uri)

    async def release(self, uri: str) -> None:
        """Another node syncs `uri` now: stop its pass and notification registration here (the secrets
        stay: the lease may come back)."""
        runner = self._runners.pop(uri, None)
        if runner is not None:
            await runner.close()
        registration = self._registrations.pop(uri, None)
        if registration is not None:
            registration.cancel()
        self.credentials.forget(uri)

    def syncing(self, uri: str) -> bool:
        """Whether this node has run or is running sync work for `uri` (status and tests)."""
        return uri in self._runners

    def _source(self, synced: store_synced.SyncedSpace) -> DelegationSource:
        source = self._sources.get(synced.uri)
        if source is None:
            if synced.access_kind != "app_password":
                raise InvalidInput(f"unknown read-access kind {synced.access_kind!r}")
            source = AppPasswordAccess(
                synced.uri,
                synced.access["account"],
                self.client,
                self.ctx.resolver,
                self.secrets,
                synced.access.get("pds"),
            )
            self._sources[synced.uri] = source
        return source

    # -- running passes ------------------------------------------------------------------------------

    def request(self, uri: str, *, full: bool = False, repos: dict[str, str | None] | None = None) -> None:
        runner = self._runners.get(uri)
        if runner is None:
            runner = self._runners[uri] = SpaceRunner(uri, lambda f, r, uri=uri: self._pass(uri, f, r))
        runner.request(full=full, repos=repos)

    async def _pass(self, uri: str, full: bool, repos: dict[str, str | None]) -> bool:
        synced = await self.ctx.store.read(store_synced.get_synced_space, uri)
        slots = self._space_slots.setdefault(uri, asyncio.Semaphore(self.config.sync_space_concurrency))
        deps = PassDeps(**{**self.deps.__dict__, "space_slots": slots})
        if synced is None:
            return await self._hosted_pass(deps, uri, full, repos)
        failed, not_before = self._space_backoff.get(uri, (0, 0.0))
        if time.monotonic() < not_before:
            return False  # the pass after the backoff (or the next poll) catches up
        try:
            cred = await self.credentials.get(uri, self._source(synced))
            again = await run_pass(deps, uri, synced.authority, cred, None if full else repos)
        except (SpaceGone, SpaceDeletedThere):  # listRepos: deleted or not held; the exchange: deleted
            await self.drop_space(uri)
            return False
        except (EngramError, UpstreamError) as e:
            if getattr(e, "status", 0) == 401:
                self.credentials.forget(
                    uri
                )  # refused (revoked, or the host's clock is ahead): re-exchange next time
            delay = min(BACKOFF_BASE * 2**failed, max(self.config.poll_interval, BACKOFF_BASE))
            self._space_backoff[uri] = (failed + 1, time.monotonic() + delay)
            await self.ctx.store.write(store_synced.note_space, uri, error=f"{e.name}: {e.message}")
            log.warning("space sync failed", extra={"fields": {"space": uri, "error": e.message}})
            return False
        self._space_backoff.pop(uri, None)
        return again

    async def _hosted_pass(self, deps: PassDeps, uri: str, full: bool, repos: dict[str, str | None]) -> bool:
        """Follow the members' repos of a space engram hosts (docs/space-host.md#members-repos)."""
        space = await self.ctx.services.spaces.find(uri)
        if space is None or space.deleted or space.kind != "hosted":
            return False
        cred = self.hosted_credentials.get(uri, space.authority)
        if cred is None:  # engram no longer holds the authority's key: nothing it could read with
            return False
        writers = await self.ctx.store.read(store_writers.followed_repos, uri)
        writers.pop(space.authority, None)  # the authority's repo is engram's own
        if full:
            # The backstop asks every repo host, not only those whose notification moved the repo's space
            # rev: the one push that did not arrive leaves the rev where it was (an incremental pull of a
            # repo that did not change is one listRepoOps page).
            writers = dict.fromkeys(writers)
        else:
            repos = {repo: rev for repo, rev in repos.items() if repo in writers}
        try:
            await run_pass(deps, uri, space.authority, cred, None if full else repos, writers=writers)
        except (EngramError, UpstreamError) as e:
            log.warning("member repos sync failed", extra={"fields": {"space": uri, "error": e.message}})
        return False

    def member_wrote(self, uri: str, repo: str, space_rev: str) -> None:
        """A member's repo host told engram, as space host, of a write: pull that repo now."""
        self.metrics.notifications.labels("write").inc()
        self.request(uri, repos={repo: space_rev})

    def member_left(self, uri: str) -> None:
        """A member lost write access: a full pass drops the repos no longer tracked."""
        self.request(uri, full=True)

    async def drop_space(self, uri: str) -> None:
        runner = self._runners.pop(uri, None)
        if runner is not None and runner._task is not asyncio.current_task():
            await runner.close()
        registration = self._registrations.pop(uri, None)
        if registration is not None:
            registration.cancel()
        self.credentials.forget(uri)
        self._sources.pop(uri, None)
        await asyncio.to_thread(self.secrets.delete, uri)
        await self.ctx.services.spaces.delete(uri)

    # -- notifications -------------------------------------------------------------------------------

    async def notify_write(self, uri: str, repo: str, space_rev: str, prev_space_rev: str | None) -> None:
        synced = await self.ctx.store.read(store_synced.get_synced_space, uri)
        if synced is None:
            raise UnknownSpace(f"this service does not sync the space {uri}")
        self.metrics.notifications.labels("write").inc()
        last = synced.last_space_rev
        space = await self.ctx.services.spaces.find(uri)
        gap = prev_space_rev is not None and (last is None or prev_space_rev > last)
        await self.ctx.store.write(store_synced.note_space, uri, space_rev=space_rev)
        if gap or space.config is None:
            self.request(uri, full=True)
        else:
            self.request(uri, repos={repo: space_rev})

    # -- background loops ----------------------------------------------------------------------------

    async def _poll_loop(self) -> None:
        interval = self.config.poll_interval
        first = True
        while True:
            if self.settings.cluster and self.ctx.cluster is None:
                await asyncio.sleep(0.1)  # the cluster node is still starting: ownership is not known yet
                continue
            try:
                spaces = await self.ctx.store.read(store_synced.list_synced_spaces)
                for synced in spaces:
                    if not await self._syncs_here(synced.uri):
                        await self.release(synced.uri)
                        continue
                    if interval > 0 or first:
                        self.request(synced.uri, full=True)
                    self._ensure_registration(synced.uri)
                for uri in await self.ctx.store.read(store_writers.followed_spaces):
                    if not await self._syncs_here(uri):
                        await self.release(uri)
                    elif interval > 0 or first:
                        self.request(uri, full=True)  # the backstop for a lost member notification
                first = False
                self.poll_ticks += 1
            except Exception:  # the backstop must outlive a failed tick (e.g. the database briefly busy)
                log.exception("sync poll tick failed")
            await asyncio.sleep(interval if interval > 0 else 60.0)

    def _ensure_registration(self, uri: str) -> None:
        """Space hosts only deliver to public https endpoints; local deployments rely on polling."""
        if _is_https(self.settings.public_url) and uri not in self._registrations:
            self._registrations[uri] = asyncio.get_running_loop().create_task(
                self._register_loop(uri), name=f"registerNotify {uri}"
            )

    async def _register_loop(self, uri: str) -> None:
        service = f"{self.settings.service_did}#atproto_space_syncer"
        while True:
            delay = REGISTER_RETRY
            try:
                synced = await self.ctx.store.read(store_synced.get_synced_space, uri)
                if synced is None:
                    return
                cred = await self.credentials.get(uri, self._source(synced))
                host = await endpoints.space_host(self.ctx.resolver, synced.authority)
                answer = await self.client.procedure(
                    host,
                    "com.atproto.space.registerNotify",
                    {"space": uri, "service": service},
                    cred.headers(synced.authority),
                )
                expires = _parse_time(answer.get("expiresAt"))
                if expires is not None:
                    self.registered_until[uri] = expires
                    delay = max((expires - time.time()) / 2, 60.0)
            except asyncio.CancelledError:
                raise
            except EngramError as e:
                log.warning("registerNotify failed: %s", e.message, extra={"fields": {"space": uri}})
            await asyncio.sleep(delay)

    # -- status --------------------------------------------------------------------------------------

    def lag_seconds(self, uri: str) -> float:
        runner = self._runners.get(uri)
        if runner is None or runner.owed_since is None:
            return 0.0
        return max(time.time() - runner.owed_since, 0.0)

    def idle(self, uri: str) -> bool:
        runner = self._runners.get(uri)
        return runner is None or not runner.busy


def _is_https(url: str) -> bool:
    return urlsplit(url).scheme == "https"


def _parse_time(value: Any) -> float | None:
    from datetime import datetime

    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None
