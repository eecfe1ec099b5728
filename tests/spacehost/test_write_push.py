"""registerNotify and the notifyWrite pushes engram sends, as space host, to registered syncers on loopback."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web
from support.fakes.did_server import random_plc_did
from support.member_world import MODEL

from engram.atrepo.blocks import b64encode
from engram.atrepo.commit import SignedCommit
from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_document import Service
from engram.auth.service_jwt import ServiceAuthVerifier
from engram.auth.space_signature import sign_space_request
from engram.store import Embedding, MemoryWrite

NOTIFY = "com.atproto.space.notifyWrite"


@pytest.fixture(autouse=True)
def quick_retries(host):
    host.ctx.notifier.backoff = (0.01, 0.01)  # retries without the production waits


class FakeSyncer:
    """A syncer's notifyWrite endpoint; answers `statuses` in turn (then 200) and records what it got."""

    def __init__(self, plc, statuses=(), hold: asyncio.Event | None = None) -> None:
        self.did = random_plc_did()
        self.statuses = list(statuses)
        self.hold = hold  # while set and not yet released, every answer waits (a syncer that hangs)
        self.posts: list[tuple[str, dict]] = []
        self.deletions: list[tuple[str, dict]] = []
        self.plc = plc

    async def start(self) -> FakeSyncer:
        async def notify(request: web.Request) -> web.Response:
            self.posts.append((request.headers.get("Authorization", ""), await request.json()))
            if self.hold is not None:
                await self.hold.wait()
            status = self.statuses.pop(0) if self.statuses else 200
            return web.json_response({}, status=status)

        async def deleted(request: web.Request) -> web.Response:
            self.deletions.append((request.headers.get("Authorization", ""), await request.json()))
            return web.json_response({})

        app = web.Application()
        app.router.add_post(f"/xrpc/{NOTIFY}", notify)
        app.router.add_post("/xrpc/com.atproto.space.notifySpaceDeleted", deleted)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"
        self.plc.register(
            self.did, PrivateKey.generate("ES256").public_key,
            {"#atproto_space_syncer": Service("AtprotoSpaceSyncer", url)},
        )  # fmt: skip
        return self

    @property
    def delivered(self) -> list[dict]:
        return [body for _, body in self.posts]


@pytest.fixture
async def syncers(plc):
    started: list[FakeSyncer] = []

    async def make(statuses=(), hold: asyncio.Event | None = None) -> FakeSyncer:
        syncer = await FakeSyncer(plc, statuses, hold).start()
        started.append(syncer)
        return syncer

    yield make
    for syncer in started:
        await syncer.runner.cleanup()


def _space_host_headers(host) -> dict[str, str]:
    authority = host.ctx.settings.service_did
    holder = PrivateKey.generate("ES256")
    credential = mint_space_credential(
        host.ctx.keyring.private_key(authority), issuer=authority, space=host.space,
        holder_did_key=holder.public_key.did_key,
    )  # fmt: skip
    return sign_space_request(holder, credential, authority)


async def _register(host, service: str, nsid: str = "com.atproto.space.registerNotify"):
    # Commits made before (creating the space) must not reach a syncer registered now: let their
    # deliveries finish first (they are scheduled by the time the write that made them returned).
    await _until(lambda: host.ctx.notifier.pending == 0, "earlier deliveries")
    return await host.client.post(
        f"/xrpc/{nsid}", json={"space": host.space, "service": service}, headers=_space_host_headers(host)
    )


async def _write(host, text: str) -> None:
    vector = [0.25] * MODEL.dims
    await host.ctx.services.memories.write(
        host.space, [MemoryWrite(author=host.ctx.settings.service_did, text=text,
                                 embedding=Embedding(MODEL.model, MODEL.digest, MODEL.dims, vector))],
    )  # fmt: skip


async def _until(condition, what, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        await asyncio.sleep(0.01)


async def _head(host) -> SignedCommit:
    r = await host.client.get(
        "/xrpc/com.atproto.space.getLatestCommit",
        params={"space": host.space, "repo": host.ctx.settings.service_did},
        headers=_space_host_headers(host),
    )
    return SignedCommit.from_json((await r.json())["commit"])


async def test_a_registered_syncer_gets_signed_notifications_in_order(host, syncers):
    syncer = await syncers()
    r = await _register(host, syncer.did)  # a bare DID means its #atproto_space_syncer entry
    assert r.status == 200, await r.text()
    assert (await r.json())["expiresAt"] > time.strftime(
        "%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 23 * 3600)
    )
    before = await _head(host)  # creating the space committed its config record

    await _write(host, "first")
    await _until(lambda: len(syncer.posts) == 1, "the first notification")
    first_head = await _head(host)
    authorization, body = syncer.posts[0]
    authority = host.ctx.settings.service_did
    assert body == {
        "space": host.space, "repo": authority, "repoRev": first_head.rev,
        "hash": {"$bytes": b64encode(first_head.hash)}, "spaceRev": first_head.rev, "prevSpaceRev": before.rev,
    }  # fmt: skip
    verifier = ServiceAuthVerifier(
        syncer.did, host.ctx.resolver, audiences=(f"{syncer.did}#atproto_space_syncer",)
    )
    auth = await verifier.verify(authorization, NOTIFY)
    assert auth.iss == authority

    await _write(host, "second")
    await _until(lambda: len(syncer.posts) == 2, "the second notification")
    assert syncer.delivered[1]["prevSpaceRev"] == first_head.rev
    assert syncer.delivered[1]["repoRev"] > first_head.rev


async def test_delivery_is_retried_after_a_server_error(host, syncers):
    syncer = await syncers(statuses=[503, 502])
    assert (await _register(host, f"{syncer.did}#atproto_space_syncer")).status == 200
    await _write(host, "eventually")
    notifier = host.ctx.notifier
    await _until(
        lambda: notifier.delivered == 1,
        lambda: (
            f"the retried notification ({notifier.delivered} delivered, {notifier.failed} failed, "
            f"{len(syncer.posts)} posts)"
        ),
    )
    assert len(syncer.posts) == 3 and syncer.delivered[0] == syncer.delivered[2]


async def test_a_refusing_syncer_is_not_retried(host, syncers):
    syncer = await syncers(statuses=[403])
    assert (await _register(host, syncer.did)).status == 200
    await _write(host, "refused")
    await _until(lambda: host.ctx.notifier.failed == 1, "the refused notification")
    assert len(syncer.posts) == 1


async def test_an_unregistered_syncer_gets_nothing_more(host, syncers):
    first, second = sorted([await syncers(), await syncers()], key=lambda s: s.did)
    for syncer in (first, second):
        assert (await _register(host, syncer.did)).status == 200
    await _write(host, "both hear this")
    await _until(lambda: len(first.posts) == 1 and len(second.posts) == 1, "both notifications")
    r = await _register(host, first.did, "com.atproto.space.unregisterNotify")
    assert r.status == 200, await r.text()
    await _write(host, "only the second hears this")
    # deliveries go out in service order, first's before second's, so once second has it first never will
    await _until(lambda: len(second.posts) == 2, "the second syncer's notification")
    assert len(first.posts) == 1


async def test_a_service_without_a_syncer_entry_is_not_resolvable(host, plc):
    did = random_plc_did()
    plc.register(did, PrivateKey.generate("ES256").public_key)
    r = await _register(host, did)
    assert (r.status, (await r.json())["error"]) == (400, "ServiceNotResolvable")


async def test_registering_needs_a_credential_addressed_to_the_authority(host, syncers):
    syncer = await syncers()
    authority = host.ctx.settings.service_did
    holder = PrivateKey.generate("ES256")
    credential = mint_space_credential(
        host.ctx.keyring.private_key(authority), issuer=authority, space=host.space,
        holder_did_key=holder.public_key.did_key,
    )  # fmt: skip
    wrong = sign_space_request(holder, credential, "did:web:someone-else.example")
    r = await host.client.post(
        "/xrpc/com.atproto.space.registerNotify",
        json={"space": host.space, "service": syncer.did},
        headers=wrong,
    )
    assert (r.status, (await r.json())["error"]) == (401, "BadSpaceSignature")


async def test_deleting_the_space_tells_its_syncers(host, syncers):
    syncer = await syncers()
    assert (await _register(host, syncer.did)).status == 200
    await host.ctx.services.spaces.delete(host.space)
    await _until(lambda: len(syncer.deletions) == 1, "notifySpaceDeleted")
    authorization, body = syncer.deletions[0]
    assert body == {"space": host.space}
    verifier = ServiceAuthVerifier(
        syncer.did, host.ctx.resolver, audiences=(f"{syncer.did}#atproto_space_syncer",)
    )
    assert (await verifier.verify(authorization, "com.atproto.space.notifySpaceDeleted")).iss == (
        host.ctx.settings.service_did
    )


async def test_a_syncer_that_hangs_delays_only_itself_and_each_gets_the_space_in_order(host, syncers):
    import aiohttp

    # the hung syncer's attempts end sooner; four of them (8 s) outlast the healthy deliveries by far
    host.ctx.notifier._timeout = aiohttp.ClientTimeout(total=2.0)
    released = asyncio.Event()
    hung, healthy = await syncers(hold=released), await syncers()
    for syncer in (hung, healthy):
        assert (await _register(host, syncer.did)).status == 200
    for n in range(3):
        await _write(host, f"write {n}")

    def distinct(syncer) -> list[str]:  # in order of arrival; a retried delivery repeats its rev
        return list(dict.fromkeys(body["repoRev"] for body in syncer.delivered))

    await _until(lambda: len(distinct(healthy)) == 3, "the healthy syncer's three notifications")
    assert len(distinct(hung)) == 1  # still on the first, held
    revs = distinct(healthy)
    assert revs == sorted(revs)
    released.set()
    await _until(lambda: len(distinct(hung)) == 3, "the hung syncer catching up")
    assert distinct(hung) == revs


async def test_a_space_takes_a_bounded_number_of_registrations(host, syncers, monkeypatch):
    from engram.store import notify_registrations

    monkeypatch.setattr(notify_registrations, "MAX_PER_SPACE", 2)
    first, second, third = await syncers(), await syncers(), await syncers()
    assert (await _register(host, first.did)).status == 200
    assert (await _register(host, second.did)).status == 200
    refused = await _register(host, third.did)
    assert refused.status == 400 and "already has 2 registered syncers" in (await refused.json())["message"]
    assert (await _register(host, first.did)).status == 200  # renewing one already there is not a new one
