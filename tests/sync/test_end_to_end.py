"""A member writes in the fake network; engram is told, pulls, verifies and indexes; a signed search finds it."""

from __future__ import annotations

from sync_support import memory_record, rkey, search, status, texts, until


async def add_space(engram, network):
    await engram.ctx.syncer.add_space(network.space, network.reader.did, network.reader.password)
    await until(
        lambda: network.space in {s for s in _synced(engram)} and engram.ctx.syncer.idle(network.space),
        "first sync",
    )


def _synced(engram):
    return {network_uri for network_uri in engram.ctx.syncer._runners}


async def test_write_notify_search_update_delete(engram, network):
    await add_space(engram, network)
    alice = network.add_member()
    key = rkey()
    note = network.put(alice, "garden.engram.memory", key, memory_record("the deploy key is in vault", 1))
    code, _ = await network.post_to_engram(engram.session, "com.atproto.space.notifyWrite", note)
    assert code == 200
    await until(lambda: _has(engram, network, "the deploy key is in vault"), "indexed after notifyWrite")
    code, body = await search(engram, network, engram.ctx.settings, 1)
    assert code == 200 and body["memories"][0]["text"] == "the deploy key is in vault"
    assert body["memories"][0]["uri"] == f"{network.space}/{alice.did}/garden.engram.memory/{key}"

    note = network.put(alice, "garden.engram.memory", key, memory_record("the deploy key moved to kms", 1))
    await network.post_to_engram(engram.session, "com.atproto.space.notifyWrite", note)
    await until(lambda: _has(engram, network, "the deploy key moved to kms"), "update indexed")
    assert "the deploy key is in vault" not in await texts(engram, network, engram.ctx.settings, 1)

    note = network.delete(alice, "garden.engram.memory", key)
    await network.post_to_engram(engram.session, "com.atproto.space.notifyWrite", note)
    await until(lambda: _lacks(engram, network, "the deploy key moved to kms"), "delete applied")
    code, body = await status(engram, network, engram.ctx.settings)
    assert code == 200
    repos = {r["did"]: r for r in body["sync"]["repos"]}
    assert repos[alice.did]["rev"] == alice.repo.rev and repos[alice.did]["failures"] == 0
    assert network.pds.calls["listRepoOps"] >= 2  # updates went incremental, not full exports


async def _has(engram, network, text):
    return text in await texts(engram, network, engram.ctx.settings, 1)


async def _lacks(engram, network, text):
    return text not in await texts(engram, network, engram.ctx.settings, 1)
