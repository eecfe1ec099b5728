"""A member writes in the fake network; engram is told, pulls, verifies and indexes; a signed search finds it."""

from __future__ import annotations

import os
import stat
from dataclasses import replace

from support.sync import add_space, has_text, memory_record, notify, rkey, search, status, texts, until

from engram.app import create_app
from engram.app_keys import context_key


async def test_write_notify_search_update_delete(engram, network):
    await add_space(engram, network)
    alice = network.add_member()
    key = rkey()
    await notify(
        engram,
        network,
        network.put(alice, "garden.engram.memory", key, memory_record("deploy key in vault", 1)),
    )
    await until(lambda: has_text(engram, network, "deploy key in vault"), "indexed after notifyWrite")
    code, body = await search(engram, network, engram.ctx.settings, 1)
    assert code == 200 and body["memories"][0]["text"] == "deploy key in vault"
    assert body["memories"][0]["uri"] == f"{network.space}/{alice.did}/garden.engram.memory/{key}"
    assert body["memories"][0]["cid"] == alice.repo.records[f"garden.engram.memory/{key}"][0]

    await notify(
        engram,
        network,
        network.put(alice, "garden.engram.memory", key, memory_record("deploy key in kms", 1)),
    )
    await until(lambda: has_text(engram, network, "deploy key in kms"), "update indexed")
    assert "deploy key in vault" not in await texts(engram, network, engram.ctx.settings, 1)

    await notify(engram, network, network.delete(alice, "garden.engram.memory", key))
    await until(lambda: not_has(engram, network, "deploy key in kms"), "delete applied")
    code, body = await status(engram, network, engram.ctx.settings)
    assert code == 200
    repos = {r["did"]: r for r in body["sync"]["repos"]}
    assert repos[alice.did]["rev"] == alice.repo.rev and repos[alice.did]["failures"] == 0
    assert body["sync"]["lagSeconds"] >= 0 and body["sync"]["access"] == "app_password"
    assert network.pds.calls["listRepoOps"] >= 2  # the update and delete went incremental
    assert network.pds.calls["getRepo"] == 2  # only the first sync of each repo (authority, alice) was full


async def not_has(engram, network, text):
    return not await has_text(engram, network, text)


async def test_app_password_is_stored_0600_and_not_in_the_database(engram, network):
    await add_space(engram, network)
    secrets_dir = engram.ctx.settings.data_dir / "sync" / "secrets"
    files = list(secrets_dir.iterdir())
    assert len(files) == 1
    assert stat.S_IMODE(os.stat(files[0]).st_mode) == 0o600
    assert network.reader.password in files[0].read_text()
    db = engram.ctx.settings.data_dir / "engram.sqlite3"
    for path in engram.ctx.settings.data_dir.iterdir():
        if path.is_file():
            assert network.reader.password.encode() not in path.read_bytes(), path
    assert db  # the database lives beside the secrets directory


async def test_restart_resumes_from_stored_revs_without_full_resync(
    aiohttp_client, engram, network, sync_settings
):
    await add_space(engram, network)
    members = [network.add_member() for _ in range(3)]
    for i, member in enumerate(members):
        await notify(
            engram, network, network.put(member, "garden.engram.memory", rkey(), memory_record(f"m{i}", i))
        )
    await until(lambda: all_indexed(engram, network, {"m0", "m1", "m2"}), "three members indexed")
    full_exports = network.pds.calls["getRepo"]
    await engram.close()

    again = await aiohttp_client(await create_app(replace(sync_settings)))
    again.ctx = again.app[context_key]
    network.engram_url = str(again.make_url("")).rstrip("/")
    listed = network.host.calls["listRepos"]
    await until(
        lambda: network.host.calls["listRepos"] > listed and again.ctx.syncer.idle(network.space),
        "start-up pass",
    )
    await notify(
        again, network, network.put(members[0], "garden.engram.memory", rkey(), memory_record("m3", 3))
    )
    await until(lambda: all_indexed(again, network, {"m0", "m1", "m2", "m3"}), "new write after restart")
    assert network.pds.calls["getRepo"] == full_exports  # resumed incrementally, nothing re-exported


async def all_indexed(client, network, wanted):
    code, body = await search(client, network, client.ctx.settings, 0, limit=50)
    return code == 200 and wanted <= {m["text"] for m in body["memories"]}
