"""One real cluster node in-process (real app, real port, real PostgreSQL store) facing a peer that holds a
space's lease but does not answer: the error answers of forwarding, in the XRPC shape."""

from __future__ import annotations

import time
from dataclasses import replace
from urllib.parse import urlencode

import numpy as np
import psycopg
import pytest
from support.api import MODEL, Reader, unit, vector_params
from support.engram_process import free_port
from support.serving import EngramTestServer
from yarl import URL

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.cluster.forwarding import hop_key, sign_hop

SEARCH = "garden.engram.searchMemories"


@pytest.fixture
async def node(pg_database_url, aiohttp_client, settings):  # the database outlives the app
    settings = replace(
        settings,
        database_url=pg_database_url,
        node_url="http://127.0.0.1:9",  # peers would use it; this test has none that call back
        node_id="me",
        heartbeat_ms=100,
        lease_timeout_ms=60_000,
    )
    client = await aiohttp_client(EngramTestServer(await create_app(settings)))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.create_hosted("forwarded", model=MODEL)
    return Reader(client, ctx, space.uri, PrivateKey.generate("ES256"))


def _ghost_holds(database_url: str, space: str) -> None:
    """A live peer that holds the space's lease, at an address where nothing listens."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO cluster_nodes (node_id, url, last_seen) VALUES ('ghost', %s, clock_timestamp())",
            (f"http://127.0.0.1:{free_port()}",),
        )
        conn.execute(
            "INSERT INTO space_leases VALUES (%s, 'ghost', 7, clock_timestamp(),"
            " clock_timestamp() + interval '1 hour')",
            (space,),
        )


async def test_an_owner_that_does_not_answer_gives_503_owner_unavailable(node, pg_database_url):
    _ghost_holds(pg_database_url, node.space)
    params = vector_params(unit(np.random.default_rng(1), 1, MODEL.dims)[0])
    r = await node.search(**params)
    assert r.status == 503 and r.headers["Retry-After"] == "1"
    assert (await r.json())["error"] == "OwnerUnavailable"

    # A request another node forwarded (its hop signed with the nodes' key) is never forwarded again.
    target = f"/xrpc/{SEARCH}?" + urlencode({**params, "space": node.space})
    key = hop_key(node.ctx.keyring.private_key(node.ctx.settings.service_did))
    signed = {**node.headers(), "X-Engram-Forwarded-By": sign_hop(key, "peer", "GET", target, b"")}
    r = await node.client.get(URL(target, encoded=True), headers=signed)
    assert r.status == 503 and (await r.json())["error"] == "NotOwner"
    # A client's own header is not a hop: the request is routed like any other (to the silent holder).
    for forged in ("someone", f"peer;{int(time.time())};" + "0" * 64):
        headers = {**node.headers(), "X-Engram-Forwarded-By": forged}
        r = await node.client.get(URL(target, encoded=True), headers=headers)
        assert r.status == 503 and (await r.json())["error"] == "OwnerUnavailable"
    # A signed hop for another request does not carry over.
    replayed = {**node.headers(), "X-Engram-Forwarded-By": sign_hop(key, "peer", "GET", "/other", b"")}
    r = await node.client.get(URL(target, encoded=True), headers=replayed)
    assert (await r.json())["error"] == "OwnerUnavailable"


async def test_unknown_spaces_are_answered_here_and_own_spaces_are_served_here(node, pg_database_url):
    params = vector_params(unit(np.random.default_rng(2), 1, MODEL.dims)[0])
    made_up = "at://did:web:engram.test/space/garden.engram.space/nothing-here"
    r = await node.get(SEARCH, params, space=made_up)
    assert r.status == 400 and (await r.json())["error"] == "UnknownSpace"
    r = await node.search(**params)
    assert r.status == 200 and r.headers["X-Engram-Node"] == "me"
    with psycopg.connect(pg_database_url, autocommit=True) as conn:
        owners = dict(conn.execute("SELECT space, owner FROM space_leases").fetchall())
    assert owners == {node.space: "me"}
    assert node.ctx.metrics.registry.get_sample_value("engram_cluster_spaces_owned") == 1
