"""Queries longer than aiohttp's default 8,190-byte request line, end to end over signed HTTP: the server's
line limit comes from the lexicons (engram/serving/request_limits.py)."""

from __future__ import annotations

import numpy as np
from support.api import Reader, seed, unit, vector_params
from support.serving import EngramTestServer

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.store import MemoryWrite, ModelSpec

WIDE = ModelSpec("wide-model", "sha256:wide", 3072)


async def _reader(aiohttp_client, settings, name: str, model: ModelSpec | None = None) -> Reader:
    client = await aiohttp_client(EngramTestServer(await create_app(settings)))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.create_hosted(name, model=model)
    return Reader(client, ctx, space.uri, PrivateKey.generate("ES256"))


async def test_a_3072_dimension_query_vector_is_searched(aiohttp_client, settings):
    reader = await _reader(aiohttp_client, settings, "wide", WIDE)
    vectors = unit(np.random.default_rng(7), 6, WIDE.dims)
    await seed(reader.ctx, reader.space, vectors, spec=WIDE)
    params = vector_params(vectors[4], WIDE)
    assert len(params["vector"]) > 8190  # longer than aiohttp's default request line on its own
    r = await reader.search(**params, limit=3)
    assert r.status == 200, await r.text()
    body = await r.json()
    assert body["memories"][0]["text"] == "memory number 4"


async def test_a_1000_character_non_ascii_text_query(aiohttp_client, settings):
    reader = await _reader(aiohttp_client, settings, "notes")
    q = ("記憶の検索は速い。" * 112)[:1000]
    assert len(q) == 1000 and len(q.encode()) == 3000  # 9,000 characters once percent-encoded
    author = reader.ctx.settings.service_did
    await reader.ctx.services.memories.write(
        reader.space, [MemoryWrite(author=author, text=t) for t in (q, "an unrelated note about lunch")]
    )
    r = await reader.search(q=q)
    assert r.status == 200, await r.text()
    assert (await r.json())["memories"][0]["text"] == q
