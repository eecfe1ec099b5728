"""One real cluster node in-process (real app, real port, real PostgreSQL store) facing a peer that holds a
space's lease but does not answer: the error answers of forwarding, in the XRPC shape."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import psycopg
import pytest
from api.api_support import MODEL, Reader, unit, vector_params
from api.serving_support import EngramTestServer
from engram_process import free_port

from engram.app import create_app
from engram.auth.keys import PrivateKey
from engram.keys import context_key

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
    client = await aiohttp_client(EngramTestServer(create_app(settings)))
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

    # A request that was forwarded already is never forwarded again.
    headers = {**node.headers(), "X-Engram-Forwarded-By": "someone"}
    r = await node.client.get(f"/xrpc/{SEARCH}", params={**params, "space": node.space}, headers=headers)
    assert r.status == 503 and (await r.json())["error"] == "NotOwner"


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
