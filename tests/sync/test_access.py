"""Read access: app-password sessions, delegation tokens exchanged for credentials, renewal before expiry."""

from __future__ import annotations

import time
from dataclasses import replace

from support.sync import add_space, has_text, memory_record, notify, rkey, until

from engram.app import create_app
from engram.app_keys import context_key


async def test_credential_is_renewed_90_seconds_before_it_expires(engram, network):
    await add_space(engram, network)
    manager = engram.ctx.syncer.credentials
    held = manager._held[network.space]
    assert held.exp - time.time() > 500  # the fake mints 600 s credentials
    minted = network.credentials_minted
    manager._now = lambda: held.exp - 91  # just outside the margin: the held credential is still used
    assert await manager.get(network.space, engram.ctx.syncer._sources[network.space]) is held
    manager._now = lambda: held.exp - 89  # inside the margin: a fresh exchange, with a fresh holder key
    renewed = await manager.get(network.space, engram.ctx.syncer._sources[network.space])
    assert renewed is not held and network.credentials_minted == minted + 1
    assert renewed.holder.public_key != held.holder.public_key


async def test_expired_session_is_refreshed_then_recreated(engram, network):
    await add_space(engram, network)
    engram.ctx.syncer.credentials.forget(network.space)
    network.expire_sessions()  # access tokens now answer ExpiredToken
    await engram.ctx.syncer.credentials.get(network.space, engram.ctx.syncer._sources[network.space])
    assert network.pds.calls["refreshSession"] == 1
    engram.ctx.syncer.credentials.forget(network.space)
    network.expire_sessions()
    network.refresh_tokens.clear()  # the refresh token is gone too: sign in again with the app password
    sessions = network.pds.calls["createSession"]
    await engram.ctx.syncer.credentials.get(network.space, engram.ctx.syncer._sources[network.space])
    assert network.pds.calls["createSession"] == sessions + 1


async def test_poll_backstop_catches_up_without_notifications(aiohttp_client, network, sync_settings):
    engram = await aiohttp_client(await create_app(replace(sync_settings, poll_interval=0.2)))
    engram.ctx = engram.app[context_key]
    await add_space(engram, network)
    network.put(network.add_member(), "garden.engram.memory", rkey(), memory_record("never notified", 1))
    await until(lambda: has_text(engram, network, "never notified"), "the poll found the write")


async def test_a_reader_the_authority_refuses_gets_no_data_and_an_error(engram, network):
    outsider = network.add_member()  # not a reader
    await engram.ctx.syncer.add_space(network.space, outsider.did, outsider.password)
    await until(
        lambda: engram.ctx.syncer.idle(network.space) and network.host.calls["getSpaceCredential"] >= 1,
        "a pass attempted",
    )
    from engram.store import synced as store_synced

    synced = await engram.ctx.store.read(store_synced.get_synced_space, network.space)
    assert synced.last_error is not None and "getSpaceCredential" in synced.last_error
    assert network.host.calls["listRepos"] == 0


async def test_internal_endpoints_are_refused_outside_dev_mode(aiohttp_client, network, sync_settings):
    engram = await aiohttp_client(await create_app(replace(sync_settings, dev=False, outbound_allow=())))
    engram.ctx = engram.app[context_key]
    await engram.ctx.syncer.add_space(network.space, network.reader.did, network.reader.password)
    from engram.store import synced as store_synced

    async def refused():
        synced = await engram.ctx.store.read(store_synced.get_synced_space, network.space)
        return synced.last_error is not None and "refused" in synced.last_error

    await until(refused, "the 127.0.0.1 PDS refused")
    assert network.pds.calls["createSession"] == 0


async def test_a_space_whose_access_fails_is_left_alone_between_notifications(engram, network, monkeypatch):
    """A space whose access fails (here the authority stops granting the reader) was tried again on every
    notification; it now waits a doubling while before its next pass, and new access is tried at once."""
    from engram.sync import syncer as syncer_module

    # a backoff longer than any run of this test, however slow the machine: what is checked is that the
    # notifications inside it start no pass, not how long it lasts
    monkeypatch.setattr(syncer_module, "BACKOFF_BASE", 3600.0)
    await add_space(engram, network)
    network.readers.discard(network.reader.did)  # the space host refuses the reader from now on
    engram.ctx.syncer.credentials.forget(network.space)
    alice = network.add_member()
    asked = network.host.calls["getSpaceCredential"]
    for n in range(6):
        await notify(
            engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record(f"m{n}", n))
        )
        await until(lambda: engram.ctx.syncer.idle(network.space), "the pass, or its refusal")
    assert network.host.calls["getSpaceCredential"] - asked == 1
    network.readers.add(network.reader.did)
    await engram.ctx.syncer.add_space(network.space, network.reader.did, network.reader.password)
    await until(lambda: has_text(engram, network, "m5"), "synced again at once when access is renewed")
