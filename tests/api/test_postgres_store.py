"""The whole service on the PostgreSQL store (ENGRAM_DATABASE_URL): the real app on a real port, signed
reads over HTTP, writes and deletes through the services, and a restart that finds everything again."""

import shutil
import threading

import numpy as np
from support.api import MODEL, Reader, seed, settings_with, unit, vector_params

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.store.database import DB_FILE_NAME


async def _start(aiohttp_client, settings) -> Reader:
    client = await aiohttp_client(await create_app(settings))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.find(ctx.services.spaces.resolve_uri("ops"))
    if space is None:
        space = await ctx.services.spaces.create_hosted("ops", model=MODEL)
    return Reader(client, ctx, space.uri, PrivateKey.generate("ES256"))


async def test_the_service_runs_on_postgres_and_survives_a_restart(aiohttp_client, settings, pg_database_url):
    settings = settings_with(settings, database_url=pg_database_url)
    rng = np.random.default_rng(7)
    vectors = unit(rng, 300, MODEL.dims)
    reader = await _start(aiohttp_client, settings)
    assert reader.ctx.store.backend == "postgres"
    records = await seed(
        reader.ctx, reader.space, vectors, tags=[["even"] if i % 2 == 0 else [] for i in range(300)]
    )

    body = await (await reader.search(**vector_params(vectors[42]), limit="3")).json()
    assert body["memories"][0]["uri"] == records[42].uri
    body = await (await reader.search(**vector_params(vectors[42]), tags="even", limit="5")).json()
    assert all("even" in m["tags"] for m in body["memories"]) and body["memories"]

    got = (await (await reader.get("garden.engram.getMemory", {"uri": records[5].uri})).json())["memory"]
    assert got["uri"] == records[5].uri and got["text"] == "memory number 5"
    seen, cursor = [], None
    while True:
        params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
        page = await (await reader.get("garden.engram.listMemories", params)).json()
        seen += [m["uri"] for m in page["memories"]]
        cursor = page.get("cursor")
        if not cursor:
            break
    assert sorted(seen) == sorted(r.uri for r in records)

    assert await reader.ctx.services.memories.delete(reader.space, records[42].author, records[42].rkey)
    body = await (await reader.search(**vector_params(vectors[42]), limit="3")).json()
    assert records[42].uri not in [m["uri"] for m in body["memories"]]
    missing = await reader.get("garden.engram.getMemory", {"uri": records[42].uri})
    assert missing.status == 404 and (await missing.json())["error"] == "MemoryNotFound"
    await reader.client.close()

    assert not (settings.data_dir / DB_FILE_NAME).exists(), "the SQLite file must not be created"
    shutil.rmtree(settings.data_dir / "indexes", ignore_errors=True)  # the restart rebuilds from PostgreSQL
    again = await _start(aiohttp_client, settings)
    status = await (await again.get("garden.engram.getSpaceStatus")).json()
    assert status["memories"] == 299
    body = await (await again.search(**vector_params(vectors[7]), limit="1")).json()
    assert body["memories"][0]["uri"] == records[7].uri
    await again.client.close()


async def test_the_auth_steps_space_lookup_leaves_the_event_loop(aiohttp_client, settings, pg_database_url):
    """On SQLite the lookup is a ~10 us point read on the loop; on PostgreSQL it is a round trip, so it runs
    on a reader thread and the loop serves other requests meanwhile."""
    reader = await _start(aiohttp_client, settings_with(settings, database_url=pg_database_url))
    readers = reader.ctx.store.readers
    threads: list[int] = []
    original = readers.statement

    def recording(fn, *args):
        threads.append(threading.get_ident())
        return original(fn, *args)

    readers.statement = recording
    try:
        r = await reader.search(**vector_params(np.ones(MODEL.dims)))
        assert r.status == 200
    finally:
        readers.statement = original
        await reader.client.close()
    assert threads and threading.get_ident() not in threads
