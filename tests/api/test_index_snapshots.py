"""Index snapshots through the real service: two engram apps over two data dirs share one snapshot store
(file://, then s3:// on moto); the second serves the space from the first one's snapshot instead of
building it, and /metrics says so. An unreachable S3 endpoint costs nothing but counted failures: every
search still answers."""

from __future__ import annotations

import errno
import re
import shutil

import numpy as np
from support.api import MODEL, Reader, seed, unit, vector_params
from support.engram_process import free_port
from support.fakes.object_store import closed_port, fake_aws_env
from support.serving import EngramTestServer

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.config import override

SEARCH = "garden.engram.searchMemories"


async def start(aiohttp_client, settings, **changes):
    """The app with a metrics listener; returns (client, ctx, metrics port)."""
    for attempt in range(5):  # a port found free may be taken by another process before the app binds it
        port = free_port()
        try:
            app = await create_app(override(settings, metrics_port=port, **changes))
            client = await aiohttp_client(EngramTestServer(app))
            return client, client.app[context_key], port
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or attempt == 4:
                raise
    raise AssertionError("unreachable")


async def snapshot_metrics(client, port: int) -> dict[str, float]:
    text = await (await client.session.get(f"http://127.0.0.1:{port}/metrics")).text()
    found = re.findall(
        r'^engram_index_snapshot_(\w+)_total\{op="(\w+)"(?:,result="(\w+)")?\} (\S+)$', text, re.MULTILINE
    )
    return {"_".join(p for p in (kind, op, result) if p): float(value) for kind, op, result, value in found}


async def search_uris(reader: Reader, query) -> list[str]:
    r = await reader.search(**vector_params(query), limit="10")
    assert r.status == 200, await r.text()
    return [m["uri"] for m in (await r.json())["memories"]]


async def test_a_second_node_serves_the_first_nodes_snapshot(
    aiohttp_client, settings, tmp_path, snapshot_store_url
):
    shared, endpoint = snapshot_store_url  # file:// and s3:// (moto on 127.0.0.1)
    settings = override(settings, s3_endpoint_url=endpoint)
    query = unit(np.random.default_rng(5), 1, MODEL.dims)[0]
    # exact_max below the space's size: an HNSW graph, what a new node would otherwise rebuild
    client, ctx, port = await start(aiohttp_client, settings, index_store=shared, exact_max=100)
    space = await ctx.services.spaces.create_hosted("snapshots", model=MODEL)
    await seed(ctx, space.uri, unit(np.random.default_rng(1), 300, MODEL.dims))
    first = Reader(client, ctx, space.uri, PrivateKey.generate("ES256"))
    expected = await search_uris(first, query)
    await ctx.index.flush()
    assert ctx.index.builds == 1
    assert (await snapshot_metrics(client, port))["transfers_upload_ok"] == 1
    await client.close()

    # A new node: the same database (copied here; shared PostgreSQL in a cluster), no index files.
    data_b = tmp_path / "node-b"
    shutil.copytree(settings.data_dir, data_b, ignore=shutil.ignore_patterns("indexes"))
    client_b, ctx_b, port_b = await start(
        aiohttp_client, settings, data_dir=data_b, index_store=shared, exact_max=100
    )
    second = Reader(client_b, ctx_b, space.uri, PrivateKey.generate("ES256"))
    assert await search_uris(second, query) == expected
    assert ctx_b.index.builds == 0
    metrics = await snapshot_metrics(client_b, port_b)
    assert metrics["transfers_download_ok"] == 1 and metrics["transfers_download_failed"] == 0
    assert metrics["bytes_download"] > 0


async def test_an_unreachable_s3_endpoint_never_fails_a_search(aiohttp_client, settings, monkeypatch):
    fake_aws_env(monkeypatch)
    client, ctx, port = await start(
        aiohttp_client,
        settings,
        index_store="s3://engram-snapshots/prod",
        s3_endpoint_url=f"http://127.0.0.1:{closed_port()}",
    )
    space = await ctx.services.spaces.create_hosted("unreachable", model=MODEL)
    rng = np.random.default_rng(2)
    await seed(ctx, space.uri, unit(rng, 50, MODEL.dims))
    reader = Reader(client, ctx, space.uri, PrivateKey.generate("ES256"))
    assert len(await search_uris(reader, unit(rng, 1, MODEL.dims)[0])) == 10
    await ctx.index.flush()
    metrics = await snapshot_metrics(client, port)
    assert metrics["transfers_download_failed"] == 1 and metrics["transfers_upload_failed"] == 1
    assert metrics["transfers_upload_ok"] == 0
    await seed(ctx, space.uri, unit(rng, 5, MODEL.dims))  # applied in place; saved at shutdown
    assert len(await search_uris(reader, unit(rng, 1, MODEL.dims)[0])) == 10
    await client.close()  # the shutdown save tries to upload again, fails, and shuts down all the same
    stats = ctx.index.snapshot_stats()
    assert stats.upload_failures == 2 and stats.uploads == 0
