"""One sync pass over a synced space: which repos to pull, in which order, with which limits.

A full pass pages through ``listRepos`` (the writer set), syncs the authority's repo first (its config
decides which vectors are indexed), then every repo whose listed ``spaceRev`` is past the stored one,
and drops repos no longer listed. A targeted pass (a notification without a gap) syncs only the named
repos. Repo syncs run concurrently, bounded per space and per node; a repo that keeps failing is backed
off (its ``retry_after`` is visible in getSpaceStatus) so it cannot hog either bound.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from engram.atrepo.errors import CommitVerificationError, RepoFormatError
from engram.errors import EngramError
from engram.store import synced as store_synced
from engram.sync import endpoints
from engram.sync.access import HeldCredential
from engram.sync.apply import apply_pull
from engram.sync.errors import MalformedAnswer, SpaceNotHeldThere, UpstreamError
from engram.sync.metrics import SyncMetrics
from engram.sync.repo_pull import RepoPull, RepoPuller

log = logging.getLogger("engram.sync")
MAX_LIST_PAGES = 10_000
BACKOFF_BASE, BACKOFF_MAX = 5.0, 3600.0


class SpaceGone(Exception):
    """The space host says the space was deleted (or never existed)."""


@dataclass
class PassDeps:
    store: object
    puller: RepoPuller
    client: object  # XrpcClient
    resolver: object
    metrics: SyncMetrics
    node_slots: asyncio.Semaphore
    space_slots: asyncio.Semaphore
    limit_memories: int = 0
    limit_bytes: int = 0
    now: object = time.time


async def list_repos(
    deps: PassDeps, space: str, authority: str, cred: HeldCredential
) -> dict[str, str | None]:
    """{repo DID: latest spaceRev} of the writer set."""
    host = await endpoints.space_host(deps.resolver, authority)
    listed: dict[str, str | None] = {}
    cursor = None
    for _ in range(MAX_LIST_PAGES):
        try:
            page = await deps.client.query(
                host,
                "com.atproto.space.listRepos",
                {"space": space, "cursor": cursor, "limit": 100},
                cred.headers(authority),
            )
        except SpaceNotHeldThere:
            raise SpaceGone(space) from None
        repos = page.get("repos")
        if not isinstance(repos, list):
            raise UpstreamError("listRepos answered without repos")
        for entry in repos:
            if (
                isinstance(entry, dict)
                and isinstance(entry.get("did"), str)
                and entry["did"].startswith("did:")
            ):
                space_rev = entry.get("spaceRev") if isinstance(entry.get("spaceRev"), str) else None
                listed[entry["did"]] = max(filter(None, (listed.get(entry["did"]), space_rev)), default=None)
        cursor = page.get("cursor")
        if not repos or not isinstance(cursor, str):
            return listed
    raise UpstreamError("listRepos did not end")


async def run_pass(
    deps: PassDeps,
    space: str,
    authority: str,
    cred: HeldCredential,
    repos: dict[str, str | None] | None,
    *,
    writers: dict[str, str | None] | None = None,
) -> bool:
    """Sync ``repos`` ({did: spaceRev or None}), or everything listed when None. Returns True when the
    authority's config changed (the caller then runs one more full pass). ``writers`` is the writer set
    when the caller knows it without asking a space host (engram following the members' repos of a space
    it hosts: docs/space-host.md#members-repos)."""
    full = repos is None
    if full:
        repos = writers if writers is not None else await list_repos(deps, space, authority, cred)
    states = await deps.store.read(store_synced.repo_states, space)
    now = deps.now()

    def due(repo: str) -> bool:
        state = states.get(repo)
        if state is not None and state.retry_after is not None and state.retry_after > now:
            return False  # backing off after failures, whether or not it ever synced
        if state is None or state.rev is None:
            return True
        listed_rev = repos.get(repo)
        return not full or listed_rev is None or state.space_rev is None or listed_rev > state.space_rev

    todo = [repo for repo in repos if due(repo)]
    config_changed = False
    if authority in todo:  # alone and first: its config decides how the others are indexed
        config_changed = await sync_repo(
            deps, space, cred, authority, states.get(authority), repos[authority]
        )
        todo.remove(authority)
        if config_changed:
            states = await deps.store.read(store_synced.repo_states, space)
            todo = [repo for repo in repos if repo != authority]
    await asyncio.gather(
        *(sync_repo(deps, space, cred, repo, states.get(repo), repos[repo]) for repo in sorted(todo))
    )
    if full:
        for repo in set(states) - set(repos):
            await deps.store.write(store_synced.drop_repo, space, repo)
        newest = max(filter(None, repos.values()), default=None)
        await deps.store.write(store_synced.note_space, space, space_rev=newest, full_sync=True)
    return config_changed


async def sync_repo(
    deps: PassDeps, space: str, cred: HeldCredential, repo: str, state, space_rev: str | None
) -> bool:
    """Pull, verify and store one repo. Failures are recorded on the repo (with backoff), never raised."""
    async with deps.space_slots, deps.node_slots:
        mode = "incremental" if state is not None and state.rev and state.set_state else "full"
        try:
            pull = await _pull(deps, space, cred, repo, state, mode)
            if state is not None and state.rev and pull.rev and pull.rev < state.rev:
                # revs are TIDs, ordered in time: an older commit than the one synced is a rollback or a
                # replay, refused (what is indexed stays), never applied as deletions
                raise RepoFormatError(f"the repo answered rev {pull.rev}, older than the synced {state.rev}")
            applied = await deps.store.write(
                apply_pull, space, repo, pull, space_rev, deps.limit_memories, deps.limit_bytes
            )
        except (UpstreamError, RepoFormatError, CommitVerificationError, EngramError) as e:
            asked = e.retry_after_s if isinstance(e, UpstreamError) else None
            await _note_failure(deps, space, repo, state, mode, f"{e.name}: {e.message}", asked)
            return False
        except Exception as e:  # one repo's unforeseen failure is its own, never its space's (logged)
            log.exception("repo sync failed unexpectedly", extra={"fields": {"space": space, "repo": repo}})
            await _note_failure(deps, space, repo, state, mode, f"InternalError: {type(e).__name__}")
            return False
        deps.metrics.syncs.labels("full" if pull.full else "incremental", "ok").inc()
        deps.metrics.ops.inc(pull.ops)
        if applied.invalid:
            deps.metrics.invalid_records.inc(applied.invalid)
            log.warning(
                "memory records not indexed: not valid memories",
                extra={"fields": {"space": space, "repo": repo, "records": applied.invalid}},
            )
        if applied.held_back:
            deps.metrics.over_limit.inc(applied.held_back)
            log.warning(
                "memories held back by a space limit",
                extra={"fields": {"space": space, "repo": repo, "held": applied.held_back}},
            )
        return applied.config_changed


async def _note_failure(
    deps: PassDeps, space: str, repo: str, state, mode: str, error: str, retry_after_s: float | None = None
) -> None:
    """Record the repo's failure with its backoff (shown by getSpaceStatus / `engram space status`): the
    doubling delay, or longer when the far side asked for it (Retry-After), up to the same cap."""
    deps.metrics.syncs.labels(mode, "error").inc()
    failures = (state.failures if state else 0) + 1
    delay = min(max(BACKOFF_BASE * 2 ** (failures - 1), retry_after_s or 0.0), BACKOFF_MAX)
    await deps.store.write(store_synced.note_repo_failure, space, repo, error, deps.now() + delay)
    log.warning("repo sync failed", extra={"fields": {"space": space, "repo": repo, "error": error}})


async def _pull(deps: PassDeps, space: str, cred: HeldCredential, repo: str, state, mode: str) -> RepoPull:
    if mode == "incremental":
        try:
            return await deps.puller.pull_incremental(space, repo, state.rev, state.set_state, cred)
        except (RepoFormatError, CommitVerificationError, MalformedAnswer) as e:
            deps.metrics.verify_failures.inc()
            deps.metrics.fallbacks.inc()
            log.warning(
                "incremental sync did not verify; re-exporting the repo",
                extra={"fields": {"space": space, "repo": repo, "error": e.message}},
            )
        except UpstreamError as e:
            if e.status not in (400, 404):  # an unknown `since` (oplog pruned) falls back; outages do not
                raise
            deps.metrics.fallbacks.inc()
    return await deps.puller.pull_full(space, repo, cred)
