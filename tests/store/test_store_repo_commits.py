"""The store's commit step for hosted spaces' repos (engram/store/repo.py): every write transaction that
changed records ends with one signed commit, in the same transaction, and its hooks run in order."""

from __future__ import annotations

import functools

import pytest

from engram.atrepo.commit import CommitContext, verify_commit
from engram.atrepo.lthash import LtHash
from engram.atrepo.ops import RepoOp, apply_op
from engram.auth.crypto_keys import PrivateKey
from engram.store import MemoryWrite
from engram.store import repo as store_repo
from engram.store.memory_writes import delete_memory, put_memories
from engram.store.spaces import create_space, get_space, set_config

SPACE = "at://did:plc:authority1/space/garden.engram.space/main"
AUTHORITY = "did:plc:authority1"


@pytest.fixture
async def hosted(store, model):
    key = PrivateKey.generate("ES256K")
    store.before_commit = functools.partial(store_repo.commit_pending, signer={AUTHORITY: key}.get)
    seen: list = []
    store.after_commit = seen.append
    await store.write(create_space, SPACE, "hosted")
    await store.write(set_config, SPACE, model)
    return store, key, seen


def _ops(conn, space_id):
    return conn.execute(
        "SELECT rev, collection, rkey, cid, prev FROM repo_ops WHERE space_id = ? ORDER BY seq", (space_id,)
    ).fetchall()


async def test_each_write_is_one_signed_commit_over_its_ops(hosted):
    store, key, seen = hosted
    [record] = await store.write(put_memories, SPACE, [MemoryWrite(AUTHORITY, "one")])
    assert seen[-1][0].space_uri == SPACE  # after_commit ran before the write returned
    await store.write(delete_memory, SPACE, AUTHORITY, record.rkey)
    space = await store.read(get_space, SPACE)
    ops, head = await store.read(_ops, space.id), await store.read(store_repo.get_head, space.id)
    assert [(c, r is not None, p is not None) for _, c, _, r, p in ops] == [
        ("garden.engram.config", True, False),  # create
        ("garden.engram.memory", True, False),  # create
        ("garden.engram.memory", False, True),  # delete
    ]
    assert len({rev for rev, *_ in ops}) == 3 and head.rev == ops[-1][0] and len(seen) == 3
    state = LtHash()
    for rev, collection, rkey, cid, prev in ops:
        apply_op(state, RepoOp(rev, collection, rkey, cid, prev))
    verify_commit(
        head.commit, CommitContext(SPACE, AUTHORITY, head.rev), key.public_key, set_hash=state.digest()
    )
    assert head.prev_rev == ops[1][0]


async def test_a_failing_commit_step_rolls_the_write_back(hosted):
    store, _key, _seen = hosted

    def broken(conn):
        raise RuntimeError("signing failed")

    before = await store.read(get_space, SPACE)
    store.before_commit = broken
    with pytest.raises(RuntimeError):
        await store.write(put_memories, SPACE, [MemoryWrite(AUTHORITY, "never acknowledged")])
    store.before_commit = None
    space = await store.read(get_space, SPACE)
    assert space.generation == before.generation and len(await store.read(_ops, space.id)) == 1


async def test_without_the_authority_key_no_repo_is_kept_until_the_backfill(store, model):
    from engram.store import repo_backfill

    store.before_commit = functools.partial(store_repo.commit_pending, signer=lambda did: None)
    await store.write(create_space, SPACE, "hosted")
    await store.write(set_config, SPACE, model)
    await store.write(put_memories, SPACE, [MemoryWrite(AUTHORITY, "kept in the store only")])
    space = await store.read(get_space, SPACE)
    assert await store.read(_ops, space.id) == []
    assert await store.read(store_repo.get_head, space.id) is None
    assert await store.read(repo_backfill.spaces_without_repo, ["did:plc:someone-else"]) == []

    # The operator adds the authority's key: the start-up backfill builds the repo from the stored rows.
    key = PrivateKey.generate("ES256")
    store.before_commit = functools.partial(store_repo.commit_pending, signer={AUTHORITY: key}.get)
    assert await store.read(repo_backfill.spaces_without_repo, [AUTHORITY]) == [space.id]
    assert await store.write(repo_backfill.backfill_space, space.id) == (2, 0)
    head = await store.read(store_repo.get_head, space.id)
    assert head is not None and head.repo == AUTHORITY


async def test_synced_spaces_keep_no_repo(store, model):
    store.before_commit = functools.partial(
        store_repo.commit_pending, signer=lambda did: PrivateKey.generate()
    )
    await store.write(create_space, SPACE, "synced")
    await store.write(set_config, SPACE, model)
    await store.write(put_memories, SPACE, [MemoryWrite(AUTHORITY, "from a syncer")])
    space = await store.read(get_space, SPACE)
    assert await store.read(_ops, space.id) == []


async def test_a_group_of_writes_to_two_spaces_is_one_signed_commit_per_space(hosted, model):
    """Group commit (docs/internals.md#group-commit): writes queued together run in one transaction,
    so the commit hook signs one commit per hosted space over all of that space's ops, and after_commit
    hears of both commits once."""
    import asyncio
    import threading

    store, key, seen = hosted
    other = SPACE.replace("/main", "/second")
    await store.write(create_space, other, "hosted")
    await store.write(set_config, other, model)
    gate, held = threading.Event(), threading.Event()

    def hold(conn):
        held.set()
        assert gate.wait(30)

    blocker = asyncio.ensure_future(store.write(hold))
    while not held.is_set():
        await asyncio.sleep(0.01)
    writes = [
        asyncio.ensure_future(store.write(put_memories, uri, [MemoryWrite(AUTHORITY, f"{n} in {uri}")]))
        for n in range(3)
        for uri in (SPACE, other)
    ]
    await asyncio.sleep(0)
    seen.clear()
    gate.set()
    await blocker
    await asyncio.gather(*writes)
    assert len(seen) == 1 and {c.space_uri for c in seen[0]} == {SPACE, other}
    for uri in (SPACE, other):
        space = await store.read(get_space, uri)
        ops, head = await store.read(_ops, space.id), await store.read(store_repo.get_head, space.id)
        group_ops = [op for op in ops if op[1] == "garden.engram.memory"]
        assert len(group_ops) == 3 and {rev for rev, *_ in group_ops} == {head.rev}
        state = LtHash()
        for rev, collection, rkey, cid, prev in ops:
            apply_op(state, RepoOp(rev, collection, rkey, cid, prev))
        verify_commit(
            head.commit, CommitContext(uri, AUTHORITY, head.rev), key.public_key, set_hash=state.digest()
        )
