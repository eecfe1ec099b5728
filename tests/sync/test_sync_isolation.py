"""A PDS that stalls or answers garbage costs bounded slots: other spaces keep syncing and searches answer."""

from __future__ import annotations

from support.fakes.spaces_network import SpacesNetwork
from support.sync import (
    add_space,
    config_record,
    has_text,
    memory_record,
    notify,
    rkey,
    search,
    status,
    until,
)


async def test_stalled_pds_blocks_neither_other_spaces_nor_searches(engram, network):
    other = SpacesNetwork(skey="other", plc=network.plc)
    other.reader = other.add_member(reader=True)
    await other.start()
    other.engram_url, other.engram_did = network.engram_url, network.engram_did
    try:
        other.put(other.authority, "garden.engram.config", "self", config_record())
        await add_space(engram, network)
        await add_space(engram, other)
        alice = network.add_member()
        await notify(
            engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("before", 1))
        )
        await until(lambda: has_text(engram, network, "before"), "indexed before the stall")

        network.stall.add(alice.did)  # alice's PDS stops answering (the syncer's timeout is 2 s)
        asked = network.pds.calls["listRepoOps"]
        await notify(
            engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("stuck", 2))
        )
        await until(lambda: network.pds.calls["listRepoOps"] > asked, "the stalled request is in flight")
        await notify(
            engram,
            other,
            other.put(other.add_member(), "garden.engram.memory", rkey(), memory_record("elsewhere", 3)),
        )
        await until(lambda: has_text(engram, other, "elsewhere"), "the other space synced meanwhile")
        assert not engram.ctx.syncer.idle(network.space) or not await has_text(engram, network, "stuck")
        code, body = await search(engram, network, engram.ctx.settings, 1)
        assert code == 200 and "before" in {m["text"] for m in body["memories"]}  # searches still answer

        async def timed_out():
            code, body = await status(engram, network, engram.ctx.settings)
            repo = {r["did"]: r for r in body["sync"]["repos"]}[alice.did]
            return code == 200 and repo["failures"] >= 1 and "in time" in repo.get("lastError", "")

        await until(timed_out, "the stalled sync recorded as a failure")
    finally:
        await other.close()


async def test_garbage_answers_fail_one_repo_not_the_space(engram, network):
    await add_space(engram, network)
    alice, bob = network.add_member(), network.add_member()
    network.garbage.add(alice.did)
    network.put(alice, "garden.engram.memory", rkey(), memory_record("garbled", 1))
    await notify(engram, network, network.put(bob, "garden.engram.memory", rkey(), memory_record("fine", 2)))
    await until(lambda: has_text(engram, network, "fine"), "bob indexed")

    async def alice_failed():
        code, body = await status(engram, network, engram.ctx.settings)
        assert code == 200, body
        repos = {r["did"]: r for r in body["sync"]["repos"]}
        return alice.did in repos and repos[alice.did]["failures"] >= 1 and "retryAfter" in repos[alice.did]

    engram.ctx.syncer.request(network.space, full=True)
    await until(alice_failed, "alice's failure and backoff reported")
    assert not await has_text(engram, network, "garbled")
