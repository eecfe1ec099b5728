"""Pull one repo of a synced space and verify it (docs/sync.md).

Incremental: page ``listRepoOps`` from the stored rev until a page carries the signed commit, fold every op
into the stored LtHash state, verify the commit (author's ``#atproto`` key, mac) and that the folded state
is the committed hash, then check each record value against its CID. Any mismatch raises, and the caller
falls back to `pull_full`: a ``getRepo`` CAR export checked end to end. A failed signature is retried once
with a freshly resolved key, in case the author rotated it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from engram.atrepo.blocks import cid_of_value
from engram.atrepo.car import verify_repo_car
from engram.atrepo.commit import CommitContext, SignedCommit, verify_commit
from engram.atrepo.errors import CommitVerificationError, RepoFormatError
from engram.atrepo.lthash import LtHash
from engram.atrepo.ops import RepoOp, apply_op, set_hash_of_index
from engram.auth.did_resolver import DocumentSource
from engram.sync import endpoints
from engram.sync.access import HeldCredential
from engram.sync.errors import UpstreamError
from engram.sync.http import XrpcClient

PAGE = 500
MAX_PAGES = 2000


@dataclass
class RepoPull:
    rev: str
    state: bytes
    full: bool  # a whole export: the author's memories not in `records` are gone
    records: dict[str, tuple[str, Any]] = field(default_factory=dict)  # "collection/rkey" -> (cid, value)
    deleted: list[str] = field(default_factory=list)  # "collection/rkey"
    ops: int = 0


CpuRunner = Callable[..., Awaitable[Any]]


async def _inline(fn, *args):
    return fn(*args)


class RepoPuller:
    """``cpu`` runs the hashing and decoding (tens of µs per record) off the event loop: the app passes
    its worker pool's ``run``."""

    def __init__(self, client: XrpcClient, resolver: DocumentSource, cpu: CpuRunner = _inline):
        self._client, self._resolver, self._cpu = client, resolver, cpu

    async def pull_incremental(
        self, space: str, repo: str, since: str, state: bytes, cred: HeldCredential
    ) -> RepoPull:
        host = await endpoints.pds(self._resolver, repo)
        headers = cred.headers(repo)  # audience: the repo owner's DID
        ops: list[RepoOp] = []
        commit, cursor = None, None
        for _ in range(MAX_PAGES):
            page = await self._client.query(
                host,
                "com.atproto.space.listRepoOps",
                {"space": space, "repo": repo, "since": since, "cursor": cursor, "limit": PAGE},
                headers,
            )
            entries = page.get("ops")
            if not isinstance(entries, list):
                raise RepoFormatError("listRepoOps answered without ops")
            ops += [RepoOp.from_json(entry) for entry in entries]
            if page.get("commit") is not None:
                commit = SignedCommit.from_json(page["commit"])
                break
            cursor = page.get("cursor")
            if not entries or not isinstance(cursor, str):
                raise RepoFormatError("listRepoOps stopped before reaching the commit")
        if commit is None:
            raise RepoFormatError("listRepoOps never reached the commit")
        pull, digest = await self._cpu(_fold_and_check, commit.rev, state, ops)
        await self._verify(commit, CommitContext(space, repo, commit.rev), repo, digest)
        return pull

    async def pull_full(self, space: str, repo: str, cred: HeldCredential) -> RepoPull:
        host = await endpoints.pds(self._resolver, repo)
        try:
            car = await self._get_repo(host, space, repo, cred)
        except UpstreamError as e:
            if e.xrpc_error != "RepoNotFound":
                raise
            # The member may have moved to another PDS, which the cached DID document does not say yet: its
            # old PDS no longer holds the repo. Ask the document again before reading the answer as "no
            # repo" (a member who has written nothing in the space yet, or whose repo is gone), which would
            # drop every memory of the member.
            moved = await endpoints.pds(self._resolver, repo, refresh=True)
            if moved == host:
                return RepoPull("", LtHash().state, full=True)
            car = await self._get_repo(moved, space, repo, cred)
        key = await endpoints.atproto_key(self._resolver, repo)
        try:
            return await self._cpu(_verified_export, car, space, repo, key)
        except CommitVerificationError:
            fresh = await endpoints.atproto_key(self._resolver, repo, refresh=True)
            if fresh == key:
                raise
            return await self._cpu(_verified_export, car, space, repo, fresh)

    async def _get_repo(self, host: str, space: str, repo: str, cred: HeldCredential) -> bytes:
        return await self._client.query_bytes(
            host, "com.atproto.space.getRepo", {"space": space, "repo": repo}, cred.headers(repo)
        )

    async def _verify(self, commit: SignedCommit, ctx: CommitContext, repo: str, digest: bytes) -> None:
        key = await endpoints.atproto_key(self._resolver, repo)
        try:
            verify_commit(commit, ctx, key, digest)
        except CommitVerificationError as e:
            if "signature" not in e.message:
                raise
            fresh = await endpoints.atproto_key(self._resolver, repo, refresh=True)
            if fresh == key:
                raise
            verify_commit(commit, ctx, fresh, digest)


def _fold_and_check(rev: str, state: bytes, ops: list[RepoOp]) -> tuple[RepoPull, bytes]:
    """Fold the ops into the stored state; check each path's latest value against its CID."""
    folded = LtHash(state)
    latest: dict[str, RepoOp] = {}
    for op in ops:
        apply_op(folded, op)
        latest[op.path] = op
    pull = RepoPull(rev, folded.state, full=False, ops=len(ops))
    for path, op in latest.items():
        if op.cid is None:
            pull.deleted.append(path)
            continue
        if op.value is None:
            raise RepoFormatError(f"listRepoOps did not inline the latest value of {path}")
        if cid_of_value(op.value) != op.cid:
            raise CommitVerificationError(f"record {path} does not match its CID")
        pull.records[path] = (op.cid, op.value)
    return pull, folded.digest()


def _verified_export(car: bytes, space: str, repo: str, key) -> RepoPull:
    verified = verify_repo_car(car, space, repo, key)
    state = set_hash_of_index(verified.index).state
    records = {r.path: (r.cid, r.value()) for r in verified.records}
    return RepoPull(verified.commit.rev, state, full=True, records=records)
