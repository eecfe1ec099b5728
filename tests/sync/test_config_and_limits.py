"""The authority's config decides the model; a model change re-syncs; limits hold writes back; repos that
leave the writer set are dropped."""

from __future__ import annotations

from dataclasses import replace

from support.sync import (
    OTHER_MODEL,
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

from engram.app import create_app
from engram.app_keys import context_key


async def active_model(engram, network):
    code, body = await status(engram, network, engram.ctx.settings)
    assert code == 200, body
    return body.get("active", {}).get("model")


async def test_config_from_a_non_authority_repo_is_ignored(engram, network):
    await add_space(engram, network)
    mallory = network.add_member()
    await notify(
        engram, network, network.put(mallory, "garden.engram.config", "self", config_record(OTHER_MODEL))
    )
    await notify(
        engram, network, network.put(mallory, "garden.engram.memory", rkey(), memory_record("after", 1))
    )
    await until(lambda: has_text(engram, network, "after"), "mallory's later memory indexed")
    assert await active_model(engram, network) == "test-model"


async def test_model_change_resyncs_and_counts_skipped_per_author(engram, network):
    await add_space(engram, network)
    alice = network.add_member()
    note = network.put(alice, "garden.engram.memory", rkey(), memory_record("other model", 1, OTHER_MODEL))
    await notify(engram, network, note)

    async def skipped():
        code, body = await status(engram, network, engram.ctx.settings)
        return code == 200 and body["skipped"] == [{"author": alice.did, "count": 1}]

    await until(skipped, "alice's vector skipped under test-model")
    exports = network.pds.calls["getRepo"]
    await notify(
        engram,
        network,
        network.put(network.authority, "garden.engram.config", "self", config_record(OTHER_MODEL)),
    )

    async def found():
        code, body = await search(engram, network, engram.ctx.settings, 1, model=OTHER_MODEL)
        return code == 200 and [m["text"] for m in body["memories"]] == ["other model"]

    await until(found, "indexed under the new model")
    assert await active_model(engram, network) == "other-model"
    assert network.pds.calls["getRepo"] >= exports + 1  # alice's repo was re-exported after the change
    code, body = await status(engram, network, engram.ctx.settings)
    assert code == 200, body
    assert body["skipped"] == []


async def test_repos_no_longer_listed_are_dropped(engram, network):
    await add_space(engram, network)
    alice = network.add_member()
    await notify(
        engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("leaving", 1))
    )
    await until(lambda: has_text(engram, network, "leaving"), "indexed")
    del network.space_revs[alice.did]  # alice left the writer set
    engram.ctx.syncer.request(network.space, full=True)

    async def gone():
        return not await has_text(engram, network, "leaving")

    await until(gone, "alice's memories dropped")
    code, body = await status(engram, network, engram.ctx.settings)
    assert code == 200, body
    assert alice.did not in {r["did"] for r in body["sync"]["repos"]}


async def test_memory_limit_holds_writes_back_without_losing_the_position(
    aiohttp_client, network, sync_settings
):
    engram = await aiohttp_client(await create_app(replace(sync_settings, limit_memories=2)))
    engram.ctx = engram.app[context_key]
    network.engram_url = str(engram.make_url("")).rstrip("/")
    network.engram_did = sync_settings.service_did
    await add_space(engram, network)
    alice = network.add_member()
    for i in range(3):
        network.put(alice, "garden.engram.memory", rkey(), memory_record(f"m{i}", i))
    engram.ctx.syncer.request(network.space, repos={alice.did: None})

    async def held():
        value = engram.ctx.metrics.registry.get_sample_value("engram_index_over_limit_total")
        return value is not None and value >= 1

    await until(held, "over-limit write held back")
    code, body = await search(engram, network, engram.ctx.settings, 0, limit=50)
    assert code == 200 and len(body["memories"]) == 2
    code, body = await status(engram, network, engram.ctx.settings)
    assert "rev" not in {r["did"]: r for r in body["sync"]["repos"]}.get(
        alice.did, {}
    )  # position not advanced


async def test_a_malformed_record_is_skipped_without_failing_its_repo(engram, network):
    await add_space(engram, network)
    alice = network.add_member()
    network.put(alice, "garden.engram.memory", rkey(), memory_record("bad date", 1, createdAt="yesterday"))
    network.put(alice, "garden.engram.memory", "not-a-tid", memory_record("bad rkey", 2))
    await notify(
        engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("good", 3))
    )
    await until(lambda: has_text(engram, network, "good"), "the good record indexed")
    code, body = await status(engram, network, engram.ctx.settings)
    assert code == 200 and {r["did"]: r for r in body["sync"]["repos"]}[alice.did]["failures"] == 0
    assert not await has_text(engram, network, "bad date")
    # counted where an operator sees it (engram_sync_invalid_records_total), not dropped silently
    assert engram.ctx.syncer.metrics.invalid_records._value.get() == 2
