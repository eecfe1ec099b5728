"""PDSes that answer what a well-behaved one never would: a record nested past Python's recursion limit,
and a repo rewound to an older commit. Each fails only its own repo, is reported, and loses nothing."""

from __future__ import annotations

import copy

import libipld
from support.sync import add_space, has_text, memory_record, notify, rkey, status, until

from engram.atrepo.blocks import cid_of_block
from engram.store.tid import new_tid


async def _repo_status(engram, network, did: str) -> dict:
    code, body = await status(engram, network, engram.ctx.settings)
    assert code == 200, body
    return {r["did"]: r for r in body["sync"]["repos"]}.get(did, {})


async def test_a_record_nested_too_deeply_fails_its_repo_alone_and_sync_goes_on(engram, network):
    await add_space(engram, network)
    alice, bob = network.add_member(), network.add_member()
    await notify(
        engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("first", 1))
    )
    await until(lambda: has_text(engram, network, "first"), "alice's first memory indexed")
    deep: dict = {}
    for _ in range(700):  # past what a recursive Python decoder takes (two frames a level), within DAG-CBOR
        deep = {"n": deep}
    value = {**memory_record("deep", 2), "extra": deep}
    block = libipld.encode_dag_cbor(value)
    key = rkey()
    alice.repo.values[f"garden.engram.memory/{key}"] = value
    await notify(
        engram, network, network._commit(alice, [("garden.engram.memory", key, (cid_of_block(block), block))])
    )
    await notify(engram, network, network.put(bob, "garden.engram.memory", rkey(), memory_record("bob's", 3)))
    await until(lambda: has_text(engram, network, "bob's"), "bob still synced")
    await notify(
        engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("later", 4))
    )

    async def alice_went_on():
        repo = await _repo_status(engram, network, alice.did)
        return await has_text(engram, network, "later") or repo.get("failures", 0) >= 1

    await until(alice_went_on, "alice's repo either synced past the deep record or reported it")
    assert await has_text(engram, network, "first")  # nothing already indexed was lost


async def test_a_repo_rewound_to_an_older_commit_is_refused_and_keeps_what_is_indexed(engram, network):
    await add_space(engram, network)
    alice = network.add_member()
    await notify(engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("old", 1)))
    await until(lambda: has_text(engram, network, "old"), "the first memory indexed")
    snapshot = copy.deepcopy(alice.repo)
    await notify(
        engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("newer", 2))
    )
    await until(lambda: has_text(engram, network, "newer"), "the newer memory indexed")
    alice.repo = snapshot  # the PDS now serves the older commit (a rollback, or a replayed export)
    network.space_revs[alice.did] = new_tid()  # and the space host lists the repo as changed
    engram.ctx.syncer.request(network.space, full=True)

    async def refused():
        repo = await _repo_status(engram, network, alice.did)
        return repo.get("failures", 0) >= 1 and "older than the synced" in repo.get("lastError", "")

    await until(refused, "the rollback refused and reported")
    assert await has_text(engram, network, "newer") and await has_text(engram, network, "old")


async def test_an_oplog_that_is_not_json_falls_back_to_the_verified_export(engram, network):
    await add_space(engram, network)
    alice = network.add_member()
    await notify(engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("one", 1)))
    await until(lambda: has_text(engram, network, "one"), "the first memory indexed")
    network.garbage_ops.add(alice.did)  # from now on her oplog is garbage; her export is fine
    await notify(engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("two", 2)))
    await until(lambda: has_text(engram, network, "two"), "the second memory indexed through the export")
    assert network.pds.calls["getRepo"] >= 1


async def test_a_pds_asking_to_retry_later_is_left_alone_that_long(engram, network):
    import dataclasses
    from datetime import datetime

    syncer = engram.ctx.syncer
    at = 1_800_000_000.0  # the passes' clock, fixed: the backoff is read against it, not the wall clock
    syncer.deps = dataclasses.replace(syncer.deps, now=lambda: at)
    await add_space(engram, network)
    alice = network.add_member()
    network.throttle[alice.did] = "120"  # seconds: longer than the first backoff step (5 s)
    await notify(engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("x", 1)))

    async def backed_off():
        return (await _repo_status(engram, network, alice.did)).get("retryAfter")

    retry = await until(backed_off, "the 429 recorded with its Retry-After")
    assert datetime.fromisoformat(retry).timestamp() == at + 120
