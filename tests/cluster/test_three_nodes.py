"""Three `engram serve` nodes as real subprocesses on loopback, one PostgreSQL, one index store: searches
reach the owner from any node, an owner killed mid-writes is replaced and loses no acknowledged write, a
joining node takes only its share of spaces, and concurrent writers on two nodes converge."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import orjson
import pytest
from support.cluster import Cluster

from engram.cluster import rendezvous


@pytest.fixture
def cluster(tmp_path, pg_database_url):
    made = Cluster(tmp_path, pg_database_url)
    yield made
    made.stop_all()


async def until(condition, what: str, bound_s: float = 60.0):
    """Poll until `condition()` (async) is truthy; the bound only ends a test that would never pass."""
    deadline = time.monotonic() + bound_s
    while True:
        value = await condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for: {what}"
        await asyncio.sleep(0.1)


async def every_node_sees(cluster, http, nodes) -> None:
    """Wait until each node's own view (its heartbeat's, which routing uses) holds all `nodes`: the
    database listing them is not enough, a node refreshes its view only on its next heartbeat."""

    async def all_see_all():
        views = [await cluster.metric(http, n, "engram_cluster_live_nodes") for n in nodes]
        return all(v == len(nodes) for v in views)

    await until(all_see_all, f"every node sees {len(nodes)} live nodes")


async def test_signed_searches_to_any_node_get_the_owners_answer(cluster):
    nodes = [cluster.start_node() for _ in range(3)]
    async with aiohttp.ClientSession() as http:
        spaces = [await cluster.create_space(http, nodes[0], f"team-{i}") for i in range(6)]
        for i, space in enumerate(spaces):
            await cluster.write(
                http, nodes[i % 3], space, [f"space {i} fact {j} about topic {j * 13}" for j in range(5)]
            )
        ids = [n.node_id for n in nodes]
        await every_node_sees(cluster, http, nodes)
        for i, space in enumerate(spaces):
            expected = rendezvous.owner(space, ids)
            for node in nodes:
                status, body, served_by = await cluster.search(
                    http, node, space, f"space {i} fact 3 about topic 39"
                )
                assert status == 200, body
                assert body["memories"][0]["text"] == f"space {i} fact 3 about topic 39"
                assert served_by == expected  # relayed verbatim from the owner, whichever node was asked
        assert cluster.lease_owners() == {space: rendezvous.owner(space, ids) for space in spaces}

        # A procedure routed by the space in its JSON body: warmSpace sent to a non-owner warms the owner.
        cold = await cluster.create_space(http, nodes[0], "cold")
        owner_id = rendezvous.owner(cold, ids)
        other = next(n for n in nodes if n.node_id != owner_id)
        headers = {**cluster.reader_headers(cold), "Content-Type": "application/json"}
        async with http.post(
            other.url + "/xrpc/garden.engram.warmSpace", data=orjson.dumps({"space": cold}), headers=headers
        ) as r:
            assert r.status == 200, await r.text()
            assert r.headers["X-Engram-Node"] == owner_id
        assert cluster.lease_owners()[cold] == owner_id

        # The owner verifies the reader itself: a forwarded request with a bad signature is refused there.
        space = spaces[0]
        other = next(n for n in nodes if n.node_id != rendezvous.owner(space, ids))
        headers = cluster.reader_headers(spaces[1])  # a credential for another space
        async with http.get(
            other.url + "/xrpc/garden.engram.searchMemories",
            params={"space": space, "q": "anything"},
            headers=headers,
        ) as r:
            assert r.status == 401 and (await r.json())["error"] in {"InvalidToken", "BadSpaceSignature"}


async def test_killing_the_owner_mid_writes_moves_the_space_and_keeps_every_acknowledged_write(cluster):
    nodes = [cluster.start_node() for _ in range(3)]
    async with aiohttp.ClientSession() as http:
        space = await cluster.create_space(http, nodes[0], "failover")
        await cluster.write(http, nodes[0], space, ["the first memory before any owner"])
        await every_node_sees(cluster, http, nodes)
        status, _, owner_id = await cluster.search(http, nodes[1], space, "the first memory before any owner")
        assert status == 200
        owner = next(n for n in nodes if n.node_id == owner_id)
        survivors = [n for n in nodes if n is not owner]
        acked: list[str] = []

        async def writer():
            for i in range(40):
                text = f"failover write {i} lands on node {i % 3}"
                try:
                    await cluster.write(http, nodes[i % 3], space, [text])
                except (aiohttp.ClientError, AssertionError):
                    continue  # not acknowledged (the killed node): may or may not be stored
                acked.append(text)

        task = asyncio.ensure_future(writer())
        await until(lambda: asyncio.sleep(0, len(acked) >= 10), "some writes acknowledged")
        cluster.kill(owner)
        await task
        assert len(acked) >= 20

        async def served_elsewhere():
            status, _body, served_by = await cluster.search(http, survivors[0], space, acked[-1])
            return status == 200 and served_by in {n.node_id for n in survivors}

        await until(served_elsewhere, "a surviving node serves the space")
        for text in ["the first memory before any owner", *acked]:
            status, body, _served_by = await cluster.search(http, survivors[1], space, text)
            assert status == 200 and body["memories"][0]["text"] == text, (text, body)
        new_owner = cluster.lease_owners()[space]
        assert new_owner in {n.node_id for n in survivors}
        # The new owner started from the old owner's snapshot in the shared store, not from scratch.
        successor = next(n for n in survivors if n.node_id == new_owner)
        downloaded = 'engram_index_snapshot_transfers_total{op="download",result="ok"}'
        assert await cluster.metric(http, successor, downloaded) >= 1


async def test_a_joining_node_takes_over_only_the_spaces_that_hash_to_it(cluster):
    first = [cluster.start_node() for _ in range(2)]
    async with aiohttp.ClientSession() as http:
        spaces = [await cluster.create_space(http, first[0], f"join-{i}") for i in range(24)]
        await every_node_sees(cluster, http, first)
        for space in spaces:
            await cluster.write(http, first[1], space, [f"the only memory of {space}"])
            status, _, _ = await cluster.search(http, first[0], space, f"the only memory of {space}")
            assert status == 200
        before = cluster.lease_owners()
        assert set(before) == set(spaces)
        joined = cluster.start_node()
        ids = [n.node_id for n in cluster.nodes]
        wanted = {space: rendezvous.owner(space, ids) for space in spaces}

        async def settled():
            return cluster.lease_owners() == wanted

        await until(settled, "leases follow the new membership")
        moved = {s for s in spaces if before[s] != wanted[s]}
        assert moved == {s for s in spaces if wanted[s] == joined.node_id}  # nothing moved between old nodes
        assert 0 < len(moved) < len(spaces) * 0.6  # about a third
        for space in spaces:
            status, _body, served_by = await cluster.search(
                http, first[0], space, f"the only memory of {space}"
            )
            assert status == 200 and served_by == wanted[space]


async def test_concurrent_writers_on_two_nodes_lose_nothing_and_the_index_converges(cluster):
    nodes = [cluster.start_node() for _ in range(3)]
    async with aiohttp.ClientSession() as http:
        space = await cluster.create_space(http, nodes[0], "busy")
        await every_node_sees(cluster, http, nodes)
        status, _, owner_id = await cluster.search(http, nodes[0], space, "warm the owner's index")
        assert status == 200 and owner_id == rendezvous.owner(space, [n.node_id for n in nodes])
        writers = [n for n in nodes if n.node_id != owner_id][:2]

        async def write_from(node, tag):
            for i in range(12):
                await cluster.write(
                    http, node, space, [f"writer {tag} memory {i}", f"writer {tag} extra {i}"]
                )

        await asyncio.gather(write_from(writers[0], "a"), write_from(writers[1], "b"))
        texts = [f"writer {t} {kind} {i}" for t in "ab" for kind in ("memory", "extra") for i in range(12)]
        # Every row is in the owner's index: a search as wide as the space returns each one once.
        status, body, served_by = await cluster.search(http, nodes[2], space, "writer memory", limit=50)
        assert status == 200 and served_by == owner_id
        assert sorted(m["text"] for m in body["memories"]) == sorted(texts)
        path = "/xrpc/garden.engram.listMemories"
        async with http.get(
            nodes[1].url + path,
            params={"space": space, "limit": "100"},
            headers=cluster.reader_headers(space),
        ) as r:
            listed = await r.json()
        assert r.status == 200 and len(listed["memories"]) == len(texts)

        # The owner heard of the other nodes' writes (LISTEN/NOTIFY) and counts its lease; the writers
        # forwarded the reads they got for a space they do not own.
        owner = next(n for n in nodes if n.node_id == owner_id)
        assert await cluster.metric(http, owner, "engram_cluster_write_notifications_total") >= 1
        assert await cluster.metric(http, owner, "engram_cluster_spaces_owned") == 1
        assert await cluster.metric(http, owner, 'engram_cluster_lease_changes_total{change="acquired"}') == 1
        assert await cluster.metric(http, nodes[2], "engram_cluster_forwards_total") >= 1 or nodes[2] is owner
