"""notifyWrite / notifySpaceDeleted: only the space's authority, addressed to engram's syncer, once."""

from __future__ import annotations

from support.sync import add_space, has_text, memory_record, notify, rkey, search, until

from engram.auth.crypto_keys import PrivateKey

NOTIFY = "com.atproto.space.notifyWrite"


async def test_notification_not_from_the_authority_is_forbidden(engram, network):
    await add_space(engram, network)
    alice = network.add_member()
    note = network.put(alice, "garden.engram.memory", rkey(), memory_record("x", 1))
    token = network.service_jwt(NOTIFY, key=alice.key, iss=alice.did)  # validly signed, by a member
    code, body = await network.post_to_engram(engram.session, NOTIFY, note, token)
    assert (code, body["error"]) == (403, "Forbidden")


async def test_notification_signed_with_another_key_or_unsigned_is_refused(engram, network):
    await add_space(engram, network)
    note = network.put(network.add_member(), "garden.engram.memory", rkey(), memory_record("x", 1))
    forged = network.service_jwt(NOTIFY, key=PrivateKey.generate("ES256K"))  # claims to be the authority
    code, body = await network.post_to_engram(engram.session, NOTIFY, note, forged)
    assert (code, body["error"]) == (401, "BadJwtSignature")
    async with engram.session.post(f"{network.engram_url}/xrpc/{NOTIFY}", json=note) as resp:
        assert resp.status == 401 and (await resp.json())["error"] == "AuthRequired"


async def test_replayed_or_misaddressed_notification_is_forbidden(engram, network):
    await add_space(engram, network)
    note = network.put(network.add_member(), "garden.engram.memory", rkey(), memory_record("x", 1))
    token = network.service_jwt(NOTIFY)
    assert (await network.post_to_engram(engram.session, NOTIFY, note, token))[0] == 200
    code, body = await network.post_to_engram(engram.session, NOTIFY, note, token)
    assert (code, body["error"]) == (403, "Forbidden") and "replayed" in body["message"]
    bare = network.service_jwt(NOTIFY, aud=network.engram_did)  # the bare DID is not the syncer service
    code, body = await network.post_to_engram(engram.session, NOTIFY, note, bare)
    assert (code, body["error"]) == (403, "Forbidden")


async def test_notification_for_a_space_engram_does_not_sync_is_unknown(engram, network):
    note = network.put(network.add_member(), "garden.engram.memory", rkey(), memory_record("x", 1))
    code, body = await network.post_to_engram(engram.session, NOTIFY, note)
    assert (code, body["error"]) == (400, "UnknownSpace")


async def test_gap_in_space_revs_triggers_a_full_sync(engram, network):
    await add_space(engram, network)
    alice, bob = network.add_member(), network.add_member()
    network.put(alice, "garden.engram.memory", rkey(), memory_record("missed", 1))  # never notified
    listed = network.host.calls["listRepos"]
    await notify(engram, network, network.put(bob, "garden.engram.memory", rkey(), memory_record("seen", 2)))
    await until(lambda: has_text(engram, network, "missed"), "the missed write caught up by a full pass")
    assert network.host.calls["listRepos"] > listed
    assert await has_text(engram, network, "seen")


async def test_notify_space_deleted_drops_the_space(engram, network):
    await add_space(engram, network)
    await notify(
        engram,
        network,
        network.put(network.add_member(), "garden.engram.memory", rkey(), memory_record("soon gone", 1)),
    )
    await until(lambda: has_text(engram, network, "soon gone"), "indexed")
    code, _ = await network.post_to_engram(
        engram.session, "com.atproto.space.notifySpaceDeleted", {"space": network.space}
    )
    assert code == 200
    code, body = await search(engram, network, engram.ctx.settings, 1)
    assert (code, body["error"]) == (400, "UnknownSpace")
    assert not any((engram.ctx.settings.data_dir / "sync" / "secrets").iterdir())


async def test_registers_for_notifications_with_its_syncer_service(engram, network):
    await add_space(engram, network)
    await until(lambda: network.registrations, "registerNotify (ENGRAM_PUBLIC_URL is https)")
    assert network.registrations[0] == {
        "space": network.space,
        "service": f"{engram.ctx.settings.service_did}#atproto_space_syncer",
    }
    assert engram.ctx.syncer.registered_until[network.space] > 0


async def test_space_host_saying_the_space_is_deleted_drops_it(engram, network):
    await add_space(engram, network)
    await notify(
        engram,
        network,
        network.put(network.add_member(), "garden.engram.memory", rkey(), memory_record("doomed", 1)),
    )
    await until(lambda: has_text(engram, network, "doomed"), "indexed")
    network.deleted = True  # the next listRepos answers SpaceDeleted (the notification was missed)
    engram.ctx.syncer.request(network.space, full=True)

    async def gone():
        code, body = await search(engram, network, engram.ctx.settings, 1)
        return code == 400 and body["error"] == "UnknownSpace"

    await until(gone, "space dropped")
