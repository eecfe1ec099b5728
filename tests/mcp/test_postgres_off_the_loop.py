"""On PostgreSQL no request sends a statement from the event loop's thread (docs/scale-out.md#the-store-on-
postgresql): every statement is a network round trip there. `no_postgres_on_the_loop` (tests/conftest.py)
records each one through engram/store/postgres/loop_guard.py and fails the test; these tests show that the
guard sees a loop-thread statement, then drive every front door that reads the store per request (XRPC,
GPTBots, Sim, Memory Bank, MCP) on a PostgreSQL store."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

import aiohttp
import pytest
from support.api import Reader
from support.mcp import result_of, serve

from engram.auth.crypto_keys import PrivateKey
from engram.store.postgres.store import PostgresStore
from engram.store.spaces import get_space

FACTS = [
    "Production Postgres runs version 16.2; staging is still on 15.4.",
    "Henrik must approve every change to token handling in the auth gateway.",
]


def _count(conn) -> int:
    return conn.execute("SELECT count(*) FROM spaces").fetchone()[0]


@pytest.mark.loop_queries_allowed
async def test_the_guard_sees_a_statement_on_the_loop_thread_and_none_from_a_reader(
    pg_database_url, no_postgres_on_the_loop
):
    store = await PostgresStore.open(pg_database_url)
    try:
        await asyncio.to_thread(store.readers.statement, _count)
        await store.read(_count)
        assert no_postgres_on_the_loop == []
        store.readers.statement(_count)  # what the shims' key lookup used to do
        assert no_postgres_on_the_loop == ["SELECT count(*) FROM spaces"]
    finally:
        await store.close()


async def test_point_reads_from_the_loop_go_to_a_reader_thread_on_postgres(pg_database_url):
    store = await PostgresStore.open(pg_database_url)
    threads: list[int] = []

    def space_and_thread(conn, uri):
        threads.append(threading.get_ident())
        return get_space(conn, uri)

    try:
        assert await store.point_read(space_and_thread, "ats://did:web:x/garden.engram.space/none") is None
        assert threads and threads[0] != threading.get_ident()
    finally:
        await store.close()


async def _call(session, method, url, token, **kw) -> dict:
    async with session.request(method, url, headers={"Authorization": f"Bearer {token}"}, **kw) as resp:
        assert resp.status in (200, 201), await resp.text()
        return await resp.json()


async def test_every_front_door_reads_postgres_off_the_loop(
    aiohttp_server, settings, pg_database_url, no_postgres_on_the_loop
):
    served = await serve(aiohttp_server, replace(settings, database_url=pg_database_url))
    assert served.ctx.store.backend == "postgres"
    space = await served.space("notes")
    await served.write(space, FACTS)
    token, _ = await served.key(space)
    doomed = await served.space("doomed")
    doomed_token, _ = await served.key(doomed)
    await served.ctx.services.spaces.delete(doomed)

    async with aiohttp.ClientSession(served.base) as http:
        hits = await _call(
            http,
            "POST",
            "/v1/vector/match",
            token,
            json={"prompt": "postgres version", "top_k": 3, "embedding_rate": 0.5},
        )
        assert hits["list"][0]["content"] == FACTS[0]
        sim = {"key": "c1", "type": "agent", "data": {"role": "user", "content": "hi"}, "workflowId": "w"}
        await _call(http, "POST", "/api/memory", token, json=sim)
        listed = await _call(http, "GET", "/api/memory", token, params={"workflowId": "w"})
        assert listed["data"]
        doc = {"id": "d1", "text": "the ferns need water on Fridays", "user_id": "u1"}
        await _call(http, "POST", "/memorybank/upsert", token, json={"documents": [doc]})
        query = {"query": "ferns", "user_id": "u1"}
        bank = await _call(http, "POST", "/memorybank/query", token, json={"queries": [query]})
        assert bank["results"][0]["results"][0]["id"] == "d1_0"
        async with http.post(
            "/v1/vector/match",
            json={"prompt": "x", "top_k": 3},
            headers={"Authorization": f"Bearer {doomed_token}"},
        ) as gone:
            assert gone.status != 200  # the deleted space's key: the second half of the key lookup

        reader = Reader(http, served.ctx, space, PrivateKey.generate("ES256"))
        found = await (await reader.search(q="token handling")).json()
        assert found["memories"][0]["text"] == FACTS[1]

    async with served.client(token) as mcp:
        spaces = result_of(await mcp.call_tool("list_spaces", {}))["spaces"]
        assert [s["uri"] for s in spaces] == [space]
        recalled = result_of(await mcp.call_tool("recall", {"query": "postgres version"}))
        assert recalled["results"][0]["text"] == FACTS[0]

    assert no_postgres_on_the_loop == []
