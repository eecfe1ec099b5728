"""An index file that cannot be read (a directory in its place) means "rebuild from the store": searches
answer 200, never 500, and the next save puts a real index file back (docs/architecture.md)."""

from __future__ import annotations

import asyncio
import time

import numpy as np
from support.api import MODEL, Reader, seed, unit, vector_params

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.search import persist


async def _reader(aiohttp_client, settings, space_uri: str | None = None) -> Reader:
    client = await aiohttp_client(await create_app(settings))
    ctx = client.app[context_key]
    if space_uri is None:
        space_uri = (await ctx.services.spaces.create_hosted("damaged", model=MODEL)).uri
    return Reader(client, ctx, space_uri, PrivateKey.generate("ES256"))


async def test_a_directory_where_the_index_file_was_is_rebuilt_over(aiohttp_client, settings):
    vectors = unit(np.random.default_rng(7), 40, MODEL.dims)
    first = await _reader(aiohttp_client, settings)
    await seed(first.ctx, first.space, vectors)
    r = await first.search(**vector_params(vectors[3]), limit="1")
    assert r.status == 200, await r.text()
    deadline = time.monotonic() + 30
    while not persist.space_files(settings.data_dir, first.space):  # saved in the background after the build
        assert time.monotonic() < deadline, "the index was never saved"
        await asyncio.sleep(0.02)
    [path] = persist.space_files(settings.data_dir, first.space)
    await first.client.close()

    path.unlink()
    path.mkdir()
    (path / "junk").write_bytes(b"not an index")

    again = await _reader(aiohttp_client, settings, first.space)
    for i in (3, 17):
        r = await again.search(**vector_params(vectors[i]), limit="1")
        body = await r.json()
        assert r.status == 200, body
        assert body["memories"][0]["text"] == f"memory number {i}"
    deadline = time.monotonic() + 30
    while not path.is_file():  # the rebuilt index replaced the debris
        assert time.monotonic() < deadline, "the directory was never replaced by an index file"
        await asyncio.sleep(0.02)
    assert persist.read_header(path)["space"] == first.space
