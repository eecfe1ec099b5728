"""Done means (issue 30): with a spaces-capable member PDS on loopback (it signs the member's commits and
pushes notifyWrite), a client making engram-garden's calls remembers, recalls, re-embeds and forgets in an
engram-hosted space, and its authority manages the members with the standard simplespace calls; each memory
lives in the member's own repo and is searchable on the host (docs/space-host.md#members-repos)."""

from __future__ import annotations

from dataclasses import replace

import aiohttp
import numpy as np
import pytest
from support.fakes.member_pds import SpacesPds
from support.garden_client import AuthorityClient, ClientError, MemberClient
from support.member_world import MODEL
from support.sync import until

from engram.app import create_app
from engram.app_keys import context_key
from engram.store import synced as store_synced


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(MODEL.dims).astype(np.float32)
    return v / np.linalg.norm(v)


class World:
    def __init__(self, client, pds: SpacesPds, space: str, http: aiohttp.ClientSession):
        self.client, self.ctx, self.pds, self.space, self.http = (
            client,
            client.app[context_key],
            pds,
            space,
            http,
        )
        self.url = str(client.make_url("")).rstrip("/")
        self.did = self.ctx.settings.service_did
        pds.trust_authority(self.ctx.keyring.document(self.did), self.url)
        self.authority = AuthorityClient(http, self.url, self.did, self.did, self.ctx.keyring.private_key(self.did),
                                         space)  # fmt: skip

    async def member(self) -> MemberClient:
        account = self.pds.add_account()
        member = MemberClient(
            self.http, self.pds.url, account.did, account.password, self.space, self.url, self.did
        )
        await member.sign_in()
        return member

    async def texts(self, member: MemberClient, seed: int) -> list[str]:
        return [m["text"] for m in await member.recall(unit(seed), MODEL)]

    async def authority_repo_record(self, rkey: str) -> int:
        """The status of a getRecord of ``rkey`` in the authority's repo (engram's own)."""
        from engram.auth.credential import mint_space_credential
        from engram.auth.crypto_keys import PrivateKey
        from engram.auth.space_signature import sign_space_request

        holder = PrivateKey.generate("ES256")
        cred = mint_space_credential(self.ctx.keyring.private_key(self.did), issuer=self.did, space=self.space,
                                     holder_did_key=holder.public_key.did_key)  # fmt: skip
        r = await self.client.get("/xrpc/com.atproto.space.getRecord", headers=sign_space_request(holder, cred, self.did),
                                  params={"space": self.space, "repo": self.did, "collection": "garden.engram.memory",
                                          "rkey": rkey})  # fmt: skip
        return r.status


@pytest.fixture
async def world(aiohttp_client, host_settings, plc, request):
    poll = getattr(request, "param", 0)
    pds = await SpacesPds(plc).start()
    try:
        client = await aiohttp_client(await create_app(replace(host_settings, poll_interval=poll)))
        space = await client.app[context_key].services.spaces.create_hosted("garden", model=MODEL)
        async with aiohttp.ClientSession() as http:
            yield World(client, pds, space.uri, http)
    finally:
        await pds.close()


async def test_a_garden_client_remembers_recalls_reembeds_and_forgets_in_a_hosted_space(world):
    alice, bob = await world.member(), await world.member()
    await world.authority.put_member(alice.did, read=True, write=True)
    await world.authority.put_member(bob.did, read=True, write=False)
    listed = {m["did"]: (m["read"], m["write"]) for m in await world.authority.list_members()}
    assert listed == {alice.did: (True, True), bob.did: (True, False)}

    # remember: createRecord at alice's own PDS; her PDS pushes notifyWrite; the host pulls and indexes it.
    uri = await alice.remember("the staging database restarts every Sunday at 03:00", unit(1), MODEL)
    assert uri.startswith(f"{world.space}/{alice.did}/garden.engram.memory/")
    hit = await until(lambda: _top(bob, unit(1)), "alice's memory searchable on the host")
    assert (hit["uri"], hit["author"], hit["text"]) == (
        uri,
        alice.did,
        "the staging database restarts every Sunday at 03:00",
    )
    assert world.pds.pushes and world.pds.pushes[0] == 200
    # It lives in alice's repo, not in the authority's, and listRepos lists her repo at her PDS's rev.
    rkey = uri.rsplit("/", 1)[1]
    assert await world.authority_repo_record(rkey) == 400
    repos = await world.ctx.store.read(_listed, world.space)
    assert repos[alice.did] == world.pds.accounts[alice.did].repos[world.space].rev

    # reembed: listRecords + putRecord with new vectors; the host follows the update.
    second = await alice.remember("the VPN certificate is renewed by the infra on-call", unit(2), MODEL)
    await until(lambda: _has(bob, unit(2), second), "the second memory")
    assert await alice.reembed(lambda text: unit(100 if "staging" in text else 101), MODEL) == 2
    moved = 100
    await until(lambda: _top_is(bob, unit(moved), uri), "the re-embedded vector searched")

    # forget: deleteRecord at her PDS; gone from the host.
    await alice.forget(second)
    await until(lambda: _gone(bob, unit(2), second), "the forgotten memory gone")

    # A member without write access cannot have writes indexed: its PDS's notification is refused.
    pushes = len(world.pds.pushes)
    await bob.remember("bob is not a writer", unit(3), MODEL)
    await world.pds.settled()
    assert world.pds.pushes[pushes:] == [403]
    assert "bob is not a writer" not in await world.texts(alice, 3)

    # removeMember: alice's memories leave the index, and she can no longer get a credential.
    await world.authority.remove_member(alice.did)
    await until(lambda: _gone(bob, unit(moved), uri), "the removed writer's memories dropped")
    alice.credential = None
    with pytest.raises(ClientError, match="403"):
        await alice.recall(unit(1), MODEL)
    assert [m["did"] for m in await world.authority.list_members()] == [bob.did]


@pytest.mark.parametrize("world", [0.2], indirect=True)
async def test_a_lost_push_is_found_by_the_poll(world):
    alice, reader = await world.member(), await world.member()
    await world.authority.put_member(alice.did, read=True, write=True)
    await world.authority.put_member(reader.did, read=True, write=False)
    first = await alice.remember("a write whose notification arrived", unit(4), MODEL)
    await until(lambda: _has(reader, unit(4), first), "the pushed write")
    world.pds.lose_pushes = True  # the repo is tracked at its first rev; the next notifications are lost
    uri = await alice.remember("a write whose notification never arrived", unit(5), MODEL)
    await until(lambda: _has(reader, unit(5), uri), "the poll to find the write")
    await alice.forget(uri)
    await until(lambda: _gone(reader, unit(5), uri), "the poll to find the delete")
    assert world.pds.pushes == [200, "lost", "lost"]
    assert await _has(reader, unit(4), first)


async def test_a_commit_the_members_key_did_not_sign_is_not_indexed(world):
    mallory, reader = await world.member(), await world.member()
    await world.authority.put_member(mallory.did, read=True, write=True)
    await world.authority.put_member(reader.did, read=True, write=False)
    world.pds.forge.add(mallory.did)
    uri = await mallory.remember("a memory under a forged commit", unit(8), MODEL)

    async def refused():
        states = await world.ctx.store.read(store_synced.repo_states, world.space)
        state = states.get(mallory.did)
        return state is not None and state.last_error is not None and state.failures >= 1

    await until(refused, "the pull of the forged repo refused")
    states = await world.ctx.store.read(store_synced.repo_states, world.space)
    assert (
        "CommitVerification" in states[mallory.did].last_error
        or "signature" in states[mallory.did].last_error
    )
    assert not await _has(reader, unit(8), uri)
    assert world.pds.pushes == [200]  # the notification itself was the member's and accepted


def _listed(conn, space):
    from engram.store import hosted_writers

    return {w.repo: w.repo_rev for w in hosted_writers.writers_after(conn, _space_id(conn, space), "", 100)}


def _space_id(conn, space):
    return conn.execute("SELECT id FROM spaces WHERE uri = ?", (space,)).fetchone()[0]


async def _top(member, vector):
    memories = await member.recall(vector, MODEL)
    return memories[0] if memories else None


async def _has(member, vector, uri):
    return uri in {m["uri"] for m in await member.recall(vector, MODEL)}


async def _top_is(member, vector, uri):
    memories = await member.recall(vector, MODEL)
    return bool(memories) and memories[0]["uri"] == uri and memories[0]["similarity"] >= 990


async def _gone(member, vector, uri):
    return not await _has(member, vector, uri)
