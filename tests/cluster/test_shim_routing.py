"""Memory Bank searches go to the node holding the key's primary space (docs/scale-out.md#forwarding): the
other node neither loads the index nor authenticates the request. Two in-process nodes on one real
PostgreSQL store."""

from __future__ import annotations

import time
from dataclasses import replace

import aiohttp
import pytest
from support.inprocess import start_node
from support.sync import until

from engram.cluster import rendezvous
from engram.cluster.middleware import SERVED_BY
from engram.compat.memorybank.keyauth import bearer_space
from engram.oauth.store import TokenRow, put_token
from engram.service.apikeys import create_api_key


@pytest.fixture
async def two_nodes(aiohttp_server, settings, pg_database_url, tmp_path):
    settings = replace(settings, database_url=pg_database_url, heartbeat_ms=100, lease_timeout_ms=1000)
    nodes = [await start_node(aiohttp_server, settings, tmp_path, name) for name in ("node-a", "node-b")]
    await until(lambda: all(len(n.ctx.cluster.ownership.live) == 2 for n in nodes), "both nodes live")
    return nodes


async def _post(url, token, body) -> tuple[int, dict, dict]:
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as session, session.post(url, json=body, headers=headers) as resp:
        return resp.status, dict(resp.headers), await resp.json()


async def test_a_memory_bank_query_is_answered_by_the_holder_of_the_keys_space(two_nodes):
    a, b = two_nodes
    space = await a.ctx.services.spaces.create_hosted("bank")
    _, token = await create_api_key(a.ctx.store, space.uri, ["read", "write"], "bank")
    owner_id = rendezvous.owner(space.uri, {n.node_id: n.url for n in two_nodes})
    owner, other = (a, b) if owner_id == a.node_id else (b, a)

    doc = {"id": "d1", "text": "the ferns need water on Fridays", "user_id": "u1"}
    status, _, body = await _post(f"{other.url}/memorybank/upsert", token, {"documents": [doc]})
    assert status == 200, body  # a write: committed by whichever node receives it

    query = {"queries": [{"query": "ferns", "user_id": "u1"}]}
    status, headers, body = await _post(f"{other.url}/memorybank/query", token, query)
    assert status == 200, body
    assert headers[SERVED_BY] == owner.node_id
    assert body["results"][0]["results"][0]["id"] == "d1_0"
    model = space.config.active.key
    assert owner.ctx.index.is_loaded(space.uri, model) and not other.ctx.index.is_loaded(space.uri, model)

    # A credential that names no space is answered where it arrives, in the shim's own 401 shape.
    status, headers, body = await _post(f"{other.url}/memorybank/query", "engram_nonsense", query)
    assert status == 401 and SERVED_BY not in headers and "detail" in body


async def test_the_routing_hint_reads_api_keys_and_oauth_access_tokens(two_nodes):
    a, _ = two_nodes
    space = await a.ctx.services.spaces.create_hosted("hinted")
    key, token = await create_api_key(a.ctx.store, space.uri, ["read"], "hint")
    row = TokenRow(
        "access", "client", key.id, frozenset({"read:documents"}), "fam", int(time.time()) + 60, None
    )
    await a.ctx.store.write(put_token, "eoa_test-access-token", row)
    assert await a.ctx.store.read(bearer_space, token) == space.uri
    assert await a.ctx.store.read(bearer_space, "eoa_test-access-token") == space.uri
    assert await a.ctx.store.read(bearer_space, "eoa_unknown") is None
    assert await a.ctx.store.read(bearer_space, "Basic abc") is None
