"""Operational behaviour over HTTP: rate limits, loading, approximate re-rank, persistence, the event loop."""

from __future__ import annotations

import asyncio
import shutil

import numpy as np
import pytest
from support.api import MODEL, Reader, seed, settings_with, unit, vector_params
from support.loop_guard import loop_guard

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.store.models import Embedding, MemoryWrite


async def start(aiohttp_client, settings, space_name="ops"):
    client = await aiohttp_client(await create_app(settings))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.find(ctx.services.spaces.resolve_uri(space_name))
    if space is None:
        space = await ctx.services.spaces.create_hosted(space_name, model=MODEL)
    return Reader(client, ctx, space.uri, PrivateKey.generate("ES256"))


async def test_rate_limit_answers_429_with_headers(aiohttp_client, settings):
    reader = await start(aiohttp_client, settings_with(settings, search_rate=0.001, search_burst=2))
    await seed(reader.ctx, reader.space, unit(np.random.default_rng(0), 5, MODEL.dims))
    params = vector_params(np.ones(MODEL.dims))
    statuses = [(await reader.search(**params)).status for _ in range(2)]
    assert statuses == [200, 200]
    r = await reader.search(**params)
    assert r.status == 429
    assert (await r.json())["error"] == "RateLimitExceeded"
    assert r.headers["RateLimit-Limit"] == "2" and r.headers["RateLimit-Remaining"] == "0"
    assert int(r.headers["Retry-After"]) >= 1 and int(r.headers["RateLimit-Reset"]) >= 1


async def test_index_loading_then_ready(aiohttp_client, settings):
    reader = await start(aiohttp_client, settings_with(settings, load_wait_ms=0))
    await seed(reader.ctx, reader.space, unit(np.random.default_rng(0), 3000, MODEL.dims))
    r = await reader.search(**vector_params(np.ones(MODEL.dims)))
    assert r.status == 503
    assert (await r.json())["error"] == "IndexLoading" and r.headers["Retry-After"] == "1"
    await reader.ctx.index.flush()  # the load went on in the background
    r = await reader.search(**vector_params(np.ones(MODEL.dims)))
    assert r.status == 200 and len((await r.json())["memories"]) == 10


@pytest.mark.parametrize("deadline_ms,approximate", [(0, True), (10_000, False)])
async def test_approximate_only_when_the_rerank_deadline_passes(
    aiohttp_client, settings, deadline_ms, approximate
):
    # exact_max below the space's size puts it on the ANN index, whose candidates are re-ranked exactly.
    # (Above 2,000 allowed rows: smaller sets are scanned exactly whatever the index kind.)
    reader = await start(
        aiohttp_client, settings_with(settings, exact_max=500, rerank_deadline_ms=deadline_ms)
    )
    await seed(reader.ctx, reader.space, unit(np.random.default_rng(0), 3000, MODEL.dims))
    body = await (
        await reader.search(**vector_params(unit(np.random.default_rng(1), 1, MODEL.dims)[0]))
    ).json()
    assert len(body["memories"]) == 10
    assert body.get("approximate", False) is approximate


async def test_index_survives_restart_and_rebuilds_when_deleted(aiohttp_client, settings):
    rng = np.random.default_rng(0)
    reader = await start(aiohttp_client, settings)
    await seed(reader.ctx, reader.space, unit(rng, 500, MODEL.dims))
    query = vector_params(unit(rng, 1, MODEL.dims)[0])
    first = await (await reader.search(**query)).json()
    await reader.client.close()  # runs the app's cleanup: the index is saved

    index_dir = settings.data_dir / "indexes"
    assert any(index_dir.rglob("*.idx"))
    again = await start(aiohttp_client, settings)
    assert await (await again.search(**query)).json() == first
    assert again.ctx.index.builds == 0, "a fresh persisted index should load, not rebuild"
    await again.client.close()

    shutil.rmtree(index_dir)
    rebuilt = await start(aiohttp_client, settings)
    assert await (await rebuilt.search(**query)).json() == first
    assert rebuilt.ctx.index.builds == 1


async def test_writes_after_load_are_searchable_at_once(engram):
    rng = np.random.default_rng(2)
    await seed(engram.ctx, engram.space, unit(rng, 100, MODEL.dims))
    await engram.search(**vector_params(np.ones(MODEL.dims)))  # loads the index
    target = unit(rng, 1, MODEL.dims)
    [record] = await seed(engram.ctx, engram.space, target)
    body = await (await engram.search(**vector_params(target[0]), limit="1")).json()
    assert body["memories"][0]["uri"] == record.uri
    await engram.ctx.services.memories.delete(engram.space, record.author, record.rkey)
    body = await (await engram.search(**vector_params(target[0]), limit="1")).json()
    assert body["memories"][0]["uri"] != record.uri


async def test_event_loop_never_blocks_during_concurrent_searches(aiohttp_client, settings, monkeypatch):
    """FAISS and SQLite hydration run in worker threads, never on the loop; and under concurrent load the
    loop thread never computes for long without yielding (loop_guard measures its CPU between beats)."""
    import threading

    from engram.search.index import SpaceIndex

    threads: list[int] = []  # one entry per query searched, lone or in a batch
    lone, many = SpaceIndex.search, SpaceIndex.search_many

    def recording_search(self, *args, **kwargs):
        threads.append(threading.get_ident())
        return lone(self, *args, **kwargs)

    def recording_search_many(self, queries, ks, masks=None):
        threads.extend([threading.get_ident()] * len(ks))
        return many(self, queries, ks, masks)

    monkeypatch.setattr(SpaceIndex, "search", recording_search)
    monkeypatch.setattr(SpaceIndex, "search_many", recording_search_many)
    reader = await start(aiohttp_client, settings_with(settings, search_rate=0, search_concurrency=64))
    await seed(reader.ctx, reader.space, unit(np.random.default_rng(0), 20_000, MODEL.dims))
    await reader.search(**vector_params(np.ones(MODEL.dims)))  # load first; loading is measured elsewhere
    queries = unit(np.random.default_rng(1), 40, MODEL.dims)
    async with loop_guard(max_busy_s=0.1):
        for batch in range(0, 40, 8):  # 8 in flight at a time, client and server sharing this loop
            results = await asyncio.gather(
                *(reader.search(**vector_params(q)) for q in queries[batch : batch + 8])
            )
            assert all(r.status == 200 for r in results)
    assert len(threads) == 41 and threading.get_ident() not in threads


async def test_search_past_the_hard_limit_is_index_loading(engram):
    await seed(engram.ctx, engram.space, unit(np.random.default_rng(0), 50, MODEL.dims))
    await engram.search(**vector_params(np.ones(MODEL.dims)))
    engram.ctx.services.search.hard_limit_s = 0.0  # nothing can finish in no time at all
    r = await engram.search(**vector_params(np.ones(MODEL.dims)))
    assert r.status == 503 and (await r.json())["error"] == "IndexLoading" and r.headers["Retry-After"] == "1"
    engram.ctx.services.search.hard_limit_s = 10.0
    assert (await engram.search(**vector_params(np.ones(MODEL.dims)))).status == 200


async def test_tombstones_are_pruned_and_an_older_index_file_is_rebuilt(aiohttp_client, settings):
    from engram.store.database import database_path

    rng = np.random.default_rng(4)
    reader = await start(aiohttp_client, settings_with(settings, search_rate=0))
    vectors = unit(rng, 60, MODEL.dims)
    records = await seed(reader.ctx, reader.space, vectors)
    query = vector_params(vectors[0])
    await reader.search(**query)
    await reader.ctx.index.flush()  # the first build is saved in the background
    index_dir = settings.data_dir / "indexes"
    old_files = {p: p.read_bytes() for p in index_dir.rglob("*") if p.is_file()}

    for record in records[:5]:
        await reader.ctx.services.memories.delete(reader.space, record.author, record.rkey)
    first = await (await reader.search(**query, limit="50")).json()
    await reader.client.close()  # saves the index at the newest generation, then prunes

    import sqlite3

    with sqlite3.connect(database_path(settings.data_dir)) as conn:
        assert conn.execute("SELECT count(*) FROM tombstones").fetchone()[0] == 0

    for path, data in old_files.items():  # an index saved before those deletions (as another process might)
        path.write_bytes(data)
    again = await start(aiohttp_client, settings_with(settings, search_rate=0))
    body = await (await again.search(**query, limit="50")).json()
    assert body == first
    deleted = {r.uri for r in records[:5]}
    assert not deleted & {m["uri"] for m in body["memories"]}
    assert again.ctx.index.builds == 1  # the stale file could not be caught up: rebuilt from SQLite


async def test_hits_served_from_the_hit_cache_are_never_stale(engram):
    """Search hits are kept hydrated (engram/store/hit_cache.py); an update (a new row version) and a delete
    after a cached search are what the next search answers."""
    rng = np.random.default_rng(5)
    vectors = unit(rng, 50, MODEL.dims)
    records = await seed(engram.ctx, engram.space, vectors)
    cache = engram.ctx.services.search.hit_cache
    query = vector_params(vectors[7])
    for _ in range(2):
        body = await (await engram.search(**query, limit="3")).json()
        assert body["memories"][0]["text"] == "memory number 7"
    assert cache.hits >= 3  # the second search was answered from the cache

    target = records[7]
    write = MemoryWrite(
        author=target.author,
        rkey=target.rkey,
        text="memory number 7, rewritten",
        embedding=Embedding(MODEL.model, MODEL.digest, MODEL.dims, vectors[7].astype(np.float16)),
    )
    await engram.ctx.services.memories.write(engram.space, [write])
    top = (await (await engram.search(**query, limit="3")).json())["memories"][0]
    assert (top["uri"], top["text"]) == (target.uri, "memory number 7, rewritten")
    assert top["cid"] != target.cid

    await engram.ctx.services.memories.delete(engram.space, target.author, target.rkey)
    body = await (await engram.search(**query, limit="3")).json()
    assert target.uri not in [m["uri"] for m in body["memories"]]
