"""The authority's repo of a hosted space, verified the way a syncer verifies it (engram.atrepo): after any
sequence of hosted writes and deletes the served commits verify, listRepoOps folds to the signed LtHash
(from scratch and from a mid-way rev), and getRepo's CAR holds exactly the live records."""

from __future__ import annotations

import asyncio
import itertools
import secrets

import numpy as np
import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.member_world import MODEL

from engram.app import create_app
from engram.app_keys import context_key
from engram.atrepo.car import verify_repo_car
from engram.atrepo.commit import CommitContext, SignedCommit, verify_commit
from engram.atrepo.lthash import LtHash
from engram.atrepo.ops import RepoOp, apply_op
from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.space_signature import sign_space_request
from engram.store import Embedding, MemoryWrite
from engram.store.tid import new_tid

MEMORY = "garden.engram.memory"


class RepoClient:
    """A syncer's view of the repo: credentialed reads addressed to the repo owner (the authority)."""

    def __init__(self, client: TestClient, space: str, authority: str, authority_key: PrivateKey):
        holder = PrivateKey.generate("ES256")
        credential = mint_space_credential(
            authority_key, issuer=authority, space=space, holder_did_key=holder.public_key.did_key
        )
        self.client, self.space, self.authority = client, space, authority
        self.headers = sign_space_request(holder, credential, authority)

    async def get(self, nsid: str, **params):
        params = {"space": self.space, **params}
        params = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()}
        return await self.client.get(f"/xrpc/{nsid}", params=params, headers=self.headers)

    async def json(self, nsid: str, **params) -> dict:
        r = await self.get(nsid, **params)
        assert r.status == 200, await r.text()
        return await r.json()

    async def fold_ops(self, state: LtHash, since: str | None = None, limit: int = 3):
        """Page through listRepoOps from `since`, folding every op; returns (state, head commit, ops)."""
        params, ops = ({"since": since} if since else {}), []
        while True:
            page = await self.json(
                "com.atproto.space.listRepoOps", repo=self.authority, limit=limit, **params
            )
            for entry in page["ops"]:
                op = RepoOp.from_json(entry)
                apply_op(state, op)
                ops.append(op)
            if "commit" in page:
                return state, SignedCommit.from_json(page["commit"]), ops
            params = {"cursor": page["cursor"]}


def _write(author: str, text: str, rkey: str, vector_seed: int) -> MemoryWrite:
    vector = np.random.default_rng(vector_seed).standard_normal(MODEL.dims).astype(np.float16)
    return MemoryWrite(
        author=author,
        text=text,
        rkey=rkey,
        embedding=Embedding(MODEL.model, MODEL.digest, MODEL.dims, vector),
    )


async def _run(host_settings, steps) -> None:
    client = TestClient(TestServer(await create_app(host_settings)))
    await client.start_server()
    try:
        ctx = client.app[context_key]
        authority = ctx.settings.service_did
        key = ctx.keyring.private_key(authority)
        space = (await ctx.services.spaces.create_hosted(f"fuzz-{secrets.token_hex(4)}", model=MODEL)).uri
        rkeys = [new_tid() for _ in range(6)]
        live: dict[str, str] = {}  # rkey -> text
        repo = RepoClient(client, space, authority, key)
        checkpoint = None
        for i, (action, slot, version) in enumerate(steps):
            rkey = rkeys[slot]
            if action == "put":
                text = f"memory {slot} version {version}"
                await ctx.services.memories.write(space, [_write(authority, text, rkey, slot * 10 + version)])
                live[rkey] = text
            else:
                await ctx.services.memories.delete(space, authority, rkey)
                live.pop(rkey, None)
            if i == len(steps) // 2:
                checkpoint = await repo.fold_ops(LtHash())

        # From scratch: the ops add up to the signed head, and the commit verifies with the authority's key.
        state, commit, ops = await repo.fold_ops(LtHash())
        public = (await ctx.resolver.resolve(authority)).key("#atproto")
        verify_commit(commit, CommitContext(space, authority, commit.rev), public, set_hash=state.digest())
        latest = await repo.json("com.atproto.space.getLatestCommit", repo=authority)
        assert SignedCommit.from_json(latest["commit"]) == commit
        assert ops and ops[-1].rev == commit.rev and all(a.rev <= b.rev for a, b in itertools.pairwise(ops))

        # Incrementally, from the mid-way head a syncer would have stored.
        if checkpoint is not None:
            mid_state, mid_commit, _ = checkpoint
            again, head, _ = await repo.fold_ops(mid_state, since=mid_commit.rev)
            assert head == commit and again.digest() == state.digest()

        # The CAR export verifies end to end and holds exactly the config and the live memories.
        car = await repo.get("com.atproto.space.getRepo", repo=authority)
        assert car.status == 200 and car.content_type == "application/vnd.ipld.car"
        verified = verify_repo_car(await car.read(), space, authority, public)
        memories = {m.rkey: m for m in (await ctx.services.memories.list(space, limit=100))[0]}
        assert set(memories) == set(live)
        expected = {f"{MEMORY}/{rkey}": m.cid for rkey, m in memories.items()}
        assert {p: c for p, c in verified.index.items() if p.startswith(MEMORY)} == expected
        assert "garden.engram.config/self" in verified.index
        listed = await repo.json(
            "com.atproto.space.listRecords", repo=authority, collection=MEMORY, limit=100
        )
        assert {r["value"]["text"] for r in listed["records"]} == set(live.values())
    finally:
        await client.close()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["put", "put", "delete"]), st.integers(0, 5), st.integers(0, 2)),
        min_size=1,
        max_size=10,
    )
)
def test_random_hosted_writes_leave_a_verifiable_repo(host_settings, steps):
    asyncio.run(_run(host_settings, steps))


async def test_a_hosted_space_from_before_repos_gets_its_repo_at_start(host_settings):
    """Memories stored before migration 0003 (simulated by dropping the repo tables' rows) are rebuilt into
    the repo at the next start, each record hashing to the memory's stored CID."""
    from engram.store.models import ModelSpec

    odd_model = ModelSpec("org@model", "sha256:at@sign", MODEL.dims)  # '@' inside the model key's parts
    client = TestClient(TestServer(await create_app(host_settings)))
    await client.start_server()
    ctx = client.app[context_key]
    authority = ctx.settings.service_did
    space = (await ctx.services.spaces.create_hosted("old-space", model=odd_model)).uri
    vector = np.linspace(-1, 1, MODEL.dims).astype(np.float16)
    writes = [
        MemoryWrite(author=authority, text="plain, no vector", tags=("a", "b"), source="notes.md"),
        MemoryWrite(author=authority, text="with a vector",
                    embedding=Embedding(odd_model.model, odd_model.digest, odd_model.dims, vector),
                    next_embedding=Embedding("next@m", "d", 4, np.ones(4, dtype=np.float16))),
    ]  # fmt: skip
    records = await ctx.services.memories.write(space, writes)

    def forget_repo(conn):
        for table in ("repo_records", "repo_ops", "repo_heads"):
            conn.execute(f"DELETE FROM {table}")

    await ctx.store.write(forget_repo)
    await client.close()

    client = TestClient(TestServer(await create_app(host_settings)))
    await client.start_server()
    try:
        ctx = client.app[context_key]
        repo = RepoClient(client, space, authority, ctx.keyring.private_key(authority))
        state, commit, _ = await repo.fold_ops(LtHash())
        public = (await ctx.resolver.resolve(authority)).key("#atproto")
        verify_commit(commit, CommitContext(space, authority, commit.rev), public, set_hash=state.digest())
        car = await repo.get("com.atproto.space.getRepo", repo=authority)
        index = verify_repo_car(await car.read(), space, authority, public).index
        assert {f"{MEMORY}/{r.rkey}": r.cid for r in records}.items() <= index.items()
        assert "garden.engram.config/self" in index
    finally:
        await client.close()


async def test_an_rkey_held_by_another_author_is_refused_and_an_import_skips_it(host):
    from engram.errors import InvalidInput
    from engram.service.imports import import_values

    ctx, rkey = host.ctx, new_tid()
    await ctx.services.memories.write(
        host.space, [MemoryWrite(author="did:plc:alice", text="mine", rkey=rkey)]
    )
    with pytest.raises(InvalidInput) as info:
        await ctx.services.memories.write(
            host.space, [MemoryWrite(author="did:plc:bob", text="also", rkey=rkey)]
        )
    assert info.value.name == "RkeyTaken"
    report = await import_values(ctx.store, ctx.services.spaces, ctx.services.memories, host.space, [(1, {"author": "did:plc:bob", "rkey": rkey, "text": "x"}),
                                                   (2, {"author": "did:plc:bob", "text": "fine"})])  # fmt: skip
    assert report.created == 1 and report.skipped[0][0] == 1 and "already used" in report.skipped[0][1]


async def test_imports_land_in_the_repo_through_the_store_seam(host):
    """The import path shared by `engram import` and garden.engram.admin.importMemories writes records too."""
    from engram.service.imports import import_values
    from engram.spacehost.repo_reads import list_records

    ctx = host.ctx
    lines = [(i, {"text": f"imported {i}", "tags": ["batch"]}) for i in range(1, 6)]
    report = await import_values(
        ctx.store, ctx.services.spaces, ctx.services.memories, host.space, lines, batch_size=2
    )
    assert report.created == 5
    space = await ctx.services.spaces.require(host.space)
    listed = await ctx.store.read(
        list_records, space, space.authority, MEMORY, limit=100, cursor=None, exclude_values=False
    )
    memories = (await ctx.services.memories.list(host.space, limit=100))[0]
    assert {r["cid"] for r in listed["records"]} == {m.cid for m in memories}
    assert sorted(r["value"]["text"] for r in listed["records"]) == [f"imported {i}" for i in range(1, 6)]


async def _walk_records(repo: RepoClient, **params) -> list[tuple[str, str]]:
    out, cursor = [], None
    while True:
        page = await repo.json(
            "com.atproto.space.listRecords", repo=repo.authority, limit=2, **params,
            **({"cursor": cursor} if cursor else {}),
        )  # fmt: skip
        out += [(r["collection"], r["rkey"]) for r in page["records"]]
        for r in page["records"]:
            assert r["uri"] == f"{repo.space}/{repo.authority}/{r['collection']}/{r['rkey']}"
        if "cursor" not in page:
            return out
        cursor = page["cursor"]


async def test_list_records_without_a_collection_and_in_reverse_pages_over_every_record(host):
    """The reference makes `collection` optional and adds `reverse` (docs/space-host.md#lexicons-and-the-reference):
    without a collection every record (the config and the memories) is listed once, in (collection, rkey)
    order; `reverse` walks the same records backwards; a bare-rkey cursor still works within a collection."""
    ctx = host.ctx
    authority = ctx.settings.service_did
    rkeys = [new_tid() for _ in range(5)]
    await ctx.services.memories.write(
        host.space, [_write(authority, f"note {i}", rkey, i) for i, rkey in enumerate(rkeys)]
    )
    repo = RepoClient(host.client, host.space, authority, ctx.keyring.private_key(authority))
    everything = sorted([("garden.engram.config", "self")] + [(MEMORY, r) for r in rkeys])
    assert await _walk_records(repo) == everything
    assert await _walk_records(repo, reverse=True) == everything[::-1]
    assert await _walk_records(repo, collection=MEMORY, reverse=True) == sorted(everything[1:])[::-1]
    page = await repo.json(
        "com.atproto.space.listRecords", repo=authority, collection=MEMORY, cursor=sorted(rkeys)[2],
        excludeValues=True,
    )  # fmt: skip
    assert [r["rkey"] for r in page["records"]] == sorted(rkeys)[3:]
    assert all("value" not in r for r in page["records"])
    bad = await repo.get("com.atproto.space.listRecords", repo=authority, cursor="no-slash")
    assert bad.status == 400 and (await bad.json())["error"] == "InvalidRequest"
