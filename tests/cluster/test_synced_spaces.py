"""In a cluster a synced space is synced by the node holding its lease, nowhere else
(docs/scale-out.md#synced-spaces-in-a-cluster): two in-process nodes on one real PostgreSQL store, the
fake spaces network of tests/fakes (PLC, PDS, space host) on loopback."""

from __future__ import annotations

from dataclasses import replace

import aiohttp
import pytest
from support.inprocess import start_node
from support.sync import memory_record, rkey, running_network, search, until

from engram.cluster import rendezvous
from engram.cluster.middleware import SERVED_BY
from engram.sync.secrets import SecretStore

NOTIFY = "com.atproto.space.notifyWrite"


@pytest.fixture
async def network():
    async with running_network() as net:
        yield net


@pytest.fixture
def cluster_settings(settings, network, pg_database_url):
    return replace(
        settings,
        database_url=pg_database_url,
        heartbeat_ms=100,
        lease_timeout_ms=1000,
        plc_url=network.plc.url,
        poll_interval=0.2,  # every node polls often: only the holder may act on it
        sync_timeout=2.0,
        dev=True,  # the fake hosts live on 127.0.0.1
    )


async def _has_text(base_url, network, settings, text) -> bool:
    async with aiohttp.ClientSession(base_url) as client:
        code, body = await search(client, network, settings, seed=0, limit=50)
    return code == 200 and text in {m["text"] for m in body["memories"]}


async def test_only_the_holder_syncs_notifications_reach_it_and_a_successor_takes_over(
    aiohttp_server, cluster_settings, network, tmp_path
):
    settings = cluster_settings
    nodes = [await start_node(aiohttp_server, settings, tmp_path, name) for name in ("node-a", "node-b")]
    network.engram_did = settings.service_did
    await until(lambda: all(len(n.ctx.cluster.ownership.live) == 2 for n in nodes), "both nodes live")
    urls = {n.node_id: n.url for n in nodes}
    owner_id = rendezvous.owner(network.space, urls)
    owner, other = sorted(nodes, key=lambda n: n.node_id != owner_id)

    member = network.add_member()
    network.put(member, "garden.engram.memory", rkey(), memory_record("before registration", 1))
    # The app password reaches every node's secrets directory (a shared volume in a real cluster); the
    # admin call itself lands on the node that does not own the space.
    SecretStore(owner.ctx.settings.data_dir).save(network.space, {"appPassword": network.reader.password})
    await other.ctx.syncer.add_space(network.space, network.reader.did, network.reader.password)

    await until(
        lambda: _has_text(owner.url, network, settings, "before registration"), "the holder's first pass"
    )
    assert owner.ctx.cluster.ownership.holds(network.space)
    polled = other.ctx.syncer.poll_ticks
    await until(lambda: other.ctx.syncer.poll_ticks >= polled + 3, "three more polls on the other node")
    assert owner.ctx.syncer.syncing(network.space)
    assert not other.ctx.syncer.syncing(network.space)

    # The host's notification arrives at the other node (the load balancer's choice) and is forwarded.
    note = network.put(member, "garden.engram.memory", rkey(), memory_record("notified write", 2))
    token = network.service_jwt(NOTIFY)
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{other.url}/xrpc/{NOTIFY}", json=note, headers={"Authorization": f"Bearer {token}"}
        ) as resp,
    ):
        assert resp.status == 200, await resp.text()
        assert resp.headers[SERVED_BY] == owner.node_id
    await until(lambda: _has_text(owner.url, network, settings, "notified write"), "the notified write")
    assert not other.ctx.syncer.syncing(network.space)

    # The holder stops (cleanly: its leases expire at once); the other node takes the lease on its next
    # heartbeat and catches up with a write nobody notified.
    network.put(member, "garden.engram.memory", rkey(), memory_record("written during the move", 3))
    await owner.server.close()
    await until(lambda: other.ctx.cluster.ownership.holds(network.space), "the successor holds the lease")
    await until(
        lambda: _has_text(other.url, network, settings, "written during the move"), "the successor syncs"
    )
    assert other.ctx.syncer.syncing(network.space)
