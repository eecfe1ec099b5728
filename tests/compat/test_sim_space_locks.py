"""Sim's writes lock only their space (`Store.write_to`, docs/scale-out.md#durability-and-isolation): on a
PostgreSQL store shared by two nodes, a transaction held open in one space by the other node's store does
not hold up a Sim append to another space, and does hold up one to the same space, which then commits
after it with nothing lost."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

from support.compat import bearer, start
from support.postgres_locks import wait_for_lock_waiters

from engram.store import MemoryWrite
from engram.store.memory_reads import list_memories
from engram.store.memory_writes import put_memories
from engram.store.postgres.store import PostgresStore
from engram.store.spaces import require_space

WF = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d"


def _body(key: str, content: str) -> dict:
    return {"key": key, "type": "agent", "data": {"role": "user", "content": content}, "workflowId": WF}


async def test_a_held_space_does_not_delay_a_sim_write_to_another_space(
    aiohttp_client, settings, pg_database_url
):
    engram = await start(aiohttp_client, replace(settings, database_url=pg_database_url))
    held_space, other_space = await engram.space("held"), await engram.space("other")
    held_token, _ = await engram.key(held_space.uri)
    other_token, _ = await engram.key(other_space.uri)
    other_node = await PostgresStore.open(pg_database_url)  # a second node on the same database
    gate, held = threading.Event(), threading.Event()

    def hold(conn):
        require_space(conn, held_space.uri)
        put_memories(conn, held_space.uri, [MemoryWrite(held_space.authority, "written by the other node")])
        held.set()
        assert gate.wait(60)

    try:
        holder = asyncio.ensure_future(other_node.write_to(held_space.uri, hold))
        while not held.is_set():
            await asyncio.sleep(0.01)
        try:
            other = await asyncio.wait_for(
                engram.client.post(
                    "/api/memory", json=_body("chat", "to the other space"), headers=bearer(other_token)
                ),
                60,
            )
            assert other.status == 201, await other.text()
            same = asyncio.ensure_future(
                engram.client.post(
                    "/api/memory", json=_body("chat", "to the held space"), headers=bearer(held_token)
                )
            )
            await wait_for_lock_waiters(pg_database_url, 1)  # the same space's append waits for the lock
            assert not same.done()
        finally:
            gate.set()
        await holder
        answer = await same
        assert answer.status == 201, await answer.text()
        assert [m["content"] for m in (await answer.json())["data"]["data"]] == ["to the held space"]
        held_texts = {m.text for m in (await engram.ctx.store.read(list_memories, held_space.uri))[0]}
        assert held_texts == {"written by the other node", "to the held space"}
        # Both writes to the held space advanced its generation, one after the other.
        assert (
            await engram.ctx.store.read(require_space, held_space.uri)
        ).generation == held_space.generation + 2
        read = await engram.client.get(
            "/api/memory/chat", params={"workflowId": WF}, headers=bearer(other_token)
        )
        assert [m["content"] for m in (await read.json())["data"]["data"]] == ["to the other space"]
    finally:
        await other_node.close()
